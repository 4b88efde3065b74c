// roofline_bench: the service's eval core in one process, without gRPC.
// Links dflash_eval / dflash_model / dflash_data / dflash_weights and
// libtorch only, so it builds against any libtorch (CPU or CUDA).
//
//   roofline_bench --target T --drafter D --dataset DS [--mode anchor|replay]
//       [--anchors even|all] [--max-blocks N] [--max-samples N] [--threads N]
//       [--repeat R] [--device cpu|cuda:0] [--dtype fp32|bf16]
//
// Prints one JSON object: the matmul peak measured here on these threads,
// the eval's FLOP count (formula in BENCHMARKS.md) and compute time, the
// load throughputs against a plain read of the same files, and the peak RSS
// growth of each load (VmHWM, reset through /proc/self/clear_refs).
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "config/drafter_config_reader.h"
#include "eval/anchors.h"
#include "eval/evaluator.h"
#include "file_read.h"
#include "model/drafter_model.h"
#include "model/drafter_schema.h"
#include "weights/checkpoint_open.h"
#include "weights/target_tensors.h"
#include "weights/weight_map.h"

namespace {

namespace fs = std::filesystem;
using ::dflash::bench::Clock;
using ::dflash::bench::FilesUnder;
using ::dflash::bench::PlainRead;
using ::dflash::bench::Since;
using dflash::types::EvalOptions;

// VmHWM / VmRSS in bytes from /proc/self/status.
int64_t ProcStatus(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) {
      return std::atoll(line.c_str() + key.size() + 1) * 1024;
    }
  }
  return 0;
}
// Resets VmHWM to the current RSS (Linux >= 4.0).
void ResetPeak() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

// Best-of GFLOP/s of an n x n x n matmul in the eval's dtype.
double MatmulPeak(int64_t n, c10::ScalarType dtype, c10::Device device) {
  at::Tensor a = at::randn({n, n}).to(device, dtype);
  at::Tensor b = at::randn({n, n}).to(device, dtype);
  at::Tensor c = at::mm(a, b);
  double best = 1e30;
  for (int i = 0; i < 5; ++i) {
    const Clock::time_point t = Clock::now();
    c = at::mm(a, b);
    (void)c.sum().item<float>();  // synchronises on accelerators
    best = std::min(best, Since(t));
  }
  return 2.0 * n * n * n / best / 1e9;
}

struct Args {
  std::string target, drafter, dataset, device = "cpu", dtype = "fp32";
  std::string mode = "anchor", anchors = "even";
  int64_t max_blocks = 0, max_samples = 0, threads = 0, repeat = 3;
  bool full_positions = false;  // replay: score past each block's first miss
};

// The eval's useful FLOPs (BENCHMARKS.md): context encoding per sequence,
// the drafter layers and visible attention per block, the lm_head per
// drafted slot.
struct FlopCount {
  double context = 0, layers = 0, attention = 0, head = 0;
  double total() const { return context + layers + attention + head; }
};

FlopCount CountFlops(const dflash::config::DrafterConfig& c, int64_t V,
                     const dflash::data::EvalDataset& ds, const EvalOptions& o,
                     const dflash::types::EvalResult& r) {
  const double H = c.hidden_size, nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  const double d = c.head_dim, I = c.intermediate_size, n = c.num_hidden_layers;
  const double KH = static_cast<double>(c.num_target_features()) * ds.hidden_size();
  const int64_t B = o.block_size > 0 ? o.block_size : c.block_size;
  const double per_pos_ctx = 2.0 * (KH * H + n * 2 * H * nkv * d);
  const double per_tok_layer = 2.0 * n * (2 * H * nh * d + 2 * H * nkv * d + 3 * H * I);
  FlopCount f;
  const size_t ns = o.max_samples > 0 ? std::min<size_t>(ds.size(), o.max_samples) : ds.size();
  auto attention = [&](int64_t a) {
    double keys = 0;
    for (int64_t li = 0; li < c.num_hidden_layers; ++li) {
      const int64_t ctx = c.sliding[li] ? std::min<int64_t>(a, c.sliding_window) : a;
      keys += static_cast<double>(ctx + B);
    }
    return 2.0 * 2.0 * B * nh * d * keys;  // QK^T and PV
  };
  for (size_t i = 0; i < ns; ++i) {
    const auto& s = ds.sample(i);
    const int64_t L = s.input_ids.numel();
    f.context += per_pos_ctx * L;
    if (o.mode == dflash::types::Mode::kAnchor) {
      at::Tensor m = s.loss_mask.to(at::kCPU, at::kByte).contiguous();
      auto anchors = dflash::eval::SelectAnchors(m.data_ptr<uint8_t>(), L, o.anchors, o.max_blocks,
                                                 o.seed, s.index);
      for (int64_t a : anchors) {
        f.layers += per_tok_layer * B;
        f.attention += attention(a);
        f.head += 2.0 * (B - 1) * H * V;
      }
    }
  }
  if (o.mode == dflash::types::Mode::kReplay) {
    for (const auto& s : r.per_sample) {
      const int64_t mid = (s.first_response_position + s.length) / 2;
      f.layers += per_tok_layer * B * s.blocks;
      f.attention += attention(mid) * s.blocks;
      f.head += 2.0 * (B - 1) * H * V * s.blocks;
    }
  }
  return f;
}

// Prints the matmul peaks measured here; returns the best.
double WritePeaks(std::ostream& js, c10::ScalarType dtype, c10::Device device) {
  const double peak1k = MatmulPeak(1024, dtype, device);
  const double peak2k = MatmulPeak(2048, dtype, device);
  js << " \"matmul_gflops_1024\": " << peak1k << ",\n \"matmul_gflops_2048\": " << peak2k << ",\n";
  if (device.is_cuda()) {  // a GPU reaches its peak only on large products
    js << " \"matmul_gflops_8192\": " << MatmulPeak(8192, dtype, device) << ",\n";
  }
  return std::max(peak1k, peak2k);
}

// One load's line: its time, against a plain read of its files with a warm
// page cache, and its peak RSS growth.
void WriteLoad(std::ostream& js, const char* name, const std::vector<std::string>& files,
               double secs, int64_t rss_before, int64_t tensor_bytes) {
  PlainRead(files);  // warm
  auto [file_bytes, plain_s] = PlainRead(files);
  const int64_t peak_growth = ProcStatus("VmHWM") - rss_before;
  js << " \"load_" << name << "\": {\"seconds\": " << secs << ", \"file_bytes\": " << file_bytes
     << ", \"plain_read_seconds\": " << plain_s << ", \"tensor_bytes\": " << tensor_bytes
     << ", \"peak_rss_growth\": " << peak_growth << "},\n";
}

absl::StatusOr<dflash::weights::TargetTensors> LoadTarget(const Args& args, c10::ScalarType dtype,
                                                          c10::Device device, std::ostream& js) {
  ResetPeak();
  const int64_t rss0 = ProcStatus("VmRSS");
  const Clock::time_point t = Clock::now();
  ASSIGN_OR_RETURN(dflash::weights::TargetTensors target,
                   dflash::weights::LoadTargetTensors(
                       args.target, dflash::weights::TargetLoadOptions{dtype, device, false}));
  const double target_s = Since(t);
  const int64_t target_tensor_bytes =
      target.embed.nbytes() + (target.tied ? 0 : target.lm_head.nbytes());
  js << " \"target_bytes_read\": " << target.bytes_read << ",\n";
  WriteLoad(js, "target", FilesUnder(args.target), target_s, rss0, target_tensor_bytes);
  return target;
}

// The drafter and its config, loaded as the server does (validated first).
struct LoadedDrafter {
  dflash::config::DrafterConfig cfg;
  dflash::model::DrafterModel model;
};

absl::StatusOr<LoadedDrafter> LoadDrafter(const Args& args, int64_t target_hidden_size,
                                          c10::ScalarType dtype, c10::Device device,
                                          std::ostream& js) {
  ResetPeak();
  const int64_t rss0 = ProcStatus("VmRSS");
  const Clock::time_point t = Clock::now();
  ASSIGN_OR_RETURN(auto opened, dflash::weights::OpenCheckpoint(args.drafter, ""));
  ASSIGN_OR_RETURN(auto cfg, dflash::config::ParseDrafterConfigFile(opened.config_path));
  dflash::weights::ValidateOptions vo;
  vo.ignore = dflash::model::DrafterIgnoreRules();
  ASSIGN_OR_RETURN(auto report,
                   dflash::weights::ValidateWeightMap(
                       *opened.source, dflash::model::DrafterSchema(cfg, target_hidden_size), vo));
  if (!report.ok) return absl::FailedPreconditionError("drafter checkpoint does not validate");
  ASSIGN_OR_RETURN(auto tensors,
                   dflash::weights::LoadValidatedWeights(*opened.source, report, dtype, device));
  int64_t drafter_storage = 0;
  for (const auto& [name, w] : tensors) drafter_storage += w.storage().nbytes();
  ASSIGN_OR_RETURN(auto drafter, dflash::model::DrafterModel::Create(cfg, std::move(tensors)));
  WriteLoad(js, "drafter", FilesUnder(args.drafter), Since(t), rss0, drafter.bytes());
  js << " \"drafter_storage_bytes\": " << drafter_storage << ",\n";
  return LoadedDrafter{std::move(cfg), std::move(drafter)};
}

absl::StatusOr<dflash::data::EvalDataset> LoadDataset(const Args& args, c10::ScalarType dtype,
                                                      c10::Device device, std::ostream& js) {
  ResetPeak();
  const int64_t rss0 = ProcStatus("VmRSS");
  const Clock::time_point t = Clock::now();
  dflash::data::DatasetLoadOptions dlo;
  dlo.name = "bench";
  dlo.path = args.dataset;
  dlo.dtype = dtype;
  dlo.device = device;
  ASSIGN_OR_RETURN(auto dataset, dflash::data::EvalDataset::Load(dlo));
  WriteLoad(js, "dataset", FilesUnder(args.dataset), Since(t), rss0, dataset.bytes());
  {  // storage actually held (a view over a larger buffer would show here)
    std::set<const void*> seen;
    int64_t storage = 0;
    auto add = [&](const at::Tensor& x) {
      if (x.defined() && seen.insert(x.storage().data()).second) storage += x.storage().nbytes();
    };
    for (size_t i = 0; i < dataset.size(); ++i) {
      add(dataset.sample(i).input_ids);
      add(dataset.sample(i).loss_mask);
      for (const at::Tensor& f : dataset.sample(i).features) add(f);
    }
    js << " \"dataset_storage_bytes\": " << storage << ",\n";
  }
  return dataset;
}

EvalOptions OptionsOf(const Args& args) {
  EvalOptions o;
  o.mode = args.mode == "replay" ? dflash::types::Mode::kReplay : dflash::types::Mode::kAnchor;
  o.anchors = args.anchors == "all" ? dflash::types::AnchorStrategy::kAll
                                    : dflash::types::AnchorStrategy::kEven;
  o.max_blocks = args.max_blocks;
  o.max_samples = args.max_samples;
  o.full_positions = args.full_positions;
  return o;
}

// The eval `repeat` times: its numbers, the median compute time, the FLOPs
// and their share of `peak`.
absl::Status WriteEval(const Args& args, const LoadedDrafter& drafter,
                       const dflash::weights::TargetTensors& target,
                       const dflash::data::EvalDataset& dataset, double peak, std::ostream& js) {
  const EvalOptions o = OptionsOf(args);
  std::vector<double> times;
  dflash::types::EvalResult result;
  for (int64_t i = 0; i < std::max<int64_t>(1, args.repeat); ++i) {
    ASSIGN_OR_RETURN(result, dflash::eval::Evaluate(drafter.model, target, dataset, o));
    times.push_back(result.compute_seconds);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  const FlopCount f = CountFlops(drafter.cfg, target.vocab_size, dataset, o, result);
  js << " \"eval\": {\"mode\": \"" << args.mode << "\", \"blocks\": " << result.blocks
     << ", \"tokens_scored\": " << result.tokens_scored
     << ", \"accept_length_pooled\": " << result.accept_length_pooled << ", \"tau\": " << result.tau
     << ", \"positions_to_first_miss\": " << (result.positions_to_first_miss ? "true" : "false")
     << ", \"context_positions\": " << result.context_positions
     << ", \"compute_seconds_median\": " << median << ", \"compute_seconds\": [";
  for (size_t i = 0; i < times.size(); ++i) js << (i ? ", " : "") << times[i];
  js << "], \"flops\": {\"context\": " << f.context << ", \"layers\": " << f.layers
     << ", \"attention\": " << f.attention << ", \"head\": " << f.head
     << ", \"total\": " << f.total() << "}, \"gflops_per_s\": " << f.total() / median / 1e9
     << ", \"fraction_of_peak\": " << f.total() / median / 1e9 / peak << ", \"accuracy\": [";
  for (size_t i = 0; i < result.positions.size(); ++i) {
    js << (i ? ", " : "") << result.positions[i].accuracy;
  }
  js << "]}\n}\n";
  return absl::OkStatus();
}

absl::StatusOr<std::string> Run(const Args& args) {
  at::NoGradGuard no_grad;
  if (args.threads > 0) at::set_num_threads(static_cast<int>(args.threads));
  const c10::Device device(args.device);
  const c10::ScalarType dtype = args.dtype == "bf16" ? at::kBFloat16 : at::kFloat;
  std::ostringstream js;
  js << "{\n \"threads\": " << at::get_num_threads() << ",\n \"device\": \"" << device.str()
     << "\",\n \"dtype\": \"" << args.dtype << "\",\n";
  const double peak = WritePeaks(js, dtype, device);

  // Loads, each timed with a warm page cache and its peak RSS growth.
  for (const std::string& p : {args.target, args.drafter, args.dataset}) PlainRead(FilesUnder(p));
  ASSIGN_OR_RETURN(auto target, LoadTarget(args, dtype, device, js));
  ASSIGN_OR_RETURN(auto drafter, LoadDrafter(args, target.hidden_size, dtype, device, js));
  ASSIGN_OR_RETURN(auto dataset, LoadDataset(args, dtype, device, js));
  RETURN_IF_ERROR(WriteEval(args, drafter, target, dataset, peak, js));
  return js.str();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "roofline_bench: " << k << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--target")
      a.target = next();
    else if (k == "--drafter")
      a.drafter = next();
    else if (k == "--dataset")
      a.dataset = next();
    else if (k == "--device")
      a.device = next();
    else if (k == "--dtype")
      a.dtype = next();
    else if (k == "--mode")
      a.mode = next();
    else if (k == "--anchors")
      a.anchors = next();
    else if (k == "--max-blocks")
      a.max_blocks = std::atoll(next().c_str());
    else if (k == "--max-samples")
      a.max_samples = std::atoll(next().c_str());
    else if (k == "--threads")
      a.threads = std::atoll(next().c_str());
    else if (k == "--repeat")
      a.repeat = std::atoll(next().c_str());
    else if (k == "--full-positions")
      a.full_positions = true;
    else {
      std::cerr << "roofline_bench: unknown argument '" << k << "'\n";
      return 2;
    }
  }
  if (a.target.empty() || a.drafter.empty() || a.dataset.empty()) {
    std::cerr << "usage: roofline_bench --target T --drafter D --dataset DS [--mode anchor|replay]"
                 " [--anchors even|all] [--max-blocks N] [--max-samples N] [--threads N]"
                 " [--repeat R] [--device cpu|cuda:0] [--dtype fp32|bf16]\n";
    return 2;
  }
  absl::StatusOr<std::string> out;
  try {
    out = Run(a);
  } catch (const std::exception& e) {
    std::cerr << "roofline_bench: " << e.what() << "\n";
    return 1;
  }
  if (!out.ok()) {
    std::cerr << "roofline_bench: " << out.status() << "\n";
    return 1;
  }
  std::cout << *out;
  return 0;
}
