// File: unpickler.h
// The restricted unpickler behind ParsePickle (pickle_reader.h): its
// bounded reads, stack, containers, memo and allowlisted globals
// (unpickler.cc), and the opcode table that drives them, Unpickler::Step
// (pickle_reader.cc). Internal to formats/: callers use ParsePickle.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/status_macros.h"
#include "formats/pickle_limits.h"
#include "formats/pickle_value.h"

namespace dflash::formats {

// The opcode machine: a stack, a mark stack and a memo, every one bounded.
class Unpickler {
 public:
  Unpickler(absl::string_view data, const PickleLimits& limits) : data_(data), limits_(limits) {}

  // Runs the opcodes up to STOP and returns the value then on the stack.
  absl::StatusOr<PickleValuePtr> Run();

 private:
  // ---- errors ----
  absl::Status Error(absl::string_view what) const;
  absl::Status Truncated(absl::string_view what) const;

  // ---- bounded reads ----
  absl::Status ReadBytes(uint64_t n, absl::string_view what, absl::string_view* out);
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
  absl::Status ReadLine(absl::string_view what, std::string* out);

  // ---- stack ----
  size_t Base() const { return marks_.empty() ? 0 : marks_.back(); }
  absl::Status Push(PickleValuePtr v);
  absl::Status Pop(PickleValuePtr* out);
  absl::Status Top(PickleValuePtr* out) const;
  // Pops everything above the last MARK and the mark itself.
  absl::Status PopMark(std::vector<PickleValuePtr>* out);

  // ---- containers ----
  // Places `child` inside `parent`. Freezing the child makes recursive
  // structures impossible and keeps depth exact: a frozen value never grows.
  absl::Status Adopt(PickleValue& parent, const PickleValuePtr& child);
  absl::Status CheckSize(size_t n) const;
  absl::StatusOr<PickleValuePtr> MakeSequence(PickleKind kind, std::vector<PickleValuePtr> items);
  absl::Status Append(const PickleValuePtr& list, PickleValuePtr item);
  absl::Status SetItem(const PickleValuePtr& dict, PickleValuePtr key, PickleValuePtr value);
  absl::Status SetItems(const PickleValuePtr& dict, std::vector<PickleValuePtr> kv);

  // ---- memo ----
  absl::Status Put(uint64_t index);
  absl::Status Get(uint64_t index);

  // ---- globals, REDUCE, persistent ids ----
  absl::Status PushGlobal(const std::string& module, const std::string& name);
  absl::Status Reduce();
  absl::Status PersistentLoad();
  absl::Status Build();

  absl::Status PushInt(int64_t v);
  absl::Status PushBytes(PickleKind kind, uint64_t n);
  absl::Status PushBool(bool v);

  // One opcode (op_, its arguments read from the data): the opcode table,
  // in pickle_reader.cc.
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

}  // namespace dflash::formats
