#include "client/cli.h"

#include <chrono>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/eval_client.h"
#include "client/format.h"

namespace dflash::client {
namespace {

struct Globals {
  std::string server;
  bool json = false;
  double timeout_seconds = 600;
};

// A usage problem found after parsing (e.g. a missing conditional argument).
struct UsageError {
  std::string message;
};

int ReportStatus(const absl::Status& status, std::ostream& err) {
  const absl::StatusCode code = status.code();
  if (code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded) {
    err << "dflash-eval: " << status.message() << "\n";
    return kExitUnreachable;
  }
  err << "dflash-eval: " << absl::StatusCodeToString(code) << ": " << status.message() << "\n";
  return kExitRpcError;
}

absl::StatusOr<std::vector<int>> ParseIntList(const std::string& text, const std::string& flag) {
  std::vector<int> out;
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int v = 0;
    if (!absl::SimpleAtoi(piece, &v)) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": '", piece, "' is not an integer"));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": empty list"));
  return out;
}

pb::DType ParseDType(const std::string& s) {
  if (s == "fp32") return pb::DTYPE_FP32;
  if (s == "bf16") return pb::DTYPE_BF16;
  if (s == "fp16") return pb::DTYPE_FP16;
  return pb::DTYPE_UNSPECIFIED;
}

const std::vector<std::string> kDTypes = {"fp32", "bf16", "fp16"};

}  // namespace

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  Globals g;
  const char* env_server = std::getenv("DFLASH_EVAL_SERVER");
  g.server = env_server && *env_server ? env_server : "127.0.0.1:50051";

  CLI::App app{"dflash-eval: client for the dflash-evald evaluation server"};
  app.require_subcommand(1);
  app.add_option("--server", g.server, "HOST:PORT (default: $DFLASH_EVAL_SERVER or 127.0.0.1:50051)");
  app.add_flag("--json", g.json, "print the reply as JSON (proto JSON mapping)");
  app.add_option("--timeout", g.timeout_seconds, "seconds to wait for a reply (0 = no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  // Each command fills `run`, which talks to the server once parsing is done.
  std::function<int(EvalClient&)> run;
  auto print = [&](const google::protobuf::Message& m, const std::string& human) {
    out << (g.json ? ToJson(m) : human);
  };

  // info
  app.add_subcommand("info", "show the server's version, devices and resident objects")
      ->callback([&] {
        run = [&](EvalClient& c) {
          auto info = c.GetServerInfo();
          if (!info.ok()) return ReportStatus(info.status(), err);
          print(*info, FormatServerInfo(*info));
          return kExitOk;
        };
      });

  // health
  app.add_subcommand("health", "exit 0 when the server reports SERVING")->callback([&] {
    run = [&](EvalClient& c) {
      absl::Status s = c.Health();
      if (!s.ok()) return ReportStatus(s, err);
      out << "SERVING\n";
      return kExitOk;
    };
  });

  // validate PATH
  pb::ValidateCheckpointRequest validate_req;
  bool verbose = false;
  {
    CLI::App* cmd = app.add_subcommand("validate", "check a drafter checkpoint's weight map");
    cmd->add_option("path", *validate_req.mutable_path(), "checkpoint directory or file")->required();
    cmd->add_option("--config", *validate_req.mutable_config_path(), "config.json, when not beside the weights");
    cmd->add_flag("--allow-unexpected", [&](int64_t) { validate_req.set_allow_unexpected(true); },
                  "do not fail on tensors the schema does not name");
    cmd->add_flag("--stats", [&](int64_t) { validate_req.set_compute_stats(true); },
                  "per-tensor statistics (reads every tensor)");
    cmd->add_flag("--verbose,-v", verbose, "list every tensor, not only the problems");
    cmd->callback([&] {
      run = [&](EvalClient& c) {
        auto resp = c.ValidateCheckpoint(validate_req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatReport(resp->report(), verbose));
        return resp->report().ok() ? kExitOk : kExitValidationFailed;
      };
    });
  }

  // load-target PATH
  pb::LoadTargetRequest target_req;
  std::string target_dtype;
  {
    CLI::App* cmd = app.add_subcommand("load-target", "load a target's embed_tokens, lm_head (and norm)");
    cmd->add_option("path", *target_req.mutable_path(), "target model directory")->required();
    cmd->add_option("--name", *target_req.mutable_name(), "resident name (default: directory name)");
    cmd->add_option("--dtype", target_dtype, "fp32, bf16 or fp16")->check(CLI::IsMember(kDTypes));
    cmd->add_option("--device", *target_req.mutable_device(), "cpu or cuda:N (default: the server's)");
    cmd->add_flag("--final-norm", [&](int64_t) { target_req.set_load_final_norm(true); },
                  "also load the final norm");
    cmd->callback([&] {
      target_req.set_dtype(ParseDType(target_dtype));
      run = [&](EvalClient& c) {
        auto resp = c.LoadTarget(target_req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatLoadResponse(*resp));
        return kExitOk;
      };
    });
  }

  // load-drafter PATH
  pb::LoadDrafterRequest drafter_req;
  std::string drafter_dtype;
  {
    CLI::App* cmd = app.add_subcommand("load-drafter", "validate and load a drafter checkpoint");
    cmd->add_option("path", *drafter_req.mutable_path(), "checkpoint directory or file")->required();
    cmd->add_option("--name", *drafter_req.mutable_name(), "resident name (default: directory name)");
    cmd->add_option("--config", *drafter_req.mutable_config_path(), "config.json, when not beside the weights");
    cmd->add_option("--dtype", drafter_dtype, "fp32, bf16 or fp16")->check(CLI::IsMember(kDTypes));
    cmd->add_option("--device", *drafter_req.mutable_device(), "cpu or cuda:N (default: the server's)");
    cmd->add_flag("--allow-unexpected", [&](int64_t) { drafter_req.set_allow_unexpected(true); },
                  "load even with tensors the schema does not name");
    cmd->callback([&] {
      drafter_req.set_dtype(ParseDType(drafter_dtype));
      run = [&](EvalClient& c) {
        auto resp = c.LoadDrafter(drafter_req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatLoadResponse(*resp) + FormatReport(resp->report(), false));
        return kExitOk;
      };
    });
  }

  // load-dataset PATH
  pb::LoadDatasetRequest dataset_req;
  std::string dataset_dtype, layer_ids;
  std::vector<std::string> features;
  {
    CLI::App* cmd = app.add_subcommand("load-dataset", "load a directory of cached hidden states");
    cmd->add_option("path", *dataset_req.mutable_path(), "dataset directory")->required();
    cmd->add_option("--name", *dataset_req.mutable_name(), "resident name (default: directory name)");
    cmd->add_option("--layer-ids", layer_ids,
                    "layers held by 'hidden_states', e.g. 1,16,31,46,61 (overrides dataset.json)");
    cmd->add_option("--feature", features,
                    "KEY=IDS for other layouts, e.g. aux_hidden_state=1,16,31,46 (repeatable)");
    cmd->add_option("--dtype", dataset_dtype, "fp32, bf16 or fp16 (default: as stored)")
        ->check(CLI::IsMember(kDTypes));
    cmd->add_option("--max-samples", [&](const std::vector<std::string>& v) {
      int n = 0;
      if (!absl::SimpleAtoi(v[0], &n) || n < 0) return false;
      dataset_req.set_max_samples(n);
      return true;
    }, "load at most N samples");
    cmd->add_flag("--skip-bad-samples", [&](int64_t) { dataset_req.set_skip_bad_samples(true); },
                  "skip (and report) malformed samples instead of failing");
    cmd->callback([&] {
      dataset_req.set_dtype(ParseDType(dataset_dtype));
      std::vector<std::pair<std::string, std::string>> specs;
      if (!layer_ids.empty()) specs.push_back({"hidden_states", layer_ids});
      for (const std::string& f : features) {
        const auto eq = f.find('=');
        if (eq == std::string::npos || eq == 0) {
          throw UsageError{absl::StrCat("--feature '", f, "' is not KEY=IDS")};
        }
        specs.push_back({f.substr(0, eq), f.substr(eq + 1)});
      }
      for (const auto& [key, ids] : specs) {
        auto parsed = ParseIntList(ids, key == "hidden_states" ? "--layer-ids" : "--feature");
        if (!parsed.ok()) throw UsageError{std::string(parsed.status().message())};
        auto& entry = (*dataset_req.mutable_layer_ids())[key];
        for (int id : *parsed) entry.add_ids(id);
      }
      run = [&](EvalClient& c) {
        auto resp = c.LoadDataset(dataset_req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatLoadResponse(*resp));
        return kExitOk;
      };
    });
  }

  // unload KIND NAME
  std::string unload_kind, unload_name;
  {
    CLI::App* cmd = app.add_subcommand("unload", "free a resident target, drafter or dataset");
    cmd->add_option("kind", unload_kind, "target, drafter or dataset")
        ->required()
        ->check(CLI::IsMember({"target", "drafter", "dataset"}));
    cmd->add_option("name", unload_name, "resident name")->required();
    cmd->callback([&] {
      run = [&](EvalClient& c) {
        const pb::ResourceKind kind = unload_kind == "target"    ? pb::RESOURCE_KIND_TARGET
                                      : unload_kind == "drafter" ? pb::RESOURCE_KIND_DRAFTER
                                                                 : pb::RESOURCE_KIND_DATASET;
        auto resp = c.Unload(kind, unload_name);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, "unloaded " + FormatResource(resp->resource()));
        return kExitOk;
      };
    });
  }

  // ls
  std::string ls_kind;
  {
    CLI::App* cmd = app.add_subcommand("ls", "list resident objects");
    cmd->add_option("--kind", ls_kind, "only this kind")
        ->check(CLI::IsMember({"target", "drafter", "dataset"}));
    cmd->callback([&] {
      run = [&](EvalClient& c) {
        pb::ListResourcesRequest req;
        if (ls_kind == "target") req.set_kind(pb::RESOURCE_KIND_TARGET);
        if (ls_kind == "drafter") req.set_kind(pb::RESOURCE_KIND_DRAFTER);
        if (ls_kind == "dataset") req.set_kind(pb::RESOURCE_KIND_DATASET);
        auto resp = c.ListResources(req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatResources(*resp));
        return kExitOk;
      };
    });
  }

  // eval
  pb::EvalRequest eval_req;
  std::string eval_mode = "anchor", eval_anchors = "even";
  int64_t max_samples = 0, max_blocks = 0, block_size = 0, max_new_tokens = 0;
  uint64_t seed = 0;
  {
    CLI::App* cmd = app.add_subcommand("eval", "evaluate a drafter on a resident dataset");
    cmd->add_option("--drafter", *eval_req.mutable_drafter(), "resident drafter name");
    cmd->add_option("--checkpoint", *eval_req.mutable_checkpoint_path(),
                    "checkpoint path to load for this evaluation (instead of --drafter)");
    cmd->add_option("--dataset", *eval_req.mutable_dataset(), "resident dataset name");
    cmd->add_option("--target", *eval_req.mutable_target(), "resident target (default: the only one)");
    cmd->add_option("--mode", eval_mode, "anchor or replay")
        ->check(CLI::IsMember({"anchor", "replay"}))
        ->capture_default_str();
    cmd->add_option("--anchors", eval_anchors, "anchor mode: even, random or all")
        ->check(CLI::IsMember({"even", "random", "all"}))
        ->capture_default_str();
    cmd->add_option("--max-samples", max_samples, "0 = all")->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-blocks", max_blocks, "per sample; 0 = no limit")->check(CLI::NonNegativeNumber);
    cmd->add_option("--seed", seed, "seed for --anchors random");
    cmd->add_option("--block-size", block_size, "0 = the drafter's")->check(CLI::NonNegativeNumber);
    cmd->add_option("--max-new-tokens", max_new_tokens, "replay: 0 = no limit")->check(CLI::NonNegativeNumber);
    cmd->callback([&] {
      // Conditional arguments are checked here, after parsing, with the
      // missing piece named (the original harness got this wrong).
      const bool has_drafter = !eval_req.drafter().empty();
      const bool has_ckpt = !eval_req.checkpoint_path().empty();
      if (has_drafter == has_ckpt) {
        throw UsageError{has_drafter
                             ? "eval: give --drafter NAME or --checkpoint PATH, not both"
                             : "eval: missing the drafter: give --drafter NAME (resident) or "
                               "--checkpoint PATH"};
      }
      if (eval_req.dataset().empty()) {
        throw UsageError{"eval: missing --dataset NAME (see 'dflash-eval ls --kind dataset')"};
      }
      eval_req.set_mode(eval_mode == "replay" ? pb::EVAL_MODE_REPLAY : pb::EVAL_MODE_ANCHOR);
      eval_req.set_anchors(eval_anchors == "random" ? pb::ANCHOR_STRATEGY_RANDOM
                           : eval_anchors == "all"  ? pb::ANCHOR_STRATEGY_ALL
                                                    : pb::ANCHOR_STRATEGY_EVEN);
      eval_req.set_max_samples(static_cast<int32_t>(max_samples));
      eval_req.set_max_blocks(static_cast<int32_t>(max_blocks));
      eval_req.set_seed(seed);
      eval_req.set_block_size(static_cast<int32_t>(block_size));
      eval_req.set_max_new_tokens(static_cast<int32_t>(max_new_tokens));
      run = [&](EvalClient& c) {
        pb::RunEvalRequest req;
        *req.mutable_request() = eval_req;
        auto resp = c.RunEval(req);
        if (!resp.ok()) return ReportStatus(resp.status(), err);
        print(*resp, FormatEvalResult(*resp));
        return kExitOk;
      };
    });
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return app.exit(e, out, err);
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return kExitUsage;
  } catch (const UsageError& e) {
    err << "dflash-eval: " << e.message << "\nRun with --help for more information.\n";
    return kExitUsage;
  }
  if (!run) {
    err << app.help();
    return kExitUsage;
  }
  EvalClient client(g.server, std::chrono::milliseconds(
                                  static_cast<int64_t>(g.timeout_seconds * 1000)));
  return run(client);
}

}  // namespace dflash::client
