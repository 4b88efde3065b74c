// File: eval_options_fields.h
// The request's plain fields, EvalParams and EvalOptions, described once as
// field tables (field_table.h): the stored JSON (store/options_json.cc,
// store/record_json.cc) and the proto conversion both ways
// (service/eval_convert.cc, service/job_convert.cc) follow from these. A
// name is the field's JSON key and its EvalRequest field name alike; the
// two tables share the one EvalRequest message.
//
// Adding a request option (docs/architecture.md, "Adding a request
// option"): the member in eval_types.h, its row here, its EvalRequest field,
// and the code that reads it.
//
// Not in the tables, converted by hand where each is used: the enums and
// named sets (mode, anchors, semantics, metrics, ci), the lists (sampling,
// policies), ci_resamples (0 on the wire means the default; absent from a
// record, 0), the fleet shard sub-object (shard_of, shard_index,
// sample_begin, sample_end: stored only in a shard job), and what is set
// by the server, never sent nor stored (logits_budget_bytes,
// first_miss_slice). EvalParams::options is the table below, written
// under "options".
#pragma once

#include <tuple>

#include "types/eval_params.h"
#include "types/eval_types.h"
#include "types/field_table.h"

namespace dflash::types {

template <>
struct FieldTable<EvalParams> {
  using S = EvalParams;
  static constexpr auto kFields =
      std::make_tuple(MakeField("drafter", &S::drafter, kRequired | kName),
                      MakeField("checkpoint_path", &S::checkpoint_path, kRequired),
                      MakeField("dataset", &S::dataset, kRequired | kName),
                      MakeField("target", &S::target, kRequired | kName));
};

// Checked in table order as they come off the wire, after the mode.
template <>
struct FieldTable<EvalOptions> {
  using S = EvalOptions;
  static constexpr auto kFields = std::make_tuple(
      MakeField("max_samples", &S::max_samples, kRequired | kNonNegative),
      MakeField("max_blocks", &S::max_blocks, kRequired | kNonNegative),
      MakeField("seed", &S::seed, kRequired),
      MakeField("block_size", &S::block_size, kRequired | kNonNegative),
      MakeField("max_new_tokens", &S::max_new_tokens, kRequired | kNonNegative),
      // Not on the wire (tests lower it); kept with the job it ran.
      MakeField("max_chunk_elements", &S::max_chunk_elements, kRequired | kStoreOnly),
      MakeField("full_positions", &S::full_positions),
      MakeField("engine", &S::engine, kOmitWhenEmpty),
      // Its range (at most 4096) is checked by hand, after the intervals.
      MakeField("shards", &S::shards));
};

}  // namespace dflash::types
