// File: drafter_config_fuzz.cc
// libFuzzer target for the drafter config.json parser (torch-free): any
// input is either a config whose derived facts are consistent, or an
// InvalidArgument with a message; never a crash, a hang or another code.
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/drafter_config.h"
#include "config/drafter_config_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto cfg = dflash::config::ParseDrafterConfig(text);
  if (!cfg.ok()) {
    if (cfg.status().code() != absl::StatusCode::kInvalidArgument ||
        cfg.status().message().empty()) {
      __builtin_trap();
    }
    return 0;
  }
  // What the rest of the server relies on after a successful parse.
  if (cfg->hidden_size <= 0 || cfg->num_attention_heads <= 0 || cfg->num_key_value_heads <= 0 ||
      cfg->head_dim <= 0 || cfg->num_attention_heads % cfg->num_key_value_heads != 0 ||
      static_cast<int64_t>(cfg->sliding.size()) != cfg->num_hidden_layers ||
      cfg->target_layer_ids.empty() || cfg->block_size < 1) {
    __builtin_trap();
  }
  (void)dflash::config::DescribeConfig(*cfg);
  return 0;
}
