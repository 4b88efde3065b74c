// File: suite_job.h
// Suites: several resident datasets evaluated in one job, one result per
// dataset plus their macro average (docs/decision-metrics-stats.md, "Suites").
// A suite is named in the request's dataset as "a,b,c" or by a name the
// server's config file declares (suites: {reasoning: [gsm8k, math500]}).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "types/eval_types.h"

namespace dflash::core {

using SuiteMap = std::map<std::string, std::vector<std::string>>;

// The datasets `dataset` names: "a,b,c" -> {a, b, c}; a configured suite
// (when no resident dataset has that name) -> its list; otherwise {} (one
// dataset, not a suite). InvalidArgument for empty or repeated parts.
absl::StatusOr<std::vector<std::string>> ResolveSuite(const std::string& dataset,
                                                      const SuiteMap& suites,
                                                      const std::vector<std::string>& resident);

// The macro average of the parts (in order): accept length, tau and each
// position's accuracy/acceptance/conditional are unweighted means over the
// datasets that have them; counts, samples, blocks and tokens are sums.
types::EvalResult MacroAverage(const std::string& suite, std::vector<types::DatasetResult> parts);

}  // namespace dflash::core
