#include "common/log_fields.h"

#include <cstddef>

namespace dflash {
namespace {

std::vector<LogField>& Fields() {
  thread_local std::vector<LogField> fields;
  return fields;
}

}  // namespace

ScopedLogFields::ScopedLogFields(std::vector<LogField> fields) : added_(fields.size()) {
  auto& current = Fields();
  for (auto& f : fields) current.push_back(std::move(f));
}

ScopedLogFields::~ScopedLogFields() {
  auto& current = Fields();
  current.erase(current.end() - static_cast<std::ptrdiff_t>(added_), current.end());
}

const std::vector<LogField>& CurrentLogFields() {
  return Fields();
}

}  // namespace dflash
