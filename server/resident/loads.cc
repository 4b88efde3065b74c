#include "resident/loads.h"

#include <chrono>
#include <filesystem>
#include <optional>
#include <type_traits>

#include <ATen/ATen.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fix_hint.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "config/drafter_config_reader.h"
#include "model/drafter_schema.h"
#include "resident/budget.h"
#include "resident/placement.h"
#include "weights/checkpoint_open.h"
#include "weights/weight_map.h"

namespace dflash::resident {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A checkpoint opened, its config parsed and its weight map validated.
struct CheckedCheckpoint {
  weights::OpenedCheckpoint opened;
  config::DrafterConfig config;
  weights::WeightReport report;
};

// Facts that tie the weights to the config, and the mismatch that the
// original harness never caught: fc's width against target_layer_ids.
void AddConfigFacts(const config::DrafterConfig& cfg, int64_t target_hidden,
                    weights::WeightReport& report) {
  const int64_t k = cfg.num_target_features();
  report.facts.push_back(config::DescribeConfig(cfg));
  for (std::string& line : config::DescribeDraftKeys(cfg)) report.facts.push_back(std::move(line));
  for (const weights::TensorEntry& t : report.tensors) {
    if (t.name != "fc.weight" || t.shape.size() != 2) continue;
    const int64_t width = t.shape[1];
    if (width == k * target_hidden) {
      report.facts.push_back(absl::StrCat("fc expects ", k, " target layers x ", target_hidden,
                                          " = ", width,
                                          " input features; config lists target_layer_ids [",
                                          absl::StrJoin(cfg.target_layer_ids, ", "), "]"));
    } else if (width % target_hidden == 0) {
      report.problems.insert(
          report.problems.begin(),
          absl::StrCat("fc.weight takes ", width, " input features = ", width / target_hidden,
                       " target layers x ", target_hidden, ", but the config lists ", k,
                       " target_layer_ids [", absl::StrJoin(cfg.target_layer_ids, ", "), "] (",
                       k * target_hidden, " features)"));
    }
  }
  for (const std::string& w : cfg.warnings) report.facts.push_back("warning: " + w);
}

// The result of reusing the resident entry named `name` when `same(entry)`
// says it is this load's unchanged source; nullopt when the name is free;
// ALREADY_EXISTS when a different object holds it. Requires load_mu.
template <typename Map, typename Same>
absl::StatusOr<std::optional<LoadResult>> Reuse(const ResidentSet& r, const Map& map,
                                                const std::string& name, const char* kind,
                                                Same same) {
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = map.find(name);
  if (it == map.end()) return std::nullopt;
  if (!same(it->second)) {
    return WithFixHint(absl::AlreadyExistsError(absl::StrCat(
                           "a different ", kind, " is already resident as '", name, "' (from ",
                           it->second.info.source_path, "); unload it or choose another name")),
                       FixHint::kChooseName);
  }
  LoadResult result;
  result.resource = it->second.info;
  if constexpr (std::is_same_v<typename Map::mapped_type, ResidentSet::Drafter>) {
    result.report = it->second.report;
  }
  result.reused = true;
  return result;
}

// What every load settles before it takes the load lock, in this order (so
// a request with several faults gets the same error from every kind): the
// placement, the path inside the data roots, the name.
struct LoadPrelude {
  Clock::time_point start;
  Placement place;
  std::string resolved;
  std::string name;  // as asked, or DefaultName(resolved)
};

template <typename Params>
absl::StatusOr<LoadPrelude> BeginLoad(const LoadEnv& env, const Params& params) {
  LoadPrelude p;
  p.start = Clock::now();
  ASSIGN_OR_RETURN(p.place, ResolvePlacement(params.device, params.dtype, env.device));
  ASSIGN_OR_RETURN(p.resolved, env.roots->Resolve(params.path));
  p.name = params.name.empty() ? DefaultName(p.resolved) : params.name;
  return p;
}

// The new entry's ResourceInfo as far as the prelude knows it.
ResourceInfo StartInfo(ResourceKind kind, const LoadPrelude& p) {
  ResourceInfo info;
  info.kind = kind;
  info.name = p.name;
  info.source_path = p.resolved;
  info.device = p.place.device;
  info.dtype = p.place.dtype_name;
  return info;
}

void StampLoadTime(const LoadPrelude& p, ResourceInfo& info) {
  info.load_time_unix_micros = NowUnixMicros();
  info.load_seconds = SecondsSince(p.start);
}

}  // namespace

// How CheckCheckpoint validates: `target_hidden` 0 = the drafter's own H;
// statistics read no tensor larger than `max_tensor_bytes` (0: no limit).
namespace {
struct CheckOptions {
  bool allow_unexpected = false;
  bool compute_stats = false;
  int64_t target_hidden = 0;
  int64_t max_tensor_bytes = 0;
};
}  // namespace

// Opens, parses and validates.
static absl::StatusOr<CheckedCheckpoint> CheckCheckpoint(const DataRoots& roots,
                                                         const std::string& path,
                                                         const std::string& config_path,
                                                         const CheckOptions& check) {
  ASSIGN_OR_RETURN(std::string resolved, roots.Resolve(path));
  RETURN_IF_ERROR(roots.CheckLinks(resolved));  // shards and config.json found inside
  std::string resolved_config;
  if (!config_path.empty()) {
    ASSIGN_OR_RETURN(resolved_config, roots.Resolve(config_path, "config_path"));
  }
  CheckedCheckpoint c;
  ASSIGN_OR_RETURN(c.opened, weights::OpenCheckpoint(resolved, resolved_config));
  ASSIGN_OR_RETURN(c.config, config::ParseDrafterConfigFile(c.opened.config_path));
  const int64_t target_hidden =
      check.target_hidden > 0 ? check.target_hidden : c.config.hidden_size;
  weights::ValidateOptions options;
  options.allow_unexpected = check.allow_unexpected;
  options.compute_stats = check.compute_stats;
  options.max_tensor_bytes = check.max_tensor_bytes;
  options.ignore = model::DrafterIgnoreRules();
  ASSIGN_OR_RETURN(
      c.report, weights::ValidateWeightMap(*c.opened.source,
                                           model::DrafterSchema(c.config, target_hidden), options));
  c.report.path = resolved;
  c.report.config_path = c.opened.config_path;
  AddConfigFacts(c.config, target_hidden, c.report);
  model::ExplainFamilyMismatch(c.config, c.report);
  return c;
}

// The hidden size of the only resident target, or 0.
static int64_t SoleTargetHidden(const ResidentSet& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  return r.targets.size() == 1 ? r.targets.begin()->second.tensors->hidden_size : 0;
}

static int64_t SoleTargetVocab(const ResidentSet& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  return r.targets.size() == 1 ? r.targets.begin()->second.tensors->vocab_size : 0;
}

// A failed load says what is wrong: the report's problems go into the message.
// Wrong checkpoint content is InvalidArgument (STYLE.md), like a NaN weight.
static absl::Status RequireMatchingWeights(const weights::WeightReport& report,
                                           const std::string& resolved) {
  if (report.ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "checkpoint '", resolved, "' does not match its config (", report.missing, " missing, ",
      report.shape_mismatches, " shape mismatch(es), ",
      report.dtype_mismatches > 0 ? absl::StrCat(report.dtype_mismatches, " dtype mismatch(es), ")
                                  : "",
      report.unexpected, " unexpected); nothing was loaded:\n  - ",
      absl::StrJoin(report.problems, "\n  - ")));
}

// A loaded dataset's summary line and its streaming numbers.
static void DescribeDataset(const data::EvalDataset& d, ResourceInfo& info) {
  int64_t tokens = 0;
  for (size_t i = 0; i < d.size(); ++i) tokens += d.sample_tokens(i);
  info.summary = absl::StrCat(d.size(), " samples, ", tokens, " tokens, layers [",
                              absl::StrJoin(d.layer_ids(), ", "), "], H=", d.hidden_size());
  if (d.streamed()) {
    info.streamed = true;
    info.stream_bytes = d.total_sample_bytes();
    info.stream_budget_bytes = d.stream_budget_bytes();
    absl::StrAppend(&info.summary, "; streamed from disk (", d.total_sample_bytes(),
                    " bytes, read in chunks of at most ", d.stream_budget_bytes(), " bytes)");
  }
  if (!d.capture_notes().empty()) absl::StrAppend(&info.summary, "; ", d.capture_notes());
}

absl::StatusOr<weights::WeightReport> ValidateCheckpointIn(const ResidentSet& r, const LoadEnv& env,
                                                           const ValidateParams& params) {
  CheckOptions check;
  check.allow_unexpected = params.allow_unexpected;
  check.compute_stats = params.compute_stats;
  check.target_hidden = SoleTargetHidden(r);
  check.max_tensor_bytes = env.max_resident_bytes;
  absl::StatusOr<CheckedCheckpoint> c =
      CheckCheckpoint(*env.roots, params.path, params.config_path, check);
  // Statistics refused by the budget (weight_map.h): the service names the flag.
  if (c.status().code() == absl::StatusCode::kResourceExhausted &&
      absl::StrContains(c.status().message(), "resident budget")) {
    return WithFixHint(c.status(), FixHint::kResidentBudget);
  }
  if (!c.ok()) return c.status();
  return c->report;
}

std::string DrafterSignature(const std::string& resolved, const std::string& config_path,
                             const std::string& dtype_name, const std::string& device) {
  return absl::StrCat(resolved, "|", config_path, "|", dtype_name, "|", device, "|",
                      DiskSignature(resolved));
}

absl::StatusOr<LoadResult> LoadDrafterInto(ResidentSet& r, const LoadEnv& env,
                                           const LoadDrafterParams& params) {
  ASSIGN_OR_RETURN(const LoadPrelude pre, BeginLoad(env, params));
  const std::string& device = pre.place.device;
  const c10::ScalarType dtype = pre.place.dtype;
  const std::string signature =
      DrafterSignature(pre.resolved, params.config_path, pre.place.dtype_name, device);

  std::lock_guard<std::mutex> load_lock(r.load_mu);
  ASSIGN_OR_RETURN(std::optional<LoadResult> reused,
                   Reuse(r, r.drafters, pre.name, "drafter", [&](const ResidentSet::Drafter& e) {
                     return e.disk_signature == signature;
                   }));
  if (reused) return *std::move(reused);

  CheckOptions check;
  check.allow_unexpected = params.allow_unexpected;
  check.target_hidden = SoleTargetHidden(r);
  ASSIGN_OR_RETURN(CheckedCheckpoint c,
                   CheckCheckpoint(*env.roots, params.path, params.config_path, check));
  RETURN_IF_ERROR(RequireMatchingWeights(c.report, pre.resolved));
  const int64_t budget = env.max_resident_bytes;
  RETURN_IF_ERROR(CheckResidentBudget(r, budget, "drafter", pre.name,
                                      EstimateDrafterBytes(c.report, dtype),
                                      "estimated from the tensor headers"));
  auto mapping = std::make_shared<weights::MapTally>();
  ASSIGN_OR_RETURN(auto tensors,
                   weights::LoadValidatedWeights(*c.opened.source, c.report, dtype,
                                                 c10::Device(device), env.map, mapping.get()));
  ASSIGN_OR_RETURN(model::DrafterModel model,
                   model::DrafterModel::Create(c.config, std::move(tensors)),
                   "building drafter from '", pre.resolved, "'");

  ResidentSet::Drafter entry;
  entry.model = std::make_shared<const model::DrafterModel>(std::move(model));
  entry.report = c.report;
  entry.disk_signature = signature;
  entry.mapping = mapping;
  entry.info = StartInfo(ResourceKind::kDrafter, pre);
  ResourceInfo& info = entry.info;
  info.bytes = entry.model->bytes();
  info.mapped_bytes = mapping->mapped_bytes();
  info.fingerprint = c.report.fingerprint;
  info.summary = config::DescribeConfig(c.config);
  info.has_selector = entry.model->selector() != nullptr;
  StampLoadTime(pre, info);
  RETURN_IF_ERROR(
      CheckResidentBudget(r, budget, "drafter", pre.name, info.bytes, "measured once read"));

  LoadResult result;
  result.resource = info;
  result.report = c.report;
  result.warnings = c.config.warnings;
  std::lock_guard<std::mutex> lock(r.mu);
  r.drafters[pre.name] = std::move(entry);
  return result;
}

absl::StatusOr<LoadResult> LoadTargetInto(ResidentSet& r, const LoadEnv& env,
                                          const LoadTargetParams& params) {
  ASSIGN_OR_RETURN(const LoadPrelude pre, BeginLoad(env, params));
  const c10::ScalarType dtype = pre.place.dtype;

  std::lock_guard<std::mutex> load_lock(r.load_mu);
  ASSIGN_OR_RETURN(std::optional<LoadResult> reused,
                   Reuse(r, r.targets, pre.name, "target", [&](const ResidentSet::Target& e) {
                     return e.info.source_path == pre.resolved &&
                            e.info.dtype == pre.place.dtype_name &&
                            e.info.device == pre.place.device;
                   }));
  if (reused) return *std::move(reused);
  RETURN_IF_ERROR(env.roots->CheckLinks(pre.resolved));  // shards and config.json found inside
  weights::TargetLoadOptions options{dtype, c10::Device(pre.place.device), params.load_final_norm};
  options.map = env.map;
  const int64_t budget = env.max_resident_bytes;
  RETURN_IF_ERROR(
      CheckResidentBudget(r, budget, "target", pre.name,
                          EstimateTargetBytes(pre.resolved, dtype, params.load_final_norm),
                          "estimated from config.json"));
  ASSIGN_OR_RETURN(weights::TargetTensors tensors,
                   weights::LoadTargetTensors(pre.resolved, options));

  ResidentSet::Target entry;
  entry.tensors = std::make_shared<const weights::TargetTensors>(std::move(tensors));
  const weights::TargetTensors& t = *entry.tensors;
  entry.info = StartInfo(ResourceKind::kTarget, pre);
  ResourceInfo& info = entry.info;
  info.bytes = t.embed.nbytes() + (t.tied ? 0 : t.lm_head.nbytes()) +
               (t.norm.defined() ? t.norm.nbytes() : 0);
  info.mapped_bytes = t.mapping.mapped_bytes();
  info.fingerprint = t.fingerprint;
  info.summary = absl::StrCat("V=", t.vocab_size, ", H=", t.hidden_size, ", ", t.family,
                              t.tied ? ", lm_head tied to embed_tokens" : "",
                              t.norm.defined() ? ", final norm" : "");
  RETURN_IF_ERROR(
      CheckResidentBudget(r, budget, "target", pre.name, info.bytes, "measured once read"));
  StampLoadTime(pre, info);
  LoadResult result;
  result.resource = info;
  result.facts = t.facts;
  std::lock_guard<std::mutex> lock(r.mu);
  r.targets[pre.name] = std::move(entry);
  return result;
}

absl::StatusOr<LoadResult> LoadDatasetInto(ResidentSet& r, const LoadEnv& env,
                                           const LoadDatasetParams& params) {
  ASSIGN_OR_RETURN(const LoadPrelude pre, BeginLoad(env, params));
  data::DatasetLoadOptions options;
  // No dtype asked: as stored on the CPU; on CUDA features are resident in
  // bf16 like the weights (placement.h), and the model upcasts where it
  // accumulates (softmax, norms, reductions).
  if (!params.dtype.empty() || pre.place.device != "cpu") options.dtype = pre.place.dtype;
  options.path = pre.resolved;
  options.name = pre.name;
  options.layer_ids = params.layer_ids;
  options.device = c10::Device(pre.place.device);
  options.max_samples = params.max_samples;
  options.skip_bad_samples = params.skip_bad_samples;
  options.vocab_size = SoleTargetVocab(r);
  options.map = env.map;

  std::lock_guard<std::mutex> load_lock(r.load_mu);
  ASSIGN_OR_RETURN(std::optional<LoadResult> reused,
                   Reuse(r, r.datasets, pre.name, "dataset", [&](const ResidentSet::Dataset& e) {
                     return e.info.source_path == pre.resolved;
                   }));
  if (reused) return *std::move(reused);
  RETURN_IF_ERROR(env.roots->CheckLinks(pre.resolved));  // sample files found inside
  const int64_t budget = env.max_resident_bytes;
  options.stream = params.stream;
  options.stream_budget_bytes = params.stream_budget_bytes;
  std::vector<std::string> warnings;
  if (!options.stream) {
    const int64_t estimate = EstimateDatasetBytes(pre.resolved, options.max_samples);
    absl::Status fits = CheckResidentBudget(r, budget, "dataset", pre.name, estimate,
                                            "estimated from the sizes of its files");
    if (absl::IsResourceExhausted(fits) && !params.refuse_over_budget) {
      // Too large to keep: kept on disk and read in chunks (issue 30).
      options.stream = true;
      warnings.push_back(absl::StrCat(fits.message(), "; streamed from disk instead"));
    } else {
      RETURN_IF_ERROR(fits);
    }
  }
  ASSIGN_OR_RETURN(data::EvalDataset dataset, data::EvalDataset::Load(options));

  ResidentSet::Dataset entry;
  entry.dataset = std::make_shared<const data::EvalDataset>(std::move(dataset));
  const data::EvalDataset& d = *entry.dataset;
  entry.info = StartInfo(ResourceKind::kDataset, pre);
  ResourceInfo& info = entry.info;
  info.dtype = DTypeLabel(d.dtype());  // the stored one when none was asked
  info.bytes = d.bytes();
  info.mapped_bytes = d.mapping().mapped_bytes();
  RETURN_IF_ERROR(
      CheckResidentBudget(r, budget, "dataset", pre.name, info.bytes, "measured once read"));
  info.fingerprint = d.fingerprint();
  DescribeDataset(d, info);
  StampLoadTime(pre, info);
  LoadResult result;
  result.resource = info;
  result.warnings = std::move(warnings);
  for (const std::string& s : d.skipped()) result.warnings.push_back("skipped " + s);
  std::lock_guard<std::mutex> lock(r.mu);
  r.datasets[pre.name] = std::move(entry);
  return result;
}

}  // namespace dflash::resident
