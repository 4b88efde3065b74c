// File: eval_result_fields.h
// EvalResult and the plain structs inside it, described once as field
// tables (field_table.h): the stored JSON, the proto conversion and the web
// view's metric rows follow from these. A name is the field's JSON key and
// its proto field name alike.
//
// Adding a metric (docs/architecture.md, "Adding a metric"): the member in
// eval_types.h, its row here, its proto field, and the code computing it.
//
// Not in the tables, converted by hand where each is used: EvalResult's
// mode (an enum), first_miss and target_consistency (present on the wire
// and in the store only under rules of their own) and suite_results (a
// recursive pair); SamplingSetting has codecs of its own (its wire and
// stored forms differ from the struct).
#pragma once

#include <tuple>

#include "types/eval_types.h"
#include "types/field_table.h"

namespace dflash::types {

template <>
struct FieldTable<ShardPlacement> {
  using S = ShardPlacement;
  static constexpr auto kFields = std::make_tuple(
      MakeField("first", &S::first), MakeField("end", &S::end), MakeField("blocks", &S::blocks),
      MakeField("device", &S::device), MakeField("server", &S::server),
      MakeField("bytes_read", &S::bytes_read), MakeField("seconds", &S::seconds));
};

template <>
struct FieldTable<TargetConsistency> {
  using S = TargetConsistency;
  static constexpr auto kFields = std::make_tuple(
      MakeField("positions", &S::positions), MakeField("matches", &S::matches),
      MakeField("fraction", &S::fraction), MakeField("norm_applied", &S::norm_applied));
};

template <>
struct FieldTable<SliceResult> {
  using S = SliceResult;
  static constexpr auto kFields = std::make_tuple(
      MakeField("kind", &S::kind), MakeField("value", &S::value), MakeField("samples", &S::samples),
      MakeField("blocks", &S::blocks), MakeField("accept_length", &S::accept_length),
      MakeField("tau", &S::tau), MakeField("accept_length_ci", &S::accept_length_ci),
      MakeField("tau_ci", &S::tau_ci));
};

template <>
struct FieldTable<SampledAcceptance> {
  using S = SampledAcceptance;
  static constexpr auto kFields = std::make_tuple(
      MakeField("setting", &S::setting), MakeField("mean_alpha", &S::mean_alpha),
      MakeField("counted", &S::counted),
      MakeField("expected_accept_length_pooled", &S::expected_accept_length_pooled),
      MakeField("expected_tau", &S::expected_tau),
      MakeField("draft_length_curve", &S::draft_length_curve),
      MakeField("marginal_accept", &S::marginal_accept), MakeField("histogram", &S::histogram),
      MakeField("accept_length_ci", &S::accept_length_ci, kOmitWhenEmpty),
      MakeField("approximations", &S::approximations),
      MakeField("greedy_equivalent", &S::greedy_equivalent));
};

template <>
struct FieldTable<PositionMetrics> {
  using S = PositionMetrics;
  static constexpr auto kFields = std::make_tuple(
      MakeField("position", &S::position), MakeField("counted", &S::counted),
      MakeField("correct", &S::correct), MakeField("accuracy", &S::accuracy),
      MakeField("accepted", &S::accepted), MakeField("acceptance", &S::acceptance),
      MakeField("conditional_counted", &S::conditional_counted),
      MakeField("conditional", &S::conditional),
      MakeField("mean_cross_entropy", &S::mean_cross_entropy),
      // What a suite's and a shard merge's cross entropy is weighted by.
      MakeField("cross_entropy_counted", &S::cross_entropy_counted, kStoreOnly),
      MakeField("unary_correct", &S::unary_correct),
      MakeField("unary_accuracy", &S::unary_accuracy), MakeField("covered", &S::covered),
      MakeField("coverage", &S::coverage), MakeField("tf_correct", &S::tf_correct),
      MakeField("tf_accuracy", &S::tf_accuracy), MakeField("accuracy_ci", &S::accuracy_ci),
      MakeField("acceptance_ci", &S::acceptance_ci),
      MakeField("conditional_ci", &S::conditional_ci));
};

// Stored as a positional array (one per sample, so no keys): a new field
// goes at the end, and records from before it simply hold fewer entries.
template <>
struct FieldTable<SampleSummary> {
  using S = SampleSummary;
  static constexpr auto kFields = std::make_tuple(
      MakeField("sample_index", &S::sample_index), MakeField("blocks", &S::blocks),
      MakeField("mean_accept_length", &S::mean_accept_length), MakeField("length", &S::length),
      MakeField("first_response_position", &S::first_response_position),
      MakeField("accepted_total", &S::accepted_total), MakeField("counted", &S::counted),
      MakeField("correct", &S::correct), MakeField("accepted", &S::accepted),
      MakeField("conditional_counted", &S::conditional_counted),
      MakeField("response_tokens", &S::response_tokens), MakeField("loop_tokens", &S::loop_tokens),
      MakeField("loop_blocks", &S::loop_blocks),
      MakeField("loop_accepted_total", &S::loop_accepted_total),
      MakeField("context_blocks", &S::context_blocks),
      MakeField("context_accepted", &S::context_accepted), MakeField("category", &S::category),
      MakeField("language", &S::language), MakeField("thinking", &S::thinking));
};

template <>
struct FieldTable<GateVerdict> {
  using S = GateVerdict;
  static constexpr auto kFields = std::make_tuple(
      MakeField("reference_job", &S::reference_job), MakeField("metric", &S::metric),
      MakeField("min_delta", &S::min_delta), MakeField("value", &S::value),
      MakeField("reference_value", &S::reference_value), MakeField("delta", &S::delta),
      MakeField("delta_ci", &S::delta_ci), MakeField("worst_slice", &S::worst_slice),
      MakeField("worst_slice_delta", &S::worst_slice_delta), MakeField("verdict", &S::verdict),
      MakeField("text", &S::text));
};

template <>
struct FieldTable<EvalResult> {
  using S = EvalResult;
  static constexpr auto kFields = std::make_tuple(
      MakeField("family", &S::family), MakeField("semantics", &S::semantics),
      MakeField("semantics_reference", &S::semantics_reference),
      MakeField("block_size", &S::block_size), MakeField("samples", &S::samples),
      MakeField("blocks", &S::blocks), MakeField("tokens_scored", &S::tokens_scored),
      MakeField("draft_vocab_size", &S::draft_vocab_size),
      MakeField("labels_in_draft_vocab", &S::labels_in_draft_vocab),
      MakeField("accept_length_pooled", &S::accept_length_pooled), MakeField("tau", &S::tau),
      MakeField("positions", &S::positions),
      MakeField("accepted_histogram", &S::accepted_histogram),
      MakeField("per_sample", &S::per_sample), MakeField("slices", &S::slices, kOmitWhenEmpty),
      MakeField("loop_token_share", &S::loop_token_share),
      MakeField("loop_accept_share", &S::loop_accept_share),
      MakeField("selector_top_k", &S::selector_top_k),
      MakeField("unary_accept_length_pooled", &S::unary_accept_length_pooled),
      MakeField("oracle_accept_length_pooled", &S::oracle_accept_length_pooled),
      MakeField("selector_near_ties", &S::selector_near_ties),
      MakeField("draft_length_curve", &S::draft_length_curve, kOmitWhenEmpty),
      MakeField("sampling", &S::sampling, kOmitWhenEmpty),
      MakeField("setup_seconds", &S::setup_seconds),
      MakeField("compute_seconds", &S::compute_seconds),
      MakeField("tokens_per_second", &S::tokens_per_second), MakeField("device", &S::device),
      MakeField("dtype", &S::dtype), MakeField("drafter_fingerprint", &S::drafter_fingerprint),
      MakeField("dataset_fingerprint", &S::dataset_fingerprint),
      MakeField("target_fingerprint", &S::target_fingerprint), MakeField("warnings", &S::warnings),
      MakeField("positions_to_first_miss", &S::positions_to_first_miss),
      MakeField("context_positions", &S::context_positions),
      MakeField("accept_length_ci", &S::accept_length_ci), MakeField("tau_ci", &S::tau_ci),
      MakeField("shards", &S::shards),
      // A fleet shard job's counts for its parent to merge: never shown.
      MakeField("part_state", &S::part_state, kOmitWhenEmpty | kStoreOnly),
      MakeField("ci_resamples", &S::ci_resamples), MakeField("gate", &S::gate),
      MakeField("suite", &S::suite));
};

}  // namespace dflash::types
