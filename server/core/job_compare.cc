// JobServiceImpl::Compare: finished jobs side by side, their recipes
// checked, and the paired differences with their intervals.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/compare_stats.h"
#include "core/job_service_impl.h"
#include "core/recipe.h"

namespace dflash::core {

using types::JobRecord;
using types::JobState;

absl::StatusOr<Comparison> JobServiceImpl::Compare(const std::vector<std::string>& ids,
                                                   const CompareOptions& options) {
  if (ids.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("compare needs at least two job ids; got ", ids.size()));
  }
  Comparison c;
  for (const std::string& id : ids) {
    ASSIGN_OR_RETURN(JobRecord job, queue_->Get(id));
    if (job.state != JobState::kSucceeded || !job.result) {
      return absl::FailedPreconditionError(absl::StrCat("job ", id, " is ",
                                                        types::JobStateName(job.state),
                                                        "; only SUCCEEDED jobs can be compared"));
    }
    c.jobs.push_back(std::move(job));
  }
  const auto& jobs = c.jobs;
  if (!options.allow_recipe_mismatch) RETURN_IF_ERROR(RequireSameRecipe(jobs, "compare"));
  const Recipe base_recipe = RecipeOf(jobs.front());
  for (size_t i = 1; i < jobs.size(); ++i) {
    for (const std::string& d : RecipeDifferences(base_recipe, RecipeOf(jobs[i]))) {
      c.warnings.push_back(
          absl::StrCat("recipe of ", jobs[i].id, " differs from ", jobs.front().id, ": ", d));
    }
  }

  const types::EvalResult& base = *jobs.front().result;
  size_t common = base.positions.size();
  for (const JobRecord& j : jobs) {
    const types::EvalResult& r = *j.result;
    c.accept_length.push_back(r.accept_length_pooled);
    c.accept_length_delta.push_back(r.accept_length_pooled - base.accept_length_pooled);
    c.tau.push_back(r.tau);
    common = std::min(common, r.positions.size());
  }
  for (size_t p = 0; p < common; ++p) {
    PositionComparison pc;
    pc.position = base.positions[p].position;
    for (const JobRecord& j : jobs) {
      const types::PositionMetrics& m = j.result->positions[p];
      pc.accuracy.push_back(m.accuracy);
      pc.accuracy_delta.push_back(m.accuracy - base.positions[p].accuracy);
      pc.acceptance.push_back(m.acceptance);
    }
    c.positions.push_back(std::move(pc));
  }
  auto differences = PairedDifferences(c.jobs, options.resamples, options.seed);
  if (differences.ok()) {
    c.differences = *std::move(differences);
  } else if (options.require_paired) {
    return differences.status();
  } else {
    c.warnings.push_back(absl::StrCat("no paired intervals: ", differences.status().message()));
  }
  return c;
}

}  // namespace dflash::core
