#include "resident/budget.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/fix_hint.h"
#include "data/sample_files.h"
#include "resident/device.h"
#include "resident/resident_set.h"

namespace dflash::resident {
namespace {

std::string Bytes(int64_t n) {
  return absl::StrFormat("%d bytes (%.2f GiB)", n, static_cast<double>(n) / (1 << 30));
}

// A config.json value at the top level, else under text_config; null if neither.
const nlohmann::json* ConfigField(const nlohmann::json& config, const char* key) {
  if (auto it = config.find(key); it != config.end()) return &*it;
  if (auto text = config.find("text_config"); text != config.end() && text->is_object()) {
    if (auto it = text->find(key); it != text->end()) return &*it;
  }
  return nullptr;
}

int64_t ConfigInt(const nlohmann::json& config, const char* key) {
  const nlohmann::json* v = ConfigField(config, key);
  return v && v->is_number_integer() ? v->get<int64_t>() : 0;
}

// a * b, saturating at 2^62 instead of overflowing.
int64_t Mul(int64_t a, int64_t b) {
  constexpr int64_t kMax = int64_t{1} << 62;
  if (a <= 0 || b <= 0) return 0;
  return a > kMax / b ? kMax : a * b;
}

}  // namespace

int64_t ResidentBytes(const ResidentSet& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  int64_t total = 0;
  for (const auto& [_, t] : r.targets) total += t.info.bytes;
  for (const auto& [_, d] : r.drafters) total += d.info.bytes;
  for (const auto& [_, d] : r.datasets) total += d.info.bytes;
  return total;
}

// Resident bytes on CUDA devices (locks r.mu).
static int64_t ResidentCudaBytes(const ResidentSet& r) {
  std::lock_guard<std::mutex> lock(r.mu);
  int64_t total = 0;
  auto add = [&](const ResourceInfo& info) {
    if (absl::StartsWith(info.device, "cuda")) total += info.bytes;
  };
  for (const auto& [_, t] : r.targets) add(t.info);
  for (const auto& [_, d] : r.drafters) add(d.info);
  for (const auto& [_, d] : r.datasets) add(d.info);
  return total;
}

int64_t BudgetBytesInUse(const ResidentSet& r, int64_t cuda_reserved) {
  const int64_t resident = ResidentBytes(r);
  // On CUDA the caching allocator's reserved bytes (resident tensors, eval
  // temporaries and its cached free blocks) are what the GPU has given up.
  return std::max(resident, resident - ResidentCudaBytes(r) + cuda_reserved);
}

absl::Status CheckResidentBudget(const ResidentSet& r, int64_t budget, const char* kind,
                                 const std::string& name, int64_t need, const char* basis) {
  if (budget <= 0) return absl::OkStatus();
  const int64_t reserved = CudaReservedBytes();
  const int64_t in_use = BudgetBytesInUse(r, reserved);
  if (need <= budget - in_use) return absl::OkStatus();
  return WithFixHint(
      absl::ResourceExhaustedError(absl::StrCat(
          "loading ", kind, " '", name, "' needs ", Bytes(need), " (", basis, ") but ",
          Bytes(in_use), " of the ", Bytes(budget), " resident budget is in use",
          reserved > 0
              ? absl::StrCat(" (the CUDA caching allocator reserves ", Bytes(reserved), ")")
              : "",
          "; unload something first")),
      FixHint::kResidentBudget);
}

int64_t EstimateDrafterBytes(const weights::WeightReport& report, c10::ScalarType dtype) {
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  int64_t total = 0;
  for (const weights::TensorEntry& t : report.tensors) {
    if (t.status != weights::EntryStatus::kFound) continue;
    int64_t n = 1;
    for (int64_t d : t.shape) n = Mul(n, d);
    if (t.shape.empty()) n = 1;
    total += Mul(n, elem);
  }
  return total;
}

int64_t EstimateTargetBytes(const std::string& model_dir, c10::ScalarType dtype, bool load_norm) {
  std::ifstream in(std::filesystem::path(model_dir) / "config.json");
  if (!in) return 0;
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) return 0;
  const int64_t vocab = ConfigInt(config, "vocab_size");
  const int64_t hidden = ConfigInt(config, "hidden_size");
  const nlohmann::json* tie = ConfigField(config, "tie_word_embeddings");
  const bool tied = tie && tie->is_boolean() && tie->get<bool>();
  const int64_t elem = static_cast<int64_t>(c10::elementSize(dtype));
  const int64_t matrix = Mul(Mul(vocab, hidden), elem);
  return (tied ? matrix : Mul(matrix, 2)) + (load_norm ? Mul(hidden, elem) : 0);
}

int64_t EstimateDatasetBytes(const std::string& dir, int64_t max_samples) {
  auto files = data::ListSampleFiles(dir);
  if (!files.ok()) return 0;
  int64_t total = 0, count = 0;
  for (const data::SampleFile& f : *files) {
    if (max_samples > 0 && count++ >= max_samples) break;
    std::error_code ec;
    const auto size = std::filesystem::file_size(std::filesystem::path(dir) / f.relative, ec);
    if (!ec) total += static_cast<int64_t>(size);
  }
  return total;
}

}  // namespace dflash::resident
