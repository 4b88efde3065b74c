// File: views.h
// The web view's pages as functions of plain data (docs/web.md): each
// returns the HTML page and its JSON twin, the same data the page shows.
// No I/O here (web_site.h fetches), so each page is tested on its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/eval_core.h"
#include "core/job_service.h"
#include "nlohmann/json.hpp"
#include "resident/resource.h"
#include "types/job_types.h"

namespace dflash::web {

struct WebPage {
  int status = 200;
  std::string html;
  nlohmann::json json;
};

// One run (jobs with that `run`): how many jobs, the latest step, the step
// with the best accept length among SUCCEEDED jobs (the earliest of equals),
// the last change.
struct RunSummary {
  std::string run;
  int64_t jobs = 0, succeeded = 0, running = 0;
  int64_t latest_step = 0;
  int64_t best_step = -1;  // -1: no SUCCEEDED job yet
  double best_accept_length = 0;
  std::string best_job;
  int64_t last_update_micros = 0;
};
std::vector<RunSummary> SummarizeRuns(const std::vector<types::JobRecord>& jobs);

WebPage RunsView(const std::vector<RunSummary>& runs);
// `jobs` in step order. The per-position chart shows `step` (default: the
// latest SUCCEEDED step).
WebPage RunView(const std::string& run, const std::vector<types::JobRecord>& jobs,
                std::optional<int64_t> step);
WebPage JobView(const types::JobRecord& job);
WebPage CompareView(const core::Comparison& comparison);
WebPage ResourcesView(const std::vector<resident::ResourceInfo>& resources,
                      const core::ServerInfo& info);
// A readable error page (400, 404, ...) with a link back to the runs.
WebPage ErrorView(int status, const std::string& message);

}  // namespace dflash::web
