#include "integration/jobs_e2e_fixture.h"

#include <stdlib.h>

#include <thread>
#include <utility>

#include <google/protobuf/util/message_differencer.h>

#include "client/eval_client.h"
#include "integration/tiny_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::testing {

using namespace std::chrono_literals;

pb::EvalRequest JobRequest(const std::string& dataset, int max_samples) {
  pb::EvalRequest r;
  r.set_drafter("m");
  r.set_dataset(dataset);
  r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  r.set_max_samples(max_samples);
  return r;
}

void ExpectSameNumbers(pb::EvalResult got, pb::EvalResult want) {
  got = WithoutTimings(std::move(got));
  want = WithoutTimings(std::move(want));
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(got, want)) << diff;
  EXPECT_GT(want.positions_size(), 0);
  EXPECT_GT(want.per_sample_size(), 0);
}

TempDir* JobsE2eTest::dir_ = nullptr;
std::string JobsE2eTest::data_;

void JobsE2eTest::SetUpTestSuite() {
  // Two spinning OpenMP threads per server on a busy 2-core machine make
  // timings erratic; passive waiting keeps the suite fast.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  dir_ = new TempDir();
  data_ = dir_->Join("data");
  MakeTinyFixture(data_);
  ASSERT_FALSE(::testing::Test::HasFailure());
  MakeLongDataset(data_, data_ + "/big", kBigSamples);
}

void JobsE2eTest::TearDownTestSuite() {
  delete dir_;
}

std::unique_ptr<ServerProcess> JobsE2eTest::Start(const std::string& state,
                                                  std::vector<std::string> extra) {
  extra.insert(extra.end(), {"--data-root", data_});
  auto server = ServerProcess::Start(dir_->Join(state), extra);
  EXPECT_OK(server.status());
  return server.ok() ? std::move(server).value() : nullptr;
}

void JobsE2eTest::Load(const std::string& address, bool big) {
  client::EvalClient c(address, 60s);
  pb::LoadTargetRequest t;
  t.set_name("t");
  t.set_path(data_ + "/target");
  ASSERT_OK(c.LoadTarget(t).status());
  for (auto [name, path] : {std::pair<std::string, std::string>{"d", "/dataset"},
                            {"split", "/dataset-split"},
                            {"big", "/big"}}) {
    if (name == "big" && !big) continue;
    pb::LoadDatasetRequest d;
    d.set_name(name);
    d.set_path(data_ + path);
    ASSERT_OK(c.LoadDataset(d).status());
  }
  pb::LoadDrafterRequest m;
  m.set_name("m");
  m.set_path(data_ + "/drafter");
  ASSERT_OK(c.LoadDrafter(m).status());
}

}  // namespace dflash::testing
