// File: compare_stats.cc
// Paired differences and the gate verdict. Both resample the per-sample
// counts of two results with one index draw per resample (eval/bootstrap.h).
#include "core/compare_stats.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "eval/bootstrap.h"

namespace dflash::core {
namespace {

int64_t CommonPositions(const std::vector<types::JobRecord>& jobs) {
  size_t common = jobs.front().result->positions.size();
  for (const types::JobRecord& j : jobs) common = std::min(common, j.result->positions.size());
  return static_cast<int64_t>(common);
}

std::string Fmt(double v) {
  return absl::StrFormat("%.4g", v);
}

}  // namespace

absl::StatusOr<std::vector<MetricDifference>> PairedDifferences(
    const std::vector<types::JobRecord>& jobs, int64_t resamples, uint64_t seed) {
  std::vector<MetricDifference> out;
  if (jobs.size() < 2) return out;
  const std::vector<eval::MetricId> metrics = eval::AllMetrics(CommonPositions(jobs));
  const types::EvalResult& base = *jobs.front().result;
  const std::vector<int64_t> ones_base(eval::Units(base).size(), 1);
  const std::vector<double> base_values = eval::MetricValues(metrics, eval::Units(base), ones_base);
  for (size_t k = 1; k < jobs.size(); ++k) {
    const types::EvalResult& r = *jobs[k].result;
    ASSIGN_OR_RETURN(eval::PairedUnits p, eval::PairSamples(base, jobs.front().id, r, jobs[k].id));
    const std::vector<double> values =
        eval::MetricValues(metrics, eval::Units(r), std::vector<int64_t>(eval::Units(r).size(), 1));
    const std::vector<std::optional<types::Interval>> ci =
        eval::PairedIntervals(metrics, p.a, p.b, resamples, seed);
    for (size_t m = 0; m < metrics.size(); ++m) {
      MetricDifference d;
      d.metric = eval::MetricName(metrics[m]);
      d.job_index = static_cast<int>(k);
      d.reference_value = base_values[m];
      d.value = values[m];
      d.delta = values[m] - base_values[m];
      d.delta_ci = ci[m];
      d.excludes_zero = ci[m] && (ci[m]->lo > 0 || ci[m]->hi < 0);
      // A metric with no denominator in one job (e.g. conditional[j] when
      // no block reached j) has no difference to judge.
      d.verdict = std::isnan(d.delta) ? "undefined" : eval::DifferenceVerdict(ci[m]);
      out.push_back(std::move(d));
    }
  }
  return out;
}

types::GateVerdict GateVerdictFor(const types::JobRecord& job, const types::EvalResult& result,
                                  const absl::StatusOr<std::optional<types::JobRecord>>& found,
                                  const std::string& why_none) {
  const types::GateSpec& spec = job.request.gate;
  types::GateVerdict v;
  v.metric = spec.metric;
  v.min_delta = spec.min_delta;
  const auto error = [&](const std::string& why) {
    v.verdict = "error";
    v.text = absl::StrCat("gate: cannot decide: ", why);
    return v;
  };
  auto metric = eval::ParseMetric(spec.metric, static_cast<int64_t>(result.positions.size()));
  if (!metric.ok()) return error(std::string(metric.status().message()));
  if (!found.ok()) {
    return error(absl::StrCat(absl::StatusCodeToString(found.status().code()), ": ",
                              found.status().message()));
  }
  const std::optional<types::JobRecord>& reference = *found;
  if (!reference) {
    v.verdict = "no reference";
    v.text = absl::StrCat("gate: pass (no reference: ", why_none, ")");
    return v;
  }
  v.reference_job = reference->id;
  const types::EvalResult& ref = *reference->result;
  if (metric->position > static_cast<int64_t>(ref.positions.size())) {
    return error(absl::StrCat("reference ", reference->id, " has only ", ref.positions.size(),
                              " positions; metric is ", spec.metric));
  }
  auto paired = eval::PairSamples(ref, reference->id, result, absl::StrCat(job.id, " (this job)"));
  if (!paired.ok()) return error(std::string(paired.status().message()));
  const auto value_of = [&](const types::EvalResult& r) {
    const std::vector<const types::SampleSummary*> u = eval::Units(r);
    return eval::MetricValues({*metric}, u, std::vector<int64_t>(u.size(), 1))[0];
  };
  v.value = value_of(result);
  v.reference_value = value_of(ref);
  v.delta = v.value - v.reference_value;
  const types::EvalOptions& o = job.request.params.options;
  v.delta_ci = eval::PairedIntervals({*metric}, paired->a, paired->b,
                                     o.ci_resamples > 0 ? o.ci_resamples : 1000, o.seed)[0];
  if (!v.delta_ci)
    return error(absl::StrCat("metric ", spec.metric, " is undefined on the samples"));
  const bool worse = v.delta_ci->hi < -spec.min_delta;
  v.text = absl::StrCat("gate: ", worse ? "WORSE than " : "pass against ", reference->id, " (step ",
                        reference->request.step, ") on ", spec.metric, ": ", Fmt(v.value), " vs ",
                        Fmt(v.reference_value), ", delta ", Fmt(v.delta), ", 95% interval [",
                        Fmt(v.delta_ci->lo), ", ", Fmt(v.delta_ci->hi), "]",
                        worse ? " lies below " : " does not lie below ",
                        spec.min_delta > 0 ? absl::StrCat("-", Fmt(spec.min_delta)) : "zero");
  bool floor_broken = false;
  if (spec.has_floor) {
    const std::optional<SliceDrop> drop = WorstSlice(result, ref);
    if (!drop) {
      absl::StrAppend(&v.text, "; slice floor: no slice is in both results");
    } else {
      v.worst_slice = drop->slice;
      v.worst_slice_delta = drop->delta;
      floor_broken = drop->delta < -spec.floor;
      absl::StrAppend(&v.text, "; worst slice ", drop->slice, ": accept length ", Fmt(drop->value),
                      " vs ", Fmt(drop->reference_value), ", delta ", Fmt(drop->delta),
                      floor_broken ? ", FELL BY MORE THAN" : ", within", " the floor ",
                      Fmt(spec.floor));
    }
  }
  v.verdict = worse || floor_broken ? "worse" : "pass";
  return v;
}

std::optional<SliceDrop> WorstSlice(const types::EvalResult& result, const types::EvalResult& ref) {
  std::optional<SliceDrop> worst;
  for (const types::SliceResult& s : result.slices) {
    for (const types::SliceResult& r : ref.slices) {
      if (r.kind != s.kind || r.value != s.value) continue;
      const double delta = s.accept_length - r.accept_length;
      if (!worst || delta < worst->delta) {
        worst =
            SliceDrop{absl::StrCat(s.kind, "=", s.value), s.accept_length, r.accept_length, delta};
      }
    }
  }
  return worst;
}

}  // namespace dflash::core
