// File: bad_input_cases.h
// The bad-input matrix's case table (bad_input_matrix_test.cc): for every
// DrafterEval RPC, requests with a field missing, empty, negative, huge or
// wrong-typed (raw bytes: wrong wire type, truncated, an enum out of range,
// invalid UTF-8) and the exact status each must get. The table is split by
// RPC group (bad_input_*_cases.cc); MatrixCases joins the groups in order.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::testing::bad_input {

namespace pb = ::dflash::eval::v1;
using Code = grpc::StatusCode;

constexpr int kMaxRequestBytes = 8 << 20;  // --max-request-bytes here (default 4 MiB)
constexpr int kMaxStreams = 2;             // --max-concurrent-streams here
constexpr char kTooManyStreams[] =
    "too many WatchEval streams open (2); the server allows 2 (--max-concurrent-streams); poll "
    "with GetEval instead";

// One case of the matrix: an RPC, the defect, the request's bytes, the answer.
struct Case {
  std::string rpc;
  std::string what;
  std::string request;
  Code code;
  std::string message;
};

// What a case needs from the running server.
struct MatrixContext {
  std::string data;        // the data root as given to the server
  std::string data_canon;  // the same with symbolic links resolved, as messages show it
  std::string done_id;     // a SUCCEEDED job stored before any bad input
};

// The values the cases are made of, built once per table.
struct MatrixValues {
  explicit MatrixValues(const MatrixContext& ctx);

  std::string data, data_canon, done_id;  // as in MatrixContext
  std::string huge;                       // 10 MiB: over --max-request-bytes (8 MiB)
  std::string long_name;                  // over the 256-byte limit on names and ids
  std::string long_path;                  // 5000 bytes under the data root
  std::string deep_path;                  // 3999 bytes in folders of 99 (a name is at most 255)
  std::string nul_path;                   // a NUL byte, then "/../../x"
  std::string bad_utf8;                   // "ev-" and two bytes that are not UTF-8
  std::vector<std::string> many_ids;      // 100k distinct, well-formed, unknown ids
  // Message tails: a DType out of range, a varint too large for its field.
  std::string dtypes, int32_range, enum_range;
};

constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
constexpr uint64_t k2to62 = uint64_t{1} << 62;

// A request message built by `fill`, serialized.
template <typename M>
std::string Msg(const std::function<void(M&)>& fill) {
  M m;
  fill(m);
  return m.SerializeAsString();
}
// An EvalRequest for m on d, changed by `fill`, inside a Run/SubmitEvalRequest.
template <typename M>
std::string EvalMsg(const std::function<void(pb::EvalRequest&)>& fill) {
  M m;
  m.mutable_request()->set_drafter("m");
  m.mutable_request()->set_dataset("d");
  fill(*m.mutable_request());
  return m.SerializeAsString();
}
// `proto` (a request with an id field) with `id`, serialized.
template <typename P>
std::string IdMsg(P proto, const std::string& id) {
  proto.set_id(id);
  return proto.SerializeAsString();
}

// The message of a request that does not parse as `type`.
std::string Parse(const std::string& type, const std::string& what);
// The message of a request over --max-request-bytes.
std::string TooBig(const std::string& request);
// A status message over 4096 bytes as the server cuts it.
std::string Cut(const std::string& message);
// The parse message of string field `field` (number 1) holding bad_utf8.
std::string NotUtf8(const std::string& type, const std::string& field);

std::string Profile(const std::string& id, const std::string& format, int setting);
// vLLM counters: `drafts` verify steps of `draft_tokens` tokens in all.
std::string Scrape(int drafts, int draft_tokens);
std::string Calibrate(const std::string& id,
                      const std::vector<std::pair<std::string, std::string>>& files,
                      int setting = 0);
std::string Compare(const std::vector<std::string>& ids);

// The table by RPC group, each in the order the table lists it.
// GetServerInfo, ValidateCheckpoint, Load*, Unload*, ListResources:
std::vector<Case> ResourceCases(const MatrixValues& v);
// RunEval, SubmitEval:
std::vector<Case> EvalCases(const MatrixValues& v);
// GetEval, ListEvals, WatchEval, CancelEval, ResubmitEval, CompareEvals,
// ExportProfile, CalibrateEval:
std::vector<Case> JobCases(const MatrixValues& v);

// The groups' cases, one after another (each group is one RPC, or a part).
std::vector<Case> Join(std::vector<std::vector<Case>> groups);

// The matrix: every case of every RPC, in order.
std::vector<Case> MatrixCases(const MatrixContext& ctx);

}  // namespace dflash::testing::bad_input
