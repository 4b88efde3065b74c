// The bad-input matrix's cases for the resource RPCs (GetServerInfo,
// ValidateCheckpoint, Load*, Unload*, ListResources); see
// bad_input_cases.h.
#include <string>
#include <vector>

#include "integration/bad_input_cases.h"
#include "test_util/wire_bytes.h"

namespace dflash::testing::bad_input {

namespace {

// GetServerInfo: no fields; only the bytes can be wrong.
std::vector<Case> GetServerInfoCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  return {
      {"GetServerInfo", "bytes: a lone 0xff", "\xFF", Code::INVALID_ARGUMENT,
       Parse("GetServerInfoRequest", "the tag at byte 0 is truncated")},
      {"GetServerInfo", "field 7 (unknown, a newer client): skipped", VarintField(7, 1), Code::OK,
       ""},
      {"GetServerInfo", "field 7: 10 MiB", LenField(7, huge), Code::RESOURCE_EXHAUSTED,
       TooBig(LenField(7, huge))},
  };
}

std::vector<Case> ValidateCheckpointCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& D = v.data_canon;
  const std::string& huge = v.huge;
  const std::string& long_path = v.long_path;
  const std::string& deep_path = v.deep_path;
  const std::string& nul_path = v.nul_path;
  using VReq = pb::ValidateCheckpointRequest;
  return {
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
  };
}

std::vector<Case> LoadDrafterCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& D = v.data_canon;
  const std::string& huge = v.huge;
  const std::string& long_name = v.long_name;
  const std::string& kDTypes = v.dtypes;
  const std::string& enum_range = v.enum_range;
  using DReq = pb::LoadDrafterRequest;
  return {
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
  };
}

std::vector<Case> LoadTargetCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& D = v.data_canon;
  const std::string& huge = v.huge;
  const std::string& kDTypes = v.dtypes;
  using TReq = pb::LoadTargetRequest;
  return {
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
  };
}

// LoadDataset (name "d2": "d" with the same path would be reused as is).
std::vector<Case> LoadDatasetCases(const MatrixValues& v) {
  const std::string& data = v.data;
  const std::string& D = v.data_canon;
  const std::string& kDTypes = v.dtypes;
  const std::string& int32_range = v.int32_range;
  using SReq = pb::LoadDatasetRequest;
  return {
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
  };
}

// UnloadDrafter, UnloadTarget, UnloadDataset.
std::vector<Case> UnloadCases(const MatrixValues& v) {
  const std::string& huge = v.huge;
  const std::string& long_name = v.long_name;
  const std::string& bad_utf8 = v.bad_utf8;
  using UReq = pb::UnloadRequest;
  return {
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
       NotUtf8("UnloadRequest", "name")},
      {"UnloadDrafter", "name: 10 MiB", Msg<UReq>([&](UReq& r) { r.set_name(huge); }),
       Code::RESOURCE_EXHAUSTED, TooBig(Msg<UReq>([&](UReq& r) { r.set_name(huge); }))},
  };
}

std::vector<Case> ListResourcesCases(const MatrixValues& v) {
  const std::string& enum_range = v.enum_range;
  return {
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
  };
}

}  // namespace

std::vector<Case> ResourceCases(const MatrixValues& v) {
  return Join({GetServerInfoCases(v), ValidateCheckpointCases(v), LoadDrafterCases(v),
               LoadTargetCases(v), LoadDatasetCases(v), UnloadCases(v), ListResourcesCases(v)});
}

}  // namespace dflash::testing::bad_input
