#include "test_util/safetensors_writer.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace dflash::testing {
namespace {

template <typename T>
void AppendAs(std::string* out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));  // little-endian host assumed (x86, arm64)
  out->append(buf, sizeof(T));
}

std::string JoinInts(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(v[i]);
  }
  return out + "]";
}

std::string LengthPrefix(uint64_t n) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out;
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

uint16_t FloatToF16Bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  uint32_t mant = x & 0x7fffff;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff);
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant ? 0x200 : 0));
  const int32_t e = exp - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);
  if (e <= 0) {  // half subnormal (or zero)
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000;
    const int shift = 14 - e;
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // may carry to inf
  return static_cast<uint16_t>(sign | half);
}

uint16_t FloatToBF16Bits(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);  // NaN
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

SafetensorsWriter& SafetensorsWriter::Add(const std::string& name, const std::string& dtype,
                                          std::vector<int64_t> shape, std::string bytes) {
  tensors_.push_back({name, dtype, std::move(shape), std::move(bytes)});
  return *this;
}

SafetensorsWriter& SafetensorsWriter::AddValues(const std::string& name, const std::string& dtype,
                                                std::vector<int64_t> shape,
                                                const std::vector<double>& values) {
  std::string bytes;
  for (double v : values) {
    if (dtype == "F64")
      AppendAs<double>(&bytes, v);
    else if (dtype == "F32")
      AppendAs<float>(&bytes, static_cast<float>(v));
    else if (dtype == "F16")
      AppendAs<uint16_t>(&bytes, FloatToF16Bits(static_cast<float>(v)));
    else if (dtype == "BF16")
      AppendAs<uint16_t>(&bytes, FloatToBF16Bits(static_cast<float>(v)));
    else if (dtype == "I64")
      AppendAs<int64_t>(&bytes, static_cast<int64_t>(v));
    else if (dtype == "I32")
      AppendAs<int32_t>(&bytes, static_cast<int32_t>(v));
    else if (dtype == "I16")
      AppendAs<int16_t>(&bytes, static_cast<int16_t>(v));
    else if (dtype == "I8")
      AppendAs<int8_t>(&bytes, static_cast<int8_t>(v));
    else if (dtype == "U8")
      AppendAs<uint8_t>(&bytes, static_cast<uint8_t>(v));
    else if (dtype == "BOOL")
      AppendAs<uint8_t>(&bytes, v != 0 ? 1 : 0);
    else
      throw std::invalid_argument("AddValues: no conversion to dtype " + dtype);
  }
  return Add(name, dtype, std::move(shape), std::move(bytes));
}

SafetensorsWriter& SafetensorsWriter::Metadata(const std::string& key, const std::string& value) {
  metadata_.emplace_back(key, value);
  return *this;
}

std::string SafetensorsWriter::HeaderJson() const {
  std::string h = "{";
  bool first = true;
  if (!metadata_.empty()) {
    h += "\"__metadata__\":{";
    for (size_t i = 0; i < metadata_.size(); ++i) {
      if (i) h += ",";
      h += JsonQuote(metadata_[i].first) + ":" + JsonQuote(metadata_[i].second);
    }
    h += "}";
    first = false;
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    if (!first) h += ",";
    first = false;
    const uint64_t end = offset + t.bytes.size();
    h += JsonQuote(t.name) + ":{\"dtype\":" + JsonQuote(t.dtype) +
         ",\"shape\":" + JoinInts(t.shape) + ",\"data_offsets\":[" + std::to_string(offset) + "," +
         std::to_string(end) + "]}";
    offset = end;
  }
  h += "}";
  while ((8 + h.size()) % 8 != 0) h += ' ';
  return h;
}

std::string SafetensorsWriter::Bytes() const {
  std::string data;
  for (const Tensor& t : tensors_) data += t.bytes;
  return RawSafetensors(HeaderJson(), data);
}

std::string SafetensorsWriter::WriteTo(const std::string& path) const {
  WriteBytes(path, Bytes());
  return path;
}

std::vector<std::string> SafetensorsWriter::names() const {
  std::vector<std::string> out;
  for (const Tensor& t : tensors_) out.push_back(t.name);
  return out;
}

std::string RawSafetensors(const std::string& header_json, const std::string& data,
                           std::optional<uint64_t> length) {
  return LengthPrefix(length.value_or(header_json.size())) + header_json + data;
}

std::string WriteShardedSafetensors(
    const std::string& dir, const std::vector<std::pair<std::string, SafetensorsWriter>>& shards,
    const std::string& index_name) {
  std::string weight_map;
  uint64_t total = 0;
  for (const auto& [file, writer] : shards) {
    const std::string bytes = writer.Bytes();
    WriteBytes((std::filesystem::path(dir) / file).string(), bytes);
    total += bytes.size();
    for (const std::string& name : writer.names()) {
      if (!weight_map.empty()) weight_map += ",";
      weight_map += JsonQuote(name) + ":" + JsonQuote(file);
    }
  }
  const std::string index = (std::filesystem::path(dir) / index_name).string();
  WriteBytes(index, "{\"metadata\":{\"total_size\":" + std::to_string(total) +
                        "},\"weight_map\":{" + weight_map + "}}");
  return index;
}

}  // namespace dflash::testing
