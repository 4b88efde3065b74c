// File: result_invariants.h
// What every result must satisfy before it is a number (issue 26 item 2):
// the histogram counts every block once; acceptance[j]'s count is the blocks
// that accepted at least j drafts; 1 + sum_j P(accept length >= j + 1) is
// the pooled (step-weighted) accept length (in replay at most it: z-lab's
// loop caps the last step's value); tau is the mean of the
// per-sample means; each sampled setting's 1 + sum of marginals is its
// expected accept length and its histogram sums to 1. A result that breaks
// one is InternalError naming the invariant and both numbers.
#pragma once

#include "absl/status/status.h"
#include "types/eval_types.h"

namespace dflash::eval {

absl::Status CheckResultInvariants(const types::EvalResult& r);

}  // namespace dflash::eval
