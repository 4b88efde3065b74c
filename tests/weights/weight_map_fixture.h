// File: weight_map_fixture.h
// What the weight map's tests share (weight_map_test.cc,
// weight_map_values_test.cc): a tiny drafter-shaped schema, a checkpoint
// that matches it, and a report's entry by name.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "weights/weight_map.h"

namespace dflash::weights::testing {

// A tiny drafter-shaped schema: H = 8, nh = 2, nkv = 1, d = 4, I = 16.
constexpr int64_t kH = 8, kQ = 8, kKv = 4, kD = 4, kI = 16;

// The tensors of drafter layer `i`.
std::vector<TensorSpec> LayerSpecs(int i);

// fc (for `target_layers` target layers), the norms and `layers` layers.
std::vector<TensorSpec> Schema(int layers, int target_layers);

// Tensors matching a schema, deterministic values, names with `prefix`.
std::vector<std::pair<std::string, at::Tensor>> Checkpoint(const std::vector<TensorSpec>& schema,
                                                           const std::string& prefix = "",
                                                           at::ScalarType dtype = at::kFloat);

// The report's entry named `name`, or null.
const TensorEntry* Entry(const WeightReport& r, const std::string& name);

class WeightMapTest : public ::testing::Test {
 protected:
  std::vector<TensorSpec> schema_ = Schema(2, 3);
};

}  // namespace dflash::weights::testing
