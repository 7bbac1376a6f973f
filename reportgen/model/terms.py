"""Every memory term, defined once.

TERMS is an ordered table: each entry names a quantity, gives its unit, its formula over inputs
(inputs.INPUTS), assumptions (ASSUMPTIONS), catalog lookups (the Models table holds each model's config
fields and its shape.MODEL_TERMS) and earlier terms, and cites its source.
The estimator compiles this table into one Python function; the workbook writes each entry as a
formula column; the report's method section prints each formula as text. All quantities are
per GPU and in bytes unless the unit says otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InputError
from .formulas import (AND, CEIL, FLOOR, IF, MAX, MIN, MOD, NOT, OR, POWER, Cmp, Const, Expr, Fn, Lookup, Num, Op, Str, Var, ceil_div,
                       is_one_of, with_children)
from .inputs import FROZEN, INPUT_NAMES, ROLLOUT
from .lookups import MODULE_LISTS, recomputing
from .units import GiB as _GIB, MiB as _MIB


@dataclass(frozen=True)
class Assumption:
    """An editable figure every scenario shares; presets and the workbook name it and give it in `unit`."""
    name: str
    label: str
    default: float
    unit: str
    help: str
    limits: tuple[float, float]  # inclusive; a preset, the workbook and the CLI refuse values outside
    whole: bool = False  # a whole number (a count of tokens)
    option: str = ""  # command-line option of `estimate` and `plan`, if any

    def check(self, value, *, source: str | None, key_path: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"expected a number, got {value!r}", source=source, key_path=key_path)
        lo, hi = self.limits
        if not lo <= value <= hi:  # NaN fails both comparisons
            raise InputError(f"must be between {lo:g} and {hi:g}, got {value}", source=source, key_path=key_path)
        if self.whole and not float(value).is_integer():
            raise InputError(f"expected a whole number, got {value}", source=source, key_path=key_path)
        return int(value) if self.whole else value


@dataclass(frozen=True)
class Term:
    name: str
    label: str
    unit: str  # "bytes", "count", "flag", "usd", "fraction"
    expr: Expr
    source: str = ""
    group: str = "derived"  # "lookup", "derived", "state", "activation", "phase", "total", "fit"


ASSUMPTIONS = (
    Assumption("safety_factor", "Safety factor k", 1.2, "×",
               "recommended = k × device total; the source material recommends 1.2–1.3", (1.0, 10.0),
               option="--safety-factor"),
    Assumption("fragmentation_fraction", "Allocator fragmentation", 0.10, "fraction of allocated",
               "max_memory_reserved exceeds max_memory_allocated by this fraction (PyTorch caching allocator)",
               (0.0, 1.0)),
    Assumption("cuda_context_mib", "CUDA context", 512, "MiB",
               "CUDA context and library workspaces: ~300 MB with lazy loading (CUDA ≥ 11.7) plus cuBLAS "
               "workspaces; over 1,000 MB on older stacks (pytorch/pytorch#107667)", (0, 1_048_576)),
    Assumption("comm_buffer_mib", "Communication buffers (≥ 2 GPUs)", 2150, "MiB",
               "NCCL buffers when a model spans GPUs: about 2.1 GiB per GPU measured under vLLM at TP ≥ 2",
               (0, 1_048_576)),
    Assumption("kv_block_tokens", "KV-cache block (tokens)", 16, "tokens",
               "paged-attention block size; each sequence's cache is rounded up to whole blocks (vLLM default 16)",
               (1, 1_048_576), whole=True),
    Assumption("host_ram_per_node_gib", "Host RAM per node", 1536, "GiB",
               "CPU memory of one server for offloaded states (8-GPU servers carry 1-2 TiB; a DGX H100 has 2 TiB)",
               (1, 1_048_576)),
    # ---- serving engines ----------------------------------------------------------------------------
    Assumption("driver_reserved_mib", "Memory hidden from CUDA", 450, "MiB",
               "what torch.cuda.mem_get_info reports below nvidia-smi's total (H100: 79.19 GiB of 79.65; RTX "
               "3090: 23.58 of 24.00, in published vLLM logs); an engine's gpu_memory_utilization applies to the "
               "rest", (0, 65536)),
    Assumption("nvls_rank_mib", "NCCL NVLS buffer per GPU of a communicator", 288, "MiB",
               "NVLink SHARP (NCCL's NVLS algorithm, on NVSwitch Hopper and later, communicators of more than 2 GPUs): "
               "each GPU holds this much per GPU of the communicator, 24 channels × 2 × (4 MiB buffer + 2 MiB); "
               "vllm-project/vllm#9699 logs nvlsPerRankSize 301989888 and nvlsTotalSize 2415919104 at TP 8 on H200",
               (0, 1_048_576)),
    Assumption("engine_non_torch_mib", "Engine memory outside PyTorch", 256, "MiB",
               "cuBLAS and NCCL workspaces a serving engine finds outside PyTorch at one GPU (vLLM logs: "
               "0.13-0.35 GiB); at TP > 1 the communication buffers come on top", (0, 65536)),
    Assumption("engine_tp_non_torch_mib", "Engine memory outside PyTorch per tensor-parallel GPU", 150, "MiB",
               "at TP > 1, per GPU of the tensor-parallel group, on top of engine_non_torch_mib: what grows with the "
               "group outside PyTorch during the profile (NCCL's channel buffers, connected at the first all-reduce, "
               "the likely part); llm-d's vLLM run at TP 2 on H100 logs 0.55 GiB outside PyTorch, 0.30 more than at "
               "one GPU", (0, 65536)),
    # fitted: each read off the published log named in its help (a fit row of the serving validation,
    # scripts/annotate_serving.py)
    Assumption("engine_profile_mlp_tensors", "Engine profile: MLP-wide tensors per token", 3, "tensors",
               "what vLLM's start-up profiling forward holds at once per token of max_num_batched_tokens, in MLP "
               "widths: the gate/up output (2) and the activated product (1); fitted with the next to vLLM's "
               "Llama-3.1-8B log (pub-srv-013: 111 KB per token = (3 × 14,336 + 3 × 4,096) × 2 bytes)", (0, 20)),
    Assumption("engine_profile_hidden_tensors", "Engine profile: hidden-wide tensors per token", 3, "tensors",
               "the same in hidden widths: the layer's input, its norm and its output (fitted with the previous "
               "to pub-srv-013)", (0, 20)),
    Assumption("sampler_fused_bytes", "Sampler bytes per element, fused kernels", 15, "bytes per element",
               "vLLM's sampler over max_num_seqs × the vocabulary with fused top-k/top-p kernels, beside the "
               "forward's hidden states: fitted to vLLM 0.19's Llama-3.1-8B log at 1,024 sequences (pub-srv-006)",
               (0, 1000)),
    Assumption("sampler_sort_bytes", "Sampler bytes per element, sort-based fallback", 38.3, "bytes per element",
               "the same with PyTorch's sort-based top-k/top-p: fitted to llm-d's vLLM run of Qwen3-32B (pub-srv-028); "
               "its held-out runs of Qwen3-0.6B and gpt-oss-20b (pub-srv-027, 029) give 38.25-38.38", (0, 1000)),
    Assumption("cuda_graph_mib", "CUDA graphs", 512, "MiB",
               "the CUDA-graph pool vLLM captures after sizing its KV pool, outside gpu_memory_utilization "
               "(0.5-1 GiB in published logs)", (0, 65536)),
    # fitted: the oracle's ratios on Llama-2-7B-shaped layers (oracle_arch.json 'recompute' records, the fit
    # rows; the other shapes held out: tests/test_oracle_arch.py)
    Assumption("recompute_ratio_trained", "Recomputed layer, every weight trained", 0.92, "×",
               "what backward holds while one fully checkpointed layer (flash attention) is rebuilt, in units of "
               "that layer's saved bytes, when every weight trains in Megatron's or LitGPT's layers (transformers' "
               "are counted by their parts: rebuilt_layer_by_parts): backward frees the saved tensors as it "
               "consumes them; fitted to the oracle's Llama-2-7B-shaped layers (oracle_arch.json 'recompute')",
               (0, 10)),
    Assumption("recompute_ratio_frozen", "Recomputed layer, frozen base (LoRA)", 1.35, "×",
               "the same with a frozen base (LoRA, QLoRA), whose weights keep no gradients; fitted to the same "
               "oracle records; in transformers' layers never below the layer's parts (rebuilt_layer_parts_bytes: "
               "adapters on the attention only at long sequences)", (0, 10)),
    # ---- training frameworks: buffer sizes users tune in their framework's config ----
    Assumption("ds_reduce_bucket_size", "DeepSpeed reduce_bucket_size", 500_000_000, "elements",
               "contiguous-gradient bucket of ZeRO-1/2/3 (contiguous_gradients, on by default): DeepSpeed's default "
               "5e8 (deepspeed/runtime/zero/config.py); the HF Trainer's 'auto' sets hidden_size²", (0, 1e11),
               whole=True),
    Assumption("ds_overlap_comm", "DeepSpeed overlap_comm (ZeRO-1/2)", 0, "1/0",
               "1 doubles the ZeRO-1/2 reduce bucket (stage_1_and_2.py allocates a second ipg buffer); DeepSpeed's "
               "default is off for stages 1-2 (on for stage 3, whose bucket is one flat buffer)", (0, 1), whole=True),
    Assumption("ds_prefetch_bucket_size", "DeepSpeed stage3_prefetch_bucket_size", 50_000_000, "elements",
               "ZeRO-3 gathers parameters up to this many elements ahead of use: DeepSpeed's default 5e7 "
               "(deepspeed/runtime/zero/config.py); the HF Trainer's 'auto' sets 0.9 × hidden_size²", (0, 1e11),
               whole=True),
    Assumption("ds_max_live_parameters", "DeepSpeed stage3_max_live_parameters", 1_000_000_000, "parameters",
               "ZeRO-3 keeps at most this many gathered parameters resident before releasing: DeepSpeed's default "
               "1e9 (deepspeed/runtime/zero/config.py)", (0, 1e13), whole=True),
    Assumption("ds_max_reuse_distance", "DeepSpeed stage3_max_reuse_distance", 1_000_000_000, "parameters",
               "ZeRO-3 does not release a parameter reused within this many parameters: DeepSpeed's default 1e9 "
               "(deepspeed/runtime/zero/config.py)", (0, 1e13), whole=True),
    Assumption("fsdp_reduce_bytes", "FSDP2 reduce-scatter bytes per element", 4, "bytes",
               "reduce_dtype of FSDP2's MixedPrecisionPolicy: 4 for fp32, as the PyTorch FSDP2 tutorial and "
               "torchtitan set it; 2 to reduce in bf16", (1, 8)),
    # ---- time: efficiency factors, each an editable planning figure with the measurement behind it ----
    Assumption("prefill_efficiency", "Prefill efficiency", 0.5, "fraction of peak",
               "fraction of the dense peak a prefill (and compute-bound decode) achieves; FlashAttention-2 "
               "forward reaches 50-73 % of A100 peak (Dao 2023, arXiv:2307.08691 §4.1)", (0.01, 1.0)),
    Assumption("decode_bandwidth_efficiency", "Decode memory-bandwidth efficiency", 0.7, "fraction of bandwidth",
               "fraction of memory bandwidth a decode step achieves reading weights and KV cache (model bandwidth "
               "utilisation 55-75 % measured for Llama-2-70B on A100/H100: Databricks, 'LLM Inference Performance "
               "Engineering: Best Practices', 2023)", (0.01, 1.0)),
    Assumption("comm_efficiency", "Collective bandwidth efficiency", 0.8, "fraction of link bandwidth",
               "NCCL all-reduce bus bandwidth as a fraction of the link's (nccl-tests reach ~80 % of NVLink and "
               "InfiniBand line rate for large messages)", (0.01, 1.0)),
    Assumption("collective_latency_us", "Collective latency", 15, "µs",
               "latency of one small all-reduce inside a node (NVLink, NCCL); decode pays two per layer at TP > 1",
               (0, 100_000)),
    Assumption("a2a_overlap_sm_share", "SMs an overlapped MoE all-to-all holds", 20 / 132, "fraction of the GPU's SMs",
               "while a micro-batch's dispatch or combine overlaps another's compute (ep_overlap on) its kernels hold "
               "this share of the SMs: DeepEP's 20 (Megatron-Core's moe_deepep_num_sms, 'historical default 20'; "
               "DeepSeek-V3's report, §3.2.2: 20 SMs suffice to saturate IB and NVLink) of a Hopper GPU's 132",
               (0.0, 0.9)),
    Assumption("host_optimizer_ns_per_param", "CPU optimizer time per parameter", 1.14, "ns per parameter a node updates",
               "an offloaded optimizer steps on the host's CPUs (DeepSpeedCPUAdam, FSDP2's CPU offload): the seconds "
               "per step are this times the parameters every GPU of a node updates together. Fitted to the Adam "
               "times DeepSpeed issue #6695 publishes (1.5 s for a 1.2B model, 0.31 s for 0.3B); published "
               "8-GPU servers take 0.5-3 ns by their CPUs (README, Accuracy): set your servers' figure",
               (0, 1_000), option="--host-optimizer-ns"),
    Assumption("amortisation_years", "Amortisation period", 3, "years",
               "a purchased GPU's price spread over this many years of use (straight-line depreciation)",
               (0.1, 50)),
    # ---- owning a fleet against renting it (the decision page: fleet.py) ----------------------------------
    Assumption("pue", "Power usage effectiveness", 1.58, "×",
               "facility power per watt of IT load: 1.58 is the global average of the Uptime Institute Global Data "
               "Center Survey 2023 (https://intelligence.uptimeinstitute.com/resource/uptime-institute-global-data-"
               "center-survey-2023); hyperscale halls reach 1.1-1.2", (1.0, 5.0)),
    Assumption("server_power_factor", "Server power per watt of GPU TDP", 1.82, "×",
               "the CPUs, memory, network cards and fans around the GPUs: an NVIDIA DGX H100 draws at most 10.2 kW "
               "for 8 × 700 W GPUs (DGX H100/H200 user guide, power specifications: https://docs.nvidia.com/dgx/"
               "dgxh100-user-guide/introduction-to-dgxh100.html)", (1.0, 5.0)),
    Assumption("electricity_usd_per_kwh", "Electricity price", 0.10, "USD/kWh",
               "between the US averages for industrial (about 8 ¢) and commercial (about 12.7 ¢) customers in 2023 "
               "(EIA Electric Power Annual: https://www.eia.gov/electricity/annual/); edit for your site", (0, 10)),
    Assumption("hosting_usd_per_gpu_year", "Hosting per GPU and year", 1500, "USD per GPU-year",
               "rack space, network ports, support contracts and staff per GPU owned: a planning placeholder, edit "
               "before use", (0, 1e6)),
)
ASSUMPTION_DEFAULTS = {a.name: a.default for a in ASSUMPTIONS}
ASSUMPTION_BY_NAME = {a.name: a for a in ASSUMPTIONS}


def _m(column: str) -> Expr:
    return Lookup("Models", column, Var("model"))


def _quantised(params: Expr, experts: Expr) -> Expr:
    """Of `params` (with `experts` of the routed experts), those stored at weight_bits: every layer but the
    embeddings and the LM head, or a dtype of the experts alone (MXFP4) their weight matrices."""
    return IF(V("experts_only_dtype").eq(1), experts * _m("expert_matrix_params") / MAX(_m("expert_params"), 1),
              params - V("embedding_params") - IF(V("head").eq("value"), 0, V("lm_head_params")))


def _lora_bytes(adapters: Expr, saved: Expr) -> Expr:
    """One copy of LoRA's trained parameters: `adapters` adapter parameters at adapter_bytes and `saved` saved-module
    parameters at saved_module_bytes (0 without LoRA)."""
    return IF(V("is_lora").eq(1), adapters * V("adapter_bytes") + saved * V("saved_module_bytes"), 0)


def _weight_bytes(params: Expr, quantised: Expr, lora: Expr) -> Expr:
    """The bytes of `params` weights, `quantised` of them at weight_bits (the rest at embed_bits), and LoRA's `lora`
    bytes: the recipe's weight bytes for full training."""
    return IF(V("is_full").eq(1), params * _p("weight_bytes"),
              CEIL((quantised * V("weight_bits") + (params - quantised) * V("embed_bits")) / 8)) + lora


def _recomputing(*modules: str) -> Expr:
    """Whether the checkpointing choice recomputes any of these modules (lookups.RECOMPUTE_MODULES)."""
    return is_one_of(V("checkpointing"), *(c for m in modules for c in recomputing(m)))


def _recomputes(*modules: str) -> Expr:
    """The same as a 1/0 flag."""
    return IF(_recomputing(*modules), 1, 0)


def _p(column: str) -> Expr:
    return Lookup("Precisions", column, Var("precision"))


def _o(column: str) -> Expr:
    return Lookup("Optimizers", column, Var("optimizer"))


def _g(column: str) -> Expr:
    return Lookup("GPUs", column, Var("gpu"))


def _lora_column(prefix: str) -> Expr:
    t = Var("lora_targets")
    return IF(t.eq("all-linear"), _m(prefix + "all"),
              IF(t.eq("q_proj,k_proj,v_proj,o_proj"), _m(prefix + "qkvo"), _m(prefix + "qv")))


V = Var  # terms read earlier terms and inputs by name
# DeepSpeed's context parallelism is Ulysses' all-to-all; Megatron-Core's and torchtitan's a ring (the term cp_ulysses,
# and the skip rules, which the workbook inlines: they read this, not the term, to keep its formulas short)
_ULYSSES = AND(V("cp_degree").gt(1), V("framework").eq("deepspeed"))


def _op_checkpoint_linears(part: str) -> Expr:
    """Per-op checkpointing's share of a decoder layer's linear layers, taken in call order (q, k, v, o, gate, up,
    down; Phi-3: qkv, o, gate_up, down): part 'saved', the output widths it keeps (the 1st, 3rd, ... of those
    without a bias, which run as plain matrix multiplications, aten.mm, and are the ones it counts), or
    'recomputed', the weights of those it runs again in backward (the rest: the even ones and every biased one).
    Each kept flag is the parity of the plain ones before it: q, k, v, and gate, up, down share a bias setting."""
    h, q, kv, inter, g = V("hidden_size"), V("q_dim"), V("kv_dim"), _m("intermediate_size"), V("gated_mlp")
    a, b, c = 1 - _m("qkv_bias"), 1 - _m("o_bias"), 1 - _m("mlp_bias")  # 1: plain (no bias)
    # the parity of the plain ones before the MLP (3a + b, or a + b fused: the parity of the two bias flags' sum)
    odd = MOD(_m("qkv_bias") + _m("o_bias"), 2)
    separate = ((q, h * q, 1, a), (kv, h * kv, 1, 0), (kv, h * kv, 1, a), (h, q * h, 1, b * odd),
                (inter, h * inter, g, c * g * (1 - odd)),
                (inter, h * inter, 1, c * MOD(_m("qkv_bias") + _m("o_bias") + g + 1, 2)),
                (h, inter * h, 1, c * MOD(_m("qkv_bias") + _m("o_bias") + g, 2)))
    fused = ((q + 2 * kv, h * (q + 2 * kv), 1, a), (h, q * h, 1, b * odd),
             ((1 + g) * inter, h * (1 + g) * inter, 1, c * (1 - odd)), (h, inter * h, 1, c * odd))

    def total(linears):
        if part == "saved":
            return sum((kept * width for width, _, _, kept in linears[1:]), linears[0][3] * linears[0][0])
        return sum(((present - kept) * weights for _, weights, present, kept in linears[1:]),
                   (linears[0][2] - linears[0][3]) * linears[0][1])
    return IF(_m("fused_projections").eq(1), total(fused), total(separate))
# A role that may generate rollouts: a trained actor, or its rollout engine on GPUs of its own.
_ROLLS = OR(V("is_train").eq(1), V("workload").eq(ROLLOUT))
MiB = Const(_MIB, "MiB")  # bytes per MiB, named in the method text
GiB = Const(_GIB, "GiB")
# Transformer Engine's userbuffers for the TP communication overlap (module/base.py initialize_ub's defaults): the
# reduce-scatters' (proj_fprop, fc2_fprop, qkv_wgrad, fc1_wgrad) and the all-gathers' (qkv_fprop, qkv_dgrad,
# proj_dgrad, fc1_fprop, fc1_dgrad, fc2_dgrad), one buffer each
UB_REDUCE_SCATTER_BUFFERS, UB_ALL_GATHER_BUFFERS = 4, 6

# Full and per-op checkpointing both run a whole layer again in backward (per-op reusing what it kept): the rebuilt
# layer's working set, the held layer inputs at its start, autocast's casts made again
_REBUILDS_LAYERS = is_one_of(V("checkpointing"), "full", "op")


def _fsdp_layer_load(before: Expr | int, behind: Expr | int) -> Expr:
    """What one of FSDP2's decoder layers holds in backward beyond what every layer does: the saved tensors of the
    layers before it and, once a layer behind it was reduced, their gradient shards and the last one's reduce-scatter
    input."""
    def times(count, term):  # written without "1 ×"
        return V(term) if isinstance(count, int) and count == 1 else count * V(term)
    kept = times(before, "layer_kept_bytes")
    return kept if isinstance(behind, int) and behind == 0 else \
        kept + times(behind, "fsdp_new_shard_bytes") + V("fsdp_reduce_input_bytes")


def _training_phase(applies: Expr, gradients: Expr, activations: Expr, temporaries: Expr) -> Expr:
    """A training phase where it applies (else 0): the resident states, those gradients, activations and
    temporaries, and a rollout engine kept awake beside them."""
    return IF(applies, V("model_states") + gradients + activations + temporaries + V("awake_engine_bytes"), 0)
_ZERO_PAPER = "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054), §3 and Fig. 1"
_KORTHIKANTI = "Korthikanti et al. 2022, Reducing Activation Recomputation (arXiv:2205.05198); layer terms re-derived for HF Llama and checked against measured peaks"
_ARCH_ORACLE = ("derived from the tensors transformers saves, checked against the oracle peaks of "
                "presets/validation/oracle_arch.json (fitted to its 'fit' shapes, held out on the others)")
_MEGATRON_SAVES = ("Megatron-Core with Transformer Engine (github.com/NVIDIA/Megatron-LM at d98e8a6: "
                   "transformer_layer.py, moe/router.py's RouterGatingLinearFunction, moe/experts.py's TEGroupedMLP, "
                   "which applies the routing probabilities in its activation; the Megatron-MoE team's list of what a "
                   "layer caches, github.com/yanring/Megatron-MoE-ModelZoo misc/tools/deepseek_mem_estimate.py)")
_LITGPT_ORACLE = ("checked against LitGPT 0.5.3's code run on the oracle (presets/validation/oracle_arch.json, "
                  "litgpt records)")
_MOE_ORACLE = ("measured on real tensors (Mixtral-shaped fit, Qwen2-MoE-shaped holdout: "
               "presets/validation/oracle_arch.json)")
_MEASURED = ("fitted to the 54 peaks measured on Llama-3.2-1B with transformers and PyTorch (the reference set of "
             "the validation appendix)")

# The tokens a serving engine's pool gives each sequence of the batch, less what its Mamba-2 states take.
# none where a sequence's Mamba-2 states alone take more than its share of the pool
_POOL_SHARE_TOKENS = MAX(0, FLOOR(V("kv_pool_tokens") / V("batch_size")
                                  - V("state_seq_elements") / V("kv_elements_per_token")))

# An engine serving LoRA adapters: one slot per adapter on every linear layer (vLLM, SGLang)
_SERVES_LORA = AND(V("workload").eq("inference"), V("serving_engine").ne("hf-generate"), V("max_loras").gt(0))


def _served_mlp(width: Expr) -> Expr:
    """One MLP's LoRA slot per rank: gate (if gated) and up column-parallel, down row-parallel."""
    return ((1 + V("gated_mlp")) * (V("hidden_size") + width / V("tp_size"))
            + width / V("tp_size") + V("hidden_size"))


TERMS: tuple[Term, ...] = (
    # ---- lookups: one column each, so later formulas stay short and auditable --------------
    Term("total_params", "Parameters (total)", "count", _m("total_params"), "exact count from config.json", "lookup"),
    Term("active_params", "Parameters active per token (MoE: top-k + shared experts)", "count",
         _m("active_params"), "exact count from config.json", "lookup"),
    Term("embedding_params", "Embedding parameters", "count", _m("embedding_params"), "", "lookup"),
    Term("lm_head_params", "LM-head parameters (0 if tied)", "count", _m("lm_head_params"), "", "lookup"),
    Term("vocab_size", "Vocabulary", "count", _m("vocab_size"), "", "lookup"),
    Term("hidden_size", "Hidden size h", "count", _m("hidden_size"), "", "lookup"),
    Term("num_layers", "Layers L", "count", _m("num_hidden_layers"), "", "lookup"),
    Term("num_heads", "Attention heads", "count", _m("num_attention_heads"), "", "lookup"),
    Term("num_kv_heads", "Key/value heads", "count", _m("num_key_value_heads"), "", "lookup"),
    Term("num_experts", "Routed experts (0: dense)", "count", _m("num_experts"), "", "lookup"),
    Term("q_dim", "Query width (heads × head_dim)", "count", _m("q_dim"), "", "lookup"),
    Term("kv_dim", "K/V width (KV heads × head_dim)", "count", _m("kv_dim"), "", "lookup"),
    Term("mlp_width", "MLP width per token (MoE: top-k + shared experts)", "count", _m("mlp_width"), "", "lookup"),
    Term("gated_mlp", "Gated MLP (1/0)", "flag", _m("gated_mlp"), "", "lookup"),
    Term("mlp_saved_tensors", "MLP-width tensors saved per token (trained MLP)", "count", _m("mlp_saved_tensors"),
         "gated: gate, up, act(gate), product; plain: fc1 output and act output (a tanh-GELU written out in "
         "Python keeps more: GPT-2's NewGELU 5, transformers' FastGELU, gelu_fast, 8)", "lookup"),
    Term("layer_norm", "LayerNorm (1) or RMSNorm (0)", "flag", _m("layer_norm"), "", "lookup"),
    Term("qk_norm", "Norms on queries and keys (1/0)", "flag", _m("qk_norm"), "", "lookup"),
    Term("softmax_fp32", "Eager softmax in fp32 (1/0)", "flag", _m("softmax_fp32"), "", "lookup"),
    Term("tied_embeddings", "Tied embeddings (1/0)", "flag", _m("tie_word_embeddings"), "", "lookup"),
    Term("kv_elements_per_token", "KV-cache values per token (all layers)", "count", _m("kv_elements_per_token"),
         "2 × attention layers × KV heads × head_dim; MLA: layers × (kv_lora_rank + rope dim)", "lookup"),
    Term("kv_window_elements_per_token", "KV-cache values per token in sliding-window layers", "count",
         _m("kv_window_elements_per_token"), "2 × sliding layers × KV heads × head_dim", "lookup"),
    Term("sliding_window", "Sliding window", "count", _m("sliding_window"),
         "the tokens a sliding-window layer attends to (0: no layer slides)", "lookup"),
    Term("sliding_layers", "Sliding-window layers", "count", _m("num_sliding_layers"),
         "transformers' layer_types", "lookup"),
    Term("largest_layer_params", "Largest layer (ZeRO-3 gather unit)", "count", _m("largest_layer_params"), "", "lookup"),
    Term("decoder_layer_params", "One decoder layer", "count", _m("decoder_layer_params"), "", "lookup"),
    Term("root_unit_params", "Embedding, LM head and final norm", "count", _m("root_unit_params"),
         "FSDP2's root unit (fully_shard(model) after each decoder layer)", "lookup"),
    # ---- workload switches ---------------------------------------------------------------------
    Term("is_full", "Full fine-tuning (1/0)", "flag", IF(V("workload").eq("full"), 1, 0)),
    Term("is_lora", "LoRA or QLoRA (1/0)", "flag", IF(is_one_of(V("workload"), "lora", "qlora"), 1, 0)),
    Term("is_train", "Trains (1/0)", "flag", IF((V("is_full") + V("is_lora")).gt(0), 1, 0)),
    Term("pp_stages", "Pipeline stages (training only)", "count", IF(V("is_train").eq(1), V("pp_size"), 1),
         "pipeline parallelism is modelled for training; serving holds the whole model per tensor-parallel group",
         "derived"),
    Term("model_parallel_size", "GPUs holding one model replica (tensor × pipeline)", "count",
         V("tp_size") * V("pp_stages"), "", "derived"),
    Term("cp_degree", "Context-parallel degree (training only)", "count", IF(V("is_train").eq(1), V("cp_size"), 1),
         "", "derived"),
    Term("cp_ulysses", "Context parallelism as Ulysses' all-to-all (1/0)", "flag",
         IF(_ULYSSES, 1, 0),
         "DeepSpeed's sequence parallelism (Ulysses: Jacobs et al. 2023; for Hugging Face models through ALST, "
         "Bekman et al. 2025) gives each GPU seq_len ÷ cp_size tokens outside attention and swaps them by "
         "all-to-all for all the tokens of num_heads ÷ cp_size heads inside it; Megatron-Core and torchtitan pass keys "
         "and values around a ring instead", "derived"),
    Term("replica_gpus", "GPUs that train one set of sequences (tensor × pipeline × context)", "count",
         V("model_parallel_size") * V("cp_degree"), "", "derived"),
    Term("dp_size", "Data-parallel degree", "count", V("num_gpus") / V("replica_gpus"),
         "the GPUs over tensor, pipeline and context parallelism: each data-parallel rank trains its own sequences"),
    Term("zero_group", "GPUs a data-parallel state is reduced and sharded over", "count",
         V("dp_size") * V("cp_degree"),
         "data and context parallelism: the context-parallel GPUs of one sequence hold the same weights and add "
         "their gradients (Megatron-Core's data-parallel group with context parallelism; torchtitan's FSDP mesh "
         "over dp_shard × cp)", "derived"),
    Term("fsdp2_wraps", "FSDP2 wraps the model (1/0)", "flag",
         IF(AND(V("framework").eq("fsdp2"), OR(V("zero_group").gt(1), V("offload").ne("none"))), 1, 0),
         "torchtitan applies fully_shard only over a data-parallel (or context-parallel) mesh of more than one GPU "
         "(ParallelDims.fsdp_enabled), or to offload: a tensor-parallel group alone trains unwrapped, without FSDP2's "
         "gathered units and reduce-scatter buffers (one rank of TP on a fake process group: "
         "tools/oracle/measure_tp.py)", "derived"),
    Term("fsdp_pipeline", "FSDP2 under a pipeline (1/0)", "flag",
         IF(AND(V("fsdp2_wraps").eq(1), V("pp_stages").gt(1)), 1, 0),
         "torchtitan turns FSDP2's resharding after forward off under a pipeline (no all-gather per micro-batch), and "
         "torch's pipeline stage turns its gradient sync off until the last micro-batch: a stage's parameters stay "
         "gathered and its gradients unsharded, in the reduce dtype, through the step (one stage of torch's pipeline "
         "with FSDP2 on a fake process group: tools/oracle/measure_pp.py)", "derived"),
    # Pipeline parallelism (1F1B, Narayanan et al. 2021): the busiest stage holds ⌈layers / pp⌉ layers,
    # the embedding or the LM head (the first and last stage), and the first stage keeps up to pp
    # micro-batches of activations in flight.
    Term("pp_stage_layers", "Layers on the busiest pipeline stage", "count", CEIL(V("num_layers") / V("pp_stages")),
         "", "derived"),
    Term("pp_layer_share", "Share of the layers on that stage", "count", V("pp_stage_layers") / V("num_layers"),
         "", "derived"),
    Term("vp_degree", "Virtual pipeline stages (model chunks per GPU)", "count",
         IF(V("pp_stages").gt(1), V("vp_size"), 1), "", "derived"),
    Term("pp_interleave_factor", "Micro-batches in flight, interleaved against plain 1F1B", "count",
         IF(V("vp_degree").gt(1), 1 + (V("pp_stages") - 1) / (V("pp_stages") * V("vp_degree")), 1),
         "the interleaved schedule holds 1 + (pp − 1) ÷ (pp × vp) times as much as 1F1B (Korthikanti et al. 2022, "
         "§4.2.3)", "derived"),
    Term("pp_in_flight", "Micro-batches whose activations a stage holds", "count",
         MIN(V("pp_stages"), V("grad_accum_steps")) * V("pp_interleave_factor"),
         "1F1B: the first stage runs pp forwards before its first backward (Narayanan et al. 2021, "
         "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM, §2.2)", "derived"),
    # LitGPT trains its own model code whatever the checkpoint: fused qkv, rotary by torch.cat, grouped
    # keys and values copied to every head before SDPA, RMSNorm scaled in fp32, an LM head of its own.
    Term("litgpt", "LitGPT's model code (1/0)", "flag", IF(AND(V("framework").eq("litgpt"), V("is_train").eq(1)), 1, 0),
         "litgpt/model.py (GPT, CausalSelfAttention, RMSNorm); " + _LITGPT_ORACLE),
    Term("model_params", "Parameters of this model instance", "count",
         V("total_params") - IF(V("head").eq("value"), V("lm_head_params") - V("hidden_size"), 0)
         + V("litgpt") * V("tied_embeddings") * V("vocab_size") * V("hidden_size"),
         "a value head replaces the LM head with hidden_size × 1; LitGPT's GPT keeps a separate lm_head even "
         "where the checkpoint ties it to the embedding"),
    Term("sp_on", "Sequence parallelism on (1/0)", "flag",
         IF(AND(V("is_train").eq(1), V("tp_size").gt(1),
                OR(V("sequence_parallel").eq("on"),
                   AND(V("sequence_parallel").eq("auto"), is_one_of(V("framework"), "megatron", "fsdp2")))), 1, 0),
         "auto: Megatron's --sequence-parallel, which NeMo and Megatron-Bridge recipes set with TP, and torchtitan's "
         "FSDP2 + TP plan (SequenceParallel on the norms); the HF Trainer, DeepSpeed and LitGPT leave it off",
         "derived"),
    Term("titan_tp", "torchtitan's DTensor tensor parallelism (1/0)", "flag",
         IF(AND(V("framework").eq("fsdp2"), V("sp_on").eq(1)), 1, 0),
         "FSDP2 with tensor parallelism as torchtitan lays it out, always with sequence parallelism: DTensor's "
         "ColwiseParallel and RowwiseParallel, the embedding split by vocabulary, the LM head's logits left split by "
         "vocabulary for loss_parallel (one rank of TP on a fake process group: tools/oracle/measure_tp.py); "
         "without sequence parallelism the plan is not torchtitan's, and Megatron's rules apply", "derived"),
    Term("megatron_layers", "Megatron-Core's Transformer Engine layers (1/0)", "flag",
         IF(AND(V("framework").eq("megatron"),
                OR(V("is_full").eq(1), AND(V("workload").eq("lora"), V("num_experts").eq(0)))), 1, 0),
         "full training, and LoRA of a dense model (NeMo's adapters on Megatron-Core), under megatron: its layers "
         "save for backward what Megatron-Core's do, not what transformers' modeling code does (" + _MEGATRON_SAVES
         + "); a frozen Transformer Engine linear layer keeps no input (its backward_needs_input is its weight's "
         "requires_grad); an MoE model's frozen experts under Megatron-Core are not modelled (transformers' count)",
         "derived"),
    Term("recompute_module_list", "Checkpointing is a list of Megatron-Core's recompute modules (1/0)", "flag",
         IF(is_one_of(V("checkpointing"), *MODULE_LISTS), 1, 0),
         "its --recompute-granularity selective --recompute-modules lists other than core_attn alone (selective)",
         "derived"),
    Term("moe_act_recomputed", "Megatron's routed experts' activation recomputed (1/0)", "flag",
         _recomputes("moe_act"),
         "its 'moe_act' recompute module: the experts' activation output is discarded after the forward and rebuilt "
         "in backward", "derived"),
    Term("moe_module_recomputed", "Megatron's MoE layer recomputed whole (1/0)", "flag",
         _recomputes("moe"),
         "its 'moe' recompute module: an MoE layer (router, dispatch, experts, combine) keeps only its input and "
         "runs its forward again in backward", "derived"),
    Term("norms_recomputed", "Decoder layers' norm outputs recomputed (1/0)", "flag",
         _recomputes("layernorm"),
         "Megatron's 'layernorm' recompute module: the input and pre-MLP norms' outputs are discarded after the "
         "forward and rebuilt in backward (CheckpointWithoutOutput)", "derived"),
    Term("mla_up_proj_recomputed", "Megatron's MLA up-projections recomputed (1/0)", "flag",
         _recomputes("mla_up_proj"),
         "its 'mla_up_proj' recompute module: multi-head latent attention's queries, keys and values (the up-"
         "projections and the rotary embedding applied to them) are discarded once the attention core has read them "
         "and rebuilt from the compressed latents in backward (multi_latent_attention.py)", "derived"),
    Term("dense_mlp_recomputed", "Megatron's dense MLPs recomputed (1/0)", "flag",
         _recomputes("mlp"),
         "its 'mlp' recompute module: the MLP of every layer that is not an MoE layer keeps only its input and runs "
         "its forward again in backward (transformer_layer.py: not for MoE layers)", "derived"),
    Term("moe_layer_recomputed", "MoE layers' forward run again in backward (1/0)", "flag",
         IF(OR(V("checkpointing").eq("full"), V("moe_module_recomputed").eq(1)), 1, 0),
         "full checkpointing, or Megatron's 'moe' module", "derived"),
    Term("stage_layer_params", "Decoder-layer parameters on the busiest pipeline stage", "count",
         (V("model_params") - V("embedding_params") - V("lm_head_params")) * V("pp_layer_share"), "", "derived"),
    Term("stage_params", "Parameters on the busiest pipeline stage", "count",
         IF(V("pp_stages").eq(1), V("model_params"),
            V("stage_layer_params") + MAX(V("embedding_params"), V("lm_head_params"))),
         "a pipeline stage holds its layers and the embedding (first stage) or the LM head (last stage)"),
    Term("stage_expert_params", "Routed-expert parameters on that stage", "count",
         _m("expert_params") * V("pp_layer_share"), "", "derived"),
    Term("expert_tp", "GPUs each routed expert is split over in training (expert tensor parallelism)", "count",
         IF(V("etp_size").eq(0), V("tp_size"), V("etp_size")),
         "Megatron-Core's expert_tensor_parallel_size, which defaults to tensor_model_parallel_size (etp_size 0); "
         "its MoE parallel folding lays ETP × EP × expert data parallelism over the TP × CP × DP GPUs of a "
         "pipeline stage, independently of the attention's TP", "derived"),
    Term("expert_shards", "GPUs one copy of the routed experts is split over", "count",
         IF(V("is_train").eq(1), V("expert_tp") * V("ep_size"), MAX(V("tp_size"), V("ep_size"))),
         "training: ep_size GPUs each hold num_experts ÷ ep_size experts, each expert split over expert_tp GPUs "
         "(the tensor-parallel group unless etp_size says otherwise; expert data parallelism is world ÷ "
         "(ETP × EP × PP)); serving: vLLM's "
         "expert parallelism spans TP × DP with whole experts on each GPU (EP = TP × DP), SGLang's ep_size "
         "divides tp_size and splits each expert over tp ÷ ep GPUs: either way the experts are divided once, "
         "by the larger of tp_size and ep_size", "derived"),
    Term("moe_imbalance", "Busiest expert-parallel GPU's routed tokens ÷ the mean", "count",
         IF(AND(V("is_train").eq(1), V("num_experts").gt(0), V("ep_size").gt(1)), V("moe_load_imbalance"), 1),
         "the input moe_load_imbalance where experts are spread over GPUs (one GPU holding every expert does the "
         "same work however the router spreads its tokens)", "derived"),
    Term("resident_expert_params", "Routed-expert parameters held per tensor-parallel group", "count",
         V("stage_expert_params") * V("tp_size") / V("expert_shards"),
         "the stage's routed experts divided over expert_shards GPUs, counted per tensor-parallel group",
         "derived"),
    Term("resident_params", "Parameters held per tensor-parallel group (after expert and pipeline parallelism)",
         "count",
         V("stage_params") - V("stage_expert_params") + V("resident_expert_params"),
         "the stage's parameters, its routed experts divided over expert_shards GPUs; counted per tensor-parallel "
         "group, so that ÷ tp_size is one GPU's share; every other weight is replicated", "derived"),
    Term("weight_expert_params", "Routed-expert parameters among them", "count",
         IF(V("zero_stage").eq(3), V("stage_expert_params"), V("resident_expert_params")), "", "derived"),
    Term("weight_params", "Parameters whose weights a tensor-parallel group holds before ZeRO-3 sharding", "count",
         IF(V("zero_stage").eq(3), V("stage_params"), V("resident_params")),
         "ZeRO-3 (FSDP) shards every parameter of the stage over its tp × dp GPUs, the routed experts included: "
         "their expert-data-parallel group (dp ÷ ep) shards what expert parallelism left, so one GPU holds "
         "1 ÷ (tp × dp) of each; dividing by ep_size too would count the experts twice", "derived"),
    Term("nemo_merged_adapters", "Adapters NeMo's fused layers merge away, over the model", "count",
         V("megatron_layers") * (1 - _m("fused_qkv"))
         * (IF(V("lora_targets").eq("q_proj,k_proj,v_proj,o_proj"), 2 * _m("num_attention_layers"), 0)
            + IF(V("lora_targets").eq("all-linear"),
                 2 * _m("num_attention_layers") + V("gated_mlp") * _m("num_dense_layers"), 0)),
         "NeMo's LoRA on Megatron-Core adapts the fused linear_qkv with one adapter where PEFT gives q, k and v "
         "each its own (two fewer), and the fused linear_fc1 (gate and up) with one (one fewer); each merged "
         "adapter is an A of r × hidden that read the layer's input (q_proj,v_proj alone: its CanonicalLoRA's "
         "linear_q and linear_v, PEFT's)", "derived"),
    Term("adapter_params", "LoRA adapter parameters", "count",
         IF(V("is_lora").eq(1),
            V("lora_rank") * (_lora_column("lora_per_rank_")
                              + V("litgpt") * _m("fused_qkv") * _m("num_attention_layers")
                              * IF(V("lora_targets").eq("q_proj,v_proj"), V("hidden_size") - V("kv_dim"),
                                   (2 + IF(V("lora_targets").eq("all-linear"), _m("fused_projections"), 0))
                                   * V("hidden_size"))
                              - V("nemo_merged_adapters") * V("hidden_size")), 0),
         "r × Σ(in + out) over targeted linear layers (PEFT); where q, k and v are one layer LitGPT gives each of "
         "them adapted its own A (r × hidden: its LoRAQKVLinear) where PEFT's fused layer has one, and Phi-3's "
         "gate and up projections theirs; NeMo's fused layers one A where PEFT has several"),
    Term("saved_module_params", "Parameters of the modules LoRA trains whole (modules_to_save)", "count",
         IF(AND(V("is_lora").eq(1), V("lora_modules_to_save").eq("embed-head")),
            V("embedding_params") + IF(V("head").eq("value"), 0, V("lm_head_params")), 0),
         "PEFT's ModulesToSaveWrapper trains a copy of each module beside its frozen original; a tied LM head is "
         "the embedding"),
    Term("trainable_params", "Trainable parameters", "count",
         IF(V("is_full").eq(1), V("model_params"), V("adapter_params") + V("saved_module_params")),
         "LoRA: the adapters and the saved modules' copies (what PEFT's print_trainable_parameters counts)"),
    Term("resident_saved_module_params", "Saved-module parameters held per tensor-parallel group", "count",
         IF(V("pp_stages").eq(1), V("saved_module_params"),
            MIN(V("saved_module_params"), MAX(V("embedding_params"), V("lm_head_params")))),
         "a pipeline stage trains the embedding (first stage) or the LM head (last stage)", "state"),
    Term("resident_trainable_params", "Trainable parameters held per tensor-parallel group", "count",
         IF(V("is_full").eq(1), V("resident_params"),
            V("adapter_params") * V("pp_layer_share") + V("resident_saved_module_params")),
         "LoRA adapters sit in the layers: a pipeline stage trains its share", "state"),
    Term("gradient_params", "Trainable parameters whose gradients a tensor-parallel group holds before ZeRO-2 "
         "sharding", "count",
         IF(AND(V("is_full").eq(1), V("zero_stage").ge(2)), V("stage_params"), V("resident_trainable_params")),
         "as weight_params: ZeRO-2 and -3 shard every gradient of the stage over tp × dp GPUs", "state"),
    Term("optimizer_params", "Trainable parameters whose optimizer states a tensor-parallel group holds before "
         "ZeRO-1 sharding", "count",
         IF(AND(V("is_full").eq(1), V("zero_stage").ge(1)), V("stage_params"), V("resident_trainable_params")),
         "as weight_params: ZeRO-1 and up (Megatron's distributed optimizer) shard every state of the stage over "
         "tp × dp GPUs, the experts' over their expert-data-parallel group", "state"),
    # ---- model states ------------------------------------------------------------------------
    Term("weight_bits", "Bits per frozen/served weight", "count",
         IF(V("workload").eq("qlora"), Lookup("Dtypes", "bits", Str("nf4")), Lookup("Dtypes", "bits", V("weight_dtype"))),
         "Dtypes sheet (scales included)", "state"),
    Term("experts_only_dtype", "The weight dtype quantises the experts alone (1/0)", "flag",
         IF(V("workload").eq("qlora"), 0, Lookup("Dtypes", "experts_only", V("weight_dtype"))),
         "Dtypes sheet (QLoRA's NF4 quantises every linear layer)", "state"),
    Term("quantised_params", "Parameters stored at weight_bits", "count",
         _quantised(V("weight_params"), V("weight_expert_params")),
         "every layer but the embeddings and the LM head; a dtype of the experts alone (MXFP4): the experts' "
         "weight matrices, their biases, the attention and the router at embed_bits", "state"),
    Term("embed_bits", "Bits per embedding/LM-head weight", "count",
         IF(V("workload").eq("qlora"), Lookup("Dtypes", "embed_bits", Str("nf4")),
            Lookup("Dtypes", "embed_bits", V("weight_dtype"))), "", "state"),
    Term("adapter_bytes", "Bytes per LoRA adapter weight, gradient and optimizer state", "count",
         IF(OR(V("adapter_dtype").eq("fp32"), V("weight_dtype").eq("fp32")), 4, 2),
         "PEFT ≥ 0.12 keeps adapters in fp32 (autocast_adapter_dtype=True); older PEFT, LitGPT and torchtune keep "
         "them in the model's 16-bit dtype", "state"),
    Term("saved_module_bytes", "Bytes per saved-module weight, gradient and Adam state", "count",
         V("embed_bits") / 8,
         "the copy keeps the original embedding's dtype (16-bit beside quantised layers), and torch's AdamW keeps "
         "its states in the parameter's dtype", "state"),
    Term("lora_copy_bytes", "One copy of the LoRA-trained parameters (weights, or their gradients)", "bytes",
         _lora_bytes(V("adapter_params") * V("pp_layer_share"), V("resident_saved_module_params")),
         "adapters at adapter_bytes, saved modules at saved_module_bytes", "state"),
    Term("weight_bytes_unsharded", "Weights a tensor-parallel group holds before ZeRO-3 sharding", "bytes",
         _weight_bytes(V("weight_params"), V("quantised_params"), V("lora_copy_bytes")),
         "parameters × bytes (its pipeline stage's, its expert-parallel rank's experts); quantised layers keep "
         "16-bit embeddings; LoRA adapters at adapter_bytes (saved modules: a second copy beside the frozen original)",
         "state"),
    Term("model_weight_bytes", "Weights of the whole model: every stage and expert", "bytes",
         _weight_bytes(V("model_params"), _quantised(V("model_params"), _m("expert_params")),
                       _lora_bytes(V("adapter_params"), V("saved_module_params"))),
         "as weight_bytes_unsharded over every pipeline stage and routed expert: what a rollout reads for each "
         "token (a rollout engine holds its own copy at its own tensor parallelism; generate() by pipeline stages "
         "passes each token through all of them in turn)", "state"),
    Term("fp8_gemms", "Linear layers in FP8 (1/0)", "flag",
         IF(OR(V("is_full").eq(1), V("workload").eq("lora")), _p("fp8_gemms"), 0),
         "Precisions sheet: Transformer Engine's FP8 recipe for full training, and for LoRA's frozen linear layers "
         "(NeMo's and MLPerf's Llama 2 70B LoRA: the adapters stay in 16-bit); QLoRA's 4-bit layers are refused it "
         "(fp8_qlora)", "state"),
    Term("fp8_primary_weights", "Decoder weights held in FP8 (1/0)", "flag",
         V("fp8_gemms") * IF(_p("fp8_copy_bytes").eq(0), 1, 0),
         "Precisions sheet: an FP8 precision that keeps no FP8 copies beside the weights holds the weights in FP8 "
         "themselves (fp8-te-params: Transformer Engine's fp8_model_init)", "state"),
    Term("fp8_layouts", "Layouts an FP8 tensor is cast into (1 or 2)", "count", 2 - _g("fp8_any_layout"),
         "GPUs sheet: row-wise, and on GPUs whose FP8 GEMMs take only the TN layout (Hopper, Ada) its transpose "
         "too (Transformer Engine's column-wise data); Blackwell's take either layout, so one copy serves the "
         "forward and both backward GEMMs", "state"),
    Term("fp8_mlp_inputs", "MLP activation's input saved in FP8 (1/0)", "flag",
         IF(is_one_of(V("fp8_activations"), "mlp", "mlp+attention"), 1, 0),
         "fp8_activations: Megatron-Core's --activation-func-fp8-input-store keeps the activation function's input "
         "(the first MLP layer's output: gate and up) in FP8 for backward and casts it back there", "activation"),
    Term("fp8_attention", "Attention saved in FP8 (1/0)", "flag",
         IF(is_one_of(V("fp8_activations"), "attention", "mlp+attention"), 1, 0),
         "fp8_activations: Transformer Engine's FP8 attention (--fp8-dot-product-attention) keeps Q, K, V and its "
         "output in FP8", "activation"),
    Term("weight_shards", "Weight shards", "count", V("tp_size") * IF(V("zero_stage").eq(3), V("zero_group"), 1),
         _ZERO_PAPER + " (ZeRO-3 partitions parameters)", "state"),
    Term("act_bytes", "Bytes per activation", "count",
         IF(V("is_train").eq(1), _p("compute_bytes"), IF(V("weight_dtype").eq("fp32"), 4, 2)), "", "activation"),
    Term("served_lora_routed_params", "Served LoRA slots on routed experts, parameters per GPU", "count",
         IF(_SERVES_LORA,
            V("max_loras") * V("max_lora_rank") * _m("num_moe_layers") * V("num_experts")
            * ((1 + V("gated_mlp") * (1 - _m("experts_as_parameters"))) * V("hidden_size")
               + (2 + V("gated_mlp")) * _m("moe_intermediate_size") / V("tp_size") + V("hidden_size")), 0),
         "vLLM's FusedMoEWithLoRA: every routed expert of every slot an A for its up projection (and its gate's, "
         "where gated; GPT-OSS's packed gate_up one A: FusedMoE3DWithLoRA), a B for each split over the TP GPUs, "
         "and a down projection's A split and B whole; expert parallelism is refused with LoRA", "state"),
    Term("served_lora_params", "Served LoRA slots' parameters per GPU", "count",
         IF(_SERVES_LORA,
            V("max_loras") * V("max_lora_rank")
            * (_m("num_attention_layers") * (3 * V("hidden_size") + (V("q_dim") + 2 * V("kv_dim")) / V("tp_size")
                                             + V("q_dim") / V("tp_size") + V("hidden_size"))
               + _m("num_dense_layers") * _served_mlp(_m("intermediate_size"))
               + _m("num_moe_layers") * (IF(_m("shared_expert_intermediate_size").gt(0),
                                            _served_mlp(_m("shared_expert_intermediate_size")), 0)
                                         + V("hidden_size") + V("num_experts"))
               + _m("num_mamba_layers") * (5 * V("hidden_size") + _m("mamba_in_proj_width") / V("tp_size")
                                           + _m("mamba_inner_dim") / V("tp_size") + V("hidden_size")))
            + V("served_lora_routed_params"), 0),
         "per slot, an A (rank × in) and a B (out × rank) on every linear layer: q, k, v and o of each attention "
         "layer, each MLP's gate and up (each slice of a packed layer its own A) and down, a MoE layer's shared "
         "experts, router and routed experts (served_lora_routed_params), a Mamba-2 layer's input projection (an "
         "A for each of its five slices: z, x, B, C, dt) and output projection; a column-parallel layer's B and a "
         "row-parallel layer's A split over the TP GPUs, the other whole (vLLM's LoRA layers without "
         "fully_sharded_loras); at TP 1 a dense model's slot is PEFT's all-linear adapter at max_lora_rank", "state"),
    Term("served_lora_bytes", "Served LoRA slots per GPU", "bytes", CEIL(V("served_lora_params") * V("act_bytes")),
         "allocated with the model in its 16-bit dtype, before the engine profiles its KV pool", "state"),
    Term("weights", "Weights", "bytes",
         IF(OR(V("offload").eq("all"), V("workload").eq(ROLLOUT)), 0,
            ceil_div(V("weight_bytes_unsharded"), V("weight_shards")))
         + ceil_div((V("fp8_gemms") * _p("fp8_copy_bytes") / 2 * V("fp8_layouts")
                     - V("fp8_primary_weights") * (2 - V("fp8_layouts")))
                    * (V("weight_params") - V("embedding_params") - V("lm_head_params")), V("weight_shards"))
         + V("served_lora_bytes"),
         "parameter offload streams weights from host memory layer by layer; FP8 training adds the decoder "
         "layers' FP8 weight casts, 1 byte a parameter in each layout it keeps (fp8_layouts: row-wise, "
         "and column-wise where FP8 GEMMs need the transpose), cached for the step (Transformer Engine docs: "
         "Performance considerations, Handling transposes; FP8 weight caching); with FP8 primary weights "
         "(fp8-te-params) the FP8 weight in its layouts takes the bf16 weight's place (2 bytes on Hopper, 1 on "
         "Blackwell); an engine serving LoRA adapters holds their slots; a rollout engine on its "
         "own GPUs holds its copy inside its budget (engine_budget_bytes)", "state"),
    Term("gradient_shards", "Gradient shards", "count", V("tp_size") * IF(V("zero_stage").ge(2), V("zero_group"), 1),
         _ZERO_PAPER + " (ZeRO-2 partitions gradients)", "state"),
    Term("grad_elem_bytes", "Bytes per gradient element", "count",
         IF(V("is_full").eq(1),
            IF(AND(V("framework").eq("megatron"), _p("master_bytes").gt(0)), 4, _p("grad_bytes")), V("adapter_bytes")),
         "Precisions sheet; LoRA: adapter_bytes; Megatron accumulates the gradients of 16-bit parameters in an fp32 "
         "main_grad buffer (18 bytes per parameter for bf16 without the distributed optimizer, 6 + 12/d with it: "
         "Megatron-LM docs)", "state"),
    Term("gradient_bytes_unsharded", "Gradients, whole model", "bytes",
         IF(V("is_full").eq(1), V("gradient_params") * V("grad_elem_bytes"), V("lora_copy_bytes")),
         "one gradient per trainable parameter, in its dtype", "state"),
    Term("gradients", "Gradients", "bytes", ceil_div(V("gradient_bytes_unsharded"), V("gradient_shards")),
         _ZERO_PAPER, "state"),
    Term("ddp_bucket_bytes", "DDP gradient buckets", "bytes",
         IF(AND(V("is_train").eq(1), V("zero_stage").eq(0), V("zero_group").gt(1),
                is_one_of(V("framework"), "hf", "litgpt")), V("gradients"), 0),
         "PyTorch DistributedDataParallel (the HF Trainer's and Lightning's data parallelism) copies each gradient "
         "into its all-reduce buckets, allocated once for the whole run: as much memory again as the gradients, "
         "unless gradient_as_bucket_view=True, which neither turns on (pytorch/pytorch#41954: the peak of a model "
         "with about 1 GB of parameters drops by about 1 GB with it); DeepSpeed, FSDP and Megatron keep their own "
         "buffers", "state"),
    Term("persistent_gradients", "Gradient buffer kept for the whole run", "bytes",
         IF(AND(V("is_train").eq(1), OR(V("framework").eq("megatron"),
                                        AND(V("framework").eq("deepspeed"), V("zero_stage").eq(3),
                                            V("offload").eq("none")))), V("gradients"), 0),
         "allocated once and never freed, so a resident model state: Megatron's contiguous gradient buffer (18 "
         "bytes per parameter for bf16, 6 + 12/d with the distributed optimizer: Megatron Core docs, Distributed "
         "Optimizer) and DeepSpeed ZeRO-3's 16-bit gradient partition, on the GPU unless the optimizer is offloaded "
         "(stage3.py _setup_for_real_optimizer: grad_partitions_flat_buffer, in the model's dtype under ZeRO: "
         "engine.py get_data_types)", "state"),
    Term("transient_gradients", "Gradients that backward allocates and the step frees", "bytes",
         V("gradients") - V("persistent_gradients"), "the gradients, less a buffer that is never freed", "state"),
    Term("accumulated_gradients", "Gradients kept between micro-batches", "bytes",
         IF(AND(V("is_train").eq(1), V("grad_accum_steps").gt(1)),
            IF(AND(V("framework").eq("litgpt"), V("zero_stage").ge(2)),
               ceil_div(V("gradient_bytes_unsharded"), V("tp_size")),
               IF(V("fsdp_pipeline").eq(1), ceil_div(V("gradient_params") * V("fsdp_reduce_bytes"), V("tp_size")),
                  V("transient_gradients"))), 0),
         "with gradient accumulation, the gradients of the earlier micro-batches stay in .grad while the later "
         "ones run forward and backward (PyTorch adds each backward into them); LitGPT's FSDP skips the "
         "reduce-scatter while accumulating (fabric.no_backward_sync), so its gradients stay unsharded, and FSDP2 "
         "under a pipeline accumulates them unsharded in its reduce dtype; a persistent buffer accumulates in place",
         "state"),
    Term("optimizer_shards", "Optimizer-state shards", "count", V("tp_size") * IF(V("zero_stage").ge(1), V("zero_group"), 1),
         _ZERO_PAPER + " (ZeRO-1 partitions optimizer states)", "state"),
    Term("state_bytes", "Bytes per optimizer state", "count",
         IF(_o("state_bytes_override").gt(0), _o("state_bytes_override"),
            IF(V("is_full").eq(1), _p("state_bytes"), V("adapter_bytes"))), "Optimizers and Precisions sheets",
         "state"),
    Term("state_copy_bytes", "One optimizer state for every trainable parameter, whole model", "bytes",
         IF(AND(V("is_lora").eq(1), _o("state_bytes_override").eq(0)), V("lora_copy_bytes"),
            V("optimizer_params") * V("state_bytes")),
         "LoRA: each state in its parameter's dtype", "state"),
    Term("optimizer_bytes_unsharded", "Optimizer states + master weights, whole model", "bytes",
         _o("num_states") * V("state_copy_bytes")
         + V("optimizer_params") * IF(V("is_full").eq(1), _p("master_bytes"), 0),
         "Adam: m and v per parameter; mixed precision adds an fp32 master copy (K = 12 in the ZeRO paper)", "state"),
    Term("optimizer_states", "Optimizer states", "bytes",
         IF(V("offload").eq("none"), ceil_div(_o("num_states") * V("state_copy_bytes"), V("optimizer_shards")), 0),
         _ZERO_PAPER, "state"),
    Term("master_weights", "fp32 master weights", "bytes",
         IF(V("offload").eq("none"),
            ceil_div(V("optimizer_params") * IF(V("is_full").eq(1), _p("master_bytes"), 0),
                     V("optimizer_shards")), 0),
         _ZERO_PAPER, "state"),
    Term("host_offload_bytes", "Offloaded to host RAM (per GPU's share)", "bytes",
         IF(V("offload").eq("none"), 0, ceil_div(V("optimizer_bytes_unsharded"), V("optimizer_shards")))
         + IF(V("offload").eq("all"), ceil_div(V("weight_bytes_unsharded"), V("weight_shards")), 0),
         "ZeRO-Offload / ZeRO-Infinity (Ren et al. 2021)", "state"),
    Term("node_gpus", "GPUs of the job in one node", "count", MIN(V("num_gpus"), _g("gpus_per_node")),
         "a node's GPUs, or all of the job's where it takes fewer (GPUs sheet)", "state"),
    Term("node_offload_bytes", "Offloaded to a node's host RAM", "bytes",
         V("host_offload_bytes") * V("node_gpus"),
         "every GPU of a node offloads its share to the node's CPU memory", "state"),
    Term("zero3_buffer", "ZeRO-3 gathered-layer buffer", "bytes",
         IF(AND(V("fsdp_pipeline").eq(1), V("zero_stage").eq(3)), ceil_div(V("stage_params") * _p("gather_bytes"),
                                                                          V("tp_size")),
         IF(OR(V("zero_stage").eq(3), V("offload").eq("all")),
            ceil_div(IF(V("framework").eq("fsdp2"),
                        V("fsdp2_wraps") * (V("root_unit_params") + V("decoder_layer_params")),
                        V("largest_layer_params")
                        + IF(V("framework").eq("deepspeed"),
                             MIN(V("ds_prefetch_bucket_size"), V("largest_layer_params")), V("largest_layer_params")))
                     * IF(V("is_full").eq(1), _p("gather_bytes"), 2), V("tp_size")), 0)),
         "the layer being computed plus the prefetched next one (DeepSpeed prefetches at most "
         "stage3_prefetch_bucket_size elements); FSDP2 keeps its root unit (embedding, LM head, final norm) "
         "unsharded from the forward to the end of backward, beside the decoder layer it gathers (one rank of "
         "FSDP2 on a fake process group: tools/oracle/measure_fsdp2.py), and under a pipeline the whole stage",
         "state"),
    # ---- training frameworks: their buffers besides the model states (Assumptions sheet) ----------
    Term("ds_reduce_bucket_bytes", "DeepSpeed contiguous-gradient bucket", "bytes",
         IF(AND(V("framework").eq("deepspeed"), V("zero_stage").ge(1), V("is_train").eq(1)),
            V("ds_reduce_bucket_size") * V("grad_elem_bytes")
            * IF(V("zero_stage").eq(3), 1, 1 + V("ds_overlap_comm")), 0),
         "reduce_bucket_size elements of the gradient dtype, allocated whole whatever the model's size "
         "(stage_1_and_2.py: one ipg buffer, two with overlap_comm; stage3.py: one flat buffer); "
         "allgather_bucket_size allocates nothing with torch's all_gather_into_tensor, which gathers the updated "
         "partitions straight into the flat 16-bit buffer (deepspeed/runtime/utils.py all_gather_dp_groups)", "state"),
    Term("ds_live_params_bytes", "DeepSpeed ZeRO-3 parameters kept gathered across the forward-backward turn",
         "bytes",
         IF(AND(V("framework").eq("deepspeed"), V("zero_stage").eq(3), V("is_train").eq(1)),
            ceil_div(MIN(V("ds_max_live_parameters"), V("ds_max_reuse_distance") / 2, V("resident_params"))
                     * IF(V("is_full").eq(1), _p("weight_bytes"), 2), V("tp_size")), 0),
         "a parameter reused within stage3_max_reuse_distance parameters is not released: the last layers of the "
         "forward, which the backward needs first, about half that distance (forward and backward each pass "
         "them), at most stage3_max_live_parameters (deepspeed/runtime/zero/partitioned_param_coordinator.py)",
         "state"),
    Term("ds_fp32_grad_bytes", "DeepSpeed fp32 gradient partition (optimizer step)", "bytes",
         IF(AND(V("framework").eq("deepspeed"), V("is_full").eq(1), _p("master_bytes").gt(0)),
            ceil_div(V("optimizer_params") * 4, V("optimizer_shards")), 0),
         "ZeRO converts each 16-bit gradient partition to fp32 for the step of the fp32 master weights "
         "(stage_1_and_2.py and stage3.py); DeepSpeed's own estimator counts it: 16 and 18 bytes per parameter "
         "over the GPUs for ZeRO-2 and ZeRO-3 (docs memory.rst)", "state"),
    Term("fsdp_reduce_scatter_bytes", "FSDP unsharded gradients and reduce-scatter buffer", "bytes",
         IF(AND(V("framework").eq("megatron"), V("zero_stage").ge(2), V("is_train").eq(1)),
            ceil_div(IF(V("is_full").eq(1), V("decoder_layer_params"), V("adapter_params") / V("num_layers"))
                     * V("grad_elem_bytes"), V("tp_size")),
         IF(AND(OR(V("fsdp2_wraps").eq(1), V("framework").eq("litgpt")), V("zero_stage").ge(2), V("is_train").eq(1)),
            ceil_div(IF(V("is_full").eq(1),
                        IF(V("fsdp_pipeline").eq(1), V("hidden_size") * _m("intermediate_size") * _p("gather_bytes"),
                           IF(V("fsdp2_wraps").eq(1), V("decoder_layer_params"), V("largest_layer_params"))
                           * (_p("gather_bytes") + V("fsdp_reduce_bytes"))),
                        V("adapter_params") / V("num_layers")
                        * (V("grad_elem_bytes") + (1 - V("fsdp_pipeline")) * V("fsdp_reduce_bytes"))),
                     V("tp_size")), 0)),
         "Megatron-FSDP (megatron at ZeRO-2/3: --use-megatron-fsdp, its unit a decoder layer): one unit's gradients "
         "in its main-grad dtype before their reduce-scatter; FSDP2: "
         "during backward one unit's (decoder layer's) unsharded gradients, in the gathered weights' dtype, and the "
         "reduce-scatter input of the unit before it, in reduce_dtype (PyTorch FSDP2: reduce-scatter in its own "
         "stream, overlapping the next unit's backward); under a pipeline the MLP's first weight gradient (its down "
         "projection's, made in the gathered dtype while the micro-batch's activations are saved, before the unit's "
         "gradients are added into the unsharded accumulation)", "state"),
    Term("fsdp2_reduces", "FSDP2 reduces a full model's gradients unit by unit (1/0)", "flag",
         IF(AND(V("fsdp2_wraps").eq(1), V("zero_stage").ge(2), V("is_full").eq(1), V("is_train").eq(1),
                V("fsdp_pipeline").eq(0)), 1, 0),
         "every decoder layer, then the root, reduce-scattered in turn during backward (not under a pipeline, "
         "whose stage syncs once after its last micro-batch)", "derived"),
    Term("fsdp_layer_shard_bytes", "A decoder layer's gradient shard", "bytes",
         ceil_div(V("decoder_layer_params") * V("grad_elem_bytes"), V("gradient_shards")), "", "state"),
    Term("fsdp_root_shard_bytes", "The root unit's gradient shard", "bytes",
         ceil_div(V("root_unit_params") * V("grad_elem_bytes"), V("gradient_shards")), "", "state"),
    Term("fsdp_gathered_layer_bytes", "A decoder layer gathered", "bytes",
         ceil_div(V("decoder_layer_params") * _p("gather_bytes"), V("tp_size")), "", "state"),
    Term("fsdp_root_reduce_bytes", "FSDP2's root unit reduced at the end of backward", "bytes",
         IF(V("fsdp2_reduces").eq(1),
            ceil_div(V("lm_head_params") * _p("gather_bytes") + V("root_unit_params") * V("fsdp_reduce_bytes"),
                     V("tp_size"))
            + IF(V("grad_elem_bytes").lt(V("fsdp_reduce_bytes")),
                 ceil_div(V("root_unit_params") * V("fsdp_reduce_bytes"), V("gradient_shards")), 0), 0),
         "the last unit FSDP2 reduces is the root (embedding, LM head, final norm), once every unit's gathered "
         "parameters are resharded (PyTorch's foreach_reduce): its reduce-scatter input, the whole unit in "
         "reduce_dtype, and its output, the rank's shard in reduce_dtype, cast then to a 16-bit gradient (an fp32 "
         "gradient is the output itself); of the unit's unsharded gradients, freed once copied in, an untied LM head's "
         "is still held (tools/oracle/measure_cp.py, measure_fsdp2.py 'root')", "state"),
    Term("fsdp_backward_unmade_bytes", "FSDP2 gradient shards not made yet, less the prefetched unit", "bytes",
         IF(AND(V("fsdp2_reduces").eq(1), V("num_layers").ge(2)),
            IF(V("accumulated_gradients").eq(0),
               V("fsdp_root_shard_bytes") + 2 * V("fsdp_layer_shard_bytes")
               - MAX(V("fsdp_gathered_layer_bytes"), V("fsdp_layer_shard_bytes")),
               0 - V("fsdp_gathered_layer_bytes")), 0),
         "late in FSDP2's backward the busiest unit is the second decoder layer from the front, with the first one "
         "gathered ahead of it (backward prefetch), or the first, with one more shard made and none gathered ahead: "
         "the shards of the root and of those two layers are not made yet (their reduce comes later; with gradient "
         "accumulation the earlier micro-batches' are), the prefetched layer is gathered beside it "
         "(tools/oracle/measure_fsdp2.py: Llama-2-7B-wide layers)", "state"),
    Term("fsdp_tied_embedding_bytes", "FSDP2's tied embedding's gradients at the end of backward", "bytes",
         IF(AND(V("fsdp2_reduces").eq(1), V("titan_tp").eq(0), V("tied_embeddings").eq(1)),
            ceil_div(V("root_unit_params") * _p("gather_bytes"), V("tp_size"))
            + ceil_div(V("decoder_layer_params") * V("fsdp_reduce_bytes"), V("tp_size"))
            + 3 * ceil_div(V("embedding_params") * _p("gather_bytes"), V("tp_size"))
            - V("fsdp_root_shard_bytes"), 0),
         "the embedding's backward, the last op of backward, under FSDP2 with tied embeddings: the LM head's "
         "unsharded gradient, the embedding's and their sum (not added in place: the head's is still held), beside "
         "the gathered root and the first decoder layer's reduce-scatter input in flight, before the root's "
         "shard of the gradients exists (tools/oracle/measure_fsdp2.py 'root')", "state"),
    Term("fsdp_layer_backward", "FSDP2's busiest decoder layer in backward is a phase of its own (1/0)",
         "flag", IF(AND(V("fsdp2_reduces").eq(1), V("num_layers").ge(2)), 1, 0),
         "FSDP2 holds the last reduced layer's reduce-scatter input and prefetches the next layer while a layer runs "
         "backward, under checkpointing rebuilt whole: the busiest layer (fsdp_busiest_layer) replaces the first "
         "recomputed layer's phase (tools/oracle/measure_fsdp2.py, measure_op_checkpointing.py: Llama-2-7B's, "
         "Llama 3 8B's and Phi-3's layers)", "derived"),
    Term("fsdp_reduce_input_bytes", "FSDP2's last reduced unit's reduce-scatter input", "bytes",
         ceil_div(V("decoder_layer_params") * V("fsdp_reduce_bytes"), V("tp_size")),
         "the whole decoder layer in reduce_dtype, kept by FSDP2 until the next unit's reduce-scatter is issued",
         "state"),
    Term("framework_backward_start_bytes", "Training framework buffers when backward starts", "bytes",
         V("ds_reduce_bucket_bytes") + V("ds_live_params_bytes"),
         "FSDP2's reduce-scatter buffers come with the first decoder layer's gradients, after the loss's "
         "backward (tools/oracle/measure_fsdp2.py)", "state"),
    Term("framework_backward_bytes", "Training framework buffers during backward", "bytes",
         V("framework_backward_start_bytes") + V("fsdp_reduce_scatter_bytes"), "", "state"),
    Term("framework_step_bytes", "Training framework buffers at the optimizer step", "bytes",
         V("ds_fp32_grad_bytes") + IF(V("zero_stage").eq(3), V("ds_reduce_bucket_bytes"), 0),
         "ZeRO-3's bucket is allocated once and stays", "state"),
    # ---- activations (training) ----------------------------------------------------------------
    Term("vocab_out", "Output width (vocabulary, or 1 for a value head)", "count",
         IF(V("head").eq("value"), 1, V("vocab_size")), "", "activation"),
    Term("norm_saved_bytes", "Saved bytes per hidden element per norm", "count",
         IF(OR(V("layer_norm").eq(1), V("megatron_layers").eq(1)), IF(V("is_full").eq(1), 2, 1) * V("act_bytes"),
            IF(V("is_full").eq(1), _p("norm_saved_bytes"), 4)),
         "HF RMSNorm upcasts to fp32 and keeps its input and outputs; native LayerNorm, and Megatron-Core's "
         "Transformer Engine norms (RMSNorm too), keep the input and the output (saved by the next linear layer or "
         "the MoE router) in the activation dtype; frozen norms keep only their input", "activation"),
    Term("layer_norm_saved_bytes", "Saved bytes per hidden element per decoder-layer norm", "count",
         V("norm_saved_bytes") - V("megatron_layers") * V("norms_recomputed") * V("act_bytes"),
         "a recomputed norm keeps only its input (the final norm is not among Megatron's 'layernorm' module)",
         "activation"),
    # Dropout as PyTorch runs it on a GPU: the fused native_dropout kernel keeps a bool mask (1 byte per
    # element) for backward; FlashAttention-2 regenerates its dropout mask from the saved RNG seed.
    Term("attn_dropout_on", "Attention dropout on (1/0)", "flag",
         IF(AND(V("dropout").eq("config"), _m("attention_dropout").gt(0)), 1, 0), "model config", "activation"),
    Term("resid_dropout_on", "Residual dropout on (1/0)", "flag",
         IF(AND(V("dropout").eq("config"), _m("resid_dropout").gt(0)), 1, 0), "model config", "activation"),
    Term("embd_dropout_on", "Embedding dropout on (1/0)", "flag",
         IF(AND(V("dropout").eq("config"), _m("embd_dropout").gt(0)), 1, 0), "model config", "activation"),
    Term("score_saved_bytes", "Eager attention: bytes saved per score element", "count",
         4 * MAX(V("softmax_fp32"), _p("autocast_copies")) + V("act_bytes")
         + IF(_m("attn_logit_softcapping").gt(0), V("act_bytes"), 0)
         + V("attn_dropout_on") * (1 + IF(MAX(V("softmax_fp32"), _p("autocast_copies")).eq(1), 0, V("act_bytes"))),
         "the fp32 softmax (as the model or autocast computes it) and the probabilities in the activation dtype; "
         "Gemma-2's soft-cap keeps its tanh output; dropout keeps a 1-byte mask, and its dropped copy replaces "
         "the cast probabilities (or adds to them where there is no cast); " + _ARCH_ORACLE, "activation"),
    Term("attention_saved_per_token", "Attention, saved per token per layer", "bytes",
         V("act_bytes") * 2 * (V("q_dim") + V("kv_dim")) + 4 * V("num_heads")
         + IF(AND(V("megatron_layers").eq(1), V("attention").ne("eager")),
              V("qk_norm") * V("act_bytes") * (V("q_dim") + V("kv_dim")),
              IF(V("attention").eq("eager"),
                 V("act_bytes") * 2 * (V("q_dim") - V("kv_dim")) - 4 * V("num_heads")
                 + IF(_recomputing("core_attn"), 0,
                      V("score_saved_bytes") * V("num_heads") * V("seq_len")),
                 0)
              + V("qk_norm") * IF(V("is_full").eq(1), 4 + V("act_bytes"), 4) * (V("q_dim") + V("kv_dim"))
              + _m("fused_projections") * (1 - V("litgpt"))
              * IF(OR(V("attention").ne("eager"), V("num_heads").eq(V("num_kv_heads"))),
                   V("act_bytes") * (V("q_dim") + V("kv_dim")), 0)
              + MAX(_m("queries_head_major"), V("litgpt")) * IF(AND(V("attention").ne("eager"), V("is_full").eq(1)),
                                                               V("act_bytes") * V("q_dim"), 0)
              + V("litgpt") * IF(V("attention").ne("eager"),
                                 V("act_bytes") * (V("q_dim") - V("kv_dim")
                                                   + IF(OR(V("num_heads").eq(V("num_kv_heads")),
                                                           V("num_kv_heads").eq(1)),
                                                        V("q_dim") + V("kv_dim"), V("q_dim") - V("kv_dim"))), 0))
         - V("fp8_attention") * (V("act_bytes") - 1) * (2 * V("q_dim") + 2 * V("kv_dim") - V("is_full") * V("q_dim"))
         + _m("is_mla") * (V("norm_saved_bytes") * (_m("q_lora_rank") + _m("kv_lora_rank"))
                           + V("act_bytes") * (2 * (_m("attn_out_dim") - V("kv_dim"))
                                               + IF(AND(V("megatron_layers").eq(1), V("attention").ne("eager")),
                                                    0 - V("mla_up_proj_recomputed") * (2 * V("q_dim") + _m("attn_out_dim")),
                                                    V("q_dim") - V("num_heads") * _m("qk_rope_head_dim")))),
         "flash (and fused): Q, K, V, output and fp32 log-sum-exp (FP8 attention: Q, K, V and the output in 1 byte, "
         "the output's already counted so where FP8 training saves it as the output projection's input); eager adds "
         "K/V repeated to all heads and the S × S "
         "scores (score_saved_bytes each); selective recompute drops the S × S part (" + _KORTHIKANTI + "); "
         "q/k norms keep an fp32 input and an output per query and key element; a fused qkv projection (Phi-3) "
         "keeps its whole output alive through the saved V view (LitGPT: with one head per key group or one "
         "key head; K, and V for grouped queries, are copied to every head); queries left head-major by a "
         "torch.cat rotary (Phi-3, LitGPT) make FlashAttention's output a copy before o_proj; " + _ARCH_ORACLE
         + ". Megatron-Core: Q, K, V, the output and the log-sum-exp, and Transformer Engine's q/k norms their 16-bit "
         "input (their output is what the attention keeps). Multi-head latent attention (DeepSeek) keeps its "
         "compressed query and key-value latents through their norms (norm_saved_bytes each), the queries and keys "
         "(heads × (nope + rope) each), the values and the output (heads × v_head_dim each): Megatron-Core's as the "
         "Megatron-MoE team's count lists them (deepseek_mem_estimate.py), less the queries, keys and values under "
         "its 'mla_up_proj' module; transformers' values are a view of the key-value up-projection, which keeps its "
         "keys' half alive too (the oracle's DeepSeek-V3- and V2-Lite-shaped layers)",
         "activation"),
    Term("routing_weight_bytes", "Bytes per MoE routing weight handed to the experts", "count",
         IF(_m("routing_weights_fp32").eq(1), 4, V("act_bytes")),
         "Mixtral's and DeepSeek's routers keep the top-k weights in fp32; Qwen2-MoE's and Qwen3-MoE's cast them "
         "to the compute dtype (transformers 5.24's modeling files)", "activation"),
    Term("megatron_routing_per_token", "Megatron-Core MoE layer: routing and dispatch tensors per token", "bytes",
         IF(AND(V("megatron_layers").eq(1), V("num_experts").gt(0)),
            _m("num_experts_per_tok") * (V("act_bytes") * V("hidden_size") + 4) * V("moe_imbalance")
            + (2 + 8) * V("num_experts"), 0),
         "per routed (token, expert) pair, as many as the busiest expert-parallel GPU gets (moe_imbalance), the "
         "permuted input (hidden wide) and its fp32 routing probability, which the experts apply in their "
         "activation, so their output is not kept; per token the router's probabilities and the permutation's "
         "int64 row map, one each per expert (the Megatron-MoE team's count; megatron_layers' sources)", "activation"),
    Term("megatron_experts_per_token", "Megatron-Core MoE layer: the experts' tensors per token", "bytes",
         IF(AND(V("megatron_layers").eq(1), V("num_experts").gt(0)),
            V("act_bytes") * ((2 + V("gated_mlp") - V("moe_act_recomputed"))
                              * V("moe_imbalance") * _m("num_experts_per_tok") * _m("moe_intermediate_size")
                              + (2 + V("gated_mlp")) * _m("shared_expert_intermediate_size")), 0),
         "the first linear layer's output (gate and up when gated) and the activation's output, for each routed "
         "pair (on the busiest GPU) and the shared experts; the 'moe_act' module drops the routed experts' "
         "activation output", "activation"),
    Term("moe_saved_per_token", "MoE layer: router, dispatch and combine, saved per token", "bytes",
         IF(V("num_experts").gt(0),
            IF(V("megatron_layers").eq(1), (1 - V("moe_module_recomputed")) * V("megatron_routing_per_token"),
               _m("num_experts_per_tok") * (2 * V("act_bytes") * V("hidden_size") + 28) * V("moe_imbalance")
               + 4 * V("num_experts") + 12 * _m("num_experts_per_tok") + 4 * _m("norm_topk_prob"))
            + _m("shared_expert_gate") * V("act_bytes") * (V("hidden_size") + 1), 0),
         "per routed (token, expert) pair, as many as the busiest expert-parallel GPU gets (moe_imbalance): the "
         "gathered input and the expert output (hidden wide), two int64 "
         "sort permutations, the inverse permutation and an fp32 routing weight (28 bytes); per token: the fp32 "
         "router softmax, top-k indices (int64) and weights (fp32), the renormalising sum, Qwen2-MoE's "
         "shared-expert gate and gated output. transformers' grouped_mm experts (dropless, no capacity factor); "
         "the experts' MLP tensors are mlp_width's; " + _MOE_ORACLE + ". Megatron-Core: megatron_routing_per_token, "
         "none under its 'moe' recompute module", "activation"),
    Term("post_norm_saved_bytes", "Saved bytes per hidden element per post-norm (Gemma-2)", "count",
         IF(V("is_full").eq(1), 8, 4),
         "a norm on a block's output keeps its fp32 input and fp32 scaled product (frozen: the input only); "
         + _ARCH_ORACLE, "activation"),
    Term("norm_fp32_scale_bytes", "Extra bytes per hidden element per pre-norm (Gemma's fp32 scale)", "count",
         IF(AND(V("is_full").eq(1), V("megatron_layers").eq(0), MAX(_m("norm_scale_fp32"), V("litgpt")).eq(1)),
            4 - _p("residual_bytes"), 0),
         "Gemma (and LitGPT's RMSNorm for every model) multiplies by the weight in fp32 and keeps that fp32 "
         "product where Llama keeps it in the residual dtype (not Megatron-Core's Transformer Engine norms); "
         + _ARCH_ORACLE, "activation"),
    Term("lora_input_features", "Input features of the adapted layers, per layer", "count",
         IF(V("litgpt").eq(1),
            V("hidden_size") + IF(V("lora_targets").eq("q_proj,v_proj"), 0,
                                  V("q_dim") + IF(V("lora_targets").eq("all-linear"),
                                                  (1 + V("gated_mlp")) * V("hidden_size") + V("mlp_width"), 0)),
            _lora_column("lora_inputs_") - V("nemo_merged_adapters") / V("num_layers") * V("hidden_size")),
         "PEFT: one per adapted linear layer (q, k and v each read the normed input; a fused qkv layer once); "
         "LitGPT adapts its fused qkv layer once, then proj, the MLP's fc_1 and fc_2 (gated) or fc (plain) and its "
         "proj (litgpt/lora.py); NeMo on Megatron-Core its fused linear_qkv once, linear_proj, and with the MLP "
         "linear_fc1 (gate and up fused) and linear_fc2 (q_proj,v_proj alone: its CanonicalLoRA's linear_q and "
         "linear_v, PEFT's count)", "activation"),
    Term("saved_mlp_width", "MLP width whose tensors a layer saves per token, on the busiest expert-parallel GPU",
         "count",
         V("mlp_width") + (V("moe_imbalance") - 1) * _m("routed_mlp_width"),
         "the routed experts' part of the MLP width grows with the tokens the busiest GPU's experts get "
         "(moe_imbalance; dropless routing keeps them all)", "activation"),
    Term("mlp_saved_per_token", "MLP, saved per token per layer", "bytes",
         IF(V("megatron_layers").eq(1),
            ((1 - V("dense_mlp_recomputed"))
             * (IF(V("fp8_mlp_inputs").eq(1), 1, V("act_bytes")) * (1 + V("gated_mlp")) + V("act_bytes") * V("is_full"))
             * _m("num_dense_layers")
             * _m("intermediate_size")
             + (1 - V("moe_module_recomputed")) * _m("num_moe_layers") * V("megatron_experts_per_token"))
            / (V("num_layers") - _m("mlp_free_layers")),
            V("act_bytes") * V("saved_mlp_width") * (V("mlp_saved_tensors") - IF(V("is_full").eq(1), 0, 1))),
         "transformers' gated MLP keeps gate, up, act(gate) and their product (mlp_saved_tensors; a frozen one "
         "not the down projection's input), averaged over the layers with an MLP. Megatron-Core keeps the first "
         "linear layer's output (gate and up when gated) and the activation's output, 3 widths gated, 2 plain, in "
         "its dense layers unless its 'mlp' module recomputes them (a frozen MLP, LoRA's, not the activation's "
         "output: the down projection's input, for a weight gradient; the first layer's output in 1 byte with "
         "fp8_mlp_inputs), and megatron_experts_per_token in its MoE "
         "layers unless its 'moe' module does",
         "activation"),
    Term("fp8_saved_inputs_per_token", "GEMM inputs a layer saves in FP8, elements per token", "count",
         V("fp8_gemms") * V("is_full")
         * (2 * V("hidden_size") * (1 - V("megatron_layers") * V("norms_recomputed")) + V("q_dim") + V("mlp_width")
            + V("megatron_layers")
            * (_m("num_moe_layers") / (V("num_layers") - _m("mlp_free_layers"))
               * ((1 - V("moe_module_recomputed")) * _m("num_experts_per_tok") * V("hidden_size")
                  - V("moe_module_recomputed") * _m("shared_expert_intermediate_size"))
               - (V("moe_act_recomputed") + V("moe_module_recomputed")) * _m("routed_mlp_width")
               - V("dense_mlp_recomputed") * _m("num_dense_layers") * _m("intermediate_size")
               / (V("num_layers") - _m("mlp_free_layers")))),
         "Transformer Engine's FP8 recipe keeps the inputs of its linear layers in 1 byte: the two normed inputs, the "
         "attention output and the down projections' inputs (mlp_width), and under Megatron-Core its experts' "
         "permuted inputs too; what a Megatron recompute module discards is not kept in any precision (the normed "
         "inputs under 'layernorm', the routed experts' activation under 'moe_act', the MoE layer's under 'moe', the "
         "dense MLPs' under 'mlp')",
         "activation"),
    Term("sdpa_past_window", "SDPA asked of a sequence as long as a sliding window (1/0)", "flag",
         IF(AND(V("attention").eq("sdpa"), V("sliding_layers").gt(0), V("seq_len").ge(V("sliding_window"))), 1, 0),
         "transformers' model code then gives SDPA the window's mask (masking_utils skips it only while the keys are "
         "fewer)", "derived"),
    Term("sdpa_mask_saved_per_token", "SDPA's mask and repeated K/V past a sliding window, per token per layer",
         "bytes",
         IF(AND(V("sdpa_past_window").eq(1), V("megatron_layers").eq(0), V("litgpt").eq(0)),
            V("sliding_layers") / V("num_layers") * V("act_bytes")
            * (V("seq_len") + IF(V("num_heads").gt(V("num_kv_heads")), 2 * (V("q_dim") - V("kv_dim")), 0)
               - _m("queries_head_major") * V("is_full") * V("q_dim")), 0),
         "from a sequence as long as the window transformers gives SDPA a mask (masking_utils skips it only while the "
         "keys are fewer), and SDPA takes the memory-efficient kernel: each sliding layer saves the mask converted "
         "to the activation dtype (S × S per sequence) and K and V repeated to every head (repeat_kv: SDPA's own "
         "grouped-query attention is not used with a mask), and makes no contiguous copy of head-major queries "
         "(Phi-3's, which FlashAttention's path keeps); averaged over the layers (the oracle's Mistral 7B layers at "
         "4,096 tokens under FSDP2: 80 MiB a layer)", "activation"),
    Term("layer_saved_per_token", "One layer, saved per token", "bytes",
         MIN(_m("norms_per_layer"), 2) * V("layer_norm_saved_bytes") * V("hidden_size") + V("attention_saved_per_token")
         + V("mlp_saved_per_token") + V("sdpa_mask_saved_per_token")
         + IF(V("is_lora").eq(1),
              IF(V("adapter_dtype").eq("fp32"),
                 (4 + IF(V("lora_dropout").eq("on"), 1, 0)) * V("lora_input_features"),
                 IF(V("lora_dropout").eq("on"), (1 + V("act_bytes")) * V("lora_input_features"),
                    V("act_bytes") * (V("hidden_size") + IF(V("lora_targets").eq("all-linear"),
                                                            V("hidden_size") + V("mlp_width"), 0))))
              + V("adapter_bytes") * V("lora_rank")
              * (_lora_column("lora_modules_") - V("nemo_merged_adapters") / V("num_layers"))
              + V("litgpt") * IF(V("lora_targets").eq("q_proj,v_proj"), V("act_bytes") * (V("q_dim") + V("kv_dim")), 0),
              0)
         + (MAX(_m("norms_per_layer") - 2, 0) * V("post_norm_saved_bytes") + 2 * V("norm_fp32_scale_bytes")
            + 2 * V("resid_dropout_on")) * V("hidden_size")
         + _m("num_moe_layers") / V("num_layers") * V("moe_saved_per_token")
         - V("fp8_saved_inputs_per_token") * (V("act_bytes") - 1)
         - _m("fused_projections") * V("is_full") * (1 - V("megatron_layers")) * _p("autocast_copies") * 3
         * V("act_bytes") * V("hidden_size"),
         "two norms (Falcon-7B's one, which its attention and MLP share) + attention + MLP + LoRA's inputs (fp32 adapters: a cast copy per adapted layer; model-dtype "
         "adapters: the attention and MLP inputs and the down projection's input, shared by the layers that read "
         "them; with lora_dropout each adapted layer keeps a 1-byte mask and, in the model's dtype, its own "
         "dropped copy; LitGPT's qkv adapter on q and v only keeps its zero-padded q + v output) and r-wide "
         "intermediates (QLoRA's 4-bit layers keep no input: bitsandbytes' MatMul4Bit saves only "
         "the packed weight, ctx.tensors = (None, B)); a frozen MLP's "
         "down projection keeps no input for a weight gradient; Gemma-2's post-norms; residual dropout's two "
         "1-byte masks; MoE layers' routing buffers (averaged over the layers); FP8 training saves the GEMM inputs (the two normed inputs, the attention output, the down projection's input) in 1-byte FP8 (Transformer Engine); autocast casts a norm's output "
         "once per linear layer, so fused qkv and gate_up projections (Phi-3) keep 2 casts where q, k, v, "
         "gate, up keep 5 (Megatron-Core runs no autocast). " + _KORTHIKANTI, "activation"),
    Term("loss_bytes", "Bytes per log-probability of the loss", "count",
         IF(OR(V("loss").eq("fp32"), V("loss").eq("fp32-chunked"), _p("autocast_copies").eq(1)), 4, V("act_bytes")),
         "transformers upcasts the logits to fp32 for its cross-entropy, and autocast runs log_softmax in fp32; "
         "a loss on 16-bit logits without autocast (LitGPT bf16-true) keeps them in the compute dtype", "activation"),
    Term("layer_input_saved_per_token", "A checkpointed layer's input, per token", "bytes",
         V("hidden_size") * IF(V("is_full").eq(1), _p("residual_bytes"), V("act_bytes")),
         "the residual stream a checkpointed layer keeps to run again (in the residual dtype when trained)",
         "activation"),
    Term("op_layer_saved_per_token", "One layer under per-op checkpointing, saved per token", "bytes",
         V("layer_input_saved_per_token") + V("act_bytes") * _op_checkpoint_linears("saved")
         + IF(V("attention").eq("eager"), 0, V("act_bytes") * V("q_dim") + 4 * V("num_heads")),
         "torchtitan's per-op selective checkpointing (selective_ac_option 'op'): the layer's input, the output of "
         "every other plain matrix multiplication in call order (Llama: q, v, gate, down; a linear layer with a bias "
         "runs as addmm, which it recomputes) and the attention kernel's output and fp32 log-sum-exp; the norms, "
         "RoPE, activation functions and the other matrix multiplications run again in backward (one rank of FSDP2 "
         "under it: tools/oracle/measure_op_checkpointing.py)", "activation"),
    Term("first_mlp_spared_per_token", "The first layer's MLP tensors a frozen input spares, per token", "bytes",
         IF(AND(V("is_lora").eq(1), _m("parallel_residual").eq(1), V("lora_targets").ne("all-linear"),
                V("saved_module_params").eq(0), V("checkpointing").eq("none")), V("mlp_saved_per_token"), 0),
         "with a parallel residual the first layer's MLP reads the frozen embedding's output, not the attention's: "
         "without an adapter of its own nothing in it needs a gradient, so autograd saves none of its tensors "
         "(GPT-NeoX's 2 layers under q and v adapters: 12.4 % of the peak, tools/oracle/measure_lora_layouts.py)",
         "activation"),
    Term("layers_saved_per_token", "Every layer, saved per token", "bytes",
         IF(V("checkpointing").eq("full"), V("num_layers") * V("layer_input_saved_per_token"),
            V("num_layers") * IF(V("checkpointing").eq("op"), V("op_layer_saved_per_token"),
                                 V("layer_saved_per_token")) - V("first_mlp_spared_per_token")),
         "full checkpointing keeps each layer's input only, per-op checkpointing what op_layer_saved_per_token "
         "says; LoRA on a parallel residual spares the first layer's MLP (first_mlp_spared_per_token)",
         "activation"),
    Term("layer_replicated_per_token", "One layer, saved per token outside the tensor-parallel regions", "bytes",
         (MIN(_m("norms_per_layer"), 2) * V("layer_norm_saved_bytes")
          + MAX(_m("norms_per_layer") - 2, 0) * V("post_norm_saved_bytes")
          + 2 * V("norm_fp32_scale_bytes") + 2 * V("resid_dropout_on")) * V("hidden_size"),
         "the norms' inputs and outputs (the outputs are what the column-parallel projections save) and the "
         "residual dropouts' masks: every tensor-parallel GPU holds them whole unless sequence parallelism splits "
         "them (Korthikanti et al. 2022, §4.2: 10·s·b·h of a layer's 34·s·b·h with 16-bit LayerNorms and "
         "dropout)", "activation"),
    Term("head_replicated_per_token", "The head's saved tensors outside the tensor-parallel regions, per token", "bytes",
         (V("norm_saved_bytes") + V("norm_fp32_scale_bytes") + V("embd_dropout_on")) * V("hidden_size"),
         "the final norm and the embedding dropout's mask", "activation"),
    Term("head_saved_per_token", "The head's saved tensors per token (final norm, loss)", "bytes",
         V("head_replicated_per_token") + V("loss_bytes") * V("vocab_out")
         + IF(AND(_m("final_logit_softcapping").gt(0), V("head").eq("lm")), V("act_bytes") * V("vocab_out"), 0)
         + IF(V("saved_module_params").gt(0),
              IF(V("checkpointing").eq("full"), 1, 3) * V("act_bytes") * V("hidden_size"), 0),
         "the final norm, the embedding dropout's mask; the loss keeps its log-probabilities (vocabulary × "
         "loss_bytes per token); Gemma-2's logit soft-cap keeps its tanh output; LoRA's saved modules: the LM head's "
         "copy keeps its input for its weight gradient and a trainable embedding makes the first layer keep its input "
         "norm's tensors (3 hidden-sized 16-bit tensors per token; under full checkpointing the LM head's input only: "
         "oracle_arch.json modules_to_save records)", "activation"),
    Term("saved_per_token", "Saved for backward per token (all layers + head)", "bytes",
         V("layers_saved_per_token") + V("head_saved_per_token"), "every layer's saved tensors and the head's",
         "activation"),
    Term("replicated_saved_per_token", "Saved per token outside the tensor-parallel regions (all layers + head)",
         "bytes",
         IF(V("checkpointing").eq("full"), V("layers_saved_per_token"), V("num_layers") * V("layer_replicated_per_token"))
         + V("head_replicated_per_token"),
         "full checkpointing keeps only each layer's input, which is outside them; the head's", "activation"),
    Term("sp_gathered_input_bytes", "A gathered input a column-parallel layer saves, per token", "bytes",
         V("titan_tp") * V("act_bytes") * V("hidden_size"),
         "torchtitan's sequence parallelism gathers each norm's sequence-split output into the attention's and the "
         "MLP's column-parallel layers (DTensor's PrepareModuleInput) and the final norm's into the LM head, and "
         "those layers save the whole gathered input for their weight gradients, where Megatron saves its split and "
         "gathers it again in backward (one rank of TP on a fake process group: tools/oracle/measure_tp.py)",
         "activation"),
    Term("sp_gathered_saved_per_token", "Gathered inputs saved per token (all layers + head)", "bytes",
         (IF(V("checkpointing").eq("full"), 0, 2 * V("num_layers")) + 1) * V("sp_gathered_input_bytes"),
         "two per layer (attention, MLP) and the LM head's; full checkpointing keeps the LM head's only",
         "activation"),
    Term("tp_replicas_outside", "Copies of those tensors per tensor-parallel group", "count",
         IF(V("sp_on").eq(1), 1, V("tp_size")),
         "without sequence parallelism every GPU of the group holds them; with it each holds 1 ÷ tp", "activation"),
    Term("tokens", "Tokens per micro-batch on one GPU's share of the sequence", "count",
         V("batch_size") * V("seq_len") / V("cp_degree"),
         "context parallelism gives each GPU of the group seq_len ÷ cp_size tokens of every sequence (every "
         "activation, the logits included, shrinks with it)", "activation"),
    Term("autocast_cache_bytes", "Autocast bf16 weight copies during forward", "bytes",
         IF(AND(V("is_full").eq(1), _p("autocast_copies").eq(1),
                OR(V("zero_stage").lt(3), V("framework").ne("hf"))),
            ceil_div(2 * (V("resident_params") - V("embedding_params")
                          + V("tied_embeddings") * V("vocab_size") * V("hidden_size")), V("tp_size")), 0),
         "autocast caches a bf16 copy of every linear weight until the forward leaves autocast (the loss "
         "included); " + _MEASURED + "; it caches only a weight that is a leaf and not a view (PyTorch "
         "aten/src/ATen/autocast_mode.cpp, cached_cast), so none under ZeRO-3 as the HF Trainer and Composer "
         "run it, PyTorch FSDP's FULL_SHARD, whose layers' gathered weights are views of its flat parameter",
         "activation"),
    Term("autocast_copies_bytes", "Autocast bf16 weight copies saved for backward", "bytes",
         IF(AND(_REBUILDS_LAYERS, V("autocast_cache_bytes").gt(0)),
            ceil_div(2 * V("vocab_size") * V("hidden_size"), V("tp_size")), V("autocast_cache_bytes")),
         "backward keeps every copy, only the LM head's under full or per-op checkpointing (the layers cast again "
         "when they recompute); " + _MEASURED, "activation"),
    Term("group_saved_per_token", "Saved per token by a tensor-parallel group (all layers + head)", "bytes",
         V("saved_per_token") + (V("tp_replicas_outside") - 1) * V("replicated_saved_per_token")
         + (V("tp_size") - 1) * V("sp_gathered_saved_per_token"),
         _KORTHIKANTI + "; tensor parallelism splits the rest, sequence parallelism also the norms, dropouts and "
         "layer inputs", "activation"),
    Term("group_head_saved_per_token", "Of which the head's (final norm, loss)", "bytes",
         V("head_saved_per_token") + (V("tp_replicas_outside") - 1) * V("head_replicated_per_token")
         + (V("tp_size") - 1) * V("sp_gathered_input_bytes"),
         "the LM head's gathered input under torchtitan's sequence parallelism", "activation"),
    Term("group_layers_saved_per_token", "Every decoder layer, saved per token by a tensor-parallel group", "bytes",
         V("group_saved_per_token") - V("group_head_saved_per_token"), "group_saved_per_token less the head's",
         "activation"),
    Term("stage_layers_saved_per_token", "A pipeline stage's layers, saved per token by a tensor-parallel group",
         "bytes", V("pp_layer_share") * V("group_layers_saved_per_token"),
         "the busiest stage's share of the layers (all of them without a pipeline)", "activation"),
    Term("training_activations", "Saved activations (training)", "bytes",
         IF(V("is_train").eq(1),
            ceil_div(V("tokens") * (V("stage_layers_saved_per_token") + V("group_head_saved_per_token")), V("tp_size"))
            + V("autocast_copies_bytes"), 0),
         "one micro-batch through the stage that computes the loss (in a pipeline the last, whose 1F1B schedule "
         "backpropagates each micro-batch before the next: one in flight): its layers' and the head's saved tensors",
         "activation"),
    # Pipeline parallelism: the first stage holds more micro-batches in flight (pp_in_flight), without the head's.
    Term("pp_microbatch_bytes", "A micro-batch's saved activations on the first pipeline stage", "bytes",
         IF(AND(V("is_train").eq(1), V("pp_stages").gt(1)),
            ceil_div(V("tokens") * V("stage_layers_saved_per_token"), V("tp_size")), 0),
         "its layers' saved tensors", "activation"),
    Term("torch_pipeline", "torch.distributed.pipelining's schedule (1/0)", "flag",
         IF(AND(is_one_of(V("framework"), "hf", "fsdp2"), V("pp_stages").gt(1), V("is_train").eq(1)), 1, 0),
         "plain PyTorch pipelines with torch.distributed.pipelining (PipelineStage, Schedule1F1B, as torchtitan); "
         "Megatron frees a sent output's data and receives into a buffer per receive (one stage of torch's "
         "pipeline on a fake process group: tools/oracle/measure_pp.py)", "derived"),
    Term("pp_kept_output_bytes", "A stage's output kept for its backward, per micro-batch in flight", "bytes",
         V("torch_pipeline") * ceil_div(V("tokens") * V("hidden_size") * V("act_bytes"), V("tp_size")),
         "torch's PipelineStage keeps each forward's output until that micro-batch's backward", "activation"),
    Term("pp_kept_logits_bytes", "The last stage's logits kept for its backward", "bytes",
         V("torch_pipeline") * ceil_div(V("tokens") * V("vocab_out") * V("act_bytes"), V("tp_size")),
         "the last stage's output is the logits: kept beside the loss's own copies", "activation"),
    Term("pp_recv_buffer_bytes", "Pipeline receive buffers", "bytes",
         V("grad_accum_steps") * V("pp_kept_output_bytes"),
         "torch's PipelineStage allocates a buffer the size of a stage's output for every micro-batch of the step it "
         "receives, activations on every stage but the first, their gradients on every stage but the last, and keeps "
         "them", "state"),
    Term("forward_end_bytes", "End of forward: the loss's logits and autocast's unsaved weight copies", "bytes",
         IF(V("is_train").eq(1),
            ceil_div((V("act_bytes") + IF(AND(OR(V("loss").eq("fp32"), V("loss").eq("compute")),
                                              V("loss_bytes").gt(V("act_bytes"))),
                                          (1 + V("titan_tp")) * V("loss_bytes"), 0))
                     * V("tokens") * V("vocab_out"), V("tp_size"))
            + V("autocast_cache_bytes") - V("autocast_copies_bytes"), 0),
         "while the cross-entropy runs, the model's logits and the upcast copy it takes the log-softmax of (the "
         "log-probabilities are saved activations), and the weight copies autocast caches but backward does not "
         "keep; oracle_arch.json gradient-accumulation records. torchtitan's loss_parallel composes the log-softmax "
         "of separate steps across the GPUs, and the shifted logits stay beside their exponentials: one more "
         "log-probability-sized tensor (tools/oracle/measure_tp.py)", "activation"),
    Term("loss_backward_bytes", "Loss working set: logit gradients, or the 16-bit logits of a chunked loss", "bytes",
         IF(V("is_train").eq(1),
            ceil_div(IF(OR(V("loss").eq("fp32"), V("loss").eq("compute")), (2 + V("titan_tp")) * V("loss_bytes"),
                        V("act_bytes") + IF(V("loss").eq("fp32-chunked"), 4 / 8, 0))
                     * V("tokens") * V("vocab_out"), V("tp_size")), 0),
         "one cross-entropy: the gradients of the log-probabilities and of the logits, tokens × vocabulary × "
         "loss_bytes each (" + _MEASURED + "; three under torchtitan's loss_parallel, whose backward makes the "
         "logits' gradient from a zero tensor and the exponentials of the saved log-probabilities); chunked: the "
         "16-bit logits stay alive beside the saved "
         "log-probabilities, plus the fp32 copy of one of torchtune's 8 chunks (oracle_arch.json loss records)",
         "activation"),
    Term("group_layer_saved_per_token", "One layer, saved per token by a tensor-parallel group", "bytes",
         V("layer_saved_per_token") + (V("tp_replicas_outside") - 1) * V("layer_replicated_per_token")
         + (V("tp_size") - 1) * 2 * V("sp_gathered_input_bytes"),
         "as group_saved_per_token, for one layer without checkpointing", "activation"),
    Term("layer_backward_bytes", "A decoder layer's backward working set (its gated MLP)", "bytes",
         IF(V("is_train").eq(1), ceil_div(3 * V("act_bytes") * V("tokens") * _m("intermediate_size"), V("tp_size")), 0),
         "the gradients of the MLP's gate, up and activated outputs while its first matrix multiplications run "
         "backward: the peak of a stage without the loss (tools/oracle/measure_pp.py)", "activation"),
    Term("norm_backward_per_token", "An RMSNorm's backward working set per token", "bytes",
         5 * 4 * V("hidden_size"),
         "five fp32 hidden-wide tensors: transformers' RMSNorm upcasts to fp32 and its backward runs there (read "
         "from the oracle's Llama-2-7B layers under FSDP2: the end of a decoder layer's backward)", "activation"),
    Term("layer_gradient_elem_bytes", "Bytes per weight-gradient element a decoder layer's backward makes", "count",
         IF(V("fsdp2_reduces").eq(1), _p("gather_bytes"), V("grad_elem_bytes")),
         "FSDP2 makes a layer's gradients unsharded in its compute dtype before the reduce-scatter; otherwise in "
         "the gradients' own dtype", "state"),
    Term("layer_weight_gradient_bytes", "A decoder layer's weight gradients, as its backward makes them", "bytes",
         V("is_full") * ceil_div(V("decoder_layer_params") * V("layer_gradient_elem_bytes"), V("tp_size")),
         "none with a frozen base (LoRA's r-wide adapters' are left out)", "state"),
    Term("layer_gradients_whole", "A decoder layer's gradients are kept whole (1/0)", "flag",
         IF(OR(V("fsdp_pipeline").eq(1), AND(V("gradient_shards").eq(V("tp_size")), V("fsdp2_reduces").eq(0))), 1, 0),
         "neither ZeRO-2 or 3 nor FSDP2 reduces them to a shard after the layer's backward (FSDP2 under a pipeline "
         "keeps them whole until the last micro-batch): among every gradient, the layer's own are whole", "state"),
    Term("layer_gradients_in_place", "A decoder layer's new gradients are added into those kept (1/0)", "flag",
         IF(AND(V("layer_gradients_whole").eq(1), V("accumulated_gradients").gt(0)), 1, 0),
         "with gradient accumulation whole gradients stay from the earlier micro-batches and backward adds each new "
         "one into them as it is made", "state"),
    Term("mlp_down_gradient_bytes", "The MLP's down projection's weight gradient", "bytes",
         V("is_full") * ceil_div(V("hidden_size") * _m("intermediate_size") * V("layer_gradient_elem_bytes"),
                                 V("tp_size")), "none with a frozen base", "state"),
    Term("mlp_down_input_bytes", "What the down projection saved of its input, freed by its backward", "bytes",
         ceil_div(V("tokens") * _m("intermediate_size")
                  * IF(V("is_full").eq(1), V("act_bytes"),
                       IF(AND(V("is_lora").eq(1), V("lora_targets").eq("all-linear")),
                          IF(V("adapter_dtype").eq("fp32"), 4 + IF(V("lora_dropout").eq("on"), 1, 0),
                             IF(V("lora_dropout").eq("on"), 1 + V("act_bytes"), V("act_bytes"))), 0)), V("tp_size")),
         "its input, for its weight gradient; with a frozen base only what its adapter keeps, as layer_saved_per_token "
         "counts it (an fp32 cast, or the input and with dropout a mask and a dropped copy), none without one",
         "activation"),
    Term("layer_saved_bytes", "A decoder layer's saved tensors", "bytes",
         ceil_div(V("tokens") * V("group_layer_saved_per_token"), V("tp_size")),
         "without checkpointing, or rebuilt whole in backward under it", "activation"),
    Term("rebuilt_layer_casts_bytes", "Autocast's 16-bit copies of a rebuilt layer's weights in its MLP's backward",
         "bytes",
         IF(AND(_REBUILDS_LAYERS, V("autocast_cache_bytes").gt(0)),
            ceil_div(2 * (V("decoder_layer_params") - V("hidden_size") * _m("intermediate_size")), V("tp_size")), 0),
         "a layer recomputed under autocast casts its weights again and its matrix multiplications save the casts "
         "for backward: all but the down projection's, freed with its backward, are held while the MLP's backward "
         "runs (the oracle's trace of Llama 3 8B's layers in autocast at 8,192 tokens)", "activation"),
    Term("layer_mlp_backward_bytes", "A decoder layer's activations and working set in its MLP's backward", "bytes",
         V("layer_saved_bytes") + V("rebuilt_layer_casts_bytes") + V("layer_backward_bytes") - V("mlp_down_input_bytes")
         + ceil_div(V("tokens") * (V("tp_size") - 1) * V("sp_gathered_input_bytes"), V("tp_size")),
         "its saved tensors and the MLP's working set, what the down projection saved of its input freed; under "
         "torchtitan's sequence "
         "parallelism the down projection's output gradient gathered whole (the backward of its reduce-scatter: the "
         "oracle's trace of Llama-2-7B's layers on 8 TP ranks)", "activation"),
    Term("layer_end_backward_bytes", "A decoder layer's activations and working set at the end of its backward",
         "bytes",
         ceil_div(V("tokens") * (V("norm_backward_per_token")
                                 + V("tp_replicas_outside") * V("layer_norm_saved_bytes") * V("hidden_size")),
                  V("tp_size")),
         "its saved tensors freed but its first norm's input, that norm's backward running", "activation"),
    Term("layer_backward_peak_bytes", "A decoder layer's backward at its busiest: activations, working set, gradients",
         "bytes",
         ceil_div(V("tokens") * V("act_bytes") * V("hidden_size"), V("tp_size"))
         + MAX((1 - V("layer_gradients_in_place")) * V("mlp_down_gradient_bytes") + V("layer_mlp_backward_bytes"),
               (1 - V("layer_gradients_in_place")) * V("layer_weight_gradient_bytes") + V("layer_end_backward_bytes")),
         "the residual stream's gradient and the larger of the MLP's backward (the down projection's weight gradient "
         "made) and the end of the layer's backward (every weight gradient of the layer made); gradients added into "
         "kept ones take nothing more (the oracle's traces: tools/oracle/trace_backward.py)", "activation"),
    Term("rebuilt_layer_parts_known", "A rebuilt layer's parts are known (1/0)", "flag",
         IF(AND(V("is_train").eq(1), _REBUILDS_LAYERS, V("attention").ne("eager"),
                is_one_of(V("framework"), "hf", "deepspeed", "fsdp2")), 1, 0),
         "full or per-op checkpointing, transformers' layers and a fused attention kernel: the layer's saved tensors "
         "made again and its backward's busiest point, as the oracle's traces show them", "derived"),
    Term("rebuilt_layer_by_parts", "A rebuilt layer's backward is counted by its parts (1/0)", "flag",
         V("is_full") * V("rebuilt_layer_parts_known"),
         "every weight trained; with a frozen base (LoRA) the parts are a floor under the fitted ratio (its rebuilt "
         "forward holds adapter outputs they do not count: tools/oracle/measure_lora_long.py); eager attention, "
         "Megatron's or LitGPT's layers keep a ratio to the saved bytes", "derived"),
    Term("layer_kept_bytes", "A decoder layer's saved tensors in backward, while it waits", "bytes",
         ceil_div(V("tokens") * V("group_layers_saved_per_token") / V("num_layers"), V("tp_size")),
         "everything it saved, its input alone under full checkpointing, what per-op checkpointing keeps", "activation"),
    Term("rebuilt_layer_input_bytes", "The input a checkpoint keeps to rebuild its layer from", "bytes",
         IF(_REBUILDS_LAYERS,
            ceil_div(V("tokens") * V("tp_replicas_outside") * V("layer_input_saved_per_token"), V("tp_size")), 0),
         "full or per-op checkpointing: the layer's input, in the residual stream's dtype", "activation"),
    Term("rebuilt_layer_parts_bytes", "A rebuilt layer by its parts, beyond the tensors it kept", "bytes",
         V("rebuilt_layer_input_bytes") - V("layer_kept_bytes") + V("layer_backward_peak_bytes"),
         "its saved tensors made again beside its kept input (its kept tensors are among them) and its backward at its "
         "busiest", "activation"),
    Term("recompute_bytes", "Checkpointed layer recomputed in backward", "bytes",
         IF(AND(V("is_train").eq(1), V("checkpointing").ne("none")),
            IF(V("rebuilt_layer_by_parts").eq(1),
               V("rebuilt_layer_parts_bytes"),
               MAX(ceil_div(V("tokens") * (V("group_layer_saved_per_token") + V("moe_module_recomputed")
                                           * (V("megatron_routing_per_token") + V("megatron_experts_per_token")))
                            * IF(AND(_REBUILDS_LAYERS, V("attention").ne("eager")),
                                 IF(V("is_full").eq(1), V("recompute_ratio_trained"), V("recompute_ratio_frozen")), 2),
                            V("tp_size")),
                   V("rebuilt_layer_parts_known") * V("rebuilt_layer_parts_bytes"))), 0),
         "one layer's activations rebuilt, plus its backward's working set. Every weight trained in transformers' "
         "layers (rebuilt_layer_by_parts): the layer's saved tensors made again beyond those it kept and its "
         "backward at its busiest, its own gradients as made (read from the oracle's traces, held out on one GPU at "
         "4,096-16,384 tokens: tools/oracle/measure_rebuilt_layer.py). Otherwise full (or per-op) checkpointing with "
         "flash attention: recompute_ratio_frozen × the layer's saved bytes with a frozen base (LoRA; in transformers' "
         "layers never below the parts: tools/oracle/measure_lora_long.py), "
         "recompute_ratio_trained with every weight trained (Megatron's and LitGPT's layers; assumptions fitted to the "
         "oracle, held out on other shapes); eager attention (whose backward makes S × S gradients as large as the "
         "saved scores) and selective checkpointing: twice the saved bytes, with under Megatron's 'moe' module the "
         "MoE layer's tensors it rebuilt", "activation"),
    Term("recompute_start_activations", "Layer inputs held while the last layer recomputes", "bytes",
         IF(AND(V("is_train").eq(1), _REBUILDS_LAYERS),
            ceil_div(V("tokens") * V("layers_saved_per_token") * V("pp_layer_share") * V("pp_in_flight")
                     * V("tp_replicas_outside"), V("tp_size")), 0),
         "full checkpointing: backward rebuilds the last layer first, while every layer's saved input is still "
         "held (the loss's log-probabilities and logit gradients are freed by then); per-op checkpointing: every "
         "layer's saved tensors", "activation"),
    Term("embedding_backward_bytes", "Embedding backward buffer", "bytes",
         IF(V("is_full").eq(1),
            IF(V("titan_tp").eq(1),
               FLOOR(V("act_bytes") * V("vocab_size") * V("hidden_size") * (V("tp_size") - 1) / V("tp_size")),
               IF(V("tied_embeddings").eq(1), ceil_div(4 * V("vocab_size") * V("hidden_size"), V("tp_size")), 0)), 0),
         "tied embeddings: the embedding's dense fp32 gradient is added to the LM head's at the end of "
         "backward (" + _MEASURED + "); torchtitan's embedding split by vocabulary: DTensor has no vocabulary-split "
         "rule for the embedding's backward, so each GPU makes the whole vocabulary's gradient and keeps its slice "
         "(the whole less the slice, which is its gradient; tools/oracle/measure_tp.py)", "activation"),
    Term("fsdp_new_shard_bytes", "A gradient shard FSDP2's backward adds per layer", "bytes",
         IF(V("accumulated_gradients").gt(0), 0, V("fsdp_layer_shard_bytes")),
         "none with gradient accumulation: every shard is kept from the earlier micro-batches", "state"),
    Term("fsdp_last_layer_load", "FSDP2's last decoder layer in backward, beyond what every layer holds", "bytes",
         _fsdp_layer_load(V("num_layers") - 1, 0), "the saved tensors of the layers before it", "state"),
    Term("fsdp_second_layer_load", "FSDP2's second decoder layer from the back, beyond what every layer holds",
         "bytes", _fsdp_layer_load(V("num_layers") - 2, 1),
         "the saved tensors of the layers before it, the last layer's gradient shard and reduce-scatter input",
         "state"),
    Term("fsdp_front_layer_load", "FSDP2's second decoder layer from the front, beyond what every layer holds",
         "bytes", _fsdp_layer_load(1, V("num_layers") - 2),
         "the first layer's saved tensors, the shards of the layers behind it and the reduce-scatter input of the "
         "one behind it", "state"),
    Term("fsdp_busiest_layer", "FSDP2's busiest decoder layer in backward, counted from the back", "count",
         IF(AND(V("num_layers").ge(3),
                V("fsdp_front_layer_load").gt(MAX(V("fsdp_last_layer_load"), V("fsdp_second_layer_load")))),
            V("num_layers") - 1, IF(V("fsdp_second_layer_load").gt(V("fsdp_last_layer_load")), 2, 1)),
         "the k-th layer from the back holds the saved tensors of the L - k layers before it and the shards of the k - 1 "
         "behind it, and from the second on the reduce-scatter input of the one behind it: linear in k, so the last "
         "(k = 1), the second from the back or the second from the front (tools/oracle/measure_fsdp2.py: the second "
         "from the back without checkpointing and under per-op checkpointing, from the front under full)", "derived"),
    Term("fsdp_layer_backward_gradients", "Gradients in FSDP2's busiest decoder layer's backward", "bytes",
         IF(V("fsdp_layer_backward").eq(1),
            V("accumulated_gradients") + (V("fsdp_busiest_layer") - 1) * V("fsdp_new_shard_bytes"), 0),
         "the shards of the layers behind it (with gradient accumulation every shard, kept from the earlier "
         "micro-batches)", "state"),
    Term("fsdp_layer_backward_bytes", "FSDP2's busiest decoder layer in backward: buffers and working set", "bytes",
         IF(V("fsdp_layer_backward").eq(1),
            IF(V("fsdp_busiest_layer").ge(2), V("fsdp_reduce_input_bytes"), 0) + V("fsdp_gathered_layer_bytes")
            + V("layer_backward_peak_bytes") - V("layer_saved_bytes"), 0),
         "the reduce-scatter input of the layer behind it (none for the last layer), the layer before it prefetched "
         "(gathered), and the layer's backward at its busiest beyond its saved tensors (its activations)", "state"),
    Term("pp_embedding_grad_bytes", "The embedding's gradient made in backward", "bytes",
         IF(V("is_full").eq(1), ceil_div(V("vocab_size") * V("hidden_size") * V("grad_elem_bytes"), V("tp_size")), 0),
         "the embedding's backward makes a dense gradient of the whole table, added to the one already kept: the "
         "first stage's last operation of each micro-batch's backward", "activation"),
    Term("pp_layer_backward_working_bytes", "A pipeline stage's layer in backward, beside its micro-batch", "bytes",
         V("layer_backward_bytes")
         + IF(V("checkpointing").eq("full"), V("layer_saved_bytes"), 0),
         "a layer's backward working set, under full checkpointing beside the layer rebuilt whole", "activation"),
    Term("pp_first_stage_backward_bytes", "The first pipeline stage's micro-batch in backward", "bytes",
         MAX(V("pp_microbatch_bytes") + V("pp_layer_backward_working_bytes"), V("pp_embedding_grad_bytes"))
         + V("framework_backward_bytes"),
         "its activations with a layer's backward, or, once they are freed, the embedding's gradient; the training "
         "framework's backward buffers", "activation"),
    Term("pp_in_flight_with_gradients", "Micro-batches in flight on the first stage once gradients exist", "count",
         MIN(V("pp_in_flight"), V("grad_accum_steps") - 1),
         "1F1B: the first backward runs with pp_in_flight micro-batches and no gradients; each later one with "
         "gradients and, while forwards remain, pp_in_flight again", "derived"),
    Term("pp_first_with_gradients", "The first stage peaks once gradients exist (1/0)", "flag",
         IF((V("accumulated_gradients") + (V("pp_in_flight_with_gradients") - 1) * V("pp_microbatch_bytes")
             + V("pp_in_flight_with_gradients") * V("pp_kept_output_bytes"))
            .ge((V("pp_in_flight") - 1) * V("pp_microbatch_bytes") + V("pp_in_flight") * V("pp_kept_output_bytes")),
            1, 0), "", "derived"),
    Term("pp_first_in_flight", "Micro-batches in flight on the first stage at its peak", "count",
         IF(V("pp_first_with_gradients").eq(1), V("pp_in_flight_with_gradients"), V("pp_in_flight")), "", "derived"),
    Term("pp_first_stage_gradients", "Gradients on the first stage at its peak", "bytes",
         V("pp_first_with_gradients") * V("accumulated_gradients"), "", "activation"),
    Term("pp_first_stage_activations", "The other micro-batches in flight on the first stage", "bytes",
         (V("pp_first_in_flight") - 1) * V("pp_microbatch_bytes") + V("pp_first_in_flight") * V("pp_kept_output_bytes"),
         "their activations, and in a torch pipeline every one's kept output", "activation"),
    # A torch pipeline's middle stages hold a receive buffer per micro-batch in each direction: with many micro-batches
    # the busiest GPU is the second stage (one fewer in flight than the first, no embedding, both buffers).
    Term("pp_middle_stage", "A middle stage of a torch pipeline (1/0)", "flag",
         IF(AND(V("torch_pipeline").eq(1), V("pp_stages").gt(2)), 1, 0),
         "torch's PipelineStage receives activations on every stage but the first and gradients on every stage but "
         "the last, into a buffer per micro-batch: a stage between them holds both (tools/oracle/measure_pp.py)",
         "derived"),
    Term("pp_middle_params_fraction", "A middle stage's parameters, as a share of the busiest stage's", "count",
         V("stage_layer_params") / V("stage_params"),
         "its layers alone: the embedding is the first stage's, the LM head the last's", "derived"),
    Term("pp_middle_weights", "A middle stage's weights", "bytes", FLOOR(V("weights") * V("pp_middle_params_fraction")),
         "", "state"),
    Term("pp_middle_master_weights", "A middle stage's fp32 master weights", "bytes",
         FLOOR(V("master_weights") * V("pp_middle_params_fraction")), "", "state"),
    Term("pp_middle_optimizer_states", "A middle stage's optimizer states", "bytes",
         FLOOR(V("optimizer_states") * V("pp_middle_params_fraction")), "", "state"),
    Term("pp_middle_gradient_buffers", "A middle stage's gradient buffers", "bytes",
         FLOOR((V("persistent_gradients") + V("ddp_bucket_bytes")) * V("pp_middle_params_fraction")),
         "a persistent gradient buffer and DDP's buckets, over its layers", "state"),
    Term("pp_middle_zero3_buffer", "A middle stage's gathered parameters (FSDP2)", "bytes",
         FLOOR(V("zero3_buffer") * V("pp_middle_params_fraction")), "", "state"),
    Term("pp_middle_in_flight", "Micro-batches in flight on the second pipeline stage", "count",
         MIN(V("pp_stages") - 1, V("grad_accum_steps")) * V("pp_interleave_factor"),
         "1F1B: a stage runs one forward fewer than the stage before it before its first backward", "derived"),
    Term("pp_middle_microbatch_bytes", "A micro-batch's saved activations on a middle stage", "bytes",
         V("pp_microbatch_bytes") - IF(V("checkpointing").eq("full"), V("pp_kept_output_bytes"), 0),
         "as on the first stage, but under full checkpointing the input its first layer saves is the receive buffer "
         "it arrived in", "activation"),
    Term("pp_middle_accumulated_gradients", "A middle stage's gradients kept between micro-batches", "bytes",
         FLOOR(V("accumulated_gradients") * V("pp_middle_params_fraction")), "", "activation"),
    Term("pp_middle_in_flight_with_gradients", "Micro-batches in flight on a middle stage once gradients exist",
         "count", MIN(V("pp_middle_in_flight"), V("grad_accum_steps") - 1), "", "derived"),
    Term("pp_middle_with_gradients", "The middle stage peaks once gradients exist (1/0)", "flag",
         IF((V("pp_middle_accumulated_gradients")
             + (V("pp_middle_in_flight_with_gradients") - 1) * V("pp_middle_microbatch_bytes")
             + V("pp_middle_in_flight_with_gradients") * V("pp_kept_output_bytes"))
            .ge((V("pp_middle_in_flight") - 1) * V("pp_middle_microbatch_bytes")
                + V("pp_middle_in_flight") * V("pp_kept_output_bytes")), 1, 0), "", "derived"),
    Term("pp_middle_in_flight_at_peak", "Micro-batches in flight on a middle stage at its peak", "count",
         IF(V("pp_middle_with_gradients").eq(1), V("pp_middle_in_flight_with_gradients"), V("pp_middle_in_flight")),
         "", "derived"),
    Term("pp_middle_stage_gradients", "Gradients on a middle stage at its peak", "bytes",
         V("pp_middle_with_gradients") * V("pp_middle_accumulated_gradients"), "", "activation"),
    Term("pp_middle_stage_activations", "The other micro-batches in flight on a middle stage", "bytes",
         (V("pp_middle_in_flight_at_peak") - 1) * V("pp_middle_microbatch_bytes")
         + V("pp_middle_in_flight_at_peak") * V("pp_kept_output_bytes"),
         "their activations and every one's kept output", "activation"),
    Term("pp_middle_stage_backward_bytes", "A middle stage's micro-batch in backward", "bytes",
         V("pp_middle_microbatch_bytes") + V("pp_layer_backward_working_bytes") + V("framework_backward_bytes"),
         "", "activation"),
    Term("pp_middle_stage_all_gradients", "A middle stage's gradients at its peak, buffers included", "bytes",
         V("pp_middle_gradient_buffers") + V("pp_middle_stage_gradients"), "", "activation"),
    Term("pp_middle_stage_temporaries", "A middle stage's temporaries at its peak", "bytes",
         V("pp_middle_zero3_buffer") + 2 * V("pp_recv_buffer_bytes") + V("pp_middle_stage_backward_bytes"),
         "its gathered parameters (FSDP2), both directions' receive buffers, its micro-batch in backward",
         "activation"),
    Term("optimizer_step_bytes", "Optimizer step temporary", "bytes",
         IF(AND(V("is_train").eq(1), V("optimizer_impl").eq("foreach")),
            ceil_div(V("state_copy_bytes"), V("optimizer_shards")), 0),
         "foreach AdamW materialises one state-sized temporary (fused does not)", "activation"),
    # ---- inference, generation and scoring ----------------------------------------------------
    Term("engine_mode", "Served by an engine with a KV block pool (1/0)", "flag",
         IF(AND(V("workload").eq("inference"), V("serving_engine").ne("hf-generate")), 1, 0),
         "vLLM and SGLang reserve a share of the GPU at start-up and page the cache into it", "activation"),
    Term("rollout_engine", "Rollouts generated by an engine (1/0)", "flag",
         IF(AND(_ROLLS, V("gen_len").gt(0), V("serving_engine").ne("hf-generate")), 1, 0),
         "veRL generates PPO/GRPO rollouts with vLLM on the training GPUs, its share of memory set by "
         "gpu_memory_utilization (veRL's rollout default 0.5): the engine holds its own weights and KV pool beside "
         "the trainer's states; OpenRLHF by default on GPUs of its own (an RLHF group's rollout role)", "activation"),
    Term("decode_tp", "Tensor parallelism of the generation", "count",
         IF(V("rollout_engine").eq(1), V("rollout_tp_size"), V("tp_size")),
         "a rollout engine runs at its own tensor-parallel degree; generate() and a served model at tp_size",
         "activation"),
    Term("engine_budget_bytes", "Engine memory budget", "bytes",
         IF(OR(V("engine_mode").eq(1), V("rollout_engine").eq(1)),
            FLOOR((_g("memory_mib") - V("driver_reserved_mib")) * MiB * V("gpu_memory_utilization")), 0),
         "gpu_memory_utilization (SGLang: mem_fraction_static) × the memory CUDA reports", "activation"),
    Term("step_sequences", "Sequences per GPU per optimizer step", "count",
         IF(OR(V("is_train").eq(1), V("workload").eq("frozen"), V("workload").eq(ROLLOUT)),
            V("batch_size") * V("grad_accum_steps"), V("batch_size")),
         "the micro-batch times its accumulation: an RLHF iteration generates, scores and trains on them all",
         "activation"),
    Term("context_tokens", "Tokens per sequence (prompt + generated)", "count",
         V("prompt_len") + V("gen_len"), "", "activation"),
    Term("kv_shards", "GPUs one sequence's KV cache is split over", "count",
         IF(_m("is_mla").eq(1), 1, MIN(V("decode_tp"), V("num_kv_heads"))),
         "tensor parallelism gives each GPU its KV heads; with more GPUs than KV heads each keeps a copy of one "
         "(vLLM replicates them: Qwen3-235B-A22B's 4 KV heads at TP 8 hold twice the bytes); MLA's latent is one "
         "vector per token and layer that every tensor-parallel GPU keeps whole (vLLM and SGLang without "
         "data-parallel attention)", "activation"),
    Term("kv_bytes_per_token", "KV cache per token, per GPU", "bytes",
         V("kv_elements_per_token") * Lookup("Dtypes", "bits", V("kv_dtype")) / 8 / V("kv_shards"), "", "activation"),
    Term("mamba_state_bytes", "Mamba-2 states per sequence, per GPU", "bytes",
         IF(_m("num_mamba_layers").eq(0), 0,
            _m("num_mamba_layers")
            * (_m("mamba_inner_dim") / V("decode_tp")
               + 2 * _m("ssm_state_size") * IF(MOD(_m("mamba_groups"), V("decode_tp")).eq(0),
                                                _m("mamba_groups") / V("decode_tp"), 1))
            * (_m("conv_kernel") - IF(V("serving_engine").eq("hf-generate"), 0, 1)) * V("act_bytes")
            + _m("mamba_ssm_state_elements") * _m("mamba_ssm_state_bits") / 8 / V("decode_tp")),
         "a hybrid model's Mamba-2 layers keep, whatever the context's length, a convolution state (the last "
         "conv_kernel − 1 inputs of each channel: x, and B and C of each group; transformers conv_kernel of them) "
         "and an SSM state (heads × head_dim × ssm_state_size), split over the tensor-parallel GPUs by heads and "
         "groups (a single group is kept whole on every GPU); the convolution state in the model's dtype, the SSM "
         "state in the config's mamba_ssm_cache_dtype (fp32 where it has none: vLLM's NemotronH hook, SGLang and "
         "transformers alike; measured: tests/data/nemotron_h_cache.json)", "activation"),
    Term("kv_page_tokens", "Tokens per KV block", "count",
         IF(AND(V("mamba_state_bytes").gt(0), V("serving_engine").eq("vllm")),
            MAX(V("kv_block_tokens"),
                16 * CEIL(V("mamba_state_bytes") / _m("num_mamba_layers")
                          / (16 * V("kv_bytes_per_token") / _m("num_attention_layers")))),
            V("kv_block_tokens")),
         "kv_block_tokens; vLLM serving a hybrid model enlarges the attention block, in multiples of 16 tokens, "
         "until one layer's block holds one Mamba-2 layer's states, and pads those to the block "
         "(HybridAttentionMambaModelConfig: 1,040 tokens for Nemotron-H-8B with a bf16 cache)", "activation"),
    Term("decode_weight_bytes", "Weights a decode step reads, per GPU", "bytes",
         IF(_ROLLS, V("model_weight_bytes") / V("decode_tp"), V("weights")),
         "a served model its own; an RLHF actor (or its rollout engine on GPUs of its own) the whole model over "
         "its tensor-parallel group, whatever its training shards (pipeline stages and expert-parallel ranks "
         "included): a rollout engine holds its own copy, generate() under ZeRO-3 gathers every layer, and "
         "generate() by pipeline stages runs each token through every stage in turn", "time"),
    Term("node_host_bytes", "A node's host RAM in use", "bytes",
         V("node_offload_bytes")
         + IF(AND(V("rollout_engine").eq(1), V("is_train").eq(1), V("engine_sleep").eq("offload")),
              V("decode_weight_bytes") * V("node_gpus"), 0),
         "the states its GPUs offload, and the weights of a rollout engine that sleeps with them offloaded (vLLM "
         "sleep level 1 backs each GPU's share up in host memory); an RLHF group's colocated roles share the node's",
         "state"),
    Term("rollout_pool_bytes", "Rollout engine's KV pool", "bytes",
         IF(V("rollout_engine").eq(1), MAX(0, V("engine_budget_bytes") - V("decode_weight_bytes")), 0),
         "its budget less its own copy of the weights (its activation profile and CUDA graphs are left out)",
         "activation"),
    Term("generator_sequences", "Sequences one generator takes per iteration", "count",
         IF(V("rollout_engine").eq(1), V("step_sequences") * V("decode_tp") / V("replica_gpus"), V("step_sequences")),
         "an engine spans decode_tp GPUs and generates for the data-parallel ranks on them; generate() for its rank",
         "activation"),
    Term("generated_sequences", "Sequences one generator generates per iteration", "count",
         CEIL(V("generator_sequences") * V("generation_factor")),
         "dynamic sampling (DAPO) generates generation_factor times the sequences trained on and keeps the groups "
         "whose rewards differ; without it, the sequences trained on", "activation"),
    Term("context_block_tokens", "Tokens per sequence in whole KV blocks", "count",
         CEIL(V("context_tokens") / V("kv_page_tokens")) * V("kv_page_tokens"),
         "the context rounded up to whole blocks of kv_page_tokens: what a paged cache holds of it", "activation"),
    Term("kv_window_tokens", "Tokens a sliding-window layer keeps per sequence", "count",
         IF(V("sliding_window").eq(0), 0,
            IF(V("serving_engine").eq("sglang"), V("context_block_tokens"),
            IF(OR(V("engine_mode").eq(1), V("rollout_engine").eq(1)),
               (CEIL(MIN(V("sliding_window") - 1 + IF(V("engine_mode").eq(1), V("max_num_batched_tokens"),
                                                      V("prompt_len")), V("context_tokens"))
                     / V("kv_page_tokens")) + 1) * V("kv_page_tokens"),
               CEIL(MAX(V("prompt_len"), MIN(V("context_tokens"), V("sliding_window"))) / V("kv_page_tokens"))
               * V("kv_page_tokens")))),
         "vLLM (SlidingWindowSpec): the window less one token plus a step's new tokens (max_num_batched_tokens; "
         "a rollout engine's step is a prompt), in whole blocks and one more, never beyond the context: what it "
         "reserves per request; generate() (transformers' DynamicCache): the window, but the whole prompt after "
         "the prefill, whose cache keeps a view of the full keys and values until the next token (the oracle "
         "measures it), in blocks as the full layers; SGLang's separate window pool is not modelled: its sliding layers count as full ones",
         "activation"),
    Term("state_seq_elements", "Mamba-2 states per sequence, in KV-cache values", "count",
         IF(V("mamba_state_bytes").eq(0), 0,
            IF(V("serving_engine").eq("vllm"),
               _m("vllm_mamba_page_layers") * V("kv_page_tokens")
               * V("kv_elements_per_token") / _m("num_attention_layers"),
               V("mamba_state_bytes") * V("kv_shards") * 8 / Lookup("Dtypes", "bits", V("kv_dtype")))),
         "what a sequence's Mamba-2 states take of the cache, counted in its units: vLLM gives each Mamba-2 layer "
         "one block (its layers in whole KV cache groups); SGLang and transformers their exact bytes",
         "activation"),
    Term("kv_seq_elements", "KV-cache values per sequence (whole blocks)", "count",
         V("context_block_tokens")
         * (V("kv_elements_per_token") - V("kv_window_elements_per_token"))
         + V("kv_window_tokens") * V("kv_window_elements_per_token") + V("state_seq_elements"),
         "full-attention layers hold the whole context, sliding-window layers kv_window_tokens, a hybrid model's "
         "Mamba-2 layers their states", "activation"),
    Term("kv_seq_bytes", "KV cache per sequence, per GPU", "bytes",
         V("kv_seq_elements") * Lookup("Dtypes", "bits", V("kv_dtype")) / 8 / V("kv_shards"), "", "activation"),
    Term("rollout_batch", "Sequences generated at once", "count",
         IF(V("rollout_engine").eq(1),
            MAX(1, MIN(V("generated_sequences"), FLOOR(V("rollout_pool_bytes") / V("kv_seq_bytes")))),
            V("batch_size")),
         "a rollout engine takes the iteration's sequences together, as many as its pool holds at their full "
         "length (the rest wait for the next round); generate() takes one micro-batch at a time; a served model "
         "its batch", "activation"),
    Term("kv_cache", "KV cache", "bytes",
         IF(OR(V("workload").eq("inference"), AND(V("gen_len").gt(0), V("workload").ne("frozen"))),
            ceil_div(V("rollout_batch") * V("kv_seq_elements") * Lookup("Dtypes", "bits", V("kv_dtype")) / 8,
                     V("kv_shards")), 0),
         "2 (K and V) × layers × KV heads × head_dim × bytes × tokens × sequences, rounded up to whole "
         "blocks (vLLM, Kwon et al. 2023); GQA/MQA through the KV heads, MLA through the latent, sliding-window "
         "layers through kv_window_tokens; in training only a role that generates (the RLHF actor) holds one",
         "activation"),
    Term("forward_tokens", "Tokens in one forward pass", "count",
         V("rollout_batch") * IF(V("workload").eq("frozen"), V("seq_len"), V("prompt_len")), "", "activation"),
    Term("forward_length", "Sequence length of that pass", "count",
         IF(V("workload").eq("frozen"), V("seq_len"), V("prompt_len")), "", "activation"),
    Term("moe_forward_transient_bytes", "MoE layer's forward working set (prefill)", "bytes",
         IF(V("num_experts").gt(0),
            V("forward_tokens") * (4 * V("act_bytes") * V("hidden_size")
                                   + MAX(IF(_m("shared_expert_intermediate_size").gt(0),
                                            V("act_bytes") * (3 * _m("shared_expert_intermediate_size")
                                                              + V("hidden_size")), 0),
                                         V("act_bytes") * V("num_experts") + _m("num_experts_per_tok") * (8 + V("routing_weight_bytes"))
                                         + IF(_m("shared_expert_intermediate_size").gt(0),
                                              V("act_bytes") * V("hidden_size"), 0)
                                         + IF(V("experts_implementation").eq("grouped_mm"),
                                              _m("num_experts_per_tok")
                                              * (MAX(V("act_bytes") * (V("hidden_size") + 4 * _m("moe_intermediate_size")),
                                                     2 * V("hidden_size") * (V("act_bytes") + V("routing_weight_bytes")))
                                                 + 24),
                                              V("act_bytes") * (2 * V("hidden_size") + 2 * _m("moe_intermediate_size"))
                                              + MAX(2 * V("act_bytes") * _m("moe_intermediate_size"),
                                                    V("act_bytes") * (_m("moe_intermediate_size") + V("hidden_size")),
                                                    (V("act_bytes") + V("routing_weight_bytes")) * V("hidden_size"))
                                              + 8 * _m("num_experts_per_tok") * (V("num_experts") + 1)))), 0),
         "per token: the residual stream around the MLP (the embedding output, the layer's input, the attention "
         "sum and its norm), then the larger of two stages. The shared expert's MLP (its activated gate, up and "
         "product) beside the other branch's output; or the routed experts beside the shared expert's output and "
         "the router's logits, top-k indices (int64) and weights. grouped_mm (transformers' default) holds every "
         "(token, expert) pair at once: the gathered input, the gate/up output, its activation and product, or at "
         "the combine the expert output and its weighted and reordered copies (in the weights' dtype), plus three "
         "int64 sort indices. eager (its per-expert loop) holds one expert's tokens at a time, counted at the worst "
         "case a dropless router allows, every token to one expert: its gathered input, gate/up output and the "
         "largest of the activation and product, the down projection, or the weighted output and its cast; beside "
         "the zeroed output and the int64 one-hot expert mask. Derived from transformers 5.24's "
         "integrations/moe.py and the models' experts loops; checked on the oracle prefills of both "
         "implementations (oracle_arch.json 'moe_experts': Mixtral- and Qwen3-MoE-shaped fit, Qwen2-MoE held "
         "out)", "activation"),
    Term("forward_transient_bytes", "Forward working set (largest of MLP, attention scores, logits)", "bytes",
         ceil_div(MAX(IF(V("num_experts").gt(0),
                         MAX(4 * V("act_bytes") * V("forward_tokens") * _m("intermediate_size"),
                             V("moe_forward_transient_bytes")),
                         4 * V("act_bytes") * V("forward_tokens") * V("mlp_width")),
                      IF(V("attention").eq("eager"),
                         (4 * V("softmax_fp32") + (2 + V("softmax_fp32")) * V("act_bytes")) * V("num_heads")
                         * V("forward_tokens") * V("forward_length")
                         + V("forward_tokens") * (V("forward_length") + V("act_bytes")
                                                  * (V("q_dim") + 2 * V("kv_dim") + 2 * V("hidden_size")
                                                     + IF(V("kv_dim").lt(V("q_dim")), 2 * V("q_dim"), 0))), 0),
                      V("rollout_batch") * V("vocab_out")
                      * IF(V("workload").eq("frozen"), V("forward_length") * (V("act_bytes") + 4),
                           IF(V("logits").eq("all"), V("prompt_len"), 1) * V("act_bytes"))), V("tp_size")),
         "prefill: gated-MLP intermediates (MoE: the dense layers' and moe_forward_transient_bytes), eager S × S scores, or the logits (scoring keeps fp32 log-probs "
         "for every position); eager: per head and S × S element the matmul output and its masked copy, plus the "
         "fp32 softmax and its cast where the model upcasts, and per token Q, K, V, the K/V repeated to every head "
         "under GQA, the residual stream, its norm and the bool mask (from oracle prefills of Llama-3.2-1B and "
         "GPT-2, oracle_arch.json 'eager_prefill'); " + _MEASURED, "activation"),
    # ---- serving engines: a pre-allocated KV block pool (vLLM, SGLang) -----------------------------
    Term("engine_activation_bytes", "Engine activation profile", "bytes",
         IF(V("engine_mode").eq(1),
            MAX(ceil_div(V("max_num_batched_tokens") * (V("engine_profile_mlp_tensors") * V("mlp_width")
                                                         + V("engine_profile_hidden_tensors") * V("hidden_size"))
                         * V("act_bytes"), V("tp_size")),
                V("max_num_batched_tokens") * V("hidden_size") * V("act_bytes")
                + CEIL(V("batch_size") * V("vocab_out") * IF(V("engine_sampler").eq("sort"), V("sampler_sort_bytes"),
                                                                 V("sampler_fused_bytes")))), 0),
         "the larger of the profiling forward over max_num_batched_tokens (gate/up and activated MLP intermediates, "
         "the layer's input, its norm and its output: 111 KB per token for Llama-3.1-8B, pub-srv-013) and the "
         "sampler run after it over max_num_seqs × the vocabulary, beside the forward's hidden states: "
         "sampler_fused_bytes per element with fused kernels, sampler_sort_bytes with the sort-based fallback "
         "(assumptions fitted to published logs); the forward's temporaries are "
         "freed before the sampler runs, so vLLM's 'torch peak memory increase' is one or the other", "activation"),
    Term("engine_non_torch_bytes", "Engine memory outside PyTorch", "bytes",
         IF(V("engine_mode").eq(1), V("engine_non_torch_mib") * MiB
            + IF(V("tp_size").gt(1), V("engine_tp_non_torch_mib") * MiB * V("tp_size"), 0), 0),
         "counted inside the engine's budget: workspaces, and at TP > 1 the NCCL channel buffers of the profiling "
         "forward's all-reduces; its NVLS buffers are engine_nvls_bytes", "activation"),
    Term("engine_nvls_bytes", "NCCL NVLS buffers inside the engine's budget", "bytes",
         IF(AND(V("engine_mode").eq(1), V("tp_size").gt(2), _g("nvls").eq(1)),
            V("nvls_rank_mib") * MiB * V("tp_size"), 0),
         "on an NVSwitch with NVLink SHARP (GPUs sheet nvls) NCCL enables NVLS for more than 2 GPUs and allocates "
         "its buffers on each of them (vllm-project/vllm#9699: fewer GPU blocks with NVLS on than with "
         "NCCL_NVLS_ENABLE=0); vLLM counts them as memory outside PyTorch, SGLang finds them in use after loading",
         "activation"),
    Term("engine_needed_bytes", "What the engine's budget holds besides the pool", "bytes",
         IF(V("engine_mode").eq(1),
            V("weights") + V("engine_nvls_bytes")
            + IF(V("serving_engine").eq("sglang"), V("cuda_context_mib") * MiB,
                 V("engine_activation_bytes") + V("engine_non_torch_bytes")), 0),
         "vLLM: weights, activation profile, memory outside PyTorch (NVLS buffers included); SGLang: weights and "
         "the memory in use before it loaded them (the CUDA context, NVLS buffers), its activations outside the "
         "fraction", "activation"),
    Term("kv_pool_bytes", "KV block pool", "bytes",
         IF(V("engine_mode").eq(1), MAX(0, V("engine_budget_bytes") - V("engine_needed_bytes")), V("rollout_pool_bytes")),
         "the budget less what it holds besides the pool (a rollout engine: rollout_pool_bytes)", "activation"),
    Term("kv_pool_tokens", "Tokens the pool holds", "count",
         IF(V("engine_mode").eq(1),
            FLOOR(V("kv_pool_bytes") / (V("kv_bytes_per_token") * V("kv_page_tokens"))) * V("kv_page_tokens"), 0),
         "whole blocks of kv_block_tokens (vLLM: '# GPU blocks' × block size)", "activation"),
    Term("kv_blocks", "KV blocks in the pool", "count", V("kv_pool_tokens") / V("kv_page_tokens"),
         "vLLM: '# GPU blocks'", "activation"),
    Term("kv_logged_tokens", "KV cache size as vLLM logs it", "count",
         IF(V("serving_engine").eq("vllm"), FLOOR(V("kv_blocks") / _m("vllm_kv_groups")) * V("kv_page_tokens"),
            V("kv_pool_tokens")),
         "vLLM's 'GPU KV cache size: N tokens': its blocks over its KV cache groups, times the block; for a hybrid "
         "model the pool's blocks shared by the attention and Mamba-2 groups (Nemotron-3-Nano-30B-A3B: a fifth of "
         "kv_pool_tokens), otherwise kv_pool_tokens", "activation"),
    Term("max_concurrency", "Sequences the pool holds at this context", "count",
         IF(V("engine_mode").eq(1),
            V("kv_blocks") * V("kv_page_tokens") * V("kv_elements_per_token") / V("kv_seq_elements"), 0),
         "vLLM: 'Maximum concurrency for N tokens per request': the pool's blocks over the blocks one request "
         "takes in every layer", "activation"),
    Term("max_context_tokens", "Context each sequence may have at this concurrency", "count",
         IF(V("engine_mode").eq(1),
            IF(_m("max_positions").gt(0), MIN(_POOL_SHARE_TOKENS, _m("max_positions")), _POOL_SHARE_TOKENS), 0),
         "the pool's tokens shared by the batch, less what each sequence's Mamba-2 states take, and no more than the "
         "model's positions", "activation"),
    Term("kv_fits", "The pool holds every sequence (1/0)", "flag",
         IF(OR(V("engine_mode").eq(1), V("rollout_engine").eq(1)), IF(V("kv_cache").le(V("kv_pool_bytes")), 1, 0), 1),
         "a rollout engine's pool must hold one whole sequence at least (it runs the rest in later rounds)",
         "activation"),
    Term("engine_reserves", "The memory is an engine's budget, taken at start-up (1/0)", "flag",
         IF(OR(V("engine_mode").eq(1), V("workload").eq(ROLLOUT)), 1, 0),
         "a serving engine, or a rollout engine on GPUs of its own: its budget is allocated at once and its margin "
         "is what it leaves outside gpu_memory_utilization", "activation"),
    Term("engine_device_total", "Engine device total", "bytes",
         IF(V("engine_reserves").eq(1),
            V("driver_reserved_mib") * MiB + MAX(V("engine_budget_bytes"), V("engine_needed_bytes"))
            + V("cuda_graph_mib") * MiB
            + IF(V("num_gpus").gt(1), V("comm_buffer_mib") * MiB, 0)
            + IF(V("serving_engine").eq("sglang"), V("engine_activation_bytes"), 0), 0),
         "what nvidia-smi shows for the engine: the hidden memory, its budget (or, where its weights and profile "
         "pass the budget and it cannot start, what they need), the CUDA graphs and, across GPUs, the "
         "communication buffers", "activation"),
    # ---- phases and peak ----------------------------------------------------------------------
    Term("activations", "Activations at the peak phase", "bytes",
         IF(V("is_train").eq(1), V("training_activations"),
            IF(V("engine_mode").eq(1), V("engine_activation_bytes"),
               IF(V("workload").eq(ROLLOUT), 0, V("forward_transient_bytes")))),
         "an engine's are its profile (it never prefills every prompt at once); a rollout engine's are inside its "
         "budget", "phase"),
    Term("model_states", "Resident model states", "bytes",
         V("weights") + V("master_weights") + V("optimizer_states") + V("persistent_gradients") + V("ddp_bucket_bytes")
         + V("zero3_buffer") + V("pp_recv_buffer_bytes"),
         "what stays allocated between steps (a torch pipeline's receive buffers too)", "phase"),
    Term("awake_engine_bytes", "Rollout engine kept awake while the actor trains", "bytes",
         IF(AND(V("rollout_engine").eq(1), V("is_train").eq(1), V("engine_sleep").eq("none")),
            V("engine_budget_bytes"), 0),
         "an engine beside the actor that does not sleep (engine_sleep none: TRL's colocate mode without "
         "vllm_enable_sleep_mode, veRL with free_cache_engine off) keeps its whole budget, weights and KV pool, "
         "through every training phase; asleep (offload, discard) it frees both", "phase"),
    Term("backward_start_bytes", "Temporaries when backward starts", "bytes",
         MAX(V("loss_backward_bytes") + V("framework_backward_start_bytes"),
             IF(V("fsdp_layer_backward").eq(1), 0, V("framework_backward_bytes")), V("layer_backward_bytes"))
         + V("pp_kept_logits_bytes"),
         "the loss's logit gradients, or, where the training framework shards the gradients, the first decoder "
         "layers' backward if larger: the last layer's gradients in the reduce-scatter, the next layer gathered (one "
         "rank of FSDP2 on a fake process group: tools/oracle/measure_fsdp2.py; FSDP2 without a rebuilt layer "
         "peaks a layer later, phase_fsdp_layer_backward); or the last decoder layer's backward working set, "
         "beside every saved activation, where it exceeds the loss's (a small vocabulary: tools/oracle/"
         "measure_tp.py); a torch pipeline's last stage keeps its logits", "phase"),
    Term("fsdp_layer_backward_activations", "Activations in FSDP2's busiest decoder layer's backward", "bytes",
         IF(V("fsdp_layer_backward").eq(1),
            (V("num_layers") - V("fsdp_busiest_layer")) * V("layer_kept_bytes")
            + V("rebuilt_layer_input_bytes") + V("layer_saved_bytes")
            + V("autocast_copies_bytes"), 0),
         "the saved tensors of the layers before it, and its own, rebuilt whole under full or per-op checkpointing "
         "beside the input the checkpoint kept (the layers behind it and the head have freed theirs)",
         "activation"),
    Term("phase_fsdp_layer_backward", "Phase: FSDP2's busiest decoder layer in backward", "bytes",
         _training_phase(V("fsdp_layer_backward").eq(1), V("fsdp_layer_backward_gradients"),
                         V("fsdp_layer_backward_activations"), V("fsdp_layer_backward_bytes")),
         "the shards of the layers behind it, the activations of those before it (their inputs under full "
         "checkpointing, and its own rebuilt), FSDP2's buffers and the layer's working set (one rank of FSDP2 on a "
         "fake process group: tools/oracle/measure_fsdp2.py)", "phase"),
    Term("phase_backward_start", "Phase: start of backward", "bytes",
         V("model_states") + V("accumulated_gradients") + V("training_activations") + V("backward_start_bytes")
         + V("awake_engine_bytes"),
         "all activations saved, logit gradients allocated, no gradients yet but a persistent buffer and those of "
         "earlier micro-batches; the training framework's backward buffers (and an awake rollout engine beside "
         "them, as in every training phase)", "phase"),
    Term("backward_end_layer_bytes", "The first decoder layer's backward, beside every gradient", "bytes",
         IF(V("rebuilt_layer_by_parts").eq(1),
            V("recompute_bytes") + V("layer_kept_bytes")
            - IF(AND(V("layer_gradients_whole").eq(1), V("layer_gradients_in_place").eq(0)),
                 V("layer_weight_gradient_bytes"), 0),
            V("recompute_bytes")),
         "the first decoder layer, the last that backward rebuilds, beside the tensors it kept, less its own "
         "gradients where every gradient counts them already", "activation"),
    Term("backward_end_bytes", "Temporaries at the end of backward", "bytes",
         MAX(MAX(V("embedding_backward_bytes"), IF(V("fsdp_layer_backward").eq(1), 0, V("backward_end_layer_bytes")))
             + V("framework_backward_bytes")
             + V("zero3_buffer") - V("fsdp_backward_unmade_bytes"),
             V("fsdp_root_reduce_bytes"), V("fsdp_tied_embedding_bytes")),
         "the last layers' backward (the embedding's gradient buffer or a recomputed layer, the training "
         "framework's backward buffers, the gathered units; FSDP2's rebuilt layer is phase_fsdp_layer_backward's but "
         "under per-op checkpointing); or FSDP2's tied embedding's gradients; or, later, "
         "FSDP2's root unit reduced with every unit resharded (torchtitan's whole-vocabulary embedding gradient freed "
         "by then, its slice kept)", "phase"),
    Term("phase_backward_end", "Phase: end of backward", "bytes",
         V("model_states") - V("zero3_buffer") + MAX(V("transient_gradients"), V("accumulated_gradients"))
         + V("backward_end_bytes") + V("awake_engine_bytes"),
         "all gradients (unsharded while LitGPT's FSDP accumulates), activations freed, the end of backward's "
         "temporaries (the gathered buffers among them)", "phase"),
    Term("phase_recompute_start", "Phase: first recomputed layer", "bytes",
         IF(AND(V("recompute_start_activations").gt(0), V("fsdp_layer_backward").eq(0)),
            V("model_states") + V("accumulated_gradients") + V("recompute_start_activations")
            + V("recompute_bytes") + V("framework_backward_bytes") + V("awake_engine_bytes"), 0),
         "full checkpointing: the last layer rebuilt and its backward running beside every layer's saved input; "
         "the peak when the layers' inputs outweigh the loss's logit gradients and the gradients are small "
         "(LoRA, sharded states); FSDP2's layers are phase_fsdp_layer_backward's", "phase"),
    Term("phase_forward_end", "Phase: end of forward (the loss)", "bytes",
         _training_phase(V("is_train").eq(1), V("accumulated_gradients"), V("training_activations"),
                         V("forward_end_bytes")),
         "activations saved, the loss computing, autocast's whole weight cache; the peak when earlier micro-batches' "
         "gradients are resident and checkpointing keeps the activations small", "phase"),
    Term("phase_pipeline_first_stage", "Phase: the first pipeline stage's backward", "bytes",
         _training_phase(V("pp_microbatch_bytes").gt(0), V("pp_first_stage_gradients"),
                         V("pp_first_stage_activations"), V("pp_first_stage_backward_bytes")),
         "the stage with the embedding and the most micro-batches in flight, backpropagating one of them: the "
         "others' activations (and, in a torch pipeline, every one's output) beside it; the other phases are the "
         "last stage's, with the loss (one stage of torch's pipeline on a fake process group: "
         "tools/oracle/measure_pp.py)", "phase"),
    Term("phase_pipeline_middle_stage", "Phase: a middle pipeline stage's backward", "bytes",
         IF(V("pp_middle_stage").eq(1),
            V("pp_middle_weights") + V("pp_middle_master_weights") + V("pp_middle_optimizer_states")
            + V("pp_middle_stage_all_gradients") + V("pp_middle_stage_activations") + V("pp_middle_stage_temporaries")
            + V("awake_engine_bytes"), 0),
         "the second stage of a torch pipeline, backpropagating a micro-batch: its layers' states, the receive "
         "buffers of both directions, the other micro-batches in flight; the busiest stage when the micro-batches "
         "are many (one stage of torch's pipeline on a fake process group: tools/oracle/measure_pp.py)", "phase"),
    Term("phase_optimizer_step", "Phase: optimizer step", "bytes",
         V("model_states") + V("transient_gradients") + V("optimizer_step_bytes") + V("framework_step_bytes")
         + V("awake_engine_bytes"), "", "phase"),
    Term("phase_forward", "Phase: forward / generation", "bytes",
         V("model_states") + IF(V("engine_mode").eq(1), V("kv_pool_bytes") + V("engine_activation_bytes"),
                                V("kv_cache") + V("forward_transient_bytes")),
         "an engine holds its whole pool and its activation workspace", "phase"),
    Term("generation_phase", "Generation phase, if this role generates", "bytes",
         IF(V("gen_len").gt(0), IF(V("rollout_engine").eq(1), V("model_states") + V("engine_budget_bytes"),
                                   V("phase_forward")), 0),
         "an RLHF actor also generates rollouts: with generate() its cache and forward beside its states, with "
         "an engine the engine's whole budget beside them", "phase"),
    Term("allocated_peak", "Allocated peak", "bytes",
         IF(V("is_train").eq(1),
            MAX(V("phase_backward_start"), V("phase_backward_end"), V("phase_optimizer_step"), V("generation_phase"),
                V("phase_forward_end"), V("phase_recompute_start"), V("phase_pipeline_first_stage"),
                V("phase_pipeline_middle_stage"), V("phase_fsdp_layer_backward")),
            IF(V("workload").eq(ROLLOUT), V("generation_phase"), V("phase_forward"))),
         "largest phase, not the sum of every term: what torch.cuda.max_memory_allocated reports (a rollout "
         "engine on GPUs of its own: its budget)", "total"),
    Term("peak_phase", "Peak phase (1 backward start, 2 backward end, 3 optimizer step, 4 forward, 5 end of "
         "forward, 6 first recomputed layer, 7 the first pipeline stage's backward, 8 a middle stage's, 9 FSDP2's "
         "busiest decoder layer in backward)", "count",
         IF(V("is_train").eq(0), 4,
            IF(V("phase_backward_start").eq(V("allocated_peak")), 1,
               IF(V("phase_recompute_start").eq(V("allocated_peak")), 6,
                  IF(V("phase_backward_end").eq(V("allocated_peak")), 2,
                     IF(V("phase_optimizer_step").eq(V("allocated_peak")), 3,
                        IF(V("phase_forward_end").eq(V("allocated_peak")), 5,
                           IF(V("generation_phase").eq(V("allocated_peak")), 4,
                              IF(V("phase_pipeline_first_stage").eq(V("allocated_peak")), 7,
                                 IF(V("phase_fsdp_layer_backward").eq(V("allocated_peak")), 9, 8))))))))),
         "the first phase, in this order, that reaches the peak", "phase"),
    # The busiest GPU's states: a middle pipeline stage's (its layers alone) where it peaks, else the busiest stage's.
    Term("resident_weights", "Weights at the peak", "bytes",
         IF(V("peak_phase").eq(8), V("pp_middle_weights"), V("weights")), "", "phase"),
    Term("resident_master_weights", "fp32 master weights at the peak", "bytes",
         IF(V("peak_phase").eq(8), V("pp_middle_master_weights"), V("master_weights")), "", "phase"),
    Term("resident_optimizer_states", "Optimizer states at the peak", "bytes",
         IF(V("peak_phase").eq(8), V("pp_middle_optimizer_states"), V("optimizer_states")), "", "phase"),
    Term("resident_gradients", "Gradients at the peak", "bytes",
         IF(V("peak_phase").eq(8), V("pp_middle_stage_all_gradients"),
            V("persistent_gradients") + V("ddp_bucket_bytes")
            + IF(OR(V("peak_phase").eq(1), V("peak_phase").eq(5), V("peak_phase").eq(6)), V("accumulated_gradients"),
                 IF(V("peak_phase").eq(2), MAX(V("transient_gradients"), V("accumulated_gradients")),
                    IF(V("peak_phase").eq(3), V("transient_gradients"),
                       IF(V("peak_phase").eq(7), V("pp_first_stage_gradients"),
                          IF(V("peak_phase").eq(9), V("fsdp_layer_backward_gradients"), 0)))))),
         "", "phase"),
    Term("resident_activations", "Activations at the peak", "bytes",
         IF(OR(V("peak_phase").eq(1), V("peak_phase").eq(5)), V("training_activations"),
            IF(V("peak_phase").eq(6), V("recompute_start_activations"),
               IF(V("peak_phase").eq(7), V("pp_first_stage_activations"),
                  IF(V("peak_phase").eq(8), V("pp_middle_stage_activations"),
                     IF(V("peak_phase").eq(9), V("fsdp_layer_backward_activations"),
                        IF(AND(V("peak_phase").eq(4), V("rollout_engine").eq(0)),
                           IF(V("engine_mode").eq(1), V("engine_activation_bytes"), V("forward_transient_bytes")),
                           0)))))),
         "", "phase"),
    Term("resident_kv_cache", "KV cache at the peak", "bytes",
         IF(AND(V("peak_phase").eq(4), V("rollout_engine").eq(0)),
            IF(V("engine_mode").eq(1), V("kv_pool_bytes"), V("kv_cache")), 0), "", "phase"),
    Term("resident_engine", "Rollout engine at the peak", "bytes",
         IF(AND(V("peak_phase").eq(4), V("rollout_engine").eq(1)), V("engine_budget_bytes"), V("awake_engine_bytes")),
         "while a rollout engine generates, its whole budget: its copy of the weights and its KV pool; in a training "
         "phase, an engine that stays awake", "phase"),
    Term("temporaries", "Temporaries at the peak", "bytes",
         IF(V("peak_phase").eq(8), V("pp_middle_stage_temporaries"),
         V("zero3_buffer") + V("pp_recv_buffer_bytes") + IF(V("peak_phase").eq(1), V("backward_start_bytes"),
                                # the end of backward counts its own gathered buffers
                                IF(V("peak_phase").eq(2), V("backward_end_bytes") - V("zero3_buffer"),
                                   IF(V("peak_phase").eq(6), V("recompute_bytes") + V("framework_backward_bytes"),
                                      IF(V("peak_phase").eq(3), V("optimizer_step_bytes") + V("framework_step_bytes"),
                                         IF(V("peak_phase").eq(5), V("forward_end_bytes"),
                                            IF(V("peak_phase").eq(7), V("pp_first_stage_backward_bytes"),
                                               IF(V("peak_phase").eq(9), V("fsdp_layer_backward_bytes"), 0)))))))),
         "logit gradients, embedding-gradient buffer, recomputed layer, optimizer temporary, ZeRO-3 buffer, "
         "framework and pipeline buffers; at the end of forward the loss's logits and autocast's weight cache; a "
         "pipeline stage's micro-batch in backward", "phase"),
    # Transformer Engine's initialize_ub (Megatron-Core's --tp-comm-overlap): a buffer per overlapped GEMM of the
    # layer, each of the micro-batch's tokens ÷ cp × hidden, registered outside PyTorch's allocator; the all-gathers'
    # hold FP8 bytes where the linear layers run in FP8 (TE's layers_all_gather_overlap, fp8_buf).
    Term("tp_overlap_buffer_bytes", "Userbuffers of the TP communication overlap", "bytes",
         IF(AND(V("tp_overlap").eq("on"), V("framework").eq("megatron"), V("tp_size").gt(1)),
            V("tokens") * V("hidden_size")
            * (UB_REDUCE_SCATTER_BUFFERS * V("act_bytes")
               + UB_ALL_GATHER_BUFFERS * IF(V("fp8_gemms").eq(1), 1, V("act_bytes"))), 0),
         "tp_overlap on under megatron: Transformer Engine's userbuffers, ten communication buffers (four "
         "reduce-scatters' in the compute dtype, six all-gathers' in FP8 where the linear layers run in it, else "
         "the compute dtype) "
         "of the micro-batch's tokens on the GPU × hidden, beside PyTorch's allocator (torchtitan's async TP "
         "keeps its symmetric-memory buffers in it: not counted apart)", "total"),
)

# Shared by a single model and by an RLHF group: from the allocated peak to what to buy.
TOTAL_TERMS: tuple[Term, ...] = (
    Term("reserved_peak", "Reserved peak", "bytes",
         IF(V("engine_reserves").eq(1), V("allocated_peak"),
            CEIL(V("allocated_peak") * (1 + V("fragmentation_fraction")))),
         "allocated + caching-allocator fragmentation: max_memory_reserved (an engine allocates its pool at once)",
         "total"),
    Term("device_total", "Device total", "bytes",
         IF(V("engine_reserves").eq(1), V("engine_device_total"),
            V("reserved_peak") + V("cuda_context_mib") * MiB + IF(V("num_gpus").gt(1), V("comm_buffer_mib") * MiB, 0)
            + V("tp_overlap_buffer_bytes")),
         "reserved + CUDA context + communication buffers (and the TP overlap's userbuffers): what nvidia-smi "
         "shows", "total"),
    Term("allocator_reserve_bytes", "Allocator reserve", "bytes", V("reserved_peak") - V("allocated_peak"),
         "reserved − allocated: the caching allocator's blocks held past the tensors in use", "total"),
    Term("context_comm_bytes", "CUDA context + communication buffers", "bytes", V("device_total") - V("reserved_peak"),
         "device total − reserved (an engine: what it holds past its profiled peak)", "total"),
    Term("recommended", "Recommended budget", "bytes",
         IF(V("engine_reserves").eq(1), V("device_total"), CEIL(V("device_total") * V("safety_factor"))),
         "k × device total (k editable; 1.2–1.3 in the source material); an engine's own margin is the memory "
         "it leaves outside gpu_memory_utilization", "total"),
    # ---- fit and cost -------------------------------------------------------------------------
    Term("gpu_memory_bytes", "GPU memory (nvidia-smi total)", "bytes", _g("memory_mib") * MiB, "GPUs sheet", "fit"),
    Term("host_ram_fits", "What a node keeps in host RAM fits it (1/0)", "flag",
         IF(V("node_host_bytes").le(V("host_ram_per_node_gib") * GiB), 1, 0), "", "fit"),
    Term("fits", "Fits (1/0)", "flag",
         IF(AND(V("device_total").le(V("gpu_memory_bytes")), V("kv_fits").eq(1), V("host_ram_fits").eq(1)), 1, 0),
         "engines: the KV pool must also hold every sequence's cache; offload: the host RAM the states", "fit"),
    Term("headroom_bytes", "Headroom", "bytes", V("gpu_memory_bytes") - V("device_total"), "", "fit"),
    Term("fits_recommended", "Fits with safety factor (1/0)", "flag",
         IF(AND(V("recommended").le(V("gpu_memory_bytes")), V("kv_fits").eq(1), V("host_ram_fits").eq(1)), 1, 0),
         "", "fit"),
    Term("fit_limit", "What keeps it from fitting with k (0 nothing, 1 weights, 2 budget, 3 KV pool, 4 host RAM, "
         "5 an engine's weights past its budget)", "count",
         IF(V("fits_recommended").eq(1), 0,
            IF(V("weights").gt(V("gpu_memory_bytes")), 1,
               IF(AND(V("engine_mode").eq(1), V("weights").gt(V("engine_budget_bytes"))), 5,
                  IF(V("recommended").gt(V("gpu_memory_bytes")), 2, IF(V("kv_fits").eq(0), 3, 4))))),
         "the first that binds: the weights alone, a serving engine's weights past its budget (its share of the GPU: "
         "vLLM does not start, 'No available memory for the cache blocks'), the recommended budget, a serving "
         "engine's KV pool against the sequences' cache, the host RAM of the offloaded states (and a sleeping rollout "
         "engine's weights)", "fit"),
    Term("purchase_usd", "Purchase cost (USD)", "usd", V("num_gpus") * _g("price_purchase_usd"), "GPUs sheet", "fit"),
    Term("hourly_usd", "Cloud cost per hour (USD)", "usd", V("num_gpus") * _g("price_per_hour_usd"), "GPUs sheet", "fit"),
)

_TRAIN = V("is_train").eq(1)
# Prefill and decode terms apply to a served model and to an RLHF actor generating its rollouts (or its engine
# on GPUs of its own).
_INFER = OR(V("workload").eq("inference"), AND(_ROLLS, V("gen_len").gt(0)))


def _keys_attended(length: Expr) -> Expr:
    """Keys one query of a causal sequence of `length` tokens attends to, on average, summed over the layers:
    length ÷ 2 in a full-attention layer; in a sliding-window layer the window once the sequence is longer
    (W − W² ÷ 2·length: the first W tokens see fewer)."""
    window = V("sliding_window")
    return ((_m("num_attention_layers") - V("sliding_layers")) * length / 2
            + V("sliding_layers") * IF(length.le(window), length / 2, window - window * window / (2 * length)))
_KAPLAN = "Kaplan et al. 2020 (arXiv:2001.08361) §2.1: 2N FLOPs per token forward, 4N backward"
_LINK = ("GPUs sheet: the NVLink/PCIe link inside a node; across nodes NCCL runs a collective over the rails of "
         "the group's GPUs in each node at once (one NIC per GPU), so the bus bandwidth is those GPUs' NICs (for a "
         "whole node 8 × 400 Gb/s H100: nccl-tests ~370-400 GB/s) capped by the link inside the node; every GPU of a "
         "node reduces at once, so a data-parallel group with tensor parallelism beside it has gpus_per_node ÷ tp "
         "GPUs and NICs in each node (one where TP fills the node)")


def _collective_bandwidth(span: Expr, in_node: Expr) -> Expr:
    """Bytes per second a collective over a group moves per GPU (bus bandwidth × efficiency): span, the ranks its
    members lie among; in_node, its members in one node when it spans several."""
    inside = _g("link_gbps")
    return IF(span.le(_g("gpus_per_node")), inside, MIN(inside, _g("inter_node_gbps") * in_node)) \
        * 1e9 * V("comm_efficiency")
TIME_TERMS: tuple[Term, ...] = (
    Term("peak_flops", "Dense peak of the compute dtype", "flop_per_s",
         IF(V("act_bytes").eq(4), _g("fp32_tflops"),
            IF(AND(_INFER, V("weight_dtype").eq("fp8"), _g("fp8_dense_tflops").gt(0)), _g("fp8_dense_tflops"),
               _g("bf16_dense_tflops"))) * 1e12,
         "GPUs sheet: FP32 for fp32 compute, FP8 tensor cores for fp8-weight inference where the GPU has them, "
         "else BF16/FP16 (dense, no sparsity); FP8 training's linear layers run at fp8_linear_time_ratio of "
         "this peak's time, the rest of it (attention, norms, the LM head) in 16-bit", "time"),
    Term("fp8_linear_time_ratio", "An FP8 training linear-layer FLOP's time over a 16-bit one's", "ratio",
         IF(V("fp8_gemms").eq(1), V("peak_flops") * _g("train_efficiency")
            / (MAX(_g("fp8_dense_tflops") * _g("fp8_train_efficiency"), 1e-9) * 1e12), 1),
         "GPUs sheet: the BF16 peak × train_efficiency over the FP8 peak × fp8_train_efficiency (on Hopper read "
         "from torchao's FP8 training speedup, its casts counted apart: fp8_cast_seconds); 1 without FP8 linears",
         "time"),
    Term("attention_kernel_efficiency", "Attention kernels' fraction of the peak", "ratio",
         IF(V("attention").eq("fused"), _g("fused_attention_efficiency"), _g("attention_efficiency")),
         "GPUs sheet: FlashAttention's (flash, and eager's attention matmuls), fitted to published runs; a "
         "Hopper-native fused kernel's (fused: cuDNN's through Transformer Engine, FlashAttention-3), read from the "
         "FlashAttention-3 paper's H100 benchmarks", "time"),
    # ---- training ------------------------------------------------------------------------------
    Term("attention_length", "Tokens of the sequence attention runs over", "count",
         IF(OR(_TRAIN, V("workload").eq("frozen")), V("seq_len"), V("context_tokens")),
         "a trained or scored sequence; a generated one's prompt and response", "time"),
    Term("attention_flops_per_token", "Attention-score FLOPs per token (forward)", "flops",
         4 * V("q_dim") * _keys_attended(V("attention_length")),
         "the Q·K scores and their product with V over a causal context: 2 × 2 × q_dim × S/2 per layer (what "
         "FlashAttention executes); a sliding-window layer's queries see the window at most", "time"),
    Term("weight_flops_per_token", "Training FLOPs a weight costs each token", "flops",
         IF(V("is_full").eq(1), 6, 4),
         "2 forward, 2 for the input's gradient, and 2 for the weight's own gradient where it is trained (a frozen "
         "weight, LoRA's: 4)", "time"),
    Term("train_flops_per_token", "Training FLOPs per token", "flops",
         V("weight_flops_per_token") * V("active_params") + 6 * V("adapter_params") + 2 * V("saved_module_params")
         + 3 * V("attention_flops_per_token"),
         _KAPLAN + "; frozen weights (LoRA) need the backward for activations only (4N), adapters 6 per "
         "parameter, saved modules 2 (their weight gradients); attention: forward + twice for backward", "time"),
    Term("routed_active_params", "Routed-expert parameters a token passes through", "count",
         _m("expert_params") - _m("inactive_expert_params"), "its top-k of the routed experts", "time"),
    Term("attention_recomputed", "The attention scores computed again in backward (1/0)", "flag",
         IF(OR(_recomputing("full", "core_attn"), AND(V("checkpointing").eq("op"), V("attention").eq("eager"))), 1, 0),
         "full and selective checkpointing (Megatron's module lists without core_attn leave it); per-op checkpointing "
         "keeps the attention kernel's output, but eager attention's matrix multiplications (bmm) are not the ones it "
         "keeps", "time"),
    Term("recompute_flops_per_token", "Recomputed FLOPs per token (checkpointing)", "flops",
         IF(V("checkpointing").eq("full"), 2 * V("active_params"),
            IF(V("checkpointing").eq("op"), 2 * V("num_layers") * _op_checkpoint_linears("recomputed"), 0)
            + 2 * (V("moe_module_recomputed")
                 * (V("routed_active_params")
                    + _m("num_moe_layers") * V("hidden_size")
                    * ((2 + V("gated_mlp")) * _m("shared_expert_intermediate_size") + V("num_experts")))
                 + V("mla_up_proj_recomputed") * _m("num_attention_layers")
                 * (IF(_m("q_lora_rank").gt(0), _m("q_lora_rank"), V("hidden_size")) * V("q_dim")
                    + _m("kv_lora_rank") * (V("q_dim") - V("num_heads") * _m("qk_rope_head_dim")
                                            + _m("attn_out_dim")))
                 + V("dense_mlp_recomputed") * _m("num_dense_layers") * (2 + V("gated_mlp")) * V("hidden_size")
                 * _m("intermediate_size")))
         + V("attention_recomputed") * V("attention_flops_per_token"),
         "full: one more forward; selective: the attention scores only (Korthikanti et al. 2022); op (per-op): "
         "the matrix multiplications it does not keep, 2 FLOPs per weight; Megatron's 'moe' module: every MoE layer's forward (router, routed and shared experts); 'mla_up_proj': the query and "
         "key-value up-projections (the queries' projection from the hidden state without a query latent); 'mlp': "
         "the dense layers' MLPs", "time"),
    Term("train_attention_flops_per_token", "Attention-score FLOPs per token, executed in training", "flops",
         (3 + V("attention_recomputed")) * V("attention_flops_per_token"),
         "forward, backward (twice) and the recomputed forward under full or selective checkpointing", "time"),
    Term("micro_batch_peak_seconds", "A micro-batch's tokens, one FLOP each, at the GPU's peak", "seconds",
         V("tokens") / V("tp_size") / V("peak_flops"),
         "what a FLOP per token costs a micro-batch (tensor parallelism splits every layer): the compute time "
         "terms multiply it by FLOPs per token and divide by an efficiency", "time"),
    Term("forward_pass_peak_seconds", "A forward pass's tokens, one FLOP each, at the GPU's peak", "seconds",
         V("step_sequences") * V("seq_len") / V("tp_size") / V("peak_flops"),
         "the same over every sequence of the step (an RLHF role's scoring or log-probabilities)", "time"),
    Term("decode_bytes_per_s", "Memory bandwidth a decode step reaches", "bytes_per_s",
         _g("memory_bandwidth_gbps") * 1e9 * V("decode_bandwidth_efficiency"),
         "the GPU's memory bandwidth at the decode bandwidth efficiency: what reading weights or a KV cache gets",
         "time"),
    Term("expert_read_seconds", "The GPU's routed experts read once from memory", "seconds",
         IF(V("num_experts").gt(0), _m("expert_params") / V("expert_shards") * V("act_bytes")
            / V("decode_bytes_per_s"), 0),
         "a grouped GEMM reads each of its experts' weights at least once, however few tokens reach it; at the "
         "memory bandwidth a decode step reaches", "time"),
    Term("expert_compute_seconds", "Routed experts' matrix multiplications per micro-batch", "seconds",
         IF(AND(_TRAIN, V("num_experts").gt(0)),
            V("micro_batch_peak_seconds") / _g("train_efficiency") * V("fp8_linear_time_ratio")
            * (V("weight_flops_per_token") + 2 * V("moe_layer_recomputed"))
            * V("routed_active_params") * V("moe_imbalance"), 0),
         "the part of train_compute_seconds the routed experts take: each token's top-k experts, forward and "
         "backward (frozen experts: no weight gradient), and the recomputed forward (moe_layer_recomputed), in FP8 "
         "where the linear layers are; on the busiest expert-parallel GPU (moe_imbalance)",
         "time"),
    Term("expert_traffic_seconds", "Routed experts' weights through memory per micro-batch", "seconds",
         IF(_TRAIN, (2 + V("is_full") + V("moe_layer_recomputed")) * V("expert_read_seconds"), 0),
         "the forward and the backward's input gradient read the GPU's experts, a trained expert's weight gradient "
         "writes as much, a recomputed MoE layer reads them once more. Where fine-grained experts get few tokens per "
         "micro-batch (Qwen3-30B-A3B: 128 experts, top 8, 1,024 tokens give 64 each), this is longer than their "
         "FLOPs", "time"),
    Term("fp8_linear_flops_per_token", "Training FLOPs per token in FP8 linear layers", "flops",
         V("fp8_gemms") * MAX(0, V("train_flops_per_token") + V("recompute_flops_per_token")
                              - V("train_attention_flops_per_token")
                              - (V("weight_flops_per_token") + IF(V("checkpointing").eq("full"), 2, 0))
                              * (V("embedding_params") + V("lm_head_params"))
                              - 6 * V("adapter_params") - 2 * V("saved_module_params")),
         "the decoder layers' linear layers (the routed experts' too), forward, backward and recomputed: what is "
         "not attention, nor the embedding and LM head, which Transformer Engine and torchao leave in 16-bit, nor "
         "LoRA's adapters and saved modules (16-bit beside the frozen FP8 layers)",
         "time"),
    Term("fp8_cast_elements_per_token", "Elements one layer's FP8 linear layers cast per token", "count",
         V("fp8_gemms") * (2 * V("hidden_size") + 2 * V("q_dim") + 2 * V("kv_dim")
                           + 2 * V("hidden_size") * IF(V("num_experts").gt(0),
                                                       _m("num_experts_per_tok")
                                                       + IF(_m("shared_expert_intermediate_size").gt(0), 1, 0), 1)
                           + (2 + V("gated_mlp")) * V("mlp_width")),
         "each linear layer casts its input in forward and its output's gradient in backward: the attention's "
         "input (h) and q, k, v gradients (q_dim + 2 kv_dim), the output projection's input (q_dim) and gradient "
         "(h), the MLP's input (h) and its down projection's gradient (h) once per expert a token reaches (its "
         "top-k and a shared expert), the up and gate projections' gradients ((1 + gated) × mlp_width), the down "
         "projection's input (mlp_width)", "time"),
    Term("fp8_cast_seconds", "FP8 casts' memory traffic per micro-batch", "seconds",
         IF(AND(_TRAIN, V("fp8_gemms").eq(1)),
            (4 + V("fp8_layouts")) * V("fp8_cast_elements_per_token") * V("num_layers") * V("tokens")
            / V("tp_size") / V("decode_bytes_per_s"), 0),
         "a dynamically scaled cast reads its 16-bit tensor twice (the absolute maximum for its scale, then the "
         "cast) and writes it in 1 byte once per layout (fp8_layouts: as it is and, where FP8 GEMMs need it, "
         "transposed for the other GEMM of backward): 6 bytes per element on Hopper, 5 on Blackwell, at the "
         "bandwidth a streaming kernel reaches (decode_bytes_per_s); the weights' casts, made "
         "once per step (Transformer Engine keeps them across micro-batches, torchao casts the FSDP shards), are "
         "left out. torchao's rule: FP8 gains where the GEMM time it saves exceeds this traffic (small matrices "
         "lose)", "time"),
    Term("train_compute_seconds", "Compute time of one micro-batch", "seconds",
         IF(_TRAIN, V("micro_batch_peak_seconds")
            * ((V("train_flops_per_token") + V("recompute_flops_per_token") - V("train_attention_flops_per_token")
                - (1 - V("fp8_linear_time_ratio")) * V("fp8_linear_flops_per_token"))
               / _g("train_efficiency") + V("train_attention_flops_per_token") / V("attention_kernel_efficiency"))
            + V("fp8_cast_seconds")
            + MAX(V("expert_traffic_seconds"), V("expert_compute_seconds"))
            - V("expert_compute_seconds") / V("moe_imbalance"), 0),
         "tokens × FLOPs ÷ peak, the matrix multiplications at the GPU type's training efficiency (FP8 linear "
         "layers at fp8_linear_time_ratio of that time, plus their casts) and the "
         "attention kernels at attention_kernel_efficiency (GPUs sheet); tensor "
         "parallelism splits every layer; the routed experts take the longer of their FLOPs and their weights' "
         "memory traffic (a roofline: few tokens per expert leave their grouped GEMMs memory-bound)", "time"),
    Term("dp_link_bytes_per_s", "Data-parallel collective bandwidth", "bytes_per_s",
         _collective_bandwidth(V("tp_size") * V("zero_group"),
                               MIN(V("zero_group"), MAX(1, FLOOR(_g("gpus_per_node") / V("tp_size"))))), _LINK, "time"),
    Term("tp_link_bytes_per_s", "Tensor-parallel collective bandwidth", "bytes_per_s",
         _collective_bandwidth(V("tp_size"), MIN(V("tp_size"), _g("gpus_per_node"))), _LINK, "time"),
    Term("dp_comm_bytes", "Data-parallel traffic per optimizer step, per GPU", "bytes",
         IF(AND(_TRAIN, V("zero_group").gt(1)),
            (V("zero_group") - 1) / V("zero_group")
            * (V("gradient_bytes_unsharded")
               + IF(V("zero_stage").eq(0), V("gradient_bytes_unsharded"),
                    IF(V("zero_stage").eq(3), 2 * V("grad_accum_steps") * V("weight_bytes_unsharded"),
                       IF(V("is_full").eq(1),
                          V("gradient_params") * _p("weight_bytes")
                          - V("fp8_primary_weights") * (_p("weight_bytes") - 1)
                          * MAX(V("gradient_params") - V("embedding_params") - V("lm_head_params"), 0),
                          V("gradient_bytes_unsharded"))))) / V("tp_size"), 0),
         "ring all-reduce of the gradients (2 × (P−1)/P of their size); ZeRO-1 and -2 (Megatron's distributed "
         "optimizer) reduce-scatter them and all-gather the updated parameters, in the working weights' dtype "
         "(Megatron's fp32 gradients, bf16 weights: 4 + 2 bytes a parameter, not 2 × 4; FP8 primary weights, "
         "fp8-te-params' --fp8-param-gather: the decoder layers' in 1 byte); ZeRO-3 reduce-scatters "
         "them once and all-gathers the weights in every forward and backward (1.5× the traffic: " + _ZERO_PAPER
         + ")", "time"),
    Term("dp_comm_seconds", "Data-parallel communication per step", "seconds",
         V("dp_comm_bytes") / V("dp_link_bytes_per_s"), "overlaps with backward compute", "time"),
    Term("tp_comm_seconds", "Tensor-parallel communication per micro-batch", "seconds",
         IF(AND(_TRAIN, V("tp_size").gt(1)),
            IF(V("checkpointing").eq("full"), 6, 4)
            * (V("pp_stage_layers")
               - IF(AND(V("expert_tp").eq(1), _m("shared_expert_intermediate_size").eq(0)),
                    _m("num_moe_layers") * V("pp_layer_share"), 0) / 2)
            * (2 * (V("tp_size") - 1) / V("tp_size") * V("tokens") * V("hidden_size") * V("act_bytes")
               / V("tp_link_bytes_per_s") + V("collective_latency_us") / 1e6), 0),
         "Megatron-style TP all-reduces the activations twice per layer forward and twice backward (twice more "
         "when a checkpointed forward is repeated), once each for attention and for the MLP; an MoE layer whose "
         "experts are whole on their GPUs (expert_tp 1) and that has no shared expert skips the MLP's: its tokens "
         "go to the experts by the all-to-all instead; on the critical path", "time"),
    Term("cp_ring_bytes", "Context-parallel ring traffic per micro-batch, per GPU", "bytes",
         IF(AND(_TRAIN, V("cp_degree").gt(1), V("cp_ulysses").eq(0)),
            IF(V("checkpointing").eq("full"), 4, 3) * V("pp_stage_layers") * (V("cp_degree") - 1) * V("tokens")
            * 2 * V("kv_dim") * V("act_bytes") / V("tp_size"), 0),
         "ring attention passes each GPU's keys and values around the cp GPUs of a sequence, cp − 1 hops per "
         "layer: forward, backward (keys, values and their gradients: twice) and the recomputed forward "
         "(Liu et al. 2023, Ring Attention; Megatron-Core's context parallelism)", "time"),
    Term("cp_ring_seconds", "Context-parallel ring time not hidden behind attention, per micro-batch", "seconds",
         IF(V("cp_ring_bytes").gt(0),
            MAX(0, V("cp_ring_bytes") / (IF((V("tp_size") * V("cp_degree")).le(_g("gpus_per_node")), _g("link_gbps"),
                                            _g("inter_node_gbps")) * 1e9 * V("comm_efficiency"))
                - V("tokens") / V("tp_size") * V("train_attention_flops_per_token") * V("pp_layer_share")
                / (V("peak_flops") * V("attention_kernel_efficiency"))), 0),
         "each hop overlaps the attention of the chunk already there: only what the attention kernels do not "
         "cover adds; neighbours on NVLink inside a node, on the network across nodes", "time"),
    Term("cp_a2a_passes", "Ulysses all-to-all passes over the layers per micro-batch", "count",
         IF(V("cp_ulysses").eq(1), IF(V("checkpointing").eq("full"), 3, 2), 0),
         "forward, backward (the gradients of the same tensors) and the recomputed forward", "time"),
    Term("cp_a2a_bytes", "Ulysses all-to-all traffic per micro-batch, per GPU", "bytes",
         V("cp_a2a_passes") * V("pp_stage_layers") * V("tokens") * 2 * (V("q_dim") + V("kv_dim")) * V("act_bytes")
         * (V("cp_degree") - 1) / V("cp_degree"),
         "each layer swaps its queries, keys and values (sequence shards for head shards) before attention and its "
         "output back after it: (cp − 1) ÷ cp of them leave the GPU (DeepSpeed's DistributedAttention, ALST's "
         "UlyssesSPAttentionHF: four all-to-alls a layer)", "time"),
    Term("cp_a2a_seconds", "Ulysses all-to-all time per micro-batch", "seconds",
         IF(V("cp_a2a_bytes").gt(0),
            V("cp_a2a_bytes") / (V("cp_degree") - 1)
            * ((MIN(V("cp_degree"), _g("gpus_per_node")) - 1) / _g("link_gbps")
               + (V("cp_degree") - MIN(V("cp_degree"), _g("gpus_per_node"))) / _g("inter_node_gbps"))
            / (1e9 * V("comm_efficiency"))
            + 4 * V("cp_a2a_passes") * V("pp_stage_layers") * V("collective_latency_us") / 1e6, 0),
         "on the critical path (attention waits for its heads); the peers in the node on NVLink (or PCIe), the "
         "others on the GPU's network link, bound by their sum as NCCL's all-to-all is", "time"),
    Term("moe_a2a_calls", "MoE all-to-alls per micro-batch on a stage", "count",
         IF(AND(_TRAIN, V("num_experts").gt(0), V("ep_size").gt(1)),
            (4 + 2 * V("moe_layer_recomputed")) * _m("num_moe_layers") * V("pp_layer_share"), 0),
         "each MoE layer dispatches its tokens to their experts and combines the outputs: forward and backward, "
         "and the forward again where the MoE layer is recomputed (full, or Megatron's 'moe' module)", "time"),
    Term("moe_token_bytes", "Routed tokens per micro-batch, one copy per all-to-all, per GPU", "bytes",
         V("moe_a2a_calls") * V("tokens") / V("tp_size") * V("hidden_size") * V("act_bytes") * V("moe_imbalance"),
         "the busiest expert-parallel GPU's (moe_imbalance) hidden vectors, once per all-to-all; a tensor-parallel "
         "group dispatches its sequence shards (Megatron-Core's token dispatchers)", "time"),
    Term("moe_a2a_bytes", "MoE token traffic per micro-batch, per GPU", "bytes",
         V("moe_token_bytes") * _m("num_experts_per_tok") * (V("ep_size") - 1) / V("ep_size"),
         "every routed token sends its hidden vector to each of its top-k experts (and gets one back), of which "
         "(ep − 1) ÷ ep leave the GPU with balanced routing", "time"),
    Term("ep_ranks_in_node", "Expert-parallel ranks inside one node", "count",
         MIN(V("ep_size"), MAX(1, FLOOR(_g("gpus_per_node") / V("expert_tp")))),
         "Megatron-Core numbers an expert group's ranks ETP first, then EP (its expert rank order "
         "'tp-cp-ep-dp-pp' with ETP for TP, the pipeline stage outermost): an EP group's ranks are expert_tp apart, "
         "so a node holds gpus_per_node ÷ expert_tp of them", "time"),
    Term("ep_nodes", "Nodes one expert-parallel group spans", "count",
         CEIL(V("ep_size") / V("ep_ranks_in_node")), "", "time"),
    Term("moe_network_bytes", "MoE token traffic per micro-batch leaving the node, per GPU", "bytes",
         IF(V("moe_dispatcher").eq("deepep"),
            V("moe_token_bytes") * (V("ep_nodes") - 1) * (1 - POWER(1 - 1 / V("ep_nodes"), _m("num_experts_per_tok"))),
            V("moe_a2a_bytes") * (V("ep_size") - V("ep_ranks_in_node")) / MAX(1, V("ep_size") - 1)),
         "alltoall: each routed token's copy for each of its experts on another node, (ep − ranks in the node) of "
         "the ep − 1 peers; deepep: the token once to each other node that holds one of its top-k experts, which "
         "forwards it over NVLink (DeepEP's internode kernels) — with the experts drawn evenly over n nodes a node "
         "is hit with probability 1 − (1 − 1/n)^k (drawn with replacement: for 8 of 128 experts over 4 nodes "
         "0.900, drawn without 0.907)", "time"),
    Term("moe_nvlink_bytes", "MoE token traffic per micro-batch inside the node, per GPU", "bytes",
         IF(V("moe_dispatcher").eq("deepep"), V("moe_a2a_bytes"),
            V("moe_a2a_bytes") * (V("ep_ranks_in_node") - 1) / MAX(1, V("ep_size") - 1)),
         "alltoall: the copies for experts on the other GPUs of the node; deepep: every copy that leaves the GPU "
         "crosses NVLink once, from its sender or from the GPU that took it off the network", "time"),
    Term("moe_a2a_seconds", "MoE all-to-all per micro-batch", "seconds",
         IF(V("moe_a2a_calls").gt(0),
            IF(V("moe_dispatcher").eq("deepep"),
               MAX(V("moe_nvlink_bytes") / _g("link_gbps"), V("moe_network_bytes") / _g("inter_node_gbps")),
               V("moe_nvlink_bytes") / _g("link_gbps") + V("moe_network_bytes") / _g("inter_node_gbps"))
            / (1e9 * V("comm_efficiency")) + V("moe_a2a_calls") * V("collective_latency_us") / 1e6, 0),
         "inside the node on NVLink (or PCIe), across nodes on the GPU's own network link (GPUs sheet); NCCL's "
         "all-to-all moves both shares in one collective, bound by their sum; DeepEP pipelines its network and "
         "NVLink stages, bound by the slower; the grouped GEMMs' efficiency is not modelled", "time"),
    Term("offload_stream_seconds", "Offloaded parameters streamed from the host, once", "seconds",
         IF(AND(_TRAIN, V("offload").eq("all")),
            V("weight_bytes_unsharded") / V("weight_shards") / (_g("pcie_gbps") * 1e9), 0),
         "with the parameters offloaded (ZeRO-Infinity, FSDP2's CPU offload) every pass over the model brings each "
         "GPU's shard of them over PCIe, layer by layer: each forward, each generated token's step, a refit",
         "time"),
    Term("offload_seconds", "CPU-offload traffic per step", "seconds",
         IF(AND(_TRAIN, V("offload").ne("none")),
            (V("gradients") + V("weight_bytes_unsharded") / V("weight_shards")) / (_g("pcie_gbps") * 1e9)
            + 2 * V("grad_accum_steps") * V("offload_stream_seconds"), 0),
         "ZeRO-Offload moves gradients to the host and updated weights back every step over PCIe; parameter "
         "offload streams the weights in every forward and backward (Ren et al. 2021); the host's Adam is "
         "host_optimizer_seconds",
         "time"),
    Term("host_optimizer_seconds", "CPU optimizer step per optimizer step", "seconds",
         IF(AND(_TRAIN, V("offload").ne("none")),
            V("optimizer_params") / V("optimizer_shards") * V("node_gpus") * V("host_optimizer_ns_per_param") / 1e9,
            0),
         "with the optimizer offloaded its step runs on the host: the GPUs of a node update their shards of the "
         "parameters on the node's CPUs at once, between the last backward and the next forward (ZeRO-Offload "
         "without its delayed update, Ren et al. 2021 §4.2)", "time"),
    Term("pipeline_slots", "Micro-batch slots per step, bubble included", "count",
         V("grad_accum_steps") + (V("pp_stages") - 1) / V("vp_degree"),
         "1F1B runs m micro-batches in m + p − 1 slots: the bubble is (p − 1) / m of the step (Narayanan et "
         "al. 2021, §2.2), (p − 1) ÷ (v × m) with v interleaved chunks per GPU (§2.2.1); without pipelining "
         "(p = 1) the m micro-batches themselves", "time"),
    Term("head_compute_seconds", "LM head's compute per micro-batch", "seconds",
         IF(_TRAIN, V("micro_batch_peak_seconds") * V("weight_flops_per_token") * V("vocab_size") * V("hidden_size")
            / _g("train_efficiency"), 0),
         "the part of train_compute_seconds the LM head takes: vocabulary × hidden per token, forward and backward "
         "(a frozen head: no weight gradient)", "time"),
    Term("stage_compute_seconds", "Busiest pipeline stage's compute per micro-batch", "seconds",
         IF(V("pp_stages").eq(1), V("train_compute_seconds"),
            V("pp_stage_layers") * (V("train_compute_seconds") - V("head_compute_seconds")) / V("num_layers")
            + V("head_compute_seconds")),
         "a pipeline moves at its busiest stage's pace (Narayanan et al. 2021, §2.2): ⌈L ÷ pp⌉ layers and the last "
         "stage's LM head, the split the memory terms take (the head of a model with a large vocabulary weighs "
         "several layers: Qwen3-235B-A22B's about 2.4; a framework that counts the loss as a layer, Megatron-Core's "
         "--account-for-loss-in-pipeline-split, balances it better, which is not modelled)", "time"),
    Term("tp_exposed_seconds", "Tensor-parallel communication not hidden, per micro-batch", "seconds",
         IF(V("tp_overlap").eq("on"), MAX(V("tp_comm_seconds") - V("stage_compute_seconds"), 0),
            V("tp_comm_seconds")),
         "tp_overlap on (Megatron-Core's --tp-comm-overlap, torchtitan's async TP) splits each all-gather and "
         "reduce-scatter into chunks that run beside the matrix multiplications that read or make them: what the "
         "stage's compute cannot cover; the SMs and memory bandwidth the overlapped copies take from the matrix "
         "multiplications are not counted (the buffers Transformer Engine allocates for them are: "
         "tp_overlap_buffer_bytes)", "time"),
    Term("slot_seconds", "A schedule slot's compute and MoE all-to-all", "seconds",
         IF(V("ep_overlap").eq("on"),
            MAX(V("moe_a2a_seconds"), V("stage_compute_seconds") + V("a2a_overlap_sm_share") * V("moe_a2a_seconds")),
            V("stage_compute_seconds") + V("moe_a2a_seconds")),
         "Megatron-Core's dispatchers put the all-to-all on the critical path; its combined 1F1B schedule "
         "(ep_overlap on) runs one micro-batch's dispatch and combine on a stream of their own while another "
         "micro-batch computes, so a slot takes the longer of the two, the compute slowed while the all-to-all "
         "runs beside it by the SMs its kernels hold (a2a_overlap_sm_share): compute + share × all-to-all, or the "
         "all-to-all where it is the longer", "time"),
    Term("step_seconds", "Time per optimizer step", "seconds",
         IF(_TRAIN, MAX(V("pipeline_slots") * V("slot_seconds"), V("dp_comm_seconds"))
            + V("pipeline_slots") * (V("tp_exposed_seconds") + V("cp_ring_seconds") + V("cp_a2a_seconds"))
            + V("offload_seconds") + V("host_optimizer_seconds"), 0),
         "compute and data-parallel communication overlap (the longer counts); tensor-parallel communication "
         "(its unhidden part with tp_overlap on), the context-parallel ring's unhidden part or Ulysses' all-to-all, offload transfers and "
         "the host's optimizer step add; each slot takes the busiest pipeline stage's compute and its MoE all-to-all "
         "(slot_seconds)", "time"),
    Term("train_tokens_per_s", "Training tokens per second (all GPUs)", "tokens_per_s",
         IF(_TRAIN, V("tokens") * V("cp_degree") * V("grad_accum_steps") * V("dp_size") / V("step_seconds"), 0),
         "", "time"),
    Term("train_tokens_per_s_per_gpu", "Training tokens per second per GPU", "tokens_per_s",
         V("train_tokens_per_s") / V("num_gpus"), "", "time"),
    Term("time_to_train_seconds", "Time to train on the tokens", "seconds",
         IF(_TRAIN, V("train_tokens") / V("train_tokens_per_s"), 0), "", "time"),
    # ---- inference -----------------------------------------------------------------------------
    Term("prefill_sequence_seconds", "Prefill time of one prompt", "seconds",
         IF(_INFER, (2.0 * V("active_params") * V("prompt_len")  # in floats: N × P² passes 2^53 at long prompts
                     + 4.0 * V("q_dim") * V("prompt_len") * _keys_attended(V("prompt_len")))
            / V("decode_tp") / (V("peak_flops") * V("prefill_efficiency")), 0),
         "2N FLOPs per prompt token plus causal attention (2 × q_dim × P² per layer; a sliding-window layer's "
         "queries see the window at most), compute-bound", "time"),
    Term("weight_read_seconds", "Every weight read once from memory", "seconds",
         IF(_INFER, (V("decode_weight_bytes") - V("served_lora_bytes")
                     + V("served_lora_bytes") * MIN(V("max_loras"), V("batch_size")) / MAX(V("max_loras"), 1))
            / V("decode_bytes_per_s"), 0),
         "what one forward over the weights cannot beat, however few its tokens: a GPU's weights (with LoRA "
         "slots, the adapters of the batch's sequences, at most one per sequence) at the memory bandwidth a "
         "decode step reaches", "time"),
    Term("prefill_seconds", "Time to first token", "seconds",
         MAX(IF(V("engine_mode").eq(1), 1, V("rollout_batch")) * V("prefill_sequence_seconds"),
             V("weight_read_seconds")),
         "generate() prefills every prompt of the batch before the first token; an engine serves a request's "
         "first token after its own prefill; either reads every weight at least once (a short prompt's prefill "
         "is memory-bound, as a decode step is)", "time"),
    Term("decode_context_tokens", "Mean context length while generating", "count",
         V("prompt_len") + V("gen_len") / 2, "", "time"),
    Term("decode_gather_seconds", "Weights brought in per decode step: ZeRO-3 gathering, offloaded parameters",
         "seconds",
         IF(AND(_TRAIN, V("gen_len").gt(0), V("rollout_engine").eq(0)),
            IF(AND(V("zero_stage").eq(3), V("zero_group").gt(1)),
               (V("zero_group") - 1) / V("zero_group") * V("weight_bytes_unsharded") / V("tp_size")
               / V("dp_link_bytes_per_s"), 0) + V("offload_stream_seconds"), 0),
         "generate() on ZeRO-3 shards all-gathers every layer's weights for each generated token, and with the "
         "parameters offloaded brings its shard of them from the host first (what DeepSpeed-Chat's hybrid engine and "
         "the rollout engines avoid)", "time"),
    Term("decode_weight_seconds", "Decode step: weight matrix multiplications", "seconds",
         IF(_INFER, MAX(V("weight_read_seconds"),
                        V("rollout_batch") * 2 * (V("active_params") / V("decode_tp")
                                               + (V("served_lora_params") - V("served_lora_routed_params")
                                                  * (1 - _m("num_experts_per_tok") / MAX(V("num_experts"), 1)))
                                               / MAX(V("max_loras"), 1))
                        / (V("peak_flops") * V("prefill_efficiency"))), 0),
         "every weight is read once per step (memory-bound at small batch) or the batch's 2N FLOPs per token "
         "dominate (compute-bound at large batch); each token's adapter adds its FLOPs at max_lora_rank (of the "
         "routed experts, its top-k's); a "
         "prefill's adapter FLOPs (rank ÷ hidden of the layer's) are left out", "time"),
    Term("decode_attention_seconds", "Decode step: attention over the cache", "seconds",
         IF(_INFER, V("rollout_batch") * (V("context_block_tokens")
                                          * (V("kv_elements_per_token") - V("kv_window_elements_per_token"))
                                          * V("decode_context_tokens") / V("context_tokens")
                                          + V("kv_window_elements_per_token")
                                          * MIN(V("decode_context_tokens"), V("sliding_window")))
            * Lookup("Dtypes", "bits", V("kv_dtype")) / 8 / V("kv_shards")
            / V("decode_bytes_per_s")
            + V("rollout_batch") * 2 * V("mamba_state_bytes") / V("decode_bytes_per_s"), 0),
         "each sequence's cache so far is read once per step (mean context: prompt + half the generated tokens, "
         "its whole blocks in full-attention layers; a sliding-window layer reads its window at most); a hybrid "
         "model's Mamba-2 states are read and written once per step",
         "time"),
    Term("seconds_per_output_token", "Time per output token", "seconds",
         IF(_INFER, V("decode_weight_seconds") + V("decode_attention_seconds") + V("decode_gather_seconds")
            + IF(V("decode_tp").gt(1), _m("num_mixers") * V("collective_latency_us") / 1e6, 0)
            + IF(AND(V("engine_mode").eq(1), V("gen_len").gt(0)),
                 (V("batch_size") - 1) * V("prefill_sequence_seconds") / V("gen_len"), 0), 0),
         "the weight and attention kernels run one after the other, each at its own roofline (ZeRO-3 "
         "generate(): after its weights' all-gather); at TP > 1 two small all-reduces per layer; an engine's continuous batching interleaves the other sequences' "
         "prefills (one each per generated response) with the decode steps", "time"),
    Term("tokens_per_s_per_user", "Output tokens per second per sequence", "tokens_per_s",
         IF(_INFER, 1 / V("seconds_per_output_token"), 0), "", "time"),
    Term("tokens_per_s_per_gpu", "Output tokens per second per GPU", "tokens_per_s",
         V("tokens_per_s_per_user") * V("rollout_batch") / V("decode_tp"),
         "each tensor-parallel group serves the batch; data-parallel replicas each serve their own", "time"),
    # ---- RLHF phases ---------------------------------------------------------------------------
    Term("rollout_seconds", "Rollout: prefill and generation by a training actor or its engine", "seconds",
         IF(AND(_ROLLS, V("gen_len").gt(0)),
            CEIL(V("generated_sequences") / V("rollout_batch"))
            * (V("prefill_seconds") + MAX(V("gen_len"), V("max_gen_len")) * V("seconds_per_output_token")), 0),
         "an RLHF actor generates the iteration's responses before it trains on them (with dynamic sampling, "
         "generation_factor times as many): an engine in rounds of what its pool holds, generate() in one round "
         "per micro-batch; each round decodes until its longest response ends (max_gen_len; its sequences' cache "
         "and work are at the mean, gen_len); an engine on GPUs of its own generates for every data-parallel rank "
         "of the actor, its share of the iteration's sequences", "time"),
    Term("refit_seconds", "Trained weights into the rollout engine, its sleep and wake-up", "seconds",
         IF(AND(_TRAIN, V("rollout_engine").eq(1)),
            IF(V("zero_stage").eq(3), (V("zero_group") - 1) / V("zero_group") * V("weight_bytes_unsharded")
               / V("dp_link_bytes_per_s"), 0) + V("offload_stream_seconds")
            + IF(V("engine_sleep").eq("offload"), 2 * V("decode_weight_bytes") / (_g("pcie_gbps") * 1e9), 0),
            IF(AND(V("workload").eq(ROLLOUT), V("rollout_engine").eq(1)),
               V("weight_bytes_unsharded") / (_g("inter_node_gbps") * 1e9 * V("comm_efficiency")), 0)),
         "once per iteration: the trainer's ZeRO-3/FSDP shards are all-gathered layer by layer (offloaded ones "
         "brought from the host first) before each engine "
         "GPU loads its tensor-parallel slice (veRL's sharding manager); an engine that sleeps through training with "
         "its weights offloaded (engine_sleep offload: vLLM sleep level 1, its KV pool freed) wakes for the next "
         "rollout with its weights over PCIe each way; one that discards them (level 2) or stays awake moves none. "
         "An engine on GPUs of its own stays awake and receives the whole model from the actor's first rank, "
         "broadcast over the network (OpenRLHF's NCCL group with the vLLM engines), at one GPU's network bandwidth",
         "time"),
    Term("forward_pass_seconds", "One forward pass over the step's sequences", "seconds",
         IF(OR(_TRAIN, V("workload").eq("frozen")),
            V("forward_pass_peak_seconds")
            * (2.0 * (V("active_params") - V("routed_active_params")) / _g("train_efficiency")
               + V("attention_flops_per_token") / V("attention_kernel_efficiency"))
            + MAX(V("forward_pass_peak_seconds") * 2.0 * V("routed_active_params") / _g("train_efficiency"),
                  ceil_div(V("step_sequences"), V("batch_size")) * V("expert_read_seconds"))
            + ceil_div(V("step_sequences"), V("batch_size")) * V("offload_stream_seconds"), 0),
         "the training framework's forward over every whole sequence, micro-batch after micro-batch, its matrix "
         "multiplications and attention kernels at the GPU type's training efficiencies (those of the training "
         "step's forward, not a serving engine's prefill): how an RLHF role scores the rollouts (reference "
         "log-probabilities, rewards) and how the actor and critic compute the old log-probabilities and values "
         "before they train; routed experts that get few tokens in a micro-batch take their weights' reading "
         "instead of their FLOPs; offloaded parameters come from the host for each micro-batch's pass", "time"),
    Term("scoring_seconds", "Scoring: one forward pass of a frozen model", "seconds",
         IF(V("workload").eq("frozen"), V("forward_pass_seconds"), 0),
         "reference and reward models score the rollouts", "time"),
    # ---- cost ----------------------------------------------------------------------------------
    Term("gpu_hours", "GPU-hours", "gpu_hours",
         IF(_TRAIN, V("time_to_train_seconds") * V("num_gpus") / 3600, 0), "", "time"),
    Term("cost_usd", "Cost at the hourly price", "usd", V("gpu_hours") * _g("price_per_hour_usd"),
         "GPUs sheet (placeholder prices: edit)", "time"),
    Term("amortised_cost_usd", "Cost as amortised purchase", "usd",
         V("purchase_usd") * V("time_to_train_seconds") / (V("amortisation_years") * 365.25 * 86400),
         "purchase price spread over the amortisation period (straight line)", "time"),
    Term("usd_per_million_tokens", "Cost per million output tokens (hourly price)", "usd",
         IF(AND(_INFER, V("gen_len").gt(0)),
            V("hourly_usd") / (V("tokens_per_s_per_gpu") * V("num_gpus") * 3600) * 1e6, 0),
         "", "time"),
    Term("rent_usd", "Cost to rent (training: the run; else an hour)", "usd",
         IF(_TRAIN, V("cost_usd"), V("hourly_usd")),
         "what the plan's cheapest to rent compares: a training run's whole cost at the hourly price, a served "
         "model's hour", "time"),
    Term("plan_seconds", "Time the plan ranks equals by", "seconds",
         IF(_TRAIN, V("time_to_train_seconds"), V("seconds_per_output_token")),
         "among configurations of a requirement at the same price and GPU count the plan takes the fastest: a "
         "training run's time, a served model's time per output token", "time"),
)

ROLE_TERMS = TERMS + TOTAL_TERMS + TIME_TERMS
TERM_BY_NAME = {t.name: t for t in ROLE_TERMS}

# The JSON contract's per_gpu_bytes keys, in order.
PER_GPU_KEYS = ("weights", "gradients", "optimizer_states", "master_weights", "activations", "kv_cache",
                "allocated_peak", "reserved_peak", "device_total", "recommended")
# The JSON contract's time keys: what a training run and a served model answer.
TRAIN_TIME_KEYS = ("train_tokens_per_s", "train_tokens_per_s_per_gpu", "step_seconds", "time_to_train_seconds",
                   "gpu_hours", "cost_usd", "amortised_cost_usd")
INFERENCE_TIME_KEYS = ("prefill_seconds", "seconds_per_output_token", "tokens_per_s_per_user",
                       "tokens_per_s_per_gpu", "usd_per_million_tokens")
# A serving engine's answers: its KV block pool and what the pool holds.
SERVING_KEYS = ("engine_budget_bytes", "kv_pool_bytes", "kv_pool_tokens", "kv_blocks", "kv_logged_tokens",
                "max_concurrency", "max_context_tokens")
RLHF_TIME_KEYS = ("generation_seconds", "refit_seconds", "rollout_phase_seconds", "log_prob_seconds", "scoring_seconds",
                  "training_seconds", "iteration_seconds")
# The parts that add up to allocated_peak at the peak phase (the stacked bars of every chart).
PEAK_PARTS = ("resident_weights", "resident_master_weights", "resident_optimizer_states", "resident_gradients",
              "resident_activations", "resident_kv_cache", "resident_engine", "temporaries")
# What device_total adds to allocated_peak: the allocator's reserve, then the CUDA context and communication buffers.
OVERHEAD_PARTS = ("allocator_reserve_bytes", "context_comm_bytes")
# The stacked parts of a configuration's memory per GPU, in stacking order (the report's breakdown bars and the
# workbook's Charts; a part keeps its colour in every chart): a single model's peak parts, an RLHF pool's largest
# phase, then the overheads. They add up to device_total.
BAR_PARTS = PEAK_PARTS + ("transient_peak",) + OVERHEAD_PARTS
# The term each part of a bar reads: a single model's own (it has no pool's largest phase: None, 0), an RLHF group's
# bar_… term (estimate.group_terms: its tightest pool's part).
SINGLE_BAR = {p: None if p == "transient_peak" else p for p in BAR_PARTS}
GROUP_BAR = {p: f"bar_{p}" for p in BAR_PARTS}


@dataclass(frozen=True)
class SkipRule:
    """A well-formed combination that cannot run: `when` holds. `text` is what the CLI and the English report
    say, its {placeholders} the `values`; the other catalogues translate it as skip.<code>."""
    code: str
    text: str
    when: Expr
    values: tuple[tuple[str, Expr], ...]


def _skip(code: str, text: str, when: Expr, **values: Expr) -> SkipRule:
    return SkipRule(code, text, when, tuple(values.items()))


_TP, _GPUS = V("tp_size"), V("num_gpus")
_CP_CHUNKS = IF(_ULYSSES, 1, 2) * V("cp_degree")  # Ulysses' sequence shards, ring attention's load-balanced ones
# The context a scenario asks of its model's positions: a served one (a prompt and its longest response), and a
# trained or scored sequence where the positions are learned embeddings (a RoPE model runs past its positions when
# a context is extended by training).
_ASKED_CONTEXT = MAX(V("prompt_len") + MAX(V("gen_len"), V("max_gen_len")),
                     IF(AND(_m("num_position_embeddings").gt(0), OR(V("is_train").eq(1), V("workload").eq(FROZEN))),
                        V("seq_len"), 0))
# In order: the first rule that holds is the reason. Read after the role terms (they use its lookups).
SKIP_RULES: tuple[SkipRule, ...] = (
    # What the model cannot take whatever the GPU and layout: first, so that a plan names it alone.
    _skip("context_positions", "{model} takes at most {limit} tokens of context (its config's positions: vLLM derives "
          "max_model_len from them and refuses a longer one, and learned position embeddings end there); {tokens} "
          "asked: a longer context needs a model extended for it (RoPE scaling in its config)",
          AND(_m("max_positions").gt(0), _ASKED_CONTEXT.gt(_m("max_positions"))),
          model=V("model"), limit=_m("max_positions"), tokens=_ASKED_CONTEXT),
    # What the GPU type cannot run whatever the layout: next, so that a plan names it alone.
    _skip("bf16_gpu", "{gpu} has no bf16 (Volta's tensor cores are FP16 only): choose fp16-mixed, or fp16 weights and "
          "KV cache",
          AND(_g("bf16").eq(0),
              IF(V("is_train").eq(1), is_one_of(V("precision"), "amp-bf16", "bf16-mixed", "bf16", "fp8-te", "fp8-te-params"),
                 OR(V("weight_dtype").eq("bf16"), V("kv_dtype").eq("bf16")))), gpu=V("gpu")),
    _skip("mxfp4_gpu", "MXFP4 weights need an Ampere GPU or later (vLLM's Marlin and Triton kernels); {gpu} is older",
          AND(_g("bf16").eq(0), V("experts_only_dtype").eq(1), V("is_full").eq(0)), gpu=V("gpu")),
    _skip("fp8_gpu", "FP8 training needs FP8 tensor cores (Ada, Hopper, Blackwell); {gpu} has none",
          AND(V("fp8_gemms").eq(1), _g("fp8_dense_tflops").eq(0)), gpu=V("gpu")),
    _skip("tp_gpus", "tp_size {tp} does not divide num_gpus {gpus}",
          MOD(_GPUS, _TP).ne(0), tp=_TP, gpus=_GPUS),
    _skip("tp_heads", "tp_size {tp} does not divide {heads} attention heads",
          MOD(V("num_heads"), _TP).ne(0), tp=_TP, heads=V("num_heads")),
    _skip("max_gen_len", "max_gen_len {longest} is shorter than gen_len {mean}, the responses' mean",
          AND(V("max_gen_len").gt(0), V("max_gen_len").lt(V("gen_len"))), longest=V("max_gen_len"),
          mean=V("gen_len")),
    _skip("rollout_tp", "rollout_tp_size {tp} must divide num_gpus {gpus} and the {heads} attention heads",
          AND(V("rollout_engine").eq(1), OR(MOD(_GPUS, V("decode_tp")).ne(0),
                                             MOD(V("num_heads"), V("decode_tp")).ne(0))),
          tp=V("decode_tp"), gpus=_GPUS, heads=V("num_heads")),
    _skip("tp_kv", "tp_size {tp} and {kv} KV heads do not divide each other",
          AND(MOD(V("num_kv_heads"), _TP).ne(0), MOD(_TP, V("num_kv_heads")).ne(0)), tp=_TP,
          kv=V("num_kv_heads")),
    _skip("pp_gpus", "tp_size {tp} × pp_size {pp} does not divide num_gpus {gpus}",
          MOD(_GPUS, V("model_parallel_size")).ne(0), tp=_TP, pp=V("pp_stages"), gpus=_GPUS),
    _skip("cp_gpus", "tp_size {tp} × pp_size {pp} × cp_size {cp} does not divide num_gpus {gpus}",
          AND(V("cp_degree").gt(1), MOD(_GPUS, V("replica_gpus")).ne(0)),
          tp=_TP, pp=V("pp_stages"), cp=V("cp_degree"), gpus=_GPUS),
    _skip("cp_framework", "cp_size {cp}: framework {framework} has no context parallelism here (megatron has ring "
          "attention, and fsdp2 but for sdpa past a sliding window: its SDPA takes no mask; deepspeed has Ulysses' "
          "all-to-all)",
          AND(V("cp_degree").gt(1), OR(is_one_of(V("framework"), "hf", "litgpt"),
                                       AND(V("framework").eq("fsdp2"), V("sdpa_past_window").eq(1)))),
          cp=V("cp_degree"), framework=V("framework")),
    _skip("cp_ulysses", "cp_size {cp} under deepspeed is Ulysses sequence parallelism, which splits the attention "
          "heads over the cp GPUs: cp_size must divide num_heads {heads} and num_kv_heads {kv}, with tp_size and "
          "pp_size 1 (given: {tp}, {pp}) and no multi-head latent attention (model type {model_type})",
          AND(_ULYSSES, OR(MOD(V("num_heads"), V("cp_degree")).ne(0), MOD(V("num_kv_heads"), V("cp_degree")).ne(0),
                           _TP.gt(1), V("pp_stages").gt(1), _m("is_mla").eq(1))),
          cp=V("cp_degree"), heads=V("num_heads"), kv=V("num_kv_heads"), tp=_TP, pp=V("pp_stages"),
          model_type=_m("model_type")),
    _skip("cp_seq", "cp_size {cp}: seq_len {seq} must split into {chunks} equal chunks (ring attention's "
          "load-balanced causal split: 2 × cp_size; Ulysses: cp_size)",
          AND(V("cp_degree").gt(1), MOD(V("seq_len"), _CP_CHUNKS).ne(0)),
          cp=V("cp_degree"), seq=V("seq_len"), chunks=_CP_CHUNKS),
    _skip("vp_pp", "vp_size {vp} needs pipeline parallelism (pp_size > 1) under megatron, whose interleaved 1F1B it "
          "sets; framework {framework}",
          AND(V("vp_size").gt(1), OR(V("pp_stages").eq(1), V("framework").ne("megatron"))),
          vp=V("vp_size"), framework=V("framework")),
    _skip("recompute_modules", "checkpointing {ckpt} is a list of Megatron-Core's recompute modules (--recompute-modules): "
          "it needs full training under megatron (given: workload {workload}, framework {framework})",
          AND(V("recompute_module_list").eq(1), OR(V("megatron_layers").eq(0), V("is_full").eq(0))),
          ckpt=V("checkpointing"), workload=V("workload"), framework=V("framework")),
    _skip("op_checkpointing", "checkpointing op (torchtitan's per-op selective checkpointing) is modelled for full "
          "training of dense Llama-, Mistral-, Qwen2-, Qwen3-, Gemma-, Phi-3-like layers under hf, fsdp2 or deepspeed, "
          "not in FP8, without tensor, context or pipeline parallelism (given: {model} of type {model_type}, "
          "{workload}, {framework}, {precision}, tp_size {tp}, cp_size {cp}, pp_size {pp})",
          AND(V("checkpointing").eq("op"),
              OR(_m("op_checkpoint_layers").eq(0), V("is_full").eq(0),
                 NOT(is_one_of(V("framework"), "hf", "fsdp2", "deepspeed")),
                 # full training (refused otherwise) trains every context-parallel and pipeline GPU: the inputs
                 V("fp8_gemms").eq(1), V("tp_size").gt(1), V("cp_size").gt(1), V("pp_size").gt(1))),
          model=V("model"), model_type=_m("model_type"), workload=V("workload"), framework=V("framework"),
          precision=V("precision"), tp=V("tp_size"), cp=V("cp_size"), pp=V("pp_size")),
    _skip("mla_up_proj", "checkpointing {ckpt} recomputes multi-head latent attention's up-projections "
          "(mla_up_proj), which model {model} does not have",
          AND(V("mla_up_proj_recomputed").eq(1), _m("is_mla").eq(0)),
          ckpt=V("checkpointing"), model=V("model")),
    _skip("ep_overlap", "ep_overlap on is Megatron-Core's combined 1F1B schedule: it needs MoE training under megatron "
          "with ep_size > 1, and vp_size > 1 with a pipeline; framework {framework}, ep_size {ep}, pp_size {pp}, "
          "vp_size {vp}",
          AND(V("ep_overlap").eq("on"), V("is_train").eq(1),
              OR(V("framework").ne("megatron"), V("num_experts").eq(0), V("ep_size").eq(1),
                 AND(V("pp_stages").gt(1), V("vp_degree").eq(1)))),
          framework=V("framework"), ep=V("ep_size"), pp=V("pp_stages"), vp=V("vp_degree")),
    # Without tensor parallelism there is nothing to overlap: NeMo's and Megatron-Bridge's comm-overlap config turns
    # the flag off with a warning below TP 2 (Megatron-LM's own arguments refuse it there: it needs sequence parallelism).
    _skip("tp_overlap", "tp_overlap on overlaps tensor parallelism's all-gathers and reduce-scatters with the matrix "
          "multiplications (Megatron-Core's --tp-comm-overlap, torchtitan's async TP): it needs training under "
          "megatron or fsdp2, with sequence parallelism where tp_size > 1; framework {framework}, tp_size {tp}, "
          "sequence_parallel {sp}",
          AND(V("tp_overlap").eq("on"), V("is_train").eq(1),
              OR(NOT(is_one_of(V("framework"), "megatron", "fsdp2")), AND(_TP.gt(1), V("sp_on").eq(0)))),
          framework=V("framework"), tp=_TP, sp=V("sequence_parallel")),
    # Chunks may be uneven (Megatron-Core's --decoder-first/last-pipeline-num-layers and pipeline layouts: Qwen3-235B's
    # 94 layers ran at PP8 × VP4 and PP32 × VP3, its embedding and loss counted as a chunk's layer each with
    # --account-for-embedding/loss-in-pipeline-split): each chunk needs one of the layers + 2; the busiest stage
    # holds ⌈layers ÷ pp⌉ (pp_stage_layers).
    _skip("vp_layers", "vp_size {vp} with pp_size {pp}: each of the pp × vp model chunks needs a layer of the "
          "{layers} (or the embedding or the loss), and the {accum} micro-batches per step must make whole rounds of "
          "pp (Megatron's interleaved schedule)",
          AND(V("vp_degree").gt(1), OR((V("num_layers") + 2).lt(V("pp_stages") * V("vp_degree")),
                                       MOD(V("grad_accum_steps"), V("pp_stages")).ne(0))),
          vp=V("vp_degree"), pp=V("pp_stages"), layers=V("num_layers"), accum=V("grad_accum_steps")),
    _skip("pp_layers", "pp_size {pp} exceeds the {layers} layers",
          V("pp_stages").gt(V("num_layers")), pp=V("pp_stages"), layers=V("num_layers")),
    _skip("pp_zero", "ZeRO-{zero} with pipeline parallelism: DeepSpeed and Megatron pipelines shard at most the "
          "optimizer (ZeRO-1); FSDP2 (torchtitan) runs under a pipeline",
          AND(V("pp_stages").gt(1), V("zero_stage").ge(2), V("framework").ne("fsdp2")), zero=V("zero_stage")),
    # (FSDP2 below ZeRO-2 is framework_zero's)
    _skip("precision_fsdp", "precision fsdp-bf16 is FSDP2's mixed-precision policy: it needs framework fsdp2, not "
          "{framework}",
          AND(V("is_full").eq(1), V("precision").eq("fsdp-bf16"), V("framework").ne("fsdp2")), framework=V("framework")),
    _skip("precision_fp8_params", "precision fp8-te-params is Transformer Engine's FP8 primary weights as Megatron-Core "
          "keeps them (--fp8-param-gather): it needs framework megatron, not {framework}",
          AND(V("is_train").eq(1), V("precision").eq("fp8-te-params"), V("framework").ne("megatron")),
          framework=V("framework")),
    _skip("fp8_qlora", "precision {precision} runs the linear layers in FP8 (Transformer Engine); QLoRA's 4-bit layers "
          "are dequantised to 16-bit for each matrix multiplication (bitsandbytes): choose workload lora for FP8 "
          "frozen layers, or a 16-bit precision",
          AND(V("workload").eq("qlora"), _p("fp8_gemms").eq(1)), precision=V("precision")),
    _skip("fp8_activations", "fp8_activations {v} is Megatron-Core's FP8 storage of activations beside FP8 GEMMs "
          "(Transformer Engine): it needs framework megatron with precision fp8-te or fp8-te-params, full training "
          "or LoRA of a dense model; choose off",
          AND(V("fp8_activations").ne("off"), OR(V("megatron_layers").eq(0), V("fp8_gemms").eq(0))),
          v=V("fp8_activations")),
    _skip("ep_dense", "ep_size {ep} needs a mixture-of-experts model",
          AND(V("ep_size").gt(1), V("num_experts").eq(0)), ep=V("ep_size")),
    _skip("dtype_experts", "weight_dtype {dtype} quantises the experts of a mixture-of-experts model; {model} has none",
          AND(V("experts_only_dtype").eq(1), V("num_experts").eq(0), V("is_full").eq(0)),
          dtype=V("weight_dtype"), model=V("model")),
    _skip("ep_divide", "ep_size {ep} must divide the {experts} experts",
          AND(V("ep_size").gt(1), MOD(V("num_experts"), V("ep_size")).ne(0)),
          ep=V("ep_size"), experts=V("num_experts")),
    # What each framework and engine can place (expert_shards says how they split the experts).
    _skip("ep_framework", "ep_size {ep}: framework {framework} has no expert parallelism (deepspeed, fsdp2 and "
          "megatron have)",
          AND(V("ep_size").gt(1), V("is_train").eq(1), is_one_of(V("framework"), "hf", "litgpt")),
          ep=V("ep_size"), framework=V("framework")),
    _skip("ep_train_dp", "ep_size {ep} must divide the data-parallel degree {dp} (num_gpus ÷ (tp {tp} × pp {pp})): "
          "training places experts inside data parallelism, each split over the tensor-parallel group",
          AND(V("ep_size").gt(1), V("is_train").eq(1), V("etp_size").eq(0),
              MOD(V("zero_group"), V("ep_size")).ne(0)),
          ep=V("ep_size"), dp=V("zero_group"), tp=_TP, pp=V("pp_stages")),
    _skip("etp_megatron", "etp_size {etp}: expert tensor parallelism is Megatron-Core's, for training a mixture of "
          "experts (framework {framework}, workload {workload}, {experts} experts)",
          AND(V("etp_size").gt(0), OR(V("is_train").eq(0), V("framework").ne("megatron"),
                                      V("num_experts").eq(0))),
          etp=V("etp_size"), framework=V("framework"), workload=V("workload"), experts=V("num_experts")),
    # MAX: a spreadsheet's AND computes every argument, and MOD by 0 would be its error (etp_size 0 is the default)
    _skip("etp_group", "etp_size {etp} × ep_size {ep} must divide tp {tp} × dp {dp}, the GPUs of one pipeline stage: "
          "Megatron-Core folds the experts' TP × EP × data parallelism onto them",
          AND(V("etp_size").gt(0),
              MOD(_TP * V("zero_group"), MAX(1, V("etp_size")) * V("ep_size")).ne(0)),
          etp=V("etp_size"), ep=V("ep_size"), tp=_TP, dp=V("zero_group")),
    _skip("ep_serve_group", "ep_size {ep} with tp_size {tp} on {gpus} GPUs: a serving EP group spans whole "
          "tensor-parallel groups (vLLM: EP = TP × DP) or splits one (SGLang: ep divides tp), and divides num_gpus",
          AND(V("ep_size").gt(1), V("is_train").eq(0),
              OR(MOD(_GPUS, V("ep_size")).ne(0),
                 AND(MOD(V("ep_size"), _TP).ne(0), MOD(_TP, V("ep_size")).ne(0)))),
          ep=V("ep_size"), tp=_TP, gpus=_GPUS),
    _skip("zero_inference", "ZeRO-{zero} applies to training; workload is {workload}",
          AND(V("zero_stage").gt(0), V("is_train").eq(0)), zero=V("zero_stage"),
          workload=V("workload")),
    _skip("framework_zero", "the {framework} framework does not run ZeRO-{zero} (FSDP2 shards with stage 2 or 3, "
          "LitGPT's scripts one device or, on several, FSDP's full sharding: ZeRO-3)",
          AND(V("is_train").eq(1), OR(AND(V("framework").eq("fsdp2"), V("zero_stage").lt(2)),
                                  AND(V("framework").eq("litgpt"),
                                      OR(is_one_of(V("zero_stage"), 1, 2),
                                         AND(V("zero_stage").eq(0), V("zero_group").gt(1)))))),
          framework=V("framework"), zero=V("zero_stage")),
    _skip("optimizer_framework", "optimizer adamw-8bit is bitsandbytes': Megatron-Core runs its own Adam or SGD "
          "(--optimizer), whose states it keeps in fp32 or bf16, not 8-bit",
          AND(V("is_train").eq(1), V("framework").eq("megatron"), V("optimizer").eq("adamw-8bit"))),
    _skip("optimizer_bf16", "optimizer adamw-bf16 is Megatron-Core's precision-aware optimizer, which runs with its "
          "distributed optimizer: it needs framework megatron at ZeRO-1 or above (given: framework {framework}, "
          "ZeRO-{zero})",
          AND(V("is_train").eq(1), V("optimizer").eq("adamw-bf16"),
              OR(V("framework").ne("megatron"), V("zero_stage").eq(0))),
          framework=V("framework"), zero=V("zero_stage")),
    _skip("offload_optimizer_8bit", "offload {offload} with optimizer adamw-8bit: an offloaded optimizer steps on the "
          "host (DeepSpeedCPUAdam, FSDP2's CPU offload, Megatron's --optimizer-cpu-offload) with fp32 or bf16 states; "
          "bitsandbytes' 8-bit AdamW runs on the GPU",
          AND(V("is_train").eq(1), V("offload").ne("none"), V("optimizer").eq("adamw-8bit")), offload=V("offload")),
    # DeepSpeed, FSDP2 and Megatron run their sharding on one rank (ZeRO-Offload on a single GPU); plain
    # data parallelism has nothing to shard.
    _skip("zero_one_rank", "ZeRO-{zero} on one data-parallel rank shards nothing",
          AND(V("zero_stage").gt(0), V("zero_group").eq(1), V("framework").eq("hf")),
          zero=V("zero_stage")),
    _skip("sp_tp", "sequence parallelism splits what tensor parallelism leaves whole: it needs tp_size > 1",
          AND(V("sequence_parallel").eq("on"), V("tp_size").eq(1), V("is_train").eq(1))),
    _skip("offload_framework", "megatron offloads the optimizer only (--optimizer-cpu-offload), not the parameters, "
          "and under its distributed optimizer (ZeRO-1) only, not Megatron-FSDP (ZeRO-2/3): offload all needs "
          "DeepSpeed ZeRO-Infinity or FSDP2's CPU offload",
          AND(V("is_train").eq(1), V("framework").eq("megatron"),
              OR(V("offload").eq("all"), AND(V("offload").ne("none"), V("zero_stage").ge(2))))),
    # ZeRO-Offload and ZeRO-Infinity shard what they offload: DeepSpeed's offload_optimizer needs stage 1-3 and
    # offload_param stage 3 (FSDP2's CPUOffloadPolicy offloads its full sharding). On one rank nothing shards, and a
    # stage changes nothing (ZeRO-Offload on one GPU).
    _skip("offload_zero", "offload {offload} with ZeRO-{zero} over {ranks} data-parallel GPUs: DeepSpeed offloads the "
          "optimizer states from ZeRO-1 and the parameters with ZeRO-3 only, each GPU its shard",
          AND(V("is_train").eq(1), V("zero_group").gt(1),
              OR(AND(V("offload").ne("none"), V("zero_stage").eq(0)),
                 AND(V("offload").eq("all"), V("zero_stage").lt(3)))),
          offload=V("offload"), zero=V("zero_stage"), ranks=V("zero_group")),
    _skip("offload_fsdp2", "fsdp2's CPU offload (CPUOffloadPolicy) moves the parameters, their gradients and the "
          "optimizer step to the host together: offload all, not the optimizer alone",
          AND(V("is_train").eq(1), V("framework").eq("fsdp2"), V("offload").eq("optimizer"))),
    _skip("litgpt_parallel", "tp_size {tp} × pp_size {pp}: LitGPT's training scripts shard by data parallelism and FSDP "
          "alone (finetune/lora.py's ModelParallelStrategy with tensor_parallel_size=1; full.py and pretrain.py "
          "FSDPStrategy)",
          AND(V("is_train").eq(1), V("framework").eq("litgpt"), (_TP * V("pp_size")).gt(1)), tp=_TP, pp=V("pp_size")),
    _skip("litgpt_qlora", "qlora on {gpus} GPUs: LitGPT quantises for training on one GPU only (finetune/lora.py: "
          "'Quantization is currently not supported for multi-GPU training')",
          AND(V("workload").eq("qlora"), V("framework").eq("litgpt"), _GPUS.gt(1)), gpus=_GPUS),
    _skip("offload_litgpt", "offload {offload}: LitGPT's scripts offload nothing to the host (finetune/full.py runs "
          "FSDPStrategy(cpu_offload=False) on several GPUs, no strategy on one)",
          AND(V("is_train").eq(1), V("framework").eq("litgpt"), V("offload").ne("none")), offload=V("offload")),
    _skip("offload_pipeline", "offload all with pipeline parallelism: the parameters are offloaded with ZeRO-3, which "
          "DeepSpeed and Megatron pipelines do not run",
          AND(V("is_train").eq(1), V("offload").eq("all"), V("pp_stages").gt(1))),
    _skip("offload_inference", "CPU offload applies to training",
          AND(V("offload").ne("none"), V("is_train").eq(0))),
    _skip("lora_arch", "LoRA is not modelled for {model_type} models: the target sets name no module of multi-head "
          "latent attention (q_a_proj, q_b_proj, kv_a_proj_with_mqa, kv_b_proj)",
          AND(V("is_lora").eq(1), V("adapter_params").eq(0), _m("num_mamba_layers").eq(0)),
          model_type=_m("model_type"), targets=V("lora_targets")),
    _skip("sdpa_math", "attention sdpa with {model_type}'s multi-query layers: transformers hands PyTorch's SDPA one "
          "key-value head for {heads} query heads without enable_gqa, which neither FlashAttention nor the "
          "memory-efficient kernel takes, and the math kernel it falls to keeps S x S scores (not modelled): choose "
          "flash or eager", AND(V("attention").eq("sdpa"), _m("sdpa_math").eq(1), V("litgpt").eq(0)),
          model_type=_m("model_type"), heads=V("num_heads")),
    _skip("hybrid_inference", "{model_type} models are estimated for inference, with adapters on vLLM alone: what "
          "training saves in their Mamba-2 layers, and SGLang's adapters on them, are not modelled",
          AND(_m("num_mamba_layers").gt(0),
              OR(V("workload").ne("inference"), AND(V("max_loras").gt(0), V("serving_engine").ne("vllm")))),
          model_type=_m("model_type")),
    _skip("mamba_tp", "tp_size {tp}: a Mamba-2 layer splits over the tensor-parallel GPUs by its {heads} heads and "
          "{groups} groups: tp_size must divide the heads, and the groups unless there is one (vLLM's MambaMixer2)",
          AND(_m("num_mamba_layers").gt(0),
              OR(MOD(_m("mamba_num_heads"), _TP).ne(0),
                 AND(MOD(_m("mamba_groups"), _TP).ne(0), _m("mamba_groups").ne(1)))),
          tp=_TP, heads=_m("mamba_num_heads"), groups=_m("mamba_groups")),
    _skip("empty_context", "inference needs prompt_len + gen_len > 0",
          AND(V("workload").eq("inference"), (V("prompt_len") + V("gen_len")).eq(0))),
    _skip("lora_engine", "max_loras {loras}: generate() serves one adapter at a time; adapter slots need a serving "
          "engine (vllm or sglang)",
          AND(V("max_loras").gt(0), V("engine_mode").eq(0)), loras=V("max_loras")),
    _skip("lora_moe", "max_loras {loras}: adapters on an MoE model's experts are modelled for vLLM without expert "
          "parallelism (vLLM refuses expert parallelism with LoRA; SGLang's expert adapters are not modelled)",
          AND(V("max_loras").gt(0), V("num_experts").gt(0),
              OR(V("serving_engine").ne("vllm"), V("ep_size").gt(1))), loras=V("max_loras")),
    _skip("lora_mla", "max_loras {loras}: adapters on multi-head latent attention are not modelled",
          AND(V("max_loras").gt(0), _m("kv_lora_rank").gt(0)), loras=V("max_loras")),
)


def check_table() -> None:
    """Every name a term reads is an input, an assumption or an earlier term (import-time check)."""
    known = set(INPUT_NAMES) | set(ASSUMPTION_DEFAULTS)
    for term in ROLE_TERMS:
        missing = term.expr.names() - known
        if missing:
            raise AssertionError(f"term {term.name} reads undefined {sorted(missing)}")
        known.add(term.name)
    for rule in SKIP_RULES:
        for expr in (rule.when, *(e for _, e in rule.values)):
            if expr.names() - known:
                raise AssertionError(f"skip rule {rule.code} reads undefined {sorted(expr.names() - known)}")


def inlined(expr: Expr) -> Expr:
    """The expression over inputs, assumptions and lookups only: every term it reads replaced by the
    term's definition, its conditions without the 1/0 flags the terms compute (conditions_of). A
    check may not read a term's cell: the term's cell reads the check."""
    if isinstance(expr, Var) and expr.name in TERM_BY_NAME:
        return inlined(TERM_BY_NAME[expr.name].expr)
    children = expr.children()
    if not children:
        return expr
    return conditions_of(with_children(expr, [inlined(c) for c in children]))


def _flag(e: Expr) -> Expr | None:
    """c of a flag IF(c, 1, 0), else None."""
    if isinstance(e, Fn) and e.name == "IF" and all(type(a) is Num for a in e.args[1:]):
        if (e.args[1].value, e.args[2].value) == (1, 0):
            return e.args[0]
    return None


def condition(e: Expr) -> Expr:
    """An expression whose truth alone is read, as it reads without flags: a term's flag is IF(c, 1, 0)
    and terms test it as flag = 1, flag = 0 or flag + flag > 0, which inlined read c, NOT(c) and
    OR(c, c'). Same truth in Excel and Python; only where no value but the truth is used."""
    if isinstance(e, Cmp) and type(e.b) is Num:
        flag = _flag(e.a)
        if flag is not None and (e.op, e.b.value) in (("=", 1), (">", 0), ("<>", 0)):
            return flag
        if flag is not None and (e.op, e.b.value) == ("=", 0):
            return NOT(flag)
        if (e.op, e.b.value) == (">", 0) and isinstance(e.a, Op) and e.a.op == "+":
            flags = (_flag(e.a.a), _flag(e.a.b))
            if None not in flags:  # OR(a, OR(b, c)) is OR(a, b, c)
                return OR(*(b for f in flags for b in (f.args if isinstance(f, Fn) and f.name == "OR" else (f,))))
    return e


def conditions_of(e: Expr) -> Expr:
    """The node with condition() applied where only truth is read: IF's test and the arguments of
    AND, OR and NOT."""
    if isinstance(e, Fn) and e.name == "IF":
        return replace(e, args=(condition(e.args[0]),) + tuple(e.args[1:]))
    if isinstance(e, Fn) and e.name in ("AND", "OR", "NOT"):
        return replace(e, args=tuple(condition(a) for a in e.args))
    return e


check_table()
