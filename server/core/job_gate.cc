// JobServiceImpl::GateReference: the job a finished job's regression gate
// compares with (a named job, or the best or previous step of its run).
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "core/job_service_impl.h"
#include "core/recipe.h"
#include "eval/bootstrap.h"

namespace dflash::core {

using types::JobRecord;
using types::JobState;

absl::StatusOr<std::optional<JobRecord>> JobServiceImpl::GateReference(const JobRecord& job,
                                                                       std::string* why) {
  const types::GateSpec& gate = job.request.gate;
  const types::EvalResult& result = *job.result;
  const Recipe recipe = RecipeOf(job);
  if (gate.reference != "best" && gate.reference != "previous") {
    auto ref = queue_->Get(gate.reference);
    if (!ref.ok() || !ref->result) {
      *why = absl::StrCat("job ", gate.reference, " has no result");
      return std::nullopt;
    }
    if (!gate.allow_recipe_mismatch) RETURN_IF_ERROR(RequireSameRecipe({*ref, job}, "gate"));
    return *ref;
  }
  // Earlier steps of the same run, scored on the same data.
  types::ListQuery q;
  q.state = JobState::kSucceeded;
  q.run = job.request.run;
  q.dataset = result.dataset_fingerprint;
  q.order_by_step = true;
  q.page_size = 1000;
  if (job.request.step == 0) {
    *why = absl::StrCat("step 0 has no earlier step in run '", job.request.run, "'");
    return std::nullopt;
  }
  q.max_step = job.request.step - 1;
  auto metric = eval::ParseMetric(gate.metric, static_cast<int64_t>(result.positions.size()));
  std::optional<JobRecord> pick;
  std::string other_recipe;
  double best = 0;
  for (;;) {
    auto page = queue_->List(q);
    if (!page.ok()) {
      *why = absl::StrCat("listing run '", job.request.run, "': ", page.status().message());
      return std::nullopt;
    }
    for (JobRecord& j : page->jobs) {
      if (j.id == job.id || !j.result || !metric.ok() ||
          metric->position > static_cast<int64_t>(j.result->positions.size())) {
        continue;
      }
      if (!gate.allow_recipe_mismatch) {
        std::vector<std::string> d = RecipeDifferences(recipe, RecipeOf(j));
        if (!d.empty()) {  // the latest of another recipe, to name it if none matches
          other_recipe = absl::StrCat(j.id, " (step ", j.request.step, ") differs in ",
                                      absl::StrJoin(d, "; "));
          continue;
        }
      }
      const auto u = eval::Units(*j.result);
      const double v = eval::MetricValues({*metric}, u, std::vector<int64_t>(u.size(), 1))[0];
      // previous: the last in step order (newest among equal steps); best: the highest value.
      if (gate.reference == "previous" || !pick || v > best) {
        best = v;
        pick = std::move(j);
      }
    }
    if (page->next_page_token.empty()) break;
    q.page_token = page->next_page_token;
  }
  if (!pick && !other_recipe.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("gate: no earlier job of run '", job.request.run, "' has this job's recipe (",
                     recipe.fingerprint, "); the latest, ", other_recipe,
                     "; pass --allow-recipe-mismatch to gate against it anyway"));
  }
  if (!pick) {
    *why = absl::StrCat("no SUCCEEDED job of run '", job.request.run, "' below step ",
                        job.request.step, " on this dataset");
  }
  return pick;
}

}  // namespace dflash::core
