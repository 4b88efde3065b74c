// Reading what engines served (served/served_counters.h): vLLM scrapes with
// and without `_total`, summed label sets, every bad pair named; SGLang
// meta_info lines; z-lab's benchmark output; detection by content.
#include "served/served_counters.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::served {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A prometheus_client exposition of vLLM's four spec-decode counters (K = 3).
std::string Scrape(int drafts, int accepted, std::vector<int> per_pos, bool total = true,
                   const char* engine = "0") {
  const std::string t = total ? "_total" : "";
  const std::string labels = std::string("engine=\"") + engine + "\",model_name=\"m\"";
  std::string s =
      "# HELP vllm:spec_decode_num_drafts Number of spec decoding drafts.\n"
      "# TYPE vllm:spec_decode_num_drafts counter\n";
  s += "vllm:spec_decode_num_drafts" + t + "{" + labels + "} " + std::to_string(drafts) + ".0\n";
  s += "vllm:spec_decode_num_drafts_created{" + labels + "} 1.7e9\n";
  s += "vllm:spec_decode_num_draft_tokens" + t + "{" + labels + "} " + std::to_string(3 * drafts) +
       ".0\n";
  s += "vllm:spec_decode_num_accepted_tokens" + t + "{" + labels + "} " + std::to_string(accepted) +
       ".0\n";
  for (size_t p = 0; p < per_pos.size(); ++p) {
    s += "vllm:spec_decode_num_accepted_tokens_per_pos" + t + "{" + labels + ",position=\"" +
         std::to_string(p) + "\"} " + std::to_string(per_pos[p]) + ".0\n";
  }
  s += "vllm:num_requests_running{" + labels + "} 0.0\n";
  return s;
}

TEST(VllmScrapes, DeltaOfTwoScrapes) {
  auto c = ParseVllmScrapes(Scrape(10, 12, {6, 4, 2}), Scrape(110, 212, {96, 74, 42}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source, "vllm");
  EXPECT_EQ(c->weighting, "step");
  EXPECT_EQ(c->steps, 100);
  EXPECT_EQ(c->accepted_tokens, 200);
  EXPECT_THAT(c->accept_length, DoubleEq(3.0));  // 1 + 200 / 100
  EXPECT_EQ(*c->num_speculative_tokens, 3);
  EXPECT_THAT(c->accepted_per_position, ElementsAre(90, 70, 40));
  EXPECT_THAT(c->served_marginal, ElementsAre(DoubleEq(0.9), DoubleEq(0.7), DoubleEq(0.4)));
}

TEST(VllmScrapes, NamesWithoutTotalAndSummedEngines) {
  std::string after =
      Scrape(50, 100, {40, 35, 25}, false, "0") + Scrape(50, 50, {30, 15, 5}, false, "1");
  auto c = ParseVllmScrapes("", after);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->steps, 100);
  EXPECT_THAT(c->accepted_per_position, ElementsAre(70, 50, 30));
  EXPECT_THAT(c->notes, ElementsAre("summed over 2 label sets of vllm:spec_decode_num_drafts",
                                    "one scrape: counts since the server started"));
}

TEST(VllmScrapes, BadPairsAreNamed) {
  EXPECT_THAT(ParseVllmScrapes(Scrape(110, 212, {96, 74, 42}), Scrape(10, 12, {6, 4, 2})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "vllm:spec_decode_num_drafts went from 110 to 10 between the scrapes: the "
                       "server restarted, or the files are swapped (give before, then after)"));
  EXPECT_THAT(ParseVllmScrapes(Scrape(10, 12, {6, 4, 2}), Scrape(10, 12, {6, 4, 2})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("did not move between the scrapes (0 drafts)")));
  EXPECT_THAT(ParseVllmScrapes("", "vllm:num_requests_running 0\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the scrape has no vllm:spec_decode_num_drafts(_total) counter; "
                       "vllm:spec_decode series found: [] (was the server started with "
                       "--speculative-config, and is this vLLM's /metrics?)"));
  EXPECT_THAT(ParseVllmScrapes("", "vllm:spec_decode_num_drafts_total -5\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "the scrape line 1: vllm:spec_decode_num_drafts_total is -5: not a counter "
                       "value"));
  EXPECT_THAT(ParseVllmScrapes("", "vllm:spec_decode_num_drafts_total{a=\"b\"} x\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1: no numeric value")));
}

TEST(SglangJsonl, PoolsStepsAndCitesItsOwnFigure) {
  // Two requests: 10 steps with 25 accepted drafts (36 tokens with the
  // prefill one), 5 steps with 5 accepted (11 tokens); one that ended at prefill.
  const std::string text =
      R"({"text": "a", "meta_info": {"completion_tokens": 36, "spec_verify_ct": 10, "spec_accept_token_num": 25, "spec_draft_token_num": 30}})"
      "\n"
      R"({"completion_tokens": 11, "spec_verify_ct": 5, "spec_accept_token_num": 5, "spec_draft_token_num": 15})"
      "\n\n"
      R"({"meta_info": {"completion_tokens": 1, "spec_verify_ct": 0}})"
      "\n";
  auto c = ParseSglangJsonl(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->steps, 15);
  EXPECT_EQ(c->requests, 2);
  EXPECT_THAT(c->accept_length, DoubleEq(1 + 30.0 / 15));
  EXPECT_EQ(*c->num_speculative_tokens, 3);
  EXPECT_THAT(c->notes.back(), "1 requests without a verify step skipped");
}

TEST(SglangJsonl, WithoutAcceptedCountsTheFirstTokenComesOff) {
  auto c = ParseSglangJsonl(R"([{"completion_tokens": 36, "spec_verify_ct": 10}])");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->accept_length, DoubleEq(3.5));  // (36 - 1) / 10
  EXPECT_EQ(c->accepted_tokens, 25);
  EXPECT_THAT(ParseSglangJsonl("{\"completion_tokens\": 3}\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "SGLang line 1 has no spec_verify_ct (keys: [completion_tokens]); was the "
                       "server started with --speculative-algorithm?"));
  EXPECT_THAT(ParseSglangJsonl("{\"a\": 1}\nnot json\n").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "SGLang line 2 is not a JSON object: 'not json'"));
}

TEST(ZlabOutput, MeanAndHistogram) {
  const std::string text =
      "Baseline throughput: 40.00 tok/s\nDFlash throughput:  120.00 tok/s\n"
      "Average Acceptance length: 2.60\n"
      "Acceptance length histogram: ['0.0%', '20.0%', '30.0%', '20.0%', '30.0%']\n";
  auto c = ParseZlabOutput(text);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->weighting, "request");
  EXPECT_THAT(c->accept_length, DoubleEq(2.6));
  EXPECT_EQ(*c->num_speculative_tokens, 3);  // B = 4
  EXPECT_THAT(c->served_marginal, ElementsAre(DoubleEq(0.8), DoubleEq(0.5), DoubleEq(0.3)));
  EXPECT_THAT(
      ParseZlabOutput("Decoding speedup: 3\n").status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no 'Average Acceptance length:'")));
}

TEST(ServedFiles, DetectedByContentOneEngineAtATime) {
  auto c = ParseServedFiles(
      {{"before.prom", Scrape(0, 0, {0, 0, 0})}, {"after.prom", Scrape(4, 4, {2, 1, 1})}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->steps, 4);
  EXPECT_THAT(
      ParseServedFiles({{"a.prom", Scrape(1, 1, {})}, {"z.txt", "Average Acceptance length: 2\n"}})
          .status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "file 'z.txt' is a z-lab benchmark output but 'a.prom' is a vLLM /metrics "
               "scrape: calibrate one engine at a time"));
  EXPECT_THAT(
      ParseServedFiles({{"notes.txt", "hello\nworld\n"}}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               "file 'notes.txt' is not a vLLM /metrics scrape, SGLang meta_info JSON lines "
               "or z-lab benchmark output (first line: 'hello')"));
  EXPECT_THAT(
      ParseServedFiles({{"b", Scrape(10, 12, {6, 4, 2})}, {"a", Scrape(1, 1, {1, 0, 0})}}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("b -> a: vllm:spec_decode_num_drafts went from 10 to 1")));
}

}  // namespace
}  // namespace dflash::served
