"""Model specs read from Hugging Face config.json fields.

A config is normalised into one frozen ModelSpec whose fields are the shape numbers the formulas
need; every architecture quirk (fused qkv, q/k norms, MLA, shared experts, learned positions, tied
heads) is resolved here, once, into plain fields, so no formula looks at model_type. What the fields
imply (widths, exact parameter counts, LoRA counts) is the MODEL_TERMS table of shape.py.
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping

from ..errors import InputError
from ..limits import FILE_BYTES, check_document, check_name, number_literal
from .lookups import DTYPES

@dataclass(frozen=True)
class ModelSpec:
    """The shape of a decoder-only transformer, normalised across architectures."""

    name: str
    model_type: str
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int  # dense MLP width (0 if every layer is MoE)
    gated_mlp: bool = True  # SwiGLU/GeGLU (gate, up, down) vs plain (fc1, fc2)
    hidden_act: str = "silu"
    softmax_fp32: bool = True  # eager attention softmax in fp32 (GPT-2 keeps the activation dtype)
    tie_word_embeddings: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    qk_norm: bool = False
    norm_bias: bool = False  # LayerNorm (weight + bias) vs RMSNorm (weight)
    norms_per_layer: int = 2
    num_position_embeddings: int = 0  # learned absolute positions (GPT-2, OPT)
    embedding_norm: bool = False  # BLOOM's word_embeddings_layernorm
    final_norm: bool = True
    word_embed_proj_dim: int = 0  # OPT-350m style projection; 0 = hidden_size
    # Multi-head latent attention (DeepSeek-V2/V3); kv_lora_rank == 0 means ordinary attention.
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    # Mixture of experts; num_experts == 0 means dense.
    num_experts: int = 0
    num_experts_per_tok: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0  # all shared experts together
    shared_expert_gate: bool = False  # Qwen2-MoE's sigmoid gate on the shared expert
    router_bias: bool = False  # DeepSeek-V3's e_score_correction_bias
    num_moe_layers: int = 0
    # PEFT module names: Phi-3 fuses q/k/v and gate/up; Mixtral's experts are w1/w2/w3, not MLP names.
    fused_projections: bool = False
    # q, k and v are one linear layer (Phi-3's qkv_proj, GPT-2's c_attn, GPT-NeoX's, Falcon's and BLOOM's
    # query_key_value, MPT's Wqkv): the module a LoRA on the queries and values adapts there.
    fused_qkv: bool = False
    # Attention and MLP both read the layer's input (GPT-NeoX's use_parallel_residual, Falcon's parallel_attn).
    parallel_residual: bool = False
    # transformers hands SDPA fewer key-value heads than query heads without enable_gqa (Falcon's multi-query
    # layers): PyTorch's dispatcher then runs the math kernel, which no term describes.
    sdpa_math: bool = False
    experts_named_like_mlp: bool = True
    experts_as_parameters: bool = False  # GPT-OSS: experts and router are bare 3-D/2-D parameters, no nn.Linear
    # What training saves for backward beyond the Llama layout (activation terms of terms.py).
    norm_scale_fp32: bool = False  # Gemma: RMSNorm scales by (1 + weight) in fp32 and keeps that fp32 product
    attn_logit_softcapping: float = 0.0  # Gemma-2: tanh soft-cap on the attention scores (eager attention)
    final_logit_softcapping: float = 0.0  # Gemma-2: tanh soft-cap on the logits
    queries_head_major: bool = False  # Phi-3: rotary written with torch.cat leaves queries in (B, H, S, D) order
    attention_dropout: float = 0.0  # dropout probabilities as the config sets them (used with dropout=config)
    resid_dropout: float = 0.0
    embd_dropout: float = 0.0
    norm_topk_prob: bool = False  # MoE: the top-k routing weights are renormalised (Mixtral always)
    routing_weights_fp32: bool = False  # MoE: the router hands the experts fp32 weights (Mixtral, DeepSeek)
    # Sliding-window attention (Mistral-7B-v0.1, Gemma-2, Phi-3): the layers that attend to the last
    # sliding_window tokens only, whose KV cache an engine can keep to that window.
    sliding_window: int = 0  # tokens; 0 = no layer slides
    num_sliding_layers: int = 0
    attention_sinks: bool = False  # GPT-OSS: one learned sink logit per head and layer
    # Hybrid Mamba-2 models (Nemotron-H): each block is one mixer (Mamba-2, attention or MLP) behind one norm,
    # so some layers have no attention and some no MLP; a Mamba-2 layer keeps a fixed-size state per sequence.
    num_mamba_layers: int = 0
    attention_free_layers: int = 0  # blocks without attention (Mamba-2 and MLP blocks)
    mlp_free_layers: int = 0  # blocks without an MLP (Mamba-2 and attention blocks)
    mamba_num_heads: int = 0
    mamba_head_dim: int = 0
    mamba_groups: int = 0  # n_groups: the heads of a group share its B and C projections
    ssm_state_size: int = 0
    conv_kernel: int = 0
    mamba_conv_bias: bool = False
    mamba_proj_bias: bool = False  # in_proj and out_proj biases (Nemotron-H's use_bias)
    mamba_ssm_state_bits: int = 0  # the SSM state's dtype as the config's mamba_ssm_cache_dtype gives it
    max_positions: int = 0  # the longest context the config allows (vLLM's derived max_model_len); 0: none stated
    source: str = ""
    generic_total_params: int = 0  # a model known only by its size ("a 7B model")


# ---------------------------------------------------------------------------------------------
# Reading configs

# Upper bounds of config numbers, about 100 times the largest published model's (vocab 256k, hidden
# 18,432, FFN 53,248, 126 layers, 128 heads, 384 experts, 10M positions): a config past them is a
# mistake, and within them every count stays exact in a float and every loop over layers is short.
# Raise one here if a real model needs it.
FIELD_MAXIMA = {
    **dict.fromkeys(("vocab_size",), 2**24),
    **dict.fromkeys(("hidden_size", "n_embd", "n_embed", "word_embed_proj_dim", "q_lora_rank", "kv_lora_rank"), 2**20),
    **dict.fromkeys(("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", "moe_intermediate_size",
                     "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size"), 2**22),
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_attention_heads", "n_head", "num_key_value_heads",
                     "num_kv_heads", "decoder_sparse_step", "moe_layer_freq", "first_k_dense_replace"), 2**14),
    **dict.fromkeys(("head_dim", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_experts",
                     "num_local_experts", "n_routed_experts", "num_experts_per_tok", "n_shared_experts"), 2**16),
    **dict.fromkeys(("mamba_num_heads", "mamba_head_dim", "n_groups", "ssm_state_size", "conv_kernel",
                     "attention_head_dim"), 2**16),
    **dict.fromkeys(("n_positions", "max_position_embeddings", "sliding_window", "max_window_layers",
                     "max_seq_len", "seq_length", "model_max_length", "max_target_positions", "max_sequence_length",
                     "max_seq_length", "seq_len", "original_max_position_embeddings"), 2**27),
    # MPT's names (llm-foundry's MPTConfig)
    **dict.fromkeys(("d_model",), 2**20), **dict.fromkeys(("n_layers", "n_heads", "kv_n_heads"), 2**14),
    "expansion_ratio": 2**8,
    "num_params": 10**16,
}


class _Fields:
    """Typed access to a config mapping; every failure names the file and field."""

    def __init__(self, raw: Mapping[str, Any], source: str, prefix: str = ""):
        self.raw, self.source, self.prefix = raw, source, prefix

    def _error(self, key: str, message: str) -> InputError:
        return InputError(message, source=self.source, key_path=self.prefix + key)

    def section(self, key: str) -> _Fields:
        """A nested block of fields (MPT's attn_config); absent or null reads as empty."""
        value = self.raw.get(key)
        if value is not None and not isinstance(value, Mapping):
            raise self._error(key, f"expected a JSON object of fields, got {value!r}")
        return _Fields(value or {}, self.source, f"{self.prefix}{key}.")

    def int(self, *keys: str, default: int | None = None, minimum: int = 1) -> int:
        for key in keys:
            if key in self.raw and self.raw[key] is not None:
                value = self.raw[key]
                if isinstance(value, bool) or not isinstance(value, int):
                    if isinstance(value, float) and value.is_integer():
                        value = int(value)
                    else:
                        raise self._error(key, f"expected an integer, got {value!r}")
                if value < minimum:
                    raise self._error(key, f"must be at least {minimum}, got {value}")
                if value > FIELD_MAXIMA[key]:
                    raise self._error(key, f"must be at most {FIELD_MAXIMA[key]:,}, got {value}")
                return value
        if default is not None:
            return default
        raise self._error(keys[0], "missing required field" + (f" (or {', '.join(keys[1:])})" if len(keys) > 1 else ""))

    def text(self, key: str, default: str) -> str:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._error(key, f"expected text, got {value!r}")
        return value

    def number(self, key: str, default: float) -> float:
        """A probability or scale; null means the default (transformers treats a null soft-cap as off)."""
        value = self.raw.get(key, default)
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._error(key, f"expected a number, got {value!r}")
        if value < 0:
            raise self._error(key, f"must be at least 0, got {value}")
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self._error(key, f"expected true or false, got {value!r}")
        return value


def _llama_like(f: _Fields, name: str, model_type: str, **overrides) -> ModelSpec:
    h = f.int("hidden_size")
    nh = f.int("num_attention_heads")
    if h % nh and "head_dim" not in f.raw:
        raise f._error("num_attention_heads", f"hidden_size {h} is not divisible by num_attention_heads {nh}")
    attention_bias = f.bool("attention_bias", False)
    kw = dict(
        name=name, model_type=model_type,
        vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("num_hidden_layers"),
        num_attention_heads=nh,
        num_key_value_heads=f.int("num_key_value_heads", default=nh),
        head_dim=f.int("head_dim", default=h // nh),
        intermediate_size=f.int("intermediate_size"),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        qkv_bias=attention_bias, o_bias=attention_bias,
        mlp_bias=f.bool("mlp_bias", False),
        attention_dropout=f.number("attention_dropout", 0.0),
        source=f.source,
    )
    kw.update(_sliding(f, model_type, kw["num_hidden_layers"]))
    kw.update(overrides)
    if kw["num_attention_heads"] % kw["num_key_value_heads"]:
        raise f._error("num_key_value_heads", f"{kw['num_key_value_heads']} does not divide num_attention_heads {nh}")
    return ModelSpec(**kw)


def _moe_layer_count(f: _Fields, num_layers: int) -> int:
    step = f.int("decoder_sparse_step", default=1)
    mlp_only = f.raw.get("mlp_only_layers") or []
    if not isinstance(mlp_only, list) or not all(isinstance(i, int) for i in mlp_only):
        raise f._error("mlp_only_layers", f"expected a list of layer indices, got {mlp_only!r}")
    mlp_only = set(mlp_only)
    return sum(1 for i in range(num_layers) if i not in mlp_only and (i + 1) % step == 0)


# Which layers slide when a config gives no layer_types, as transformers 5 decides it per model type:
# every layer (Mistral, Mixtral, Phi-3: one window for the model), every other layer from the first
# (Gemma-2, GPT-OSS), or Qwen's layers from max_window_layers on when use_sliding_window is set.
_SLIDING_RULES = {"mistral": "all", "mixtral": "all", "phi3": "all", "gemma2": "alternate",
                  "qwen2": "qwen", "qwen3": "qwen", "qwen3_moe": "all_if_used", "qwen2_moe": "qwen_moe",
                  "gpt_oss": "alternate"}
# transformers' MistralConfig slides over 4,096 tokens when the field is absent (null turns it off),
# GptOssConfig over 128.
_DEFAULT_WINDOW = {"mistral": 4096, "gpt_oss": 128}


def _sliding(f: _Fields, model_type: str, num_layers: int) -> dict:
    """The sliding window and how many layers use it (transformers' layer_types, explicit or implied)."""
    rule = _SLIDING_RULES.get(model_type)
    if rule is None:
        return {}
    if rule in ("qwen", "qwen_moe", "all_if_used") and not f.bool("use_sliding_window", False):
        return {}
    key_present = "sliding_window" in f.raw
    default = _DEFAULT_WINDOW.get(model_type, 4096 if rule != "all" else 0)
    window = f.int("sliding_window", default=0, minimum=0) if key_present else default
    if window == 0:
        return {}
    layer_types = f.raw.get("layer_types")
    if layer_types is not None:
        if (not isinstance(layer_types, list) or len(layer_types) != num_layers
                or not all(isinstance(t, str) for t in layer_types)):
            raise f._error("layer_types", f"expected a list of {num_layers} layer type names, got {layer_types!r}")
        count = sum(1 for t in layer_types if t == "sliding_attention")
    elif rule == "alternate":
        count = (num_layers + 1) // 2
    elif rule == "qwen":
        count = max(0, num_layers - f.int("max_window_layers", default=28, minimum=0))
    elif rule == "qwen_moe":
        cap = f.int("max_window_layers", default=28, minimum=0)
        count = sum(1 for i in range(min(num_layers, cap)) if i % 2 == 0)
    else:
        count = num_layers
    return dict(sliding_window=window, num_sliding_layers=count) if count else {}


def _spec_llama(f, name, mt):
    return _llama_like(f, name, mt)


def _spec_qwen2(f, name, mt):
    return _llama_like(f, name, mt, qkv_bias=True, o_bias=False,
                       tie_word_embeddings=f.bool("tie_word_embeddings", False))


def _spec_qwen3(f, name, mt):
    return _llama_like(f, name, mt, qk_norm=True)


def _spec_gemma(f, name, mt):
    # Gemma-2: pre- and post-norms around attention and MLP, tanh soft-caps (Gemma2Config defaults 50 and 30).
    gemma2 = dict(norms_per_layer=4, attn_logit_softcapping=f.number("attn_logit_softcapping", 50.0),
                  final_logit_softcapping=f.number("final_logit_softcapping", 30.0)) if mt == "gemma2" else {}
    return _llama_like(f, name, mt, tie_word_embeddings=f.bool("tie_word_embeddings", True), norm_scale_fp32=True,
                       **gemma2)


def _spec_phi3(f, name, mt):
    # Fused qkv_proj and gate_up_proj hold the same number of parameters as separate ones.
    return _llama_like(f, name, mt, fused_projections=True, fused_qkv=True, queries_head_major=True,
                       resid_dropout=f.number("resid_pdrop", 0.0), embd_dropout=f.number("embd_pdrop", 0.0))


def _spec_mixtral(f, name, mt):
    layers = f.int("num_hidden_layers")
    return _llama_like(f, name, mt, intermediate_size=0, experts_named_like_mlp=False,
                       num_experts=f.int("num_local_experts"), num_experts_per_tok=f.int("num_experts_per_tok"),
                       moe_intermediate_size=f.int("intermediate_size"), num_moe_layers=layers, norm_topk_prob=True,
                       routing_weights_fp32=True)


def _spec_qwen_moe(f, name, mt):
    layers = f.int("num_hidden_layers")
    moe_layers = _moe_layer_count(f, layers)
    extra = {}
    if mt == "qwen2_moe":
        extra = dict(qkv_bias=True, o_bias=False, shared_expert_gate=True,
                     shared_expert_intermediate_size=f.int("shared_expert_intermediate_size"))
    else:
        extra = dict(qk_norm=True)
    return _llama_like(f, name, mt, norm_topk_prob=f.bool("norm_topk_prob", False),
                       intermediate_size=f.int("intermediate_size", default=0, minimum=0) if moe_layers < layers else 0,
                       num_experts=f.int("num_experts"), num_experts_per_tok=f.int("num_experts_per_tok"),
                       moe_intermediate_size=f.int("moe_intermediate_size"), num_moe_layers=moe_layers, **extra)


def _spec_deepseek(f, name, mt):
    layers = f.int("num_hidden_layers")
    first_dense = f.int("first_k_dense_replace", default=0, minimum=0)
    freq = f.int("moe_layer_freq", default=1)
    moe_layers = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
    nh = f.int("num_attention_heads")
    q_lora = f.raw.get("q_lora_rank")
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=f.int("hidden_size"),
        num_hidden_layers=layers, num_attention_heads=nh,
        # The cache holds one latent per token per layer, not per-head K and V.
        num_key_value_heads=f.int("num_key_value_heads", default=nh),
        head_dim=f.int("qk_nope_head_dim") + f.int("qk_rope_head_dim"),
        intermediate_size=f.int("intermediate_size"),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        qkv_bias=False, o_bias=False,
        q_lora_rank=0 if q_lora is None else f.int("q_lora_rank"),
        kv_lora_rank=f.int("kv_lora_rank"), qk_rope_head_dim=f.int("qk_rope_head_dim"),
        qk_nope_head_dim=f.int("qk_nope_head_dim"), v_head_dim=f.int("v_head_dim"),
        num_experts=f.int("n_routed_experts"), num_experts_per_tok=f.int("num_experts_per_tok"),
        moe_intermediate_size=f.int("moe_intermediate_size"),
        shared_expert_intermediate_size=f.int("n_shared_experts", default=0, minimum=0) * f.int("moe_intermediate_size"),
        router_bias=(mt == "deepseek_v3"), num_moe_layers=moe_layers,
        norm_topk_prob=f.bool("norm_topk_prob", mt == "deepseek_v3"), routing_weights_fp32=True, source=f.source,
    )


def _spec_gpt_oss(f, name, mt):
    # Every layer is MoE; experts and router carry biases (gate_up: 2 x width, down: hidden; router: one
    # per expert), the attention projections too, and each head a learned sink logit.
    return _llama_like(f, name, mt, intermediate_size=0, experts_named_like_mlp=False, mlp_bias=True,
                       qkv_bias=f.bool("attention_bias", True), o_bias=f.bool("attention_bias", True),
                       num_experts=f.int("num_local_experts"), num_experts_per_tok=f.int("num_experts_per_tok",
                                                                                        "experts_per_token"),
                       moe_intermediate_size=f.int("intermediate_size"), num_moe_layers=f.int("num_hidden_layers"),
                       router_bias=True, attention_sinks=True, experts_as_parameters=True)


def _spec_gpt2(f, name, mt):
    h = f.int("n_embd", "hidden_size")
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("n_layer", "num_hidden_layers"),
        num_attention_heads=f.int("n_head", "num_attention_heads"),
        num_key_value_heads=f.int("n_head", "num_attention_heads"),
        head_dim=h // f.int("n_head", "num_attention_heads"),
        intermediate_size=f.int("n_inner", default=4 * h), gated_mlp=False,
        hidden_act=f.text("activation_function", "gelu_new"), softmax_fp32=False,
        tie_word_embeddings=f.bool("tie_word_embeddings", True),
        qkv_bias=True, o_bias=True, mlp_bias=True, norm_bias=True,
        num_position_embeddings=f.int("n_positions", "max_position_embeddings"),
        # GPT2Config's defaults: 0.1 each (attn_pdrop on the attention probabilities, resid_pdrop after
        # each block's output projection, embd_pdrop on the summed embeddings).
        attention_dropout=f.number("attn_pdrop", 0.1), resid_dropout=f.number("resid_pdrop", 0.1),
        embd_dropout=f.number("embd_pdrop", 0.1), fused_qkv=True, source=f.source,
    )


def _spec_gpt_neox(f, name, mt):
    h = f.int("hidden_size")
    nh = f.int("num_attention_heads")
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("num_hidden_layers"), num_attention_heads=nh, num_key_value_heads=nh,
        head_dim=h // nh, intermediate_size=f.int("intermediate_size"), gated_mlp=False,
        hidden_act=f.text("hidden_act", "gelu"),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        qkv_bias=f.bool("attention_bias", True), o_bias=f.bool("attention_bias", True),
        mlp_bias=True, norm_bias=True, fused_qkv=True, parallel_residual=f.bool("use_parallel_residual", True),
        source=f.source,
    )


def _spec_falcon(f, name, mt):
    h = f.int("hidden_size")
    nh = f.int("num_attention_heads")
    new_arch = f.bool("new_decoder_architecture", False)
    if new_arch:
        kv = f.int("num_kv_heads", default=nh)
    else:
        kv = 1 if f.bool("multi_query", True) else nh
    bias = f.bool("bias", False)
    parallel = f.bool("parallel_attn", True)
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("num_hidden_layers"), num_attention_heads=nh, num_key_value_heads=kv,
        head_dim=h // nh, intermediate_size=f.int("ffn_hidden_size", default=4 * h), gated_mlp=False,
        tie_word_embeddings=f.bool("tie_word_embeddings", True),
        qkv_bias=bias, o_bias=bias, mlp_bias=bias, norm_bias=True,
        # FalconAttention's eager path takes the softmax in the activation dtype; with ALiBi, in fp32
        softmax_fp32=f.bool("alibi", False),
        norms_per_layer=2 if (new_arch or not parallel) else 1, fused_qkv=True,
        parallel_residual=new_arch or parallel, sdpa_math=not new_arch and kv < nh, source=f.source,
    )


def _spec_opt(f, name, mt):
    h = f.int("hidden_size")
    nh = f.int("num_attention_heads")
    bias = f.bool("enable_bias", True)
    proj = f.int("word_embed_proj_dim", default=h)
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("num_hidden_layers"), num_attention_heads=nh, num_key_value_heads=nh,
        head_dim=h // nh, intermediate_size=f.int("ffn_dim"), gated_mlp=False,
        hidden_act=f.text("activation_function", "relu"),
        tie_word_embeddings=f.bool("tie_word_embeddings", True),
        qkv_bias=bias, o_bias=bias, mlp_bias=bias, norm_bias=True,
        # OPT's learned positions carry an offset of 2.
        num_position_embeddings=f.int("max_position_embeddings") + 2,
        word_embed_proj_dim=0 if proj == h else proj,
        final_norm=f.bool("do_layer_norm_before", True) and not f.bool("_remove_final_layer_norm", False),
        source=f.source,
    )


def _spec_bloom(f, name, mt):
    h = f.int("hidden_size", "n_embed")
    nh = f.int("n_head", "num_attention_heads")
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("n_layer", "num_hidden_layers"), num_attention_heads=nh, num_key_value_heads=nh,
        head_dim=h // nh, intermediate_size=4 * h, gated_mlp=False,
        tie_word_embeddings=f.bool("tie_word_embeddings", True),
        qkv_bias=True, o_bias=True, mlp_bias=True, norm_bias=True, embedding_norm=True, fused_qkv=True,
        source=f.source,
    )


# llm-foundry's attention types and the key/value heads each keeps (llmfoundry/models/layers/attention.py)
_MPT_ATTENTION_TYPES = ("multihead_attention", "multiquery_attention", "grouped_query_attention")
_MPT_NORMS = {"low_precision_layernorm": True, "layernorm": True, "low_precision_rmsnorm": False, "rmsnorm": False}


# Nemotron-H's block kinds, by hybrid_override_pattern character or layers_block_type name (transformers 5
# writes the pattern as a list; older configs use "mamba" and "attention").
_NEMOTRON_H_BLOCKS = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe", "mamba": "mamba",
                      "linear_attention": "mamba", "attention": "attention", "full_attention": "attention",
                      "mlp": "mlp", "moe": "moe"}


# transformers' dtype names for the SSM state, as the Dtypes table names them (its bits are the widths)
_SSM_STATE_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _spec_nemotron_h(f, name, mt):
    if "layers_block_type" in f.raw:
        key, blocks = "layers_block_type", f.raw["layers_block_type"]
        kinds = blocks if isinstance(blocks, list) and all(isinstance(b, str) for b in blocks) else None
    else:
        key, blocks = "hybrid_override_pattern", f.text("hybrid_override_pattern", "")
        kinds = list(blocks)
    if not kinds or any(k not in _NEMOTRON_H_BLOCKS for k in kinds):
        raise f._error(key, f"expected the blocks' kinds (M Mamba-2, * attention, - MLP, E MoE), got {blocks!r}")
    kinds = [_NEMOTRON_H_BLOCKS[k] for k in kinds]
    if kinds.count("attention") == 0:
        raise f._error(key, "no attention block (*): a model of Mamba-2 blocks alone is not built")
    layers = len(kinds)
    if "num_hidden_layers" in f.raw and f.int("num_hidden_layers") != layers:
        raise f._error("num_hidden_layers", f"{f.int('num_hidden_layers')}, but {key} has {layers} blocks")
    if "num_hidden_layers" not in f.raw:  # transformers 5 counts the blocks
        f = _Fields({**f.raw, "num_hidden_layers": layers}, f.source)
    heads, head_dim = f.int("mamba_num_heads"), f.int("mamba_head_dim")
    groups = f.int("n_groups", default=1)
    if heads % groups:
        raise f._error("n_groups", f"{groups} does not divide mamba_num_heads {heads}")
    # vLLM's NemotronH hook, SGLang and transformers keep the SSM state in the config's mamba_ssm_cache_dtype, fp32
    # where it has none ("only float32 is known to have no accuracy issues")
    ssm_dtype = f.text("mamba_ssm_cache_dtype", "float32")
    if ssm_dtype not in _SSM_STATE_DTYPES:
        raise f._error("mamba_ssm_cache_dtype", f"expected one of {', '.join(_SSM_STATE_DTYPES)}, got {ssm_dtype!r}")
    # MoE blocks (Nemotron 3): relu² experts held as bare up/down tensors, a shared expert, a sigmoid router in fp32
    # with a score-correction bias, as transformers' NemotronHMoE
    moe = kinds.count("moe")
    experts = dict(
        num_experts=f.int("n_routed_experts"), num_experts_per_tok=f.int("num_experts_per_tok"),
        moe_intermediate_size=f.int("moe_intermediate_size"), num_moe_layers=moe,
        shared_expert_intermediate_size=(f.int("n_shared_experts", default=1, minimum=0)
                                         * f.int("moe_shared_expert_intermediate_size")),
        router_bias=True, norm_topk_prob=f.bool("norm_topk_prob", True), routing_weights_fp32=True,
        experts_as_parameters=True) if moe else {}
    return _llama_like(
        f, name, mt, num_hidden_layers=layers, head_dim=f.int("head_dim", "attention_head_dim", default=128),
        gated_mlp=False, hidden_act=f.text("mlp_hidden_act", "relu2"), qkv_bias=False, o_bias=False,
        norms_per_layer=1, num_mamba_layers=kinds.count("mamba"), **experts,
        attention_free_layers=layers - kinds.count("attention"),
        mlp_free_layers=layers - kinds.count("mlp") - moe,
        mamba_num_heads=heads, mamba_head_dim=head_dim, mamba_groups=groups,
        ssm_state_size=f.int("ssm_state_size", default=128), conv_kernel=f.int("conv_kernel", default=4),
        mamba_conv_bias=f.bool("use_conv_bias", True), mamba_proj_bias=f.bool("use_bias", False),
        mamba_ssm_state_bits=DTYPES.rows[_SSM_STATE_DTYPES[ssm_dtype]]["bits"])


def _spec_mpt(f, name, mt):
    """MosaicML's MPT as its own code builds it (llm-foundry's MPTConfig and modeling_mpt.py at commit 061f2c7, the
    code of its published benchmarks): a fused Wqkv, a plain GELU MLP of expansion_ratio × d_model, the head tied
    to wte, biases on every linear layer and norm unless no_bias, and a learned position table of max_seq_len rows
    unless the model uses ALiBi (the Hub's MPT-7B and -30B, whose own code and transformers' port keep none).
    Checked against the parameter counts llm-foundry's benchmark tables publish, not against transformers, whose
    MptConfig port ignores no_bias and learned_pos_emb."""
    h, nh = f.int("d_model"), f.int("n_heads")
    attn = f.section("attn_config")
    kind = attn.text("attn_type", "multihead_attention")
    if kind not in _MPT_ATTENTION_TYPES:
        raise attn._error("attn_type", f"expected one of {', '.join(_MPT_ATTENTION_TYPES)}, got {kind!r}")
    kv = {"multihead_attention": nh, "multiquery_attention": 1}.get(kind) or attn.int("kv_n_heads")
    ffn_type = f.section("ffn_config").text("ffn_type", "mptmlp")
    if ffn_type != "mptmlp":
        raise f.section("ffn_config")._error("ffn_type", f"only llm-foundry's plain GELU MLP (mptmlp) is built, "
                                                         f"got {ffn_type!r}")
    norm = f.text("norm_type", "low_precision_layernorm")
    if norm not in _MPT_NORMS:
        raise f._error("norm_type", f"expected one of {', '.join(_MPT_NORMS)}, got {norm!r}")
    if h % nh:
        raise f._error("n_heads", f"d_model {h} is not divisible by n_heads {nh}")
    bias = not f.bool("no_bias", False)
    return ModelSpec(
        name=name, model_type=mt, vocab_size=f.int("vocab_size", default=50368), hidden_size=h,
        num_hidden_layers=f.int("n_layers"), num_attention_heads=nh, num_key_value_heads=kv, head_dim=h // nh,
        intermediate_size=f.int("expansion_ratio", default=4) * h, gated_mlp=False, hidden_act="gelu",
        softmax_fp32=False, tie_word_embeddings=True, qkv_bias=bias, o_bias=bias, mlp_bias=bias,
        norm_bias=bias and _MPT_NORMS[norm],
        num_position_embeddings=(f.int("max_seq_len", default=2048)
                                 if f.bool("learned_pos_emb", True) and not attn.bool("alibi", False) else 0),
        attention_dropout=attn.number("attn_pdrop", 0.0), resid_dropout=f.number("resid_pdrop", 0.0),
        embd_dropout=f.number("emb_pdrop", 0.0), fused_qkv=True, source=f.source,
    )


_BUILDERS = {
    "llama": _spec_llama, "mistral": _spec_llama, "qwen2": _spec_qwen2, "qwen3": _spec_qwen3,
    "gemma": _spec_gemma, "gemma2": _spec_gemma, "phi3": _spec_phi3, "mixtral": _spec_mixtral,
    "qwen2_moe": _spec_qwen_moe, "qwen3_moe": _spec_qwen_moe,
    "deepseek_v2": _spec_deepseek, "deepseek_v3": _spec_deepseek, "gpt_oss": _spec_gpt_oss,
    "gpt2": _spec_gpt2, "gpt_neox": _spec_gpt_neox, "falcon": _spec_falcon, "opt": _spec_opt, "bloom": _spec_bloom,
    "mpt": _spec_mpt, "nemotron_h": _spec_nemotron_h,
}
SUPPORTED_MODEL_TYPES = tuple(sorted(_BUILDERS))
# Architectures a user may well bring whose memory needs terms the estimator does not have yet (issue #32):
# named with why, rather than as an unknown type (or a "did you mean" of a different architecture).
UNBUILT_MODEL_TYPES = {
    "falcon_h1": "a hybrid of Mamba-2 and attention heads: its SSM state is not modelled",
    "jamba": "a hybrid of Mamba and attention layers with MoE: its SSM state is not modelled",
    "mamba": "a state-space model without attention: its SSM state is not modelled",
    "mamba2": "a state-space model without attention: its SSM state is not modelled",
    "rwkv": "a recurrent model without attention: its state is not modelled",
    "qwen3_next": "a hybrid of Gated DeltaNet and gated attention layers: the linear-attention state is not modelled",
}


def spec_from_config(raw: Any, *, name: str, source: str) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config mapping (or a generic size description)."""
    if not isinstance(raw, Mapping):
        raise InputError(f"expected a JSON object of config fields, got {type(raw).__name__}", source=source)
    check_name(name, "a model name", source=source, key_path="name")
    f = _Fields(raw, source)
    if "num_params" in raw:
        return _generic_spec(f, name)
    model_type = raw.get("model_type")
    if model_type is None:
        raise InputError("missing required field", source=source, key_path="model_type")
    if isinstance(model_type, str) and model_type in UNBUILT_MODEL_TYPES:
        raise InputError(f"model_type {model_type!r} cannot be built yet: {UNBUILT_MODEL_TYPES[model_type]} (it "
                         f"builds {', '.join(SUPPORTED_MODEL_TYPES)})", source=source, key_path="model_type")
    if not isinstance(model_type, str) or model_type not in _BUILDERS:
        from ..errors import unknown_name
        raise unknown_name("model_type", model_type, _BUILDERS, source=source, key_path="model_type")
    spec = replace(_BUILDERS[model_type](f, name, model_type), max_positions=_max_positions(f, model_type))
    if spec.num_experts_per_tok > spec.num_experts:
        raise InputError(f"{spec.num_experts_per_tok} experts per token, but the model has {spec.num_experts} experts",
                         source=source, key_path="num_experts_per_tok")
    return spec


# The config keys vLLM reads for a model's longest context, the smallest of those present (vllm/config.py,
# _get_and_verify_max_len, at vllm-project/vllm c0c2335): the position limit it refuses a longer max_model_len past.
POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                 "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
# RoPE scalings whose max_position_embeddings is already the extended length (vLLM scales the others by their factor).
_ROPE_SCALED_ALREADY = ("su", "longrope", "llama3")


def _max_positions(f: _Fields, model_type: str) -> int:
    """The longest context the config allows, as vLLM derives it: the smallest position key (model_max_length where
    given), times the RoPE scaling factor unless the type is already scaled (yarn: its original length times the
    factor; Gemma 3's is scaled already); 0 where the config states none (BLOOM's ALiBi)."""
    present = [f.int(k) for k in POSITION_KEYS if f.raw.get(k) is not None]
    if not present:
        return 0
    limit = f.int("model_max_length") if f.raw.get("model_max_length") is not None else min(present)
    key = "rope_scaling" if f.raw.get("rope_scaling") is not None else "rope_parameters"  # transformers 5's name
    rope = f.raw.get(key)
    if isinstance(rope, Mapping) and "gemma3" not in model_type:
        rope_fields = f.section(key)
        kind = rope.get("rope_type", rope.get("type"))
        if kind not in _ROPE_SCALED_ALREADY:
            if kind == "yarn":
                limit = rope_fields.int("original_max_position_embeddings")
            limit = int(limit * (rope_fields.number("factor", 1.0) or 1.0))  # a null factor is none
    return limit


def _generic_spec(f: _Fields, name: str) -> ModelSpec:
    """A model given by total parameters and a few shape numbers (the source material's '7B')."""
    nh = f.int("num_attention_heads")
    h = f.int("hidden_size")
    tied = f.bool("tie_word_embeddings", False)
    embeddings = f.int("vocab_size") * h * (1 if tied else 2)
    if f.int("num_params") <= embeddings:
        raise f._error("num_params", f"{f.int('num_params')} is not larger than the embeddings "
                                     f"({embeddings} = vocab_size × hidden_size{'' if tied else ' × 2 (untied head)'})")
    return ModelSpec(
        name=name, model_type="generic", vocab_size=f.int("vocab_size"), hidden_size=h,
        num_hidden_layers=f.int("num_hidden_layers"), num_attention_heads=nh,
        num_key_value_heads=f.int("num_key_value_heads", default=nh), head_dim=f.int("head_dim", default=h // nh),
        intermediate_size=f.int("intermediate_size"), tie_word_embeddings=f.bool("tie_word_embeddings", False),
        generic_total_params=f.int("num_params"), source=f.source,
    )


def load_config_file(path: Path, name: str | None = None) -> ModelSpec:
    """Read a config.json (or a catalog entry with a `config` key) into a ModelSpec."""
    return read_config_file(path, name)[0]


def read_config_file(path: Path, name: str | None = None) -> tuple[ModelSpec, Mapping[str, Any]]:
    """A config.json (or a catalog entry with a `config` key): its ModelSpec and its config fields."""
    raw = read_json(path)
    if isinstance(raw, dict) and isinstance(raw.get("config"), dict):
        config, own_name = raw["config"], raw.get("name")
    else:
        config, own_name = raw, raw_name(raw)
    return spec_from_config(config, name=name or own_name or path.stem, source=str(path)), config


def raw_name(raw: Any) -> str | None:
    if isinstance(raw, dict):
        value = raw.get("_name_or_path") or raw.get("name")
        if isinstance(value, str) and value:
            return value.rsplit("/", 1)[-1]
    return None


_READ_CHUNK_BYTES = 2**20


def read_bytes(path: Path, expected: str) -> bytes:
    """A regular file's bytes, at most FILE_BYTES of them; every failure is one InputError naming the file.

    Devices, FIFOs and sockets are refused before they are opened (reading /dev/zero never ends, a
    FIFO blocks until a writer comes); the open is non-blocking and re-checked in case the path
    changed in between."""
    source = str(path)

    def check_regular(mode: int) -> None:
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a device, FIFO or socket"
            raise InputError(f"is {kind}, expected {expected} (a regular file)", source=source)

    try:
        check_regular(os.stat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=source) from None
    with os.fdopen(fd, "rb") as file:
        check_regular(os.fstat(fd).st_mode)
        cap = FILE_BYTES.value()
        chunks: list[bytes] = []
        size = 0
        try:
            # in chunks: read(cap + 1) would allocate a raised cap (10 GB) before reading a byte
            while size <= cap and (chunk := file.read(min(cap + 1 - size, _READ_CHUNK_BYTES))):
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", source=source) from None
    if size > cap:
        raise FILE_BYTES.refuse("file too large", source=source)
    return b"".join(chunks)


def read_text(path: Path, expected: str) -> str:
    """A UTF-8 text file's contents (see read_bytes)."""
    data = read_bytes(path, expected)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None


def read_json(path: Path) -> Any:
    """Parse a JSON file (see read_text) and check its text and nesting (limits.check_document)."""
    text = read_text(path, "a JSON file")
    try:
        data = json.loads(text, parse_int=lambda t: number_literal(t, int),
                          parse_float=lambda t: number_literal(t, float))
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
                         source=str(path)) from None
    except RecursionError:
        raise InputError("nested too deeply for the parser (Python's recursion limit)", source=str(path)) from None
    return check_document(data, source=str(path))
