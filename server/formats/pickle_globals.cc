#include "formats/pickle_globals.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::formats {
namespace {

constexpr absl::string_view kOrderedDict = "collections.OrderedDict";
constexpr absl::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr absl::string_view kRebuildParameter = "torch._utils._rebuild_parameter";
constexpr absl::string_view kRebuildParameterWithState =
    "torch._utils._rebuild_parameter_with_state";

// The allowlist: the only globals a pickle may name. Storage classes carry
// their element type; the others are called by CallAllowedGlobal(). The
// refusal message lists this table, so it cannot drift from what is accepted.
constexpr AllowedGlobal kAllowedGlobals[] = {
    {kOrderedDict, false, DType::kF32},        {kRebuildTensor, false, DType::kF32},
    {kRebuildParameter, false, DType::kF32},   {kRebuildParameterWithState, false, DType::kF32},
    {"torch.FloatStorage", true, DType::kF32}, {"torch.DoubleStorage", true, DType::kF64},
    {"torch.HalfStorage", true, DType::kF16},  {"torch.BFloat16Storage", true, DType::kBF16},
    {"torch.LongStorage", true, DType::kI64},  {"torch.IntStorage", true, DType::kI32},
    {"torch.ShortStorage", true, DType::kI16}, {"torch.CharStorage", true, DType::kI8},
    {"torch.ByteStorage", true, DType::kU8},   {"torch.BoolStorage", true, DType::kBool},
};

constexpr size_t kMaxTensorDims = 64;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

bool IsIntTuple(const PickleValue& v) {
  if (v.kind != PickleKind::kTuple) return false;
  for (const PickleValuePtr& i : v.items) {
    if (i->kind != PickleKind::kInt) return false;
  }
  return true;
}

absl::StatusOr<PickleValuePtr> RebuildTensor(const std::vector<PickleValuePtr>& a) {
  if (a.size() < 6 || a.size() > 7) {
    return Invalid(absl::StrCat("_rebuild_tensor_v2 takes 6 or 7 arguments; got ", a.size()));
  }
  if (a[0]->kind != PickleKind::kStorage || a[1]->kind != PickleKind::kInt || !IsIntTuple(*a[2]) ||
      !IsIntTuple(*a[3])) {
    return Invalid(
        absl::StrCat("_rebuild_tensor_v2 expects (storage, int, tuple of int, tuple of "
                     "int, "
                     "...); got (",
                     PickleKindName(a[0]->kind), ", ", PickleKindName(a[1]->kind), ", ",
                     PickleKindName(a[2]->kind), ", ", PickleKindName(a[3]->kind), ", ...)"));
  }
  if (a[2]->items.size() != a[3]->items.size() || a[2]->items.size() > kMaxTensorDims) {
    return Invalid(absl::StrCat("tensor has ", a[2]->items.size(), " sizes and ",
                                a[3]->items.size(), " strides"));
  }
  PickleValuePtr t = MakePickleValue(PickleKind::kTensor);
  t->tensor.storage = a[0]->storage;
  t->tensor.storage_offset = a[1]->integer;
  for (size_t i = 0; i < a[2]->items.size(); ++i) {
    int64_t size = a[2]->items[i]->integer, stride = a[3]->items[i]->integer;
    if (size < 0 || stride < 0) {
      return Invalid(absl::StrCat("tensor has negative size or stride ", size, ", ", stride));
    }
    t->tensor.size.push_back(size);
    t->tensor.stride.push_back(stride);
  }
  if (t->tensor.storage_offset < 0) return Invalid("tensor has a negative offset");
  return t;
}

}  // namespace

const AllowedGlobal* FindAllowedGlobal(absl::string_view full) {
  for (const AllowedGlobal& g : kAllowedGlobals) {
    if (g.name == full) return &g;
  }
  return nullptr;
}

std::string AllowedGlobalsText() {
  std::vector<absl::string_view> names;
  for (const AllowedGlobal& g : kAllowedGlobals) names.push_back(g.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<PickleValuePtr> CallAllowedGlobal(const PickleValue& fn,
                                                 const std::vector<PickleValuePtr>& args) {
  if (fn.str == kOrderedDict) {
    if (!args.empty()) {
      return Invalid(absl::StrCat("collections.OrderedDict with ", args.size(),
                                  " arguments is not supported"));
    }
    PickleValuePtr d = MakePickleValue(PickleKind::kDict);
    d->ordered_dict = true;
    return d;
  }
  if (fn.str == kRebuildTensor) return RebuildTensor(args);
  if (fn.str == kRebuildParameter || fn.str == kRebuildParameterWithState) {
    size_t want = fn.str == kRebuildParameter ? 3 : 4;
    if (args.size() != want || args[0]->kind != PickleKind::kTensor) {
      return Invalid(absl::StrCat(fn.str, " expects (tensor, ...) with ", want, " arguments; got ",
                                  args.size()));
    }
    return args[0];
  }
  return Invalid(absl::StrCat("'", fn.str, "' cannot be called"));
}

absl::StatusOr<PickleValuePtr> StorageFromPersistentId(const PickleValue& pid) {
  const auto& p = pid.items;
  if (pid.kind != PickleKind::kTuple || p.size() != 5 || p[0]->kind != PickleKind::kString ||
      p[0]->str != "storage" || p[1]->kind != PickleKind::kGlobal ||
      !absl::EndsWith(p[1]->str, "Storage") || p[2]->kind != PickleKind::kString ||
      p[3]->kind != PickleKind::kString || p[4]->kind != PickleKind::kInt || p[4]->integer < 0) {
    return Invalid(
        "persistent id is not ('storage', torch.<Type>Storage, key, "
        "location, "
        "numel)");
  }
  PickleValuePtr v = MakePickleValue(PickleKind::kStorage);
  v->storage.dtype = p[1]->storage.dtype;
  v->storage.key = p[2]->str;
  v->storage.location = p[3]->str;
  v->storage.numel = p[4]->integer;
  return v;
}

}  // namespace dflash::formats
