// File: budget.h
// The memory budget for resident objects (--max-resident-bytes): what a load
// will take is estimated before anything is read (from tensor headers, the
// target's config.json, the dataset's file sizes), checked against what is
// resident, and checked again with the real size once loaded.
#pragma once

#include <cstdint>
#include <string>

#include <c10/core/ScalarType.h>

#include "absl/status/status.h"
#include "weights/weight_report.h"

namespace dflash::resident {

struct ResidentSet;  // resident/resident_set.h

// Bytes held by every resident object (locks r.mu).
int64_t ResidentBytes(const ResidentSet& r);

// What counts against the budget: the resident bytes, where the CUDA
// caching allocator's `cuda_reserved` bytes replace those resident on CUDA
// when larger (device.h's CudaReservedBytes(); 0 on a CPU-only machine).
int64_t BudgetBytesInUse(const ResidentSet& r, int64_t cuda_reserved);

// Ok when `budget` is 0 or in use (BudgetBytesInUse) + `need` fits; else ResourceExhausted
// naming the object, the numbers and the flag. `basis`: how `need` was
// found ("estimated from the tensor headers").
absl::Status CheckResidentBudget(const ResidentSet& r, int64_t budget, const char* kind,
                                 const std::string& name, int64_t need, const char* basis);

// Estimates, 0 when unknown (the check after loading still applies).
int64_t EstimateDrafterBytes(const weights::WeightReport& report, c10::ScalarType dtype);
int64_t EstimateTargetBytes(const std::string& model_dir, c10::ScalarType dtype, bool load_norm);
int64_t EstimateDatasetBytes(const std::string& dir, int64_t max_samples);

}  // namespace dflash::resident
