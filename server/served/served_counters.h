// File: served_counters.h
// What a serving engine says it accepted, read from the files it writes:
// two vLLM /metrics scrapes (before and after a run), SGLang's per-request
// meta_info as JSON lines, or z-lab's benchmark output. Each engine's
// counting rule is cited where it is read (docs/serving-engines-research.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace dflash::served {

struct ServedCounters {
  std::string source;  // "vllm", "sglang", "zlab"
  // "step": pooled over verification steps, 1 + accepted / steps (vLLM's
  // mean acceptance length); "request": the mean of per-request means
  // (z-lab's "Average Acceptance length").
  std::string weighting;
  double accept_length = 0;     // the served figure under `weighting`, bonus included
  int64_t steps = 0;            // drafts verified (0 = the engine does not say)
  int64_t accepted_tokens = 0;  // draft tokens accepted, over `steps`
  int64_t requests = 0;         // 0 = the engine does not say
  // accepted_per_position[i] = steps that accepted draft position i + 1
  // (vLLM's spec_decode_num_accepted_tokens_per_pos): marginal counts.
  std::vector<int64_t> accepted_per_position;
  // served_marginal[i] = P(accept length >= i + 2), when the engine gives
  // positions (vLLM counts / steps; z-lab's histogram, to its rounding).
  std::vector<double> served_marginal;
  std::optional<int64_t> num_speculative_tokens;  // K, when the files say
  std::vector<std::string> notes;                 // what was assumed reading them
};

// vLLM: `before` may be empty (counts since the server started). Each
// counter is summed over its label sets; the names are read with or without
// prometheus_client's `_total`. InvalidArgument for a missing counter
// (naming the vllm:spec_decode_* series found), a counter that went down
// (restart, or the files swapped), no drafts between the scrapes.
absl::StatusOr<ServedCounters> ParseVllmScrapes(const std::string& before,
                                                const std::string& after);
// SGLang: one JSON object per line (a /generate response or its meta_info),
// or a JSON array of them. InvalidArgument naming the line and keys found.
absl::StatusOr<ServedCounters> ParseSglangJsonl(const std::string& text);
// z-lab's dflash.benchmark stdout (transformers or MLX backend).
absl::StatusOr<ServedCounters> ParseZlabOutput(const std::string& text);
// Files (name, content), recognised by content; all of one kind: one or two
// vLLM scrapes (before, after), any number of SGLang files, one z-lab output.
absl::StatusOr<ServedCounters> ParseServedFiles(
    const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace dflash::served
