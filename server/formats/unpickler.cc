#include "formats/unpickler.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "formats/pickle_globals.h"

namespace dflash::formats {
namespace {

constexpr size_t kMaxGlobalLine = 256;

}  // namespace

absl::StatusOr<PickleValuePtr> Unpickler::Run() {
  while (true) {
    op_pos_ = pos_;
    if (pos_ >= data_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("pickle: truncated at byte ", data_.size(), " (no STOP opcode)"));
    }
    op_ = static_cast<uint8_t>(data_[pos_++]);
    if (op_ == '.') {  // STOP
      PickleValuePtr top;
      RETURN_IF_ERROR(Pop(&top));
      return top;
    }
    RETURN_IF_ERROR(Step());
  }
}

// ---- errors ----
absl::Status Unpickler::Error(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("pickle: ", what, absl::StrFormat(" (opcode 0x%02x at byte %d)", op_, op_pos_)));
}

absl::Status Unpickler::Truncated(absl::string_view what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("pickle: truncated at byte ", data_.size(), " (reading ", what,
                   absl::StrFormat(" for opcode 0x%02x at byte %d)", op_, op_pos_)));
}

// ---- bounded reads ----
absl::Status Unpickler::ReadBytes(uint64_t n, absl::string_view what, absl::string_view* out) {
  if (n > data_.size() - pos_) return Truncated(what);
  *out = data_.substr(pos_, n);
  pos_ += n;
  return absl::OkStatus();
}

absl::Status Unpickler::ReadLine(absl::string_view what, std::string* out) {
  size_t end = data_.find('\n', pos_);
  if (end == absl::string_view::npos) return Truncated(what);
  if (end - pos_ > kMaxGlobalLine) return Error(absl::StrCat(what, " is too long"));
  *out = std::string(data_.substr(pos_, end - pos_));
  pos_ = end + 1;
  return absl::OkStatus();
}

absl::Status Unpickler::Push(PickleValuePtr v) {
  if (static_cast<int64_t>(stack_.size() + marks_.size()) >= limits_.max_stack_size) {
    return Error(absl::StrCat("stack deeper than ", limits_.max_stack_size));
  }
  stack_.push_back(std::move(v));
  return absl::OkStatus();
}

absl::Status Unpickler::Pop(PickleValuePtr* out) {
  if (stack_.size() <= Base()) return Error("stack underflow");
  *out = std::move(stack_.back());
  stack_.pop_back();
  return absl::OkStatus();
}

absl::Status Unpickler::Top(PickleValuePtr* out) const {
  if (stack_.size() <= Base()) return Error("stack underflow");
  *out = stack_.back();
  return absl::OkStatus();
}

// Pops everything above the last MARK and the mark itself.
absl::Status Unpickler::PopMark(std::vector<PickleValuePtr>* out) {
  if (marks_.empty()) return Error("MARK missing");
  size_t base = marks_.back();
  marks_.pop_back();
  out->assign(std::make_move_iterator(stack_.begin() + base),
              std::make_move_iterator(stack_.end()));
  stack_.resize(base);
  return absl::OkStatus();
}

// ---- containers ----
// Places `child` inside `parent`. Freezing the child makes recursive
// structures impossible and keeps depth exact: a frozen value never grows.
absl::Status Unpickler::Adopt(PickleValue& parent, const PickleValuePtr& child) {
  if (parent.frozen || child.get() == &parent) {
    return Error(absl::StrCat("a ", PickleKindName(parent.kind),
                              " is modified after being placed in another value "
                              "(recursive structures are not supported)"));
  }
  child->frozen = true;
  parent.depth = std::max(parent.depth, child->depth + 1);
  if (parent.depth > limits_.max_depth) {
    return Error(absl::StrCat("nesting deeper than ", limits_.max_depth));
  }
  return absl::OkStatus();
}

absl::Status Unpickler::CheckSize(size_t n) const {
  if (static_cast<int64_t>(n) > limits_.max_container_size) {
    return Error(absl::StrCat("container with more than ", limits_.max_container_size, " items"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PickleValuePtr> Unpickler::MakeSequence(PickleKind kind,
                                                       std::vector<PickleValuePtr> items) {
  RETURN_IF_ERROR(CheckSize(items.size()));
  PickleValuePtr v = MakePickleValue(kind);
  for (const PickleValuePtr& item : items) {
    RETURN_IF_ERROR(Adopt(*v, item));
  }
  v->items = std::move(items);
  return v;
}

absl::Status Unpickler::Append(const PickleValuePtr& list, PickleValuePtr item) {
  if (list->kind != PickleKind::kList) {
    return Error(absl::StrCat("APPEND to a ", PickleKindName(list->kind)));
  }
  RETURN_IF_ERROR(CheckSize(list->items.size() + 1));
  RETURN_IF_ERROR(Adopt(*list, item));
  list->items.push_back(std::move(item));
  return absl::OkStatus();
}

absl::Status Unpickler::SetItem(const PickleValuePtr& dict, PickleValuePtr key,
                                PickleValuePtr value) {
  if (dict->kind != PickleKind::kDict) {
    return Error(absl::StrCat("SETITEM on a ", PickleKindName(dict->kind)));
  }
  if (key->kind != PickleKind::kString && key->kind != PickleKind::kInt) {
    return Error(absl::StrCat("dict key must be a str or an int; got ", PickleKindName(key->kind)));
  }
  RETURN_IF_ERROR(Adopt(*dict, value));
  key->frozen = true;
  std::string k = DictKey(*key);
  auto it = dict->key_index.find(k);
  if (it != dict->key_index.end()) {  // Python semantics: last one wins
    dict->dict[it->second].second = std::move(value);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(CheckSize(dict->dict.size() + 1));
  dict->key_index.emplace(std::move(k), dict->dict.size());
  dict->dict.emplace_back(std::move(key), std::move(value));
  return absl::OkStatus();
}

absl::Status Unpickler::SetItems(const PickleValuePtr& dict, std::vector<PickleValuePtr> kv) {
  if (kv.size() % 2 != 0) return Error("odd number of items for a dict");
  for (size_t i = 0; i < kv.size(); i += 2) {
    RETURN_IF_ERROR(SetItem(dict, kv[i], kv[i + 1]));
  }
  return absl::OkStatus();
}

// ---- memo ----
absl::Status Unpickler::Put(uint64_t index) {
  PickleValuePtr top;
  RETURN_IF_ERROR(Top(&top));
  if (memo_.count(index) == 0 && static_cast<int64_t>(memo_.size()) >= limits_.max_memo_size) {
    return Error(absl::StrCat("memo larger than ", limits_.max_memo_size));
  }
  memo_[index] = std::move(top);
  return absl::OkStatus();
}

absl::Status Unpickler::Get(uint64_t index) {
  auto it = memo_.find(index);
  if (it == memo_.end()) return Error(absl::StrCat("memo has no entry ", index));
  return Push(it->second);
}

// ---- globals, REDUCE, persistent ids ----
absl::Status Unpickler::PushGlobal(const std::string& module, const std::string& name) {
  std::string full = absl::StrCat(module, ".", name);
  PickleValuePtr v = MakePickleValue(PickleKind::kGlobal);
  const AllowedGlobal* allowed = FindAllowedGlobal(full);
  if (allowed == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("pickle: global '", full, "' is not allowed (allowed: ", AllowedGlobalsText(),
                     ")", absl::StrFormat(" at byte %d", op_pos_)));
  }
  if (allowed->storage) v->storage.dtype = allowed->dtype;
  v->str = std::move(full);
  return Push(std::move(v));
}

absl::Status Unpickler::Reduce() {
  PickleValuePtr args, fn;
  RETURN_IF_ERROR(Pop(&args));
  RETURN_IF_ERROR(Pop(&fn));
  if (fn->kind != PickleKind::kGlobal || args->kind != PickleKind::kTuple) {
    return Error(absl::StrCat("REDUCE expects a global and a tuple; got ", PickleKindName(fn->kind),
                              " and ", PickleKindName(args->kind)));
  }
  args->frozen = true;
  absl::StatusOr<PickleValuePtr> result = CallAllowedGlobal(*fn, args->items);
  if (!result.ok()) return Error(result.status().message());
  return Push(*std::move(result));
}

absl::Status Unpickler::PersistentLoad() {
  PickleValuePtr pid;
  RETURN_IF_ERROR(Pop(&pid));
  absl::StatusOr<PickleValuePtr> storage = StorageFromPersistentId(*pid);
  if (!storage.ok()) return Error(storage.status().message());
  pid->frozen = true;
  return Push(*std::move(storage));
}

absl::Status Unpickler::Build() {
  PickleValuePtr state, obj;
  RETURN_IF_ERROR(Pop(&state));
  RETURN_IF_ERROR(Top(&obj));
  // state_dict() pickles its _metadata attribute this way; we drop it.
  if (obj->kind != PickleKind::kDict || !obj->ordered_dict ||
      (state->kind != PickleKind::kDict && state->kind != PickleKind::kNone)) {
    return Error(
        absl::StrCat("BUILD is only supported on an OrderedDict with a "
                     "dict state; got ",
                     PickleKindName(obj->kind), " and ", PickleKindName(state->kind)));
  }
  return absl::OkStatus();
}

absl::Status Unpickler::PushInt(int64_t v) {
  PickleValuePtr p = MakePickleValue(PickleKind::kInt);
  p->integer = v;
  return Push(std::move(p));
}

absl::Status Unpickler::PushBytes(PickleKind kind, uint64_t n) {
  absl::string_view b;
  RETURN_IF_ERROR(ReadBytes(n, PickleKindName(kind), &b));
  PickleValuePtr p = MakePickleValue(kind);
  p->str = std::string(b);
  return Push(std::move(p));
}

absl::Status Unpickler::PushBool(bool v) {
  PickleValuePtr p = MakePickleValue(PickleKind::kBool);
  p->boolean = v;
  return Push(std::move(p));
}

}  // namespace dflash::formats
