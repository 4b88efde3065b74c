// File: progress.h
// Shows a job's progress while the client waits: on a terminal one line
// redrawn with '\r' (bar, blocks done/total, percent, elapsed, ETA); into a
// pipe or file plain lines, at most one per `line_interval` plus one per
// state change, so logs stay short.
#pragma once

#include <chrono>
#include <ostream>
#include <string>

#include "dflash/eval/v1/eval.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

class ProgressPrinter {
 public:
  enum class Mode { kNone, kBar, kLines };

  ProgressPrinter(std::ostream& out, Mode mode,
                  std::chrono::milliseconds line_interval = std::chrono::seconds(5));

  void Update(const pb::EvalJob& job);
  // Ends the bar's line (after drawing it complete when the job succeeded).
  void Finish(const pb::EvalJob& final_job);

 private:
  std::string Describe(const pb::EvalJob& job, int bar_width) const;

  std::ostream& out_;
  Mode mode_;
  std::chrono::milliseconds line_interval_;
  std::chrono::steady_clock::time_point last_draw_{};
  pb::JobState last_state_ = pb::JOB_STATE_UNSPECIFIED;
  size_t last_width_ = 0;
  bool drawn_ = false;
};

}  // namespace dflash::client
