// File: pickle_value.h
// The values a restricted unpickle yields (ParsePickle, pickle_reader.h):
// plain Python data, storage records and tensor references, with the
// bookkeeping the unpickler uses to bound nesting. Its own file because the
// readers of parsed values (pickle_flatten, torch_pt_file) need the value
// model, not the opcode machine that builds it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "formats/dtype.h"

namespace dflash::formats {

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

  // Bookkeeping (see unpickler.cc: Adopt, SetItem).
  int depth = 0;        // 0 for scalars; containers: 1 + deepest child (>= 1)
  bool frozen = false;  // placed inside another value: no more mutation
  std::unordered_map<std::string, size_t> key_index;  // DictKey() -> position

  // kDict lookup by string key; nullptr when absent.
  const PickleValue* Get(absl::string_view key) const;
};

// The key_index spelling of a dict key: "s:" + str or "i:" + decimal int.
std::string DictKey(const PickleValue& key);

// A new value of `kind`; a list, tuple or dict starts at depth 1.
PickleValuePtr MakePickleValue(PickleKind kind);

// "int", "dict with 3 entries", ...: a short description for messages.
std::string DescribePickleValue(const PickleValue& value);

}  // namespace dflash::formats
