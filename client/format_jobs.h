// File: format_jobs.h
// Terminal renderings of evaluation jobs: state, progress bar, the job
// table, side-by-side comparison and the training-curve (history) table.
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/timestamp.pb.h>

#include "dflash/eval/v1/eval.pb.h"
#include "dflash/eval/v1/service.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

std::string JobStateLabel(pb::JobState state);  // "SUCCEEDED", ...
// "2024-05-01 12:03:04Z" (UTC); "-" when unset.
std::string FormatTimestamp(const google::protobuf::Timestamp& ts);
// The resident drafter's name, else the checkpoint directory's base name.
std::string DrafterLabel(const pb::EvalRequest& req);
// "[#####.........] 12/40 blocks  30%  elapsed 1.2s  ETA 3.4s" (no newline).
std::string FormatProgressLine(const pb::EvalProgress& p, int bar_width);
// "FAILED: FAILED_PRECONDITION: message" / "CANCELLED" / ...
std::string FormatJobOutcome(const pb::EvalJob& job);
// What `status JOB` prints: state, request, progress, timings, error.
std::string FormatJobStatus(const pb::EvalJob& job);
// One row per job, as the server ordered them (newest first), and the next page.
std::string FormatJobList(const pb::ListEvalsResponse& list);
// Accept length, tau and per-position accuracy side by side, each with its
// difference from the first job, then the server's warnings.
std::string FormatComparison(const pb::CompareEvalsResponse& cmp);
// The result's 95% intervals (accept length, tau, per-position rates) and
// its gate verdict; "" when it has neither.
std::string FormatIntervals(const pb::EvalResult& r);
// The accept-length and tau intervals on one line ("" without intervals).
std::string FormatIntervalLine(const pb::EvalResult& r);
// A suite job's result: one row per dataset (samples, blocks, accept length
// and tau with their intervals, acceptance at j = 1..3), then the macro average.
std::string FormatSuiteResult(const pb::EvalResult& r);
// The paired differences of a comparison: per metric, each job against the
// first, "better", "worse" or "no detectable difference".
std::string FormatDifferences(const pb::CompareEvalsResponse& cmp);
// Step vs accept length, tau and accuracy at positions 1..4, in the given order.
std::string FormatHistory(const std::string& run, const std::vector<pb::EvalJob>& jobs);
// One line per stored calibration: "served (vllm, step-weighted) 3.210 vs
// predicted 3.200 (greedy): ratio 1.003, within"; empty without any.
std::string FormatCalibrations(const pb::EvalJob& job);

}  // namespace dflash::client
