#include "formats/pickle_flatten.h"

#include <set>
#include <unordered_map>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "formats/dtype.h"

namespace dflash::formats {
namespace {

constexpr int64_t kMaxFlattenVisits = int64_t{1} << 22;
// {"module": {"state_dict": ...}}: wrappers inside wrappers, this deep.
constexpr int kMaxWrapperDepth = 4;

// Elements of the storage a tensor spans (offset included); false on overflow.
bool StorageExtent(const PickleTensorRef& t, int64_t* extent, int64_t* numel) {
  int64_t last = t.storage_offset;
  *numel = 1;
  for (size_t i = 0; i < t.size.size(); ++i) {
    if (__builtin_mul_overflow(*numel, t.size[i], numel)) return false;
  }
  if (*numel == 0) {
    *extent = t.storage_offset;
    return true;
  }
  for (size_t i = 0; i < t.size.size(); ++i) {
    int64_t span;
    if (__builtin_mul_overflow(t.size[i] - 1, t.stride[i], &span) ||
        __builtin_add_overflow(last, span, &last)) {
      return false;
    }
  }
  return !__builtin_add_overflow(last, 1, extent);
}

// torch.optim.Optimizer.state_dict(): {"state": {...}, "param_groups": [...]}.
bool IsOptimizerState(const PickleValue& v) {
  if (v.kind != PickleKind::kDict) return false;
  const PickleValue* state = v.Get("state");
  const PickleValue* groups = v.Get("param_groups");
  return state != nullptr && groups != nullptr && state->kind == PickleKind::kDict &&
         groups->kind == PickleKind::kList;
}

bool IsContainer(const PickleValue& v) {
  return v.kind == PickleKind::kDict || v.kind == PickleKind::kList || v.kind == PickleKind::kTuple;
}

std::string KeyText(const PickleValue& key) {
  return key.kind == PickleKind::kInt ? absl::StrCat(key.integer) : key.str;
}

std::string Join(const std::string& name, absl::string_view part) {
  return name.empty() ? std::string(part) : absl::StrCat(name, ".", part);
}

// Turns the unpickled tree into named tensors; non-tensor subtrees are
// reported once, at their root, in `out.skipped`. Visits are counted across
// every Walk of one flattener (shared subtrees count each time they are seen).
class Flattener {
 public:
  absl::Status Walk(const PickleValue& v, const std::string& name, FlatCheckpoint& out) {
    if (++visits_ > kMaxFlattenVisits) {
      return absl::InvalidArgumentError(
          absl::StrCat("data.pkl has more than ", kMaxFlattenVisits, " entries to list"));
    }
    const std::string shown = name.empty() ? "<root>" : name;
    if (v.kind == PickleKind::kTensor) return Add(v.tensor, name, out);
    if (!IsContainer(v)) {
      out.skipped.push_back(absl::StrCat(shown, " (", PickleKindName(v.kind), ")"));
      return absl::OkStatus();
    }
    const int64_t n = CountTensors(v);
    if (n == 0) {
      out.skipped.push_back(absl::StrCat(shown, " (", PickleKindName(v.kind), ", not a tensor)"));
      return absl::OkStatus();
    }
    if (IsOptimizerState(v)) {
      out.skipped.push_back(
          absl::StrCat(shown, " (optimizer state with ", n, " tensors, not model weights)"));
      return absl::OkStatus();
    }
    for (const auto& [key, child] : v.dict) {
      RETURN_IF_ERROR(Walk(*child, Join(name, KeyText(*key)), out));
    }
    for (size_t i = 0; i < v.items.size(); ++i) {
      RETURN_IF_ERROR(Walk(*v.items[i], Join(name, absl::StrCat(i)), out));
    }
    return absl::OkStatus();
  }

  // Memoized per node: shared subtrees (memo references) are counted once.
  int64_t CountTensors(const PickleValue& v) {
    if (v.kind == PickleKind::kTensor) return 1;
    auto it = counts_.find(&v);
    if (it != counts_.end()) return it->second;
    int64_t n = 0;
    for (const auto& item : v.items) n += CountTensors(*item);
    for (const auto& kv : v.dict) n += CountTensors(*kv.second);
    counts_[&v] = n;
    return n;
  }

 private:
  absl::Status Add(const PickleTensorRef& t, const std::string& name, FlatCheckpoint& out) {
    if (!names_.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("two tensors are named '", name,
                                                     "' after flattening nested dicts with '.'"));
    }
    int64_t extent = 0, numel = 0, nbytes = 0, storage_bytes = 0;
    if (!StorageExtent(t, &extent, &numel) ||
        __builtin_mul_overflow(numel, DTypeSize(t.storage.dtype), &nbytes) ||
        __builtin_mul_overflow(t.storage.numel, DTypeSize(t.storage.dtype), &storage_bytes)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' has sizes ", ShapeText(t.size), " and strides ",
                       ShapeText(t.stride), " that overflow 64 bits"));
    }
    if (extent > t.storage.numel) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", name, "' (offset ", t.storage_offset, ", size ", ShapeText(t.size),
          ", stride ", ShapeText(t.stride), ") needs ", extent, " elements of storage '",
          t.storage.key, "', which holds ", t.storage.numel));
    }
    out.tensors.push_back(FlatTensor{name, t, numel, nbytes});
    return absl::OkStatus();
  }

  int64_t visits_ = 0;
  std::unordered_map<const PickleValue*, int64_t> counts_;
  std::set<std::string> names_;
};

// The one wrapper key of `dict` whose value holds tensors; "" when none.
absl::StatusOr<std::string> FindWrapper(const PickleValue& dict, Flattener& flat) {
  std::string found;
  for (const std::string& key : TrainingWrapperKeys()) {
    const PickleValue* inner = dict.Get(key);
    if (inner == nullptr || inner->kind != PickleKind::kDict || IsOptimizerState(*inner) ||
        flat.CountTensors(*inner) == 0) {
      continue;
    }
    if (!found.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("data.pkl holds tensors both under '", found,
                                                     "' and under '", key,
                                                     "'; refusing to pick one"));
    }
    found = key;
  }
  return found;
}

}  // namespace

const std::vector<std::string>& TrainingWrapperKeys() {
  static const auto* keys =
      new std::vector<std::string>{"state_dict", "model_state_dict", "module"};
  return *keys;
}

absl::StatusOr<FlatCheckpoint> FlattenPickle(const PickleValue& root) {
  FlatCheckpoint out;
  Flattener flat;
  const PickleValue* top = &root;
  for (int depth = 0; depth < kMaxWrapperDepth && top->kind == PickleKind::kDict; ++depth) {
    ASSIGN_OR_RETURN(std::string wrapper, FindWrapper(*top, flat));
    if (wrapper.empty()) break;
    const std::string path = Join(out.unwrapped, wrapper);
    // The siblings: skipped and listed when they hold no model tensors.
    FlatCheckpoint outside;
    for (const auto& [key, child] : top->dict) {
      const std::string k = KeyText(*key);
      if (key->kind != PickleKind::kInt && k == wrapper) continue;
      RETURN_IF_ERROR(flat.Walk(*child, Join(out.unwrapped, k), outside));
    }
    if (!outside.tensors.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "data.pkl holds tensors both inside the wrapper '", path, "' and outside it ('",
          outside.tensors[0].name, "'",
          outside.tensors.size() > 1 ? absl::StrCat(" and ", outside.tensors.size() - 1, " more")
                                     : "",
          "); refusing to pick one"));
    }
    out.skipped.insert(out.skipped.end(), outside.skipped.begin(), outside.skipped.end());
    out.unwrapped = path;
    top = top->Get(wrapper);
  }
  RETURN_IF_ERROR(flat.Walk(*top, "", out));
  return out;
}

}  // namespace dflash::formats
