// File: safetensors_file.h
// safetensors readers: one file, or a sharded checkpoint through
// model.safetensors.index.json. Memory-mapped; Read() touches only the byte
// range of the tensor asked for. The header is validated in a fixed order
// before anything is trusted: 8-byte LE length -> size cap -> length within
// the file -> JSON -> per tensor: known dtype, numel x size == byte range,
// range inside the data section -> ranges tile the data section with no
// overlap and no gap (details in safetensors_header.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "formats/safetensors_header.h"  // SafetensorsEntry, ParseSafetensorsHeader
#include "weights/tensor_source.h"

namespace dflash::weights {

// Opens one .safetensors file. NotFound if absent; InvalidArgument naming the
// path and the defect if malformed.
//
// Read() is zero-copy where it can be: the tensor points into a private
// (copy-on-write) memory map that stays alive as long as any tensor read
// from it, even after the TensorSource is gone. In-place writes to such a
// tensor never reach the file, but a later Read() of the same name in this
// process sees them (they share the mapped pages); clone() before mutating
// if that matters. (Only where the kernel refuses a writable private map,
// under strict overcommit, is the map read-only; mutate clones there.) Data whose file offset is
// not a multiple of its element size is copied into a fresh aligned tensor instead.
absl::StatusOr<TensorSourcePtr> OpenSafetensors(const std::string& path);

// Opens a sharded checkpoint from its index JSON
// ({"metadata": {...}, "weight_map": {tensor: shard file}}). Shard files are
// relative to the index's directory; a shard name that is absolute or whose
// normalised path leaves that directory ("../x", "a/../../x") is
// InvalidArgument. A shard missing on disk is NotFound naming the shard and
// a tensor it should hold; a tensor the index names but its shard's header
// lacks is InvalidArgument naming both.
//
// `names` empty: every shard is opened and checked. `names` non-empty: only
// the shards the index assigns to those names are opened (names the index
// does not know are ignored here; Read() reports them). Either way:
//  - tensors() lists the index's tensors that live in opened shards, shards
//    in file-name order, each in its file order; tensors a shard holds that
//    the index does not name are ignored.
//  - Read() of a tensor the index places in an unopened shard is NotFound
//    saying so; of an unknown name, NotFound with the nearest index names.
//  - TensorInfo::file is the shard's path; path() is the index path.
absl::StatusOr<TensorSourcePtr> OpenShardedSafetensors(const std::string& index_path,
                                                       const std::vector<std::string>& names = {});

}  // namespace dflash::weights
