#include "weights/weight_map.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <set>
#include <utility>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "weights/fingerprint.h"
#include "weights/name_suggest.h"
#include "weights/weight_digest.h"
#include "weights/weight_names.h"

namespace dflash::weights {
namespace {

// Problems listed per category before "... and N more".
constexpr int kMaxLinesPerCategory = 20;

// Shape mismatch detail: "looks transposed", or which dimension differs.
std::string ShapeHint(const std::vector<int64_t>& got, const std::vector<int64_t>& want) {
  if (got.size() != want.size()) {
    return absl::StrCat("rank ", got.size(), " vs expected rank ", want.size());
  }
  if (got.size() == 2 && got[0] == want[1] && got[1] == want[0]) {
    return "looks transposed";
  }
  int differing = -1, count = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      differing = static_cast<int>(i);
      ++count;
    }
  }
  if (count != 1 || want[differing] == 0) return "";
  const int64_t g = std::gcd(got[differing], want[differing]);
  return absl::StrCat("dim ", differing, " is ", got[differing], ", expected ", want[differing],
                      " (ratio ", got[differing] / g, "/", want[differing] / g, ")");
}

void AddCapped(const std::vector<std::string>& lines, absl::string_view what,
               std::vector<std::string>* out) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (static_cast<int>(i) == kMaxLinesPerCategory) {
      out->push_back(absl::StrCat("... and ", lines.size() - i, " more ", what));
      return;
    }
    out->push_back(lines[i]);
  }
}

// Stored names after normalisation, indexed for the schema lookup.
struct StoredIndex {
  std::vector<std::string> normalised;    // per stored tensor
  std::map<std::string, size_t> by_name;  // normalised name -> stored index
  std::vector<std::string> ambiguous;     // problem lines: two names read as one
  int stripped_count = 0;                 // names the normalisation changed
};

// Normalised name -> stored index; a second stored name with the same
// normalised name is ambiguous and never silently dropped.
StoredIndex IndexStoredNames(const std::vector<TensorInfo>& stored, const Normalisation& norm) {
  StoredIndex index;
  index.normalised.resize(stored.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    index.normalised[i] = Normalise(stored[i].name, norm);
    if (index.normalised[i] != stored[i].name) ++index.stripped_count;
    auto [it, inserted] = index.by_name.emplace(index.normalised[i], i);
    if (!inserted) {
      index.ambiguous.push_back(absl::StrCat("tensors '", stored[it->second].name, "' and '",
                                             stored[i].name, "' both read as '",
                                             index.normalised[i], "'; refusing to pick one"));
    }
  }
  return index;
}

// The layers the schema and the checkpoint hold ("layers.<n>." names).
struct LayerCounts {
  std::set<int> schema_layers, stored_layers;
  std::map<int, int> schema_count_by_layer;  // layer -> schema tensors in it
};

LayerCounts CountLayers(const std::vector<TensorSpec>& schema,
                        const std::vector<std::string>& normalised) {
  LayerCounts layers;
  for (const TensorSpec& s : schema) {
    int layer;
    std::string rest;
    if (SplitLayer(s.name, &layer, &rest)) {
      layers.schema_layers.insert(layer);
      ++layers.schema_count_by_layer[layer];
    }
  }
  for (const std::string& n : normalised) {
    int layer;
    std::string rest;
    if (SplitLayer(n, &layer, &rest)) layers.stored_layers.insert(layer);
  }
  return layers;
}

// Problem lines by category, before AddProblems caps and orders them.
struct ProblemLines {
  std::vector<std::string> missing, mismatch, dtype, bad_values;
  std::vector<std::string> extra_layers, unexpected;  // unexpected tensors, in this order
};

// The entry of stored tensor `t`, under `name`.
TensorEntry EntryFor(const std::string& name, const TensorInfo& t) {
  TensorEntry e;
  e.name = name;
  e.stored_name = t.name;
  e.dtype = std::string(formats::DTypeName(t.dtype));
  e.shape = t.shape;
  e.source_file = t.file;
  return e;
}

// Shape, then dtype, of schema tensor `s` found in the checkpoint as `t`.
void CheckPresent(const TensorSpec& s, const TensorInfo& t, TensorEntry& e, WeightReport* report,
                  ProblemLines* lines) {
  if (t.shape != s.shape) {
    e.status = EntryStatus::kShapeMismatch;
    const std::string hint = ShapeHint(t.shape, s.shape);
    e.reason = absl::StrCat("has shape ", ShapeText(t.shape), "; expected ", ShapeText(s.shape),
                            hint.empty() ? "" : "; ", hint);
    lines->mismatch.push_back(absl::StrCat("tensor '", e.name, "'", StoredAs(e), " ", e.reason));
    ++report->shape_mismatches;
  } else if (!s.exact_dtype.empty() && e.dtype != s.exact_dtype) {
    e.status = EntryStatus::kDtypeMismatch;
    e.reason = absl::StrCat("has dtype ", e.dtype, "; expected ", s.exact_dtype,
                            " (an index table, read as stored)");
    lines->dtype.push_back(absl::StrCat("tensor '", e.name, "'", StoredAs(e), " ", e.reason));
    ++report->dtype_mismatches;
  } else if (s.exact_dtype.empty() && !formats::IsFloatingPoint(t.dtype)) {
    e.status = EntryStatus::kDtypeMismatch;
    e.reason = absl::StrCat("has dtype ", e.dtype, "; expected a floating-point type");
    lines->dtype.push_back(absl::StrCat("tensor '", e.name, "'", StoredAs(e), " ", e.reason));
    ++report->dtype_mismatches;
  } else {
    e.keep_dtype = !s.exact_dtype.empty();
    ++report->found;
    report->tensor_bytes += t.nbytes;
  }
}

// One entry per schema tensor, in schema order (by name, else by alias);
// returns which stored tensors were claimed. Required tensors that are absent
// are also listed by layer in `missing_by_layer` (layer -> entry index).
std::vector<bool> MatchSchema(const std::vector<TensorSpec>& schema,
                              const std::vector<TensorInfo>& stored, const StoredIndex& index,
                              WeightReport* report, ProblemLines* lines,
                              std::map<int, std::vector<size_t>>* missing_by_layer) {
  std::vector<bool> used(stored.size(), false);
  for (const TensorSpec& s : schema) {
    auto it = index.by_name.find(s.name);
    for (size_t a = 0; it == index.by_name.end() && a < s.aliases.size(); ++a) {
      it = index.by_name.find(s.aliases[a]);
    }
    if (it == index.by_name.end()) {
      TensorEntry e;
      e.name = s.name;
      e.expected_shape = s.shape;
      e.status = s.required ? EntryStatus::kMissing : EntryStatus::kOptionalAbsent;
      if (s.required) {
        ++report->missing;
        int layer;
        std::string rest;
        if (SplitLayer(s.name, &layer, &rest)) {
          (*missing_by_layer)[layer].push_back(report->tensors.size());
        }
      }
      report->tensors.push_back(std::move(e));
      continue;
    }
    const TensorInfo& t = stored[it->second];
    used[it->second] = true;
    TensorEntry e = EntryFor(s.name, t);
    e.expected_shape = s.shape;
    CheckPresent(s, t, e, report, lines);
    report->tensors.push_back(std::move(e));
  }
  return used;
}

// The first rule whose suffix ends `name`, or nullptr.
const IgnoreRule* FindIgnoreRule(const std::string& name, const std::vector<IgnoreRule>& rules) {
  for (const IgnoreRule& r : rules) {
    if (absl::EndsWith(name, r.suffix)) return &r;
  }
  return nullptr;
}

// Entries for the stored tensors no schema tensor claimed: ignored on
// purpose, or unexpected. Unexpected tensors of a layer the schema lacks are
// one line per layer; any other is one line with its nearest schema names.
void ClassifyLeftovers(const std::vector<TensorInfo>& stored, const StoredIndex& index,
                       const std::vector<bool>& used, const std::vector<TensorSpec>& schema,
                       const std::set<int>& schema_layers, const std::vector<IgnoreRule>& ignore,
                       WeightReport* report, ProblemLines* lines) {
  std::vector<std::string> schema_names;
  schema_names.reserve(schema.size());
  for (const TensorSpec& s : schema) schema_names.push_back(s.name);
  std::map<int, int> extra_layer_counts;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (used[i]) continue;
    TensorEntry e = EntryFor(index.normalised[i], stored[i]);
    if (const IgnoreRule* rule = FindIgnoreRule(e.name, ignore); rule != nullptr) {
      e.status = EntryStatus::kIgnored;
      e.reason = rule->reason;
      ++report->ignored;
      report->tensors.push_back(std::move(e));
      continue;
    }
    e.status = EntryStatus::kUnexpected;
    ++report->unexpected;
    int layer;
    std::string rest;
    if (!schema_layers.empty() && SplitLayer(e.name, &layer, &rest) &&
        schema_layers.count(layer) == 0) {
      e.reason = absl::StrCat("layer ", layer, " is not in the schema, which has ",
                              LayerRange(schema_layers));
      ++extra_layer_counts[layer];
    } else {
      e.reason = absl::StrCat("not in the schema; nearest schema names: ",
                              QuoteList(NearestNames(e.name, schema_names)));
      lines->unexpected.push_back(absl::StrCat("unexpected tensor '", e.name, "'", StoredAs(e), " ",
                                               ShapeText(e.shape), ": ", e.reason));
    }
    report->tensors.push_back(std::move(e));
  }
  for (const auto& [layer, count] : extra_layer_counts) {
    lines->extra_layers.push_back(
        absl::StrCat("unexpected: ", count, " tensors of layer ", layer, " ('layers.", layer,
                     ".*'); the schema has ", LayerRange(schema_layers),
                     ": does num_hidden_layers in the config match the checkpoint?"));
  }
}

// Reasons and problem lines for the missing tensors, with the nearest names
// present (unused ones first: a renamed tensor is among them). A layer with
// every tensor missing is one line.
void DescribeMissing(const StoredIndex& index, const std::vector<bool>& used,
                     const LayerCounts& layers,
                     const std::map<int, std::vector<size_t>>& missing_by_layer,
                     WeightReport* report, std::vector<std::string>* missing_lines) {
  std::vector<std::string> leftover_names;
  for (size_t i = 0; i < used.size(); ++i) {
    if (!used[i]) leftover_names.push_back(index.normalised[i]);
  }
  std::set<size_t> grouped;
  for (const auto& [layer, idx] : missing_by_layer) {
    const auto in_schema = layers.schema_count_by_layer.find(layer);
    const int schema_count =
        in_schema == layers.schema_count_by_layer.end() ? 0 : in_schema->second;
    if (static_cast<int>(idx.size()) == schema_count && idx.size() > 1) {
      missing_lines->push_back(absl::StrCat("missing all ", idx.size(), " tensors of layer ", layer,
                                            " ('layers.", layer, ".*'); the checkpoint has ",
                                            LayerRange(layers.stored_layers)));
      grouped.insert(idx.begin(), idx.end());
    }
  }
  for (size_t i = 0; i < report->tensors.size(); ++i) {
    TensorEntry& e = report->tensors[i];
    if (e.status != EntryStatus::kMissing) continue;
    std::vector<std::string> near = NearestNames(e.name, leftover_names);
    for (const std::string& n : NearestNames(e.name, index.normalised)) {
      if (near.size() < 3 && std::find(near.begin(), near.end(), n) == near.end()) {
        near.push_back(n);
      }
    }
    e.reason = absl::StrCat("not in the checkpoint; nearest present: ", QuoteList(near));
    if (grouped.count(i) == 0) {
      missing_lines->push_back(absl::StrCat("missing tensor '", e.name, "' ",
                                            ShapeText(e.expected_shape),
                                            "; nearest present: ", QuoteList(near)));
    }
  }
}

// The problems, capped per category and worst first, and report.ok.
// Unexpected tensors, when allowed, are facts instead.
void AddProblems(const ProblemLines& lines, const std::vector<std::string>& ambiguous,
                 const ValidateOptions& options, WeightReport* report) {
  AddCapped(lines.missing, "missing tensors", &report->problems);
  AddCapped(lines.mismatch, "shape mismatches", &report->problems);
  AddCapped(lines.dtype, "dtype mismatches", &report->problems);
  AddCapped(lines.bad_values, "tensors with NaN/Inf", &report->problems);
  AddCapped(ambiguous, "ambiguous names", &report->problems);
  std::vector<std::string> unexpected_all = lines.extra_layers;
  unexpected_all.insert(unexpected_all.end(), lines.unexpected.begin(), lines.unexpected.end());
  if (options.allow_unexpected) {
    for (const std::string& l : unexpected_all) {
      report->facts.push_back(absl::StrCat("allowed: ", l));
    }
  } else {
    AddCapped(unexpected_all, "unexpected tensors", &report->problems);
  }
  report->ok = report->missing == 0 && report->shape_mismatches == 0 &&
               report->dtype_mismatches == 0 && lines.bad_values.empty() && ambiguous.empty() &&
               (report->unexpected == 0 || options.allow_unexpected);
}

// "used tensors: <bytes> (<MiB>), <dtype> x <count>, ...".
std::string UsedTensorsFact(const WeightReport& report) {
  std::map<std::string, int> dtypes;
  for (const TensorEntry& e : report.tensors) {
    if (e.status == EntryStatus::kFound) ++dtypes[e.dtype];
  }
  std::vector<std::string> dtype_parts;
  dtype_parts.reserve(dtypes.size());
  for (const auto& [d, c] : dtypes) dtype_parts.push_back(absl::StrCat(d, " x ", c));
  return absl::StrFormat("used tensors: %d bytes (%.1f MiB)%s%s", report.tensor_bytes,
                         report.tensor_bytes / 1048576.0, dtype_parts.empty() ? "" : ", ",
                         absl::StrJoin(dtype_parts, ", "));
}

// The generic facts, listed before any other; callers add model-specific
// ones (target layers, config).
std::vector<std::string> SummaryFacts(const WeightReport& report,
                                      const std::vector<TensorSpec>& schema, size_t stored_count,
                                      const Normalisation& norm, int stripped_count) {
  int optional_absent = 0, required = 0;
  for (const TensorSpec& s : schema) required += s.required;
  for (const TensorEntry& e : report.tensors) {
    optional_absent += e.status == EntryStatus::kOptionalAbsent;
  }
  std::vector<std::string> facts = {
      absl::StrCat("format ", report.format, ": ", stored_count, " tensors in the checkpoint, ",
                   schema.size(), " in the schema (", required, " required)"),
      absl::StrCat("found ", report.found, ", missing ", report.missing, ", shape mismatches ",
                   report.shape_mismatches,
                   report.dtype_mismatches > 0
                       ? absl::StrCat(", dtype mismatches ", report.dtype_mismatches)
                       : "",
                   ", unexpected ", report.unexpected, ", ignored ", report.ignored,
                   ", optional absent ", optional_absent)};
  if (!report.unwrapped_wrapper.empty()) {
    facts.push_back(absl::StrCat("unwrapped the training wrapper '", report.unwrapped_wrapper,
                                 "': tensor names are read from inside it"));
  }
  if (!norm.prefix.empty()) {
    facts.push_back(absl::StrCat("stripped wrapper prefix '", norm.prefix, "' from ",
                                 stripped_count, " of ", stored_count, " names"));
  }
  if (norm.drop_infix) {
    facts.push_back("dropped FSDP/checkpoint wrapper segments inside names");
  }
  facts.push_back(UsedTensorsFact(report));
  if (!report.skipped_entries.empty()) {
    facts.push_back(absl::StrCat(
        "skipped ", report.skipped_entries.size(), " non-tensor entries (",
        QuoteList(std::vector<std::string>(
            report.skipped_entries.begin(),
            report.skipped_entries.begin() + std::min<size_t>(5, report.skipped_entries.size()))),
        report.skipped_entries.size() > 5 ? ", ..." : "", ")"));
  }
  return facts;
}

}  // namespace

absl::StatusOr<WeightReport> ValidateWeightMap(const TensorSource& source,
                                               const std::vector<TensorSpec>& schema,
                                               const ValidateOptions& options) {
  WeightReport report;
  report.path = source.path();
  report.format = source.format();
  report.skipped_entries = source.skipped_entries();
  report.unwrapped_wrapper = source.unwrapped_wrapper();
  const std::vector<TensorInfo>& stored = source.tensors();

  const Normalisation norm = ChooseNormalisation(stored, schema);
  report.stripped_prefix = norm.prefix;
  const StoredIndex index = IndexStoredNames(stored, norm);
  const LayerCounts layers = CountLayers(schema, index.normalised);

  ProblemLines lines;
  std::map<int, std::vector<size_t>> missing_by_layer;  // layer -> entry index
  const std::vector<bool> used =
      MatchSchema(schema, stored, index, &report, &lines, &missing_by_layer);
  ClassifyLeftovers(stored, index, used, schema, layers.schema_layers, options.ignore, &report,
                    &lines);
  DescribeMissing(index, used, layers, missing_by_layer, &report, &lines.missing);
  if (options.compute_stats) {
    RETURN_IF_ERROR(
        ComputeStatsAndFingerprint(source, options.max_tensor_bytes, &report, &lines.bad_values));
  }
  AddProblems(lines, index.ambiguous, options, &report);

  const std::vector<std::string> facts =
      SummaryFacts(report, schema, stored.size(), norm, index.stripped_count);
  report.facts.insert(report.facts.begin(), facts.begin(), facts.end());
  return report;
}

absl::StatusOr<std::map<std::string, at::Tensor>> LoadValidatedWeights(
    const TensorSource& source, WeightReport& report, c10::ScalarType dtype, c10::Device device,
    const MapPolicy& policy, MapTally* tally) {
  if (!report.ok) {
    std::string first = report.problems.empty() ? "report not ok" : report.problems[0];
    return absl::FailedPreconditionError(
        absl::StrCat("weights of '", report.path, "' did not validate: ", first,
                     report.problems.size() > 1
                         ? absl::StrCat(" (and ", report.problems.size() - 1, " more problems)")
                         : ""));
  }
  std::map<std::string, at::Tensor> out;
  MapTally own_tally;
  if (tally == nullptr) tally = &own_tally;
  Fingerprinter fp;
  // A load needs the fingerprint and the NaN/Inf check, not the statistics
  // (validate --stats computes those). Stats are computed only for a tensor
  // that fails the check, so the report can say how many NaN and Inf it holds.
  std::vector<TensorEntry*> fresh;  // stats computed now, not at validation
  for (TensorEntry* e : FoundSorted(report)) {
    bool not_finite = false;
    ASSIGN_OR_RETURN(out[e->name],
                     LoadAndDigest(source, *e, dtype, device, policy, *tally, fp, &not_finite));
    if (not_finite) fresh.push_back(e);
  }
  // What was read is what the file held: it was not rewritten meanwhile.
  RETURN_IF_ERROR(tally->CheckUnchanged());
  const std::string now = fp.Hex();
  if (!report.fingerprint.empty() && report.fingerprint != now) {
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint '", report.path, "' changed since it was validated: fingerprint ",
                     report.fingerprint, " then, ", now, " now"));
  }
  report.fingerprint = now;
  std::vector<std::string> bad_values;
  ReportStats(report, fresh, &bad_values);
  if (!bad_values.empty()) {
    report.ok = false;
    report.problems.insert(report.problems.begin(), bad_values.begin(), bad_values.end());
    // Bad content, like a wrong shape (STYLE.md): InvalidArgument.
    return absl::InvalidArgumentError(
        absl::StrCat("weights of '", report.path, "' are not usable: ", bad_values[0]));
  }
  return out;
}

}  // namespace dflash::weights
