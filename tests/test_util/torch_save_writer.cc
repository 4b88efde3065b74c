#include "test_util/torch_save_writer.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace dflash::testing {
namespace {

void PutLE(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint32_t Crc32(const std::string& data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// Pickle opcodes used below.
void Unicode(std::string& p, const std::string& s) {
  p.push_back('X');
  PutLE(p, s.size(), 4);
  p += s;
}
void Int(std::string& p, int64_t v) {
  if (v < INT32_MIN || v > INT32_MAX) throw std::runtime_error("torch_save_writer: int too big");
  p.push_back('J');
  PutLE(p, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
}
void Global(std::string& p, const std::string& module, const std::string& name) {
  p += "c" + module + "\n" + name + "\n";
}
void IntTuple(std::string& p, const std::vector<int64_t>& v) {
  p.push_back('(');
  for (int64_t x : v) Int(p, x);
  p.push_back('t');
}

}  // namespace

TorchSaveWriter& TorchSaveWriter::Add(const std::string& name, const std::string& storage,
                                      std::vector<int64_t> shape, std::string bytes,
                                      int elem_size) {
  entries_.push_back(Entry{name, storage, std::move(shape), std::move(bytes), elem_size});
  return *this;
}

std::string TorchSaveWriter::Pickle() const {
  std::string p = "\x80\x02";
  p.push_back('}');  // EMPTY_DICT
  p.push_back('(');  // MARK
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    Unicode(p, e.name);
    Global(p, "torch._utils", "_rebuild_tensor_v2");
    p.push_back('(');
    // persistent id ('storage', torch.<X>Storage, key, 'cpu', numel)
    p.push_back('(');
    Unicode(p, "storage");
    Global(p, "torch", e.storage);
    Unicode(p, std::to_string(i));
    Unicode(p, "cpu");
    Int(p, static_cast<int64_t>(e.bytes.size()) / e.elem_size);
    p.push_back('t');
    p.push_back('Q');  // BINPERSID
    Int(p, 0);         // storage offset
    IntTuple(p, e.shape);
    std::vector<int64_t> stride(e.shape.size(), 1);
    for (int d = static_cast<int>(e.shape.size()) - 2; d >= 0; --d) {
      stride[d] = stride[d + 1] * e.shape[d + 1];
    }
    IntTuple(p, stride);
    p.push_back('\x89');  // NEWFALSE: requires_grad
    Global(p, "collections", "OrderedDict");
    p.push_back(')');  // EMPTY_TUPLE
    p.push_back('R');  // OrderedDict()
    p.push_back('t');
    p.push_back('R');  // _rebuild_tensor_v2(...)
  }
  p.push_back('u');  // SETITEMS
  p.push_back('.');  // STOP
  return p;
}

std::string TorchSaveWriter::Bytes() const {
  std::vector<std::pair<std::string, std::string>> records;
  records.emplace_back("archive/data.pkl", Pickle());
  records.emplace_back("archive/byteorder", "little");
  for (size_t i = 0; i < entries_.size(); ++i) {
    records.emplace_back("archive/data/" + std::to_string(i), entries_[i].bytes);
  }
  records.emplace_back("archive/version", "3\n");
  return StoredZip(records, align_);
}

std::string TorchSaveWriter::WriteTo(const std::string& path) const {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  const std::string bytes = Bytes();
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("torch_save_writer: cannot write " + path);
  return path;
}

std::string StoredZip(const std::vector<std::pair<std::string, std::string>>& records, int align) {
  std::string out, central;
  for (const auto& [name, data] : records) {
    const uint32_t crc = Crc32(data);
    const uint64_t offset = out.size();
    // An extra field ("FB", as torch.save writes it) pads the data to `align`.
    uint64_t pad = 0;
    if (align > 1) {
      const uint64_t at = offset + 30 + name.size() + 4;
      pad = 4 + (align - at % align) % align;
    }
    PutLE(out, 0x04034b50, 4);
    PutLE(out, 20, 2);  // version needed
    PutLE(out, 0, 2);   // flags
    PutLE(out, 0, 2);   // stored
    PutLE(out, 0, 4);   // time, date
    PutLE(out, crc, 4);
    PutLE(out, data.size(), 4);
    PutLE(out, data.size(), 4);
    PutLE(out, name.size(), 2);
    PutLE(out, pad, 2);  // extra
    out += name;
    if (pad > 0) {
      out += "FB";
      PutLE(out, pad - 4, 2);
      out.append(pad - 4, 'Z');
    }
    out += data;

    PutLE(central, 0x02014b50, 4);
    PutLE(central, 20, 2);  // made by
    PutLE(central, 20, 2);  // needed
    PutLE(central, 0, 2);
    PutLE(central, 0, 2);
    PutLE(central, 0, 4);
    PutLE(central, crc, 4);
    PutLE(central, data.size(), 4);
    PutLE(central, data.size(), 4);
    PutLE(central, name.size(), 2);
    PutLE(central, 0, 2);  // extra
    PutLE(central, 0, 2);  // comment
    PutLE(central, 0, 2);  // disk
    PutLE(central, 0, 2);  // internal attributes
    PutLE(central, 0, 4);  // external attributes
    PutLE(central, offset, 4);
    central += name;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  PutLE(out, 0x06054b50, 4);
  PutLE(out, 0, 2);
  PutLE(out, 0, 2);
  PutLE(out, records.size(), 2);
  PutLE(out, records.size(), 2);
  PutLE(out, central.size(), 4);
  PutLE(out, cd_offset, 4);
  PutLE(out, 0, 2);
  return out;
}

}  // namespace dflash::testing
