// File: part_state.cc
// EvalPart <-> JSON. nlohmann writes a double as the shortest text that
// reads back to the same value, and int64 as an integer, which is what
// "merged elsewhere equals merged here" needs.
#include "eval/part_state.h"

#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"

namespace dflash::eval {

using json = nlohmann::json;

// The accumulators' private state (friend of both).
struct PartStateAccess {
  static json Metrics(const MetricsAccumulator& m) {
    json positions = json::array();
    for (const types::PositionMetrics& p : m.positions_) {
      positions.push_back({p.position, p.counted, p.correct, p.accepted, p.conditional_counted,
                           p.cross_entropy_counted, p.unary_correct, p.covered, p.tf_correct});
    }
    json samples = json::array();
    for (const types::SampleSummary& s : m.samples_) {
      samples.push_back({{"i", s.sample_index},
                         {"blocks", s.blocks},
                         {"mean", s.mean_accept_length},
                         {"length", s.length},
                         {"first", s.first_response_position},
                         {"accepted_total", s.accepted_total},
                         {"counted", s.counted},
                         {"correct", s.correct},
                         {"accepted", s.accepted},
                         {"conditional_counted", s.conditional_counted},
                         {"response_tokens", s.response_tokens},
                         {"loop_tokens", s.loop_tokens},
                         {"loop_blocks", s.loop_blocks},
                         {"loop_accepted_total", s.loop_accepted_total},
                         {"context_blocks", s.context_blocks},
                         {"context_accepted", s.context_accepted},
                         {"category", s.category},
                         {"language", s.language},
                         {"thinking", s.thinking}});
    }
    return {
        {"block_size", m.block_size_},
        {"positions", positions},
        {"ce_sum", m.ce_sum_},
        {"histogram", m.histogram_},
        {"samples", samples},
        {"blocks", m.blocks_},
        {"tokens", m.tokens_},
        {"accept_sum", m.accept_sum_},
        {"labels_in_vocab", m.labels_in_vocab_},
        {"dflash2", m.dflash2_},
        {"unary_accept_sum", m.unary_accept_sum_},
        {"oracle_accept_sum", m.oracle_accept_sum_},
        {"near_ties", m.near_ties_},
        {"first_miss",
         {m.first_miss_.all_accepted, m.first_miss_.coverage_miss, m.first_miss_.ranking_error}}};
  }

  static void Metrics(const json& j, MetricsAccumulator& m) {
    const json& positions = j.at("positions");
    if (positions.size() != m.positions_.size()) {
      throw std::out_of_range(absl::StrCat(positions.size(), " positions at block size ",
                                           m.block_size_, " (expected ", m.positions_.size(), ")"));
    }
    for (size_t k = 0; k < positions.size(); ++k) {
      const json& q = positions[k];
      types::PositionMetrics& p = m.positions_[k];
      p.position = q.at(0).get<int>();
      p.counted = q.at(1).get<int64_t>();
      p.correct = q.at(2).get<int64_t>();
      p.accepted = q.at(3).get<int64_t>();
      p.conditional_counted = q.at(4).get<int64_t>();
      p.cross_entropy_counted = q.at(5).get<int64_t>();
      p.unary_correct = q.at(6).get<int64_t>();
      p.covered = q.at(7).get<int64_t>();
      p.tf_correct = q.at(8).get<int64_t>();
    }
    m.ce_sum_ = j.at("ce_sum").get<std::vector<double>>();
    m.histogram_ = j.at("histogram").get<std::vector<int64_t>>();
    for (const json& q : j.at("samples")) {
      types::SampleSummary s;
      s.sample_index = q.at("i").get<int64_t>();
      s.blocks = q.at("blocks").get<int64_t>();
      s.mean_accept_length = q.at("mean").get<double>();
      s.length = q.at("length").get<int64_t>();
      s.first_response_position = q.at("first").get<int64_t>();
      s.accepted_total = q.at("accepted_total").get<int64_t>();
      s.counted = q.at("counted").get<std::vector<int64_t>>();
      s.correct = q.at("correct").get<std::vector<int64_t>>();
      s.accepted = q.at("accepted").get<std::vector<int64_t>>();
      s.conditional_counted = q.at("conditional_counted").get<std::vector<int64_t>>();
      s.response_tokens = q.at("response_tokens").get<int64_t>();
      s.loop_tokens = q.at("loop_tokens").get<int64_t>();
      s.loop_blocks = q.at("loop_blocks").get<int64_t>();
      s.loop_accepted_total = q.at("loop_accepted_total").get<int64_t>();
      s.context_blocks = q.at("context_blocks").get<std::vector<int64_t>>();
      s.context_accepted = q.at("context_accepted").get<std::vector<int64_t>>();
      s.category = q.at("category").get<std::string>();
      s.language = q.at("language").get<std::string>();
      s.thinking = q.at("thinking").get<std::string>();
      if (!m.sample_slot_.emplace(s.sample_index, m.samples_.size()).second) {
        throw std::out_of_range(absl::StrCat("sample ", s.sample_index, " is listed twice"));
      }
      m.samples_.push_back(std::move(s));
    }
    m.blocks_ = j.at("blocks").get<int64_t>();
    m.tokens_ = j.at("tokens").get<int64_t>();
    m.accept_sum_ = j.at("accept_sum").get<int64_t>();
    m.labels_in_vocab_ = j.at("labels_in_vocab").get<int64_t>();
    m.dflash2_ = j.at("dflash2").get<bool>();
    m.unary_accept_sum_ = j.at("unary_accept_sum").get<int64_t>();
    m.oracle_accept_sum_ = j.at("oracle_accept_sum").get<int64_t>();
    m.near_ties_ = j.at("near_ties").get<int64_t>();
    const json& fm = j.at("first_miss");
    m.first_miss_ = {fm.at(0).get<int64_t>(), fm.at(1).get<int64_t>(), fm.at(2).get<int64_t>()};
  }

  static json Setting(const types::SamplingSetting& s) {
    return {s.temperature,    s.top_p, s.top_k, static_cast<int>(s.policy),
            s.truncate_draft, s.engine};
  }
  static types::SamplingSetting Setting(const json& j) {
    types::SamplingSetting s;
    s.temperature = j.at(0).get<double>();
    s.top_p = j.at(1).get<double>();
    s.top_k = j.at(2).get<int64_t>();
    s.policy = static_cast<types::ProposalPolicy>(j.at(3).get<int>());
    s.truncate_draft = j.at(4).get<bool>();
    s.engine = j.at(5).get<std::string>();
    return s;
  }

  static json Sampled(const SampledAccumulator& a) {
    json per = json::array();
    for (const SampledAccumulator::PerSetting& p : a.per_) {
      json samples = json::array();  // in sample order: [sample, sum, blocks]
      for (int64_t s : p.sample_order) {
        const auto& [sum, blocks] = p.per_sample.at(s);
        samples.push_back({s, sum, blocks});
      }
      per.push_back({{"alpha_sum", p.alpha_sum},
                     {"curve_sum", p.curve_sum},
                     {"marginal_sum", p.marginal_sum},
                     {"counted", p.counted},
                     {"accept_sum", p.accept_sum},
                     {"samples", samples}});
    }
    json settings = json::array();
    for (const types::SamplingSetting& s : a.settings_) settings.push_back(Setting(s));
    return {{"settings", settings}, {"blocks", a.blocks_}, {"per", per}};
  }

  static std::vector<types::SamplingSetting> Settings(const json& j) {
    std::vector<types::SamplingSetting> out;
    for (const json& s : j.at("settings")) out.push_back(Setting(s));
    return out;
  }

  static void Sampled(const json& j, SampledAccumulator& a) {
    a.blocks_ = j.at("blocks").get<int64_t>();
    const json& per = j.at("per");
    if (per.size() != a.per_.size()) {
      throw std::out_of_range(
          absl::StrCat(per.size(), " sampling sums for ", a.per_.size(), " setting(s)"));
    }
    for (size_t k = 0; k < per.size(); ++k) {
      SampledAccumulator::PerSetting& p = a.per_[k];
      const json& q = per[k];
      p.alpha_sum = q.at("alpha_sum").get<std::vector<double>>();
      p.curve_sum = q.at("curve_sum").get<std::vector<double>>();
      p.marginal_sum = q.at("marginal_sum").get<std::vector<double>>();
      p.counted = q.at("counted").get<std::vector<int64_t>>();
      p.accept_sum = q.at("accept_sum").get<double>();
      for (const json& s : q.at("samples")) {
        const int64_t sample = s.at(0).get<int64_t>();
        p.per_sample[sample] = {s.at(1).get<double>(), s.at(2).get<int64_t>()};
        p.sample_order.push_back(sample);
      }
    }
  }
};

std::string PartToJson(const EvalPart& part) {
  return json{{"metrics", PartStateAccess::Metrics(part.metrics)},
              {"sampled", PartStateAccess::Sampled(part.sampled)},
              {"context_positions", part.context_positions}}
      .dump();
}

absl::StatusOr<EvalPart> PartFromJson(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError("a shard's stored part is not a JSON object");
  }
  try {
    const int64_t block_size = j.at("metrics").at("block_size").get<int64_t>();
    EvalPart part(block_size, PartStateAccess::Settings(j.at("sampled")));
    PartStateAccess::Metrics(j.at("metrics"), part.metrics);
    PartStateAccess::Sampled(j.at("sampled"), part.sampled);
    part.context_positions = j.at("context_positions").get<int64_t>();
    return part;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("a shard's stored part: ", e.what()));
  }
}

}  // namespace dflash::eval
