// File: preload.h
// Loads the config file's preload list through the core at start, in the
// order targets, datasets, drafters. The first failure stops it: the server
// then exits rather than serve half of what the operator asked for.
#pragma once

#include "absl/status/status.h"
#include "app/server_config.h"
#include "core/eval_core.h"

namespace dflash::app {

// Logs one line per object loaded. The error names the object and its path:
// "preload of dataset 'gsm8k' from '/srv/x' failed: <the core's message>".
absl::Status RunPreload(core::EvalCore& core, const PreloadConfig& preload);

}  // namespace dflash::app
