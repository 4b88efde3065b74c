// File: block_request.h
// One draft block to score: which sequence, where it is anchored, where the
// sequence ends. Its own file so the scorer and its sampled-acceptance hook
// (sampled_alphas) both read it without including each other.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace dflash::eval {

struct BlockRequest {
  int64_t seq = 0;     // index into the ContextCache
  int64_t anchor = 0;  // a: slot 0 holds t[a], slot j drafts position a + j
  int64_t end = 0;     // positions >= end do not exist (L, or L' in replay)
  const std::vector<int64_t>* tokens = nullptr;  // the sequence's token ids
  // The sample's captured final hidden state [L, H_t], for sampled
  // acceptance (EnableSampling); null otherwise.
  const at::Tensor* final_hidden = nullptr;
};

}  // namespace dflash::eval
