// File: job_client.h
// A raw-stub client of one dflash-evald for the job tests against real
// servers (integration/jobs_*, fleet/*): unary calls with a deadline, the
// job RPCs, and the polls that wait for a job to run or finish. One copy
// for both suites, so a change to how a test waits is made once.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"

namespace dflash::testing {

struct JobClient {
  explicit JobClient(const std::string& address);
  // On a channel the caller already holds (and may use for other stubs).
  explicit JobClient(const std::shared_ptr<grpc::Channel>& channel);

  // One unary call with a fresh context and a 60 s deadline.
  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (eval::v1::DrafterEval::Stub::*method)(grpc::ClientContext*,
                                                                        const Req&, Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return (stub.get()->*method)(&ctx, req, resp);
  }
  // SubmitEval's status and job.
  grpc::Status TrySubmit(const eval::v1::EvalRequest& r, eval::v1::EvalJob* job);
  // The job; a test failure when SubmitEval fails.
  eval::v1::EvalJob Submit(const eval::v1::EvalRequest& r);
  eval::v1::EvalJob Get(const std::string& id);
  grpc::Status Cancel(const std::string& id, eval::v1::EvalJob* job);
  grpc::Status Resubmit(const std::string& id, eval::v1::EvalJob* job);
  eval::v1::ListEvalsResponse List(eval::v1::ListEvalsRequest req);
  eval::v1::EvalResult RunEval(const eval::v1::EvalRequest& r);
  // Polls until the job leaves QUEUED/RUNNING; a test failure (and an empty
  // job) after `seconds`.
  eval::v1::EvalJob WaitDone(const std::string& id, int seconds = 120);
  // Polls until the job is RUNNING with some progress; its record then. A
  // test failure (and an empty job) when it ends first or never runs.
  eval::v1::EvalJob WaitRunning(const std::string& id);

  std::unique_ptr<eval::v1::DrafterEval::Stub> stub;
};

// A result without its wall-clock timings and the servers its shards ran
// on ("host:pid"): what differs between equal runs.
eval::v1::EvalResult WithoutTimings(eval::v1::EvalResult r);

}  // namespace dflash::testing
