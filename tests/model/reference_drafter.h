// File: reference_drafter.h
// A deliberately plain DFlash drafter forward (dflash-semantics §4) for
// tests: one block at a time, float64, explicit loops over positions and
// heads, its own RoPE frequencies and RMSNorm. It shares no code with
// server/model; only the config struct is common.
//
//   auto h = ReferenceBlock(cfg, weights, features, x0, anchor);  // [B*H]
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/drafter_config.h"

namespace dflash::model::reference {

// Per-type inverse frequencies, written straight from the formulas.
std::vector<double> ReferenceInvFreq(const config::RopeConfig& rope, int64_t head_dim);
double ReferenceRopeScale(const config::RopeConfig& rope);

// features: [L, K*H_t] (any float dtype; read as double), x0: [B, H].
// Uses context rows 0..anchor-1. Returns the final-norm output, row-major
// [B, H], in double.
std::vector<double> ReferenceBlock(const config::DrafterConfig& cfg,
                                   const std::map<std::string, at::Tensor>& weights,
                                   const at::Tensor& features, const at::Tensor& x0,
                                   int64_t anchor);

}  // namespace dflash::model::reference
