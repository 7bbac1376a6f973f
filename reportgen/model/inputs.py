"""Every scenario input, declared once.

INPUTS is the table the rest of the program reads: the Scenario class is made from it, presets and
the command line validate values with it (`Scenario.from_mapping`), the CLI's options of `estimate`
and `plan` are generated from it, the workbook writes one input column per entry with its data
validation, and the report's method section prints it. RLHF_INPUTS does the same for the settings of
a PPO/DPO/GRPO group. Adding an input is one entry here, plus the terms that read it (terms.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from functools import lru_cache
from typing import Any, Callable, Collection, Iterable, Mapping

from . import lookups as tb
from ..errors import InputError, unknown_name

# The workloads: single models, the role a frozen RLHF model plays, and the RLHF algorithms.
TRAINED_WORKLOADS = ("full", "lora", "qlora")
SINGLE_WORKLOADS = ("inference",) + TRAINED_WORKLOADS
FROZEN = "frozen"  # reference/reward models of an RLHF group: scored, never trained
ROLLOUT = "rollout"  # an RLHF group's rollout engine on its own GPUs: generates, never trains or scores
RLHF_ALGORITHMS = ("ppo", "dpo", "grpo")
WORKLOAD_TYPES = SINGLE_WORKLOADS + RLHF_ALGORITHMS
LORA_TARGET_SETS = ("q_proj,v_proj", "q_proj,k_proj,v_proj,o_proj", "all-linear")
SERVING_ENGINES = ("hf-generate", "vllm", "sglang")


@dataclass(frozen=True)
class Input:
    name: str
    label: str
    help: str
    default: Any
    choices: tuple[str, ...] = ()  # allowed text values ("" kind: any catalog name, checked elsewhere)
    limits: tuple[int, int] | None = None  # whole numbers: inclusive range
    catalog: str = ""  # "model" or "gpu": the value names a catalog entry
    unit: str = ""  # what a whole number counts
    option: str = ""  # command-line option ("" = the input is set by the program, not by the user)
    internal: tuple[str, ...] = ()  # choices the program sets but a user may not (workload "frozen")
    preset_axis: bool = True  # a preset matrix may sweep it (the workload and the head are set otherwise)
    applies: tuple[str, ...] = ()  # the workloads whose result it changes ("" = all)
    layout: bool = False  # how a job runs (GPUs, sharding, kernels), not what the job is: a plan may choose it
    headline: bool = False  # the summary names it in every requirement it applies to (dtype, batch, tokens…)
    only_with: tuple[str, Collection] | None = None  # read only when another input has one of these values
    # who reads it, in the method table's words, where its workloads read it only as an RLHF role ("rollout")
    readers: str = ""
    # a parallel layout's short form ("TP{v}"), shown after the GPUs in every label where it is not the default
    tag: str = ""

    def applies_to(self, workload: str) -> bool:
        return not self.applies or workload in self.applies

    decimal: bool = False  # with limits: a number with a fraction (gpu_memory_utilization)

    @property
    def is_int(self) -> bool:
        return self.limits is not None and not self.decimal

    @property
    def user_choices(self) -> tuple[str, ...]:
        return tuple(c for c in self.choices if c not in self.internal)

    def check(self, value: Any, *, source: str | None, key_path: str, gpus: Iterable[str] = (),
              allow_internal: bool = False) -> Any:
        """The value, checked against this input's type and allowed set; whole floats become ints."""
        if self.decimal:
            lo, hi = self.limits
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InputError(f"expected a number, got {value!r}", source=source, key_path=key_path)
            if not lo <= value <= hi:  # NaN fails both comparisons
                raise InputError(f"must be between {lo:g} and {hi:g}, got {value}", source=source, key_path=key_path)
            return float(value)
        if self.is_int:
            if isinstance(value, bool) or not isinstance(value, int):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                else:
                    raise InputError(f"expected a whole number, got {value!r}", source=source, key_path=key_path)
            lo, hi = self.limits
            if not lo <= value <= hi:
                raise InputError(f"must be between {lo} and {hi:,}, got {value}", source=source, key_path=key_path)
            return value
        if isinstance(value, bool) and {"on", "off"} <= set(self.choices):
            value = "on" if value else "off"  # YAML 1.1 reads an unquoted on/off as true/false
        if isinstance(value, bool):
            raise InputError(f"expected text, got {value!r} (YAML reads an unquoted yes, no, on or off as true or "
                             "false: quote it)", source=source, key_path=key_path)
        if not isinstance(value, str):
            raise InputError(f"expected text, got {value!r}", source=source, key_path=key_path)
        if self.catalog == "gpu":
            gpus = list(gpus)
            if value not in gpus:
                raise unknown_name("GPU", value, gpus, source=source, key_path=key_path)
        elif self.choices:
            allowed = self.choices if allow_internal else self.user_choices
            if value not in allowed:
                raise unknown_name(self.name.replace("_", " "), value, allowed, source=source, key_path=key_path)
        return value


_TOKENS = (0, 10_000_000)  # upper bounds keep every product far inside float precision
_TRAINING = TRAINED_WORKLOADS
_SERVING = ("inference",)  # and an RLHF actor's rollouts (its prompt and generated tokens)
_ENGINES = ("serving_engine", ("vllm", "sglang"))  # what only an engine with a KV block pool reads
INPUTS: tuple[Input, ...] = (
    Input("model", "Model", "catalog model name (Models sheet)", "", catalog="model"),
    Input("workload", "Workload", "inference, full, lora, qlora; RLHF roles use frozen for reference/reward and "
          "rollout for a rollout engine on its own GPUs", "inference", choices=SINGLE_WORKLOADS + (FROZEN, ROLLOUT),
          internal=(FROZEN, ROLLOUT), preset_axis=False),
    Input("head", "Head", "lm (language-model head) or value (scalar head of a critic or reward model)", "lm",
          choices=tb.HEADS, preset_axis=False),
    Input("precision", "Training precision", "recipe for trained weights (Precisions sheet)", "bf16-mixed",
          choices=tuple(tb.PRECISIONS.rows), headline=True, option="--precision", applies=_TRAINING),
    Input("weight_dtype", "Weight dtype", "dtype of frozen or served weights (Dtypes sheet)", "bf16",
          choices=tuple(tb.DTYPES.rows), headline=True, option="--weight-dtype", applies=("inference", "lora", FROZEN)),
    Input("kv_dtype", "KV-cache dtype", "dtype of the KV cache (Dtypes sheet)", "bf16",
          choices=tuple(d for d, row in tb.DTYPES.rows.items() if not row["experts_only"]),
          option="--kv-dtype", applies=_SERVING),
    Input("optimizer", "Optimizer", "Optimizers sheet", "adamw", choices=tuple(tb.OPTIMIZERS.rows),
          option="--optimizer", applies=_TRAINING),
    Input("optimizer_impl", "Optimizer impl.", "fused, or foreach (one extra state-sized temporary)", "fused",
          choices=tb.OPTIMIZER_IMPLS, option="--optimizer-impl", applies=_TRAINING, layout=True),
    Input("batch_size", "Batch (sequences per GPU)", "micro-batch per data-parallel rank, or concurrent sequences", 1,
          limits=(1, 1_000_000), unit="sequences", headline=True, option="--batch"),
    Input("seq_len", "Sequence length (tokens)", "training sequence length", 4096, limits=(1, _TOKENS[1]),
          unit="tokens", headline=True, option="--seq", applies=_TRAINING + (FROZEN,)),
    Input("prompt_len", "Prompt length (tokens)", "inference / rollout prompt length", 4096, limits=_TOKENS,
          unit="tokens", headline=True, option="--prompt-len", applies=_SERVING),
    Input("gen_len", "Generated tokens", "tokens generated per sequence (KV cache grows with it)", 0, limits=_TOKENS,
          unit="tokens", headline=True, option="--gen-len", applies=_SERVING),
    Input("logits", "Logits kept", "last (generate) or all prompt positions (a plain forward)", "last",
          choices=tb.LOGITS, option="--logits", applies=("inference",)),
    Input("checkpointing", "Gradient checkpointing", "none, full, selective (the attention core), or under megatron "
          "a list of its --recompute-modules joined by '+': layernorm (the norms' outputs), moe_act (the experts' "
          "activation), moe (the whole MoE layer), mla_up_proj (MLA's queries, keys and values), mlp (the dense "
          "layers' MLPs), as its published recipes combine them; or op, torchtitan's per-op selective checkpointing (a "
          "layer keeps its input, the attention kernel's output and every other matrix multiplication's)", "none",
          choices=tb.CHECKPOINTING,
          headline=True, option="--checkpointing", applies=_TRAINING),
    Input("attention", "Attention kernel", "flash (FlashAttention: no S×S matrix), sdpa (transformers' default, "
          "PyTorch's scaled_dot_product_attention: flash's memory and time, but from a sequence as long as a sliding "
          "window, where transformers passes a mask, the memory-efficient kernel saves each layer's mask and K/V "
          "repeated to every head), fused (the same memory as flash; a Hopper-native kernel, cuDNN's through "
          "Transformer Engine as Megatron-Core runs it, or FlashAttention-3: timed at the GPU type's "
          "fused_attention_efficiency) or eager", "flash", choices=tb.ATTENTION,
          option="--attention", layout=True),
    Input("experts_implementation", "MoE experts implementation", "MoE: grouped_mm (transformers' default: every "
          "routed token-expert pair at once) or eager (its per-expert loop: one expert's tokens at a time)",
          "grouped_mm", choices=tb.EXPERTS_IMPLEMENTATIONS, option="--experts-implementation",
          applies=_SERVING + (FROZEN,), layout=True),
    Input("dropout", "Dropout", "off (as modern LLM configs set it) or config (the model config's probabilities, "
          "e.g. GPT-2's 0.1: masks and dropped copies are saved for backward)", "off", choices=tb.DROPOUT,
          option="--dropout", applies=_TRAINING),
    Input("adapter_dtype", "LoRA adapter dtype", "fp32 (PEFT ≥ 0.12 keeps adapters, their gradients and Adam states "
          "in fp32 and casts each adapted input) or model (older PEFT, LitGPT, torchtune: the model's dtype)", "fp32",
          choices=tb.ADAPTER_DTYPES, option="--adapter-dtype", applies=("lora", "qlora")),
    Input("lora_dropout", "LoRA dropout", "off (PEFT's default 0) or on (lora_dropout > 0, e.g. LitGPT's 0.05: each "
          "adapted layer keeps a 1-byte mask and a dropped copy of its input)", "off", choices=tb.LORA_DROPOUT,
          option="--lora-dropout", applies=("lora", "qlora")),
    Input("loss", "Loss computation", "fp32 (transformers upcasts the logits; autocast runs the loss in fp32), "
          "fp32-chunked (torchtune's CEWithChunkedOutputLoss), compute (the compute dtype: LitGPT bf16-true) or "
          "compute-chunked (LitGPT's chunked_cross_entropy): the dtype of the saved log-probabilities and whether "
          "the logits' gradient is materialised whole", "fp32", choices=tb.LOSSES, option="--loss", applies=_TRAINING),
    Input("framework", "Training framework", "hf (Trainer/plain PyTorch; ZeRO counted as the paper does), deepspeed, fsdp2, "
          "megatron (each adds its buffers: Assumptions sheet) or litgpt (LitGPT's own model code; FSDP for "
          "ZeRO-2/3)", "hf", choices=tb.FRAMEWORKS, option="--framework",
          applies=_TRAINING, layout=True),
    Input("num_gpus", "GPUs", "GPUs serving this model", 1, limits=(1, 1_000_000), unit="GPUs", option="--gpus",
          layout=True),
    Input("zero_stage", "ZeRO stage", "0-3", 0, limits=(0, 3), option="--zero", applies=_TRAINING, layout=True,
          tag="ZeRO-{v}"),
    Input("tp_size", "Tensor parallel", "tensor-parallel degree (divides GPUs and heads)", 1, limits=(1, 1024),
          unit="GPUs", option="--tp", layout=True, tag="TP{v}"),
    Input("pp_size", "Pipeline parallel", "pipeline stages (1F1B schedule): each holds its share of the layers and "
          "up to pp_size micro-batches of their activations; set --grad-accum ≥ pp_size to fill the pipeline", 1,
          limits=(1, 256), unit="stages", option="--pp", applies=_TRAINING, layout=True, tag="PP{v}"),
    Input("ep_size", "Expert parallel", "MoE: GPUs the routed experts are spread over (1 = every GPU holds all)", 1,
          limits=(1, 1024), unit="GPUs", option="--ep", layout=True, tag="EP{v}"),
    Input("etp_size", "Expert tensor parallel", "MoE training under megatron: GPUs each routed expert is split over "
          "(Megatron-Core's expert_tensor_parallel_size); 0 = tp_size, its default; 1 keeps every expert whole on "
          "its GPU, as MoE recipes with tensor parallelism often set", 0, limits=(0, 1024), unit="GPUs",
          option="--etp", applies=_TRAINING, layout=True, tag="ETP{v}"),
    Input("moe_load_imbalance", "MoE load imbalance", "MoE training with ep_size > 1: the routed tokens of the "
          "busiest expert-parallel GPU ÷ the mean; its experts' compute, its all-to-all and its routed tokens' saved "
          "activations grow by it, and the whole group waits for it. 1 = balanced, as published benchmark runs "
          "force it (Megatron-Core's moe_router_force_load_balancing, 'only for benchmark'); set what your router "
          "reaches", 1.0, limits=(1.0, 16.0), decimal=True, option="--moe-load-imbalance", applies=_TRAINING),
    Input("moe_dispatcher", "MoE token dispatcher", "MoE training with ep_size > 1: alltoall (NCCL's all-to-all, "
          "Megatron-Core's alltoall dispatcher: a token's copy for each of its experts crosses the link to that "
          "expert's GPU) or deepep (DeepEP, Megatron-Core's flex dispatcher: a token crosses the network once per "
          "other node holding one of its experts, then NVLink inside it)", "alltoall", choices=tb.MOE_DISPATCHERS,
          option="--moe-dispatcher", applies=_TRAINING, layout=True),
    Input("ep_overlap", "MoE all-to-all overlap", "MoE training under megatron with ep_size > 1: on "
          "(Megatron-Core's --overlap-moe-expert-parallel-comm, its combined 1F1B schedule: one micro-batch's "
          "dispatch and combine run while another's forward or backward computes; with a pipeline it needs "
          "vp_size > 1) or off", "off", choices=tb.EP_OVERLAP, option="--ep-overlap", applies=_TRAINING, layout=True),
    Input("tp_overlap", "Tensor-parallel communication overlap", "training under megatron or fsdp2, with sequence "
          "parallelism where tp_size > 1 (at tp_size 1 it changes nothing): on (Megatron-Core's --tp-comm-overlap "
          "with Transformer Engine's userbuffers, NeMo's ub_tp_comm_overlap; torchtitan's async TP: each layer's "
          "all-gathers and reduce-scatters run in chunks beside its matrix multiplications) or off (they wait for "
          "each other)", "off",
          choices=tb.TP_OVERLAP, option="--tp-overlap", applies=_TRAINING, layout=True),
    Input("fp8_activations", "FP8 activations", "training under megatron with an FP8 precision: what is saved for "
          "backward in FP8 beside the GEMM inputs: mlp (the MLP activation function's input, gate and up: "
          "--activation-func-fp8-input-store, NeMo's FP8_ACT), attention (Transformer Engine's FP8 attention keeps "
          "Q, K, V and its output in FP8: --fp8-dot-product-attention, FP8_DPA), mlp+attention, or off (16-bit); "
          "memory only, FP8 attention timed in 16-bit", "off", choices=tb.FP8_ACTIVATIONS,
          option="--fp8-activations", applies=_TRAINING, layout=True),
    Input("vp_size", "Virtual pipeline stages", "training with pp_size > 1: model chunks per GPU (Megatron's "
          "interleaved 1F1B, virtual_pipeline_model_parallel_size): the bubble shrinks vp_size-fold and the first "
          "stage holds (1 + (pp − 1) ÷ (pp × vp)) times the activations", 1, limits=(1, 64), unit="chunks",
          option="--vp", applies=_TRAINING, layout=True, tag="VP{v}"),
    Input("cp_size", "Context parallel", "training: GPUs one sequence is split over (ring attention: Megatron-Core's "
          "and torchtitan's context parallelism; under deepspeed, Ulysses sequence parallelism, which swaps sequence "
          "shards for head shards around attention); each holds seq_len ÷ cp_size tokens of every layer's activations",
          1, limits=(1, 1024), unit="GPUs", option="--cp", applies=_TRAINING, layout=True, tag="CP{v}"),
    Input("sequence_parallel", "Sequence parallelism", "with tensor parallelism, split the norms, dropouts and "
          "layer inputs along the sequence too (Korthikanti et al. 2022): on, off, or auto (the framework's way: on "
          "under megatron and fsdp2, whose recipes and torchtitan's TP plan turn it on; off under hf, deepspeed and "
          "litgpt)", "auto", choices=tb.SEQUENCE_PARALLEL, option="--sequence-parallel", applies=_TRAINING,
          layout=True),
    Input("offload", "CPU offload", "none, optimizer, or all (optimizer and parameters)", "none", choices=tb.OFFLOAD,
          option="--offload", applies=_TRAINING, layout=True),
    Input("lora_rank", "LoRA rank", "LoRA rank r", 16, limits=(1, 65536), option="--lora-rank",
          applies=("lora", "qlora")),
    Input("lora_targets", "LoRA targets", "q_proj,v_proj | q_proj,k_proj,v_proj,o_proj | all-linear (where q, k and v "
          "are one layer, as in GPT-2, GPT-NeoX, Falcon, BLOOM, MPT and Phi-3, that layer; o_proj: the attention's "
          "output projection)", "q_proj,v_proj",
          choices=LORA_TARGET_SETS, option="--lora-targets", applies=("lora", "qlora")),
    Input("lora_modules_to_save", "LoRA modules to save", "none, or embed-head (PEFT modules_to_save=[\"embed_tokens\", "
          "\"lm_head\"], as fine-tuning scripts set for new tokens or a chat template: trainable copies of the "
          "embedding and LM head in the model's dtype, with their gradients and Adam states)", "none",
          choices=tb.MODULES_TO_SAVE, option="--modules-to-save", applies=("lora", "qlora")),
    Input("gpu", "GPU type", "GPUs sheet", "H100-80GB-SXM", catalog="gpu", option="--gpu", layout=True),
    Input("serving_engine", "Serving engine", "hf-generate (every prompt prefilled at once, the cache grows as it "
          "generates) or an engine that pre-allocates a KV block pool and prefills in chunks: vllm, sglang",
          "hf-generate", choices=SERVING_ENGINES, option="--engine", applies=_SERVING, layout=True),
    Input("gpu_memory_utilization", "GPU memory utilisation", "engines: the share of GPU memory the engine takes "
          "(vLLM gpu_memory_utilization, SGLang mem_fraction_static)", 0.9, limits=(0.05, 1.0), decimal=True,
          option="--gpu-memory-utilization", applies=_SERVING, layout=True, only_with=_ENGINES),
    Input("max_num_batched_tokens", "Tokens per engine step", "engines: prompt tokens prefilled per step (chunked "
          "prefill; vLLM max_num_batched_tokens)", 8192, limits=(16, 10_000_000), unit="tokens",
          option="--max-num-batched-tokens", applies=_SERVING, layout=True, only_with=_ENGINES),
    Input("engine_sampler", "Engine sampler", "vLLM's top-k/top-p sampling, which its start-up profile runs over "
          "max_num_seqs (the batch) × the vocabulary: fused (fused kernels such as FlashInfer's, no sort: what vLLM "
          "0.17 and later profile) or sort (the PyTorch-native fallback that sorts every row; vLLM logs 'Falling "
          "back to the PyTorch-native implementation of top-p & top-k sampling': vLLM 0.16 and mid-2025 builds)",
          "fused",
          choices=tb.SAMPLERS, option="--engine-sampler", applies=_SERVING, layout=True, only_with=_ENGINES),
    Input("max_loras", "LoRA adapters at once", "engines: LoRA adapters served on the one base model, each in a slot "
          "the engine allocates at start-up on every linear layer at max_lora_rank (vLLM max_loras, SGLang "
          "max_loras_per_batch); requests for other adapters wait for a slot; 0: the base model alone", 0,
          limits=(0, 1024), unit="adapters", option="--max-loras", applies=_SERVING, only_with=_ENGINES),
    Input("max_lora_rank", "Largest LoRA rank served", "engines with max_loras > 0: the rank every slot is allocated "
          "at, and that the kernels compute over, padded (vLLM max_lora_rank, default 16)", 16, limits=(1, 512),
          option="--max-lora-rank", applies=_SERVING, only_with=("max_loras", range(1, 1025))),
    Input("rollout_tp_size", "Rollout engine TP", "RLHF with a rollout engine: its own tensor-parallel degree "
          "(veRL's rollout.tensor_model_parallel_size, OpenRLHF's vllm_tensor_parallel_size), whatever the "
          "trainer's (OpenRLHF's default 1)", 1, limits=(1, 1024), option="--rollout-tp", applies=_TRAINING,
          only_with=_ENGINES, layout=True, readers="rollout"),
    Input("engine_sleep", "Rollout engine while the actor trains", "RLHF with a rollout engine beside the actor: "
          "offload (vLLM sleep level 1: its weights copied to host memory and back over PCIe, its KV pool freed: "
          "OpenRLHF's vllm_enable_sleep, veRL with vLLM before 0.8.5), discard (level 2: its weights freed too, the "
          "refit writing the trained ones: veRL with vLLM 0.8.5 and later, and with SGLang, whose hybrid engine "
          "releases its weights without a host copy), or none (awake: its whole budget stays on the GPUs while the "
          "actor trains, as in TRL's colocate mode without vllm_enable_sleep_mode or veRL with free_cache_engine "
          "off)", "offload", choices=tb.ENGINE_SLEEP, option="--engine-sleep",
          applies=_TRAINING, only_with=_ENGINES, layout=True, readers="rollout"),
    Input("max_gen_len", "Longest response (tokens)", "RLHF rollouts: the longest response of an iteration, which "
          "the generation waits for (gen_len is then the mean, which sets the cache and the work); 0: every "
          "response is gen_len long", 0, limits=_TOKENS, unit="tokens", option="--max-gen-len", applies=_TRAINING,
          only_with=("gen_len", range(1, _TOKENS[1] + 1)), readers="rollout"),
    Input("generation_factor", "Sequences generated per trained one", "RLHF rollouts with dynamic sampling (DAPO, "
          "arXiv:2503.14476; veRL's algorithm.filter_groups): groups whose rewards are all equal teach nothing and "
          "are dropped, so the rollout generates this many sequences for each one the iteration trains on (the "
          "passes and updates see only those kept); 1: every generated sequence is trained on", 1.0,
          limits=(1, 64), decimal=True, option="--generation-factor", applies=_TRAINING,
          only_with=("gen_len", range(1, _TOKENS[1] + 1)), readers="rollout"),
    Input("grad_accum_steps", "Gradient accumulation", "micro-batches per optimizer step (gradients are synchronised "
          "once per step; the earlier micro-batches' gradients stay in memory through the later ones)", 1,
          limits=(1, 65536), unit="micro-batches", option="--grad-accum", applies=_TRAINING),
    Input("train_tokens", "Tokens to train on", "training tokens the run processes (time and cost)", 1_000_000_000,
          limits=(1, 10**15), unit="tokens", headline=True, option="--train-tokens", applies=_TRAINING),
)
INPUT_NAMES = tuple(i.name for i in INPUTS)


@lru_cache(maxsize=None)  # read once per result when a sweep's results are grouped by requirement
def job_inputs(workload: str, actor_workload: str = "full") -> tuple[str, ...]:
    """The inputs that say what a job of this workload is (not how it is laid out): two scenarios that
    differ in one of them answer different requirements. The model and workload say it too. An RLHF
    algorithm's are those its group reads (_reads): its actor's (actor_workload: how it trains), a PPO
    or GRPO actor's rollouts, whose lengths set its sequence length, and its frozen roles'. One read only
    with another input's value (the adapters' rank, with adapters) is one of them whatever that value."""
    return tuple(i.name for i in INPUTS if not i.layout and i.preset_axis and i.catalog != "model"
                 and _reads(i, workload, actor_workload))
INPUT_BY_NAME = {i.name: i for i in INPUTS}
# The parallel layout in the order labels show it (after the GPUs): the inputs with a tag.
PARALLEL_LAYOUT = ("zero_stage", "tp_size", "pp_size", "vp_size", "cp_size", "ep_size", "etp_size")
assert set(PARALLEL_LAYOUT) == {i.name for i in INPUTS if i.tag}, "every tagged input has its place in labels"

# What each workload changes from the inputs' defaults (presets and the CLI both start here).
WORKLOAD_DEFAULTS: dict[str, dict[str, Any]] = {
    "inference": {},
    "full": {"prompt_len": 0, "gen_len": 0},
    "lora": {"prompt_len": 0, "gen_len": 0},
    "qlora": {"prompt_len": 0, "gen_len": 0, "weight_dtype": "nf4"},
    "ppo": {"prompt_len": 512, "gen_len": 512},
    "grpo": {"prompt_len": 512, "gen_len": 512},
    "dpo": {"prompt_len": 0, "gen_len": 0},
}

# ---------------------------------------------------------------------------------------------
# RLHF groups: the settings around the actor scenario

PLACEMENTS = ("colocated", "separate")
ROLLOUT_PLACEMENTS = ("actor", "separate")  # where a PPO/GRPO group's rollout engine runs
ROLLOUT_MODES = ("sync", "async")  # whether engines apart generate the next iteration while the trainers train
PADDED_ROLES = ("none", "critic", "all")  # which RLHF roles keep their padding (veRL use_remove_padding off)
RLHF_ROLES = {"ppo": ("actor", "critic", "reference", "reward"), "grpo": ("actor", "reference", "reward"),
              "dpo": ("policy", "reference")}
ALL_ROLES = tuple(dict.fromkeys(r for roles in RLHF_ROLES.values() for r in roles)) + (ROLLOUT,)


def group_roles(algorithm: str, rollout_placement: str = "actor") -> tuple[str, ...]:
    """The roles of an RLHF group: the algorithm's models, and the rollout engine where it has its own GPUs."""
    return RLHF_ROLES[algorithm] + ((ROLLOUT,) if rollout_placement == "separate" else ())

RLHF_INPUTS: tuple[Input, ...] = (
    Input("critic_model", "Critic model", "PPO critic (default: the actor's model)", None, catalog="model",
          option="--critic-model"),
    Input("reward_model", "Reward model", "reward model (default: the actor's model)", None, catalog="model",
          option="--reward-model"),
    Input("reference_model", "Reference model", "reference model (default: the actor's model)", None,
          catalog="model", option="--reference-model"),
    Input("reference", "Reference", "PPO/GRPO: a frozen reference model gives the KL term, or none (no KL "
          "penalty: veRL's use_kl_loss and use_kl_in_reward off)", "model", choices=("model", "none"),
          option="--reference"),
    Input("reward", "Reward", "PPO/GRPO: a reward model scores the rollouts, or a rule does (a verifier of math "
          "answers or unit tests, on the CPU: no reward role)", "model", choices=("model", "rule"), option="--reward"),
    Input("placement", "Placement", "all roles on the same GPUs, or a GPU pool per role", "colocated",
          choices=PLACEMENTS, option="--placement"),
    Input("rollout_placement", "Rollout engine placement", "PPO/GRPO with a rollout engine (vllm, sglang): the "
          "engine on the actor's GPUs, asleep while the actor trains (veRL's hybrid engine), or on a pool of its own, "
          "role rollout (OpenRLHF's default: vllm_num_engines × vllm_tensor_parallel_size GPUs), which receives the "
          "trained weights over the network each iteration; beside separate pools or colocated trainers (OpenRLHF's "
          "colocated actor, reference and critic, veRL's one-step-off-policy layout)", "actor",
          choices=ROLLOUT_PLACEMENTS, option="--rollout-placement"),
    Input("rollout_mode", "Rollout mode", "PPO/GRPO with the rollout engine apart: sync, the engines generate an "
          "iteration's rollouts and then the trainers train on them (on-policy); async, the engines generate the next "
          "iteration's rollouts while the trainers train on this one's (one step off-policy: OpenRLHF's --async_train, "
          "veRL's one-step-off-policy recipe), the trained weights reaching the engines between iterations", "sync",
          choices=ROLLOUT_MODES, option="--rollout-mode"),
    Input("group_size", "GRPO group size", "GRPO: samples per prompt", 8, limits=(1, 1024), unit="sequences",
          option="--group-size"),
    Input("prompts_per_iteration", "Prompts per iteration", "prompts all data-parallel ranks take together per "
          "iteration (veRL's data.train_batch_size, OpenRLHF's rollout_batch_size): each rank's batch is this "
          "divided by its data-parallel ranks, so more GPUs end an iteration sooner; default: batch × the ranks",
          None, limits=(1, 10**7), unit="prompts", option="--prompts-per-iteration"),
    Input("micro_batch_size", "Micro-batch", "sequences per GPU in each training, log-probability and scoring "
          "pass: an iteration's rollouts (batch × group size per data-parallel rank; DPO: its pairs' two sequences) "
          "run in micro-batches of this size, their gradients accumulated into one optimizer step (veRL's "
          "ppo_micro_batch_size_per_gpu, OpenRLHF's micro_train_batch_size); it divides them; default: all at once",
          None, limits=(1, 65536), unit="sequences", option="--micro-batch"),
    Input("padded_roles", "Padded roles", "PPO/GRPO: the roles whose log-probability, value, scoring and training "
          "passes run on padded sequences of padded_len tokens (veRL without padding removal: use_remove_padding "
          "off), instead of the mean prompt + gen_len: none, the critic (critic.model.use_remove_padding off), or "
          "every role", "none", choices=PADDED_ROLES, option="--padded-roles"),
    Input("padded_len", "Padded length", "PPO/GRPO with padded roles: the tokens every sequence is padded to (veRL: "
          "data.max_prompt_length + data.max_response_length, the prompt and response caps); default: the prompt "
          "length + the longest response", None, limits=(1, 10**7), unit="tokens", option="--padded-len",
          only_with=("padded_roles", ("critic", "all"))),
    Input("actor_workload", "Actor workload", "how the actor (DPO: policy) trains", "full",
          choices=TRAINED_WORKLOADS, option="--actor-workload"),
    Input("role_gpus", "GPUs per role", "separate pools: GPUs of each role (role: count); colocated trainers: the "
          "rollout engines' apart", None),
    Input("role_gpu_types", "GPU type per role", "separate pools: GPU type of each role (role: GPU), e.g. the "
          "frozen judges on a cheaper inference card; colocated trainers: the rollout engines' apart", None,
          catalog="gpu"),
)
RLHF_INPUT_BY_NAME = {i.name: i for i in RLHF_INPUTS}


# What an RLHF group's actor reads besides its training inputs: PPO and GRPO generate their rollouts
# (the serving inputs) and train on prompt + generated tokens (seq_len is not theirs); DPO trains on
# given pairs of seq_len tokens and generates nothing. Frozen roles read their own inputs. A group is
# timed per iteration: its tokens to train on are not read. A rollout engine counts as its whole budget
# (gpu_memory_utilization): how it splits it (its profile, its pool) is not estimated.
_ROLLOUT_WORKLOADS = {"ppo": ("inference",), "grpo": ("inference",), "dpo": ()}
_ROLLOUT_ENGINE_SPLIT = ("max_num_batched_tokens", "engine_sampler", "max_loras", "max_lora_rank")
_NOT_READ = {"ppo": ("seq_len", "train_tokens") + _ROLLOUT_ENGINE_SPLIT,
             "grpo": ("seq_len", "train_tokens") + _ROLLOUT_ENGINE_SPLIT, "dpo": ("train_tokens",)}


def applies(i: Input, workload: str, actor_workload: str = "full", values: Mapping[str, Any] = {}) -> bool:
    """Whether input i changes a result of this workload (an RLHF algorithm: of its group), given the
    other inputs' values (defaults where not given)."""
    if i.only_with:
        other, wanted = i.only_with
        if values.get(other, INPUT_BY_NAME[other].default) not in wanted:
            return False
    return _reads(i, workload, actor_workload)


def _reads(i: Input, workload: str, actor_workload: str) -> bool:
    """Whether input i changes a result of this workload (an RLHF algorithm: of its group) for some values
    of the other inputs."""
    if workload not in RLHF_ROLES:
        return i.applies_to(workload)
    if i.name in _NOT_READ[workload]:
        return False
    return any(i.applies_to(w) for w in (actor_workload, FROZEN) + _ROLLOUT_WORKLOADS[workload])


# ---------------------------------------------------------------------------------------------
# The Scenario class, made from the table

def _inputs(self) -> dict[str, Any]:
    values = self.__dict__
    return {n: values[n] for n in INPUT_NAMES}


def _input_view(self) -> Mapping[str, Any]:
    """Every input by name, without a copy: the scenario's own attributes (its name among them), for the term
    functions to read; never to be changed."""
    return self.__dict__


def _with_inputs(self, **changes: Any):
    """This scenario with these inputs changed: dataclasses.replace without re-running __init__ over every input
    (a frozen dataclass's __init__ only sets them; the plan's searches make hundreds of thousands)."""
    unknown = changes.keys() - _FIELD_NAMES
    if unknown:
        raise TypeError(f"Scenario has no input {', '.join(sorted(unknown))}")
    other = object.__new__(type(self))
    other.__dict__.update(self.__dict__, **changes)
    return other


def _label(self, word: Callable[[str, str], str] = lambda axis, value: value) -> str:
    return self.name or default_label(self, word)


def layout_tags(layout: Mapping[str, int]) -> list[str]:
    """['ZeRO-3', 'TP2', 'EP4']: the parallel layout's inputs that are not their default, in label order."""
    return [INPUT_BY_NAME[n].tag.format(v=layout[n]) for n in PARALLEL_LAYOUT
            if layout.get(n, INPUT_BY_NAME[n].default) != INPUT_BY_NAME[n].default]


def default_label(s, word: Callable[[str, str], str] = lambda axis, value: value) -> str:
    """'Llama-2-7B · full · bf16-mixed · 4×A100-80GB · ZeRO-1'; word(axis, value) names a value in words
    (a report in another language passes its words: word("workload", "full"))."""
    parts = [s.model, word("workload", s.workload)]
    if s.workload in TRAINED_WORKLOADS:
        parts.append(s.precision if s.workload == "full" else f"r{s.lora_rank}")
    else:  # served, frozen or a rollout engine's weights
        parts.append(s.weight_dtype)
    parts.append(f"{s.num_gpus}×{s.gpu}")
    parts += layout_tags({n: getattr(s, n) for n in PARALLEL_LAYOUT})
    return " · ".join(parts)


def resolve_model_name(value: Any, models: Iterable[str], *, source: str | None, key_path: str) -> str:
    """A catalog model name, matched case-insensitively."""
    models = list(models)
    lowered = {m.lower(): m for m in models}
    if not isinstance(value, str) or value.lower() not in lowered:
        raise unknown_name("model", value, models, source=source, key_path=key_path)
    return lowered[value.lower()]


def check_inputs(values: Mapping[str, Any], *, workload: str, models: Iterable[str], gpus: Iterable[str],
                 source: str | None, key_path, allow_internal: bool = False,
                 checked: dict | None = None) -> dict[str, Any]:
    """Validated scenario inputs: the workload's defaults under the given values, each value checked
    by its input. key_path(name) says where a value came from (a preset key path or a CLI option).
    checked: (name, type, value) -> checked value, kept by a caller that checks the same values many
    times (a sweep's axes): a value's check depends on nothing else."""
    out = {}
    for name, value in {**WORKLOAD_DEFAULTS.get(workload, {}), **values}.items():
        key = (name, type(value), value) if checked is not None and isinstance(value, (str, int, float)) else None
        if key is not None and key in checked:
            out[name] = checked[key]
            continue
        out[name] = check_input(name, value, models=models, gpus=gpus, source=source, key_path=key_path(name),
                                allow_internal=allow_internal)
        if key is not None:
            checked[key] = out[name]
    return out


def check_input(name: str, value: Any, *, models: Iterable[str], gpus: Iterable[str], source: str | None,
                key_path: str, allow_internal: bool = False) -> Any:
    """One input's value, checked by its entry in INPUTS (model names resolved in the catalog)."""
    spec = INPUT_BY_NAME[name]
    if spec.catalog == "model":
        return resolve_model_name(value, models, source=source, key_path=key_path)
    return spec.check(value, source=source, key_path=key_path, gpus=gpus, allow_internal=allow_internal)


def _from_mapping(cls, raw: Mapping[str, Any], *, models: Iterable[str], gpus: Iterable[str],
                  source: str | None = None, key_path=lambda name: name, name: str = ""):
    """A Scenario from input values (a preset's or the command line's), validated; missing inputs take
    the workload's default, then the input's."""
    workload = raw.get("workload", "inference")
    if workload not in SINGLE_WORKLOADS:
        raise unknown_name("workload", workload, SINGLE_WORKLOADS, source=source, key_path=key_path("workload"))
    if "model" not in raw:
        raise InputError("missing required key", source=source, key_path=key_path("model"))
    values = check_inputs(raw, workload=workload, models=models, gpus=gpus, source=source, key_path=key_path)
    return cls(name=name, **values)


Scenario = make_dataclass(
    "Scenario",
    [(i.name, type(i.default), field(default=i.default)) for i in INPUTS] + [("name", str, field(default=""))],
    frozen=True,
    namespace={"inputs": _inputs, "input_view": _input_view, "with_inputs": _with_inputs, "label": _label, "from_mapping": classmethod(_from_mapping),
               "__doc__": "One model instance: the inputs of the term table (INPUTS), plus a name.",
               "__module__": __name__},
)

assert tuple(f.name for f in fields(Scenario))[:-1] == INPUT_NAMES
_FIELD_NAMES = frozenset(f.name for f in fields(Scenario))


# Settings only one algorithm reads, and what the others lack.
_ONE_ALGORITHM = {"group_size": ("grpo", "groups"), "critic_model": ("ppo", "critic")}
# Settings DPO does not read, and what it lacks.
_NOT_DPO = {"rollout_placement": "rollouts", "rollout_mode": "rollouts", "padded_roles": "rollouts",
            "padded_len": "rollouts", "reward": "reward model", "reward_model": "reward model"}


ASYNC_BESIDE = ("async needs the rollout engine apart (rollout_placement separate): beside the actor it sleeps while the "
                "actor trains")
SLEEP_APART = ("applies to a rollout engine beside the actor (rollout_placement actor): an engine on GPUs of its own "
               "(rollout_placement separate) stays awake")


def rlhf_readers(name: str) -> tuple[str, ...]:
    """The RLHF algorithms that read a setting (the others refuse it: rlhf_setting_unused)."""
    return tuple(a for a in RLHF_ALGORITHMS if not rlhf_setting_unused(name, a))


def rlhf_setting_unused(name: str, algorithm: str) -> str:
    """Why an RLHF setting changes nothing for this workload ('' where it is read)."""
    if algorithm not in RLHF_ROLES:
        return f"applies to RLHF workloads ({', '.join(RLHF_ROLES)}): it would change nothing"
    if algorithm == "dpo" and name in _NOT_DPO:
        return f"applies to PPO and GRPO (DPO has no {_NOT_DPO[name]}): it would change nothing"
    only, lacked = _ONE_ALGORITHM.get(name, (algorithm, ""))
    return "" if algorithm == only else (f"applies to {only.upper()} only ({algorithm.upper()} has no {lacked}): it "
                                         "would change nothing")


def check_rlhf(raw: Mapping[str, Any], *, algorithm: str, models: Iterable[str], gpus: Iterable[str],
               source: str | None, key_path) -> dict[str, Any]:
    """Validated settings of an RLHF group (RLHF_INPUTS), with defaults for those not given."""
    out = {i.name: i.default for i in RLHF_INPUTS}
    for name, value in raw.items():
        spec = RLHF_INPUT_BY_NAME[name]
        if value is None:
            continue
        if spec.catalog == "model":
            out[name] = resolve_model_name(value, models, source=source, key_path=key_path(name))
        elif name in ("role_gpus", "role_gpu_types"):
            if not isinstance(value, Mapping):
                raise InputError(f"expected a mapping of role to {'GPU count' if name == 'role_gpus' else 'GPU type'}, "
                                 f"got {value!r}", source=source, key_path=key_path(name))
            roles = group_roles(algorithm, raw.get("rollout_placement") or "actor")
            each = INPUT_BY_NAME["num_gpus" if name == "role_gpus" else "gpu"]
            for role, item in value.items():
                if role not in roles:
                    raise unknown_name("role", role, roles, source=source, key_path=f"{key_path(name)}.{role}")
                each.check(item, source=source, key_path=f"{key_path(name)}.{role}", gpus=gpus)
            out[name] = dict(value)
        else:
            out[name] = spec.check(value, source=source, key_path=key_path(name), gpus=gpus)
    for setting, role, without, dpo in (("reward", "reward", "rule", "DPO scores nothing"),
                                        ("reference", "reference", "none", "DPO's loss needs its reference")):
        if out[setting] != without:
            continue
        if algorithm == "dpo":
            raise InputError(f"applies to PPO and GRPO ({dpo})", source=source, key_path=key_path(setting))
        for name in (f"{role}_model", "role_gpus", "role_gpu_types"):
            if name == f"{role}_model" and out[name] or role in (out[name] or {}):
                raise InputError(f"{setting}: {without} leaves no {role} model", source=source, key_path=key_path(name))
    for name, value in raw.items():
        if value is not None and (unused := rlhf_setting_unused(name, algorithm)):
            raise InputError(unused, source=source, key_path=key_path(name))
    if out["padded_len"] is not None and out["padded_roles"] == "none":
        raise InputError("applies with padded_roles critic or all (a pass without padding reads the mean lengths)",
                         source=source, key_path=key_path("padded_len"))
    if out["rollout_mode"] == "async" and out["rollout_placement"] != "separate":
        raise InputError(ASYNC_BESIDE, source=source, key_path=key_path("rollout_mode"))
    for name in ("role_gpus", "role_gpu_types"):  # colocated roles share the actor's GPUs; an engine apart has its own
        shared = [role for role in out[name] or {} if out["placement"] != "separate" and role != ROLLOUT]
        if shared:
            raise InputError("applies to placement separate (colocated roles share the actor's GPUs; only a rollout "
                             "engine apart, rollout_placement separate, has GPUs of its own)",
                             source=source, key_path=f"{key_path(name)}.{shared[0]}")
    return out
