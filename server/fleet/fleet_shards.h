// File: fleet_shards.h
// One evaluation across a fleet's servers (issue 30, item 1): a fleet job
// that names its dataset by path and asks for N > 1 shards is split by the
// server that claims it (the parent) into N shard jobs, one per contiguous
// sample range sized by tokens. Shard jobs wait in the store like any job:
// any server claims one under the same leases and attempts (a lost
// server's shard runs again elsewhere), evaluates only its range, and
// stores its counts before finishing (EvalResult::part_state). The parent
// runs its own shards while it waits, adds their progress into its own,
// and merges their parts in sample order into the result one pass gives.
// Ids are the parent's plus ".s<k>", created only when absent, so a parent
// run again after its server died finds the shards already there.
#pragma once

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "fleet/fleet_backend.h"
#include "jobs/job_queue.h"
#include "types/job_types.h"

namespace dflash::fleet {

// Whether `request` is split into shard jobs: its dataset named by path
// (a fleet job), shards > 1, one dataset, and not itself a shard.
bool SplitsIntoShards(const types::JobRequest& request);

// The shard job `k` of `parent` over dataset positions `range`.
types::JobRecord ShardJob(const types::JobRecord& parent, size_t k, const eval::SampleRange& range);

// Runs `parent` (claimed here; `params` name the objects loaded for it) as
// its shard jobs and returns the merged result. Fails with a shard's error
// (naming the shard, its samples and server), or FailedPrecondition when a
// shard's server read another copy of the dataset (both fingerprints
// named); either way the other shards are cancelled. When the parent is
// cancelled every shard is, and it returns once none is left running.
// `fleet` claims and creates the shards; `queue` (its queue) reads and
// cancels them.
absl::StatusOr<types::EvalResult> RunFleetShards(core::EvalCore& core, jobs::JobQueue& queue,
                                                 FleetBackend& fleet,
                                                 const types::JobRecord& parent,
                                                 const types::EvalParams& params,
                                                 const types::ProgressFn& progress);

}  // namespace dflash::fleet
