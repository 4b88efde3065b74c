// Subcommands for resident objects: info, health, validate, load-target,
// load-drafter, load-dataset, unload, ls.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/commands.h"
#include "client/format.h"

namespace dflash::client {
namespace {

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

void AddInfoAndHealth(CliContext& ctx) {
  CliContext* cx = &ctx;
  ctx.app.add_subcommand("info", "show the server's version, devices and resident objects")
      ->callback([cx] {
        cx->run = [cx](EvalClient& c) {
          auto info = c.GetServerInfo();
          if (!info.ok()) return ReportStatus(info.status(), cx->err);
          cx->Print(*info, FormatServerInfo(*info));
          return kExitOk;
        };
      });
  ctx.app.add_subcommand("health", "exit 0 when the server reports SERVING")->callback([cx] {
    cx->run = [cx](EvalClient& c) {
      absl::Status s = c.Health();
      if (!s.ok()) return ReportStatus(s, cx->err);
      cx->out << "SERVING\n";
      return kExitOk;
    };
  });
}

void AddValidate(CliContext& ctx) {
  struct State {
    pb::ValidateCheckpointRequest req;
    bool verbose = false;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand("validate", "check a drafter checkpoint's weight map");
  cmd->add_option("path", *st->req.mutable_path(), "checkpoint directory or file")->required();
  cmd->add_option("--config", *st->req.mutable_config_path(),
                  "config.json, when not beside the weights");
  cmd->add_flag(
      "--allow-unexpected", [st](int64_t) { st->req.set_allow_unexpected(true); },
      "do not fail on tensors the schema does not name");
  cmd->add_flag(
      "--stats", [st](int64_t) { st->req.set_compute_stats(true); },
      "per-tensor statistics (reads every tensor)");
  cmd->add_flag("--verbose,-v", st->verbose, "list every tensor, not only the problems");
  cmd->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.ValidateCheckpoint(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatReport(resp->report(), st->verbose));
      return resp->report().ok() ? kExitOk : kExitValidationFailed;
    };
  });
}

void AddLoadTarget(CliContext& ctx) {
  struct State {
    pb::LoadTargetRequest req;
    std::string dtype;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd =
      ctx.app.add_subcommand("load-target", "load a target's embed_tokens, lm_head (and norm)");
  cmd->add_option("path", *st->req.mutable_path(), "target model directory")->required();
  cmd->add_option("--name", *st->req.mutable_name(), "resident name (default: directory name)");
  cmd->add_option("--dtype", st->dtype, "fp32, bf16 or fp16")->check(CLI::IsMember(kDTypes));
  cmd->add_option("--device", *st->req.mutable_device(), "cpu or cuda:N (default: the server's)");
  cmd->add_flag(
      "--final-norm", [st](int64_t) { st->req.set_load_final_norm(true); },
      "also load the final norm");
  cmd->callback([cx, st] {
    st->req.set_dtype(ParseDType(st->dtype));
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.LoadTarget(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatLoadResponse(*resp));
      return kExitOk;
    };
  });
}

void AddLoadDrafter(CliContext& ctx) {
  struct State {
    pb::LoadDrafterRequest req;
    std::string dtype;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd = ctx.app.add_subcommand("load-drafter", "validate and load a drafter checkpoint");
  cmd->add_option("path", *st->req.mutable_path(), "checkpoint directory or file")->required();
  cmd->add_option("--name", *st->req.mutable_name(), "resident name (default: directory name)");
  cmd->add_option("--config", *st->req.mutable_config_path(),
                  "config.json, when not beside the weights");
  cmd->add_option("--dtype", st->dtype, "fp32, bf16 or fp16")->check(CLI::IsMember(kDTypes));
  cmd->add_option("--device", *st->req.mutable_device(), "cpu or cuda:N (default: the server's)");
  cmd->add_flag(
      "--allow-unexpected", [st](int64_t) { st->req.set_allow_unexpected(true); },
      "load even with tensors the schema does not name");
  cmd->callback([cx, st] {
    st->req.set_dtype(ParseDType(st->dtype));
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.LoadDrafter(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatLoadResponse(*resp) + FormatReport(resp->report(), false));
      return kExitOk;
    };
  });
}

void AddLoadDataset(CliContext& ctx) {
  struct State {
    pb::LoadDatasetRequest req;
    std::string dtype, layer_ids;
    std::vector<std::string> features;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* cmd =
      ctx.app.add_subcommand("load-dataset", "load a directory of cached hidden states");
  cmd->add_option("path", *st->req.mutable_path(), "dataset directory")->required();
  cmd->add_option("--name", *st->req.mutable_name(), "resident name (default: directory name)");
  cmd->add_option("--layer-ids", st->layer_ids,
                  "layers held by 'hidden_states', e.g. 1,16,31,46,61 (overrides dataset.json)");
  cmd->add_option("--feature", st->features,
                  "KEY=IDS for other layouts, e.g. aux_hidden_state=1,16,31,46 (repeatable)");
  cmd->add_option("--dtype", st->dtype, "fp32, bf16 or fp16 (default: as stored)")
      ->check(CLI::IsMember(kDTypes));
  cmd->add_option(
      "--max-samples",
      [st](const std::vector<std::string>& v) {
        int n = 0;
        if (!absl::SimpleAtoi(v[0], &n) || n < 0) return false;
        st->req.set_max_samples(n);
        return true;
      },
      "load at most N samples");
  cmd->add_flag(
      "--skip-bad-samples", [st](int64_t) { st->req.set_skip_bad_samples(true); },
      "skip (and report) malformed samples instead of failing");
  cmd->add_flag(
      "--stream", [st](int64_t) { st->req.set_stream(true); },
      "keep the samples on disk; evaluations read them in chunks (a dataset over the resident "
      "budget is streamed anyway)");
  cmd->add_option(
      "--stream-budget",
      [st](const std::vector<std::string>& v) {
        int64_t n = 0;
        if (!absl::SimpleAtoi(v[0], &n) || n <= 0) return false;
        st->req.set_stream_budget_bytes(n);
        return true;
      },
      "bytes a streamed dataset may hold in memory at once (default 256 MiB)");
  cmd->add_option("--target", *st->req.mutable_target(),
                  "resident target: also print the dataset's target consistency with it");
  cmd->callback([cx, st] {
    st->req.set_dtype(ParseDType(st->dtype));
    std::vector<std::pair<std::string, std::string>> specs;
    if (!st->layer_ids.empty()) specs.push_back({"hidden_states", st->layer_ids});
    for (const std::string& f : st->features) {
      const auto eq = f.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw UsageError{absl::StrCat("--feature '", f, "' is not KEY=IDS")};
      }
      specs.push_back({f.substr(0, eq), f.substr(eq + 1)});
    }
    for (const auto& [key, ids] : specs) {
      auto parsed = ParseIntList(ids, key == "hidden_states" ? "--layer-ids" : "--feature");
      if (!parsed.ok()) throw UsageError{std::string(parsed.status().message())};
      auto& entry = (*st->req.mutable_layer_ids())[key];
      for (int id : *parsed) entry.add_ids(id);
    }
    cx->run = [cx, st](EvalClient& c) {
      auto resp = c.LoadDataset(st->req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatLoadResponse(*resp));
      return kExitOk;
    };
  });
}

void AddUnloadAndLs(CliContext& ctx) {
  struct State {
    std::string unload_kind, unload_name, ls_kind;
    bool ls_fleet = false;
  };
  CliContext* cx = &ctx;
  State* st = ctx.Keep<State>();
  CLI::App* unload = ctx.app.add_subcommand("unload", "free a resident target, drafter or dataset");
  unload->add_option("kind", st->unload_kind, "target, drafter or dataset")
      ->required()
      ->check(CLI::IsMember({"target", "drafter", "dataset"}));
  unload->add_option("name", st->unload_name, "resident name")->required();
  unload->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      const pb::ResourceKind kind = st->unload_kind == "target"    ? pb::RESOURCE_KIND_TARGET
                                    : st->unload_kind == "drafter" ? pb::RESOURCE_KIND_DRAFTER
                                                                   : pb::RESOURCE_KIND_DATASET;
      auto resp = c.Unload(kind, st->unload_name);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, "unloaded " + FormatResource(resp->resource()));
      return kExitOk;
    };
  });

  CLI::App* ls = ctx.app.add_subcommand("ls", "list resident objects");
  ls->add_option("--kind", st->ls_kind, "only this kind")
      ->check(CLI::IsMember({"target", "drafter", "dataset"}));
  ls->add_flag("--fleet", st->ls_fleet,
               "also the fleet's live servers (a server on a shared PostgreSQL store)");
  ls->callback([cx, st] {
    cx->run = [cx, st](EvalClient& c) {
      pb::ListResourcesRequest req;
      if (st->ls_kind == "target") req.set_kind(pb::RESOURCE_KIND_TARGET);
      if (st->ls_kind == "drafter") req.set_kind(pb::RESOURCE_KIND_DRAFTER);
      if (st->ls_kind == "dataset") req.set_kind(pb::RESOURCE_KIND_DATASET);
      req.set_fleet(st->ls_fleet);
      auto resp = c.ListResources(req);
      if (!resp.ok()) return ReportStatus(resp.status(), cx->err);
      cx->Print(*resp, FormatResources(*resp));
      return kExitOk;
    };
  });
}

}  // namespace

void AddResourceCommands(CliContext& ctx) {
  AddInfoAndHealth(ctx);
  AddValidate(ctx);
  AddLoadTarget(ctx);
  AddLoadDrafter(ctx);
  AddLoadDataset(ctx);
  AddUnloadAndLs(ctx);
}

}  // namespace dflash::client
