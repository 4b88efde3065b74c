// File: safetensors_writer.h
// Builds safetensors files for tests: well-formed ones from a list of
// tensors, corrupt ones from raw header text, and sharded checkpoints with
// their index. No torch, no JSON library.
//
//   SafetensorsWriter w;
//   w.AddValues("fc.weight", "F32", {2, 2}, {1, 2, 3, 4})
//    .Add("mask", "U8", {3}, std::string("\x01\x00\x01", 3))
//    .Metadata("format", "pt");
//   std::string path = w.WriteTo(dir.Join("model.safetensors"));
//
//   // Corrupt: any header text, any stated length.
//   dir.WriteFile("bad.safetensors", RawSafetensors("{not json", ""));
//
//   // Sharded: shards plus model.safetensors.index.json in `dir`.
//   std::string index = WriteShardedSafetensors(dir.path(),
//       {{"model-00001-of-00002.safetensors", w1}, {"model-00002-of-00002.safetensors", w2}});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dflash::testing {

class SafetensorsWriter {
 public:
  // Adds a tensor from its stored bytes. `dtype` is the safetensors spelling
  // ("F32", "BF16", "I64", "BOOL", ...) and is written as given, so unknown
  // ones can be tested. Tensors are laid out back to back in the order added;
  // data_offsets follow the byte counts, so bytes that do not match the
  // shape make a file with a byte-count defect.
  SafetensorsWriter& Add(const std::string& name, const std::string& dtype,
                         std::vector<int64_t> shape, std::string bytes);

  // Adds a tensor from values converted to `dtype`: F64/F32 exactly,
  // F16/BF16 rounded to nearest even, integer types and BOOL by cast.
  SafetensorsWriter& AddValues(const std::string& name, const std::string& dtype,
                               std::vector<int64_t> shape, const std::vector<double>& values);

  // A "__metadata__" string entry.
  SafetensorsWriter& Metadata(const std::string& key, const std::string& value);

  // The header JSON, padded with spaces so the data section starts at a
  // multiple of 8 (as the reference writer does).
  std::string HeaderJson() const;
  // The whole file: 8-byte LE length + header + data.
  std::string Bytes() const;
  // Writes Bytes() to `path` (parent folders created); returns `path`.
  std::string WriteTo(const std::string& path) const;
  // Tensor names in the order added.
  std::vector<std::string> names() const;

 private:
  struct Tensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::vector<Tensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

// Raw mode for corrupt files: 8-byte LE `length` (header_json.size() when
// not given) + header_json + data, nothing checked or padded.
std::string RawSafetensors(const std::string& header_json, const std::string& data,
                           std::optional<uint64_t> length = std::nullopt);

// Writes each shard to dir/<file name> and an index JSON
// {"metadata": {"total_size": N}, "weight_map": {tensor: file}} mapping every
// tensor of every shard; returns the index's path.
std::string WriteShardedSafetensors(
    const std::string& dir, const std::vector<std::pair<std::string, SafetensorsWriter>>& shards,
    const std::string& index_name = "model.safetensors.index.json");

// JSON string literal with quotes: "a\"b".
std::string JsonQuote(const std::string& s);

// IEEE half and bfloat16 bit patterns, rounded to nearest even.
uint16_t FloatToF16Bits(float value);
uint16_t FloatToBF16Bits(float value);

}  // namespace dflash::testing
