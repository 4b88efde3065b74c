#include "model/drafter_model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <utility>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "model/drafter_schema.h"
#include "model/rope.h"
#include "model/tensor_ops.h"

namespace dflash::model {
namespace {

std::string DTypeStr(c10::ScalarType t) {
  return c10::toString(t);
}

// The config's own consistency, then fc.weight, which fixes the target
// hidden size (its width / K), the dtype and the device of every tensor.
absl::StatusOr<const at::Tensor*> CheckConfigAndFc(
    const config::DrafterConfig& c, const std::map<std::string, at::Tensor>& weights) {
  if (c.num_hidden_layers <= 0 || c.hidden_size <= 0 || c.head_dim <= 0 ||
      c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0 ||
      c.num_target_features() == 0 ||
      static_cast<int64_t>(c.sliding.size()) != c.num_hidden_layers) {
    return absl::InvalidArgumentError(
        absl::StrCat("drafter config is inconsistent: ", config::DescribeConfig(c)));
  }
  auto fc_it = weights.find("fc.weight");
  if (fc_it == weights.end() || !fc_it->second.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("drafter tensor 'fc.weight' is missing (expected shape [", c.hidden_size, ", ",
                     c.num_target_features(), " * target hidden size])"));
  }
  const at::Tensor& fc = fc_it->second;
  const int64_t K = c.num_target_features();
  if (fc.dim() != 2 || fc.size(0) != c.hidden_size || fc.size(1) % K != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor 'fc.weight' has shape ", ShapeText(fc.sizes()), "; expected [",
                     c.hidden_size, ", ", K, " * target hidden size] for ", K, " target layers"));
  }
  const c10::ScalarType dtype = fc.scalar_type();
  if (dtype != at::kFloat && dtype != at::kBFloat16 && dtype != at::kHalf) {
    return absl::InvalidArgumentError(absl::StrCat("tensor 'fc.weight' has dtype ", DTypeStr(dtype),
                                                   "; expected Float, BFloat16 or Half"));
  }
  return &fc;
}

// Every schema tensor: present when required, with its shape and fc's dtype
// and device; and no tensor the schema does not name.
absl::Status CheckWeights(const config::DrafterConfig& c,
                          const std::map<std::string, at::Tensor>& weights, const at::Tensor& fc) {
  const int64_t K = c.num_target_features();
  const c10::ScalarType dtype = fc.scalar_type();
  const c10::Device device = fc.device();
  std::set<std::string> expected;
  for (const weights::TensorSpec& spec : DrafterSchema(c, fc.size(1) / K)) {
    expected.insert(spec.name);
    auto it = weights.find(spec.name);
    if (it == weights.end() || !it->second.defined()) {
      if (!spec.required) continue;
      return absl::InvalidArgumentError(absl::StrCat("drafter tensor '", spec.name,
                                                     "' is missing (expected shape ",
                                                     ShapeText(spec.shape), ")"));
    }
    const at::Tensor& t = it->second;
    if (t.sizes() != at::IntArrayRef(spec.shape)) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' has shape ",
                                                     ShapeText(t.sizes()), "; expected ",
                                                     ShapeText(spec.shape)));
    }
    if (spec.exact_dtype.empty() && t.scalar_type() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' has dtype ",
                                                     DTypeStr(t.scalar_type()), "; expected ",
                                                     DTypeStr(dtype), " (the dtype of fc.weight)"));
    }
    if (t.device() != device) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", spec.name, "' is on ",
                                                     t.device().str(), "; expected ", device.str(),
                                                     " (the device of fc.weight)"));
    }
  }
  for (const auto& [name, t] : weights) {
    if (!expected.count(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected drafter tensor '", name, "' (shape ", ShapeText(t.sizes()), ")",
                       c.attention_bias ? "" : "; attention_bias is false in config.json"));
    }
  }
  return absl::OkStatus();
}

// lm_head, d2t and t2d (all three, none, or with the full vocabulary the
// head alone: identity): d2t maps the draft indices onto distinct target
// ids, and t2d marks exactly those ids.
absl::StatusOr<DraftVocab> BuildDraftVocab(const config::DrafterConfig& c, const at::Tensor& head,
                                           const at::Tensor& d2t, const at::Tensor& t2d) {
  DraftVocab v;
  const int present = head.defined() + d2t.defined() + t2d.defined();
  if (present == 0) return v;
  if (present == 1 && head.defined() && !c.reduced_vocab()) {
    // The full vocabulary without the maps: the drafter's own head, identity.
    return TorchGuard("building the identity vocabulary map", [&] {
      v.lm_head = head;
      v.draft_to_target = at::arange(head.size(0), head.options().dtype(at::kLong));
      v.target_to_draft = v.draft_to_target;
      return v;
    });
  }
  if (present != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a drafter vocabulary needs lm_head.weight, d2t and t2d together; the checkpoint holds ",
        head.defined() ? "lm_head.weight " : "", d2t.defined() ? "d2t " : "",
        t2d.defined() ? "t2d" : "", " (draft_vocab_size ", c.draft_vocab_size, ")"));
  }
  const int64_t Vd = d2t.size(0), V = t2d.size(0);
  std::string problem;
  RETURN_IF_ERROR(TorchGuard("checking d2t and t2d", [&] {
    const at::Tensor target = at::arange(Vd, d2t.options()) + d2t;
    const at::Tensor out = target.lt(0) | target.ge(V);
    if (out.any().item<bool>()) {
      const int64_t i = out.nonzero()[0][0].item<int64_t>();
      problem = absl::StrCat("d2t[", i, "] = ", d2t[i].item<int64_t>(), " maps draft index ", i,
                             " to target id ", target[i].item<int64_t>(), ", outside 0 .. ", V - 1);
      return;
    }
    const int64_t marked = t2d.sum().item<int64_t>();
    if (std::get<0>(at::_unique(target)).size(0) != Vd || marked != Vd ||
        !t2d.index_select(0, target).all().item<bool>()) {
      problem = absl::StrCat("t2d marks ", marked, " target ids but d2t maps the ", Vd,
                             " draft indices onto other (or repeated) ids: the two tables "
                             "disagree");
      return;
    }
    v.lm_head = head;
    v.draft_to_target = target;
    v.target_to_draft = at::full({V}, -1, d2t.options());
    v.target_to_draft.index_put_({target}, at::arange(Vd, d2t.options()));
  }));
  if (!problem.empty()) return absl::InvalidArgumentError(problem);
  return v;
}

}  // namespace

absl::StatusOr<DrafterModel> DrafterModel::Create(config::DrafterConfig config,
                                                  std::map<std::string, at::Tensor> weights) {
  const config::DrafterConfig& c = config;
  ASSIGN_OR_RETURN(const at::Tensor* fc, CheckConfigAndFc(c, weights));
  RETURN_IF_ERROR(CheckWeights(c, weights, *fc));
  const c10::Device device = fc->device();
  ASSIGN_OR_RETURN(RopeTables rope, ComputeRope(c.rope, c.head_dim));

  DrafterModel m;
  m.config_ = std::move(config);
  auto take = [&](const std::string& name) -> at::Tensor {
    auto it = weights.find(name);
    return it == weights.end() ? at::Tensor() : it->second;
  };
  m.fc_ = take(kFcWeight);
  m.hidden_norm_ = take(kHiddenNorm);
  m.norm_ = take(kFinalNorm);
  for (int64_t i = 0; i < m.config_.num_hidden_layers; ++i) {
    Layer l;
    for (int t = 0; t < kNumLayerTensors; ++t) {
      l[t] = take(LayerTensorName(i, static_cast<LayerTensor>(t)));
    }
    m.layers_.push_back(std::move(l));
  }
  if (m.config_.is_dflash2()) {
    m.selector_.projection = take(kSelectorProjection);
    m.selector_.predecessor = take(kPredecessorCodebook);
    m.selector_.successor = take(kSuccessorCodebook);
    m.selector_.top_k = m.config_.selector_top_k;
  }
  ASSIGN_OR_RETURN(m.draft_vocab_, BuildDraftVocab(m.config_, take(kDraftLmHead),
                                                   take(kDraftToTarget), take(kTargetToDraft)));
  m.attention_scaling_ = rope.attention_scaling;
  ASSIGN_OR_RETURN(m.inv_freq_, TorchGuard("moving rope tables",
                                           [&] { return InvFreqTensor(rope).to(device); }));
  return m;
}

absl::StatusOr<DrafterModel> DrafterModel::CopyTo(c10::Device device) const {
  if (device == this->device()) return *this;
  return TorchGuard(absl::StrCat("copying the drafter to ", device.str()), [&]() -> DrafterModel {
    DrafterModel m = *this;
    const auto move = [&](at::Tensor& t) {
      if (t.defined()) t = t.to(device);
    };
    for (at::Tensor* t : {&m.fc_, &m.hidden_norm_, &m.norm_, &m.inv_freq_, &m.selector_.projection,
                          &m.selector_.predecessor, &m.selector_.successor, &m.draft_vocab_.lm_head,
                          &m.draft_vocab_.draft_to_target, &m.draft_vocab_.target_to_draft}) {
      move(*t);
    }
    for (Layer& l : m.layers_) {
      for (at::Tensor& t : l) move(t);
    }
    return m;
  });
}

int64_t DrafterModel::bytes() const {
  int64_t total = 0;
  auto add = [&](const at::Tensor& t) {
    if (t.defined()) total += t.numel() * static_cast<int64_t>(t.element_size());
  };
  add(fc_);
  add(hidden_norm_);
  add(norm_);
  for (const Layer& l : layers_) {
    for (const at::Tensor& t : l) add(t);
  }
  add(selector_.projection);
  add(selector_.predecessor);
  add(selector_.successor);
  add(draft_vocab_.lm_head);
  add(draft_vocab_.draft_to_target);
  add(draft_vocab_.target_to_draft);
  return total;
}

absl::StatusOr<ContextCache> DrafterModel::EncodeContext(
    const std::vector<at::Tensor>& features, const std::vector<int64_t>& first_anchors) const {
  const config::DrafterConfig& c = config_;
  const c10::ScalarType dtype = fc_.scalar_type();
  if (!first_anchors.empty() && first_anchors.size() != features.size()) {
    return absl::InvalidArgumentError(absl::StrCat("got ", first_anchors.size(),
                                                   " first anchors for ", features.size(),
                                                   " context sequences; expected one each"));
  }
  ContextCache cache;
  for (size_t s = 0; s < features.size(); ++s) {
    const at::Tensor& f = features[s];
    if (!f.defined() || f.dim() != 2 || f.size(1) != fc_.size(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("context features of sequence ", s, " have shape ",
                       f.defined() ? ShapeText(f.sizes()) : "(undefined)", "; expected [L, ",
                       fc_.size(1), "] (", c.num_target_features(), " target layers x ",
                       fc_.size(1) / c.num_target_features(), ")"));
    }
    if (f.scalar_type() != dtype || f.device() != fc_.device()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "context features of sequence ", s, " are ", DTypeStr(f.scalar_type()), " on ",
          f.device().str(), "; expected ", DTypeStr(dtype), " on ", fc_.device().str()));
    }
    cache.lengths.push_back(f.size(0));
    cache.max_len = std::max(cache.max_len, f.size(0));
    const int64_t first =
        first_anchors.empty() ? 0 : std::clamp<int64_t>(first_anchors[s], 0, f.size(0));
    cache.first_anchor.push_back(first);
    // A block at anchor a sees keys k > a - W of a windowed layer.
    cache.windowed_from.push_back(
        c.sliding_window > 0 ? std::max<int64_t>(0, first - (c.sliding_window - 1)) : 0);
  }
  RETURN_IF_ERROR(TorchGuard("encoding drafter context", [&] { EncodeInto(features, cache); }));
  return cache;
}

// Layer l's context keys and values of x [rows, H], the context rows at
// positions with these cos/sin [rows, 1, d]: [nkv, rows, d] each, head-major
// as ContextCache keeps them.
std::pair<at::Tensor, at::Tensor> DrafterModel::ContextKV(const Layer& l, const at::Tensor& x,
                                                          const at::Tensor& cos,
                                                          const at::Tensor& sin) const {
  const config::DrafterConfig& c = config_;
  const int64_t rows = x.size(0), nkv = c.num_key_value_heads, d = c.head_dim;
  at::Tensor k = Linear(x, l[kWk], l[kBk]).view({rows, nkv, d});
  k = ApplyRope(RmsNorm(k, l[kKNorm], c.rms_norm_eps), cos, sin);
  at::Tensor v = Linear(x, l[kWv], l[kBv]).view({rows, nkv, d});
  return {k.permute({1, 0, 2}), v.permute({1, 0, 2})};
}

void DrafterModel::EncodeInto(const std::vector<at::Tensor>& features, ContextCache& cache) const {
  const config::DrafterConfig& c = config_;
  at::NoGradGuard no_grad;
  const int64_t S = static_cast<int64_t>(features.size());
  const int64_t L = cache.max_len;
  bool all_windowed = c.sliding_window > 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) all_windowed &= c.sliding[i];
  at::Tensor pos = at::arange(L, fc_.options().dtype(at::kLong));
  auto [cos, sin] = RopeCosSin(pos, inv_freq_, attention_scaling_, fc_.scalar_type());
  cos = cos.unsqueeze(1);  // [L, 1, d]
  sin = sin.unsqueeze(1);
  // Zero-padded to the longest sequence (ForwardBlocks never lets a block
  // see a padded key); each sequence is projected on its own rows only, so
  // the work scales with the positions, not with S x L.
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    cache.k.push_back(at::zeros({S, c.num_key_value_heads, L, c.head_dim}, fc_.options()));
    cache.v.push_back(at::zeros_like(cache.k.back()));
  }
  for (int64_t s = 0; s < S; ++s) {
    const int64_t len = cache.lengths[s];
    // Rows no layer reads are skipped: below the first window when every
    // layer is windowed.
    const int64_t from = all_windowed ? std::min(cache.windowed_from[s], len) : 0;
    if (len == from) continue;
    const at::Tensor ctx =
        RmsNorm(at::mm(features[s].narrow(0, from, len - from), fc_.t()), hidden_norm_,
                c.rms_norm_eps);  // [len - from, H]
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
      const bool windowed = c.sliding_window > 0 && c.sliding[i];
      const int64_t lo = windowed ? std::min(cache.windowed_from[s], len) : 0;
      if (lo == len) continue;
      auto [k, v] = ContextKV(layers_[i], ctx.narrow(0, lo - from, len - lo),
                              cos.narrow(0, lo, len - lo), sin.narrow(0, lo, len - lo));
      cache.k[i][s].narrow(1, lo, len - lo).copy_(k);
      cache.v[i][s].narrow(1, lo, len - lo).copy_(v);
    }
  }
}

}  // namespace dflash::model
