"""Lookup tables the memory formulas read: precision recipes, data types, optimizers.

Each table is data with its source; the estimator looks rows up by name, the workbook writes the
same rows to sheets that its formulas INDEX/MATCH into, and the report prints them. A planner who
edits a row in the workbook changes every formula that uses it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table:
    name: str  # sheet name in the workbook, table name in formulas
    key: str  # the column holding row names
    columns: tuple[str, ...]  # numeric columns, in sheet order
    rows: dict[str, dict[str, float]]
    notes: dict[str, str]  # row -> description and source
    column_help: dict[str, str]


PRECISIONS = Table(
    name="Precisions",
    key="precision",
    columns=("weight_bytes", "grad_bytes", "master_bytes", "state_bytes", "compute_bytes",
             "norm_saved_bytes", "residual_bytes", "autocast_copies", "fp8_gemms", "fp8_copy_bytes", "gather_bytes"),
    rows={
        "fp32": dict(weight_bytes=4, grad_bytes=4, master_bytes=0, state_bytes=4, compute_bytes=4,
                     norm_saved_bytes=12, residual_bytes=4, autocast_copies=0, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=4),
        "amp-bf16": dict(weight_bytes=4, grad_bytes=4, master_bytes=0, state_bytes=4, compute_bytes=2,
                         norm_saved_bytes=14, residual_bytes=4, autocast_copies=1, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=4),
        "bf16-mixed": dict(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, compute_bytes=2,
                           norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=2),
        "fp16-mixed": dict(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, compute_bytes=2,
                           norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=2),
        "bf16": dict(weight_bytes=2, grad_bytes=2, master_bytes=0, state_bytes=2, compute_bytes=2,
                     norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=2),
        "fp8-te": dict(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, compute_bytes=2,
                       norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=1, fp8_copy_bytes=2,
                       gather_bytes=2),
        "fp8-te-params": dict(weight_bytes=2, grad_bytes=2, master_bytes=4, state_bytes=4, compute_bytes=2,
                              norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=1, fp8_copy_bytes=0,
                              gather_bytes=2),
        "fsdp-bf16": dict(weight_bytes=4, grad_bytes=4, master_bytes=0, state_bytes=4, compute_bytes=2,
                          norm_saved_bytes=8, residual_bytes=2, autocast_copies=0, fp8_gemms=0, fp8_copy_bytes=0, gather_bytes=2),
    },
    notes={
        "fp32": "Everything in fp32: weights, gradients and Adam states 4 bytes each (the 16N of pure fp32 training).",
        "amp-bf16": "PyTorch autocast on fp32 parameters (HF Trainer bf16=True on an fp32-loaded model): fp32 "
                    "weights, gradients and Adam states; bf16 copies of the weights live through forward and backward.",
        "bf16-mixed": "DeepSpeed/Megatron mixed precision: bf16 weights and gradients, fp32 master weights and Adam "
                      "states: 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter (ZeRO paper, K = 12).",
        "fp16-mixed": "As bf16-mixed with fp16 working copies and a loss scaler (negligible memory).",
        "bf16": "Pure bf16: weights, gradients and AdamW states all bf16, as torch.optim.AdamW keeps them for "
                "bf16 parameters: 8 bytes per parameter.",
        "fsdp-bf16": "FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), torchtitan's default: fp32 "
                     "parameters, gradients and AdamW states, sharded; each unit's parameters gathered in bf16 and "
                     "computed in bf16 without autocast; gradients reduce-scattered in fp32 (one rank of FSDP2 on a "
                     "fake process group: tools/oracle/measure_fsdp2.py).",
        "fp8-te": "FP8 training with NVIDIA Transformer Engine on bf16-mixed states (bf16 weights and gradients, fp32 "
                  "master weights and Adam states): the linear layers' GEMMs run in FP8, each layer weight is cast "
                  "to FP8 twice (row-wise and its transpose, kept for the step) and the GEMM inputs are saved in FP8; "
                  "norms, attention, the embedding and the LM head stay in bf16. Under LoRA the frozen layers' "
                  "forward and input-gradient GEMMs run in FP8 (their weights cast as above, no input saved) and "
                  "the adapters in 16-bit.",
        "fp8-te-params": "fp8-te with FP8 primary weights (Transformer Engine's fp8_model_init: Megatron-Core's "
                         "--fp8-param-gather, NeMo's fp8_params): the decoder layers' linear weights are held in FP8 "
                         "with the transpose Hopper's GEMMs need (1 + 1 bytes) in place of bf16 weights and their two "
                         "casts; fp32 master weights and Adam states, bf16 gradients, as fp8-te.",
    },
    column_help={
        "weight_bytes": "bytes per parameter of the working weights",
        "grad_bytes": "bytes per gradient element",
        "master_bytes": "bytes per parameter of a separate fp32 master copy (0 if none)",
        "state_bytes": "bytes per optimizer state element",
        "compute_bytes": "bytes per activation element",
        "norm_saved_bytes": "bytes saved per hidden element by one RMSNorm for backward (fp32 input, normalised and "
                            "scaled outputs; measured with transformers)",
        "residual_bytes": "bytes per element of the residual stream (what full checkpointing keeps per layer)",
        "autocast_copies": "1 if autocast keeps bf16 copies of the weights alive during forward and backward",
        "gather_bytes": "bytes per element of the weights ZeRO-3/FSDP gathers to compute with, and of their "
                        "unsharded gradients",
        "fp8_gemms": "1 if the linear layers' GEMMs run in FP8 (Transformer Engine)",
        "fp8_copy_bytes": "bytes per decoder-layer linear weight of FP8 casts kept beside the working weights for "
                          "the step (row-wise and transposed: 2, halved on a GPU whose FP8 GEMMs take either "
                          "layout, the GPUs sheet's fp8_any_layout; none where the weights are FP8 themselves)",
    },
)

# bits per parameter including quantisation scales; embed_bits is what embeddings and the LM head
# keep when the linear layers are quantised (vLLM, AWQ, GPTQ and bitsandbytes leave them in 16 bit).
DTYPES = Table(
    name="Dtypes",
    key="dtype",
    columns=("bits", "embed_bits", "experts_only"),
    rows={
        "fp32": dict(bits=32, embed_bits=32, experts_only=0),
        "bf16": dict(bits=16, embed_bits=16, experts_only=0),
        "fp16": dict(bits=16, embed_bits=16, experts_only=0),
        "fp8": dict(bits=8, embed_bits=16, experts_only=0),
        "int8": dict(bits=8, embed_bits=16, experts_only=0),
        "int4": dict(bits=4.15625, embed_bits=16, experts_only=0),
        "nf4": dict(bits=4.126953125, embed_bits=16, experts_only=0),
        "mxfp4": dict(bits=4.25, embed_bits=16, experts_only=1),
    },
    notes={
        "fp32": "IEEE single precision.",
        "bf16": "bfloat16.",
        "fp16": "IEEE half precision.",
        "fp8": "FP8 (E4M3) weights with per-tensor scales (negligible).",
        "int8": "8-bit integer weights with per-channel scales (negligible).",
        "int4": "4-bit integer weights, group size 128, one fp16 scale and one 4-bit zero point per group: "
                "4 + 20/128 = 4.15625 bits (GPTQ/AWQ layout).",
        "nf4": "QLoRA NF4 with double quantisation: 4 bits + 8-bit absmax per 64 weights + fp32 constant per 256 "
               "blocks = 4 + 8/64 + 32/16384 = 4.127 bits (Dettmers et al. 2023).",
        "mxfp4": "OCP Microscaling MXFP4: FP4 (E2M1) elements with one 8-bit (E8M0) scale per 32: 4 + 8/32 = 4.25 bits; "
                 "as GPT-OSS ships it, on the MoE experts' weight matrices only (attention, router, biases, "
                 "embeddings and head stay 16-bit: its quantization_config's modules_to_not_convert).",
    },
    column_help={"bits": "bits per weight, scales included", "embed_bits": "bits per embedding/LM-head weight",
                 "experts_only": "1 if only the MoE experts' weight matrices take this dtype (the rest embed_bits)"},
)

OPTIMIZERS = Table(
    name="Optimizers",
    key="optimizer",
    columns=("num_states", "state_bytes_override"),
    rows={
        "adamw": dict(num_states=2, state_bytes_override=0),
        "adamw-8bit": dict(num_states=2, state_bytes_override=1.001953125),
        "adamw-bf16": dict(num_states=2, state_bytes_override=2),
        "sgd-momentum": dict(num_states=1, state_bytes_override=0),
        "sgd": dict(num_states=0, state_bytes_override=0),
    },
    notes={
        "adamw": "Adam/AdamW: first and second moments, each one state per parameter.",
        "adamw-8bit": "bitsandbytes 8-bit AdamW: two 1-byte states plus an fp32 absmax per 2048-element block "
                      "(1 + 4/2048 bytes per state element).",
        "adamw-bf16": "AdamW with both moments in bf16, 2 bytes per state element: Megatron-Core's precision-aware "
                      "optimizer (--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16, with "
                      "its distributed optimizer); the fp32 master weights stay.",
        "sgd-momentum": "SGD with momentum: one state per parameter.",
        "sgd": "Plain SGD: no state.",
    },
    column_help={"num_states": "optimizer state tensors per parameter",
                 "state_bytes_override": "bytes per state element if fixed by the optimizer (0: the precision's)"},
)

LOOKUP_TABLES = (PRECISIONS, DTYPES, OPTIMIZERS)

# Choices for text inputs that are not table keys.
WORKLOADS = ("inference", "full", "lora", "qlora")
# What each checkpointing choice recomputes in backward: full (every layer), selective (the attention core: Megatron's
# default --recompute-modules core_attn), or a list of Megatron-Core's --recompute-granularity selective
# --recompute-modules, each a recipe its authors publish: layernorm+moe_act and layernorm+moe (the MoE team's Qwen3
# tables), mla_up_proj+mlp (its DeepSeek-V3 H100 recipe), layernorm+mla_up_proj+moe_act (DeepSeek-V3's own report:
# RMSNorm, MLA up-projections, the SwiGLU output), layernorm+mla_up_proj+mlp+moe (its long-context DeepSeek-V3),
# layernorm+mla_up_proj+mlp+moe_act (its Kimi-K2 GB200 recipe).
RECOMPUTE_MODULES: dict[str, tuple[str, ...]] = {
    "none": (), "full": ("full",), "selective": ("core_attn",),
    "layernorm+moe_act": ("layernorm", "moe_act"), "layernorm+moe": ("layernorm", "moe"),
    "mla_up_proj+mlp": ("mla_up_proj", "mlp"),
    "layernorm+mla_up_proj+moe_act": ("layernorm", "mla_up_proj", "moe_act"),
    "layernorm+mla_up_proj+mlp+moe": ("layernorm", "mla_up_proj", "mlp", "moe"),
    "layernorm+mla_up_proj+mlp+moe_act": ("layernorm", "mla_up_proj", "mlp", "moe_act"),
}
# op: torchtitan's per-op selective checkpointing (selective_ac_option 'op'), a policy over the operators a layer
# dispatches rather than a list of modules: a layer keeps its input, the attention kernel's outputs and every other
# plain matrix multiplication's output, and recomputes the rest (terms.py: op_layer_saved_per_token)
CHECKPOINTING = (*RECOMPUTE_MODULES, "op")
# The layer code whose linear layers per-op checkpointing is modelled for (terms._op_checkpoint_linears: q, k, v, o,
# gate, up, down in that order, or Phi-3's fused qkv and gate_up); GPT-2, OPT, BLOOM and GPT-NeoX put a bias on
# every linear layer, so it keeps none of them whatever their order
OP_CHECKPOINT_MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "generic", "gpt2", "opt",
                             "bloom", "gpt_neox")
# Megatron-Core's module lists: the choices that only its layers have
MODULE_LISTS = tuple(c for c, modules in RECOMPUTE_MODULES.items() if set(modules) - {"full", "core_attn"})


def recomputing(module: str) -> tuple[str, ...]:
    """The checkpointing choices that recompute `module` (a Megatron-Core recompute module)."""
    return tuple(c for c, modules in RECOMPUTE_MODULES.items() if module in modules)
ATTENTION = ("flash", "sdpa", "fused", "eager")  # the attention kernels: the attention input's help says what each is
# transformers' experts implementations (config._experts_implementation); grouped_mm is its default
EXPERTS_IMPLEMENTATIONS = ("grouped_mm", "eager")
DROPOUT = ("off", "config")
# MoE token dispatchers under training: NCCL's all-to-all (Megatron-Core's alltoall), DeepEP (its flex dispatcher)
MOE_DISPATCHERS = ("alltoall", "deepep")
EP_OVERLAP = ("off", "on")  # Megatron-Core's --overlap-moe-expert-parallel-comm
TP_OVERLAP = ("off", "on")  # Megatron-Core's --tp-comm-overlap, torchtitan's async TP
FP8_ACTIVATIONS = ("off", "mlp", "attention", "mlp+attention")  # Megatron-Core's FP8 storage of activations
ADAPTER_DTYPES = ("fp32", "model")
LOSSES = ("fp32", "fp32-chunked", "compute", "compute-chunked")
FRAMEWORKS = ("hf", "deepspeed", "fsdp2", "megatron", "litgpt")  # training frameworks (engines serve)
LORA_DROPOUT = ("off", "on")
MODULES_TO_SAVE = ("none", "embed-head")
OPTIMIZER_IMPLS = ("fused", "foreach")
SAMPLERS = ("fused", "sort")
# What a rollout engine beside the actor does while the actor trains: vLLM's sleep levels 1 (offload) and 2
# (discard), or no sleep (none).
ENGINE_SLEEP = ("offload", "discard", "none")
OFFLOAD = ("none", "optimizer", "all")
SEQUENCE_PARALLEL = ("auto", "on", "off")
HEADS = ("lm", "value")
LOGITS = ("last", "all")
