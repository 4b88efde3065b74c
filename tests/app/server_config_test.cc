// The server's settings: YAML and JSON files, flags over the file, and the
// errors a mistyped file gets.
#include "app/server_config.h"

#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/temp_dir.h"

namespace dflash::app {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class ServerConfigTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_.Join(name);
    std::ofstream(path) << text;
    return path;
  }
  // Parses `args` (after the program name) into a fresh config_; `extra`
  // adds options first, as other code adding flags to the server would.
  void Parse(std::vector<std::string> args, std::function<void(CLI::App&)> extra = nullptr) {
    config_ = ServerConfig();
    app_ = std::make_unique<CLI::App>("test");
    if (extra) extra(*app_);
    AddServerOptions(*app_, config_);
    std::vector<const char*> argv = {"dflash-evald"};
    for (const auto& a : args) argv.push_back(a.c_str());
    app_->parse(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
  }
  std::string ParseError(std::vector<std::string> args) {
    try {
      Parse(std::move(args));
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "(no error)";
  }

  testing::TempDir dir_;
  std::unique_ptr<CLI::App> app_;
  ServerConfig config_;
};

constexpr char kYaml[] = R"(# a production config
listen: 0.0.0.0:6000
state_dir: /var/lib/x
log_format: json
log-level: debug
device: cpu
threads: 3
workers: 2
data_roots: [/srv/models, /srv/datasets]
metrics_listen: 127.0.0.1:9464
preload:
  targets:
    - name: qwen
      path: /srv/models/qwen
      dtype: bf16
      load_final_norm: true
  datasets:
    - name: gsm8k
      path: /srv/datasets/gsm8k
      layer_ids: [1, 9, 17]
      max_samples: 64
      skip_bad_samples: yes
    - path: /srv/datasets/other
      layer_ids: {aux_hidden_state: [2, 4]}
  drafters:
    - name: b16
      path: /srv/models/b16
      allow_unexpected: false
)";

TEST_F(ServerConfigTest, ReadsEveryKeyFromYaml) {
  Parse({"--config", Write("c.yaml", kYaml)});
  EXPECT_EQ(config_.config_file, dir_.Join("c.yaml"));
  EXPECT_EQ(config_.listen, "0.0.0.0:6000");
  EXPECT_EQ(config_.state_dir, "/var/lib/x");
  EXPECT_EQ(config_.log_format, "json");
  EXPECT_EQ(config_.log_level, "debug");
  EXPECT_EQ(config_.device, "cpu");
  EXPECT_EQ(config_.threads, 3);
  EXPECT_EQ(config_.workers, 2);
  EXPECT_THAT(config_.data_roots, ElementsAre("/srv/models", "/srv/datasets"));
  EXPECT_EQ(config_.metrics_listen, "127.0.0.1:9464");
  ASSERT_EQ(config_.preload.targets.size(), 1u);
  EXPECT_EQ(config_.preload.targets[0].name, "qwen");
  EXPECT_EQ(config_.preload.targets[0].path, "/srv/models/qwen");
  EXPECT_EQ(config_.preload.targets[0].dtype, "bf16");
  EXPECT_TRUE(config_.preload.targets[0].load_final_norm);
  ASSERT_EQ(config_.preload.datasets.size(), 2u);
  EXPECT_THAT(config_.preload.datasets[0].layer_ids,
              ElementsAre(Pair("hidden_states", ElementsAre(1, 9, 17))));
  EXPECT_EQ(config_.preload.datasets[0].max_samples, 64);
  EXPECT_TRUE(config_.preload.datasets[0].skip_bad_samples);
  EXPECT_EQ(config_.preload.datasets[1].name, "");
  EXPECT_THAT(config_.preload.datasets[1].layer_ids,
              ElementsAre(Pair("aux_hidden_state", ElementsAre(2, 4))));
  ASSERT_EQ(config_.preload.drafters.size(), 1u);
  EXPECT_EQ(config_.preload.drafters[0].name, "b16");
  EXPECT_FALSE(config_.preload.drafters[0].allow_unexpected);
}

TEST_F(ServerConfigTest, ReadsJson) {
  Parse({"--config", Write("c.json", R"({
    "listen": "127.0.0.1:7000", "threads": 5, "data_roots": ["/a"],
    "preload": {"targets": [{"name": "t", "path": "/a/t", "load_final_norm": true}]}
  })")});
  EXPECT_EQ(config_.listen, "127.0.0.1:7000");
  EXPECT_EQ(config_.threads, 5);
  EXPECT_THAT(config_.data_roots, ElementsAre("/a"));
  ASSERT_EQ(config_.preload.targets.size(), 1u);
  EXPECT_TRUE(config_.preload.targets[0].load_final_norm);
}

TEST_F(ServerConfigTest, FlagsGivenOverrideTheFileOthersKeepIt) {
  Parse({"--config", Write("c.yaml", kYaml), "--listen", "127.0.0.1:1", "--data-root", "/x"});
  EXPECT_EQ(config_.listen, "127.0.0.1:1");            // flag wins
  EXPECT_THAT(config_.data_roots, ElementsAre("/x"));  // a list is replaced, not merged
  EXPECT_EQ(config_.workers, 2);                       // from the file
  EXPECT_EQ(config_.state_dir, "/var/lib/x");
}

TEST_F(ServerConfigTest, DefaultsWithoutAFile) {
  Parse({});
  EXPECT_EQ(config_.listen, "127.0.0.1:50051");
  EXPECT_EQ(config_.log_format, "text");
  EXPECT_EQ(config_.workers, 4);
  EXPECT_TRUE(config_.preload.empty());
  EXPECT_EQ(config_.metrics_listen, "");
  EXPECT_FALSE(config_.no_mmap);
  EXPECT_EQ(config_.mmap_min_age_seconds, 10);
}

TEST_F(ServerConfigTest, UnknownTopLevelKeyIsNamed) {
  EXPECT_EQ(ParseError({"--config", Write("c.yaml", "listne: 127.0.0.1:1\n")}),
            "unknown key 'listne' in the config file (nearest: 'listen', 'store', 'device'; "
            "known: auth_token_file, concurrent_jobs, data_roots, device, "
            "fleet_heartbeat_seconds, fleet_lease_seconds, fleet_max_attempts, fleet_name, "
            "http_listen, http_port_file, insecure_allow_remote, listen, log_format, log_level, "
            "logits_budget_bytes, "
            "max_concurrent_streams, max_eval_blocks, max_queued, max_request_bytes, "
            "max_resident_bytes, metrics_listen, min_target_consistency, mmap_min_age_seconds, "
            "no_mmap, port_file, preload, "
            "state_dir, store, store_password_file, suites, threads, tls_cert, tls_client_ca, "
            "tls_key, workers)");
}

TEST_F(ServerConfigTest, SecurityKeysComeFromTheFile) {
  ASSERT_EQ(ParseError({"--config", Write("s.yaml",
                                          "auth_token_file: /etc/t\n"
                                          "tls_cert: /c.pem\ntls_key: /k.pem\n"
                                          "tls_client_ca: /ca.pem\n"
                                          "insecure_allow_remote: true\n"
                                          "max_request_bytes: 65536\n"
                                          "max_resident_bytes: 1000000\n"
                                          "max_eval_blocks: 5\n"
                                          "max_concurrent_streams: 3\n"
                                          "logits_budget_bytes: 1048576\n"
                                          "no_mmap: true\n"
                                          "mmap_min_age_seconds: 2.5\n")}),
            "(no error)");
  EXPECT_TRUE(config_.no_mmap);
  EXPECT_EQ(config_.mmap_min_age_seconds, 2.5);
  EXPECT_EQ(config_.auth_token_file, "/etc/t");
  EXPECT_EQ(config_.tls_cert, "/c.pem");
  EXPECT_EQ(config_.tls_key, "/k.pem");
  EXPECT_EQ(config_.tls_client_ca, "/ca.pem");
  EXPECT_TRUE(config_.insecure_allow_remote);
  EXPECT_EQ(config_.max_request_bytes, 65536);
  EXPECT_EQ(config_.max_resident_bytes, 1000000);
  EXPECT_EQ(config_.max_eval_blocks, 5);
  EXPECT_EQ(config_.max_concurrent_streams, 3);
  EXPECT_EQ(config_.logits_budget_bytes, 1048576);
}

TEST_F(ServerConfigTest, UnknownPreloadKeyIsNamedWithItsPlace) {
  const std::string err = ParseError(
      {"--config", Write("c.yaml", "preload:\n  drafters:\n    - {name: a, pth: /x}\n")});
  EXPECT_THAT(err, HasSubstr("unknown key 'preload.drafters[0].pth' in the config file"));
  EXPECT_THAT(err, HasSubstr("nearest: 'path'"));
  EXPECT_THAT(ParseError({"--config", Write("d.yaml", "preload:\n  models: []\n")}),
              HasSubstr("unknown key 'preload.models' in the config file"));
}

TEST_F(ServerConfigTest, UnknownKeyInJsonToo) {
  EXPECT_THAT(ParseError({"--config", Write("c.json", R"({"wokers": 3})")}),
              HasSubstr("unknown key 'wokers' in the config file (nearest: 'workers'"));
}

TEST_F(ServerConfigTest, WrongShapesAndValues) {
  EXPECT_THAT(ParseError({"--config", Write("a.yaml", "preload:\n  targets:\n    - {name: t}\n")}),
              HasSubstr("config key 'preload.targets[0]' needs a 'path'"));
  EXPECT_THAT(ParseError({"--config", Write("b.yaml", "listen: {a: 1}\n")}),
              HasSubstr("config key 'listen' must be a single value"));
  EXPECT_THAT(
      ParseError({"--config",
                  Write("c.yaml", "preload:\n  datasets:\n    - {path: /d, max_samples: x}\n")}),
      HasSubstr("config key 'preload.datasets[0].max_samples' must be an integer; got 'x'"));
  EXPECT_THAT(ParseError({"--config", Write("d.yaml", "preload: [1]\n")}),
              HasSubstr("config key 'preload' must be a mapping"));
  // Validators run on file values as on flags.
  EXPECT_THAT(ParseError({"--config", Write("e.yaml", "log_format: xml\n")}), HasSubstr("xml"));
  EXPECT_THAT(ParseError({"--config", Write("f.yaml", "workers: 0\n")}), HasSubstr("workers"));
}

TEST_F(ServerConfigTest, SuitesNameTwoOrMoreDatasets) {
  Parse({"--config", Write("s.yaml",
                           "suites:\n  reasoning: [gsm8k, math500]\n  code: [mbpp, "
                           "humaneval]\n")});
  EXPECT_THAT(config_.preload.suites,
              ElementsAre(Pair("code", ElementsAre("mbpp", "humaneval")),
                          Pair("reasoning", ElementsAre("gsm8k", "math500"))));
  EXPECT_THAT(ParseError({"--config", Write("t.yaml", "suites:\n  one: [gsm8k]\n")}),
              HasSubstr("config key 'suites.one' must be a list of two or more dataset names"));
  EXPECT_THAT(ParseError({"--config", Write("u.yaml", "suites: [a, b]\n")}),
              HasSubstr("config key 'suites' must be a mapping of suite names to dataset lists"));
}

TEST_F(ServerConfigTest, SyntaxErrorsAndMissingFile) {
  EXPECT_THAT(ParseError({"--config", Write("a.yaml", "listen: [unclosed\n")}),
              HasSubstr("config file is not valid YAML"));
  EXPECT_THAT(ParseError({"--config", Write("b.json", "{\"listen\": }")}),
              HasSubstr("config file is not valid JSON"));
  EXPECT_THAT(ParseError({"--config", dir_.Join("missing.yaml")}), HasSubstr("missing.yaml"));
}

TEST_F(ServerConfigTest, OptionsAddedByOtherCodeAreFileKeys) {
  int extra = 0;
  Parse({"--config", Write("c.yaml", "extra_knob: 17\n")},
        [&](CLI::App& app) { app.add_option("--extra-knob", extra); });
  EXPECT_EQ(extra, 17);
}

}  // namespace
}  // namespace dflash::app
