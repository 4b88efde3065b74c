// File: weight_names.h
// Name handling behind ValidateWeightMap: undoing training wrappers
// (module., _orig_mod., FSDP segments, ...) and reading layer indices.
// Internal to weights/; exposed for weight_map.cc and its tests.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "weights/tensor_source.h"
#include "weights/weight_spec.h"

namespace dflash::weights {

// One way of reading the stored names: strip `prefix` from names that start
// with it; with `drop_infix`, also drop FSDP / checkpoint wrapper segments
// anywhere in the name.
struct Normalisation {
  std::string prefix;
  bool drop_infix = false;
};

std::string Normalise(const std::string& name, const Normalisation& n);

// The normalisation under which most schema names are present; ties go to
// the one that strips least, so names that already match stay untouched.
Normalisation ChooseNormalisation(const std::vector<TensorInfo>& stored,
                                  const std::vector<TensorSpec>& schema);

// "layers.12.mlp.up_proj.weight" -> (12, "mlp.up_proj.weight"); also after
// a prefix ("model.layers.3.x"). False when the name has no layer index.
bool SplitLayer(absl::string_view name, int* layer, std::string* rest);

// "5 layers (0..4)", or "3 layers (0, 2, 7)" when not contiguous.
std::string LayerRange(const std::set<int>& layers);

}  // namespace dflash::weights
