#include "eval/tiny_eval_world.h"

#include <utility>

#include "common/status_macros.h"

namespace dflash::eval::testing {

absl::StatusOr<std::unique_ptr<TinyEvalWorld>> LoadTinyEvalWorld(int64_t block_size) {
  auto w = std::make_unique<TinyEvalWorld>();
  w->world = std::make_unique<dflash::testing::TinyWorld>(
      dflash::testing::MakeTinyWorld(dflash::testing::TinySpec{}));
  DesignTokens(*w->world, block_size);
  w->dir = std::make_unique<dflash::testing::TempDir>();
  w->world->WriteDataset(w->dir->Join("data"));
  data::DatasetLoadOptions o;
  o.path = w->dir->Join("data");
  ASSIGN_OR_RETURN(data::EvalDataset dataset, data::EvalDataset::Load(o));
  w->dataset = std::make_unique<data::EvalDataset>(std::move(dataset));
  ASSIGN_OR_RETURN(model::DrafterModel drafter,
                   model::DrafterModel::Create(w->world->cfg, w->world->weights));
  w->drafter = std::make_unique<model::DrafterModel>(std::move(drafter));
  w->target = std::make_unique<weights::TargetTensors>(w->world->Target());
  w->ref = std::make_unique<ReferenceDrafts>(*w->world);
  return w;
}

}  // namespace dflash::eval::testing
