// File: server_config.h
// Every server setting in one struct, filled from the command line and from
// `--config FILE` (YAML, or JSON when the file starts with '{'). Each
// top-level key of the file is a flag's long name (`state_dir` or
// `state-dir` for --state-dir; `data_roots` for --data-root), plus a
// `preload` section listing what to load at start. A flag given on the
// command line overrides the file; a key the server does not know is an
// error naming it. Options other code adds to the same CLI::App (before
// parsing) are file keys too.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/eval_core.h"
#include "resident/load_request.h"

namespace dflash::app {

struct PreloadConfig {
  std::vector<resident::LoadTargetParams> targets;
  std::vector<resident::LoadDatasetParams> datasets;
  std::vector<resident::LoadDrafterParams> drafters;
  // Named sets of resident datasets (`suites: {reasoning: [gsm8k, math500]}`):
  // `eval --dataset reasoning` evaluates each in one job (core/suite_job.h).
  std::map<std::string, std::vector<std::string>> suites;
  bool empty() const { return targets.empty() && datasets.empty() && drafters.empty(); }
};

struct ServerConfig {
  std::string config_file;
  std::string listen = "127.0.0.1:50051";
  std::string state_dir;
  std::string log_level = "info";
  std::string log_format = "text";
  std::string device = "auto";
  int threads = 0;
  int workers = 4;
  int max_queued = 64;      // evaluation jobs waiting at most
  int concurrent_jobs = 1;  // evaluation jobs running at once
  std::vector<std::string> data_roots;
  std::string port_file;
  std::string metrics_listen;  // empty: no metrics endpoint
  std::string http_listen;     // empty: no web view
  std::string http_port_file;
  // Security (docs/security.md; service/token_auth.h, app/listen_policy.h).
  std::string auth_token_file;  // empty: no authentication
  std::string tls_cert, tls_key, tls_client_ca;
  bool insecure_allow_remote = false;
  // Limits.
  int64_t max_request_bytes = 4 << 20;  // gRPC max receive message size
  int64_t max_resident_bytes = 0;       // 0: 90% of the device's memory
  // Resident tensors stored in their resident dtype are views of their
  // files (weights/map_policy.h) unless no_mmap, or the file changed less
  // than mmap_min_age_seconds ago.
  bool no_mmap = false;
  double mmap_min_age_seconds = 10;
  int64_t max_eval_blocks = 10'000'000;  // per evaluation; 0: no limit
  int max_concurrent_streams = 64;       // WatchEval streams; 0: no limit
  // Bytes of one vocabulary-projection chunk's logits in an evaluation.
  int64_t logits_budget_bytes = int64_t{256} << 20;
  // Evaluations that need the target's distribution (sampled acceptance)
  // are refused when the target reproduces less of the dataset than this.
  double min_target_consistency = 0.90;
  // Results store (app/store_select.h): "" (STATE_DIR/results.sqlite3),
  // sqlite:PATH, or postgresql://... shared by a fleet.
  std::string store;
  std::string store_password_file;  // else libpq's PGPASSWORD / PGPASSFILE
  // Fleet (a PostgreSQL store): this server's name (default HOST:PORT),
  // its lease, heartbeat and the attempts a job gets.
  std::string fleet_name;
  double fleet_lease_seconds = 10, fleet_heartbeat_seconds = 2;
  int fleet_max_attempts = 3;
  PreloadConfig preload;
};

// Adds the server's options to `app`, bound to `config` (which must outlive
// the parse), and makes --config read YAML/JSON into the same options.
void AddServerOptions(CLI::App& app, ServerConfig& config);

// Parses the text of a config file into CLI11 items for `app`'s options and
// fills `preload`. Throws CLI::ConfigError with a message naming the key
// for unknown keys, wrong shapes and syntax errors. Exposed for tests.
std::vector<CLI::ConfigItem> ParseConfigText(const std::string& text, const CLI::App& app,
                                             PreloadConfig* preload);

}  // namespace dflash::app
