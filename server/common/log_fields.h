// File: log_fields.h
// Structured fields for the log line being written on this thread (job id,
// request id, peer, method, ...). The text format ignores them (messages
// already say what matters); the JSON format (app/logging.h) emits each as a
// key of its own. Fields are thread-local and scoped, so a caller sets them
// around the spdlog call that should carry them. Never put tensors or
// tokens here.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace dflash {

struct LogField {
  LogField(std::string k, std::string v) : key(std::move(k)), text(std::move(v)) {}
  LogField(std::string k, const char* v) : key(std::move(k)), text(v ? v : "") {}
  LogField(std::string k, double v) : key(std::move(k)), number(v), is_number(true) {}
  LogField(std::string k, int64_t v)
      : key(std::move(k)), number(static_cast<double>(v)), is_number(true) {}

  std::string key;
  std::string text;
  double number = 0;
  bool is_number = false;
};

// Adds fields for its lifetime; nested scopes stack (inner keys come later).
class ScopedLogFields {
 public:
  explicit ScopedLogFields(std::vector<LogField> fields);
  ~ScopedLogFields();
  ScopedLogFields(const ScopedLogFields&) = delete;
  ScopedLogFields& operator=(const ScopedLogFields&) = delete;

 private:
  size_t added_ = 0;
};

// The fields in force on this thread, outermost first.
const std::vector<LogField>& CurrentLogFields();

}  // namespace dflash
