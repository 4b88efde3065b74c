// File: job_backend_select.h
// The one place a server chooses between running alone and running in a
// fleet: from the store (store.shared(): a fleet's PostgreSQL), the job
// queue's backend (jobs/job_backend.h) and the job service's placement
// (core/job_placement.h), made as a pair.
#pragma once

#include <memory>

#include "app/server_config.h"
#include "core/eval_core.h"
#include "core/job_placement.h"
#include "jobs/job_backend.h"
#include "store/result_store.h"

namespace dflash::app {

struct JobBackends {
  std::unique_ptr<jobs::JobBackend> backend;
  std::unique_ptr<core::JobPlacement> placement;
};

// `core` and `store` must outlive both.
JobBackends SelectJobBackends(const ServerConfig& config, core::EvalCore& core,
                              store::ResultStore& store);

}  // namespace dflash::app
