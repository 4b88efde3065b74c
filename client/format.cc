#include "client/format.h"

#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/time_util.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format_decision.h"
#include "client/format_fields.h"
#include "client/format_jobs.h"
#include "client/format_slices.h"
#include "client/text_bar.h"

namespace dflash::client {
namespace {

const char* KindLabel(pb::ResourceKind kind) {
  switch (kind) {
    case pb::RESOURCE_KIND_TARGET: return "target";
    case pb::RESOURCE_KIND_DRAFTER: return "drafter";
    case pb::RESOURCE_KIND_DATASET: return "dataset";
    default: return "?";
  }
}

std::string ShapeString(const google::protobuf::RepeatedField<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

const char* EntryStatusLabel(pb::TensorEntry::Status s) {
  switch (s) {
    case pb::TensorEntry::STATUS_FOUND: return "found";
    case pb::TensorEntry::STATUS_MISSING: return "MISSING";
    case pb::TensorEntry::STATUS_SHAPE_MISMATCH: return "SHAPE";
    case pb::TensorEntry::STATUS_DTYPE_MISMATCH: return "DTYPE";
    case pb::TensorEntry::STATUS_UNEXPECTED: return "UNEXPECTED";
    case pb::TensorEntry::STATUS_IGNORED: return "ignored";
    case pb::TensorEntry::STATUS_OPTIONAL_ABSENT: return "absent (optional)";
    default: return "?";
  }
}

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) {
    return "{}\n";
  }
  return out;
}

std::string HumanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? absl::StrCat(bytes, " B") : absl::StrFormat("%.1f %s", v, units[u]);
}

std::string HumanSeconds(double s) {
  if (s < 60) return absl::StrFormat("%.1fs", s);
  const int64_t t = static_cast<int64_t>(s);
  if (t < 3600) return absl::StrFormat("%dm %ds", t / 60, t % 60);
  if (t < 86400) return absl::StrFormat("%dh %dm", t / 3600, (t % 3600) / 60);
  return absl::StrFormat("%dd %dh", t / 86400, (t % 86400) / 3600);
}

std::string DTypeLabel(pb::DType dtype) {
  switch (dtype) {
    case pb::DTYPE_FP32: return "fp32";
    case pb::DTYPE_FP16: return "fp16";
    case pb::DTYPE_BF16: return "bf16";
    default: return "(default)";
  }
}

std::string FormatServerInfo(const pb::ServerInfo& info) {
  std::string out;
  auto row = [&out](absl::string_view key, absl::string_view value) {
    absl::StrAppend(&out, absl::StrFormat("  %-18s %s\n", key, value));
  };
  out = "dflash-evald\n";
  row("version", absl::StrCat(info.server_version(), " (", info.git_sha(), ")"));
  row("libtorch", info.libtorch_version());
  row("cuda", info.cuda_available() ? "available" : "not available");
  row("default device", info.default_device());
  if (info.eval_devices_size() > 1) {
    row("eval devices", absl::StrCat(absl::StrJoin(info.eval_devices(), ", "),
                                     " (an evaluation's shards run on each)"));
  }
  row("default dtype", DTypeLabel(info.default_dtype()));
  row("intra-op threads", absl::StrCat(info.intra_op_threads()));
  row("blas", info.blas());
  row("started", google::protobuf::util::TimeUtil::ToString(info.start_time()));
  row("uptime", HumanSeconds(info.uptime_seconds()));
  row("resident", absl::StrCat(info.resident_targets(), " target(s), ", info.resident_drafters(),
                               " drafter(s), ", info.resident_datasets(), " dataset(s)"));
  row("jobs", absl::StrCat(info.queued_jobs(), " queued, ", info.running_jobs(), " running"));
  row("state dir", info.state_dir());
  row("data roots", absl::StrJoin(info.data_roots(), ", "));
  absl::StrAppend(&out, "devices\n");
  absl::StrAppend(
      &out, absl::StrFormat("  %-8s %-36s %12s %12s\n", "name", "description", "total", "used"));
  for (const pb::DeviceInfo& d : info.devices()) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-8s %-36s %12s %12s\n", d.name(), d.description(),
                              d.total_memory_bytes() > 0 ? HumanBytes(d.total_memory_bytes()) : "?",
                              HumanBytes(d.used_memory_bytes())));
    if (d.allocator_reserved_bytes() > 0 || d.allocator_peak_reserved_bytes() > 0) {
      // The CUDA caching allocator: what tensors hold, what it took from the driver.
      absl::StrAppend(&out,
                      absl::StrFormat("           allocator: %s allocated (peak %s), %s reserved "
                                      "(peak %s), %d retries, %d OOMs\n",
                                      HumanBytes(d.allocator_allocated_bytes()),
                                      HumanBytes(d.allocator_peak_allocated_bytes()),
                                      HumanBytes(d.allocator_reserved_bytes()),
                                      HumanBytes(d.allocator_peak_reserved_bytes()),
                                      d.allocator_alloc_retries(), d.allocator_ooms()));
    }
  }
  if (!info.fleet().empty()) absl::StrAppend(&out, FormatFleet(info.fleet()));
  return out;
}

std::string FormatResource(const pb::Resource& r) {
  // Mapped bytes are views of the object's files, not copies (--no-mmap: none).
  const std::string mapped =
      r.mapped_bytes() > 0 ? absl::StrCat(" (", HumanBytes(r.mapped_bytes()), " mapped)") : "";
  return absl::StrFormat("%-8s %-20s %-7s %-5s %10s  %s%s\n", KindLabel(r.kind()), r.name(),
                         r.device(), DTypeLabel(r.dtype()), HumanBytes(r.bytes()), r.summary(),
                         mapped);
}

std::string FormatFleet(const google::protobuf::RepeatedPtrField<pb::FleetServer>& fleet) {
  std::string out = absl::StrFormat("fleet: %d live server(s)\n", fleet.size());
  for (const pb::FleetServer& s : fleet) {
    absl::StrAppend(
        &out, absl::StrFormat("  %s  %s (%s), %s of %s used, heartbeat %.1f s ago\n", s.name(),
                              s.device(), s.device_description(), HumanBytes(s.used_memory_bytes()),
                              s.total_memory_bytes() > 0 ? HumanBytes(s.total_memory_bytes()) : "?",
                              s.heartbeat_age_seconds()));
    absl::StrAppend(&out, "    resident: targets [", absl::StrJoin(s.targets(), ", "),
                    "], datasets [", absl::StrJoin(s.datasets(), ", "), "], drafters [",
                    absl::StrJoin(s.drafters(), ", "), "]\n");
    absl::StrAppend(&out, "    running: ",
                    s.running_jobs().empty() ? "nothing" : absl::StrJoin(s.running_jobs(), ", "),
                    "\n");
  }
  return out;
}

std::string FormatResources(const pb::ListResourcesResponse& list) {
  if (!list.fleet().empty()) {
    return FormatResourceTable(list) + FormatFleet(list.fleet());
  }
  return FormatResourceTable(list);
}

std::string FormatResourceTable(const pb::ListResourcesResponse& list) {
  if (list.resources().empty()) return "nothing resident\n";
  std::string out = absl::StrFormat("%-8s %-20s %-7s %-5s %10s  %s\n", "KIND", "NAME", "DEVICE",
                                    "DTYPE", "BYTES", "SUMMARY");
  for (const pb::Resource& r : list.resources()) absl::StrAppend(&out, FormatResource(r));
  return out;
}

std::string FormatReport(const pb::WeightReport& report, bool verbose) {
  std::string out = absl::StrCat(report.ok() ? "OK  " : "FAILED  ", report.path(), "\n");
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "  format %s, config %s\n  %d found, %d missing, %d shape mismatch(es), %d unexpected, "
          "%d ignored; %s of tensors\n",
          report.format(), report.config_path(), report.found(), report.missing(),
          report.shape_mismatches(), report.unexpected(), report.ignored(),
          HumanBytes(report.tensor_bytes())));
  if (!report.stripped_prefix().empty()) {
    absl::StrAppend(&out, "  stripped wrapper prefix '", report.stripped_prefix(), "'\n");
  }
  if (!report.problems().empty()) {
    absl::StrAppend(&out, "problems\n");
    for (const std::string& p : report.problems()) absl::StrAppend(&out, "  - ", p, "\n");
  }
  if (!report.facts().empty()) {
    absl::StrAppend(&out, "facts\n");
    for (const std::string& f : report.facts()) absl::StrAppend(&out, "  - ", f, "\n");
  }
  if (!report.skipped_entries().empty()) {
    absl::StrAppend(&out, "skipped (not tensors)\n");
    for (const std::string& s : report.skipped_entries()) absl::StrAppend(&out, "  - ", s, "\n");
  }
  bool header = false;
  for (const pb::TensorEntry& t : report.tensors()) {
    if (!verbose && t.status() == pb::TensorEntry::STATUS_FOUND) continue;
    if (!header) {
      absl::StrAppend(&out, "tensors\n");
      header = true;
    }
    std::string line = absl::StrFormat("  %-18s %-48s %-5s %s", EntryStatusLabel(t.status()),
                                       t.name(), t.dtype(), ShapeString(t.shape()));
    if (t.status() == pb::TensorEntry::STATUS_SHAPE_MISMATCH ||
        t.status() == pb::TensorEntry::STATUS_MISSING) {
      absl::StrAppend(&line, " expected ", ShapeString(t.expected_shape()));
    }
    if (!t.reason().empty()) absl::StrAppend(&line, "  (", t.reason(), ")");
    absl::StrAppend(&out, line, "\n");
  }
  if (!report.fingerprint().empty())
    absl::StrAppend(&out, "fingerprint ", report.fingerprint(), "\n");
  return out;
}

std::string FormatLoadResponse(const pb::LoadResponse& resp) {
  std::string out =
      absl::StrCat(resp.reused() ? "reused " : "loaded ", FormatResource(resp.resource()));
  for (const std::string& f : resp.facts()) absl::StrAppend(&out, "  - ", f, "\n");
  for (const std::string& w : resp.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
  if (!resp.consistency_target().empty()) {
    absl::StrAppend(&out,
                    FormatTargetConsistency(resp.target_consistency(), resp.consistency_target()));
  }
  return out;
}

namespace {

// A position no block reached has no rate: never shown as 0.
std::string Unavailable(const pb::PositionMetrics& p) {
  return absl::StrFormat("  %4d %9d unavailable (no block reached this position)\n", p.position(),
                         p.counted());
}

// The result's first lines: mode, counts, draft vocabulary, semantics, and
// the accept length and tau.
std::string FormatResultHeader(const pb::EvalResult& r) {
  std::string out;
  const char* mode = r.mode() == pb::EVAL_MODE_REPLAY ? "replay" : "anchor";
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "%s mode, block size %d: %d sample(s), %d block(s), %d token(s) scored on %s/%s\n", mode,
          r.block_size(), r.samples(), r.blocks(), r.tokens_scored(), r.device(), r.dtype()));
  if (r.draft_vocab_size() > 0) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "draft vocabulary %d tokens (d2t): %d of %d scored labels (%.1f%%) "
            "inside it; the rest can never be drafted\n",
            r.draft_vocab_size(), r.labels_in_draft_vocab(), r.tokens_scored(),
            r.tokens_scored() > 0 ? 100.0 * r.labels_in_draft_vocab() / r.tokens_scored() : 0.0));
  }
  if (!r.semantics().empty()) {
    absl::StrAppend(&out, absl::StrFormat("%s drafter, semantics %s (%s)\n",
                                          r.family().empty() ? "DFlash 1" : r.family(),
                                          r.semantics(), r.semantics_reference()));
  }
  const bool capped = r.semantics() == "zlab-current" && r.mode() == pb::EVAL_MODE_REPLAY;
  absl::StrAppend(
      &out, absl::StrFormat(
                "accept length (pooled over blocks) %.3f   tau (z-lab: mean over samples) %.3f\n"
                "  step-weighted (per verification step) and request-weighted (per sample); "
                "both count n leading matches + 1 bonus token from the target%s\n",
                r.accept_length_pooled(), r.tau(),
                capped ? " (capped at the tokens left, as z-lab's loop records)" : ""));
  return out;
}

// The per-position table; DFlash 2 adds the selector's columns and its
// first-miss split. A rate that was not measured (blocks scored to their
// first miss) shows as "-".
std::string FormatPositionTable(const pb::EvalResult& r) {
  std::string out;
  const bool dflash2 = r.selector_top_k() > 0;
  // Scored to each block's first miss: the marginal columns were not measured.
  const bool cut = r.positions_to_first_miss();
  const auto rate = [cut](double v, int width) {
    return cut ? absl::StrFormat("%*s", width, "-") : absl::StrFormat("%*.4f", width, v);
  };
  if (cut) {
    absl::StrAppend(&out,
                    "note: blocks scored to their first miss; per-position accuracy past it not "
                    "measured (-); --full-positions measures it\n");
  }
  if (dflash2) {
    const pb::FirstMissSplit& f = r.first_miss();
    const double blocks = std::max<double>(1, static_cast<double>(r.blocks()));
    absl::StrAppend(
        &out, absl::StrFormat(
                  "selector (top-%d): accept length %.3f with it, %.3f without (unary argmax), "
                  "%.3f top-k oracle\n"
                  "  first miss: %.1f%% coverage misses, %.1f%% ranking errors, %.1f%% blocks all "
                  "accepted; %d near-tie slot(s) (< 1e-4)\n",
                  r.selector_top_k(), r.accept_length_pooled(), r.unary_accept_length_pooled(),
                  r.oracle_accept_length_pooled(), 100.0 * f.coverage_miss() / blocks,
                  100.0 * f.ranking_error() / blocks, 100.0 * f.all_accepted() / blocks,
                  r.selector_near_ties()));
    absl::StrAppend(&out, absl::StrFormat("  %4s %9s %8s %10s %11s %8s %9s %9s  %s\n", "pos",
                                          "counted", "accuracy", "acceptance", "conditional",
                                          "unary", "coverage", "tf-select", "accuracy"));
    for (const pb::PositionMetrics& p : r.positions()) {
      if (p.counted() == 0) {
        absl::StrAppend(&out, Unavailable(p));
        continue;
      }
      absl::StrAppend(
          &out, absl::StrFormat("  %4d %9d %s %10.4f %11.4f %s %s %s  %s\n", p.position(),
                                p.counted(), rate(p.accuracy(), 8), p.acceptance(), p.conditional(),
                                rate(p.unary_accuracy(), 8), rate(p.coverage(), 9),
                                rate(p.tf_accuracy(), 9), TextBar(cut ? 0 : p.accuracy(), 30)));
    }
  } else {
    absl::StrAppend(&out, absl::StrFormat("  %4s %9s %8s %10s %11s  %s\n", "pos", "counted",
                                          "accuracy", "acceptance", "conditional", "accuracy"));
    for (const pb::PositionMetrics& p : r.positions()) {
      if (p.counted() == 0) {
        absl::StrAppend(&out, Unavailable(p));
        continue;
      }
      absl::StrAppend(&out, absl::StrFormat("  %4d %9d %s %10.4f %11.4f  %s\n", p.position(),
                                            p.counted(), rate(p.accuracy(), 8), p.acceptance(),
                                            p.conditional(), TextBar(cut ? 0 : p.accuracy(), 30)));
    }
  }
  return out;
}

// --detail: the histogram of accepted leading matches per block.
std::string FormatAcceptedHistogram(const pb::EvalResult& r) {
  std::string out;
  int64_t total = 0;
  for (int64_t h : r.accepted_histogram()) total += h;
  absl::StrAppend(&out, "accepted leading matches per block (n)\n");
  for (int n = 0; n < r.accepted_histogram_size(); ++n) {
    const int64_t h = r.accepted_histogram(n);
    absl::StrAppend(&out, absl::StrFormat("  n=%-3d %8d  %s\n", n, h,
                                          TextBar(total ? static_cast<double>(h) / total : 0, 30)));
  }
  return out;
}

// The result's scalar fields that the sections above print in their own
// words; --detail lists every other set one by name (format_fields.h), so a
// new metric shows without an edit here. A field given its own line above
// joins this list.
const std::set<std::string>& ShownInSections() {
  static const auto* shown = new std::set<std::string>{"mode",
                                                       "block_size",
                                                       "samples",
                                                       "blocks",
                                                       "tokens_scored",
                                                       "device",
                                                       "dtype",
                                                       "draft_vocab_size",
                                                       "labels_in_draft_vocab",
                                                       "family",
                                                       "semantics",
                                                       "semantics_reference",
                                                       "accept_length_pooled",
                                                       "tau",
                                                       "selector_top_k",
                                                       "unary_accept_length_pooled",
                                                       "oracle_accept_length_pooled",
                                                       "selector_near_ties",
                                                       "positions_to_first_miss",
                                                       "setup_seconds",
                                                       "compute_seconds",
                                                       "tokens_per_second",
                                                       "loop_token_share",
                                                       "loop_accept_share",
                                                       "ci_resamples",
                                                       "suite"};
  return *shown;
}

}  // namespace

std::string FormatEvalResult(const pb::EvalResult& r, bool detail) {
  if (r.suite_results_size() > 0) return FormatSuiteResult(r);
  std::string out = FormatResultHeader(r);
  absl::StrAppend(&out, FormatPositionTable(r));
  if (!detail) {
    // One screen: what most calls want; the rest is a flag away.
    absl::StrAppend(&out, FormatSampledAcceptance(r), FormatIntervalLine(r), FormatShards(r));
    if (r.has_gate()) absl::StrAppend(&out, r.gate().text(), "\n");
    absl::StrAppend(&out, absl::StrFormat("more with --detail: histogram, draft-length curve, "
                                          "per-position intervals, %d slice(s), timing\n",
                                          r.slices_size()));
    for (const std::string& w : r.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
    return out;
  }
  absl::StrAppend(&out, FormatAcceptedHistogram(r));
  absl::StrAppend(&out, FormatDecisionMetrics(r));
  absl::StrAppend(
      &out, absl::StrFormat("time: setup %.3fs, compute %.3fs, %.0f tokens/s\n", r.setup_seconds(),
                            r.compute_seconds(), r.tokens_per_second()));
  absl::StrAppend(&out, FormatShards(r));
  absl::StrAppend(&out, FormatIntervals(r));
  absl::StrAppend(&out, FormatSlices(r));
  absl::StrAppend(&out, FormatOtherFields(r, ShownInSections()));
  for (const std::string& w : r.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

std::string FormatShards(const pb::EvalResult& r) {
  bool read = false;
  for (const pb::ShardPlacement& s : r.shards()) read = read || s.bytes_read() > 0;
  if (r.shards_size() < 2 && !read) return "";
  std::string out = absl::StrCat("shards: ", r.shards_size(), "\n");
  for (const pb::ShardPlacement& s : r.shards()) {
    absl::StrAppend(
        &out, absl::StrFormat("  samples [%d, %d)  %6d blocks  %-8s %s  %.3fs", s.first(), s.end(),
                              s.blocks(), s.device(), s.server(), s.seconds()));
    if (s.bytes_read() > 0) absl::StrAppend(&out, "  read ", s.bytes_read(), " bytes");
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace dflash::client
