#include "jobs/job_id.h"

#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"

namespace dflash::jobs {

std::string JobIdGenerator::Next(int64_t now_unix_micros) {
  const std::time_t seconds = static_cast<std::time_t>(now_unix_micros / 1000000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char prefix[32];
  std::strftime(prefix, sizeof(prefix), "ev-%Y%m%d-%H%M%S", &tm);
  std::string id = absl::StrFormat("%s-%04d", prefix, 1);
  if (id <= last_) {
    // Same second as the last id (or the clock went back): count on from it.
    const size_t dash = last_.rfind('-');
    int64_t counter = 0;
    if (dash != std::string::npos && absl::SimpleAtoi(last_.substr(dash + 1), &counter) &&
        last_.compare(0, dash, prefix) >= 0) {
      id = absl::StrFormat("%s-%04d", last_.substr(0, dash), counter + 1);
    }
    if (id <= last_) id = last_ + "-1";  // a foreign id format: still sort after it
  }
  last_ = id;
  return id;
}

}  // namespace dflash::jobs
