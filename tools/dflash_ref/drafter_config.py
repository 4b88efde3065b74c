"""The drafter's config.json read as both rule sets read it (§1): the named
semantics, and every key the forward needs (DFlash 1 and DFlash 2, old and
new z-lab spellings)."""

SEMANTICS = ("zlab-current", "zlab-2025")
DEFAULT_SEMANTICS = "zlab-current"
# zlab-current: z-lab model.py at commit 10129599 (dflash2-semantics.md):
#   per-layer causality and two-sided windows inside the block, shortened last
#   blocks, the replay loop `while s + 1 < L'`, produced = min(n+1, L'-s-1).
# zlab-2025: the older rules (dflash-semantics.md §4-§5): every layer
#   bidirectional in the block, sliding layers hide context keys with
#   query - key >= W, full-length blocks, the replay loop `while s < L'`.


def check_semantics(semantics, family):
    if semantics not in SEMANTICS:
        raise ValueError("unknown semantics '%s' (one of %s)" % (semantics, ", ".join(SEMANTICS)))
    if family == "dflash2" and semantics == "zlab-2025":
        raise ValueError("semantics 'zlab-2025' predates DFlash 2; use zlab-current")


def _draft_value(cfg, name, default=None):
    """z-lab's _draft_value: dflash_config[name], else top-level name, else default."""
    dc = cfg.get("dflash_config") or {}
    if name in dc:
        return dc[name]
    return cfg.get(name, default)


def _required(cfg, name):
    v = _draft_value(cfg, name)
    if v is None:
        raise ValueError("config has no %s (looked in dflash_config, then top level)"
                         % name)
    return v


def _rope(cfg):
    """RoPE: 5.x rope_parameters or 4.x rope_theta + rope_scaling."""
    rp = cfg.get("rope_parameters")
    if rp:
        rope = dict(rp)
        rope.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
    else:
        rope = dict(cfg.get("rope_scaling") or {})
        rope["rope_theta"] = cfg.get("rope_theta", 10000.0)
    rope_type = rope.get("rope_type") or rope.get("type") or "default"
    if rope_type not in ("default", "linear", "llama3", "yarn"):
        raise ValueError("unknown rope_type '%s'" % rope_type)
    rope["rope_type"] = rope_type
    rope.setdefault("max_position_embeddings", cfg.get("max_position_embeddings"))
    return rope


class DrafterConfig:
    def __init__(self, cfg):
        self.raw = cfg
        archs = cfg.get("architectures") or []
        self.family = "dflash2" if "DFlash2DraftModel" in archs else "dflash"
        self.hidden_size = int(cfg["hidden_size"])
        self.num_heads = int(cfg["num_attention_heads"])
        self.num_kv_heads = int(cfg.get("num_key_value_heads") or self.num_heads)
        self.head_dim = int(cfg.get("head_dim") or self.hidden_size // self.num_heads)
        self.intermediate_size = int(cfg["intermediate_size"])
        self.num_layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.attention_bias = bool(cfg.get("attention_bias", False))
        self._read_draft_keys(cfg)
        self._read_layers(cfg)
        self.vocab_size = cfg.get("vocab_size")
        if self.family == "dflash2":
            self._read_dflash2(cfg)
        self.rope = _rope(cfg)

    def _read_draft_keys(self, cfg):
        """The draft keys (dflash_config first, then top level)."""
        self.block_size = int(_draft_value(cfg, "block_size", 16))
        self.target_layer_ids = [int(x) for x in _required(cfg, "target_layer_ids")]
        self.mask_token_id = int(_required(cfg, "mask_token_id"))
        v = _draft_value(cfg, "input_embedding_scale")
        self.input_embedding_scale = 1.0 if v is None else float(v)
        v = _draft_value(cfg, "output_multiplier")
        self.output_multiplier = 1.0 if v is None else float(v)
        v = _draft_value(cfg, "final_logit_softcapping")
        self.softcap = float(v) if v is not None and float(v) > 0 else None

    def _read_layers(self, cfg):
        """Layer types, and each layer's causality and window under both rule sets."""
        types = cfg.get("layer_types") or ["full_attention"] * self.num_layers
        if len(types) != self.num_layers:
            raise ValueError("layer_types has %d entries; expected %d"
                             % (len(types), self.num_layers))
        for t in types:
            if t not in ("full_attention", "sliding_attention"):
                raise ValueError("unknown layer type '%s'" % t)
        self.layer_types = list(types)
        self.sliding = [t == "sliding_attention" for t in types]
        # zlab-2025 reads the window like this (0 = none) on every sliding layer.
        self.sliding_window = int(cfg.get("sliding_window") or 0)
        # zlab-current, per layer: causal = (sliding) unless top-level is_causal
        # is given; window = sliding_window on sliding layers, none on full
        # ones, none everywhere when top-level use_sliding_window is false.
        is_causal = cfg.get("is_causal")
        self.causal = [s if is_causal is None else bool(is_causal) for s in self.sliding]
        use_window = cfg.get("use_sliding_window", True)
        sw = cfg.get("sliding_window")
        self.window = []
        for s in self.sliding:
            if s and use_window is not False and sw is not None:
                if int(sw) <= 0:
                    raise ValueError("sliding_window %s must be positive" % sw)
                self.window.append(int(sw))
            else:
                self.window.append(None)

    def _read_dflash2(self, cfg):
        """DFlash 2's convolution and selector keys."""
        self.conv_kernel_size = int(_required(cfg, "conv_kernel_size"))
        self.conv_group_size = int(_required(cfg, "conv_group_size"))
        self.selector_rank = int(_required(cfg, "selector_rank"))
        self.selector_top_k = int(_required(cfg, "selector_top_k"))
        if self.conv_group_size <= 0 or self.hidden_size % self.conv_group_size:
            raise ValueError("conv_group_size %d must divide hidden_size %d"
                             % (self.conv_group_size, self.hidden_size))
        if self.conv_kernel_size < 1 or self.selector_rank < 1 or self.selector_top_k < 1:
            raise ValueError("conv_kernel_size, selector_rank and selector_top_k must be >= 1")
