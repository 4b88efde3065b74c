#include "job_watch.h"

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "absl/strings/str_cat.h"

namespace dflash::testing {
namespace {

struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<types::JobRecord> hit;
  std::optional<types::JobRecord> last;
};

}  // namespace

absl::StatusOr<types::JobRecord> WatchUntil(
    jobs::JobQueue& queue, const std::string& id,
    const std::function<bool(const types::JobRecord&)>& until, std::chrono::seconds limit) {
  auto seen = std::make_shared<Seen>();
  auto watch = queue.Subscribe(id, [seen, until](const types::JobRecord& r) {
    std::lock_guard<std::mutex> lock(seen->mu);
    seen->last = r;
    if (!seen->hit && until(r)) seen->hit = r;
    seen->cv.notify_all();
  });
  if (!watch.ok()) return watch.status();
  std::optional<types::JobRecord> found;
  if (until(watch->current)) {
    found = watch->current;
  } else if (watch->handle != 0) {
    std::unique_lock<std::mutex> lock(seen->mu);
    seen->cv.wait_for(lock, limit, [&] {
      return seen->hit.has_value() || (seen->last && types::IsTerminal(seen->last->state));
    });
    found = seen->hit;
  }
  queue.Unsubscribe(watch->handle);
  if (found) return *found;
  std::lock_guard<std::mutex> lock(seen->mu);
  const types::JobRecord& last = seen->last ? *seen->last : watch->current;
  if (types::IsTerminal(last.state)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", id, " ended ", types::JobStateName(last.state), " before the condition held"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("job ", id, " is still ", types::JobStateName(last.state), " after ",
                   limit.count(), " s without the condition holding"));
}

absl::StatusOr<types::JobRecord> WaitDone(jobs::JobQueue& queue, const std::string& id) {
  absl::StatusOr<types::JobRecord> done =
      WatchUntil(queue, id, [](const types::JobRecord& r) { return types::IsTerminal(r.state); });
  if (!done.ok()) return done.status();
  return queue.Get(id);
}

}  // namespace dflash::testing
