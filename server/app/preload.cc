#include "app/preload.h"

#include <spdlog/spdlog.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log_fields.h"
#include "resident/load_request.h"
#include "resident/resource.h"

namespace dflash::app {
namespace {

template <typename Params, typename LoadFn>
absl::Status LoadAll(const char* kind, const std::vector<Params>& list, LoadFn load) {
  for (const Params& p : list) {
    absl::StatusOr<resident::LoadResult> r = load(p);
    if (!r.ok()) {
      return absl::Status(
          r.status().code(),
          absl::StrCat("preload of ", kind, p.name.empty() ? "" : absl::StrCat(" '", p.name, "'"),
                       " from '", p.path, "' failed: ", r.status().message()));
    }
    const resident::ResourceInfo& info = r->resource;
    ScopedLogFields fields({{"kind", kind}, {"name", info.name}});
    spdlog::info("preloaded {} '{}' from {}: {}, {} on {}, {} bytes in {:.2f} s", kind, info.name,
                 info.source_path, info.summary, info.dtype, info.device, info.bytes,
                 info.load_seconds);
    for (const std::string& w : r->warnings)
      spdlog::warn("preload of {} '{}': {}", kind, info.name, w);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status RunPreload(core::EvalCore& core, const PreloadConfig& preload) {
  if (preload.empty()) return absl::OkStatus();
  spdlog::info("preloading {} target(s), {} dataset(s), {} drafter(s)", preload.targets.size(),
               preload.datasets.size(), preload.drafters.size());
  auto st = LoadAll("target", preload.targets,
                    [&](const resident::LoadTargetParams& p) { return core.LoadTarget(p); });
  if (!st.ok()) return st;
  st = LoadAll("dataset", preload.datasets,
               [&](const resident::LoadDatasetParams& p) { return core.LoadDataset(p); });
  if (!st.ok()) return st;
  return LoadAll("drafter", preload.drafters,
                 [&](const resident::LoadDrafterParams& p) { return core.LoadDrafter(p); });
}

}  // namespace dflash::app
