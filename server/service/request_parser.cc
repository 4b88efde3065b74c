#include "service/request_parser.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dflash::service {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

constexpr uint64_t kMaxFieldNumber = (1u << 29) - 1;

const char* WireTypeName(int wire) {
  switch (wire) {
    case 0: return "varint";
    case 1: return "64-bit";
    case 2: return "length-delimited";
    case 3: return "start group";
    case 4: return "end group";
    case 5: return "32-bit";
  }
  return "not a wire type";
}

int ExpectedWireType(const FieldDescriptor& f) {
  switch (f.type()) {
    case FieldDescriptor::TYPE_DOUBLE:
    case FieldDescriptor::TYPE_FIXED64:
    case FieldDescriptor::TYPE_SFIXED64: return 1;
    case FieldDescriptor::TYPE_FLOAT:
    case FieldDescriptor::TYPE_FIXED32:
    case FieldDescriptor::TYPE_SFIXED32: return 5;
    case FieldDescriptor::TYPE_STRING:
    case FieldDescriptor::TYPE_BYTES:
    case FieldDescriptor::TYPE_MESSAGE: return 2;
    case FieldDescriptor::TYPE_GROUP: return 3;
    default: return 0;  // the integer types, bool, enum
  }
}

// Offset of the first byte that makes `s` invalid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF included), or npos.
size_t InvalidUtf8At(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    int more = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // the range of the first continuation byte
    if (b < 0x80) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      more = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
      more = 2;
      if (b == 0xE0) lo = 0xA0;
      if (b == 0xED) hi = 0x9F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      more = 3;
      if (b == 0xF0) lo = 0x90;
      if (b == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    for (int k = 1; k <= more; ++k) {
      if (i + k >= s.size()) return i;
      const auto c = static_cast<uint8_t>(s[i + k]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) return i + k;
    }
    i += more + 1;
  }
  return absl::string_view::npos;
}

class WireWalker {
 public:
  WireWalker(absl::string_view wire, const Descriptor& top) : wire_(wire), top_(top) {}

  // The fields of one `type` message in [pos_, end); `prefix` names its
  // place in the request ("request." for RunEvalRequest.request).
  absl::Status Message(const Descriptor& type, size_t end, const std::string& prefix) {
    while (pos_ < end) {
      const size_t at = pos_;
      uint64_t tag = 0;
      if (const char* bad = Varint(end, &tag)) return Bad("the tag at byte ", at, " ", bad);
      const uint64_t number = tag >> 3;
      const int wire = static_cast<int>(tag & 7);
      if (number == 0 || number > kMaxFieldNumber) {
        return Bad("the tag at byte ", at, " has field number ", number,
                   "; field numbers are 1 to ", kMaxFieldNumber);
      }
      const FieldDescriptor* f = type.FindFieldByNumber(static_cast<int>(number));
      const std::string name = f ? absl::StrCat("field '", prefix, f->name(), "' (", number, ")")
                                 : absl::StrCat("field ", number);
      if (wire == 3 || wire == 4) {
        return Bad(name, " at byte ", at, " has wire type ", wire, " (", WireTypeName(wire),
                   "), which proto3 messages do not use");
      }
      if (wire > 5) {
        return Bad(name, " at byte ", at, " has wire type ", wire, ", which is not a wire type");
      }
      const bool packed = f != nullptr && wire == 2 && f->is_packable();
      if (f != nullptr && !packed && wire != ExpectedWireType(*f)) {
        return Bad(name, " has wire type ", wire, " (", WireTypeName(wire), "); expected ",
                   ExpectedWireType(*f), " (", WireTypeName(ExpectedWireType(*f)), ")");
      }
      if (wire == 0) {
        uint64_t v = 0;
        if (const char* bad = Varint(end, &v)) {
          return Bad(name, " at byte ", at, " holds a varint that ", bad);
        }
        if (f != nullptr) {
          if (absl::Status s = Range(*f, name, v); !s.ok()) return s;
        }
      } else if (wire == 1 || wire == 5) {
        const size_t size = wire == 1 ? 8 : 4;
        if (end - pos_ < size) {
          return Bad(name, " at byte ", at, " needs ", size, " bytes but only ", end - pos_,
                     " remain");
        }
        pos_ += size;
      } else {
        uint64_t length = 0;
        if (const char* bad = Varint(end, &length)) {
          return Bad(name, " at byte ", at, " has a length that ", bad);
        }
        if (length > end - pos_) {
          return Bad(name, " at byte ", at, " declares ", length, " bytes but only ", end - pos_,
                     " remain");
        }
        const size_t body_end = pos_ + static_cast<size_t>(length);
        if (packed) {
          if (absl::Status s = Packed(*f, name, at, body_end); !s.ok()) return s;
        } else if (f != nullptr && f->type() == FieldDescriptor::TYPE_STRING) {
          const absl::string_view value = wire_.substr(pos_, body_end - pos_);
          if (const size_t bad = InvalidUtf8At(value); bad != absl::string_view::npos) {
            return Bad(name, " is not valid UTF-8 (byte ",
                       absl::StrFormat("0x%02x", static_cast<uint8_t>(value[bad])), " at offset ",
                       bad, " of the value)");
          }
        } else if (f != nullptr && f->type() == FieldDescriptor::TYPE_MESSAGE) {
          // The schema has no recursive messages, so the depth is bounded.
          if (absl::Status s =
                  Message(*f->message_type(), body_end, absl::StrCat(prefix, f->name(), "."));
              !s.ok()) {
            return s;
          }
        }
        pos_ = body_end;
      }
    }
    return absl::OkStatus();
  }

 private:
  template <typename... Args>
  absl::Status Bad(const Args&... what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("request is not a valid ", top_.full_name(), ": ", what...));
  }

  // Reads a varint at pos_ (ending before `end`): nullptr, or what is wrong.
  const char* Varint(size_t end, uint64_t* value) {
    uint64_t v = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos_ >= end) return "is truncated";
      const auto b = static_cast<uint8_t>(wire_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0) {
        *value = v;
        return nullptr;
      }
    }
    return "is longer than 10 bytes";
  }

  // A varint's value against its field's type: protobuf would truncate an
  // int32 silently and take any non-zero bool as true.
  absl::Status Range(const FieldDescriptor& f, const std::string& name, uint64_t v) const {
    switch (f.type()) {
      case FieldDescriptor::TYPE_INT32:
      case FieldDescriptor::TYPE_ENUM: {
        const auto s = static_cast<int64_t>(v);
        if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max()) {
          return Bad(name, " holds ", s, ", which does not fit in ",
                     f.type() == FieldDescriptor::TYPE_ENUM ? "an enum" : "an int32",
                     " (-2147483648 to 2147483647)");
        }
        return absl::OkStatus();
      }
      case FieldDescriptor::TYPE_UINT32:
      case FieldDescriptor::TYPE_SINT32:
        if (v > std::numeric_limits<uint32_t>::max()) {
          return Bad(name, " holds ", v, ", which does not fit in 32 bits");
        }
        return absl::OkStatus();
      case FieldDescriptor::TYPE_BOOL:
        if (v > 1) return Bad(name, " holds ", v, "; a bool is 0 or 1");
        return absl::OkStatus();
      default: return absl::OkStatus();
    }
  }

  // A packed repeated scalar: its elements fill [pos_, end) exactly.
  absl::Status Packed(const FieldDescriptor& f, const std::string& name, size_t at, size_t end) {
    const int wire = ExpectedWireType(f);
    if (wire != 0) {
      const size_t size = wire == 1 ? 8 : 4;
      if ((end - pos_) % size != 0) {
        return Bad(name, " at byte ", at, " packs ", end - pos_, " bytes, not a multiple of ",
                   size);
      }
      return absl::OkStatus();
    }
    while (pos_ < end) {
      uint64_t v = 0;
      if (const char* bad = Varint(end, &v)) {
        return Bad(name, " at byte ", at, " packs a varint that ", bad);
      }
      if (absl::Status s = Range(f, name, v); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::string_view wire_;
  const Descriptor& top_;
  size_t pos_ = 0;
};

}  // namespace

absl::Status ParseRequest(absl::string_view wire, google::protobuf::Message* out) {
  const Descriptor& type = *out->GetDescriptor();
  WireWalker walker(wire, type);
  if (absl::Status s = walker.Message(type, wire.size(), ""); !s.ok()) return s;
  if (!out->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
    return absl::InvalidArgumentError(absl::StrCat("request is not a valid ", type.full_name()));
  }
  return absl::OkStatus();
}

absl::Status ParseRequest(const grpc::ByteBuffer& wire, google::protobuf::Message* out) {
  std::string bytes;
  std::vector<grpc::Slice> slices;
  if (wire.Valid() && wire.Dump(&slices).ok()) {
    bytes.reserve(wire.Length());
    for (const grpc::Slice& s : slices) {
      bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return ParseRequest(bytes, out);
}

grpc::ByteBuffer ToByteBuffer(const google::protobuf::MessageLite& message) {
  grpc::Slice slice(message.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace dflash::service
