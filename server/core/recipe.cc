// File: recipe.cc
#include "core/recipe.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "eval/sampled_acceptance.h"
#include "types/proposal_policy.h"
#include "weights/fingerprint.h"

namespace dflash::core {
namespace {

std::string AnchorsText(const types::EvalOptions& o) {
  const char* name = o.anchors == types::AnchorStrategy::kEven     ? "even"
                     : o.anchors == types::AnchorStrategy::kRandom ? "random"
                                                                   : "all";
  return absl::StrCat(
      name, o.max_blocks > 0 ? absl::StrCat(", max_blocks ", o.max_blocks) : "",
      o.anchors == types::AnchorStrategy::kRandom ? absl::StrCat(", seed ", o.seed) : "");
}

std::string OrAbsent(const std::string& s, const char* absent) {
  return s.empty() ? absent : s;
}

}  // namespace

Recipe RecipeOf(const types::JobRecord& job) {
  const types::EvalOptions& o = job.request.params.options;
  const types::EvalResult* r = job.result ? &*job.result : nullptr;
  Recipe recipe;
  auto add = [&](const char* name, std::string value) {
    recipe.fields.push_back({name, std::move(value)});
  };
  add("dataset", OrAbsent(r ? r->dataset_fingerprint : job.dataset_fingerprint, "(not recorded)"));
  add("target", OrAbsent(r ? r->target_fingerprint : "", "(not recorded)"));
  add("semantics", r ? r->semantics : types::SemanticsName(o.semantics));
  const types::Mode mode = r ? r->mode : o.mode;  // what was scored
  add("mode", mode == types::Mode::kAnchor ? "anchor" : "replay");
  add("block size", r ? absl::StrCat(r->block_size) : absl::StrCat(o.block_size));
  add("samples", o.max_samples > 0 ? absl::StrCat("at most ", o.max_samples) : "all");
  if (mode == types::Mode::kAnchor) {
    add("anchors", AnchorsText(o));
    std::vector<std::string> settings;
    for (const types::SamplingSetting& s : o.sampling) {
      settings.push_back(eval::SamplingSettingText(s));
    }
    add("sampling", settings.empty() ? "greedy only" : absl::StrJoin(settings, "; "));
    std::vector<std::string> policies;
    for (types::ProposalPolicy p : o.policies) policies.push_back(types::PolicyName(p));
    add("policies", policies.empty() ? "the drafter's default" : absl::StrJoin(policies, ","));
    add("engine", OrAbsent(o.engine, "none"));
  } else {
    add("max new tokens", o.max_new_tokens > 0 ? absl::StrCat(o.max_new_tokens) : "no limit");
  }
  std::string text;
  for (const RecipeField& f : recipe.fields) absl::StrAppend(&text, f.name, "=", f.value, "\n");
  recipe.fingerprint =
      absl::StrFormat("r64:%016x", weights::HashBytes64(text.data(), text.size(), 0x7265636970ull));
  return recipe;
}

std::vector<std::string> RecipeDifferences(const Recipe& a, const Recipe& b) {
  // By name, in a's order then b's own: modes hold different fields.
  auto value = [](const Recipe& r, const std::string& name) -> std::string {
    for (const RecipeField& f : r.fields) {
      if (f.name == name) return f.value;
    }
    return "(not set)";
  };
  std::vector<std::string> names;
  for (const Recipe* r : {&a, &b}) {
    for (const RecipeField& f : r->fields) {
      if (std::find(names.begin(), names.end(), f.name) == names.end()) names.push_back(f.name);
    }
  }
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const std::string x = value(a, name), y = value(b, name);
    if (x != y) out.push_back(absl::StrCat(name, ": ", x, " vs ", y));
  }
  return out;
}

absl::Status RequireSameRecipe(const std::vector<types::JobRecord>& jobs, const std::string& what) {
  if (jobs.empty()) return absl::OkStatus();
  const Recipe base = RecipeOf(jobs.front());
  std::vector<std::string> why;
  for (size_t i = 1; i < jobs.size(); ++i) {
    const std::vector<std::string> d = RecipeDifferences(base, RecipeOf(jobs[i]));
    if (!d.empty()) {
      why.push_back(absl::StrCat(jobs[i].id, " against ", jobs.front().id, " (",
                                 absl::StrJoin(d, "; "), ")"));
    }
  }
  if (why.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      what, ": the jobs' recipes differ, so their numbers are not comparable: ",
      absl::StrJoin(why, "; "), "; pass --allow-recipe-mismatch to ", what, " them anyway"));
}

}  // namespace dflash::core
