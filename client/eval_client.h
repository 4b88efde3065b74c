// File: eval_client.h
// A thin wrapper over the DrafterEval stub: every call returns absl::StatusOr
// so the CLI (and any C++ caller) handles errors one way. Transport failures
// keep their gRPC code (UNAVAILABLE, DEADLINE_EXCEEDED) and name the address.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/channel.h>

#include "absl/status/statusor.h"
#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::client {

namespace pb = ::dflash::eval::v1;

class EvalClient {
 public:
  // timeout: per call; zero means no deadline.
  EvalClient(std::string address, std::chrono::milliseconds timeout);

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

 private:
  void Prepare(grpc::ClientContext* ctx) const;
  absl::Status Convert(const grpc::Status& status) const;

  std::string address_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::DrafterEval::Stub> stub_;
};

}  // namespace dflash::client
