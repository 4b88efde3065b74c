#include "formats/pickle_reader.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "formats/pickle_globals.h"

namespace dflash::weights {
namespace {

constexpr size_t kMaxGlobalLine = 256;

// The opcode machine: a stack, a mark stack and a memo, every one bounded.
class Unpickler {
 public:
  Unpickler(absl::string_view data, const PickleLimits& limits) : data_(data), limits_(limits) {}

  absl::StatusOr<PickleValuePtr> Run() {
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

 private:
  // ---- errors ----
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "pickle: ", what, absl::StrFormat(" (opcode 0x%02x at byte %d)", op_, op_pos_)));
  }
  absl::Status Truncated(absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("pickle: truncated at byte ", data_.size(), " (reading ", what,
                     absl::StrFormat(" for opcode 0x%02x at byte %d)", op_, op_pos_)));
  }

  // ---- bounded reads ----
  absl::Status ReadBytes(uint64_t n, absl::string_view what, absl::string_view* out) {
    if (n > data_.size() - pos_) return Truncated(what);
    *out = data_.substr(pos_, n);
    pos_ += n;
    return absl::OkStatus();
  }
  template <typename T>
  absl::Status ReadLE(absl::string_view what, T* out) {
    absl::string_view b;
    RETURN_IF_ERROR(ReadBytes(sizeof(T), what, &b));
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
    }
    *out = static_cast<T>(v);
    return absl::OkStatus();
  }
  absl::Status ReadLine(absl::string_view what, std::string* out) {
    size_t end = data_.find('\n', pos_);
    if (end == absl::string_view::npos) return Truncated(what);
    if (end - pos_ > kMaxGlobalLine) return Error(absl::StrCat(what, " is too long"));
    *out = std::string(data_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return absl::OkStatus();
  }

  // ---- stack ----
  size_t Base() const { return marks_.empty() ? 0 : marks_.back(); }
  absl::Status Push(PickleValuePtr v) {
    if (static_cast<int64_t>(stack_.size() + marks_.size()) >= limits_.max_stack_size) {
      return Error(absl::StrCat("stack deeper than ", limits_.max_stack_size));
    }
    stack_.push_back(std::move(v));
    return absl::OkStatus();
  }
  absl::Status Pop(PickleValuePtr* out) {
    if (stack_.size() <= Base()) return Error("stack underflow");
    *out = std::move(stack_.back());
    stack_.pop_back();
    return absl::OkStatus();
  }
  absl::Status Top(PickleValuePtr* out) const {
    if (stack_.size() <= Base()) return Error("stack underflow");
    *out = stack_.back();
    return absl::OkStatus();
  }
  // Pops everything above the last MARK and the mark itself.
  absl::Status PopMark(std::vector<PickleValuePtr>* out) {
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
  absl::Status Adopt(PickleValue& parent, const PickleValuePtr& child) {
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
  absl::Status CheckSize(size_t n) const {
    if (static_cast<int64_t>(n) > limits_.max_container_size) {
      return Error(absl::StrCat("container with more than ", limits_.max_container_size, " items"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<PickleValuePtr> MakeSequence(PickleKind kind, std::vector<PickleValuePtr> items) {
    RETURN_IF_ERROR(CheckSize(items.size()));
    PickleValuePtr v = MakePickleValue(kind);
    for (const PickleValuePtr& item : items) {
      RETURN_IF_ERROR(Adopt(*v, item));
    }
    v->items = std::move(items);
    return v;
  }
  absl::Status Append(const PickleValuePtr& list, PickleValuePtr item) {
    if (list->kind != PickleKind::kList) {
      return Error(absl::StrCat("APPEND to a ", PickleKindName(list->kind)));
    }
    RETURN_IF_ERROR(CheckSize(list->items.size() + 1));
    RETURN_IF_ERROR(Adopt(*list, item));
    list->items.push_back(std::move(item));
    return absl::OkStatus();
  }
  absl::Status SetItem(const PickleValuePtr& dict, PickleValuePtr key, PickleValuePtr value) {
    if (dict->kind != PickleKind::kDict) {
      return Error(absl::StrCat("SETITEM on a ", PickleKindName(dict->kind)));
    }
    if (key->kind != PickleKind::kString && key->kind != PickleKind::kInt) {
      return Error(
          absl::StrCat("dict key must be a str or an int; got ", PickleKindName(key->kind)));
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
  absl::Status SetItems(const PickleValuePtr& dict, std::vector<PickleValuePtr> kv) {
    if (kv.size() % 2 != 0) return Error("odd number of items for a dict");
    for (size_t i = 0; i < kv.size(); i += 2) {
      RETURN_IF_ERROR(SetItem(dict, kv[i], kv[i + 1]));
    }
    return absl::OkStatus();
  }

  // ---- memo ----
  absl::Status Put(uint64_t index) {
    PickleValuePtr top;
    RETURN_IF_ERROR(Top(&top));
    if (memo_.count(index) == 0 && static_cast<int64_t>(memo_.size()) >= limits_.max_memo_size) {
      return Error(absl::StrCat("memo larger than ", limits_.max_memo_size));
    }
    memo_[index] = std::move(top);
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t index) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return Error(absl::StrCat("memo has no entry ", index));
    return Push(it->second);
  }

  // ---- globals, REDUCE, persistent ids ----
  absl::Status PushGlobal(const std::string& module, const std::string& name) {
    std::string full = absl::StrCat(module, ".", name);
    PickleValuePtr v = MakePickleValue(PickleKind::kGlobal);
    const AllowedGlobal* allowed = FindAllowedGlobal(full);
    if (allowed == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pickle: global '", full, "' is not allowed (allowed: ", AllowedGlobalsText(), ")",
          absl::StrFormat(" at byte %d", op_pos_)));
    }
    if (allowed->storage) v->storage.dtype = allowed->dtype;
    v->str = std::move(full);
    return Push(std::move(v));
  }

  absl::Status Reduce() {
    PickleValuePtr args, fn;
    RETURN_IF_ERROR(Pop(&args));
    RETURN_IF_ERROR(Pop(&fn));
    if (fn->kind != PickleKind::kGlobal || args->kind != PickleKind::kTuple) {
      return Error(absl::StrCat("REDUCE expects a global and a tuple; got ",
                                PickleKindName(fn->kind), " and ", PickleKindName(args->kind)));
    }
    args->frozen = true;
    absl::StatusOr<PickleValuePtr> result = CallAllowedGlobal(*fn, args->items);
    if (!result.ok()) return Error(result.status().message());
    return Push(*std::move(result));
  }

  absl::Status PersistentLoad() {
    PickleValuePtr pid;
    RETURN_IF_ERROR(Pop(&pid));
    absl::StatusOr<PickleValuePtr> storage = StorageFromPersistentId(*pid);
    if (!storage.ok()) return Error(storage.status().message());
    pid->frozen = true;
    return Push(*std::move(storage));
  }

  absl::Status Build() {
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

  absl::Status PushInt(int64_t v) {
    PickleValuePtr p = MakePickleValue(PickleKind::kInt);
    p->integer = v;
    return Push(std::move(p));
  }
  absl::Status PushBytes(PickleKind kind, uint64_t n) {
    absl::string_view b;
    RETURN_IF_ERROR(ReadBytes(n, PickleKindName(kind), &b));
    PickleValuePtr p = MakePickleValue(kind);
    p->str = std::string(b);
    return Push(std::move(p));
  }
  absl::Status PushBool(bool v) {
    PickleValuePtr p = MakePickleValue(PickleKind::kBool);
    p->boolean = v;
    return Push(std::move(p));
  }

  absl::Status Step();

  absl::string_view data_;
  PickleLimits limits_;
  size_t pos_ = 0;
  size_t op_pos_ = 0;
  uint8_t op_ = 0;
  std::vector<PickleValuePtr> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleValuePtr> memo_;
};

absl::Status Unpickler::Step() {
  switch (op_) {
    case 0x80: {  // PROTO
      uint8_t proto;
      RETURN_IF_ERROR(ReadLE("protocol", &proto));
      if (proto < 2 || proto > 5) {
        return Error(absl::StrCat("unsupported protocol ", proto, "; expected 2 to 5"));
      }
      return absl::OkStatus();
    }
    case 0x95: {  // FRAME: a length hint only
      uint64_t n;
      return ReadLE("frame length", &n);
    }
    case '(':  // MARK
      if (static_cast<int64_t>(stack_.size() + marks_.size()) >= limits_.max_stack_size) {
        return Error(absl::StrCat("stack deeper than ", limits_.max_stack_size));
      }
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case '}':  // EMPTY_DICT
      return Push(MakePickleValue(PickleKind::kDict));
    case ']':  // EMPTY_LIST
      return Push(MakePickleValue(PickleKind::kList));
    case ')':  // EMPTY_TUPLE
      return Push(MakePickleValue(PickleKind::kTuple));
    case 't':    // TUPLE
    case 'l': {  // LIST
      std::vector<PickleValuePtr> items;
      RETURN_IF_ERROR(PopMark(&items));
      ASSIGN_OR_RETURN(
          PickleValuePtr v,
          MakeSequence(op_ == 't' ? PickleKind::kTuple : PickleKind::kList, std::move(items)));
      return Push(std::move(v));
    }
    case 0x85:    // TUPLE1
    case 0x86:    // TUPLE2
    case 0x87: {  // TUPLE3
      size_t n = op_ - 0x84;
      if (stack_.size() < Base() + n) return Error("stack underflow");
      std::vector<PickleValuePtr> items(std::make_move_iterator(stack_.end() - n),
                                        std::make_move_iterator(stack_.end()));
      stack_.resize(stack_.size() - n);
      ASSIGN_OR_RETURN(PickleValuePtr v, MakeSequence(PickleKind::kTuple, std::move(items)));
      return Push(std::move(v));
    }
    case 'd': {  // DICT
      std::vector<PickleValuePtr> kv;
      RETURN_IF_ERROR(PopMark(&kv));
      PickleValuePtr d = MakePickleValue(PickleKind::kDict);
      RETURN_IF_ERROR(SetItems(d, std::move(kv)));
      return Push(std::move(d));
    }
    case 's': {  // SETITEM
      PickleValuePtr value, key, dict;
      RETURN_IF_ERROR(Pop(&value));
      RETURN_IF_ERROR(Pop(&key));
      RETURN_IF_ERROR(Top(&dict));
      return SetItem(dict, std::move(key), std::move(value));
    }
    case 'u': {  // SETITEMS
      std::vector<PickleValuePtr> kv;
      RETURN_IF_ERROR(PopMark(&kv));
      PickleValuePtr dict;
      RETURN_IF_ERROR(Top(&dict));
      return SetItems(dict, std::move(kv));
    }
    case 'a': {  // APPEND
      PickleValuePtr item, list;
      RETURN_IF_ERROR(Pop(&item));
      RETURN_IF_ERROR(Top(&list));
      return Append(list, std::move(item));
    }
    case 'e': {  // APPENDS
      std::vector<PickleValuePtr> items;
      RETURN_IF_ERROR(PopMark(&items));
      PickleValuePtr list;
      RETURN_IF_ERROR(Top(&list));
      for (PickleValuePtr& item : items) {
        RETURN_IF_ERROR(Append(list, std::move(item)));
      }
      return absl::OkStatus();
    }
    case 'J': {  // BININT
      int32_t v;
      RETURN_IF_ERROR(ReadLE("int32", &v));
      return PushInt(v);
    }
    case 'K': {  // BININT1
      uint8_t v;
      RETURN_IF_ERROR(ReadLE("uint8", &v));
      return PushInt(v);
    }
    case 'M': {  // BININT2
      uint16_t v;
      RETURN_IF_ERROR(ReadLE("uint16", &v));
      return PushInt(v);
    }
    case 0x8a: {  // LONG1: little-endian two's complement
      uint8_t n;
      RETURN_IF_ERROR(ReadLE("long length", &n));
      absl::string_view b;
      RETURN_IF_ERROR(ReadBytes(n, "long", &b));
      if (n > 8) return Error(absl::StrCat("integer of ", n, " bytes is too large"));
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i) {
        v |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
      }
      if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) {
        v |= ~uint64_t{0} << (8 * n);  // sign-extend
      }
      return PushInt(static_cast<int64_t>(v));
    }
    case 'G': {  // BINFLOAT: big-endian double
      absl::string_view b;
      RETURN_IF_ERROR(ReadBytes(8, "float", &b));
      uint64_t bits = 0;
      for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<uint8_t>(b[i]);
      PickleValuePtr p = MakePickleValue(PickleKind::kFloat);
      std::memcpy(&p->real, &bits, sizeof(bits));
      return Push(std::move(p));
    }
    case 'X': {  // BINUNICODE
      uint32_t n;
      RETURN_IF_ERROR(ReadLE("str length", &n));
      return PushBytes(PickleKind::kString, n);
    }
    case 0x8c: {  // SHORT_BINUNICODE
      uint8_t n;
      RETURN_IF_ERROR(ReadLE("str length", &n));
      return PushBytes(PickleKind::kString, n);
    }
    case 0x8d: {  // BINUNICODE8
      uint64_t n;
      RETURN_IF_ERROR(ReadLE("str length", &n));
      return PushBytes(PickleKind::kString, n);
    }
    case 'C': {  // SHORT_BINBYTES
      uint8_t n;
      RETURN_IF_ERROR(ReadLE("bytes length", &n));
      return PushBytes(PickleKind::kBytes, n);
    }
    case 'B': {  // BINBYTES
      uint32_t n;
      RETURN_IF_ERROR(ReadLE("bytes length", &n));
      return PushBytes(PickleKind::kBytes, n);
    }
    case 0x8e: {  // BINBYTES8
      uint64_t n;
      RETURN_IF_ERROR(ReadLE("bytes length", &n));
      return PushBytes(PickleKind::kBytes, n);
    }
    case 'N':  // NONE
      return Push(MakePickleValue(PickleKind::kNone));
    case 0x88:  // NEWTRUE
      return PushBool(true);
    case 0x89:  // NEWFALSE
      return PushBool(false);
    case 'q': {  // BINPUT
      uint8_t i;
      RETURN_IF_ERROR(ReadLE("memo index", &i));
      return Put(i);
    }
    case 'r': {  // LONG_BINPUT
      uint32_t i;
      RETURN_IF_ERROR(ReadLE("memo index", &i));
      return Put(i);
    }
    case 0x94:  // MEMOIZE
      return Put(memo_.size());
    case 'h': {  // BINGET
      uint8_t i;
      RETURN_IF_ERROR(ReadLE("memo index", &i));
      return Get(i);
    }
    case 'j': {  // LONG_BINGET
      uint32_t i;
      RETURN_IF_ERROR(ReadLE("memo index", &i));
      return Get(i);
    }
    case 'c': {  // GLOBAL
      std::string module, name;
      RETURN_IF_ERROR(ReadLine("global module", &module));
      RETURN_IF_ERROR(ReadLine("global name", &name));
      return PushGlobal(module, name);
    }
    case 0x93: {  // STACK_GLOBAL
      PickleValuePtr name, module;
      RETURN_IF_ERROR(Pop(&name));
      RETURN_IF_ERROR(Pop(&module));
      if (name->kind != PickleKind::kString || module->kind != PickleKind::kString) {
        return Error("STACK_GLOBAL expects two str");
      }
      return PushGlobal(module->str, name->str);
    }
    case 'R':  // REDUCE
      return Reduce();
    case 'b':  // BUILD
      return Build();
    case 'Q':  // BINPERSID
      return PersistentLoad();
    case '0': {  // POP
      PickleValuePtr unused;
      return Pop(&unused);
    }
    case '1': {  // POP_MARK
      std::vector<PickleValuePtr> unused;
      return PopMark(&unused);
    }
    case '2': {  // DUP
      PickleValuePtr top;
      RETURN_IF_ERROR(Top(&top));
      return Push(std::move(top));
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("pickle: unknown or unsupported opcode 0x%02x at byte %d", op_, op_pos_));
  }
}

}  // namespace

absl::StatusOr<PickleValuePtr> ParsePickle(absl::string_view data, const PickleLimits& limits) {
  return Unpickler(data, limits).Run();
}

}  // namespace dflash::weights
