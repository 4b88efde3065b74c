"""The fixture's shapes and configs: the sizes (tiny, small, medium, bench),
the target layers the drafters read, and the config.json of each drafter
(DFlash 1 in the old and the new z-lab spelling, DFlash 2). Kept apart from
the writers because bench/ reuses them (make_qwen3_8b.py, make_prod_shape.py)."""


SIZES = {
    #         H    V      nh nkv d   I     n  W    B   samples L range
    "tiny":   dict(H=32, V=128, nh=4, nkv=2, d=16, I=64, n=2, W=24, B=8,
                   samples=6, L=(40, 64)),
    "small":  dict(H=64, V=512, nh=4, nkv=2, d=32, I=128, n=3, W=48, B=16,
                   samples=16, L=(96, 160)),
    "medium": dict(H=512, V=32000, nh=8, nkv=4, d=64, I=1408, n=3, W=256, B=16,
                   samples=64, L=(512, 1024)),
    # bench/: medium's shapes with 2 layers and long prompts (P ~ 60-70 % of
    # L), so the drafter-made responses take ~1 min to generate on 2 cores.
    "bench":  dict(H=512, V=32000, nh=8, nkv=4, d=64, I=1408, n=2, W=256, B=16,
                   samples=64, L=(512, 640), prompt=(0.6, 0.1)),
}
BENCH_SIZES = ("medium", "bench")  # write only target, drafter(-pt), dataset
LAYERS = [1, 3, 5, 7, 9]
NUM_TARGET_LAYERS = 12
CHUNK = 8          # capture files per rows_<a>-<b> directory
P_DRAFT = 0.85     # probability that a response token is the drafter's draft_1
MASK_SCALE = 1.0   # default mask embedding norm relative to other rows: shapes
                   # how much deeper block positions agree (larger = more)


def layer_types(n):
    return ["sliding_attention"] * (n - 1) + ["full_attention"]


def drafter_config(s, dtype):
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": s["H"],
        "num_attention_heads": s["nh"],
        "num_key_value_heads": s["nkv"],
        "head_dim": s["d"],
        "intermediate_size": s["I"],
        "num_hidden_layers": s["n"],
        "layer_types": layer_types(s["n"]),
        "sliding_window": s["W"],
        "use_sliding_window": True,
        "max_window_layers": s["n"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "max_position_embeddings": 4096,
        "attention_bias": False,
        "hidden_act": "silu",
        "block_size": s["B"],
        "dflash_config": {"target_layer_ids": LAYERS, "mask_token_id": s["V"] - 1},
        "num_target_layers": NUM_TARGET_LAYERS,
        "vocab_size": s["V"],
        "tie_word_embeddings": False,
        "torch_dtype": dtype,
    }


# drafter-v1new: a DFlash 1 drafter in the current z-lab spelling (draft keys
# at top level, no dflash_config), with input_embedding_scale, output_multiplier,
# final_logit_softcapping, no is_causal (sliding layers causal in the block) and
# a window shorter than the block, so every rule of zlab-current shows.
V1NEW = dict(input_embedding_scale=2.0, output_multiplier=0.5, final_logit_softcapping=3.0,
             window_below_block=3, seed_offset=1001)
# drafter2: DFlash 2 (per size: conv group size, selector rank and top-k).
DFLASH2 = dict(conv_kernel_size=2, input_embedding_scale=1.5, output_multiplier=0.7,
               final_logit_softcapping=2.0, seed_offset=2002,
               tiny=dict(gs=8, rank=8, top_k=4), small=dict(gs=16, rank=16, top_k=8))


def v1new_config(s, dtype):
    cfg = drafter_config(s, dtype)
    del cfg["dflash_config"]
    cfg.update({
        "block_size": s["B"],
        "target_layer_ids": LAYERS,
        "mask_token_id": s["V"] - 1,
        "sliding_window": s["B"] - V1NEW["window_below_block"],
        "input_embedding_scale": V1NEW["input_embedding_scale"],
        "output_multiplier": V1NEW["output_multiplier"],
        "final_logit_softcapping": V1NEW["final_logit_softcapping"],
    })
    return cfg


def dflash2_size(size):
    """The DFLASH2 entry of a size (tiny or small; the others use small's)."""
    return size if size in DFLASH2 else "small"


def dflash2_config(s, size, dtype):
    """transformers 5.x spelling (rope_parameters, dtype), draft keys in
    dflash_config, every layer sliding, is_causal false."""
    k = DFLASH2[size]
    cfg = drafter_config(s, dtype)
    for key in ("torch_dtype", "rope_theta", "rope_scaling", "block_size"):
        del cfg[key]
    cfg.update({
        "architectures": ["DFlash2DraftModel"],
        "layer_types": ["sliding_attention"] * s["n"],
        "is_causal": False,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "dtype": dtype,
        "dflash_config": {
            "block_size": s["B"],
            "target_layer_ids": LAYERS,
            "mask_token_id": s["V"] - 1,
            "conv_kernel_size": DFLASH2["conv_kernel_size"],
            "conv_group_size": k["gs"],
            "selector_rank": k["rank"],
            "selector_top_k": k["top_k"],
            "input_embedding_scale": DFLASH2["input_embedding_scale"],
            "output_multiplier": DFLASH2["output_multiplier"],
            "final_logit_softcapping": DFLASH2["final_logit_softcapping"],
        },
    })
    return cfg
