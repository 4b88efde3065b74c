// File: resource.h
// What a resident object is, as the registry lists it: its kind and the
// plain facts about it (name, source, placement, bytes). Torch-free, so the
// core's API (core/eval_core.h) and the service can speak of it.
//
//   for (const ResourceInfo& r : registry.List(ResourceKind::kTarget)) ...
#pragma once

#include <cstdint>
#include <string>

namespace dflash::resident {

enum class ResourceKind { kTarget, kDrafter, kDataset };
const char* ResourceKindName(ResourceKind kind);  // "target", "drafter", "dataset"

struct ResourceInfo {
  ResourceKind kind = ResourceKind::kDrafter;
  std::string name, source_path, device, dtype, fingerprint, summary;
  int64_t bytes = 0;
  // Of `bytes`, those that are views of the object's files (not copies);
  // they count against the budget all the same.
  int64_t mapped_bytes = 0;
  int64_t load_time_unix_micros = 0;
  double load_seconds = 0;
  bool has_selector = false;  // a DFlash 2 drafter (its candidate selector)
  // A streamed dataset: bytes is 0; its samples' bytes and chunk budget.
  bool streamed = false;
  int64_t stream_bytes = 0, stream_budget_bytes = 0;
};

}  // namespace dflash::resident
