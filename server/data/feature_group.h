// File: feature_group.h
// One feature tensor of a capture and the target layers its columns hold.
// Its own file so the dataset and the per-file sample readers share it
// without including each other.
#pragma once

#include <string>
#include <vector>

namespace dflash::data {

struct FeatureGroup {
  std::string key;             // "hidden_states", "aux_hidden_state", "hidden_state"
  std::vector<int> layer_ids;  // in column order
};

}  // namespace dflash::data
