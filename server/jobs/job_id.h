// File: job_id.h
// Job ids that sort by creation: "ev-20261130-061502-0001" (UTC second, then
// a counter). Each id is greater than the previous one and than the store's
// greatest id at startup, even when the clock steps back.
#pragma once

#include <cstdint>
#include <string>

namespace dflash::jobs {

class JobIdGenerator {
 public:
  explicit JobIdGenerator(std::string after = "") : last_(std::move(after)) {}
  // Not thread-safe; the queue calls it under its lock.
  std::string Next(int64_t now_unix_micros);

 private:
  std::string last_;
};

}  // namespace dflash::jobs
