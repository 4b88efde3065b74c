#include "client/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "client/format_jobs.h"

namespace dflash::client {

ProgressPrinter::ProgressPrinter(std::ostream& out, Mode mode,
                                 std::chrono::milliseconds line_interval)
    : out_(out), mode_(mode), line_interval_(line_interval) {}

std::string ProgressPrinter::Describe(const pb::EvalJob& job, int bar_width) const {
  if (job.state() == pb::JOB_STATE_QUEUED) return "queued";
  if (job.state() == pb::JOB_STATE_RUNNING && job.progress().blocks_total() == 0) {
    return "running: loading and preparing";
  }
  std::string s = FormatProgressLine(job.progress(), bar_width);
  if (job.state() != pb::JOB_STATE_RUNNING) s = absl::StrCat(JobStateLabel(job.state()), " ", s);
  return s;
}

void ProgressPrinter::Update(const pb::EvalJob& job) {
  if (mode_ == Mode::kNone) return;
  const auto now = std::chrono::steady_clock::now();
  const bool state_changed = job.state() != last_state_;
  if (mode_ == Mode::kBar) {
    // At most ~10 redraws a second; state changes always show.
    if (!state_changed && drawn_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
    const std::string line = Describe(job, 30);
    // Pad over whatever the previous, longer line left behind.
    out_ << '\r' << line
         << std::string(last_width_ > line.size() ? last_width_ - line.size() : 0, ' ')
         << std::flush;
    last_width_ = line.size();
  } else {
    if (!state_changed && now - last_draw_ < line_interval_) return;
    out_ << "progress: " << Describe(job, 20) << "\n" << std::flush;
  }
  drawn_ = true;
  last_draw_ = now;
  last_state_ = job.state();
}

void ProgressPrinter::Finish(const pb::EvalJob& final_job) {
  if (mode_ != Mode::kBar || !drawn_) return;
  if (last_state_ == final_job.state()) {  // the stream's last update already shows it
    out_ << "\n" << std::flush;
    return;
  }
  pb::EvalJob shown = final_job;
  if (final_job.state() == pb::JOB_STATE_SUCCEEDED && shown.progress().blocks_total() > 0) {
    shown.mutable_progress()->set_blocks_done(shown.progress().blocks_total());
  }
  last_state_ = pb::JOB_STATE_UNSPECIFIED;  // force the redraw
  drawn_ = false;
  Update(shown);
  out_ << "\n" << std::flush;
}

}  // namespace dflash::client
