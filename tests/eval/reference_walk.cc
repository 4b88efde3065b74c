#include "eval/reference_walk.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "model/reference_drafter.h"

namespace dflash::eval::testing {

using dflash::testing::TinyWorld;

const RefBlock& ReferenceDrafts::Block(size_t seq, int64_t anchor, int64_t len) {
  const auto key = std::make_tuple(seq, anchor, len, w_.tokens[seq][anchor]);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  config::DrafterConfig cfg = w_.cfg;
  cfg.block_size = len;
  std::vector<int64_t> ids(len, cfg.mask_token_id);
  ids[0] = w_.tokens[seq][anchor];
  const at::Tensor x0 = w_.embed.index_select(0, at::tensor(ids, at::kLong));
  const std::vector<double> out =
      model::reference::ReferenceBlock(cfg, w_.weights, w_.DrafterFeatures(seq), x0, anchor);
  const int64_t H = cfg.hidden_size, V = w_.spec.vocab;
  const at::Tensor head = w_.lm_head.to(at::kDouble).contiguous();
  const double* lm = head.data_ptr<double>();
  RefBlock b;
  for (int64_t j = 1; j < len; ++j) {
    std::vector<double> logits(V, 0.0);
    for (int64_t v = 0; v < V; ++v) {
      for (int64_t h = 0; h < H; ++h) logits[v] += out[j * H + h] * lm[v * H + h];
    }
    const int64_t best = std::max_element(logits.begin(), logits.end()) - logits.begin();
    double second = -1e300;
    for (int64_t v = 0; v < V; ++v) {
      if (v != best) second = std::max(second, logits[v]);
    }
    b.drafts.push_back(best);
    b.min_margin = std::min(b.min_margin, logits[best] - second);
    b.logits.push_back(std::move(logits));
  }
  return cache_.emplace(key, std::move(b)).first->second;
}

namespace {

int64_t FirstResponse(const std::vector<uint8_t>& m) {
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

// Compares the drafts at positions anchor + j < end.
ExpectedBlock Compare(const RefBlock& rb, const TinyWorld& w, size_t seq, int64_t anchor,
                      int64_t end, double* min_margin) {
  ExpectedBlock e;
  e.seq = seq;
  e.anchor = anchor;
  for (size_t j = 1; j <= rb.drafts.size() && anchor + static_cast<int64_t>(j) < end; ++j) {
    const int64_t label = w.tokens[seq][anchor + j];
    e.correct.push_back(rb.drafts[j - 1] == label);
    const std::vector<double>& lg = rb.logits[j - 1];
    const double mx = *std::max_element(lg.begin(), lg.end());
    double z = 0;
    for (double x : lg) z += std::exp(x - mx);
    e.ce.push_back(mx + std::log(z) - lg[label]);
    *min_margin = std::min(*min_margin, rb.min_margin);
  }
  while (e.n < static_cast<int64_t>(e.correct.size()) && e.correct[e.n]) ++e.n;
  return e;
}

size_t Count(const TinyWorld& w, const WalkOptions& o) {
  return o.samples > 0 ? std::min(o.samples, w.tokens.size()) : w.tokens.size();
}

}  // namespace

Expected ExpectReplay(ReferenceDrafts& ref, const TinyWorld& w, const WalkOptions& o) {
  const bool current = o.semantics == types::Semantics::kZlabCurrent;
  const int64_t B = o.block_size;
  Expected ex;
  for (size_t s = 0; s < Count(w, o); ++s) {
    const int64_t L = static_cast<int64_t>(w.tokens[s].size());
    const int64_t P = FirstResponse(w.masks[s]);
    int64_t blocks = 0, total = 0;
    if (P >= 0) {
      const int64_t end = o.max_new_tokens > 0 ? std::min(L, P + o.max_new_tokens) : L;
      int64_t pos = P;
      while ((current ? pos + 1 < end : pos < end) &&
             (o.max_blocks <= 0 || blocks < o.max_blocks)) {
        const int64_t len = current ? std::min(B, end - pos) : B;
        ExpectedBlock e = Compare(ref.Block(s, pos, len), w, s, pos, end, &ex.min_margin);
        e.value = current ? std::min(e.n + 1, end - pos - 1) : e.n + 1;
        pos += e.value;
        total += e.value;
        ++blocks;
        ex.blocks.push_back(std::move(e));
      }
    }
    ex.sample_blocks.push_back(blocks);
    ex.sample_total.push_back(total);
  }
  return ex;
}

Expected ExpectAnchorAll(ReferenceDrafts& ref, const TinyWorld& w, const WalkOptions& o) {
  const bool current = o.semantics == types::Semantics::kZlabCurrent;
  const int64_t B = o.block_size;
  Expected ex;
  for (size_t s = 0; s < Count(w, o); ++s) {
    const int64_t L = static_cast<int64_t>(w.tokens[s].size());
    int64_t blocks = 0, total = 0;
    for (int64_t a = 0; a + 1 < L; ++a) {
      if (!w.masks[s][a] || !w.masks[s][a + 1]) continue;
      if (o.max_blocks > 0 && blocks >= o.max_blocks) break;
      const int64_t len = current ? std::min(B, L - a) : B;
      ExpectedBlock e = Compare(ref.Block(s, a, len), w, s, a, L, &ex.min_margin);
      e.value = e.n + 1;
      total += e.value;
      ++blocks;
      ex.blocks.push_back(std::move(e));
    }
    ex.sample_blocks.push_back(blocks);
    ex.sample_total.push_back(total);
  }
  return ex;
}

void DesignTokens(TinyWorld& w, int64_t B) {
  ReferenceDrafts ref(w);
  const int64_t filler_mod = w.spec.vocab - 1;
  for (size_t s = 0; s < w.tokens.size(); ++s) {
    const int64_t L = static_cast<int64_t>(w.tokens[s].size());
    int64_t pos = FirstResponse(w.masks[s]);
    if (pos < 0) continue;
    int64_t step = static_cast<int64_t>(s);
    while (pos < L) {
      const int64_t k = (step * 2 + 1) % B;  // 1, 3, 1, 3 ... for B = 4
      const RefBlock& rb = ref.Block(s, pos, B);
      const std::vector<int64_t> drafts = rb.drafts;  // copy: the cache may rehash
      for (int64_t j = 1; j <= k && pos + j < L; ++j) w.tokens[s][pos + j] = drafts[j - 1];
      // A miss at k + 1 when the block drafts that far (k = B - 1 accepts the
      // whole block: there is no draft k + 1 to miss).
      if (k < static_cast<int64_t>(drafts.size()) && pos + k + 1 < L) {
        // Any token other than the draft there.
        w.tokens[s][pos + k + 1] = (drafts[k] + 1 + step) % filler_mod;
        if (w.tokens[s][pos + k + 1] == drafts[k])
          w.tokens[s][pos + k + 1] = (drafts[k] + 2) % filler_mod;
      }
      pos += k + 1;
      ++step;
    }
  }
}

}  // namespace dflash::eval::testing
