// File: torch_save_writer.h
// Writes torch.save zip archives for tests, without Python or libtorch: a
// flat dict {name: tensor} pickled as torch.save does (protocol 2,
// torch._utils._rebuild_tensor_v2 over persistent storages), each storage a
// stored (uncompressed) zip record "archive/data/<key>". Enough for the
// capture files EvalDataset reads (input_ids, loss_mask, hidden_states).
//
//   TorchSaveWriter w;
//   w.Add("input_ids", "LongStorage", {5}, bytes_of_five_int64s);
//   w.WriteTo(dir.Join("data_0.ckpt"));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace dflash::testing {

class TorchSaveWriter {
 public:
  // `storage` is the torch storage class without "torch.": "FloatStorage",
  // "LongStorage", "ByteStorage", "BFloat16Storage", ... `bytes` is the
  // contiguous little-endian data; its element count is bytes / elem_size.
  TorchSaveWriter& Add(const std::string& name, const std::string& storage,
                       std::vector<int64_t> shape, std::string bytes, int elem_size);

  // Pads every record's data to a multiple of `align` bytes in the file, as
  // torch.save does (64); without it, records start where they fall.
  TorchSaveWriter& AlignRecords(int align) {
    align_ = align;
    return *this;
  }

  // The pickle (data.pkl) and the whole archive.
  std::string Pickle() const;
  std::string Bytes() const;
  // Writes Bytes() to `path` (parent folders created); returns `path`.
  std::string WriteTo(const std::string& path) const;

 private:
  struct Entry {
    std::string name, storage;
    std::vector<int64_t> shape;
    std::string bytes;
    int elem_size = 1;
  };
  std::vector<Entry> entries_;
  int align_ = 1;
};

// A zip archive of stored records, in the order given; align > 1 pads each
// record's data to a multiple of it, as torch.save does (64).
std::string StoredZip(const std::vector<std::pair<std::string, std::string>>& records,
                      int align = 1);

}  // namespace dflash::testing
