#include "full_eval_request.h"

#include <cstdint>

namespace dflash::service {

::dflash::eval::v1::EvalRequest FullEvalRequest() {
  ::dflash::eval::v1::EvalRequest r;
  r.set_drafter("step-4000");
  r.set_dataset("gsm8k");
  r.set_target("qwen3-8b");
  r.set_mode(::dflash::eval::v1::EVAL_MODE_REPLAY);
  r.set_max_samples(12);
  r.set_max_blocks(7);
  r.set_anchors(::dflash::eval::v1::ANCHOR_STRATEGY_RANDOM);
  r.set_seed(uint64_t{1} << 40);
  r.set_block_size(8);
  r.set_max_new_tokens(256);
  r.set_semantics("zlab-2025");
  r.set_run("run-a");
  r.set_step(4000);
  (*r.mutable_labels())["lr"] = "3e-4";
  (*r.mutable_labels())["team/owner"] = "eval";
  r.set_unload_after(true);
  r.set_metrics("acceptance");
  r.set_full_positions(true);
  return r;
}

}  // namespace dflash::service
