// ParsePickle and the opcode table of its restricted unpickler
// (Unpickler::Step); the machine the opcodes drive: unpickler.h.
#include "formats/pickle_reader.h"

#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "formats/unpickler.h"

namespace dflash::formats {

// The opcode table: one case per supported opcode, each a few lines that
// read the opcode's arguments and call the machine's bounded operations
// (unpickler.cc). It stays one function (excepted from the 80-line limit,
// issue 27) because it is a flat table: split into pieces it would only be
// harder to check against the pickle protocol, case by case.
absl::Status Unpickler::Step() {  // NOLINT(readability-function-size)
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

absl::StatusOr<PickleValuePtr> ParsePickle(absl::string_view data, const PickleLimits& limits) {
  return Unpickler(data, limits).Run();
}

}  // namespace dflash::formats
