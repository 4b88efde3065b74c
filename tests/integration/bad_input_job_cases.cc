// The bad-input matrix's cases for the job RPCs (GetEval, ListEvals,
// WatchEval, CancelEval, ResubmitEval, CompareEvals, ExportProfile,
// CalibrateEval); see bad_input_cases.h.
#include <string>
#include <vector>

#include "integration/bad_input_cases.h"
#include "test_util/wire_bytes.h"

namespace dflash::testing::bad_input {

namespace {

std::vector<Case> GetEvalCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  const std::string& long_name = v.long_name;
  const std::string& bad_utf8 = v.bad_utf8;
  return {
      {"GetEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"GetEval", "id: unknown", IdMsg(pb::GetEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"GetEval", "id: 300 bytes", IdMsg(pb::GetEvalRequest(), long_name), Code::INVALID_ARGUMENT,
       "id is 300 bytes long; at most 256 are allowed"},
      {"GetEval", "id: control character", IdMsg(pb::GetEvalRequest(), "ev\r"),
       Code::INVALID_ARGUMENT, "id contains control character 0x0d at byte 2"},
      {"GetEval", "id: wrong wire type (varint)", VarintField(1, 1), Code::INVALID_ARGUMENT,
       Parse("GetEvalRequest",
             "field 'id' (1) has wire type 0 (varint); expected 2 (length-delimited)")},
      {"GetEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       NotUtf8("GetEvalRequest", "id")},
      {"GetEval", "bytes: varint over 10 bytes", std::string(11, '\x80'), Code::INVALID_ARGUMENT,
       Parse("GetEvalRequest", "the tag at byte 0 is longer than 10 bytes")},
      {"GetEval", "id: 10 MiB", IdMsg(pb::GetEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(IdMsg(pb::GetEvalRequest(), huge))},
  };
}

std::vector<Case> ListEvalsCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  const std::string& long_name = v.long_name;
  const std::string& int32_range = v.int32_range;
  using LReq = pb::ListEvalsRequest;
  return {
      {"ListEvals", "state: 99",
       Msg<LReq>([](LReq& r) { r.set_state(static_cast<pb::JobState>(99)); }),
       Code::INVALID_ARGUMENT, "state 99 is not a job state"},
      {"ListEvals", "page_size: -1", Msg<LReq>([](LReq& r) { r.set_page_size(-1); }),
       Code::INVALID_ARGUMENT, "page_size must be >= 0; got -1"},
      {"ListEvals", "page_size: INT32_MAX", Msg<LReq>([&](LReq& r) { r.set_page_size(kInt32Max); }),
       Code::INVALID_ARGUMENT, "page_size must be <= 1000; got 2147483647"},
      {"ListEvals", "page_size: 2^62 (raw)", VarintField(8, k2to62), Code::INVALID_ARGUMENT,
       Parse("ListEvalsRequest", "field 'page_size' (8) holds 4611686018427387904" + int32_range)},
      {"ListEvals", "page_token: not issued here",
       Msg<LReq>([](LReq& r) { r.set_page_token("not-a-token"); }), Code::INVALID_ARGUMENT,
       "page_token 'not-a-token' is not a token this server issued"},
      {"ListEvals", "page_token: 300 bytes",
       Msg<LReq>([&](LReq& r) { r.set_page_token(long_name); }), Code::INVALID_ARGUMENT,
       "page_token is 300 bytes long; at most 256 are allowed"},
      {"ListEvals", "min_step: -1", Msg<LReq>([](LReq& r) { r.set_min_step(-1); }),
       Code::INVALID_ARGUMENT, "min_step must be >= 0; got -1"},
      {"ListEvals", "max_step: INT64_MIN", Msg<LReq>([&](LReq& r) { r.set_max_step(kInt64Min); }),
       Code::INVALID_ARGUMENT, "max_step must be >= 0; got -9223372036854775808"},
      {"ListEvals", "min_step > max_step", Msg<LReq>([](LReq& r) {
         r.set_min_step(10);
         r.set_max_step(5);
       }),
       Code::INVALID_ARGUMENT, "min_step 10 is greater than max_step 5"},
      {"ListEvals", "min_step: INT64_MAX (valid: an empty page)",
       Msg<LReq>([&](LReq& r) { r.set_min_step(kInt64Max); }), Code::OK, ""},
      {"ListEvals", "labels: empty key",
       Msg<LReq>([](LReq& r) { (*r.mutable_labels())[""] = "x"; }), Code::INVALID_ARGUMENT,
       "labels key '' is not 1 to 63 letters, digits, '_', '-', '.', '/'"},
      {"ListEvals", "labels: 100k entries", Msg<LReq>([](LReq& r) {
         for (int i = 0; i < 100'000; ++i) (*r.mutable_labels())[absl::StrCat("k", i)] = "v";
       }),
       Code::INVALID_ARGUMENT, "labels has 100000 entries; at most 64 are allowed"},
      {"ListEvals", "order_by_step: 3", VarintField(10, 3), Code::INVALID_ARGUMENT,
       Parse("ListEvalsRequest", "field 'order_by_step' (10) holds 3; a bool is 0 or 1")},
      {"ListEvals", "page_token: 10 MiB", Msg<LReq>([&](LReq& r) { r.set_page_token(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<LReq>([&](LReq& r) { r.set_page_token(huge); }))},
  };
}

std::vector<Case> WatchEvalCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  const std::string& long_name = v.long_name;
  const std::string& bad_utf8 = v.bad_utf8;
  return {
      {"WatchEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"WatchEval", "id: unknown", IdMsg(pb::WatchEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"WatchEval", "id: 300 bytes", IdMsg(pb::WatchEvalRequest(), long_name),
       Code::INVALID_ARGUMENT, "id is 300 bytes long; at most 256 are allowed"},
      {"WatchEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       NotUtf8("WatchEvalRequest", "id")},
      {"WatchEval", "bytes: field number 0", std::string("\x02\x01x", 3), Code::INVALID_ARGUMENT,
       Parse("WatchEvalRequest",
             "the tag at byte 0 has field number 0; field numbers are 1 to 536870911")},
      {"WatchEval", "id: 10 MiB", IdMsg(pb::WatchEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(IdMsg(pb::WatchEvalRequest(), huge))},
  };
}

std::vector<Case> CancelEvalCases(const MatrixValues& v) {
  const std::string& done_id = v.done_id;
  const std::string& huge = v.huge;
  const std::string& bad_utf8 = v.bad_utf8;
  return {
      {"CancelEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"CancelEval", "id: unknown", IdMsg(pb::CancelEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"CancelEval", "id: a finished job", IdMsg(pb::CancelEvalRequest(), done_id),
       Code::FAILED_PRECONDITION,
       "job " + done_id + " already finished (SUCCEEDED); nothing to cancel"},
      {"CancelEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       NotUtf8("CancelEvalRequest", "id")},
      {"CancelEval", "id: 10 MiB", IdMsg(pb::CancelEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(IdMsg(pb::CancelEvalRequest(), huge))},
  };
}

std::vector<Case> ResubmitEvalCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  return {
      {"ResubmitEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"ResubmitEval", "id: unknown", IdMsg(pb::ResubmitEvalRequest(), "ev-no-such"),
       Code::NOT_FOUND, "no job with id 'ev-no-such'"},
      {"ResubmitEval", "id: wrong wire type (64-bit)", Tag(1, 1) + "12345678",
       Code::INVALID_ARGUMENT,
       Parse("ResubmitEvalRequest",
             "field 'id' (1) has wire type 1 (64-bit); expected 2 (length-delimited)")},
      {"ResubmitEval", "id: 10 MiB", IdMsg(pb::ResubmitEvalRequest(), huge),
       Code::RESOURCE_EXHAUSTED, TooBig(IdMsg(pb::ResubmitEvalRequest(), huge))},
  };
}

std::vector<Case> CompareEvalsCases(const MatrixValues& v) {
  const std::string& done_id = v.done_id;
  const std::string& huge = v.huge;
  const std::string& bad_utf8 = v.bad_utf8;
  const std::vector<std::string>& many_ids = v.many_ids;
  return {
      {"CompareEvals", "ids: missing", "", Code::INVALID_ARGUMENT,
       "compare needs at least two job ids; got 0"},
      {"CompareEvals", "ids: one", Compare({done_id}), Code::INVALID_ARGUMENT,
       "compare needs at least two job ids; got 1"},
      {"CompareEvals", "ids[1]: empty", Compare({done_id, ""}), Code::INVALID_ARGUMENT,
       "ids[1] is empty"},
      {"CompareEvals", "ids: the same job twice", Compare({done_id, done_id}),
       Code::INVALID_ARGUMENT, "ids[1] repeats ids[0] ('" + done_id + "')"},
      {"CompareEvals", "ids[1]: unknown", Compare({done_id, "ev-no-such"}), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"CompareEvals", "ids: 100k", Compare(many_ids), Code::INVALID_ARGUMENT,
       "compare takes at most 100 job ids; got 100000"},
      {"CompareEvals", "ids[0]: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       NotUtf8("CompareEvalsRequest", "ids")},
      {"CompareEvals", "ids: 10 MiB", Compare({huge}), Code::RESOURCE_EXHAUSTED,
       TooBig(Compare({huge}))},
  };
}

std::vector<Case> ExportProfileCases(const MatrixValues& v) {
  const std::string& done_id = v.done_id;
  const std::string& huge = v.huge;
  return {
      {"ExportProfile", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"ExportProfile", "id: unknown", Profile("ev-no-such", "modelopt", 0), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"ExportProfile", "format: unknown", Profile(done_id, "eagle", 0), Code::INVALID_ARGUMENT,
       "unknown profile format 'eagle' (known: modelopt, vllm, sglang)"},
      {"ExportProfile", "format: empty", Profile(done_id, "", 0), Code::INVALID_ARGUMENT,
       "unknown profile format '' (known: modelopt, vllm, sglang)"},
      {"ExportProfile", "setting: -1", Profile(done_id, "vllm", -1), Code::INVALID_ARGUMENT,
       "setting must be >= 0; got -1"},
      {"ExportProfile", "setting: past the job's", Profile(done_id, "vllm", 1),
       Code::INVALID_ARGUMENT, "setting 1: job " + done_id + " has 0 (greedy)"},
      {"ExportProfile", "id: 10 MiB", Profile(huge, "vllm", 0), Code::RESOURCE_EXHAUSTED,
       TooBig(Profile(huge, "vllm", 0))},
  };
}

std::vector<Case> CalibrateEvalCases(const MatrixValues& v) {
  const std::string& done_id = v.done_id;
  const std::string& huge = v.huge;
  return {
      {"CalibrateEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"CalibrateEval", "served: none", Calibrate(done_id, {}), Code::INVALID_ARGUMENT,
       "no served counters: give two vLLM scrapes (before, after), SGLang meta_info JSON lines "
       "or z-lab's benchmark output"},
      {"CalibrateEval", "id: unknown", Calibrate("ev-no-such", {{"a.prom", Scrape(10, 70)}}),
       Code::NOT_FOUND, "no job with id 'ev-no-such'"},
      {"CalibrateEval", "served: not counters", Calibrate(done_id, {{"notes.txt", "hello\nworld"}}),
       Code::INVALID_ARGUMENT,
       "file 'notes.txt' is not a vLLM /metrics scrape, SGLang meta_info JSON lines or z-lab "
       "benchmark output (first line: 'hello')"},
      {"CalibrateEval", "served: swapped scrapes",
       Calibrate(done_id, {{"after.prom", Scrape(10, 70)}, {"before.prom", Scrape(5, 35)}}),
       Code::INVALID_ARGUMENT,
       "after.prom -> before.prom: vllm:spec_decode_num_drafts went from 10 to 5 between the "
       "scrapes: the server restarted, or the files are swapped (give before, then after)"},
      {"CalibrateEval", "served: another draft count",
       Calibrate(done_id, {{"a.prom", Scrape(10, 20)}}), Code::INVALID_ARGUMENT,
       "vllm verified 2 draft tokens per step but job " + done_id +
           " has block size 8 (7 drafts per step): serve with num_speculative_tokens=7 or "
           "evaluate with that block size"},
      {"CalibrateEval", "setting: -1", Calibrate(done_id, {{"a.prom", Scrape(10, 70)}}, -1),
       Code::INVALID_ARGUMENT, "setting must be >= 0; got -1"},
      {"CalibrateEval", "served: 10 MiB", Calibrate(done_id, {{"a.prom", huge}}),
       Code::RESOURCE_EXHAUSTED, TooBig(Calibrate(done_id, {{"a.prom", huge}}))},
  };
}

}  // namespace

std::vector<Case> JobCases(const MatrixValues& v) {
  return Join({GetEvalCases(v), ListEvalsCases(v), WatchEvalCases(v), CancelEvalCases(v),
               ResubmitEvalCases(v), CompareEvalsCases(v), ExportProfileCases(v),
               CalibrateEvalCases(v)});
}

}  // namespace dflash::testing::bad_input
