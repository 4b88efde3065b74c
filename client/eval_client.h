// File: eval_client.h
// A thin wrapper over the DrafterEval stub: every call returns absl::StatusOr
// so the CLI (and any C++ caller) handles errors one way. Transport failures
// keep their gRPC code (UNAVAILABLE, DEADLINE_EXCEEDED) and name the address.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/channel.h>

#include "absl/status/statusor.h"
#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

// SUCCEEDED, FAILED, CANCELLED, INTERRUPTED: the job will not change again.
bool IsFinalState(pb::JobState state);

// How to reach a server that asks for them: a bearer token sent on every
// call, and TLS (PEM text, not paths). Empty tls_ca: plain text.
struct ConnectOptions {
  std::string token;
  std::string tls_ca;             // root certificates to trust
  std::string tls_cert, tls_key;  // client certificate (mutual TLS)
};

// Reads --token-file (first non-blank line, trimmed) or else the
// DFLASH_EVAL_TOKEN environment variable, and the TLS files, into options.
// The file wins over the variable. NotFound when a file cannot be read.
absl::StatusOr<ConnectOptions> LoadConnectOptions(const std::string& token_file,
                                                  const std::string& tls_ca,
                                                  const std::string& tls_cert,
                                                  const std::string& tls_key);

class EvalClient {
 public:
  // timeout: per call; zero means no deadline.
  EvalClient(std::string address, std::chrono::milliseconds timeout,
             const ConnectOptions& connect = {});

  const std::string& address() const { return address_; }

  // SERVING -> Ok; NOT_SERVING -> Unavailable.
  absl::Status Health();
  absl::StatusOr<pb::ServerInfo> GetServerInfo();
  absl::StatusOr<pb::ValidateCheckpointResponse> ValidateCheckpoint(
      const pb::ValidateCheckpointRequest& req);
  absl::StatusOr<pb::LoadResponse> LoadDrafter(const pb::LoadDrafterRequest& req);
  absl::StatusOr<pb::LoadResponse> LoadTarget(const pb::LoadTargetRequest& req);
  absl::StatusOr<pb::LoadResponse> LoadDataset(const pb::LoadDatasetRequest& req);
  absl::StatusOr<pb::UnloadResponse> Unload(pb::ResourceKind kind, const std::string& name);
  absl::StatusOr<pb::ListResourcesResponse> ListResources(const pb::ListResourcesRequest& req);
  absl::StatusOr<pb::EvalResult> RunEval(const pb::RunEvalRequest& req);

  // The job service. SubmitEval returns at once with the job (QUEUED or later).
  absl::StatusOr<pb::EvalJob> SubmitEval(const pb::SubmitEvalRequest& req);
  absl::StatusOr<pb::EvalJob> GetEval(const std::string& id);
  absl::StatusOr<pb::ListEvalsResponse> ListEvals(const pb::ListEvalsRequest& req);
  absl::StatusOr<pb::EvalJob> CancelEval(const std::string& id);
  absl::StatusOr<pb::EvalJob> ResubmitEval(const std::string& id);
  absl::StatusOr<pb::CompareEvalsResponse> CompareEvals(const std::vector<std::string>& ids);
  absl::StatusOr<pb::CompareEvalsResponse> CompareEvals(const pb::CompareEvalsRequest& req);
  absl::StatusOr<pb::ExportProfileResponse> ExportProfile(const pb::ExportProfileRequest& req);
  absl::StatusOr<pb::CalibrateEvalResponse> CalibrateEval(const pb::CalibrateEvalRequest& req);

  // Follows a job until it ends: `on_update` sees every EvalJob the server
  // streams; returns the last one (a final state). No deadline: evaluations
  // may run for hours; a dropped connection ends the call with UNAVAILABLE.
  // A server without WatchEval (UNIMPLEMENTED) is polled with GetEval instead.
  using JobCallback = std::function<void(const pb::EvalJob&)>;
  absl::StatusOr<pb::EvalJob> WatchEval(const std::string& id, const JobCallback& on_update);

 private:
  void Prepare(grpc::ClientContext* ctx) const;
  absl::Status Convert(const grpc::Status& status) const;
  absl::StatusOr<pb::EvalJob> PollEval(const std::string& id, const JobCallback& on_update);

  std::string address_;
  std::chrono::milliseconds timeout_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::DrafterEval::Stub> stub_;
};

}  // namespace dflash::client
