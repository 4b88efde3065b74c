// File: tensor_source.h
// A TensorSource is one checkpoint seen as a flat set of named tensors:
// a safetensors file, a sharded safetensors directory, or a torch.save zip.
// Listing is header-only (cheap); Read() materializes one tensor.
//
//   ASSIGN_OR_RETURN(TensorSourcePtr src, OpenSafetensors(path));
//   for (const TensorInfo& t : src->tensors()) ...
//   ASSIGN_OR_RETURN(at::Tensor w, src->Read("fc.weight"));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "common/mapped_file.h"
#include "formats/dtype.h"

namespace dflash::weights {

struct TensorInfo {
  std::string name;  // as stored, after flattening nested dicts with '.'
  formats::DType dtype = formats::DType::kF32;
  std::vector<int64_t> shape;
  std::string file;    // the file that holds the bytes
  int64_t nbytes = 0;  // numel * element size
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;

  // "safetensors", "safetensors-sharded", "torch-zip".
  virtual std::string format() const = 0;
  // The path the source was opened from.
  virtual std::string path() const = 0;
  // Every tensor, in file order.
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  // Reads one tensor into a contiguous CPU tensor of its stored dtype and
  // shape. NotFound names the tensor, the path and the nearest names present.
  virtual absl::StatusOr<at::Tensor> Read(absl::string_view name) const = 0;
  // Entries that are not tensors and were skipped ("optimizer", "step"), with
  // their key paths. Empty for formats that hold only tensors.
  virtual std::vector<std::string> skipped_entries() const { return {}; }
  // The caller has copied tensor `name` and will not read it again: the
  // source may give back the memory behind it (a mapped file's pages), so a
  // load's peak stays near what it keeps. Tensors already returned stay
  // valid (clean file-backed pages are read again on access), but one that
  // was written in place loses those writes. No-op by default.
  virtual void ReleaseBytes(absl::string_view /*name*/) const {}
  // ReleaseBytes for [offset, offset + length) of tensor `name`'s bytes only
  // (widened to whole pages), so a chunked copy gives pages back as it goes.
  virtual void ReleaseRange(absl::string_view /*name*/, int64_t /*offset*/,
                            int64_t /*length*/) const {}
  // The file whose private mapping Read(name) returns a view of, as it was
  // when opened; nullopt when Read(name) returns memory of its own (a copy:
  // compressed, misaligned, small or partial records) or name is unknown.
  virtual std::optional<FileStamp> MappedStamp(absl::string_view /*name*/) const {
    return std::nullopt;
  }
  // The training wrapper the tensors were read from inside ("state_dict",
  // "module", "model_state_dict"; see pickle_flatten.h), "" when none.
  virtual std::string unwrapped_wrapper() const { return {}; }

  // nullptr when absent.
  const TensorInfo* Find(absl::string_view name) const;
  // All tensor names, in file order.
  std::vector<std::string> names() const;
};

using TensorSourcePtr = std::unique_ptr<TensorSource>;

}  // namespace dflash::weights
