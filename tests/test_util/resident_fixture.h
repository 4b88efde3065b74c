// File: resident_fixture.h
// The tiny world (tiny_world.h) written once per test suite under a
// temporary data root, in the layout the tests of resident objects load
// from, and the load requests that name it:
//   <root>/models/target, <root>/models/drafter, <root>/datasets/data
// Used by resident::Registry's and core::EvalCoreImpl's tests. Header-only
// like tiny_world.h: only tests that link torch include it (test_util's
// library is torch-free).
//
//   class RegistryTest : public dflash::testing::ResidentFixture {};
//   TEST_F(RegistryTest, Loads) { ASSERT_OK(registry->LoadTarget(Target())); }
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "resident/load_request.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::testing {

class ResidentFixture : public ::testing::Test {
 protected:
  // The tiny target's embed + lm_head, fp32.
  static constexpr int64_t kTargetBytes = 2 * 16 * 16 * 4;

  // A suite that needs more on disk writes it after calling this.
  static void SetUpTestSuite() {
    world_ = new TinyWorld(MakeTinyWorld(TinySpec{}));
    dir_ = new TempDir();
    root_ = std::filesystem::canonical(dir_->path()).string();
    world_->WriteTarget(root_ + "/models/target");
    world_->WriteDrafter(root_ + "/models/drafter");
    world_->WriteDataset(root_ + "/datasets/data");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
    delete world_;
    world_ = nullptr;
  }

  static resident::LoadTargetParams Target(const std::string& name = "t") {
    resident::LoadTargetParams p;
    p.name = name;
    p.path = root_ + "/models/target";
    return p;
  }
  // `dir`: a drafter folder under <root>/models.
  static resident::LoadDrafterParams Drafter(const std::string& name = "m",
                                             const std::string& dir = "drafter") {
    resident::LoadDrafterParams p;
    p.name = name;
    p.path = root_ + "/models/" + dir;
    return p;
  }
  static resident::LoadDatasetParams Dataset(const std::string& name = "d") {
    resident::LoadDatasetParams p;
    p.name = name;
    p.path = root_ + "/datasets/data";
    return p;
  }

  // The drafter's weights in fp32.
  static int64_t WeightBytes() {
    int64_t n = 0;
    for (const auto& [_, w] : world_->weights) n += w.numel() * 4;
    return n;
  }
  // The dataset's capture files on disk (what a load's estimate reads).
  static int64_t DatasetFileBytes() {
    int64_t total = 0;
    for (const auto& e : std::filesystem::directory_iterator(root_ + "/datasets/data")) {
      if (e.path().extension() == ".ckpt") total += static_cast<int64_t>(e.file_size());
    }
    return total;
  }

  static inline TinyWorld* world_ = nullptr;
  static inline TempDir* dir_ = nullptr;
  static inline std::string root_;
};

}  // namespace dflash::testing
