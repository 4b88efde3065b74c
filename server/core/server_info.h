// File: server_info.h
// What GetServerInfo reports, as plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "resident/device.h"

namespace dflash::core {

struct ServerInfo {
  std::string server_version, git_sha, libtorch_version;
  bool cuda_available = false;
  std::vector<resident::DeviceInfo> devices;
  std::string default_device;
  std::vector<std::string> eval_devices;  // one per evaluation slot (issue 30)
  std::string default_dtype;              // "fp32" / "bf16" / "fp16"
  int intra_op_threads = 0;
  std::string blas;
  int64_t start_time_unix_micros = 0;
  double uptime_seconds = 0;
  int resident_targets = 0, resident_drafters = 0, resident_datasets = 0;
  int queued_jobs = 0, running_jobs = 0;
  std::vector<std::string> data_roots;
  std::string state_dir;
};

}  // namespace dflash::core
