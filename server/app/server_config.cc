#include "app/server_config.h"

#include <algorithm>
#include <functional>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "resident/load_request.h"
#include "weights/name_suggest.h"

namespace dflash::app {
namespace {

using json = nlohmann::ordered_json;

// Both formats become one tree: JSON as parsed, YAML with every scalar a
// string (YAML has no types without a schema; the fields below convert).
json FromYaml(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return nullptr;
    case YAML::NodeType::Scalar: return node.Scalar();
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(FromYaml(item));
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = FromYaml(kv.second);
      return out;
    }
  }
  return nullptr;
}

json ParseTree(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    try {
      return json::parse(text);
    } catch (const json::exception& e) {
      throw CLI::ConfigError(absl::StrCat("config file is not valid JSON: ", e.what()));
    }
  }
  try {
    YAML::Node root = YAML::Load(text);
    if (!root || root.IsNull()) return json::object();
    return FromYaml(root);
  } catch (const YAML::Exception& e) {
    throw CLI::ConfigError(absl::StrCat("config file is not valid YAML: ", e.what()));
  }
}

[[noreturn]] void Fail(const std::string& message) {
  throw CLI::ConfigError(message);
}

// `key` is the full place ("preload.targets[0].pth"); `leaf` its last part.
std::string UnknownKey(const std::string& key, const std::string& leaf,
                       const std::vector<std::string>& known) {
  return absl::StrCat("unknown key '", key, "' in the config file (nearest: ",
                      weights::QuoteList(weights::NearestNames(leaf, known)),
                      "; known: ", absl::StrJoin(known, ", "), ")");
}

std::string Scalar(const json& v, const std::string& key) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return absl::StrCat(v.get<double>());
  Fail(absl::StrCat("config key '", key, "' must be a single value"));
}

bool Bool(const json& v, const std::string& key) {
  std::string s = absl::AsciiStrToLower(Scalar(v, key));
  if (s == "true" || s == "yes" || s == "on" || s == "1") return true;
  if (s == "false" || s == "no" || s == "off" || s == "0") return false;
  Fail(absl::StrCat("config key '", key, "' must be true or false; got '", s, "'"));
}

int64_t Int(const json& v, const std::string& key) {
  int64_t n = 0;
  if (!absl::SimpleAtoi(Scalar(v, key), &n)) {
    Fail(absl::StrCat("config key '", key, "' must be an integer; got '", Scalar(v, key), "'"));
  }
  return n;
}

std::vector<int> IntList(const json& v, const std::string& key) {
  if (!v.is_array()) Fail(absl::StrCat("config key '", key, "' must be a list of integers"));
  std::vector<int> out;
  for (size_t i = 0; i < v.size(); ++i) {
    out.push_back(static_cast<int>(Int(v[i], absl::StrCat(key, "[", i, "]"))));
  }
  return out;
}

// Walks one preload entry: each key must be one `fields` names.
using FieldFn = std::function<void(const json&, const std::string&)>;
void Entry(const json& v, const std::string& where, const std::map<std::string, FieldFn>& fields) {
  if (!v.is_object()) Fail(absl::StrCat("config key '", where, "' must be a mapping"));
  std::vector<std::string> known;
  known.reserve(fields.size());
  for (const auto& [k, _] : fields) known.push_back(k);
  for (const auto& [k, value] : v.items()) {
    const std::string key = absl::StrCat(where, ".", k);
    auto it = fields.find(k);
    if (it == fields.end()) Fail(UnknownKey(key, k, known));
    it->second(value, key);
  }
  if (!v.contains("path")) Fail(absl::StrCat("config key '", where, "' needs a 'path'"));
}

template <typename T, typename Fn>
void List(const json& v, const std::string& where, std::vector<T>* out, Fn fill) {
  if (v.is_null()) return;
  if (!v.is_array()) Fail(absl::StrCat("config key '", where, "' must be a list"));
  for (size_t i = 0; i < v.size(); ++i) {
    T item;
    fill(v[i], absl::StrCat(where, "[", i, "]"), item);
    out->push_back(std::move(item));
  }
}

#define DFLASH_TEXT(field)                                                       \
  {                                                                              \
#field, [&](const json& x, const std::string& k) { p.field = Scalar(x, k); } \
  }

void ParsePreload(const json& v, PreloadConfig* preload) {
  if (v.is_null()) return;
  if (!v.is_object()) Fail("config key 'preload' must be a mapping");
  for (const auto& [k, value] : v.items()) {
    const std::string where = absl::StrCat("preload.", k);
    if (k == "targets") {
      List(value, where, &preload->targets,
           [](const json& e, const std::string& at, resident::LoadTargetParams& p) {
             Entry(e, at,
                   {DFLASH_TEXT(name),
                    DFLASH_TEXT(path),
                    DFLASH_TEXT(dtype),
                    DFLASH_TEXT(device),
                    {"load_final_norm", [&](const json& x, const std::string& key) {
                       p.load_final_norm = Bool(x, key);
                     }}});
           });
    } else if (k == "drafters") {
      List(value, where, &preload->drafters,
           [](const json& e, const std::string& at, resident::LoadDrafterParams& p) {
             Entry(e, at,
                   {DFLASH_TEXT(name),
                    DFLASH_TEXT(path),
                    DFLASH_TEXT(config_path),
                    DFLASH_TEXT(dtype),
                    DFLASH_TEXT(device),
                    {"allow_unexpected", [&](const json& x, const std::string& key) {
                       p.allow_unexpected = Bool(x, key);
                     }}});
           });
    } else if (k == "datasets") {
      List(value, where, &preload->datasets,
           [](const json& e, const std::string& at, resident::LoadDatasetParams& p) {
             Entry(e, at,
                   {DFLASH_TEXT(name),
                    DFLASH_TEXT(path),
                    DFLASH_TEXT(dtype),
                    DFLASH_TEXT(device),
                    {"max_samples",
                     [&](const json& x, const std::string& key) { p.max_samples = Int(x, key); }},
                    {"skip_bad_samples",
                     [&](const json& x, const std::string& key) {
                       p.skip_bad_samples = Bool(x, key);
                     }},
                    // A list is the layers of 'hidden_states'; a mapping
                    // names each feature (as dflash-eval load-dataset --feature).
                    {"layer_ids", [&](const json& x, const std::string& key) {
                       if (x.is_array()) {
                         p.layer_ids["hidden_states"] = IntList(x, key);
                       } else if (x.is_object()) {
                         for (const auto& [feature, ids] : x.items()) {
                           p.layer_ids[feature] = IntList(ids, absl::StrCat(key, ".", feature));
                         }
                       } else {
                         Fail(absl::StrCat("config key '", key,
                                           "' must be a list of layer ids or a mapping "
                                           "feature -> list"));
                       }
                     }}});
           });
    } else {
      Fail(UnknownKey(where, k, {"datasets", "drafters", "targets"}));
    }
  }
}

#undef DFLASH_TEXT

// The options a file may set, by their file key (long name, '-' -> '_').
std::map<std::string, std::string> FileKeys(const CLI::App& app) {
  std::map<std::string, std::string> keys;  // file key -> long name
  for (const CLI::Option* opt : app.get_options()) {
    if (!opt->get_configurable()) continue;
    for (const std::string& name : opt->get_lnames()) {
      if (name == "help" || name == "version" || name == "config") continue;
      keys[absl::StrReplaceAll(name, {{"-", "_"}})] = name;
    }
  }
  return keys;
}

// CLI11's file reader, swapped for YAML/JSON.
class YamlJsonConfig final : public CLI::Config {
 public:
  YamlJsonConfig(const CLI::App* app, PreloadConfig* preload) : app_(app), preload_(preload) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override {
    return "";  // writing config files is not offered
  }
  std::vector<CLI::ConfigItem> from_config(std::istream& in) const override {
    std::stringstream text;
    text << in.rdbuf();
    return ParseConfigText(text.str(), *app_, preload_);
  }

 private:
  const CLI::App* app_;
  PreloadConfig* preload_;
};

// suites: {NAME: [dataset, ...], ...}: two or more dataset names each.
void ParseSuites(const json& v, PreloadConfig* preload) {
  if (!v.is_object()) Fail("config key 'suites' must be a mapping of suite names to dataset lists");
  for (const auto& [name, list] : v.items()) {
    const std::string where = absl::StrCat("suites.", name);
    if (!list.is_array() || list.size() < 2) {
      Fail(absl::StrCat("config key '", where, "' must be a list of two or more dataset names"));
    }
    std::vector<std::string> datasets;
    for (size_t i = 0; i < list.size(); ++i) {
      datasets.push_back(Scalar(list[i], absl::StrCat(where, "[", i, "]")));
    }
    preload->suites[name] = std::move(datasets);
  }
}

}  // namespace

std::vector<CLI::ConfigItem> ParseConfigText(const std::string& text, const CLI::App& app,
                                             PreloadConfig* preload) {
  const json root = ParseTree(text);
  if (!root.is_object()) Fail("the config file must be a mapping of keys to values");
  std::map<std::string, std::string> keys = FileKeys(app);
  keys["data_roots"] = "data-root";  // a list reads better plural
  std::vector<std::string> known;
  for (const auto& [k, _] : keys) {
    if (k != "data_root") known.push_back(k);  // accepted, not advertised
  }
  known.push_back("preload");
  known.push_back("suites");
  std::sort(known.begin(), known.end());

  std::vector<CLI::ConfigItem> items;
  for (const auto& [raw_key, value] : root.items()) {
    const std::string key = absl::StrReplaceAll(raw_key, {{"-", "_"}});
    if (key == "preload") {
      ParsePreload(value, preload);
      continue;
    }
    if (key == "suites") {
      ParseSuites(value, preload);
      continue;
    }
    auto it = keys.find(key);
    if (it == keys.end()) Fail(UnknownKey(raw_key, raw_key, known));
    CLI::ConfigItem item;
    item.name = it->second;
    if (value.is_array()) {
      for (size_t i = 0; i < value.size(); ++i) {
        item.inputs.push_back(Scalar(value[i], absl::StrCat(raw_key, "[", i, "]")));
      }
    } else {
      item.inputs.push_back(Scalar(value, raw_key));
    }
    items.push_back(std::move(item));
  }
  return items;
}

namespace {

// Where results and the job queue live (docs/operations.md, "Running a fleet").
void AddStoreOptions(CLI::App& app, ServerConfig& config) {
  app.add_option("--store", config.store,
                 "results store: sqlite:PATH (default: STATE_DIR/results.sqlite3, one host) or "
                 "postgresql://USER@HOST:PORT/DB (a fleet: one queue and one history for every "
                 "server on that database; no password in the URL)");
  app.add_option("--store-password-file", config.store_password_file,
                 "file holding the PostgreSQL password (else PGPASSWORD or PGPASSFILE)");
  app.add_option("--fleet-name", config.fleet_name,
                 "this server's name in the fleet: the address clients reach it at "
                 "(default: HOSTNAME:PORT)");
  app.add_option("--fleet-lease-seconds", config.fleet_lease_seconds,
                 "a running job's lease: after this long without a heartbeat from its "
                 "server, another server runs it again from the start")
      ->check(CLI::Range(0.5, 3600.0))
      ->capture_default_str();
  app.add_option("--fleet-heartbeat-seconds", config.fleet_heartbeat_seconds,
                 "how often a server renews its leases and tells the fleet it is alive")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  app.add_option("--fleet-max-attempts", config.fleet_max_attempts,
                 "runs a job gets before it is FAILED for losing its server each time")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
}

// Where the settings come from, where the server listens and logs, and its
// devices, threads and queue.
void AddProcessOptions(CLI::App& app, ServerConfig& config) {
  app.set_config("--config", "",
                 "YAML or JSON file of settings and objects to preload; "
                 "flags given on the command line override it")
      ->each([&config](const std::string& path) { config.config_file = path; });
  app.config_formatter(std::make_shared<YamlJsonConfig>(&app, &config.preload));
  app.add_option("--listen", config.listen,
                 "address to serve on (HOST:PORT; port 0 picks a free one)")
      ->capture_default_str();
  app.add_option("--state-dir", config.state_dir,
                 "directory for results and default data roots (default: "
                 "$XDG_STATE_HOME/dflash-evald or ~/.local/state/dflash-evald)");
  app.add_option("--log-level", config.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.add_option("--log-format", config.log_format,
                 "text, or json: one object per line (time, level, message, request_id, "
                 "peer, job_id, ...)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  app.add_option("--device", config.device,
                 "auto, cpu, cuda or cuda:N; a comma-separated list (cpu,cpu or cuda:0,cuda:1) "
                 "runs each evaluation's shards on every entry")
      ->capture_default_str();
  app.add_option("--threads", config.threads,
                 "intra-op threads for tensor work, and the size of OpenBLAS's pool "
                 "(default: the cores available)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--workers", config.workers, "threads serving long RPCs (loads, evaluations)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--max-queued", config.max_queued,
                 "evaluation jobs waiting at most; SubmitEval past it is RESOURCE_EXHAUSTED")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--concurrent-jobs", config.concurrent_jobs,
                 "evaluation jobs running at once on the device")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--data-root", config.data_roots,
                 "directory the server may read models and datasets from (repeatable; default: "
                 "STATE_DIR/models and STATE_DIR/datasets)");
  app.add_option("--port-file", config.port_file,
                 "write the bound port here once every listener (gRPC, metrics, web view) is "
                 "up (useful with --listen HOST:0)");
}

// The other endpoints (metrics, web view) and who may call: tokens, TLS.
void AddAccessOptions(CLI::App& app, ServerConfig& config) {
  app.add_option("--metrics-listen", config.metrics_listen,
                 "serve Prometheus metrics on http://HOST:PORT/metrics (default: off)");
  app.add_option("--http-listen", config.http_listen,
                 "serve the read-only web view (runs, jobs, comparisons, resident objects; "
                 "docs/web.md) on http://HOST:PORT/ (default: off; beyond loopback only with "
                 "--auth-token-file or --insecure-allow-remote)");
  app.add_option("--http-port-file", config.http_port_file,
                 "write the web view's bound port here (useful with --http-listen HOST:0)");
  app.add_option("--auth-token-file", config.auth_token_file,
                 "require `authorization: Bearer TOKEN` on every DrafterEval call; the file "
                 "holds one token per line, 'ro:TOKEN' for a read-only token (health and "
                 "reflection stay open)");
  app.add_option("--tls-cert", config.tls_cert, "PEM certificate chain: serve over TLS");
  app.add_option("--tls-key", config.tls_key, "PEM private key for --tls-cert");
  app.add_option("--tls-client-ca", config.tls_client_ca,
                 "PEM CA bundle: require client certificates signed by it (mutual TLS)");
  app.add_flag("--insecure-allow-remote", config.insecure_allow_remote,
               "allow listening on a non-loopback address without --auth-token-file or "
               "--tls-client-ca");
}

// Limits on requests, resident memory and evaluations, and how resident
// tensors are read.
void AddLimitOptions(CLI::App& app, ServerConfig& config) {
  app.add_option("--max-request-bytes", config.max_request_bytes,
                 "largest request message accepted; larger is RESOURCE_EXHAUSTED")
      ->check(CLI::Range(int64_t{1024}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-resident-bytes", config.max_resident_bytes,
                 "memory budget for resident targets, drafters and datasets; a load that "
                 "would pass it is RESOURCE_EXHAUSTED before it reads (0: 90% of the "
                 "device's memory)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--no-mmap", config.no_mmap,
               "resident tensors always own a copy; by default a tensor stored in its resident "
               "dtype is a view of its file's mapping (loads at page-cache speed)");
  app.add_option("--mmap-min-age-seconds", config.mmap_min_age_seconds,
                 "a file modified more recently than this is copied, not mapped: its writer may "
                 "not be done with it (write checkpoints to a temporary name and rename them)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--max-eval-blocks", config.max_eval_blocks,
                 "most blocks one evaluation may score; more is RESOURCE_EXHAUSTED before "
                 "any is scored (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--logits-budget-bytes", config.logits_budget_bytes,
                 "bytes the logits of one vocabulary-projection chunk may take during an "
                 "evaluation (rows x vocabulary, split further when one row does not fit)")
      ->check(CLI::Range(int64_t{1} << 16, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--min-target-consistency", config.min_target_consistency,
                 "evaluations that need the target's distribution (sampled acceptance) are "
                 "FAILED_PRECONDITION when argmax(lm_head(norm(final hidden))) matches fewer "
                 "of the dataset's next tokens than this fraction")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--max-concurrent-streams", config.max_concurrent_streams,
                 "WatchEval streams open at once; past it RESOURCE_EXHAUSTED (the client "
                 "then polls) (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

}  // namespace

void AddServerOptions(CLI::App& app, ServerConfig& config) {
  AddProcessOptions(app, config);
  AddAccessOptions(app, config);
  AddLimitOptions(app, config);
  AddStoreOptions(app, config);
}

}  // namespace dflash::app
