// File: weight_report.h
// The weight-map report, as plain C++ (the service maps it to the proto
// dflash.eval.v1.WeightReport field by field).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dflash::weights {

struct TensorStats {
  double mean = 0, std = 0, abs_max = 0;
  int64_t nan_count = 0, inf_count = 0;
  bool all_zero = false;
};

enum class EntryStatus {
  kFound,           // expected and present with the right shape
  kMissing,         // expected, required, absent
  kShapeMismatch,   // expected, present, wrong shape
  kDtypeMismatch,   // expected, present, right shape, not a floating-point dtype
  kUnexpected,      // present, not in the schema
  kIgnored,         // present, not used, for a stated reason
  kOptionalAbsent,  // optional in the schema, absent
};

struct TensorEntry {
  std::string name;         // schema name (or normalised name when unexpected)
  std::string stored_name;  // name in the file
  EntryStatus status = EntryStatus::kFound;
  std::string dtype;  // stored dtype, safetensors spelling
  std::vector<int64_t> shape;
  std::vector<int64_t> expected_shape;
  std::string source_file;
  std::string reason;
  bool has_stats = false;
  TensorStats stats;
  bool keep_dtype = false;  // loaded in its stored dtype (TensorSpec::exact_dtype)
};

struct WeightReport {
  std::string path;
  std::string format;
  std::string config_path;
  bool ok = false;
  std::string stripped_prefix;
  std::string unwrapped_wrapper;  // torch.save entry the tensors came from, "" when none
  int found = 0, missing = 0, shape_mismatches = 0, dtype_mismatches = 0, unexpected = 0,
      ignored = 0;
  std::vector<std::string> problems;         // one line each, most important first
  std::vector<std::string> facts;            // derived facts in words
  std::vector<std::string> skipped_entries;  // non-tensor entries skipped
  std::vector<TensorEntry> tensors;
  std::string fingerprint;
  int64_t tensor_bytes = 0;
};

}  // namespace dflash::weights
