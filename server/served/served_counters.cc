#include "served/served_counters.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"

namespace dflash::served {
namespace {

// --- vLLM /metrics (Prometheus text exposition) ---------------------------

constexpr absl::string_view kDrafts = "vllm:spec_decode_num_drafts";
constexpr absl::string_view kDraftTokens = "vllm:spec_decode_num_draft_tokens";
constexpr absl::string_view kAccepted = "vllm:spec_decode_num_accepted_tokens";
constexpr absl::string_view kPerPos = "vllm:spec_decode_num_accepted_tokens_per_pos";

struct Scrape {
  std::map<std::string, double> totals;    // counter name (no _total) -> sum over labels
  std::map<int64_t, double> per_position;  // position label -> sum
  std::set<std::string> label_sets;        // distinct label sets of kDrafts
  std::set<std::string> seen;              // every vllm:spec_decode_* series name
};

// `name{a="x",b="y"} value [timestamp]`. Returns false for a line that is
// not a sample (comments, blanks).
bool SplitSample(absl::string_view line, std::string* name, std::string* labels, double* value,
                 std::string* error) {
  line = absl::StripAsciiWhitespace(line);
  if (line.empty() || line[0] == '#') return false;
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ' && line[i] != '\t') ++i;
  *name = std::string(line.substr(0, i));
  labels->clear();
  if (i < line.size() && line[i] == '{') {
    const size_t close = line.find('}', i);
    if (close == absl::string_view::npos) {
      *error = "unterminated label set";
      return true;
    }
    *labels = std::string(line.substr(i + 1, close - i - 1));
    i = close + 1;
  }
  std::vector<absl::string_view> rest =
      absl::StrSplit(line.substr(i), absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (rest.empty() || !absl::SimpleAtod(rest[0], value)) {
    *error = "no numeric value";
    return true;
  }
  return true;
}

std::optional<std::string> Label(const std::string& labels, absl::string_view key) {
  for (absl::string_view part : absl::StrSplit(labels, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(part, absl::MaxSplits('=', 1));
    if (absl::StripAsciiWhitespace(kv.first) != key) continue;
    absl::string_view v = absl::StripAsciiWhitespace(kv.second);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return std::string(v);
  }
  return std::nullopt;
}

std::string WithoutLabel(const std::string& labels, absl::string_view key) {
  std::vector<std::string> kept;
  for (absl::string_view part : absl::StrSplit(labels, ',', absl::SkipEmpty())) {
    if (!absl::StartsWith(absl::StripAsciiWhitespace(part), absl::StrCat(key, "="))) {
      kept.emplace_back(part);
    }
  }
  return absl::StrJoin(kept, ",");
}

absl::StatusOr<Scrape> ReadScrape(const std::string& text, absl::string_view which) {
  Scrape s;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::string name, labels, error;
    double value = 0;
    if (!SplitSample(line, &name, &labels, &value, &error)) continue;
    if (!absl::StartsWith(name, "vllm:spec_decode")) continue;
    if (!error.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(which, " scrape line ", line_no, ": ", error, ": '", line, "'"));
    }
    // prometheus_client exports a Counter `x` as `x_total` plus `x_created`.
    if (absl::EndsWith(name, "_created")) continue;
    if (value < 0 || !std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat(which, " scrape line ", line_no, ": ", name,
                                                     " is ", value, ": not a counter value"));
    }
    std::string base = name;
    if (absl::EndsWith(base, "_total")) base.resize(base.size() - 6);
    s.seen.insert(base);
    if (base == kPerPos) {
      std::optional<std::string> pos = Label(labels, "position");
      int64_t p = 0;
      if (!pos || !absl::SimpleAtoi(*pos, &p) || p < 0) {
        return absl::InvalidArgumentError(absl::StrCat(which, " scrape line ", line_no, ": ", name,
                                                       " without a numeric position label"));
      }
      s.per_position[p] += value;
      continue;
    }
    if (base == kDrafts) s.label_sets.insert(labels);
    s.totals[base] += value;
  }
  return s;
}

absl::Status Missing(const Scrape& s, absl::string_view name, absl::string_view which) {
  return absl::InvalidArgumentError(absl::StrCat(
      which, " scrape has no ", name, "(_total) counter; vllm:spec_decode series found: [",
      absl::StrJoin(s.seen, ", "),
      "] (was the server started with --speculative-config, and is this vLLM's /metrics?)"));
}

absl::StatusOr<int64_t> Delta(const Scrape& before, const Scrape& after, absl::string_view name,
                              bool have_before) {
  auto a = after.totals.find(std::string(name));
  if (a == after.totals.end()) return Missing(after, name, have_before ? "the after" : "the");
  double b = 0;
  if (have_before) {
    auto it = before.totals.find(std::string(name));
    if (it == before.totals.end()) return Missing(before, name, "the before");
    b = it->second;
  }
  if (a->second < b) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " went from ", b, " to ", a->second,
                     " between the scrapes: the server restarted, or the files are swapped (give "
                     "before, then after)"));
  }
  return static_cast<int64_t>(std::llround(a->second - b));
}

// --- SGLang meta_info -------------------------------------------------------

const nlohmann::json* Field(const nlohmann::json& o, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto it = o.find(n);
    if (it != o.end() && it->is_number()) return &*it;
  }
  return nullptr;
}

std::string Keys(const nlohmann::json& o) {
  std::vector<std::string> keys;
  for (auto it = o.begin(); it != o.end(); ++it) keys.push_back(it.key());
  return absl::StrCat("[", absl::StrJoin(keys, ", "), "]");
}

// --- detection --------------------------------------------------------------

enum class Kind { kVllm, kSglang, kZlab, kUnknown };

Kind Detect(const std::string& text) {
  if (absl::StrContains(text, "vllm:")) return Kind::kVllm;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '['))
    return Kind::kSglang;
  if (absl::StrContains(text, "Average Acceptance length")) return Kind::kZlab;
  return Kind::kUnknown;
}

const char* KindName(Kind k) {
  switch (k) {
    case Kind::kVllm: return "vLLM /metrics scrape";
    case Kind::kSglang: return "SGLang meta_info JSON";
    case Kind::kZlab: return "z-lab benchmark output";
    case Kind::kUnknown: return "unknown";
  }
  return "?";
}

}  // namespace

absl::StatusOr<ServedCounters> ParseVllmScrapes(const std::string& before,
                                                const std::string& after) {
  const bool have_before = !before.empty();
  Scrape b;
  if (have_before) {
    auto parsed = ReadScrape(before, "the before");
    if (!parsed.ok()) return parsed.status();
    b = *std::move(parsed);
  }
  auto parsed = ReadScrape(after, have_before ? "the after" : "the");
  if (!parsed.ok()) return parsed.status();
  const Scrape& a = *parsed;
  ServedCounters c;
  c.source = "vllm";
  c.weighting = "step";
  absl::StatusOr<int64_t> drafts = Delta(b, a, kDrafts, have_before);
  if (!drafts.ok()) return drafts.status();
  absl::StatusOr<int64_t> draft_tokens = Delta(b, a, kDraftTokens, have_before);
  if (!draft_tokens.ok()) return draft_tokens.status();
  absl::StatusOr<int64_t> accepted = Delta(b, a, kAccepted, have_before);
  if (!accepted.ok()) return accepted.status();
  if (*drafts <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kDrafts, " did not move between the scrapes (", *drafts,
                     " drafts): nothing was served with speculation in between"));
  }
  c.steps = *drafts;
  c.accepted_tokens = *accepted;
  // metrics.py: "mean acceptance length includes the bonus token",
  // 1 + num_accepted_tokens / num_drafts.
  c.accept_length = 1.0 + static_cast<double>(*accepted) / static_cast<double>(*drafts);
  if (*draft_tokens % *drafts == 0) c.num_speculative_tokens = *draft_tokens / *drafts;
  if (!a.per_position.empty()) {
    const int64_t positions = a.per_position.rbegin()->first + 1;
    for (int64_t p = 0; p < positions; ++p) {
      auto ai = a.per_position.find(p);
      if (ai == a.per_position.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat(kPerPos, " has positions up to ", positions - 1, " but no position ", p));
      }
      double bv = 0;
      if (have_before) {
        auto bi = b.per_position.find(p);
        if (bi != b.per_position.end()) bv = bi->second;
      }
      if (ai->second < bv) {
        return absl::InvalidArgumentError(
            absl::StrCat(kPerPos, "{position=\"", p, "\"} went from ", bv, " to ", ai->second,
                         " between the scrapes: the server restarted, or the files are swapped"));
      }
      c.accepted_per_position.push_back(std::llround(ai->second - bv));
      c.served_marginal.push_back(static_cast<double>(c.accepted_per_position.back()) /
                                  static_cast<double>(c.steps));
    }
    if (!c.num_speculative_tokens) c.num_speculative_tokens = positions;
  }
  if (a.label_sets.size() > 1) {
    c.notes.push_back(
        absl::StrCat("summed over ", a.label_sets.size(), " label sets of ", kDrafts));
  }
  if (!have_before) c.notes.push_back("one scrape: counts since the server started");
  return c;
}

namespace {

// The file's objects with their line numbers: one JSON object a line, or
// one JSON array of them (numbered from 1).
absl::StatusOr<std::vector<std::pair<int, nlohmann::json>>> ReadSglangObjects(
    const std::string& text) {
  std::vector<std::pair<int, nlohmann::json>> objects;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json all = nlohmann::json::parse(text, nullptr, false);
    if (all.is_discarded() || !all.is_array()) {
      return absl::InvalidArgumentError("SGLang file starts with '[' but is not a JSON array");
    }
    int i = 0;
    for (nlohmann::json& o : all) objects.emplace_back(++i, std::move(o));
  } else {
    int line_no = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      ++line_no;
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      nlohmann::json o = nlohmann::json::parse(line, nullptr, false);
      if (o.is_discarded() || !o.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "SGLang line ", line_no, " is not a JSON object: '", line.substr(0, 80), "'"));
      }
      objects.emplace_back(line_no, std::move(o));
    }
  }
  return objects;
}

}  // namespace

absl::StatusOr<ServedCounters> ParseSglangJsonl(const std::string& text) {
  absl::StatusOr<std::vector<std::pair<int, nlohmann::json>>> read = ReadSglangObjects(text);
  if (!read.ok()) return read.status();
  std::vector<std::pair<int, nlohmann::json>>& objects = *read;
  ServedCounters c;
  c.source = "sglang";
  c.weighting = "step";
  int64_t completion = 0, skipped = 0, draft_tokens = 0;
  bool all_have_accepted = true, any_draft_tokens = false;
  double reported_sum = 0;
  for (auto& [line_no, o] : objects) {
    const nlohmann::json& m =
        o.contains("meta_info") && o["meta_info"].is_object() ? o["meta_info"] : o;
    const nlohmann::json* verify = Field(m, {"spec_verify_ct"});
    const nlohmann::json* tokens = Field(m, {"completion_tokens"});
    if (verify == nullptr || tokens == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SGLang line ", line_no, " has no ",
          verify == nullptr ? "spec_verify_ct" : "completion_tokens", " (keys: ", Keys(m),
          "); was the server started with --speculative-algorithm?"));
    }
    const int64_t v = verify->get<int64_t>(), t = tokens->get<int64_t>();
    if (v < 0 || t < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("SGLang line ", line_no, ": negative counter"));
    }
    if (v == 0) {
      ++skipped;  // finished at prefill (one token): no step was verified
      continue;
    }
    ++c.requests;
    c.steps += v;
    completion += t;
    reported_sum += static_cast<double>(t) / static_cast<double>(v);
    // eagle_info.py / dflash_info.py: spec_accepted_tokens counts accepted
    // drafts per verify step; exposed as spec_accept_token_num (newer:
    // spec_num_correct_drafts).
    if (const nlohmann::json* acc =
            Field(m, {"spec_accept_token_num", "spec_num_correct_drafts"})) {
      c.accepted_tokens += acc->get<int64_t>();
    } else {
      all_have_accepted = false;
    }
    if (const nlohmann::json* d = Field(m, {"spec_draft_token_num", "spec_num_proposed_drafts"})) {
      any_draft_tokens = true;
      draft_tokens += d->get<int64_t>();
    }
  }
  if (c.steps == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SGLang file has ", objects.size(), " requests and no verify step (spec_verify_ct all 0)"));
  }
  const double steps = static_cast<double>(c.steps);
  if (all_have_accepted) {
    c.accept_length = 1.0 + static_cast<double>(c.accepted_tokens) / steps;
  } else {
    // completion_tokens counts the token sampled at prefill, before any
    // verify step: one per request comes off.
    c.accepted_tokens = completion - c.requests - c.steps;
    c.accept_length = static_cast<double>(completion - c.requests) / steps;
    c.notes.push_back(
        "no accepted-draft counts: (completion_tokens - 1 per request) / verify steps");
  }
  if (any_draft_tokens && draft_tokens % c.steps == 0)
    c.num_speculative_tokens = draft_tokens / c.steps;
  c.notes.push_back(
      absl::StrCat("SGLang's own spec_accept_length (completion/verify, per request, "
                   "prefill token included) averages ",
                   reported_sum / static_cast<double>(c.requests)));
  if (skipped > 0)
    c.notes.push_back(absl::StrCat(skipped, " requests without a verify step skipped"));
  return c;
}

absl::StatusOr<ServedCounters> ParseZlabOutput(const std::string& text) {
  ServedCounters c;
  c.source = "zlab";
  c.weighting = "request";
  bool have_mean = false;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    // benchmark.py: np.mean of each turn's mean acceptance length.
    if (absl::ConsumePrefix(&line, "Average Acceptance length:")) {
      if (!absl::SimpleAtod(absl::StripAsciiWhitespace(line), &c.accept_length)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "z-lab output: 'Average Acceptance length:' without a number: '", line, "'"));
      }
      have_mean = true;
    } else if (absl::ConsumePrefix(&line, "Acceptance length histogram:")) {
      // [f'{x * 100:.1f}%' for b in range(block_size + 1)], pooled over steps,
      // b = tokens per step with the bonus.
      std::vector<double> hist;
      for (absl::string_view cell :
           absl::StrSplit(line, absl::ByAnyChar("[],' "), absl::SkipEmpty())) {
        double pct = 0;
        if (!absl::ConsumeSuffix(&cell, "%") || !absl::SimpleAtod(cell, &pct)) {
          return absl::InvalidArgumentError(
              absl::StrCat("z-lab output: histogram cell '", cell, "' is not a percentage"));
        }
        hist.push_back(pct / 100.0);
      }
      if (hist.size() < 2)
        return absl::InvalidArgumentError("z-lab output: histogram has < 2 cells");
      c.num_speculative_tokens = static_cast<int64_t>(hist.size()) - 2;  // lengths 0..B
      for (size_t i = 0; i + 2 < hist.size(); ++i) {
        double survive = 0;
        for (size_t b = i + 2; b < hist.size(); ++b) survive += hist[b];
        c.served_marginal.push_back(std::min(1.0, survive));
      }
      c.notes.push_back("position rates from z-lab's histogram, printed to 0.1%");
    }
  }
  if (!have_mean) {
    return absl::InvalidArgumentError(
        "z-lab output has no 'Average Acceptance length:' line (dflash.benchmark, transformers or "
        "mlx backend)");
  }
  return c;
}

absl::StatusOr<ServedCounters> ParseServedFiles(
    const std::vector<std::pair<std::string, std::string>>& files) {
  if (files.empty()) return absl::InvalidArgumentError("no served files");
  std::vector<Kind> kinds;
  for (const auto& [name, content] : files) {
    const Kind k = Detect(content);
    if (k == Kind::kUnknown) {
      const absl::string_view head = absl::string_view(content).substr(0, content.find('\n'));
      return absl::InvalidArgumentError(
          absl::StrCat("file '", name,
                       "' is not a vLLM /metrics scrape, SGLang meta_info JSON lines or z-lab "
                       "benchmark output (first line: '",
                       head.substr(0, 80), "')"));
    }
    if (!kinds.empty() && k != kinds.front()) {
      return absl::InvalidArgumentError(
          absl::StrCat("file '", name, "' is a ", KindName(k), " but '", files.front().first,
                       "' is a ", KindName(kinds.front()), ": calibrate one engine at a time"));
    }
    kinds.push_back(k);
  }
  const auto with_name = [&](absl::StatusOr<ServedCounters> r, const std::string& names) {
    if (!r.ok())
      return absl::StatusOr<ServedCounters>(
          absl::Status(r.status().code(), absl::StrCat(names, ": ", r.status().message())));
    return r;
  };
  switch (kinds.front()) {
    case Kind::kVllm:
      if (files.size() > 2) {
        return absl::InvalidArgumentError(absl::StrCat(
            files.size(),
            " vLLM scrapes: give two (before and after the run) or one (since start)"));
      }
      if (files.size() == 1)
        return with_name(ParseVllmScrapes("", files[0].second), files[0].first);
      return with_name(ParseVllmScrapes(files[0].second, files[1].second),
                       absl::StrCat(files[0].first, " -> ", files[1].first));
    case Kind::kSglang: {
      std::string all;
      for (const auto& f : files) absl::StrAppend(&all, f.second, "\n");
      return with_name(ParseSglangJsonl(all), files.size() == 1 ? files[0].first : "SGLang files");
    }
    case Kind::kZlab:
      if (files.size() > 1) return absl::InvalidArgumentError("give one z-lab benchmark output");
      return with_name(ParseZlabOutput(files[0].second), files[0].first);
    case Kind::kUnknown: break;
  }
  return absl::InternalError("unhandled served file kind");
}

}  // namespace dflash::served
