// JobServiceImpl's serving-profile and calibration calls: a finished job's
// numbers against what an engine serves (served/).
#include <chrono>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/acceptance_curves.h"
#include "core/job_service_impl.h"
#include "served/served_counters.h"
#include "served/serving_profile.h"

namespace dflash::core {
namespace {

std::string NowRfc3339() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

absl::StatusOr<JobService::ProfileExport> JobServiceImpl::ExportProfile(const std::string& id,
                                                                        const std::string& format,
                                                                        int setting) {
  ASSIGN_OR_RETURN(served::ProfileFormat f, served::ParseProfileFormat(format));
  ASSIGN_OR_RETURN(types::JobRecord job, queue_->Get(id));
  ASSIGN_OR_RETURN(served::AcceptanceCurve curve, CurveFromJob(job, setting));
  ASSIGN_OR_RETURN(std::string text, served::ExportProfile(curve, f));
  return ProfileExport{std::move(text), curve.label};
}

absl::StatusOr<JobService::CalibrationResult> JobServiceImpl::Calibrate(
    const std::string& id, const std::vector<std::pair<std::string, std::string>>& files,
    int setting) {
  if (files.empty()) {
    return absl::InvalidArgumentError(
        "no served counters: give two vLLM scrapes (before, after), SGLang meta_info JSON lines "
        "or z-lab's benchmark output");
  }
  ASSIGN_OR_RETURN(served::ServedCounters counters, served::ParseServedFiles(files));
  ASSIGN_OR_RETURN(types::JobRecord job, queue_->Get(id));
  ASSIGN_OR_RETURN(served::AcceptanceCurve curve, CurveFromJob(job, setting));
  ASSIGN_OR_RETURN(served::Calibration c, served::Calibrate(curve, counters));
  c.created = NowRfc3339();
  ASSIGN_OR_RETURN(types::JobRecord stored,
                   queue_->AddCalibration(id, served::CalibrationToJson(c).dump()));
  return CalibrationResult{std::move(c), std::move(stored)};
}

}  // namespace dflash::core
