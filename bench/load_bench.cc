// load_bench: drafter and dataset load throughput against a plain sequential
// read of the same files from the warm page cache, as roofline_bench's loads
// section measures them, but repeated (median of --repeat runs, interleaved
// so that both sides meet the same machine load) and with nothing else.
//
//   load_bench --drafter D --dataset DS [--repeat 7] [--dtype fp32|bf16]
//              [--threads N] [--only drafter|dataset]
// The first load in the process is reported on its own ("first_load_s"):
// later ones may reuse memory the allocator kept from the one before.
// Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "data/eval_dataset.h"
#include "file_read.h"
#include "model/drafter_config.h"
#include "model/drafter_model.h"
#include "model/drafter_schema.h"
#include "weights/checkpoint_open.h"
#include "weights/weight_map.h"

namespace {

namespace fs = std::filesystem;
using ::dflash::bench::Clock;
using ::dflash::bench::FilesUnder;
using ::dflash::bench::PlainRead;
using ::dflash::bench::Since;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Args {
  std::string drafter, dataset, dtype = "fp32", only;
  int repeat = 7, threads = 0;
};

absl::Status Run(const Args& args) {
  at::NoGradGuard no_grad;
  if (args.threads > 0) at::set_num_threads(args.threads);
  const c10::ScalarType dtype = args.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  const c10::Device device(c10::kCPU);
  const std::vector<std::string> dfiles = FilesUnder(args.drafter);
  const std::vector<std::string> sfiles = FilesUnder(args.dataset);
  PlainRead(dfiles);
  PlainRead(sfiles);
  std::vector<double> d_load, d_weights, d_plain, s_load, s_plain;
  int64_t d_bytes = 0, s_bytes = 0;
  std::string d_fp, s_fp;
  auto load_drafter = [&]() -> absl::Status {
    auto [db, dp] = PlainRead(dfiles);
    d_bytes = db;
    d_plain.push_back(dp);
    const Clock::time_point t = Clock::now();
    ASSIGN_OR_RETURN(auto opened, dflash::weights::OpenCheckpoint(args.drafter, ""));
    ASSIGN_OR_RETURN(auto cfg, dflash::model::ParseDrafterConfigFile(opened.config_path));
    dflash::weights::ValidateOptions vo;
    vo.ignore = dflash::model::DrafterIgnoreRules();
    ASSIGN_OR_RETURN(auto report,
                     dflash::weights::ValidateWeightMap(
                         *opened.source, dflash::model::DrafterSchema(cfg, cfg.hidden_size), vo));
    if (!report.ok) return absl::FailedPreconditionError("drafter does not validate");
    const Clock::time_point tw = Clock::now();
    ASSIGN_OR_RETURN(auto tensors,
                     dflash::weights::LoadValidatedWeights(*opened.source, report, dtype, device));
    d_weights.push_back(Since(tw));
    ASSIGN_OR_RETURN(auto drafter, dflash::model::DrafterModel::Create(cfg, std::move(tensors)));
    d_load.push_back(Since(t));
    d_fp = report.fingerprint;
    return absl::OkStatus();
  };
  auto load_dataset = [&]() -> absl::Status {
    auto [sb, sp] = PlainRead(sfiles);
    s_bytes = sb;
    s_plain.push_back(sp);
    const Clock::time_point t = Clock::now();
    dflash::data::DatasetLoadOptions dlo;
    dlo.name = "bench";
    dlo.path = args.dataset;
    dlo.dtype = dtype;
    dlo.device = device;
    ASSIGN_OR_RETURN(auto dataset, dflash::data::EvalDataset::Load(dlo));
    s_load.push_back(Since(t));
    s_fp = dataset.fingerprint();
    return absl::OkStatus();
  };
  for (int r = 0; r < args.repeat; ++r) {
    if (args.only != "dataset") RETURN_IF_ERROR(load_drafter());
    if (args.only != "drafter") RETURN_IF_ERROR(load_dataset());
  }
  const double mb = 1e6;
  auto line = [&](const char* name, int64_t bytes, const std::vector<double>& load,
                  const std::vector<double>& plain, const std::string& fp) {
    if (load.empty()) return;
    const double l = Median(load), p = Median(plain);
    std::printf(
        " \"%s\": {\"bytes\": %lld, \"first_load_s\": %.5f, \"load_s\": %.5f, \"plain_s\": %.5f, "
        "\"load_mb_s\": %.0f, \"plain_mb_s\": %.0f, \"ratio\": %.3f, "
        "\"fingerprint\": \"%s\"},\n",
        name, static_cast<long long>(bytes), load[0], l, p, bytes / l / mb, bytes / p / mb, p / l,
        fp.c_str());
  };
  std::printf("{\n \"repeat\": %d, \"threads\": %d,\n", args.repeat, at::get_num_threads());
  line("drafter", d_bytes, d_load, d_plain, d_fp);
  line("dataset", s_bytes, s_load, s_plain, s_fp);
  std::printf(" \"drafter_load_weights_s\": %.5f\n}\n", Median(d_weights));
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--drafter")
      args.drafter = v;
    else if (k == "--dataset")
      args.dataset = v;
    else if (k == "--dtype")
      args.dtype = v;
    else if (k == "--repeat")
      args.repeat = std::stoi(v);
    else if (k == "--threads")
      args.threads = std::stoi(v);
    else if (k == "--only")
      args.only = v;
    else {
      std::cerr << "unknown flag " << k << "\n";
      return 2;
    }
  }
  if (args.drafter.empty() || args.dataset.empty()) {
    std::cerr << "usage: load_bench --drafter D --dataset DS [--repeat N] [--dtype fp32|bf16]"
                 " [--threads N]\n";
    return 2;
  }
  const absl::Status s = Run(args);
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}
