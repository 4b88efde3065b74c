// Bad input against the real dflash-evald, over every DrafterEval RPC: each
// request field that matters missing, empty, negative, huge and wrong-typed
// (raw bytes through grpc::GenericStub: wrong wire type, truncated bytes, an
// enum out of range, invalid UTF-8), each with its exact status code and
// full message. The case table is one value-parameterised test: each case
// reports on its own, against one server started for the suite. After the
// suite the server still answers and a job stored before is unchanged, in
// the server and in its SQLite file. Then the WatchEval stream limit
// (--max-concurrent-streams 2, a server of its own): the third stream is
// refused, a new one is accepted once one closes.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <limits>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "dflash/eval/v1/service.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"
#include "test_util/wire_bytes.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
namespace pb = ::dflash::eval::v1;
using ::dflash::testing::BinaryFromEnv;
using ::dflash::testing::CommandResult;
using ::dflash::testing::LenField;
using ::dflash::testing::RunCommand;
using ::dflash::testing::Tag;
using ::dflash::testing::Varint;
using ::dflash::testing::VarintField;
using Code = grpc::StatusCode;
using namespace std::chrono_literals;

constexpr int kMaxRequestBytes = 8 << 20;  // --max-request-bytes here (default 4 MiB)
constexpr int kMaxStreams = 2;             // --max-concurrent-streams here
constexpr char kTooManyStreams[] =
    "too many WatchEval streams open (2); the server allows 2 (--max-concurrent-streams); poll "
    "with GetEval instead";

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

std::string Parse(const std::string& type, const std::string& what) {
  return absl::StrCat("request is not a valid dflash.eval.v1.", type, ": ", what);
}
std::string TooBig(const std::string& request) {
  return absl::StrCat("Received message larger than max (", request.size(), " vs. ",
                      kMaxRequestBytes, ")");
}

// A status message over 4096 bytes as the server cuts it.
std::string Cut(const std::string& message) {
  if (message.size() <= 4096) return message;
  return absl::StrCat(message.substr(0, 4096), "... (", message.size() - 4096, " more bytes)");
}

struct Reply {
  grpc::Status status;
  std::vector<std::string> messages;  // the response(s), serialized
};

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

// The matrix: every case of every RPC, in order.
std::vector<Case> MatrixCases(const MatrixContext& ctx) {
  const std::string& data = ctx.data;
  const std::string& D = ctx.data_canon;
  const std::string& done_id = ctx.done_id;
  const std::string huge(10 << 20, 'x');  // 10 MiB: over --max-request-bytes (8 MiB)
  const std::string long_name(300, 'n');  // over the 256-byte limit on names and ids
  const std::string long_path = D + "/" + std::string(5000, 'p');
  std::string deep_path;  // 3999 bytes in folders of 99 (a name is at most 255)
  while (deep_path.size() < 3999) deep_path += std::string(99, 'q') + "/";
  deep_path.resize(3999);
  std::string nul_path = data + "/drafter";
  nul_path += std::string("\0/../../x", 9);
  constexpr int32_t kInt32Max = std::numeric_limits<int32_t>::max();
  constexpr int32_t kInt32Min = std::numeric_limits<int32_t>::min();
  constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
  constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();
  const uint64_t k2to62 = uint64_t{1} << 62;
  std::vector<std::string> many_ids;  // 100k distinct, well-formed, unknown ids
  for (int i = 0; i < 100'000; ++i) many_ids.push_back(absl::StrCat("ev-20000101-000000-", i));
  const std::string bad_utf8 = "ev-\xFF\xFE";
  const std::string kDTypes = " is not a DType: 0 (the default), 1 (fp32), 2 (fp16) or 3 (bf16)";
  // A string field holding bad_utf8.
  auto not_utf8 = [](const std::string& type, const std::string& field) {
    return Parse(type, "field '" + field +
                           "' (1) is not valid UTF-8 (byte 0xff at offset 3 of "
                           "the value)");
  };
  const std::string int32_range = ", which does not fit in an int32 (-2147483648 to 2147483647)";
  const std::string enum_range = ", which does not fit in an enum (-2147483648 to 2147483647)";

  using VReq = pb::ValidateCheckpointRequest;
  using DReq = pb::LoadDrafterRequest;
  using TReq = pb::LoadTargetRequest;
  using SReq = pb::LoadDatasetRequest;
  using UReq = pb::UnloadRequest;
  using LReq = pb::ListEvalsRequest;
  using RReq = pb::RunEvalRequest;
  using QReq = pb::SubmitEvalRequest;
  auto id_msg = [](auto proto, const std::string& id) {
    proto.set_id(id);
    return proto.SerializeAsString();
  };
  auto profile = [](const std::string& id, const std::string& format, int setting) {
    pb::ExportProfileRequest r;
    r.set_id(id);
    r.set_format(format);
    r.set_setting(setting);
    return r.SerializeAsString();
  };
  // vLLM counters: `drafts` verify steps of `draft_tokens` tokens in all.
  auto scrape = [](int drafts, int draft_tokens) {
    return absl::StrCat("vllm:spec_decode_num_drafts_total ", drafts,
                        "\nvllm:spec_decode_num_draft_tokens_total ", draft_tokens,
                        "\nvllm:spec_decode_num_accepted_tokens_total ", drafts, "\n");
  };
  auto calibrate = [](const std::string& id,
                      const std::vector<std::pair<std::string, std::string>>& files,
                      int setting = 0) {
    pb::CalibrateEvalRequest r;
    r.set_id(id);
    r.set_setting(setting);
    for (const auto& [path, contents] : files) {
      pb::ServedFile* f = r.add_served();
      f->set_path(path);
      f->set_contents(contents);
    }
    return r.SerializeAsString();
  };
  auto compare = [](const std::vector<std::string>& ids) {
    pb::CompareEvalsRequest r;
    for (const std::string& id : ids) r.add_ids(id);
    return r.SerializeAsString();
  };

  std::vector<Case> cases = {
      // --- GetServerInfo: no fields; only the bytes can be wrong.
      {"GetServerInfo", "bytes: a lone 0xff", "\xFF", Code::INVALID_ARGUMENT,
       Parse("GetServerInfoRequest", "the tag at byte 0 is truncated")},
      {"GetServerInfo", "field 7 (unknown, a newer client): skipped", VarintField(7, 1), Code::OK,
       ""},
      {"GetServerInfo", "field 7: 10 MiB", LenField(7, huge), Code::RESOURCE_EXHAUSTED,
       TooBig(LenField(7, huge))},

      // --- ValidateCheckpoint
      {"ValidateCheckpoint", "path: missing", "", Code::INVALID_ARGUMENT, "path is empty"},
      {"ValidateCheckpoint", "path: absent file",
       Msg<VReq>([&](VReq& r) { r.set_path(data + "/no-such-drafter"); }), Code::NOT_FOUND,
       "checkpoint '" + D + "/no-such-drafter' does not exist"},
      {"ValidateCheckpoint", "path: outside the roots",
       Msg<VReq>([](VReq& r) { r.set_path("/etc"); }), Code::PERMISSION_DENIED,
       "path '/etc' is outside the server's data roots"},
      {"ValidateCheckpoint", "path: NUL byte", Msg<VReq>([&](VReq& r) { r.set_path(nul_path); }),
       Code::INVALID_ARGUMENT, "path contains a NUL byte"},
      {"ValidateCheckpoint", "path: longer than PATH_MAX",
       Msg<VReq>([&](VReq& r) { r.set_path(long_path); }), Code::INVALID_ARGUMENT,
       absl::StrCat("path is ", long_path.size(), " bytes long; at most 4096 are allowed")},
      {"ValidateCheckpoint", "path: 10 MiB", Msg<VReq>([&](VReq& r) { r.set_path(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<VReq>([&](VReq& r) { r.set_path(huge); }))},
      {"ValidateCheckpoint", "config_path: outside the roots", Msg<VReq>([&](VReq& r) {
         r.set_path(data + "/drafter");
         r.set_config_path("/etc/hostname");
       }),
       Code::PERMISSION_DENIED, "config_path '/etc/hostname' is outside the server's data roots"},
      {"ValidateCheckpoint", "config_path: absent file", Msg<VReq>([&](VReq& r) {
         r.set_path(data + "/drafter");
         r.set_config_path(data + "/no-config.json");
       }),
       Code::NOT_FOUND,
       "config '" + D + "/no-config.json' (given for checkpoint '" + D +
           "/drafter') does not exist"},
      {"ValidateCheckpoint", "config_path: 4000 bytes, absent (the message is cut)",
       Msg<VReq>([&](VReq& r) {
         r.set_path(data + "/drafter");
         r.set_config_path(data + "/" + deep_path);
       }),
       Code::NOT_FOUND,
       Cut("config '" + D + "/" + deep_path + "' (given for checkpoint '" + D +
           "/drafter') does not exist")},
      {"ValidateCheckpoint", "path: wrong wire type (varint)", VarintField(1, 5),
       Code::INVALID_ARGUMENT,
       Parse("ValidateCheckpointRequest",
             "field 'path' (1) has wire type 0 (varint); expected 2 (length-delimited)")},
      {"ValidateCheckpoint", "path: invalid UTF-8", LenField(1, data + "/\xC3\x28"),
       Code::INVALID_ARGUMENT,
       Parse("ValidateCheckpointRequest",
             absl::StrCat("field 'path' (1) is not valid UTF-8 (byte 0x28 at offset ",
                          data.size() + 2, " of the value)"))},
      {"ValidateCheckpoint", "allow_unexpected: 2", VarintField(3, 2), Code::INVALID_ARGUMENT,
       Parse("ValidateCheckpointRequest",
             "field 'allow_unexpected' (3) holds 2; a bool is 0 or 1")},
      {"ValidateCheckpoint", "bytes: truncated", Tag(1, 2) + Varint(100) + "abc",
       Code::INVALID_ARGUMENT,
       Parse("ValidateCheckpointRequest",
             "field 'path' (1) at byte 0 declares 100 bytes but only 3 remain")},

      // --- LoadDrafter
      {"LoadDrafter", "path: missing", "", Code::INVALID_ARGUMENT, "path is empty"},
      {"LoadDrafter", "path: absent file",
       Msg<DReq>([&](DReq& r) { r.set_path(data + "/no-such-drafter"); }), Code::NOT_FOUND,
       "checkpoint '" + D + "/no-such-drafter' does not exist"},
      {"LoadDrafter", "name: taken by another drafter", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/no-such-drafter");
         r.set_name("m");
       }),
       Code::ALREADY_EXISTS,
       "a different drafter is already resident as 'm' (from " + D +
           "/drafter); unload it or choose another name (--name)"},
      {"LoadDrafter", "name: control character", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_name("m\nforged log line");
       }),
       Code::INVALID_ARGUMENT, "name contains control character 0x0a at byte 1"},
      {"LoadDrafter", "name: 300 bytes", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_name(long_name);
       }),
       Code::INVALID_ARGUMENT, "name is 300 bytes long; at most 256 are allowed"},
      {"LoadDrafter", "dtype: 99 (out of range)", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_dtype(static_cast<pb::DType>(99));
       }),
       Code::INVALID_ARGUMENT, "dtype 99" + kDTypes},
      {"LoadDrafter", "dtype: -1", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_dtype(static_cast<pb::DType>(-1));
       }),
       Code::INVALID_ARGUMENT, "dtype -1" + kDTypes},
      {"LoadDrafter", "device: unknown", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_device("tpu");
       }),
       Code::INVALID_ARGUMENT, "device 'tpu' is not one of cpu, cuda, cuda:N"},
      {"LoadDrafter", "device: negative index", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_device("cuda:-1");
       }),
       Code::INVALID_ARGUMENT, "device 'cuda:-1' is not one of cpu, cuda, cuda:N"},
      {"LoadDrafter", "device: auto (a server flag only)", Msg<DReq>([&](DReq& r) {
         r.set_path(data + "/drafter");
         r.set_device("auto");
       }),
       Code::INVALID_ARGUMENT, "device 'auto' is for the server flag; give cpu or cuda:N"},
      {"LoadDrafter", "dtype: wrong wire type", LenField(4, "x"), Code::INVALID_ARGUMENT,
       Parse("LoadDrafterRequest",
             "field 'dtype' (4) has wire type 2 (length-delimited); expected 0 (varint)")},
      {"LoadDrafter", "dtype: 2^40", LenField(2, data + "/drafter") + VarintField(4, 1ull << 40),
       Code::INVALID_ARGUMENT,
       Parse("LoadDrafterRequest", "field 'dtype' (4) holds 1099511627776" + enum_range)},
      {"LoadDrafter", "path: 10 MiB", Msg<DReq>([&](DReq& r) { r.set_path(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<DReq>([&](DReq& r) { r.set_path(huge); }))},

      // --- LoadTarget
      {"LoadTarget", "path: missing", "", Code::INVALID_ARGUMENT, "path is empty"},
      {"LoadTarget", "path: outside the roots", Msg<TReq>([](TReq& r) { r.set_path("/"); }),
       Code::PERMISSION_DENIED, "path '/' is outside the server's data roots"},
      {"LoadTarget", "path: absent",
       Msg<TReq>([&](TReq& r) { r.set_path(data + "/no-such-target"); }), Code::NOT_FOUND,
       "target '" + D + "/no-such-target': no config.json at '" + D +
           "/no-such-target/config.json'"},
      {"LoadTarget", "dtype: 42", Msg<TReq>([&](TReq& r) {
         r.set_path(data + "/target");
         r.set_dtype(static_cast<pb::DType>(42));
       }),
       Code::INVALID_ARGUMENT, "dtype 42" + kDTypes},
      {"LoadTarget", "device: unknown", Msg<TReq>([&](TReq& r) {
         r.set_path(data + "/target");
         r.set_device("gpu0");
       }),
       Code::INVALID_ARGUMENT, "device 'gpu0' is not one of cpu, cuda, cuda:N"},
      {"LoadTarget", "name: DEL character", Msg<TReq>([&](TReq& r) {
         r.set_path(data + "/target");
         r.set_name("t\x7F");
       }),
       Code::INVALID_ARGUMENT, "name contains control character 0x7f at byte 1"},
      {"LoadTarget", "load_final_norm: 7", VarintField(5, 7), Code::INVALID_ARGUMENT,
       Parse("LoadTargetRequest", "field 'load_final_norm' (5) holds 7; a bool is 0 or 1")},
      {"LoadTarget", "name: invalid UTF-8", LenField(1, "t\x80"), Code::INVALID_ARGUMENT,
       Parse("LoadTargetRequest",
             "field 'name' (1) is not valid UTF-8 (byte 0x80 at offset 1 of the value)")},
      {"LoadTarget", "path: 10 MiB", Msg<TReq>([&](TReq& r) { r.set_path(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<TReq>([&](TReq& r) { r.set_path(huge); }))},

      // --- LoadDataset (name "d2": "d" with the same path would be reused as is)
      {"LoadDataset", "path: missing", "", Code::INVALID_ARGUMENT, "path is empty"},
      {"LoadDataset", "path: absent",
       Msg<SReq>([&](SReq& r) { r.set_path(data + "/no-such-dataset"); }), Code::NOT_FOUND,
       "dataset path '" + D + "/no-such-dataset' is not an existing directory"},
      {"LoadDataset", "max_samples: -1", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_max_samples(-1);
       }),
       Code::INVALID_ARGUMENT, "max_samples must be >= 0; got -1"},
      {"LoadDataset", "max_samples: INT32_MIN", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_max_samples(kInt32Min);
       }),
       Code::INVALID_ARGUMENT, "max_samples must be >= 0; got -2147483648"},
      {"LoadDataset", "max_samples: 2^62 (raw)", VarintField(5, k2to62), Code::INVALID_ARGUMENT,
       Parse("LoadDatasetRequest",
             "field 'max_samples' (5) holds 4611686018427387904" + int32_range)},
      {"LoadDataset", "dtype: 7", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_dtype(static_cast<pb::DType>(7));
       }),
       Code::INVALID_ARGUMENT, "dtype 7" + kDTypes},
      {"LoadDataset", "layer_ids: empty list", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_name("d2");
         (*r.mutable_layer_ids())["hidden_states"];
       }),
       Code::INVALID_ARGUMENT, "request layer_ids: feature 'hidden_states' lists no layers"},
      {"LoadDataset", "layer_ids: empty key", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_name("d2");
         (*r.mutable_layer_ids())[""].add_ids(1);
       }),
       Code::INVALID_ARGUMENT, "request layer_ids: '' cannot be a feature key"},
      {"LoadDataset", "layer_ids: negative id", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_name("d2");
         (*r.mutable_layer_ids())["hidden_states"].add_ids(-1);
       }),
       Code::INVALID_ARGUMENT,
       "request layer_ids: feature 'hidden_states' lists layer -1; layer ids must be >= 0"},
      {"LoadDataset", "layer_ids: 100k ids", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_name("d2");
         auto& ids = (*r.mutable_layer_ids())["hidden_states"];
         for (int i = 0; i < 100'000; ++i) ids.add_ids(i);
       }),
       Code::INVALID_ARGUMENT, "layer_ids lists 100000 layers; at most 1024 are allowed"},
      {"LoadDataset", "layer_ids: 17 feature keys", Msg<SReq>([&](SReq& r) {
         r.set_path(data + "/dataset");
         r.set_name("d2");
         for (int i = 0; i < 17; ++i) (*r.mutable_layer_ids())[absl::StrCat("f", i)].add_ids(i);
       }),
       Code::INVALID_ARGUMENT, "layer_ids has 17 feature keys; at most 16 are allowed"},
      {"LoadDataset", "layer_ids: truncated packed ids",
       LenField(2, data + "/dataset") +
           LenField(3, LenField(1, "hidden_states") + LenField(2, LenField(1, "\x01\x80"))),
       Code::INVALID_ARGUMENT,
       Parse("LoadDatasetRequest", absl::StrCat("field 'layer_ids.value.ids' (1) at byte ",
                                                LenField(2, data + "/dataset").size() + 2 +
                                                    LenField(1, "hidden_states").size() + 2,
                                                " packs a varint that is truncated"))},
      {"LoadDataset", "skip_bad_samples: wrong wire type", LenField(6, "1"), Code::INVALID_ARGUMENT,
       Parse("LoadDatasetRequest",
             "field 'skip_bad_samples' (6) has wire type 2 (length-delimited); expected 0 "
             "(varint)")},

      // --- Unload*
      {"UnloadDrafter", "name: missing", "", Code::INVALID_ARGUMENT, "name is empty"},
      {"UnloadTarget", "name: missing", "", Code::INVALID_ARGUMENT, "name is empty"},
      {"UnloadDataset", "name: missing", "", Code::INVALID_ARGUMENT, "name is empty"},
      {"UnloadDrafter", "name: unknown", Msg<UReq>([](UReq& r) { r.set_name("no-such"); }),
       Code::NOT_FOUND, "no resident drafter named 'no-such' (resident: m)"},
      {"UnloadTarget", "name: unknown", Msg<UReq>([](UReq& r) { r.set_name("no-such"); }),
       Code::NOT_FOUND, "no resident target named 'no-such' (resident: t)"},
      {"UnloadDataset", "name: unknown", Msg<UReq>([](UReq& r) { r.set_name("no-such"); }),
       Code::NOT_FOUND, "no resident dataset named 'no-such' (resident: d)"},
      {"UnloadDrafter", "name: control character", Msg<UReq>([](UReq& r) { r.set_name("\t"); }),
       Code::INVALID_ARGUMENT, "name contains control character 0x09 at byte 0"},
      {"UnloadTarget", "name: 300 bytes", Msg<UReq>([&](UReq& r) { r.set_name(long_name); }),
       Code::INVALID_ARGUMENT, "name is 300 bytes long; at most 256 are allowed"},
      {"UnloadDataset", "name: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       not_utf8("UnloadRequest", "name")},
      {"UnloadDrafter", "name: 10 MiB", Msg<UReq>([&](UReq& r) { r.set_name(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<UReq>([&](UReq& r) { r.set_name(huge); }))},

      // --- ListResources
      {"ListResources", "kind: 99", Msg<pb::ListResourcesRequest>([](auto& r) {
         r.set_kind(static_cast<pb::ResourceKind>(99));
       }),
       Code::INVALID_ARGUMENT, "resource kind 99 is not one of target, drafter, dataset"},
      {"ListResources", "kind: -1", Msg<pb::ListResourcesRequest>([](auto& r) {
         r.set_kind(static_cast<pb::ResourceKind>(-1));
       }),
       Code::INVALID_ARGUMENT, "resource kind -1 is not one of target, drafter, dataset"},
      {"ListResources", "kind: 2^62 (raw)", VarintField(1, k2to62), Code::INVALID_ARGUMENT,
       Parse("ListResourcesRequest", "field 'kind' (1) holds 4611686018427387904" + enum_range)},
      {"ListResources", "kind: wrong wire type", Tag(1, 1) + std::string(8, '\0'),
       Code::INVALID_ARGUMENT,
       Parse("ListResourcesRequest",
             "field 'kind' (1) has wire type 1 (64-bit); expected 0 (varint)")},

      // --- RunEval
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

      // The request's rules (core/request_check.h): RunEval and SubmitEval
      // answer each mistake with the same code and words.
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

      // --- SubmitEval
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
      // The request's rules (core/request_check.h): RunEval and SubmitEval
      // answer each mistake with the same code and words.
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

      // --- GetEval
      {"GetEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"GetEval", "id: unknown", id_msg(pb::GetEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"GetEval", "id: 300 bytes", id_msg(pb::GetEvalRequest(), long_name), Code::INVALID_ARGUMENT,
       "id is 300 bytes long; at most 256 are allowed"},
      {"GetEval", "id: control character", id_msg(pb::GetEvalRequest(), "ev\r"),
       Code::INVALID_ARGUMENT, "id contains control character 0x0d at byte 2"},
      {"GetEval", "id: wrong wire type (varint)", VarintField(1, 1), Code::INVALID_ARGUMENT,
       Parse("GetEvalRequest",
             "field 'id' (1) has wire type 0 (varint); expected 2 (length-delimited)")},
      {"GetEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       not_utf8("GetEvalRequest", "id")},
      {"GetEval", "bytes: varint over 10 bytes", std::string(11, '\x80'), Code::INVALID_ARGUMENT,
       Parse("GetEvalRequest", "the tag at byte 0 is longer than 10 bytes")},
      {"GetEval", "id: 10 MiB", id_msg(pb::GetEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(id_msg(pb::GetEvalRequest(), huge))},

      // --- ListEvals
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

      // --- WatchEval
      {"WatchEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"WatchEval", "id: unknown", id_msg(pb::WatchEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"WatchEval", "id: 300 bytes", id_msg(pb::WatchEvalRequest(), long_name),
       Code::INVALID_ARGUMENT, "id is 300 bytes long; at most 256 are allowed"},
      {"WatchEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       not_utf8("WatchEvalRequest", "id")},
      {"WatchEval", "bytes: field number 0", std::string("\x02\x01x", 3), Code::INVALID_ARGUMENT,
       Parse("WatchEvalRequest",
             "the tag at byte 0 has field number 0; field numbers are 1 to 536870911")},
      {"WatchEval", "id: 10 MiB", id_msg(pb::WatchEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(id_msg(pb::WatchEvalRequest(), huge))},

      // --- CancelEval
      {"CancelEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"CancelEval", "id: unknown", id_msg(pb::CancelEvalRequest(), "ev-no-such"), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"CancelEval", "id: a finished job", id_msg(pb::CancelEvalRequest(), done_id),
       Code::FAILED_PRECONDITION,
       "job " + done_id + " already finished (SUCCEEDED); nothing to cancel"},
      {"CancelEval", "id: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       not_utf8("CancelEvalRequest", "id")},
      {"CancelEval", "id: 10 MiB", id_msg(pb::CancelEvalRequest(), huge), Code::RESOURCE_EXHAUSTED,
       TooBig(id_msg(pb::CancelEvalRequest(), huge))},

      // --- ResubmitEval
      {"ResubmitEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"ResubmitEval", "id: unknown", id_msg(pb::ResubmitEvalRequest(), "ev-no-such"),
       Code::NOT_FOUND, "no job with id 'ev-no-such'"},
      {"ResubmitEval", "id: wrong wire type (64-bit)", Tag(1, 1) + "12345678",
       Code::INVALID_ARGUMENT,
       Parse("ResubmitEvalRequest",
             "field 'id' (1) has wire type 1 (64-bit); expected 2 (length-delimited)")},
      {"ResubmitEval", "id: 10 MiB", id_msg(pb::ResubmitEvalRequest(), huge),
       Code::RESOURCE_EXHAUSTED, TooBig(id_msg(pb::ResubmitEvalRequest(), huge))},

      // --- CompareEvals
      {"CompareEvals", "ids: missing", "", Code::INVALID_ARGUMENT,
       "compare needs at least two job ids; got 0"},
      {"CompareEvals", "ids: one", compare({done_id}), Code::INVALID_ARGUMENT,
       "compare needs at least two job ids; got 1"},
      {"CompareEvals", "ids[1]: empty", compare({done_id, ""}), Code::INVALID_ARGUMENT,
       "ids[1] is empty"},
      {"CompareEvals", "ids: the same job twice", compare({done_id, done_id}),
       Code::INVALID_ARGUMENT, "ids[1] repeats ids[0] ('" + done_id + "')"},
      {"CompareEvals", "ids[1]: unknown", compare({done_id, "ev-no-such"}), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"CompareEvals", "ids: 100k", compare(many_ids), Code::INVALID_ARGUMENT,
       "compare takes at most 100 job ids; got 100000"},
      {"CompareEvals", "ids[0]: invalid UTF-8", LenField(1, bad_utf8), Code::INVALID_ARGUMENT,
       not_utf8("CompareEvalsRequest", "ids")},
      {"CompareEvals", "ids: 10 MiB", compare({huge}), Code::RESOURCE_EXHAUSTED,
       TooBig(compare({huge}))},

      // --- ExportProfile
      {"ExportProfile", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"ExportProfile", "id: unknown", profile("ev-no-such", "modelopt", 0), Code::NOT_FOUND,
       "no job with id 'ev-no-such'"},
      {"ExportProfile", "format: unknown", profile(done_id, "eagle", 0), Code::INVALID_ARGUMENT,
       "unknown profile format 'eagle' (known: modelopt, vllm, sglang)"},
      {"ExportProfile", "format: empty", profile(done_id, "", 0), Code::INVALID_ARGUMENT,
       "unknown profile format '' (known: modelopt, vllm, sglang)"},
      {"ExportProfile", "setting: -1", profile(done_id, "vllm", -1), Code::INVALID_ARGUMENT,
       "setting must be >= 0; got -1"},
      {"ExportProfile", "setting: past the job's", profile(done_id, "vllm", 1),
       Code::INVALID_ARGUMENT, "setting 1: job " + done_id + " has 0 (greedy)"},
      {"ExportProfile", "id: 10 MiB", profile(huge, "vllm", 0), Code::RESOURCE_EXHAUSTED,
       TooBig(profile(huge, "vllm", 0))},

      // --- CalibrateEval
      {"CalibrateEval", "id: missing", "", Code::INVALID_ARGUMENT, "id is empty"},
      {"CalibrateEval", "served: none", calibrate(done_id, {}), Code::INVALID_ARGUMENT,
       "no served counters: give two vLLM scrapes (before, after), SGLang meta_info JSON lines "
       "or z-lab's benchmark output"},
      {"CalibrateEval", "id: unknown", calibrate("ev-no-such", {{"a.prom", scrape(10, 70)}}),
       Code::NOT_FOUND, "no job with id 'ev-no-such'"},
      {"CalibrateEval", "served: not counters", calibrate(done_id, {{"notes.txt", "hello\nworld"}}),
       Code::INVALID_ARGUMENT,
       "file 'notes.txt' is not a vLLM /metrics scrape, SGLang meta_info JSON lines or z-lab "
       "benchmark output (first line: 'hello')"},
      {"CalibrateEval", "served: swapped scrapes",
       calibrate(done_id, {{"after.prom", scrape(10, 70)}, {"before.prom", scrape(5, 35)}}),
       Code::INVALID_ARGUMENT,
       "after.prom -> before.prom: vllm:spec_decode_num_drafts went from 10 to 5 between the "
       "scrapes: the server restarted, or the files are swapped (give before, then after)"},
      {"CalibrateEval", "served: another draft count",
       calibrate(done_id, {{"a.prom", scrape(10, 20)}}), Code::INVALID_ARGUMENT,
       "vllm verified 2 draft tokens per step but job " + done_id +
           " has block size 8 (7 drafts per step): serve with num_speculative_tokens=7 or "
           "evaluate with that block size"},
      {"CalibrateEval", "setting: -1", calibrate(done_id, {{"a.prom", scrape(10, 70)}}, -1),
       Code::INVALID_ARGUMENT, "setting must be >= 0; got -1"},
      {"CalibrateEval", "served: 10 MiB", calibrate(done_id, {{"a.prom", huge}}),
       Code::RESOURCE_EXHAUSTED, TooBig(calibrate(done_id, {{"a.prom", huge}}))},
  };
  return cases;
}

// A case as the test runner names it: its place in the table and its RPC
// and defect (the request bytes and expected message need the live server).
struct CaseName {
  size_t index = 0;
  std::string rpc, what;
};
void PrintTo(const CaseName& c, std::ostream* os) {
  *os << c.rpc << " " << c.what;
}

// The table's names, built once from a placeholder context.
const std::vector<CaseName>& CaseNames() {
  static const std::vector<CaseName>* names = [] {
    auto* out = new std::vector<CaseName>();
    const std::vector<Case> cases = MatrixCases({"/placeholder", "/placeholder", "ev-placeholder"});
    for (size_t i = 0; i < cases.size(); ++i) out->push_back({i, cases[i].rpc, cases[i].what});
    return out;
  }();
  return *names;
}

// "ValidateCheckpoint" + "path: absent file" -> "ValidateCheckpoint_path_absent_file";
// "block_size: -1" -> "..._block_size_minus_1".
std::string TestName(const CaseName& c) {
  std::string name = c.rpc + "_";
  for (size_t i = 0; i < c.what.size(); ++i) {
    const unsigned char ch = c.what[i];
    if (std::isalnum(ch)) {
      name += static_cast<char>(ch);
    } else if (ch == '-' && name.back() == '_' && i + 1 < c.what.size() &&
               std::isdigit(static_cast<unsigned char>(c.what[i + 1]))) {
      name += "minus_";  // a negative number, not a hyphen as in "UTF-8"
    } else if (name.back() != '_') {
      name += '_';
    }
  }
  while (name.back() == '_') name.pop_back();
  return name;
}

// One dflash-evald over the tiny fixture (with the stream and request size
// limits above) for a suite, and the raw calls the tests make to it.
class MatrixServerTest : public testing::TinyServerTest {
 protected:
  static void SetUpMatrixServer() {
    SetUpTinyServer({"--max-concurrent-streams", absl::StrCat(kMaxStreams), "--max-request-bytes",
                     absl::StrCat(kMaxRequestBytes)});
    if (server_ == nullptr || ::testing::Test::HasFatalFailure()) return;
    channel_ = new std::shared_ptr<grpc::Channel>(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
    generic_ = new grpc::GenericStub(*channel_);
    stub_ = pb::DrafterEval::NewStub(*channel_).release();
  }
  static void TearDownMatrixServer() {
    delete stub_;
    stub_ = nullptr;
    delete generic_;
    generic_ = nullptr;
    delete channel_;
    channel_ = nullptr;
    TinyServerTest::TearDownTestSuite();
  }

  void SetUp() override {
    ASSERT_NE(stub_, nullptr) << "the suite's server did not start; see the failure above";
  }

  static std::string DataCanon() { return fs::canonical(data_).string(); }

  // Sends `request` as the bytes of /dflash.eval.v1.DrafterEval/<rpc> (unary
  // or server-streaming alike: one message out, every reply read).
  static Reply Call(const std::string& rpc, const std::string& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    grpc::CompletionQueue cq;
    auto wait = [&cq] {
      void* tag = nullptr;
      bool ok = false;
      EXPECT_TRUE(cq.Next(&tag, &ok));
      return ok;
    };
    auto call = generic_->PrepareCall(&ctx, "/dflash.eval.v1.DrafterEval/" + rpc, &cq);
    call->StartCall(nullptr);
    Reply reply;
    if (wait()) {
      grpc::Slice slice(request);
      call->Write(grpc::ByteBuffer(&slice, 1), nullptr);
      if (wait()) {
        call->WritesDone(nullptr);
        wait();
      }
      for (;;) {
        grpc::ByteBuffer in;
        call->Read(&in, nullptr);
        if (!wait()) break;
        std::vector<grpc::Slice> slices;
        EXPECT_TRUE(in.Dump(&slices).ok());
        std::string bytes;
        for (const grpc::Slice& s : slices) {
          bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
        }
        reply.messages.push_back(std::move(bytes));
      }
    }
    call->Finish(&reply.status, nullptr);
    wait();
    return reply;
  }

  // Runs one case. A WatchEval refused for the stream limit is retried: the
  // server counts a stream until its last callback, just after the client
  // has seen it end.
  static void Run(const Case& c) {
    SCOPED_TRACE(c.rpc + " " + c.what);
    Reply r = Call(c.rpc, c.request);
    for (auto deadline = std::chrono::steady_clock::now() + 10s;
         c.rpc == "WatchEval" && r.status.error_message() == kTooManyStreams &&
         std::chrono::steady_clock::now() < deadline;) {
      std::this_thread::sleep_for(5ms);
      r = Call(c.rpc, c.request);
    }
    EXPECT_EQ(r.status.error_code(), c.code) << r.status.error_message();
    EXPECT_EQ(r.status.error_message(), c.message);
  }

  static pb::EvalJob GetEval(const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    pb::GetEvalRequest req;
    req.set_id(id);
    pb::EvalJob job;
    grpc::Status s = stub_->GetEval(&ctx, req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  static pb::EvalJob Submit(const pb::EvalRequest& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    pb::SubmitEvalRequest req;
    *req.mutable_request() = request;
    pb::EvalJob job;
    grpc::Status s = stub_->SubmitEval(&ctx, req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  // Polls GetEval until `done(job)` or 120 s.
  static pb::EvalJob WaitFor(const std::string& id,
                             const std::function<bool(const pb::EvalJob&)>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    pb::EvalJob job = GetEval(id);
    while (!done(job) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(10ms);
      job = GetEval(id);
    }
    EXPECT_TRUE(done(job)) << job.DebugString();
    return job;
  }

  static pb::ListEvalsResponse ListRun(const std::string& run) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    pb::ListEvalsRequest req;
    req.set_run(run);
    pb::ListEvalsResponse resp;
    grpc::Status s = stub_->ListEvals(&ctx, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  static std::shared_ptr<grpc::Channel>* channel_;
  static grpc::GenericStub* generic_;
  static pb::DrafterEval::Stub* stub_;
};

std::shared_ptr<grpc::Channel>* MatrixServerTest::channel_ = nullptr;
grpc::GenericStub* MatrixServerTest::generic_ = nullptr;
pb::DrafterEval::Stub* MatrixServerTest::stub_ = nullptr;

// The matrix: one test per case, on one server. The suite first stores a
// finished job (the cases about a finished job name it); afterwards
// (TearDownTestSuite) that job is unchanged and still the only one.
class BadInputMatrixTest : public MatrixServerTest, public ::testing::WithParamInterface<CaseName> {
 protected:
  static void SetUpTestSuite() {
    SetUpMatrixServer();
    if (stub_ == nullptr) return;
    pb::EvalRequest small;
    small.set_drafter("m");
    small.set_dataset("d");
    small.set_max_samples(1);
    small.set_max_blocks(2);
    small.set_run("before-matrix");
    small.set_step(7);
    (*small.mutable_labels())["phase"] = "before";
    const std::string done_id = Submit(small).id();
    ASSERT_FALSE(done_id.empty());
    before_ = new pb::EvalJob(WaitFor(done_id, [](const pb::EvalJob& j) {
      return j.state() == pb::JOB_STATE_SUCCEEDED || j.state() == pb::JOB_STATE_FAILED;
    }));
    ASSERT_EQ(before_->state(), pb::JOB_STATE_SUCCEEDED) << before_->DebugString();
    listed_before_ = new pb::ListEvalsResponse(ListRun("before-matrix"));
    ASSERT_EQ(listed_before_->jobs_size(), 1);
    cases_ = new std::vector<Case>(MatrixCases({data_, DataCanon(), done_id}));
  }

  static void TearDownTestSuite() {
    if (cases_ != nullptr) ExpectNothingCorrupted(before_->id());
    delete cases_;
    cases_ = nullptr;
    delete listed_before_;
    listed_before_ = nullptr;
    delete before_;
    before_ = nullptr;
    TearDownMatrixServer();
  }

  void SetUp() override {
    MatrixServerTest::SetUp();
    ASSERT_NE(cases_, nullptr) << "the job stored before the matrix did not succeed";
  }

  // The server still answers; the job stored before is unchanged and is the
  // only job (no bad request queued one); the store checks clean.
  static void ExpectNothingCorrupted(const std::string& done_id) {
    Reply info = Call("GetServerInfo", "");
    EXPECT_TRUE(info.status.ok()) << info.status.error_message();
    google::protobuf::util::MessageDifferencer diff;
    std::string differences;
    diff.ReportDifferencesToString(&differences);
    EXPECT_TRUE(diff.Compare(*before_, GetEval(done_id))) << differences;
    EXPECT_TRUE(diff.Compare(*listed_before_, ListRun("before-matrix"))) << differences;
    Reply all = Call("ListEvals", "");
    ASSERT_TRUE(all.status.ok()) << all.status.error_message();
    ASSERT_EQ(all.messages.size(), 1u);
    pb::ListEvalsResponse listed_all;
    ASSERT_TRUE(listed_all.ParseFromString(all.messages[0]));
    ASSERT_EQ(listed_all.jobs_size(), 1);
    EXPECT_EQ(listed_all.jobs(0).id(), done_id);

    // The results store opens from outside the server and checks clean.
    const std::string db = dir_->Join("state") + "/results.sqlite3";
    CommandResult check =
        RunCommand({BinaryFromEnv("DFLASH_FIXTURE_PY"), "-c",
                    "import sqlite3, sys\n"
                    "db = sqlite3.connect(sys.argv[1])\n"
                    "print(db.execute('PRAGMA integrity_check').fetchone()[0])\n"
                    "print(db.execute('SELECT id, state, step FROM jobs').fetchall())\n",
                    db},
                   {}, 60);
    EXPECT_EQ(check.exit_code, 0) << check.err;
    EXPECT_EQ(check.out, "ok\n[('" + done_id + "', 'SUCCEEDED', 7)]\n") << check.err;
  }

  static pb::EvalJob* before_;
  static pb::ListEvalsResponse* listed_before_;
  static std::vector<Case>* cases_;
};

pb::EvalJob* BadInputMatrixTest::before_ = nullptr;
pb::ListEvalsResponse* BadInputMatrixTest::listed_before_ = nullptr;
std::vector<Case>* BadInputMatrixTest::cases_ = nullptr;

TEST_P(BadInputMatrixTest, ExactStatusAndMessage) {
  const CaseName& name = GetParam();
  ASSERT_LT(name.index, cases_->size());
  const Case& c = (*cases_)[name.index];
  ASSERT_EQ(c.rpc, name.rpc);
  ASSERT_EQ(c.what, name.what);
  Run(c);
}

INSTANTIATE_TEST_SUITE_P(Every, BadInputMatrixTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<CaseName>& info) {
                           return TestName(info.param);
                         });

// Every RPC of the service has cases, and the test names are distinct.
TEST(BadInputMatrixTableTest, EveryRpcHasCasesWithDistinctNames) {
  std::set<std::string> rpcs, names;
  for (const CaseName& c : CaseNames()) {
    rpcs.insert(c.rpc);
    EXPECT_TRUE(names.insert(TestName(c)).second) << "two cases are named " << TestName(c);
  }
  const google::protobuf::ServiceDescriptor* service =
      pb::GetEvalRequest::descriptor()->file()->FindServiceByName("DrafterEval");
  ASSERT_NE(service, nullptr);
  for (int i = 0; i < service->method_count(); ++i) {
    EXPECT_EQ(rpcs.count(service->method(i)->name()), 1u)
        << service->method(i)->name() << " has no bad-input cases";
  }
}

// The WatchEval stream limit, on a server of its own. A long job holds the
// single runner and the watched job waits behind it, so its streams stay
// open until it is cancelled. Polling (with deadlines) covers the moment
// between a client seeing a stream end and the server counting it closed.
class StreamLimitTest : public MatrixServerTest {
 protected:
  static void SetUpTestSuite() { SetUpMatrixServer(); }
  static void TearDownTestSuite() { TearDownMatrixServer(); }
};

TEST_F(StreamLimitTest, WatchEvalPastTheStreamLimitIsRefusedUntilOneCloses) {
  // A dataset of the tiny one's samples many times over: about 10 s of work
  // on 2 cores (it is cancelled long before; the streams need milliseconds).
  fs::create_directories(data_ + "/big/rows");
  fs::copy_file(data_ + "/dataset/dataset.json", data_ + "/big/dataset.json");
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(data_ + "/dataset")) {
    if (e.path().extension() == ".ckpt") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (int k = 0; k < 3000; ++k) {
    fs::create_hard_link(files[k % files.size()],
                         absl::StrCat(data_, "/big/rows/data_", k, ".ckpt"));
  }
  {
    grpc::ClientContext ctx;
    pb::LoadDatasetRequest req;
    req.set_name("big");
    req.set_path(data_ + "/big");
    pb::LoadResponse resp;
    grpc::Status s = stub_->LoadDataset(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  pb::EvalRequest long_request;
  long_request.set_drafter("m");
  long_request.set_dataset("big");
  long_request.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  const std::string long_id = Submit(long_request).id();
  pb::EvalRequest queued_request;
  queued_request.set_drafter("m");
  queued_request.set_dataset("d");
  const std::string queued_id = Submit(queued_request).id();
  ASSERT_FALSE(long_id.empty() || queued_id.empty());

  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<pb::EvalJob>> reader;
    pb::EvalJob first;
    bool open = false;
  };
  // Opens a stream on the queued job: open with its first message, or
  // ended with the status the server gave.
  auto open = [&](Stream& s) -> grpc::Status {
    s.ctx.set_deadline(std::chrono::system_clock::now() + 120s);
    pb::WatchEvalRequest req;
    req.set_id(queued_id);
    s.reader = stub_->WatchEval(&s.ctx, req);
    s.open = s.reader->Read(&s.first);
    return s.open ? grpc::Status::OK : s.reader->Finish();
  };
  // Opens streams until one is accepted (a closed stream may still count).
  auto open_accepted = [&](std::unique_ptr<Stream>& s) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      s = std::make_unique<Stream>();
      grpc::Status st = open(*s);
      if (s->open) break;
      ASSERT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << st.error_message();
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << st.error_message();
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(s->first.id(), queued_id);
    EXPECT_EQ(s->first.state(), pb::JOB_STATE_QUEUED) << s->first.DebugString();
  };

  std::unique_ptr<Stream> first, second;
  open_accepted(first);
  open_accepted(second);
  ASSERT_TRUE(first->open && second->open);
  // Two open: a third is refused, exactly (a refused attempt may itself
  // still count for a moment, so the count in the message can run over).
  grpc::Status third;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;;) {
    Stream s;
    third = open(s);
    ASSERT_FALSE(s.open) << "a third stream was accepted: " << s.first.DebugString();
    if (third.error_message() == kTooManyStreams || std::chrono::steady_clock::now() > deadline) {
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(third.error_code(), Code::RESOURCE_EXHAUSTED);
  EXPECT_EQ(third.error_message(), kTooManyStreams);

  // State problems while the jobs wait and run.
  Run({"ResubmitEval", "id: a queued job", LenField(1, queued_id), Code::FAILED_PRECONDITION,
       "job " + queued_id + " is QUEUED; only finished jobs can be resubmitted (cancel it first)"});
  Run({"UnloadDataset", "name: used by a running job", LenField(1, "big"),
       Code::FAILED_PRECONDITION,
       "dataset 'big' is used by queued or running jobs " + long_id +
           "; cancel them or wait for them to finish"});

  // One closes; then a new one is accepted.
  first->ctx.TryCancel();
  EXPECT_EQ(first->reader->Finish().error_code(), Code::CANCELLED);
  std::unique_ptr<Stream> fourth;
  open_accepted(fourth);
  ASSERT_TRUE(fourth->open);

  // Cancelling the queued job ends both open streams with its final state.
  {
    grpc::ClientContext ctx;
    pb::CancelEvalRequest req;
    req.set_id(queued_id);
    pb::EvalJob cancelled;
    ASSERT_TRUE(stub_->CancelEval(&ctx, req, &cancelled).ok());
    EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED);
  }
  for (Stream* s : {second.get(), fourth.get()}) {
    pb::EvalJob job, last;
    while (s->reader->Read(&job)) last = job;
    EXPECT_EQ(last.state(), pb::JOB_STATE_CANCELLED) << last.DebugString();
    grpc::Status end = s->reader->Finish();
    EXPECT_TRUE(end.ok()) << end.error_message();
  }
  Run({"CompareEvals", "ids[0]: a running job",
       [&] {
         pb::CompareEvalsRequest r;
         r.add_ids(long_id);
         r.add_ids(queued_id);
         return r.SerializeAsString();
       }(),
       Code::FAILED_PRECONDITION,
       "job " + long_id + " is RUNNING; only SUCCEEDED jobs can be compared"});

  // Leave the server idle: the long job cancelled, "big" unloaded.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    pb::CancelEvalRequest req;
    req.set_id(long_id);
    pb::EvalJob cancelled;
    ASSERT_TRUE(stub_->CancelEval(&ctx, req, &cancelled).ok());
  }
  EXPECT_EQ(WaitFor(long_id,
                    [](const pb::EvalJob& j) {
                      return j.state() != pb::JOB_STATE_QUEUED &&
                             j.state() != pb::JOB_STATE_RUNNING;
                    })
                .state(),
            pb::JOB_STATE_CANCELLED);
  Reply unloaded = Call("UnloadDataset", LenField(1, "big"));
  EXPECT_TRUE(unloaded.status.ok()) << unloaded.status.error_message();
}

}  // namespace
}  // namespace dflash
