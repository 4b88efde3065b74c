// File: loopback_server.h
// A gRPC service on a real server on a free loopback port, with a channel
// and a DrafterEval stub to it: service tests call the service as a client
// would. Header-only: dflash_test_util does not link gRPC; the tests that
// include this link it through the service library.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::testing {

class LoopbackServer {
 public:
  // Starts `service` (which must outlive this) on 127.0.0.1:0; ok() says
  // whether it listens.
  explicit LoopbackServer(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) return;
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = ::dflash::eval::v1::DrafterEval::NewStub(channel_);
  }
  // Calls still open a second after shutdown starts are cancelled, so a
  // failed test that left a stream open does not hang.
  ~LoopbackServer() {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  bool ok() const { return stub_ != nullptr; }
  int port() const { return port_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  ::dflash::eval::v1::DrafterEval::Stub& stub() const { return *stub_; }

  // A unary call of `method` (e.g. "/dflash.eval.v1.DrafterEval/GetEval")
  // with `request` as its bytes, for requests the typed stub cannot send
  // (wrong wire types, invalid UTF-8); the status it ended with.
  grpc::Status CallRaw(const std::string& method, const std::string& request) const {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext ctx;
    grpc::CompletionQueue cq;
    grpc::Slice slice(request);
    grpc::ByteBuffer bytes(&slice, 1), response;
    grpc::Status status;
    auto call = generic.PrepareUnaryCall(&ctx, method, bytes, &cq);
    call->StartCall();
    call->Finish(&response, &status, nullptr);
    void* tag = nullptr;
    bool ok = false;
    if (!cq.Next(&tag, &ok)) return grpc::Status(grpc::StatusCode::INTERNAL, "no completion");
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return status;
  }

 private:
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<::dflash::eval::v1::DrafterEval::Stub> stub_;
};

}  // namespace dflash::testing
