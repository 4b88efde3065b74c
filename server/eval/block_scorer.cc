#include "eval/block_scorer.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "eval/sampled_alphas.h"
#include "model/candidate_selector.h"

namespace dflash::eval {

BlockScorer::BlockScorer(const model::DrafterModel& drafter, const weights::TargetTensors& target,
                         const data::EvalDataset& dataset, int64_t block_size,
                         int64_t max_chunk_elements, model::Semantics semantics)
    : drafter_(drafter),
      target_(target),
      dataset_(dataset),
      block_size_(block_size),
      max_chunk_elements_(std::max<int64_t>(max_chunk_elements, 1)),
      semantics_(semantics) {}

absl::StatusOr<model::ContextCache> BlockScorer::EncodeSamples(
    const std::vector<size_t>& samples) const {
  std::vector<at::Tensor> features;
  for (size_t i : samples) {
    ASSIGN_OR_RETURN(at::Tensor f, dataset_.Features(i, drafter_.config().target_layer_ids));
    ASSIGN_OR_RETURN(at::Tensor cast, TorchGuard("casting features", [&] {
                       return f.to(drafter_.device(), drafter_.dtype());
                     }));
    features.push_back(std::move(cast));
  }
  return drafter_.EncodeContext(features);
}

int64_t BlockScorer::BlocksPerChunk(int64_t context_length) const {
  const int64_t heads = drafter_.config().num_attention_heads;
  const int64_t per_block = std::max(heads * block_size_ * (context_length + block_size_),
                                     (block_size_ - 1) * target_.vocab_size);
  return std::max<int64_t>(1, max_chunk_elements_ / per_block);
}

int64_t BlockScorer::SequencesPerGroup() const {
  int64_t longest = 1;
  for (size_t i = 0; i < dataset_.size(); ++i) {
    longest = std::max<int64_t>(longest, dataset_.sample(i).input_ids.numel());
  }
  return std::min<int64_t>(256, BlocksPerChunk(longest));
}

namespace {

// Block inputs [t[a], m, ..., m], labels t[a + j] (-1 where absent) and,
// under zlab-current, each block's length min(B, end - a); on the host.
struct HostBlockInputs {
  at::Tensor inputs;       // [nb, B]
  at::Tensor labels;       // [nb, B - 1]
  at::Tensor anchors;      // [nb]
  at::Tensor seq;          // [nb]
  at::Tensor lengths;      // [nb]
  bool shortened = false;  // some block has fewer than B slots
};

HostBlockInputs MakeBlockInputs(const std::vector<BlockRequest>& blocks, int64_t B, int64_t mask,
                                model::Semantics semantics) {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  const bool current = semantics == model::Semantics::kZlabCurrent;
  HostBlockInputs h;
  h.inputs = at::full({nb, B}, mask, at::kLong);
  h.labels = at::full({nb, B - 1}, -1, at::kLong);
  h.anchors = at::empty({nb}, at::kLong);
  h.seq = at::empty({nb}, at::kLong);
  h.lengths = at::empty({nb}, at::kLong);
  auto in = h.inputs.accessor<int64_t, 2>();
  auto lab = h.labels.accessor<int64_t, 2>();
  auto anc = h.anchors.accessor<int64_t, 1>();
  auto sq = h.seq.accessor<int64_t, 1>();
  auto len = h.lengths.accessor<int64_t, 1>();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockRequest& r = blocks[b];
    const std::vector<int64_t>& t = *r.tokens;
    in[b][0] = t[r.anchor];
    for (int64_t j = 1; j < B && r.anchor + j < r.end; ++j) lab[b][j - 1] = t[r.anchor + j];
    anc[b] = r.anchor;
    sq[b] = r.seq;
    len[b] = current ? std::clamp<int64_t>(r.end - r.anchor, 1, B) : B;
    h.shortened |= len[b] < B;
  }
  return h;
}

// What the drafted slots' logits are reduced to, per row (block slot).
struct SlotReductions {
  at::Tensor drafts;            // [rows] argmax
  at::Tensor ce;                // [rows] fp32 cross entropy (zeros when skipped)
  at::Tensor top_val, top_ids;  // DFlash 2: [rows, k]
};

// logits [rows, V] for the drafted slots h [rows, H], through the target's
// head, a slice of rows at a time: each slice's logits stay small enough to
// be reused from the allocator (no page faults on a fresh buffer per chunk)
// and are reduced (argmax, top-k, log-sum-exp, label logit) while warm.
SlotReductions ReduceLogits(const at::Tensor& h, const at::Tensor& head_t,
                            const at::Tensor& flat_labels, const model::DrafterConfig& cfg,
                            int64_t vocab_size, int64_t k, CrossEntropy cross_entropy) {
  const int64_t rows = h.size(0);
  const int64_t slice = std::max<int64_t>(
      1, std::min<int64_t>(rows, (int64_t{8} << 20) / std::max<int64_t>(1, vocab_size)));
  const at::TensorOptions lopt = at::TensorOptions().dtype(at::kLong).device(h.device());
  SlotReductions red;
  red.drafts = at::empty({rows}, lopt);
  red.ce = at::zeros({rows}, lopt.dtype(at::kFloat));
  if (k > 0) {
    red.top_val = at::empty({rows, k}, lopt.dtype(at::kFloat));
    red.top_ids = at::empty({rows, k}, lopt);
  }
  for (int64_t r0 = 0; r0 < rows; r0 += slice) {
    const int64_t n = std::min(slice, rows - r0);
    at::Tensor logits = at::mm(h.narrow(0, r0, n), head_t).to(at::kFloat);
    if (cfg.output_multiplier != 1.0) logits = logits * cfg.output_multiplier;
    if (cfg.final_logit_softcapping > 0) {
      const double c = cfg.final_logit_softcapping;
      logits = at::tanh(logits / c) * c;
    }
    red.drafts.narrow(0, r0, n).copy_(logits.argmax(-1));
    if (k > 0) {
      auto [v, i] = logits.topk(k, -1);
      red.top_val.narrow(0, r0, n).copy_(v);
      red.top_ids.narrow(0, r0, n).copy_(i);
    }
    if (cross_entropy == CrossEntropy::kCompute) {
      at::Tensor gathered =
          logits.gather(-1, flat_labels.narrow(0, r0, n).unsqueeze(-1)).squeeze(-1);
      red.ce.narrow(0, r0, n).copy_(at::logsumexp(logits, -1) - gathered);
    }
  }
  return red;
}

// Per block, its labelled slots: whether the drafted path is right, the
// cross entropy and, with a selector (DFlash 2, k > 0), the unary argmax,
// coverage of the label in the top k, the teacher-forced walk and near ties.
// DFlash 1 drafts the unary argmax; DFlash 2's selector walks the slots.
std::vector<BlockScore> CollectScores(const HostBlockInputs& host, const SlotReductions& red,
                                      const at::Tensor& h, const model::SelectorWeights* selector,
                                      CrossEntropy cross_entropy) {
  const int64_t nb = host.inputs.size(0), B = host.inputs.size(1);
  const int64_t k = selector != nullptr ? selector->top_k : 0;
  const c10::Device device = h.device();
  const at::Tensor lab_dev = host.labels.to(device);
  at::Tensor path = red.drafts.view({nb, B - 1});
  at::Tensor unary = path;
  at::Tensor covered, tf_ok, near;
  if (k > 0) {
    model::SelectorWalk walk = model::WalkSelector(
        *selector, h.view({nb, B - 1, -1}), red.top_val.view({nb, B - 1, k}),
        red.top_ids.view({nb, B - 1, k}), host.inputs.select(1, 0).to(device), lab_dev);
    path = walk.path;
    tf_ok = walk.teacher_forced.eq(lab_dev);
    near = walk.near_tie;
    covered = red.top_ids.view({nb, B - 1, k}).eq(lab_dev.unsqueeze(-1)).any(-1);
    tf_ok = tf_ok & covered;
  }
  const at::Tensor correct = path.eq(lab_dev).to(at::kCPU, at::kByte).contiguous();
  const at::Tensor unary_ok = unary.eq(lab_dev).to(at::kCPU, at::kByte).contiguous();
  const at::Tensor ce_host = red.ce.to(at::kCPU).contiguous();
  at::Tensor cov_host, tf_host, near_host;
  if (k > 0) {
    cov_host = covered.to(at::kCPU, at::kByte).contiguous();
    tf_host = tf_ok.to(at::kCPU, at::kByte).contiguous();
    near_host = near.to(at::kCPU, at::kByte).contiguous();
  }
  const float* c = ce_host.data_ptr<float>();
  const int64_t* lab_p = host.labels.data_ptr<int64_t>();
  std::vector<BlockScore> out(nb);
  for (int64_t b = 0; b < nb; ++b) {
    const int64_t* lb = lab_p + b * (B - 1);
    int64_t m = 0;
    while (m < B - 1 && lb[m] >= 0) ++m;
    const int64_t off = b * (B - 1);
    auto take = [&](const at::Tensor& t) {
      const uint8_t* p = t.data_ptr<uint8_t>() + off;
      return std::vector<uint8_t>(p, p + m);
    };
    out[b].correct = take(correct);
    if (cross_entropy == CrossEntropy::kCompute) out[b].cross_entropy.assign(c + off, c + off + m);
    if (k > 0) {
      out[b].unary_correct = take(unary_ok);
      out[b].covered = take(cov_host);
      out[b].tf_correct = take(tf_host);
      for (uint8_t x : take(near_host)) out[b].near_ties += x;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<BlockScore>> BlockScorer::Score(const std::vector<BlockRequest>& blocks,
                                                           const model::ContextCache& context,
                                                           CrossEntropy cross_entropy) const {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  const int64_t B = block_size_;
  const model::DrafterConfig& cfg = drafter_.config();
  const HostBlockInputs host = MakeBlockInputs(blocks, B, cfg.mask_token_id, semantics_);

  const c10::Device device = drafter_.device();
  ASSIGN_OR_RETURN(
      at::Tensor x0, TorchGuard("embedding block inputs", [&] {
        at::Tensor e =
            target_.embed.index_select(0, host.inputs.view({-1}).to(device)).view({nb, B, -1});
        // z-lab scales in the embedding's dtype, then the drafter casts.
        if (cfg.input_embedding_scale != 1.0) e = e * cfg.input_embedding_scale;
        return e.to(drafter_.dtype());
      }));
  model::BlockOptions options;
  options.semantics = semantics_;
  if (host.shortened) options.lengths = host.lengths.to(device);
  ASSIGN_OR_RETURN(
      at::Tensor hidden,
      drafter_.ForwardBlocks(x0, host.anchors.to(device), host.seq.to(device), context, options));
  const model::SelectorWeights* selector = drafter_.selector();

  return TorchGuard("scoring drafts", [&]() -> std::vector<BlockScore> {
    at::Tensor h =
        hidden.narrow(1, 1, B - 1).to(target_.lm_head.scalar_type()).reshape({nb * (B - 1), -1});
    const at::Tensor head_t = target_.lm_head.t();
    const at::Tensor flat_labels = host.labels.view({-1}).clamp_min(0).to(device);
    const int64_t k = selector != nullptr ? selector->top_k : 0;
    const SlotReductions red =
        ReduceLogits(h, head_t, flat_labels, cfg, target_.vocab_size, k, cross_entropy);
    std::vector<BlockScore> scores = CollectScores(host, red, h, selector, cross_entropy);
    if (!sampling_.empty()) {
      AddSampledAlphas(blocks, h, drafter_, target_, sampling_, final_norm_applied_, scores);
    }
    return scores;
  });
}

}  // namespace dflash::eval
