// load_bench: drafter, target and dataset loads against, in the same run, a
// mapped touch (mmap + one byte per page: the floor for a load that keeps
// views of its files) and a plain sequential read of the same files, warm
// (median of --repeat runs) and cold (page cache dropped with posix_fadvise
// DONTNEED before each side), with each load's peak RSS growth (VmHWM reset
// before it) against the bytes it keeps resident.
//
//   load_bench [--drafter D] [--target T] [--dataset DS] [--repeat 5]
//              [--dtype fp32|bf16] [--threads N] [--only drafter|target|dataset]
//              [--no-mmap 1] [--cold 0]
// Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/statusor.h"
#include "common/status_macros.h"
#include "config/drafter_config_reader.h"
#include "data/eval_dataset.h"
#include "file_read.h"
#include "model/drafter_model.h"
#include "model/drafter_schema.h"
#include "weights/checkpoint_open.h"
#include "weights/map_policy.h"
#include "weights/target_tensors.h"
#include "weights/weight_map.h"

namespace {

namespace fs = std::filesystem;
using ::dflash::bench::Clock;
using ::dflash::bench::DropFromPageCache;
using ::dflash::bench::FilesUnder;
using ::dflash::bench::MappedTouch;
using ::dflash::bench::PeakRssBytes;
using ::dflash::bench::PlainRead;
using ::dflash::bench::ResetPeakRss;
using ::dflash::bench::RssBytes;
using ::dflash::bench::Since;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Args {
  std::string drafter, dataset, target, dtype = "fp32", only;
  int repeat = 5, threads = 0;
  bool no_mmap = false, cold = true;
};

// One load of one object: what it keeps, of which how much is mapped.
struct Loaded {
  int64_t resident = 0, mapped = 0;
  std::string fingerprint;
};
using LoadFn = std::function<absl::StatusOr<Loaded>()>;

// Medians over the runs of one object, each side measured in the same run.
struct Row {
  std::vector<double> load, plain, touch, cold_load, cold_plain, peak;
  int64_t bytes = 0;
  Loaded last;
};

// A load timed, with its peak RSS growth (VmHWM reset right before).
absl::StatusOr<double> TimedLoad(const LoadFn& load, Row& row) {
  ResetPeakRss();
  const int64_t before = RssBytes();
  const Clock::time_point t = Clock::now();
  ASSIGN_OR_RETURN(row.last, load());  // the resident object dies at return
  const double s = Since(t);
  row.peak.push_back(static_cast<double>(PeakRssBytes() - before));
  return s;
}

absl::Status Measure(const std::vector<std::string>& files, const LoadFn& load, const Args& args,
                     Row& row) {
  PlainRead(files);  // warm
  for (int r = 0; r < args.repeat; ++r) {
    auto [bytes, plain] = PlainRead(files);
    row.bytes = bytes;
    row.plain.push_back(plain);
    row.touch.push_back(MappedTouch(files).second);
    ASSIGN_OR_RETURN(double s, TimedLoad(load, row));
    row.load.push_back(s);
  }
  if (!args.cold) return absl::OkStatus();
  for (int r = 0; r < std::max(1, args.repeat / 2); ++r) {
    DropFromPageCache(files);
    row.cold_plain.push_back(PlainRead(files).second);
    DropFromPageCache(files);
    ASSIGN_OR_RETURN(double s, TimedLoad(load, row));
    row.cold_load.push_back(s);
  }
  return absl::OkStatus();
}

void PrintRow(const char* name, const Row& r, bool last) {
  if (r.load.empty()) return;
  const double gb = 1e9, l = Median(r.load), p = Median(r.plain), t = Median(r.touch);
  const double cl = Median(r.cold_load), cp = Median(r.cold_plain);
  std::printf(
      " \"%s\": {\"bytes\": %lld, \"resident_bytes\": %lld, \"mapped_bytes\": %lld,\n"
      "   \"load_s\": %.4f, \"mapped_touch_s\": %.4f, \"plain_s\": %.4f, "
      "\"load_vs_touch\": %.3f, \"load_vs_plain\": %.3f,\n"
      "   \"cold_load_s\": %.4f, \"cold_plain_s\": %.4f, \"cold_load_vs_plain\": %.3f,\n"
      "   \"load_gb_s\": %.2f, \"peak_rss_growth\": %.0f, \"peak_vs_resident\": %.3f,\n"
      "   \"fingerprint\": \"%s\"}%s\n",
      name, static_cast<long long>(r.bytes), static_cast<long long>(r.last.resident),
      static_cast<long long>(r.last.mapped), l, t, p, t / l, p / l, cl, cp, cl > 0 ? cp / cl : 0,
      r.bytes / l / gb, Median(r.peak), Median(r.peak) / std::max<int64_t>(1, r.last.resident),
      r.last.fingerprint.c_str(), last ? "" : ",");
}

absl::Status Run(const Args& args) {
  at::NoGradGuard no_grad;
  if (args.threads > 0) at::set_num_threads(args.threads);
  const c10::ScalarType dtype = args.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  const c10::Device device(c10::kCPU);
  dflash::weights::MapPolicy policy;
  policy.enabled = !args.no_mmap;
  const LoadFn drafter = [&]() -> absl::StatusOr<Loaded> {
    ASSIGN_OR_RETURN(auto opened, dflash::weights::OpenCheckpoint(args.drafter, ""));
    ASSIGN_OR_RETURN(auto cfg, dflash::config::ParseDrafterConfigFile(opened.config_path));
    dflash::weights::ValidateOptions vo;
    vo.ignore = dflash::model::DrafterIgnoreRules();
    ASSIGN_OR_RETURN(auto report,
                     dflash::weights::ValidateWeightMap(
                         *opened.source, dflash::model::DrafterSchema(cfg, cfg.hidden_size), vo));
    if (!report.ok) return absl::FailedPreconditionError("drafter does not validate");
    dflash::weights::MapTally tally;
    ASSIGN_OR_RETURN(auto tensors, dflash::weights::LoadValidatedWeights(
                                       *opened.source, report, dtype, device, policy, &tally));
    ASSIGN_OR_RETURN(auto model, dflash::model::DrafterModel::Create(cfg, std::move(tensors)));
    return Loaded{model.bytes(), tally.mapped_bytes(), report.fingerprint};
  };
  const LoadFn target = [&]() -> absl::StatusOr<Loaded> {
    dflash::weights::TargetLoadOptions o{dtype, device, /*load_norm=*/true};
    o.map = policy;
    ASSIGN_OR_RETURN(auto t, dflash::weights::LoadTargetTensors(args.target, o));
    const int64_t bytes = t.embed.nbytes() + (t.tied ? 0 : t.lm_head.nbytes()) + t.norm.nbytes();
    return Loaded{bytes, t.mapping.mapped_bytes(), t.fingerprint};
  };
  const LoadFn dataset = [&]() -> absl::StatusOr<Loaded> {
    dflash::data::DatasetLoadOptions dlo;
    dlo.name = "bench";
    dlo.path = args.dataset;
    dlo.dtype = dtype;
    dlo.device = device;
    dlo.map = policy;
    ASSIGN_OR_RETURN(auto d, dflash::data::EvalDataset::Load(dlo));
    return Loaded{d.bytes(), d.mapping().mapped_bytes(), d.fingerprint()};
  };
  Row d, t, s;
  if (!args.drafter.empty() && (args.only.empty() || args.only == "drafter")) {
    RETURN_IF_ERROR(Measure(FilesUnder(args.drafter), drafter, args, d));
  }
  if (!args.target.empty() && (args.only.empty() || args.only == "target")) {
    RETURN_IF_ERROR(Measure(FilesUnder(args.target), target, args, t));
  }
  if (!args.dataset.empty() && (args.only.empty() || args.only == "dataset")) {
    RETURN_IF_ERROR(Measure(FilesUnder(args.dataset), dataset, args, s));
  }
  std::printf("{\n \"repeat\": %d, \"threads\": %d, \"dtype\": \"%s\", \"mmap\": %s,\n",
              args.repeat, at::get_num_threads(), args.dtype.c_str(),
              args.no_mmap ? "false" : "true");
  PrintRow("drafter", d, false);
  PrintRow("target", t, false);
  PrintRow("dataset", s, false);
  std::printf(" \"end\": true\n}\n");
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
    else if (k == "--target")
      args.target = v;
    else if (k == "--no-mmap")
      args.no_mmap = v != "0";
    else if (k == "--cold")
      args.cold = v != "0";
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
  if (args.drafter.empty() && args.dataset.empty() && args.target.empty()) {
    std::cerr << "usage: load_bench [--drafter D] [--target T] [--dataset DS] [--repeat N]"
                 " [--dtype fp32|bf16] [--threads N] [--no-mmap 1] [--cold 0]\n";
    return 2;
  }
  const absl::Status s = Run(args);
  if (!s.ok()) {
    std::cerr << s << "\n";
    return 1;
  }
  return 0;
}
