#include "model/reference_drafter.h"

#include <cmath>
#include <stdexcept>

#include <ATen/ATen.h>

namespace dflash::model::reference {
namespace {

using Vec = std::vector<double>;

// A dense matrix in double, row-major.
struct Mat {
  int64_t rows = 0, cols = 0;
  Vec v;
  double at(int64_t r, int64_t c) const { return v[r * cols + c]; }
};

Mat Read(const std::map<std::string, at::Tensor>& w, const std::string& name) {
  auto it = w.find(name);
  if (it == w.end()) throw std::runtime_error("reference: no tensor " + name);
  at::Tensor t = it->second.to(at::kCPU).to(at::kDouble).contiguous();
  Mat m;
  m.rows = t.dim() == 2 ? t.size(0) : 1;
  m.cols = t.dim() == 2 ? t.size(1) : t.size(0);
  m.v.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  return m;
}

Mat ReadOrZero(const std::map<std::string, at::Tensor>& w, const std::string& name, int64_t n) {
  if (w.count(name)) return Read(w, name);
  Mat m;
  m.rows = 1;
  m.cols = n;
  m.v.assign(n, 0.0);
  return m;
}

// y = x W^T + b for one row.
Vec Apply(const Mat& W, const Vec& x, const Mat* b) {
  Vec y(W.rows, 0.0);
  for (int64_t o = 0; o < W.rows; ++o) {
    double s = 0;
    for (int64_t i = 0; i < W.cols; ++i) s += W.at(o, i) * x[i];
    y[o] = s + (b ? b->v[o] : 0.0);
  }
  return y;
}

// w * x / sqrt(mean(x^2) + eps) over [off, off+n).
void RmsInPlace(Vec& x, int64_t off, int64_t n, const Mat& w, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
  const double r = 1.0 / std::sqrt(ss / n + eps);
  for (int64_t i = 0; i < n; ++i) x[off + i] = w.v[i] * x[off + i] * r;
}

// Rotates each head of x (heads * d) for position pos.
void RopeInPlace(Vec& x, int64_t heads, int64_t d, double pos, const Vec& inv, double scale) {
  for (int64_t h = 0; h < heads; ++h) {
    double* p = &x[h * d];
    for (int64_t i = 0; i < d / 2; ++i) {
      const double ang = pos * inv[i];
      const double c = std::cos(ang) * scale, s = std::sin(ang) * scale;
      const double a = p[i], b = p[i + d / 2];
      p[i] = a * c - b * s;
      p[i + d / 2] = b * c + a * s;
    }
  }
}

// The sizes, norm epsilon and RoPE tables of one forward.
struct Shape {
  int64_t H, nh, nkv, d, B;
  double eps;
  Vec inv;
  double rscale;
};

Shape ShapeOf(const config::DrafterConfig& cfg) {
  return {cfg.hidden_size,
          cfg.num_attention_heads,
          cfg.num_key_value_heads,
          cfg.head_dim,
          cfg.block_size,
          cfg.rms_norm_eps,
          ReferenceInvFreq(cfg.rope, cfg.head_dim),
          ReferenceRopeScale(cfg.rope)};
}

// One layer's weights (absent biases read as zeros).
struct LayerWeights {
  Mat in_norm, post_norm, wq, wk, wv, wo, bq, bk, bv, bo, qn, kn, gate, up, down;
};

LayerWeights ReadLayer(const std::map<std::string, at::Tensor>& w, int64_t li, const Shape& s) {
  const std::string p = "layers." + std::to_string(li) + ".";
  return {Read(w, p + "input_layernorm.weight"),
          Read(w, p + "post_attention_layernorm.weight"),
          Read(w, p + "self_attn.q_proj.weight"),
          Read(w, p + "self_attn.k_proj.weight"),
          Read(w, p + "self_attn.v_proj.weight"),
          Read(w, p + "self_attn.o_proj.weight"),
          ReadOrZero(w, p + "self_attn.q_proj.bias", s.nh * s.d),
          ReadOrZero(w, p + "self_attn.k_proj.bias", s.nkv * s.d),
          ReadOrZero(w, p + "self_attn.v_proj.bias", s.nkv * s.d),
          ReadOrZero(w, p + "self_attn.o_proj.bias", s.H),
          Read(w, p + "self_attn.q_norm.weight"),
          Read(w, p + "self_attn.k_norm.weight"),
          Read(w, p + "mlp.gate_proj.weight"),
          Read(w, p + "mlp.up_proj.weight"),
          Read(w, p + "mlp.down_proj.weight")};
}

// The context: rows 0..a-1 of the features through fc and hidden_norm.
std::vector<Vec> ContextRows(const std::map<std::string, at::Tensor>& w, const at::Tensor& features,
                             int64_t a, const Shape& s) {
  Mat feats;
  {
    at::Tensor f = features.to(at::kCPU).to(at::kDouble).contiguous();
    feats.rows = f.size(0);
    feats.cols = f.size(1);
    feats.v.assign(f.data_ptr<double>(), f.data_ptr<double>() + f.numel());
  }
  const Mat fc = Read(w, "fc.weight");
  const Mat hidden_norm = Read(w, "hidden_norm.weight");
  std::vector<Vec> ctx;  // a rows of H
  for (int64_t c = 0; c < a; ++c) {
    Vec row(feats.v.begin() + c * feats.cols, feats.v.begin() + (c + 1) * feats.cols);
    Vec h = Apply(fc, row, nullptr);
    RmsInPlace(h, 0, s.H, hidden_norm, s.eps);
    ctx.push_back(h);
  }
  return ctx;
}

// The block's input rows x0 [B, H].
std::vector<Vec> BlockRows(const at::Tensor& x0, const Shape& s) {
  std::vector<Vec> x(s.B);
  at::Tensor t = x0.to(at::kCPU).to(at::kDouble).contiguous();
  for (int64_t j = 0; j < s.B; ++j) {
    x[j].assign(t.data_ptr<double>() + j * s.H, t.data_ptr<double>() + (j + 1) * s.H);
  }
  return x;
}

// Keys and values of one layer, with each key's position.
struct KeyValues {
  std::vector<Vec> keys, vals;
  std::vector<int64_t> key_pos;
};

// Context rows (positions 0..a-1), then block rows `y` (normed).
KeyValues LayerKeys(const LayerWeights& lw, const std::vector<Vec>& ctx, const std::vector<Vec>& y,
                    int64_t a, const Shape& s) {
  KeyValues kv;
  auto add_key = [&](const Vec& src, int64_t pos) {
    Vec k = Apply(lw.wk, src, &lw.bk);
    for (int64_t h = 0; h < s.nkv; ++h) RmsInPlace(k, h * s.d, s.d, lw.kn, s.eps);
    RopeInPlace(k, s.nkv, s.d, static_cast<double>(pos), s.inv, s.rscale);
    kv.keys.push_back(k);
    kv.vals.push_back(Apply(lw.wv, src, &lw.bv));
    kv.key_pos.push_back(pos);
  };
  for (int64_t c = 0; c < a; ++c) add_key(ctx[c], c);
  for (int64_t j = 0; j < s.B; ++j) add_key(y[j], a + j);
  return kv;
}

// Head h of query q at position qpos over the keys, added into attn. On a
// sliding layer the window hides context keys only.
void AttendHead(const Vec& q, int64_t h, int64_t qpos, const KeyValues& kv, int64_t a, bool sliding,
                int64_t window, const Shape& s, Vec& attn) {
  const int64_t d = s.d;
  const int64_t kvh = h / (s.nh / s.nkv);
  const std::vector<Vec>& keys = kv.keys;
  Vec sc(keys.size());
  double mx = -1e300;
  std::vector<bool> visible(keys.size(), true);
  for (size_t t = 0; t < keys.size(); ++t) {
    // dflash-semantics §4 (zlab-2025): the window hides context keys only.
    if (sliding && kv.key_pos[t] < a && qpos - kv.key_pos[t] >= window) {
      visible[t] = false;
    }
    double dot = 0;
    for (int64_t e = 0; e < d; ++e) dot += q[h * d + e] * keys[t][kvh * d + e];
    sc[t] = dot / std::sqrt(static_cast<double>(d));
    if (visible[t]) mx = std::max(mx, sc[t]);
  }
  double z = 0;
  for (size_t t = 0; t < keys.size(); ++t) {
    sc[t] = visible[t] ? std::exp(sc[t] - mx) : 0.0;
    z += sc[t];
  }
  for (size_t t = 0; t < keys.size(); ++t) {
    for (int64_t e = 0; e < d; ++e) {
      attn[h * d + e] += sc[t] / z * kv.vals[t][kvh * d + e];
    }
  }
}

// Attention of every block row: x[j] += o_proj(attention of y[j]).
void AttentionInPlace(std::vector<Vec>& x, const std::vector<Vec>& y, const LayerWeights& lw,
                      const KeyValues& kv, int64_t a, bool sliding, int64_t window,
                      const Shape& s) {
  for (int64_t j = 0; j < s.B; ++j) {
    const int64_t qpos = a + j;
    Vec q = Apply(lw.wq, y[j], &lw.bq);
    for (int64_t h = 0; h < s.nh; ++h) RmsInPlace(q, h * s.d, s.d, lw.qn, s.eps);
    RopeInPlace(q, s.nh, s.d, static_cast<double>(qpos), s.inv, s.rscale);
    Vec attn(s.nh * s.d, 0.0);
    for (int64_t h = 0; h < s.nh; ++h) AttendHead(q, h, qpos, kv, a, sliding, window, s, attn);
    Vec o = Apply(lw.wo, attn, &lw.bo);
    for (int64_t i = 0; i < s.H; ++i) x[j][i] += o[i];
  }
}

// The MLP after all queries of this layer (attention read the old x).
void MlpInPlace(std::vector<Vec>& x, const LayerWeights& lw, const Shape& s) {
  for (int64_t j = 0; j < s.B; ++j) {
    Vec h = x[j];
    RmsInPlace(h, 0, s.H, lw.post_norm, s.eps);
    Vec g = Apply(lw.gate, h, nullptr), u = Apply(lw.up, h, nullptr);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    Vec dn = Apply(lw.down, g, nullptr);
    for (int64_t i = 0; i < s.H; ++i) x[j][i] += dn[i];
  }
}

}  // namespace

std::vector<double> ReferenceInvFreq(const config::RopeConfig& r, int64_t d) {
  Vec inv;
  for (int64_t k = 0; k < d; k += 2) {
    inv.push_back(std::exp(-std::log(r.theta) * static_cast<double>(k) / d));
  }
  if (r.type == "linear") {
    for (double& f : inv) f = f / r.factor;
  } else if (r.type == "llama3") {
    const double L = r.original_max_position_embeddings;
    for (double& f : inv) {
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > L / r.low_freq_factor) {
        f = f / r.factor;  // low frequency: interpolate
      } else if (wavelen >= L / r.high_freq_factor) {
        const double t =
            (L / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
        f = t * f + (1.0 - t) * f / r.factor;  // medium: blend
      }                                        // high frequency: keep
    }
  } else if (r.type == "yarn") {
    // Dimension (of d) at which a wavelength completes `rot` rotations over
    // the original context.
    auto dim_for = [&](double rot) {
      return d * std::log(r.original_max_position_embeddings / (2.0 * M_PI * rot)) /
             (2.0 * std::log(r.theta));
    };
    double lo = std::max(0.0, std::floor(dim_for(r.beta_fast)));
    double hi = std::min(static_cast<double>(d - 1), std::ceil(dim_for(r.beta_slow)));
    if (hi == lo) hi += 0.001;
    for (size_t i = 0; i < inv.size(); ++i) {
      double ramp = (static_cast<double>(i) - lo) / (hi - lo);
      ramp = ramp < 0 ? 0 : (ramp > 1 ? 1 : ramp);
      // ramp 0: keep (extrapolate); ramp 1: divide by factor (interpolate).
      inv[i] = inv[i] * (1.0 - ramp) + inv[i] / r.factor * ramp;
    }
  } else if (r.type != "default") {
    throw std::runtime_error("reference: rope type " + r.type);
  }
  return inv;
}

double ReferenceRopeScale(const config::RopeConfig& r) {
  if (r.type != "yarn") return 1.0;
  if (r.attention_factor != 0.0) return r.attention_factor;
  return r.factor > 1.0 ? 1.0 + 0.1 * std::log(r.factor) : 1.0;
}

std::vector<double> ReferenceBlock(const config::DrafterConfig& cfg,
                                   const std::map<std::string, at::Tensor>& w,
                                   const at::Tensor& features, const at::Tensor& x0, int64_t a) {
  const Shape s = ShapeOf(cfg);
  const std::vector<Vec> ctx = ContextRows(w, features, a, s);
  std::vector<Vec> x = BlockRows(x0, s);
  for (int64_t li = 0; li < cfg.num_hidden_layers; ++li) {
    const LayerWeights lw = ReadLayer(w, li, s);
    std::vector<Vec> y(s.B);
    for (int64_t j = 0; j < s.B; ++j) {
      y[j] = x[j];
      RmsInPlace(y[j], 0, s.H, lw.in_norm, s.eps);
    }
    const KeyValues kv = LayerKeys(lw, ctx, y, a, s);
    AttentionInPlace(x, y, lw, kv, a, cfg.sliding[li], cfg.sliding_window, s);
    MlpInPlace(x, lw, s);
  }
  const Mat norm = Read(w, "norm.weight");
  Vec out;
  for (int64_t j = 0; j < s.B; ++j) {
    RmsInPlace(x[j], 0, s.H, norm, s.eps);
    out.insert(out.end(), x[j].begin(), x[j].end());
  }
  return out;
}

}  // namespace dflash::model::reference
