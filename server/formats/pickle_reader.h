// File: pickle_reader.h
// A restricted unpickler for the data.pkl of torch.save archives, in the
// spirit of PyTorch's weights_only loader: no code runs, only an allowlist of
// globals is accepted, and every read and container is bounded so that
// adversarial bytes yield InvalidArgument (never a crash or a huge
// allocation). Torch-free (absl + std only) so that it can be fuzzed alone.
//
//   ASSIGN_OR_RETURN(PickleValuePtr root, ParsePickle(bytes));
//   if (root->kind == PickleKind::kDict) for (auto& [k, v] : root->dict) ...
//
// Supported: protocols 2-5, the opcodes torch.save emits for state dicts and
// training checkpoints (see pickle_reader.cc). Allowed globals: the table
// kAllowedGlobals in pickle_reader.cc (collections.OrderedDict, the torch
// tensor/parameter rebuild functions, torch.<Type>Storage classes); a refusal
// lists them.
// Persistent ids ('storage', torch.FloatStorage, '0', 'cpu', numel) become
// kStorage values; _rebuild_tensor_v2 becomes a kTensor value (a reference
// into a storage record, no bytes). BUILD on an OrderedDict (the _metadata
// attribute of state_dict()) is accepted and its state dropped.
//
// Recursive (self-containing) structures are refused: a list or dict may not
// be modified once it has been placed inside another value.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formats/dtype.h"

namespace dflash::weights {

enum class PickleKind {
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kBytes,
  kList,
  kTuple,
  kDict,
  kStorage,  // a persistent id: one storage record of the archive
  kTensor,   // _rebuild_tensor_v2 / _rebuild_parameter
  kGlobal,   // an allowed global not (yet) called: a class or function
};

// "none", "bool", "int", "float", "str", "bytes", "list", "tuple", "dict",
// "storage", "tensor", "global".
absl::string_view PickleKindName(PickleKind kind);

struct PickleStorageRef {
  std::string key;  // record name under data/, e.g. "0"
  DType dtype = DType::kF32;
  std::string location;  // "cpu", "cuda:0", ...
  int64_t numel = 0;     // elements of dtype
};

struct PickleTensorRef {
  PickleStorageRef storage;
  int64_t storage_offset = 0;  // in elements
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
};

struct PickleValue;
using PickleValuePtr = std::shared_ptr<PickleValue>;

struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  bool boolean = false;
  int64_t integer = 0;
  double real = 0;
  std::string str;                    // kString, kBytes; kGlobal: "module.name"
  std::vector<PickleValuePtr> items;  // list, tuple
  std::vector<std::pair<PickleValuePtr, PickleValuePtr>> dict;  // in order
  bool ordered_dict = false;                                    // built by collections.OrderedDict
  PickleStorageRef storage;                                     // kStorage
  PickleTensorRef tensor;                                       // kTensor

  // Bookkeeping (see pickle_reader.cc).
  int depth = 0;        // 0 for scalars; containers: 1 + deepest child (>= 1)
  bool frozen = false;  // placed inside another value: no more mutation
  std::unordered_map<std::string, size_t> key_index;  // DictKey() -> position

  // kDict lookup by string key; nullptr when absent.
  const PickleValue* Get(absl::string_view key) const;
};

// The key_index spelling of a dict key: "s:" + str or "i:" + decimal int.
std::string DictKey(const PickleValue& key);

struct PickleLimits {
  int max_depth = 1000;                  // nesting of containers
  int64_t max_container_size = 1 << 24;  // items of one list/tuple/dict
  int64_t max_memo_size = 1 << 22;       // memo entries
  int64_t max_stack_size = 1 << 24;      // stack plus mark stack
};

// Parses one pickle, up to STOP (later bytes are ignored, as in Python). Bad or
// unsupported input -> InvalidArgument starting with "pickle: ", e.g.
// "pickle: global 'os.system' is not allowed (allowed: ...)",
// "pickle: unknown opcode 0xff at byte 12", "pickle: truncated at byte 40".
absl::StatusOr<PickleValuePtr> ParsePickle(absl::string_view data, const PickleLimits& limits = {});

// "int", "dict with 3 entries", ...: a short description for messages.
std::string DescribePickleValue(const PickleValue& value);

}  // namespace dflash::weights
