// File: pickle_globals.h
// The globals a torch.save pickle may name (the allowlist) and what the
// unpickler builds from them: the result of calling an allowed function
// (REDUCE) and the storage record a persistent id names (BINPERSID). Apart
// from the opcode machine (unpickler.h) so that what a pickle may do is
// one table and three small functions, read without the machine around them.
//
// Errors are InvalidArgument saying only what is wrong; the unpickler adds
// "pickle: " and the position of the opcode.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formats/dtype.h"
#include "formats/pickle_value.h"

namespace dflash::formats {

struct AllowedGlobal {
  absl::string_view name;  // "module.name"
  bool storage;            // a torch.<Type>Storage class
  DType dtype;             // for storage classes
};

// The allowlist entry named `full` ("module.name"), or nullptr.
const AllowedGlobal* FindAllowedGlobal(absl::string_view full);

// Every allowed name, comma-separated: the refusal message lists them.
std::string AllowedGlobalsText();

// The value `fn` (an allowed global) builds from `args`: an empty
// OrderedDict, or a tensor reference (_rebuild_tensor_v2, _rebuild_parameter).
absl::StatusOr<PickleValuePtr> CallAllowedGlobal(const PickleValue& fn,
                                                 const std::vector<PickleValuePtr>& args);

// The kStorage value of a persistent id ('storage', torch.<Type>Storage,
// key, location, numel).
absl::StatusOr<PickleValuePtr> StorageFromPersistentId(const PickleValue& pid);

}  // namespace dflash::formats
