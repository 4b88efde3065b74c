// File: suite_job.cc
// Suite resolution and the macro average of a suite job's per-dataset results.
#include "core/suite_job.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace dflash::core {

absl::StatusOr<std::vector<std::string>> ResolveSuite(const std::string& dataset,
                                                      const SuiteMap& suites,
                                                      const std::vector<std::string>& resident) {
  std::vector<std::string> parts;
  if (dataset.find(',') != std::string::npos) {
    for (absl::string_view p : absl::StrSplit(dataset, ',')) {
      parts.emplace_back(absl::StripAsciiWhitespace(p));
    }
  } else if (std::find(resident.begin(), resident.end(), dataset) == resident.end()) {
    auto it = suites.find(dataset);
    if (it == suites.end()) return parts;  // one dataset (unknown ones fail later, by name)
    parts = it->second;
  } else {
    return parts;
  }
  std::set<std::string> seen;
  for (const std::string& p : parts) {
    if (p.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", dataset, "' has an empty dataset name"));
    }
    if (!seen.insert(p).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", dataset, "' names dataset '", p, "' twice"));
    }
  }
  if (parts.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat("suite '", dataset, "' has ", parts.size(),
                                                   " dataset; a suite needs two or more"));
  }
  return parts;
}

types::EvalResult MacroAverage(const std::string& suite, std::vector<types::DatasetResult> parts) {
  types::EvalResult m;
  m.suite = suite;
  if (parts.empty()) return m;
  const types::EvalResult& first = parts.front().result;
  m.mode = first.mode;
  m.family = first.family;
  m.semantics = first.semantics;
  m.semantics_reference = first.semantics_reference;
  m.block_size = first.block_size;
  m.device = first.device;
  m.dtype = first.dtype;
  m.drafter_fingerprint = first.drafter_fingerprint;
  m.target_fingerprint = first.target_fingerprint;
  std::vector<std::string> fingerprints;
  std::vector<int> with_position;
  const double n = static_cast<double>(parts.size());
  for (const types::DatasetResult& d : parts) {
    const types::EvalResult& r = d.result;
    fingerprints.push_back(r.dataset_fingerprint);
    m.samples += r.samples;
    m.blocks += r.blocks;
    m.tokens_scored += r.tokens_scored;
    m.draft_vocab_size = r.draft_vocab_size;  // one drafter for the suite
    m.labels_in_draft_vocab += r.labels_in_draft_vocab;
    m.accept_length_pooled += r.accept_length_pooled / n;
    m.tau += r.tau / n;
    m.setup_seconds += r.setup_seconds;
    m.compute_seconds += r.compute_seconds;
    if (m.positions.size() < r.positions.size()) {
      m.positions.resize(r.positions.size());
      with_position.resize(r.positions.size(), 0);
    }
    for (size_t j = 0; j < r.positions.size(); ++j) {
      types::PositionMetrics& p = m.positions[j];
      const types::PositionMetrics& q = r.positions[j];
      p.position = q.position;
      p.counted += q.counted;
      p.correct += q.correct;
      p.accepted += q.accepted;
      p.conditional_counted += q.conditional_counted;
      p.accuracy += q.accuracy;  // sums here, divided below
      p.acceptance += q.acceptance;
      p.conditional += q.conditional;
      ++with_position[j];
    }
    for (const std::string& w : r.warnings) m.warnings.push_back(absl::StrCat(d.dataset, ": ", w));
    // Each dataset is a slice of the suite, so a gate's floor sees one fall
    // that the macro average hides.
    types::SliceResult slice{
        "dataset", d.dataset,          r.samples, r.blocks, r.accept_length_pooled,
        r.tau,     r.accept_length_ci, r.tau_ci};
    m.slices.push_back(std::move(slice));
  }
  for (size_t j = 0; j < m.positions.size(); ++j) {
    types::PositionMetrics& p = m.positions[j];
    p.accuracy /= with_position[j];
    p.acceptance /= with_position[j];
    p.conditional /= with_position[j];
  }
  m.tokens_per_second = m.compute_seconds > 0 ? m.tokens_scored / m.compute_seconds : 0;
  m.dataset_fingerprint = absl::StrJoin(fingerprints, ",");
  m.suite_results = std::move(parts);
  return m;
}

}  // namespace dflash::core
