// File: pickle_flatten.h
// Turns the unpickled data.pkl of a torch.save file into a flat list of
// named tensor records (name -> storage record, offset, shape, stride), the
// way a state dict reads. Torch-free (absl + std only) so that it can be
// fuzzed together with the unpickler.
//
//   ASSIGN_OR_RETURN(PickleValuePtr root, ParsePickle(bytes));
//   ASSIGN_OR_RETURN(FlatCheckpoint flat, FlattenPickle(*root));
//   for (const FlatTensor& t : flat.tensors) ... t.name, t.ref.storage.key
//
// Rules:
//  - Nested dicts, lists and tuples are flattened with '.':
//    {"model": {"fc.weight": T}} lists "model.fc.weight"; int keys and list
//    positions are written in decimal.
//  - Non-tensor subtrees and optimizer state ({"state", "param_groups"}) are
//    skipped and listed once, at their root, in `skipped`.
//  - Training wrappers: a top-level dict whose tensors all sit under one of
//    "state_dict" (PyTorch Lightning), "model_state_dict" or "module"
//    (DeepSpeed) is read from inside that entry, so names do not start with
//    "state_dict."; `unwrapped` names the key. Its non-tensor siblings
//    ("epoch", "global_step") are skipped and listed. Tensors both inside a
//    wrapper and outside it (or under two wrappers) are an error that names
//    both, never a silent pick.
//  - Every record is checked: the tensor fits in its storage and its sizes do
//    not overflow 64 bits; two tensors with one name are an error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "formats/pickle_reader.h"

namespace dflash::formats {

struct FlatTensor {
  std::string name;  // flattened with '.', after unwrapping
  PickleTensorRef ref;
  int64_t numel = 0;   // product of ref.size
  int64_t nbytes = 0;  // numel * element size
};

struct FlatCheckpoint {
  std::vector<FlatTensor> tensors;   // in pickle order
  std::vector<std::string> skipped;  // "step (int)", "optimizer (...)"
  std::string unwrapped;             // "state_dict", "module", ...; "" when none
};

// The top-level keys read as wrappers, in the order they are tried.
const std::vector<std::string>& TrainingWrapperKeys();

absl::StatusOr<FlatCheckpoint> FlattenPickle(const PickleValue& root);

}  // namespace dflash::formats
