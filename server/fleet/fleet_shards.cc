// File: fleet_shards.cc
// The parent job of a fleet's shard jobs (fleet_shards.h): plan, create,
// run or wait, add up, check, merge.
#include "fleet/fleet_shards.h"

#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "eval/part_state.h"

namespace dflash::fleet {
namespace {

using types::JobRecord;
using types::JobState;
using Clock = std::chrono::steady_clock;

// Every shard still QUEUED or RUNNING asked to stop (a finished one says
// FailedPrecondition: nothing to do).
void CancelShards(jobs::JobQueue& queue, const std::vector<std::string>& ids) {
  for (const std::string& id : ids) queue.Cancel(id, std::chrono::milliseconds(0)).IgnoreError();
}

// Until no shard is QUEUED or RUNNING (a cancelled one on a server that
// died ends when its lease expires), or `limit`.
void WaitShardsEnded(jobs::JobQueue& queue, FleetBackend& fleet, const std::string& prefix,
                     const std::string& parent, const std::vector<std::string>& ids,
                     std::chrono::seconds limit) {
  const Clock::time_point until = Clock::now() + limit;
  while (Clock::now() < until) {
    bool running = false;
    for (const std::string& id : ids) {
      absl::StatusOr<JobRecord> r = queue.Get(id);
      running = running || !r.ok() || !types::IsTerminal(r->state);
    }
    if (!running) return;
    // A claim also ends abandoned jobs whose cancel was asked for.
    if (!fleet.RunClaimedHere(prefix, parent)) std::this_thread::sleep_for(fleet.poll());
  }
}

std::string RangeText(const types::EvalOptions& o) {
  return absl::StrCat("samples [", o.sample_begin, ", ", o.sample_end, ")");
}

// What the shards add up to at one poll: their summed progress and how
// many have SUCCEEDED.
struct ShardTally {
  types::EvalProgress sum;
  size_t succeeded = 0;
};

// One poll of the shards `ids`, in order: a SUCCEEDED one's result kept in
// done[k] (its dataset checked against `fingerprint`, this server's copy),
// a running one's progress added up. The first shard that ended otherwise,
// or read other files, is the parent's failure.
absl::Status TallyShards(jobs::JobQueue& queue, const std::string& server,
                         const std::vector<std::string>& ids, const std::string& fingerprint,
                         const JobRecord& parent, std::vector<JobRecord>& done, ShardTally& t) {
  for (size_t k = 0; k < ids.size(); ++k) {
    absl::StatusOr<JobRecord> r = queue.Get(ids[k]);
    if (!r.ok()) continue;  // the store answers at the next poll
    const types::EvalOptions& o = r->request.params.options;
    if (r->state == JobState::kSucceeded) {
      const std::string& theirs = r->result->dataset_fingerprint;
      if (theirs != fingerprint) {
        return absl::FailedPreconditionError(absl::StrCat(
            "shard ", k, " (", RangeText(o), ") ran on server ", r->server,
            " with dataset fingerprint ", theirs, "; server ", server, "'s copy has ", fingerprint,
            ": the servers read different files at '", parent.request.dataset_path, "'"));
      }
      ++t.succeeded;
      t.sum.blocks_done += r->result->blocks;
      t.sum.blocks_total += r->result->blocks;
      t.sum.samples_done += static_cast<int64_t>(o.sample_end - o.sample_begin);
      done[k] = *std::move(r);
      continue;
    }
    if (types::IsTerminal(r->state)) {
      const absl::StatusCode code = r->state == JobState::kFailed
                                        ? static_cast<absl::StatusCode>(r->error_code)
                                        : absl::StatusCode::kAborted;
      return absl::Status(
          code == absl::StatusCode::kOk ? absl::StatusCode::kUnknown : code,
          absl::StrCat("shard ", k, " (", RangeText(o), ") ", types::JobStateName(r->state),
                       r->server.empty() ? "" : absl::StrCat(" on server ", r->server), ": ",
                       r->error_message));
    }
    t.sum.blocks_done += r->progress.blocks_done;
    t.sum.blocks_total += r->progress.blocks_total;
    t.sum.samples_done += r->progress.samples_done;
    // A shard not yet started adds its blocks when it starts (the sum
    // grows); replay's running totals are bounds.
    t.sum.blocks_total_is_bound = t.sum.blocks_total_is_bound || r->progress.blocks_total_is_bound;
  }
  return absl::OkStatus();
}

}  // namespace

bool SplitsIntoShards(const types::JobRequest& request) {
  const types::EvalOptions& o = request.params.options;
  return !request.dataset_path.empty() && o.shards > 1 && o.sample_end == 0 &&
         request.suite_datasets.empty();
}

JobRecord ShardJob(const JobRecord& parent, size_t k, const eval::SampleRange& range) {
  JobRecord shard;
  shard.id = absl::StrCat(parent.id, ".s", k);
  shard.request = parent.request;
  types::EvalOptions& o = shard.request.params.options;
  o.shards = 0;  // on its server: one per device slot
  o.sample_begin = static_cast<int64_t>(range.begin);
  o.sample_end = static_cast<int64_t>(range.end);
  o.shard_of = parent.id;
  o.shard_index = static_cast<int64_t>(k);
  // Its numbers are a part, not a run's result: no run/step of its own (a
  // run's listing and comparisons show the parent), no gate, no unload.
  shard.request.run.clear();
  shard.request.step = 0;
  shard.request.gate = {};
  shard.request.unload_after = false;
  shard.request.labels["shard_of"] = parent.id;
  shard.placement = parent.placement;
  shard.resubmitted_from.clear();
  return shard;
}

absl::StatusOr<types::EvalResult> RunFleetShards(core::EvalCore& core, jobs::JobQueue& queue,
                                                 FleetBackend& fleet, const JobRecord& parent,
                                                 const types::EvalParams& params,
                                                 const types::ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  ASSIGN_OR_RETURN(core::ShardPlan plan, core.PlanShards(params), "splitting job ", parent.id,
                   " into shards");
  const std::string prefix = absl::StrCat(parent.id, ".s");
  std::vector<std::string> ids;
  int64_t samples_total = 0;
  for (size_t k = 0; k < plan.ranges.size(); ++k) {
    ASSIGN_OR_RETURN(JobRecord shard, fleet.CreateShard(ShardJob(parent, k, plan.ranges[k])));
    ids.push_back(shard.id);
    samples_total += static_cast<int64_t>(plan.ranges[k].size());
  }
  // Cancelled: so is every shard, and the parent ends once none runs.
  const auto cancelled = [&] {
    CancelShards(queue, ids);
    WaitShardsEnded(queue, fleet, prefix, parent.id, ids, std::chrono::seconds(60));
    return absl::CancelledError("evaluation cancelled");
  };
  std::vector<JobRecord> done(ids.size());
  for (;;) {
    // This server's runner is held by the parent: it runs a waiting shard
    // of its own rather than only wait.
    const bool ran = fleet.RunClaimedHere(prefix, parent.id);
    // Before the shards are judged: a shard run here stops as CANCELLED
    // with its parent, which is no failure of the shard.
    if (queue.CancelRequested(parent.id)) return cancelled();
    ShardTally tally;
    tally.sum.samples_total = samples_total;
    absl::Status failure =
        TallyShards(queue, fleet.server(), ids, plan.dataset_fingerprint, parent, done, tally);
    const types::EvalProgress& sum = tally.sum;
    if (!failure.ok()) {
      CancelShards(queue, ids);
      return failure;
    }
    if (tally.succeeded == ids.size()) {
      if (progress) progress(sum);  // every shard's blocks, the last one's too
      break;
    }
    if (progress && !progress(sum)) {
      // Stopping or taken over: the shards stay for whichever server runs
      // the parent next.
      if (queue.CancelRequested(parent.id)) return cancelled();
      return absl::CancelledError("evaluation cancelled");
    }
    if (!ran) std::this_thread::sleep_for(fleet.poll());
  }
  std::vector<eval::EvalPart> parts;
  std::vector<types::ShardPlacement> where;
  for (JobRecord& r : done) {
    ASSIGN_OR_RETURN(eval::EvalPart part, eval::PartFromJson(r.result->part_state), "shard job ",
                     r.id);
    parts.push_back(std::move(part));
    for (types::ShardPlacement p : r.result->shards) {
      p.server = r.server;  // the fleet's name for the server
      where.push_back(std::move(p));
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return core.FinishShards(params, std::move(parts), std::move(where), seconds);
}

}  // namespace dflash::fleet
