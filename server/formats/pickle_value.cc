#include "formats/pickle_value.h"

#include "absl/strings/str_cat.h"

namespace dflash::formats {

PickleValuePtr MakePickleValue(PickleKind kind) {
  auto v = std::make_shared<PickleValue>();
  v->kind = kind;
  if (kind == PickleKind::kList || kind == PickleKind::kTuple || kind == PickleKind::kDict) {
    v->depth = 1;
  }
  return v;
}

absl::string_view PickleKindName(PickleKind kind) {
  switch (kind) {
    case PickleKind::kNone: return "none";
    case PickleKind::kBool: return "bool";
    case PickleKind::kInt: return "int";
    case PickleKind::kFloat: return "float";
    case PickleKind::kString: return "str";
    case PickleKind::kBytes: return "bytes";
    case PickleKind::kList: return "list";
    case PickleKind::kTuple: return "tuple";
    case PickleKind::kDict: return "dict";
    case PickleKind::kStorage: return "storage";
    case PickleKind::kTensor: return "tensor";
    case PickleKind::kGlobal: return "global";
  }
  return "?";
}

std::string DictKey(const PickleValue& key) {
  if (key.kind == PickleKind::kInt) return absl::StrCat("i:", key.integer);
  return absl::StrCat("s:", key.str);
}

const PickleValue* PickleValue::Get(absl::string_view key) const {
  auto it = key_index.find(absl::StrCat("s:", key));
  return it == key_index.end() ? nullptr : dict[it->second].second.get();
}

std::string DescribePickleValue(const PickleValue& value) {
  switch (value.kind) {
    case PickleKind::kList:
    case PickleKind::kTuple:
      return absl::StrCat(PickleKindName(value.kind), " of ", value.items.size());
    case PickleKind::kDict: return absl::StrCat("dict of ", value.dict.size());
    case PickleKind::kGlobal: return absl::StrCat("global ", value.str);
    default: return std::string(PickleKindName(value.kind));
  }
}

}  // namespace dflash::formats
