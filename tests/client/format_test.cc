// The client's human renderings: numbers, bars and the +1 explanation.
#include "client/format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::client {
namespace {

using ::testing::HasSubstr;

TEST(FormatTest, HumanBytesAndSeconds) {
  EXPECT_EQ(HumanBytes(0), "0 B");
  EXPECT_EQ(HumanBytes(1023), "1023 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3ll << 30), "3.0 GiB");
  EXPECT_EQ(HumanSeconds(1.25), "1.2s");
  EXPECT_EQ(HumanSeconds(125), "2m 5s");
  EXPECT_EQ(HumanSeconds(3 * 86400 + 4 * 3600), "3d 4h");
}

TEST(FormatTest, EvalResultShowsTablesAndTheBonusToken) {
  pb::EvalResult r;
  r.set_mode(pb::EVAL_MODE_REPLAY);
  r.set_block_size(4);
  r.set_samples(2);
  r.set_blocks(10);
  r.set_accept_length_pooled(2.5);
  r.set_tau(2.25);
  for (int j = 1; j <= 3; ++j) {
    pb::PositionMetrics* p = r.add_positions();
    p->set_position(j);
    p->set_counted(10);
    p->set_accuracy(j == 1 ? 1.0 : 0.5);
    p->set_acceptance(0.5);
    p->set_conditional(0.5);
  }
  for (int h : {2, 3, 5, 0}) r.add_accepted_histogram(h);
  const std::string s = FormatEvalResult(r);
  EXPECT_THAT(s, HasSubstr("replay mode, block size 4: 2 sample(s), 10 block(s)"));
  EXPECT_THAT(s, HasSubstr("accept length (pooled over blocks) 2.500"));
  EXPECT_THAT(s, HasSubstr("tau (z-lab: mean over samples) 2.250"));
  EXPECT_THAT(s, HasSubstr("+ 1 bonus token from the target"));
  EXPECT_THAT(s, HasSubstr("     1        10   1.0000     0.5000      0.5000  " +
                           std::string(30, '#')));
  EXPECT_THAT(s, HasSubstr("  n=2          5  " + std::string(15, '#') + std::string(15, '.')));
}

TEST(FormatTest, ReportPutsProblemsFirstAndHidesFoundTensors) {
  pb::WeightReport rep;
  rep.set_ok(false);
  rep.set_path("/m/ckpt");
  rep.set_missing(1);
  rep.add_problems("missing tensor 'layers.3.mlp.up_proj.weight'");
  pb::TensorEntry* found = rep.add_tensors();
  found->set_name("fc.weight");
  found->set_status(pb::TensorEntry::STATUS_FOUND);
  pb::TensorEntry* missing = rep.add_tensors();
  missing->set_name("layers.3.mlp.up_proj.weight");
  missing->set_status(pb::TensorEntry::STATUS_MISSING);
  missing->add_expected_shape(48);
  missing->add_expected_shape(32);
  const std::string s = FormatReport(rep, false);
  EXPECT_THAT(s, HasSubstr("FAILED  /m/ckpt"));
  EXPECT_LT(s.find("\nproblems\n"), s.find("\ntensors\n"));
  EXPECT_THAT(s, HasSubstr("expected [48, 32]"));
  EXPECT_EQ(s.find("fc.weight"), std::string::npos);
  EXPECT_NE(FormatReport(rep, true).find("fc.weight"), std::string::npos);
}

TEST(FormatTest, JsonUsesTheProtoMapping) {
  pb::Resource r;
  r.set_name("x");
  r.set_bytes(5);
  const std::string j = ToJson(r);
  EXPECT_THAT(j, HasSubstr("\"name\": \"x\""));
  EXPECT_THAT(j, HasSubstr("\"bytes\": \"5\""));       // int64 as a string, per the mapping
  EXPECT_THAT(j, HasSubstr("\"sourcePath\": \"\""));   // defaults printed
}

}  // namespace
}  // namespace dflash::client
