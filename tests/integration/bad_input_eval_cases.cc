// The bad-input matrix's cases for RunEval and SubmitEval; see
// bad_input_cases.h.
#include <string>
#include <vector>

#include "integration/bad_input_cases.h"
#include "test_util/wire_bytes.h"

namespace dflash::testing::bad_input {

namespace {

// RunEval: a field missing, unknown, negative or out of range.
std::vector<Case> RunEvalFieldCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& long_name = v.long_name;
  using RReq = pb::RunEvalRequest;
  return {
      {"RunEval", "request: missing", "", Code::INVALID_ARGUMENT, "request is required"},
      {"RunEval", "drafter and checkpoint_path: both empty",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.clear_drafter(); }), Code::INVALID_ARGUMENT,
       "give a resident drafter name or a checkpoint path"},
      {"RunEval", "drafter and checkpoint_path: both given",
       EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_checkpoint_path(data + "/drafter"); }),
       Code::INVALID_ARGUMENT, "give a resident drafter name or a checkpoint path, not both"},
      {"RunEval", "dataset: empty", EvalMsg<RReq>([](pb::EvalRequest& r) { r.clear_dataset(); }),
       Code::INVALID_ARGUMENT, "dataset is required"},
      {"RunEval", "drafter: unknown",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_drafter("no-such"); }), Code::NOT_FOUND,
       "no resident drafter named 'no-such' (resident: m)"},
      {"RunEval", "dataset: unknown",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_dataset("no-such"); }), Code::NOT_FOUND,
       "no resident dataset named 'no-such' (resident: d)"},
      {"RunEval", "target: unknown",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_target("no-such"); }), Code::NOT_FOUND,
       "no resident target named 'no-such' (resident: t)"},
      {"RunEval", "drafter: 300 bytes",
       EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_drafter(long_name); }), Code::INVALID_ARGUMENT,
       "drafter is 300 bytes long; at most 256 are allowed"},
      {"RunEval", "mode: 99",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_mode(static_cast<pb::EvalMode>(99)); }),
       Code::INVALID_ARGUMENT, "mode 99 is not anchor or replay"},
      {"RunEval", "anchors: -5", EvalMsg<RReq>([](pb::EvalRequest& r) {
         r.set_anchors(static_cast<pb::AnchorStrategy>(-5));
       }),
       Code::INVALID_ARGUMENT, "anchors -5 is not even, random or all"},
      {"RunEval", "max_samples: -1",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_max_samples(-1); }), Code::INVALID_ARGUMENT,
       "max_samples must be >= 0; got -1"},
      {"RunEval", "max_blocks: INT32_MIN",
       EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_max_blocks(kInt32Min); }),
       Code::INVALID_ARGUMENT, "max_blocks must be >= 0; got -2147483648"},
      {"RunEval", "block_size: -1", EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_block_size(-1); }),
       Code::INVALID_ARGUMENT, "block_size must be >= 0; got -1"},
      {"RunEval", "max_new_tokens: -1",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_max_new_tokens(-1); }), Code::INVALID_ARGUMENT,
       "max_new_tokens must be >= 0; got -1"},
      {"RunEval", "block_size: 1", EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_block_size(1); }),
       Code::INVALID_ARGUMENT, "block_size 1 must be in [2, 8] (the drafter's block size)"},
      {"RunEval", "block_size: INT32_MAX",
       EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_block_size(kInt32Max); }),
       Code::INVALID_ARGUMENT,
       "block_size 2147483647 must be in [2, 8] (the drafter's block size)"},
  };
}

// RunEval: checkpoint paths, bytes that do not parse, a request over the limit.
std::vector<Case> RunEvalPathAndBytesCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& D = v.data_canon;
  const std::string& huge = v.huge;
  const std::string& bad_utf8 = v.bad_utf8;
  const std::string& int32_range = v.int32_range;
  using RReq = pb::RunEvalRequest;
  return {
      {"RunEval", "checkpoint_path: outside the roots", EvalMsg<RReq>([](pb::EvalRequest& r) {
         r.clear_drafter();
         r.set_checkpoint_path("/etc");
       }),
       Code::PERMISSION_DENIED, "checkpoint_path '/etc' is outside the server's data roots"},
      {"RunEval", "checkpoint_path: absent", EvalMsg<RReq>([&](pb::EvalRequest& r) {
         r.clear_drafter();
         r.set_checkpoint_path(data + "/no-such-drafter");
       }),
       Code::NOT_FOUND, "checkpoint '" + D + "/no-such-drafter' does not exist"},
      {"RunEval", "request.max_blocks: 2^62 (raw)", LenField(1, VarintField(7, k2to62)),
       Code::INVALID_ARGUMENT,
       Parse("RunEvalRequest",
             "field 'request.max_blocks' (7) holds 4611686018427387904" + int32_range)},
      {"RunEval", "request.mode: wrong wire type", LenField(1, LenField(5, "x")),
       Code::INVALID_ARGUMENT,
       Parse("RunEvalRequest",
             "field 'request.mode' (5) has wire type 2 (length-delimited); expected 0 (varint)")},
      {"RunEval", "request.dataset: invalid UTF-8", LenField(1, LenField(3, bad_utf8)),
       Code::INVALID_ARGUMENT,
       Parse("RunEvalRequest",
             "field 'request.dataset' (3) is not valid UTF-8 (byte 0xff at offset 3 of the "
             "value)")},
      {"RunEval", "request: truncated inside", Tag(1, 2) + Varint(10) + LenField(1, "m"),
       Code::INVALID_ARGUMENT,
       Parse("RunEvalRequest",
             "field 'request' (1) at byte 0 declares 10 bytes but only 3 remain")},
      {"RunEval", "checkpoint_path: 10 MiB",
       EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_checkpoint_path(huge); }),
       Code::RESOURCE_EXHAUSTED,
       TooBig(EvalMsg<RReq>([&](pb::EvalRequest& r) { r.set_checkpoint_path(huge); }))},
  };
}

// RunEval: the request's rules (core/request_check.h); SubmitEval answers
// each mistake with the same code and words.
std::vector<Case> RunEvalRuleCases(const MatrixValues& /*v*/) {
  using RReq = pb::RunEvalRequest;
  return {
      {"RunEval", "sampling: mode replay", EvalMsg<RReq>([](pb::EvalRequest& r) {
         r.set_mode(pb::EVAL_MODE_REPLAY);
         r.add_sampling()->set_temperature(0.7);
       }),
       Code::INVALID_ARGUMENT,
       "sampling settings need mode anchor (sampled acceptance is teacher-forced)"},
      {"RunEval", "max_new_tokens: mode anchor",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.set_max_new_tokens(64); }), Code::INVALID_ARGUMENT,
       "max_new_tokens (64) needs mode replay (it cuts replay's walk; anchor mode scores fixed "
       "blocks)"},
      {"RunEval", "sampling: temperature -1",
       EvalMsg<RReq>([](pb::EvalRequest& r) { r.add_sampling()->set_temperature(-1); }),
       Code::INVALID_ARGUMENT, "sampling 't=-1': temperature must be >= 0 (0 = greedy)"},
  };
}

// SubmitEval: a field missing, unknown or out of range; labels; raw bytes.
std::vector<Case> SubmitEvalFieldCases(const MatrixValues& v) {
  const std::string& long_name = v.long_name;
  const std::string& bad_utf8 = v.bad_utf8;
  using QReq = pb::SubmitEvalRequest;
  return {
      {"SubmitEval", "request: missing", "", Code::INVALID_ARGUMENT, "request is required"},
      {"SubmitEval", "drafter and checkpoint_path: both empty",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.clear_drafter(); }), Code::INVALID_ARGUMENT,
       "give a resident drafter name or a checkpoint path"},
      {"SubmitEval", "target: unknown",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_target("no-such"); }), Code::NOT_FOUND,
       "no resident target named 'no-such' (resident: t)"},
      {"SubmitEval", "dataset: empty", EvalMsg<QReq>([](pb::EvalRequest& r) { r.clear_dataset(); }),
       Code::INVALID_ARGUMENT, "dataset is required"},
      {"SubmitEval", "drafter: unknown",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_drafter("no-such"); }), Code::NOT_FOUND,
       "no resident drafter named 'no-such' (resident: m)"},
      {"SubmitEval", "mode: 99",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_mode(static_cast<pb::EvalMode>(99)); }),
       Code::INVALID_ARGUMENT, "mode 99 is not anchor or replay"},
      {"SubmitEval", "max_samples: -1",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_max_samples(-1); }), Code::INVALID_ARGUMENT,
       "max_samples must be >= 0; got -1"},
      {"SubmitEval", "step: -1", EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_step(-1); }),
       Code::INVALID_ARGUMENT, "step must be >= 0; got -1"},
      {"SubmitEval", "step: INT64_MIN",
       EvalMsg<QReq>([&](pb::EvalRequest& r) { r.set_step(kInt64Min); }), Code::INVALID_ARGUMENT,
       "step must be >= 0; got -9223372036854775808"},
      {"SubmitEval", "run: 300 bytes",
       EvalMsg<QReq>([&](pb::EvalRequest& r) { r.set_run(long_name); }), Code::INVALID_ARGUMENT,
       "run is 300 bytes long; at most 256 are allowed"},
      {"SubmitEval", "labels: empty key",
       EvalMsg<QReq>([](pb::EvalRequest& r) { (*r.mutable_labels())[""] = "v"; }),
       Code::INVALID_ARGUMENT, "labels key '' is not 1 to 63 letters, digits, '_', '-', '.', '/'"},
      {"SubmitEval", "labels: key with a space",
       EvalMsg<QReq>([](pb::EvalRequest& r) { (*r.mutable_labels())["a b"] = "v"; }),
       Code::INVALID_ARGUMENT,
       "labels key 'a b' is not 1 to 63 letters, digits, '_', '-', '.', '/'"},
      {"SubmitEval", "labels: value with a newline",
       EvalMsg<QReq>([](pb::EvalRequest& r) { (*r.mutable_labels())["lr"] = "3e-4\nx"; }),
       Code::INVALID_ARGUMENT, "labels['lr'] contains control character 0x0a at byte 4"},
      {"SubmitEval", "labels: 100k entries", EvalMsg<QReq>([](pb::EvalRequest& r) {
         for (int i = 0; i < 100'000; ++i) (*r.mutable_labels())[absl::StrCat("k", i)] = "v";
       }),
       Code::INVALID_ARGUMENT, "labels has 100000 entries; at most 64 are allowed"},
      {"SubmitEval", "labels value: invalid UTF-8 (raw)",
       LenField(1, LenField(14, LenField(1, "k") + LenField(2, bad_utf8))), Code::INVALID_ARGUMENT,
       Parse("SubmitEvalRequest",
             "field 'request.labels.value' (2) is not valid UTF-8 (byte 0xff at offset 3 of the "
             "value)")},
      {"SubmitEval", "step: wrong wire type (32-bit)", LenField(1, Tag(13, 5) + "abcd"),
       Code::INVALID_ARGUMENT,
       Parse("SubmitEvalRequest",
             "field 'request.step' (13) has wire type 5 (32-bit); expected 0 (varint)")},
  };
}

// SubmitEval: sampling policies and engines.
std::vector<Case> SubmitEvalPolicyCases(const MatrixValues& /*v*/) {
  using QReq = pb::SubmitEvalRequest;
  return {
      {"SubmitEval", "policies: unknown", EvalMsg<QReq>([](pb::EvalRequest& r) {
         r.add_sampling()->set_temperature(0.7);
         r.add_policies("beam");
       }),
       Code::INVALID_ARGUMENT,
       "unknown policy 'beam' (known: sample, argmax, selector (DFlash 2), match)"},
      {"SubmitEval", "policies: selector on DFlash 1", EvalMsg<QReq>([](pb::EvalRequest& r) {
         r.add_sampling()->set_temperature(0.7);
         r.add_policies("selector");
       }),
       Code::INVALID_ARGUMENT,
       "policy selector needs a DFlash 2 drafter (its candidate selector proposes); this drafter "
       "is DFlash 1: use sample, argmax or match"},
      {"SubmitEval", "engine: unknown", EvalMsg<QReq>([](pb::EvalRequest& r) {
         r.add_sampling()->set_temperature(0.7);
         r.set_engine("tgi");
       }),
       Code::INVALID_ARGUMENT, "unknown engine 'tgi' (known: vllm, sglang, zlab)"},
      {"SubmitEval", "engine: without sampling",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_engine("vllm"); }), Code::INVALID_ARGUMENT,
       "a policy or engine applies to sampled acceptance: add a sampling setting (e.g. "
       "--sampling t=0.7)"},
  };
}

// SubmitEval: the request's rules (core/request_check.h), as RunEval's.
std::vector<Case> SubmitEvalRuleCases(const MatrixValues& /*v*/) {
  using QReq = pb::SubmitEvalRequest;
  return {
      {"SubmitEval", "sampling: mode replay", EvalMsg<QReq>([](pb::EvalRequest& r) {
         r.set_mode(pb::EVAL_MODE_REPLAY);
         r.add_sampling()->set_temperature(0.7);
       }),
       Code::INVALID_ARGUMENT,
       "sampling settings need mode anchor (sampled acceptance is teacher-forced)"},
      {"SubmitEval", "max_new_tokens: mode anchor",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_max_new_tokens(64); }), Code::INVALID_ARGUMENT,
       "max_new_tokens (64) needs mode replay (it cuts replay's walk; anchor mode scores fixed "
       "blocks)"},
      {"SubmitEval", "sampling: temperature -1",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.add_sampling()->set_temperature(-1); }),
       Code::INVALID_ARGUMENT, "sampling 't=-1': temperature must be >= 0 (0 = greedy)"},
  };
}

// SubmitEval: drafter and path both given, gates, a request over the limit.
std::vector<Case> SubmitEvalGateCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& huge = v.huge;
  using QReq = pb::SubmitEvalRequest;
  return {
      {"SubmitEval", "drafter and checkpoint_path: both given",
       EvalMsg<QReq>([&](pb::EvalRequest& r) { r.set_checkpoint_path(data + "/drafter"); }),
       Code::INVALID_ARGUMENT, "give a resident drafter name or a checkpoint path, not both"},
      {"SubmitEval", "gate best: no run",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_gate("best"); }), Code::INVALID_ARGUMENT,
       "gate 'best' looks for the reference among the run's jobs; give run"},
      {"SubmitEval", "gate_min_delta: without gate",
       EvalMsg<QReq>([](pb::EvalRequest& r) { r.set_gate_min_delta(0.5); }), Code::INVALID_ARGUMENT,
       "gate_metric, gate_min_delta, gate_allow_recipe_mismatch and gate_floor need gate"},
      {"SubmitEval", "run: 10 MiB", EvalMsg<QReq>([&](pb::EvalRequest& r) { r.set_run(huge); }),
       Code::RESOURCE_EXHAUSTED,
       TooBig(EvalMsg<QReq>([&](pb::EvalRequest& r) { r.set_run(huge); }))},
  };
}

}  // namespace

std::vector<Case> EvalCases(const MatrixValues& v) {
  return Join({RunEvalFieldCases(v), RunEvalPathAndBytesCases(v), RunEvalRuleCases(v),
               SubmitEvalFieldCases(v), SubmitEvalPolicyCases(v), SubmitEvalRuleCases(v),
               SubmitEvalGateCases(v)});
}

}  // namespace dflash::testing::bad_input
