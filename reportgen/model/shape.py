"""What a model's config implies, as terms: widths, the KV cache per token, exact parameter counts
by component, active parameters, and LoRA adapter counts.

MODEL_TERMS is a term table over one model's normalised config fields (MODEL_FIELDS, the fields of
models.ModelSpec). The estimator evaluates it once per model to fill the Models lookup table; the
workbook writes each entry as a formula column of the Models sheet over the raw config cells, so a
planner who edits a model's layers, KV heads or experts changes every count and every scenario that
uses the model. Counts equal what transformers instantiates (tests compare with meta-device counts).
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import InputError
from .formulas import AND, CEIL, FLOOR, IF, MAX, MIN, OR, Expr, Var, compile_terms, is_one_of
from .lookups import OP_CHECKPOINT_MODEL_TYPES
from .spec import ModelSpec

V = Var
TEXT_FIELDS = ("name", "model_type", "hidden_act", "source")
# The config fields a formula may read (flags as 1/0); name, type and source are text.
MODEL_FIELDS = tuple(f.name for f in fields(ModelSpec) if f.name not in ("name", "source"))


@dataclass(frozen=True)
class ShapeTerm:
    name: str
    label: str
    unit: str  # "count", "flag", "elements"
    expr: Expr
    source: str = ""


def _nf() -> Expr:
    """Parameters per normalised element: LayerNorm has a weight and a bias, RMSNorm a weight."""
    return IF(V("norm_bias").eq(1), 2, 1)


def _mlp(width: Expr) -> Expr:
    """Parameters of one MLP of the given width (gated: gate, up, down; plain: fc1, fc2), biases included."""
    h = V("hidden_size")
    return IF(V("gated_mlp").eq(1), 3 * h * width + IF(V("mlp_bias").eq(1), 2 * width + h, 0),
              2 * h * width + IF(V("mlp_bias").eq(1), width + h, 0))


def _adapted(width: Expr, count: Expr, per_module: Expr) -> Expr:
    """A gated MLP block's gate, up and down projections, adapted `count` times; nothing if width 0."""
    return IF(width.gt(0), count * per_module, 0)


_HF = "transformers modeling code, checked against meta-device counts (tests/data/transformers_counts.json)"
_PEFT = ("PEFT LoRA: r × (in + out) per adapted nn.Linear; all-linear adapts every linear layer but the output "
         "head (experts and router of MoE blocks included); checked against PEFT counts")

# Module names PEFT targets, and each module's (in_features, out_features, how many in the model).
# A fused qkv layer (Phi-3, GPT-2, GPT-NeoX, Falcon, BLOOM, MPT), Phi-3's fused gate_up_proj and plain MLPs
# (fc1/fc2 by whatever name) resolve through the flags; multi-head latent attention and Mamba-2 layers get no
# LoRA; MoE experts carry MLP names except in Mixtral (w1/w2/w3).
_H, _L, _A = V("hidden_size"), V("num_hidden_layers"), V("num_attention_layers")
_SUPPORTED = AND(V("kv_lora_rank").eq(0), V("num_mamba_layers").eq(0))
_SPLIT = AND(_SUPPORTED, V("fused_qkv").eq(0))
_FUSED = AND(_SUPPORTED, V("fused_qkv").eq(1))
_GATED_SPLIT = AND(_SPLIT, V("gated_mlp").eq(1))  # gate_proj, up_proj, down_proj
_GATE_UP = AND(_SUPPORTED, V("fused_projections").eq(1))  # Phi-3: gate_up_proj, down_proj
_PLAIN = AND(_SUPPORTED, V("gated_mlp").eq(0))  # two linear layers: fc1/fc2, dense_h_to_4h/dense_4h_to_h, c_fc/c_proj
_EXPERT_LAYERS = V("num_moe_layers") * V("num_experts")


def _mlp_modules(named: bool) -> list[tuple[Expr, Expr]]:
    """(width, count) of the gated MLP blocks an MLP-named target reaches."""
    # all-linear reaches nn.Linear experts only (GPT-OSS keeps its experts as bare parameters)
    experts = (AND(V("num_experts").gt(0), V("experts_as_parameters").eq(0)) if not named
               else AND(V("num_experts").gt(0), V("experts_named_like_mlp").eq(1)))
    return [(V("intermediate_size"), V("num_dense_layers")),
            (V("moe_intermediate_size"), IF(experts, _EXPERT_LAYERS, 0)),
            (V("shared_expert_intermediate_size"), IF(experts, V("num_moe_layers"), 0))]


def _lora_module(name: str, fan_in, fan_out, count) -> tuple[ShapeTerm, ...]:
    return (ShapeTerm(f"lora_{name}_count", f"Linear layers named {name}", "count", count, _PEFT),
            ShapeTerm(f"lora_{name}_params", f"LoRA parameters per rank on {name}", "count",
                      count * (fan_in + fan_out), _PEFT),
            ShapeTerm(f"lora_{name}_inputs", f"Input features of all {name} layers", "count", count * fan_in, _PEFT))


def _lora_mlp_module(name: str) -> tuple[ShapeTerm, ...]:
    """gate_proj, up_proj or down_proj as named targets: every gated MLP block whose modules carry the
    name (split layouts); a fused layout (Phi-3) keeps a separate down_proj per layer."""
    h = _H
    count = params = inputs = 0
    for width, n in _mlp_modules(named=True):
        fan_in, fan_out = (width, h) if name == "down_proj" else (h, width)
        count = count + _adapted(width, n, 1)
        params = params + _adapted(width, n, fan_in + fan_out)
        inputs = inputs + _adapted(width, n, fan_in)
    fused = {"count": _L, "params": _L * (V("intermediate_size") + h), "inputs": _L * V("intermediate_size")}
    if name != "down_proj":
        fused = {k: 0 for k in fused}
    return tuple(ShapeTerm(f"lora_{name}_{kind}", label, "count", IF(_GATED_SPLIT, split, IF(_GATE_UP, fused[kind], 0)),
                           _PEFT)
                 for kind, label, split in (("count", f"Linear layers named {name}", count),
                                            ("params", f"LoRA parameters per rank on {name}", params),
                                            ("inputs", f"Input features of all {name} layers", inputs)))


# The module names a model's layout has: attention split or fused, a gated MLP split or fused (Phi-3).
_SPLIT_ATTENTION, _FUSED_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj"), ("qkv_proj", "o_proj")
_SPLIT_MLP, _FUSED_MLP = ("gate_proj", "up_proj", "down_proj"), ("gate_up_proj", "down_proj")
LORA_MODULES = _SPLIT_ATTENTION + _SPLIT_MLP + ("qkv_proj", "gate_up_proj")
# The named target sets a scenario may choose (inputs.LORA_TARGET_SETS) and the modules each adapts.
LORA_SET_MODULES = {"q_proj,v_proj": ("q_proj", "v_proj"),
                    "q_proj,k_proj,v_proj,o_proj": ("q_proj", "k_proj", "v_proj", "o_proj")}
LORA_SET_SUFFIX = {"q_proj,v_proj": "qv", "q_proj,k_proj,v_proj,o_proj": "qkvo", "all-linear": "all"}


def _all_linear(kind: str) -> Expr:
    """all-linear: every attention projection, every MLP of every layer (experts and shared experts
    whatever their names), and the router, where they are nn.Linear layers (GPT-2's Conv1D layers too)."""
    h, moe, width = _H, V("num_moe_layers"), V("intermediate_size")
    out: Expr = V(f"lora_o_proj_{kind}") + V(f"lora_q_proj_{kind}") + V(f"lora_k_proj_{kind}") + V(
        f"lora_v_proj_{kind}") + V(f"lora_qkv_proj_{kind}") + V(f"lora_gate_up_proj_{kind}")
    for mlp_width, n in _mlp_modules(named=False):
        per = {"count": 3, "params": 3 * (h + mlp_width), "inputs": 2 * h + mlp_width}[kind]
        out = out + IF(_GATED_SPLIT, _adapted(mlp_width, n, per), 0)
    plain = {"count": 2, "params": 2 * (h + width), "inputs": h + width}[kind]
    router = {"count": moe, "params": moe * (h + V("num_experts")), "inputs": moe * h}[kind]
    return (out + IF(AND(_SPLIT, V("num_experts").gt(0), V("experts_as_parameters").eq(0)), router, 0)
            + IF(_GATE_UP, V(f"lora_down_proj_{kind}"), 0)
            + IF(_PLAIN, _adapted(width, V("num_dense_layers"), plain), 0))


def _set(kind: str, modules: tuple[str, ...]) -> Expr:
    """The named set's modules; where q, k and v are one layer, that layer (PEFT's default target on those
    architectures; LitGPT adapts the queries and values inside it) and the output projection where named."""
    present = AND(*(V(f"lora_{m}_count").gt(0) for m in modules))
    total: Expr = V(f"lora_{modules[0]}_{kind}")
    for m in modules[1:]:
        total = total + V(f"lora_{m}_{kind}")
    fused: Expr = V(f"lora_qkv_proj_{kind}") + (V(f"lora_o_proj_{kind}") if "o_proj" in modules else 0)
    return IF(present, total, IF(_FUSED, fused, 0))


def _lora_sets() -> tuple[ShapeTerm, ...]:
    out = []
    for targets, suffix in LORA_SET_SUFFIX.items():
        modules = LORA_SET_MODULES.get(targets)
        per_rank = _set("params", modules) if modules else _all_linear("params")
        inputs = _set("inputs", modules) if modules else _all_linear("inputs")
        count = _set("count", modules) if modules else _all_linear("count")
        out += [
            ShapeTerm(f"lora_per_rank_{suffix}", f"LoRA parameters per rank, {targets}", "count", per_rank, _PEFT),
            ShapeTerm(f"lora_inputs_{suffix}", f"Adapted input features per layer, {targets}", "count",
                      inputs / _L, "PEFT keeps an fp32 copy of each adapted layer's input"),
            ShapeTerm(f"lora_modules_{suffix}", f"Adapted modules per layer, {targets}", "count", count / _L, _PEFT),
        ]
    return tuple(out)


# vLLM's KV cache group of a hybrid model: as many layers as its kind with fewer has, the larger count within 25 %
_FEWER = MIN(V("num_attention_layers"), V("num_mamba_layers"))
_MORE = MAX(V("num_attention_layers"), V("num_mamba_layers"))
_GROUP = IF(_MORE.lt(1.25 * _FEWER), _MORE, _FEWER)
_h, _q, _kv = V("hidden_size"), V("q_dim"), V("kv_dim")
MODEL_TERMS: tuple[ShapeTerm, ...] = (
    # ---- widths --------------------------------------------------------------------------------
    ShapeTerm("is_generic", "Known only by its size (1/0)", "flag", IF(V("generic_total_params").gt(0), 1, 0)),
    ShapeTerm("is_moe", "Mixture of experts (1/0)", "flag", IF(V("num_experts").gt(0), 1, 0)),
    ShapeTerm("is_mla", "Multi-head latent attention (1/0)", "flag", IF(V("kv_lora_rank").gt(0), 1, 0)),
    ShapeTerm("op_checkpoint_layers", "Dense layers whose linear layers per-op checkpointing is modelled for (1/0)",
              "flag", IF(AND(is_one_of(V("model_type"), *OP_CHECKPOINT_MODEL_TYPES), V("num_experts").eq(0)), 1, 0),
              "lookups.OP_CHECKPOINT_MODEL_TYPES: q, k, v, o, gate, up, down in that order (or Phi-3's fused ones), "
              "or a bias on every linear layer"),
    ShapeTerm("qk_head_dim", "Query/key width per head", "count",
              IF(V("is_mla").eq(1), V("qk_nope_head_dim") + V("qk_rope_head_dim"), V("head_dim"))),
    ShapeTerm("q_dim", "Query width (heads × head_dim)", "count", V("num_attention_heads") * V("qk_head_dim")),
    ShapeTerm("kv_dim", "K/V width (KV heads × head_dim)", "count", V("num_key_value_heads") * V("head_dim")),
    ShapeTerm("attn_out_dim", "Attention output width (heads × value head_dim)", "count",
              V("num_attention_heads") * IF(V("is_mla").eq(1), V("v_head_dim"), V("head_dim"))),
    ShapeTerm("num_attention_layers", "Layers with attention", "count", _L - V("attention_free_layers"),
              "every layer but a hybrid model's Mamba-2 and MLP blocks"),
    ShapeTerm("kv_elements_per_token", "KV-cache values per token (all layers)", "elements",
              IF(V("is_mla").eq(1), _A * (V("kv_lora_rank") + V("qk_rope_head_dim")), 2 * _A * V("kv_dim")),
              "2 × attention layers × KV heads × head_dim; MLA: layers × (kv_lora_rank + rope dim)"),
    ShapeTerm("kv_window_elements_per_token", "KV-cache values per token in sliding-window layers", "elements",
              IF(V("sliding_window").gt(0), 2 * V("num_sliding_layers") * V("kv_dim"), 0),
              "2 × sliding layers × KV heads × head_dim (transformers' layer_types)"),
    ShapeTerm("num_dense_layers", "Layers with a dense MLP", "count",
              _L - V("mlp_free_layers") - V("num_moe_layers")),
    ShapeTerm("num_mixers", "Attention, MLP and Mamba-2 blocks", "count",
              V("num_attention_layers") + _L - V("mlp_free_layers") + V("num_mamba_layers"),
              "2 per layer of attention and MLP; one per block of a hybrid model (each ends in one all-reduce under "
              "tensor parallelism)"),
    # ---- Mamba-2 mixers (hybrid models) ------------------------------------------------------------
    ShapeTerm("mamba_inner_dim", "Mamba-2 inner width (heads × head_dim)", "count",
              V("mamba_num_heads") * V("mamba_head_dim")),
    ShapeTerm("mamba_conv_dim", "Mamba-2 convolution channels (x, B, C)", "count",
              V("mamba_inner_dim") + 2 * V("mamba_groups") * V("ssm_state_size"),
              "the inner width plus B and C of every group (transformers' conv_dim)"),
    ShapeTerm("mamba_in_proj_width", "Mamba-2 input projection width (z, x, B, C, dt)", "count",
              V("mamba_inner_dim") + V("mamba_conv_dim") + V("mamba_num_heads"), _HF),
    ShapeTerm("vllm_mamba_page_layers", "Mamba-2 layers as vLLM's KV cache groups count them", "count",
              IF(V("num_mamba_layers").eq(0), 0, CEIL(V("num_mamba_layers") / _GROUP) * _GROUP),
              "vLLM groups a hybrid model's layers by kind, as many per group as the kind with fewer layers has (the "
              "larger count where the two are within 25 %), and pads the last group "
              "(vllm/v1/core/kv_cache_utils.py); Nemotron-H has fewer attention layers, so its Mamba-2 layers are "
              "the padded kind"),
    ShapeTerm("vllm_kv_groups", "KV cache groups as vLLM makes them", "count",
              IF(V("num_mamba_layers").eq(0), 1,
                 V("vllm_mamba_page_layers") / _GROUP + CEIL(V("num_attention_layers") / _GROUP)),
              "a hybrid model's layers in groups of vllm_mamba_page_layers' size, each kind apart (Nemotron-3-Nano-30B-A3B: "
              "one group of its 6 attention layers, four of its 23 Mamba-2 layers and one padding layer); one for a "
              "model of attention layers alone"),
    ShapeTerm("mamba_ssm_state_elements", "SSM state values per sequence (all Mamba-2 layers)", "elements",
              V("num_mamba_layers") * V("mamba_inner_dim") * V("ssm_state_size"),
              "heads × head_dim × ssm_state_size per layer, whatever the sequence's length"),
    ShapeTerm("routed_mlp_width", "Routed experts' MLP width per token", "count",
              IF(V("is_moe").eq(1), V("num_moe_layers") * V("num_experts_per_tok") * V("moe_intermediate_size")
                 / (_L - V("mlp_free_layers")), 0)),
    ShapeTerm("mlp_width", "MLP width per token (MoE: top-k + shared experts)", "count",
              IF(V("is_moe").eq(1),
                 (V("num_dense_layers") * V("intermediate_size")
                  + V("num_moe_layers") * V("shared_expert_intermediate_size")) / (_L - V("mlp_free_layers"))
                 + V("routed_mlp_width"),
                 V("intermediate_size")),
              "the routed top-k and shared experts a token passes through, averaged over the layers with an MLP"),
    ShapeTerm("mlp_saved_tensors", "MLP-width tensors saved per token (trained MLP)", "count",
              IF(V("gated_mlp").eq(1), 4, IF(V("hidden_act").eq("gelu_new"), 5, IF(V("hidden_act").eq("gelu_fast"), 8, 2))),
              "gated: gate, up, act(gate), product; plain: fc1 output and act output (a tanh-GELU written out in "
              "Python keeps more: GPT-2's NewGELU 5, transformers' FastGELU, gelu_fast, 8)"),
    ShapeTerm("layer_norm", "LayerNorm (1) or RMSNorm (0)", "flag", V("norm_bias")),
    # ---- exact parameter counts ------------------------------------------------------------------
    ShapeTerm("embedding_dim", "Embedding width", "count",
              IF(V("word_embed_proj_dim").gt(0), V("word_embed_proj_dim"), _h)),
    ShapeTerm("embedding_params", "Embedding parameters", "count",
              V("vocab_size") * IF(V("is_generic").eq(1), _h, V("embedding_dim"))
              + IF(V("is_generic").eq(1), 0,
                   V("num_position_embeddings") * _h + 2 * _h * V("word_embed_proj_dim")
                   + V("embedding_norm") * _h * _nf()),
              "token (and learned position) embeddings, OPT's projections, BLOOM's embedding norm; " + _HF),
    ShapeTerm("attention_params_per_layer", "Attention parameters per layer", "count",
              IF(V("is_mla").eq(1),
                 IF(V("q_lora_rank").gt(0), _h * V("q_lora_rank") + V("q_lora_rank") * _q, _h * _q)
                 + _h * (V("kv_lora_rank") + V("qk_rope_head_dim"))
                 + V("kv_lora_rank") * V("num_attention_heads") * (V("qk_nope_head_dim") + V("v_head_dim"))
                 + V("attn_out_dim") * _h,
                 _h * _q + 2 * _h * _kv + V("attn_out_dim") * _h
                 + V("qkv_bias") * (_q + 2 * _kv) + V("o_bias") * _h + V("attention_sinks") * V("num_attention_heads")),
              _HF),
    ShapeTerm("attention_params", "Attention parameters", "count",
              IF(V("is_generic").eq(1), 0, _A * V("attention_params_per_layer")), _HF),
    ShapeTerm("mamba_params", "Mamba-2 mixer parameters", "count",
              V("num_mamba_layers") * ((_h + V("mamba_proj_bias")) * V("mamba_in_proj_width")
                                       + (V("conv_kernel") + V("mamba_conv_bias")) * V("mamba_conv_dim")
                                       + 3 * V("mamba_num_heads") + V("mamba_inner_dim")
                                       + (V("mamba_inner_dim") + V("mamba_proj_bias")) * _h),
              "in_proj, the depthwise conv1d, dt_bias, A_log and D per head, the gated RMSNorm and out_proj; " + _HF),
    ShapeTerm("mlp_params", "Dense MLP parameters (and shared experts)", "count",
              IF(V("is_generic").eq(1), 0,
                 V("num_dense_layers") * _mlp(V("intermediate_size"))
                 + IF(V("shared_expert_intermediate_size").gt(0),
                      V("num_moe_layers") * _mlp(V("shared_expert_intermediate_size")), 0)), _HF),
    ShapeTerm("expert_params", "Routed-expert parameters", "count",
              IF(V("is_generic").eq(1), 0, _EXPERT_LAYERS * _mlp(V("moe_intermediate_size"))), _HF),
    ShapeTerm("expert_matrix_params", "Routed-expert weight matrices (biases left out)", "count",
              IF(V("is_generic").eq(1), 0,
                 _EXPERT_LAYERS * IF(V("gated_mlp").eq(1), 3, 2) * _h * V("moe_intermediate_size")),
              "what a quantisation of the experts alone (MXFP4) stores in 4 bits"),
    ShapeTerm("router_params", "Router parameters", "count",
              IF(V("is_generic").eq(1), 0,
                 V("num_moe_layers") * (_h * V("num_experts") + V("router_bias") * V("num_experts")
                                        + V("shared_expert_gate") * _h)), _HF),
    ShapeTerm("norm_params", "Norm parameters", "count",
              IF(V("is_generic").eq(1), 0,
                 _L * V("norms_per_layer") * _h * _nf()
                 + _A * (V("qk_norm") * 2 * V("head_dim") + V("q_lora_rank") * _nf() + V("kv_lora_rank") * _nf())
                 + V("final_norm") * _h * _nf()), _HF),
    ShapeTerm("lm_head_params", "LM-head parameters (0 if tied)", "count",
              IF(V("tie_word_embeddings").eq(1), 0, V("vocab_size") * IF(V("is_generic").eq(1), _h, V("embedding_dim"))),
              _HF),
    ShapeTerm("block_params", "Decoder-block parameters (a model known only by its size)", "count",
              IF(V("is_generic").eq(1), V("generic_total_params") - V("embedding_params") - V("lm_head_params"), 0)),
    ShapeTerm("total_params", "Parameters (total)", "count",
              V("embedding_params") + V("attention_params") + V("mamba_params") + V("mlp_params")
              + V("expert_params") + V("router_params") + V("norm_params") + V("lm_head_params") + V("block_params"),
              "exact count from config.json; tied embeddings counted once; " + _HF),
    ShapeTerm("inactive_expert_params", "Routed-expert parameters a token does not use", "count",
              IF(V("is_moe").eq(1), V("num_moe_layers") * (V("num_experts") - V("num_experts_per_tok"))
                 * _mlp(V("moe_intermediate_size")), 0)),
    ShapeTerm("active_params", "Parameters active per token (MoE: top-k + shared experts)", "count",
              V("total_params") - V("inactive_expert_params"), "every weight a token passes through"),
    ShapeTerm("decoder_layer_params", "One decoder layer", "count",
              FLOOR((V("total_params") - V("embedding_params") - V("lm_head_params")) / _L)),
    ShapeTerm("largest_layer_params", "Largest layer (ZeRO-3 gather unit)", "count",
              MAX(V("decoder_layer_params"), V("embedding_params"), V("lm_head_params")),
              "one decoder layer, or the embedding or LM head if larger (DeepSpeed gathers a module at a time)"),
    ShapeTerm("root_unit_params", "Embedding, LM head and final norm (FSDP2's root unit)", "count",
              V("embedding_params") + V("lm_head_params") + V("final_norm") * _h * _nf(),
              "what fully_shard(model) holds beside the decoder layers' own units"),
    # ---- LoRA: per PEFT module name, then the named target sets ------------------------------------
    *_lora_module("q_proj", _h, _q, IF(_SPLIT, _L, 0)),
    *_lora_module("k_proj", _h, _kv, IF(_SPLIT, _L, 0)),
    *_lora_module("v_proj", _h, _kv, IF(_SPLIT, _L, 0)),
    *_lora_module("o_proj", V("attn_out_dim"), _h, IF(_SUPPORTED, _L, 0)),
    *_lora_module("qkv_proj", _h, _q + 2 * _kv, IF(_FUSED, _L, 0)),
    *_lora_module("gate_up_proj", _h, 2 * V("intermediate_size"), IF(_GATE_UP, _L, 0)),
    *_lora_mlp_module("gate_proj"),
    *_lora_mlp_module("up_proj"),
    *_lora_mlp_module("down_proj"),
    *_lora_sets(),
)
MODEL_TERM_NAMES = tuple(t.name for t in MODEL_TERMS)


def config_row(spec: ModelSpec) -> dict:
    """The raw config fields of a model as the Models table holds them (flags as 1/0)."""
    return {f: (int(v) if isinstance(v, bool) else v) for f in MODEL_FIELDS for v in (getattr(spec, f),)}


def _field(n: str) -> str:
    if n in MODEL_FIELDS:
        return f"I[{n!r}]"
    raise KeyError(n)


_EVALUATE = compile_terms(MODEL_TERMS, _field, "_model_terms", cache=True)


def model_row(spec: ModelSpec) -> dict:
    """The Models-table row of a model: its config fields and every MODEL_TERMS value."""
    raw = config_row(spec)
    return {**raw, **dict(zip(MODEL_TERM_NAMES, _EVALUATE(raw, None, None, None)))}


COMPONENTS = {"embedding": "embedding_params", "attention": "attention_params", "mamba": "mamba_params",
              "mlp": "mlp_params",
              "experts": "expert_params", "router": "router_params", "norms": "norm_params",
              "lm_head": "lm_head_params"}
GENERIC_COMPONENTS = {"embedding": "embedding_params", "blocks": "block_params", "lm_head": "lm_head_params"}


def params_by_component(row: dict) -> dict[str, int]:
    """Exact parameters per component (a model known only by its size: embedding, blocks, head)."""
    names = GENERIC_COMPONENTS if row["is_generic"] else COMPONENTS
    return {k: int(row[v]) for k, v in names.items() if k != "mamba" or row["num_mamba_layers"]}


def lora_trainable(row: dict, rank: int, targets: tuple[str, ...], *, model: str) -> int:
    """LoRA parameters for PEFT target module names (or ("all-linear",)) on a model's row. A named set's modules
    count as the set does (a fused qkv layer for q_proj and v_proj); o_proj names the attention's output
    projection and qkv_proj a fused query-key-value layer, whatever the architecture calls them (OPT's out_proj,
    GPT-NeoX's dense and query_key_value, GPT-2's c_proj and c_attn)."""
    if not row["lora_per_rank_all"]:
        raise InputError(f"LoRA is not modelled for {model} ({row['model_type']}): multi-head latent attention "
                         "and Mamba-2 layers get no adapters here", key_path="lora_targets")
    named = {LORA_SET_MODULES.get(name, (name,)): suffix for name, suffix in LORA_SET_SUFFIX.items()}
    if targets in named:
        return rank * int(row[f"lora_per_rank_{named[targets]}"])
    # The names the architecture has (a name may match no layer, as gate_proj in Mixtral's MoE blocks); a plain
    # MLP's two layers are reached by all-linear only.
    present = ((_FUSED_ATTENTION if row["fused_qkv"] else _SPLIT_ATTENTION)
               + ((_FUSED_MLP if row["fused_projections"] else _SPLIT_MLP) if row["gated_mlp"] else ()))
    for t in targets:
        if t not in present:
            raise InputError(f"{model} has no module named {t!r} (the ones counted on it: {', '.join(present)}, "
                             "or all-linear)", key_path="lora_targets")
    return rank * sum(int(row[f"lora_{t}_params"]) for t in targets)
