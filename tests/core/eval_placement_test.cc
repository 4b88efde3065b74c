// core/eval_placement and the --device list: slot names, which slots an
// evaluation gets for objects on the CPU, and lists that are refused.
#include "core/eval_placement.h"

#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/tiny_world.h"

namespace dflash::core {
namespace {

using ::testing::ElementsAre;

TEST(EvalPlacementTest, SlotNamesNumberRepeatedCpus) {
  EXPECT_THAT(SlotNames({"cpu"}), ElementsAre("cpu"));
  EXPECT_THAT(SlotNames({"cpu", "cpu"}), ElementsAre("cpu#0", "cpu#1"));
  EXPECT_THAT(SlotNames({"cuda:0", "cuda:1"}), ElementsAre("cuda:0", "cuda:1"));
  EXPECT_TRUE(SlotNames({}).empty());
}

// CPU objects: every cpu entry is a slot on the same objects; GPU entries
// are left out (the pair stays where it was loaded); no entry: its device.
TEST(EvalPlacementTest, CpuSlotsShareTheResidentObjects) {
  const dflash::testing::TinyWorld world = dflash::testing::MakeTinyWorld({});
  ASSERT_OK_AND_ASSIGN(model::DrafterModel m,
                       model::DrafterModel::Create(world.cfg, world.weights));
  auto drafter = std::make_shared<const model::DrafterModel>(std::move(m));
  auto target = std::make_shared<const weights::TargetTensors>(world.Target());
  ASSERT_OK_AND_ASSIGN(EvalSlots two,
                       MakeEvalSlots({"cpu", "cuda:0", "cpu"}, drafter, target, 4, "host:7"));
  ASSERT_EQ(two.placement.slots.size(), 2u);
  EXPECT_EQ(two.placement.slots[0].name, "cpu#0");
  EXPECT_EQ(two.placement.slots[1].name, "cpu#1");
  EXPECT_EQ(two.placement.slots[0].drafter, drafter.get());
  EXPECT_EQ(two.placement.slots[1].target, target.get());
  EXPECT_EQ(two.placement.threads, 4);
  EXPECT_EQ(two.placement.server, "host:7");
  ASSERT_OK_AND_ASSIGN(EvalSlots own, MakeEvalSlots({}, drafter, target, 1, "host:7"));
  ASSERT_EQ(own.placement.slots.size(), 1u);
  EXPECT_EQ(own.placement.slots[0].name, "cpu");
}

TEST(EvalPlacementTest, ThisServerIsHostColonPid) {
  EXPECT_THAT(ThisServer(), ::testing::EndsWith(":" + std::to_string(getpid())));
}

}  // namespace
}  // namespace dflash::core
