"""Conservation of sharded states (#32): over every catalogue model and every layout the plan searches,
the per-GPU bytes of each model state, summed over the GPUs, equal the whole state times the number of
copies the framework or engine keeps. The copies are stated here from how each one places tensors, not
read from the estimator:

- dense weights: one copy per data-parallel rank (n ÷ tp), one in all under ZeRO-3 (FSDP);
- routed experts, training: ep_size GPUs hold num_experts ÷ ep each, each expert split over the expert
  tensor-parallel GPUs (Megatron-Core: expert_tensor_parallel_size defaults to tensor_model_parallel_size,
  etp_size 1 keeps experts whole; expert data parallelism = world ÷ (ETP × EP × PP)), so n ÷ (etp × ep)
  copies; one in all for a state ZeRO shards;
- routed experts, serving: vLLM's EP is TP × DP with whole experts per GPU, SGLang's ep divides tp and
  splits each expert over tp ÷ ep GPUs: n ÷ max(tp, ep) copies;
- KV cache: each tensor-parallel GPU holds its KV heads, a copy of one head where tp exceeds them
  (vLLM), and MLA's latent whole on every GPU.

The DeepSeek-V3 fp8 case of #32 (TP4 EP4 on 4 GPUs: 45.6 GB of weights per GPU, 182 GB for a 671 GB
model) fails the first of these."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.planning.goals import Goal
from reportgen.planning.plan import candidates, plan
from reportgen.model.units import GiB

EST = Estimator(load_models(), load_gpus())
MODELS = EST.tables["Models"]
H100 = "H100-80GB-SXM"
# The training tests take the models the estimator trains: a hybrid Mamba-2 model is estimated for inference only
# (skip rule hybrid_inference); every model is served in the KV cache test.
MOE = sorted(m for m, row in MODELS.items() if row["is_moe"] and not row["num_mamba_layers"])
DENSE = sorted(m for m, row in MODELS.items()
               if not row["is_moe"] and not row["is_generic"] and not row["num_mamba_layers"])
HYBRID = sorted(m for m, row in MODELS.items() if row["num_mamba_layers"])
# Of the frameworks with expert parallelism, each with the ZeRO stages it runs.
FRAMEWORKS = {"deepspeed": (0, 1, 2, 3), "megatron": (0, 1, 2, 3), "fsdp2": (2, 3)}  # megatron 2-3: Megatron-FSDP
STATES = {"weights": 3, "gradients": 2, "optimizer_states": 1, "master_weights": 1}  # the ZeRO stage sharding each
KEEP = ("checkpointing", "offload", "optimizer")


def _whole(s: Scenario) -> dict[str, float]:
    """Each state of the whole model: the scenario on one GPU, nothing sharded (estimated whatever the
    framework's skip rules say of one GPU: only the bytes per element matter)."""
    e = EST.estimate(replace(s, num_gpus=1, tp_size=1, pp_size=1, ep_size=1, zero_stage=0))
    return {k: e[k] for k in STATES}


def _copies(state: str, layout: Scenario, expert_share: float) -> float:
    """How many copies of the whole state the GPUs hold together, by the placement stated above."""
    n, tp, ep = layout.num_gpus, layout.tp_size, layout.ep_size
    if layout.workload == "inference":
        return (1 - expert_share) * n / tp + expert_share * n / max(tp, ep)
    if layout.zero_stage >= STATES[state]:
        return 1.0
    return (1 - expert_share) * n / tp + expert_share * n / ((layout.etp_size or tp) * ep)


def _layouts(s: Scenario, counts=(8, 16, 64)):
    for n in counts:
        for c in candidates(s, EST, n, fixed=KEEP):
            if c.pp_size == 1 and EST.skip_check(c) is None:
                yield c


def _check(s: Scenario) -> int:
    whole = _whole(s)
    expert_share = MODELS[s.model]["expert_params"] / MODELS[s.model]["total_params"]
    checked = 0
    for layout in _layouts(s):
        e = EST.estimate(layout)
        for state, amount in whole.items():
            expected = amount * _copies(state, layout, expert_share)
            # ceil_div per GPU: at most one byte over per GPU
            assert e[state] * layout.num_gpus == pytest.approx(expected, rel=1e-9, abs=layout.num_gpus), (
                state, layout.label())
        checked += 1
    return checked


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
@pytest.mark.parametrize("model", MOE)
def test_moe_training_states_are_conserved(model, framework):
    s = Scenario(model=model, workload="full", framework=framework, seq_len=1024, prompt_len=0, gen_len=0,
                 gpu=H100, checkpointing="full", offload="none")
    assert _check(s) > 0


@pytest.mark.parametrize("model", MOE)
def test_megatron_experts_kept_whole_by_etp_1_are_conserved(model):
    """etp_size 1 beside tp > 1 (Megatron-Core's MoE parallel folding): every expert whole on its GPU, the
    attention still split over TP; every such layout of the plan's search at 8, 16 and 64 GPUs."""
    s = Scenario(model=model, workload="full", framework="megatron", seq_len=1024, prompt_len=0, gen_len=0,
                 gpu=H100, checkpointing="full", offload="none")
    whole = _whole(s)
    expert_share = MODELS[model]["expert_params"] / MODELS[model]["total_params"]
    checked = 0
    for n in (8, 16, 64):
        for c in candidates(s, EST, n, fixed=KEEP):
            layout = replace(c, etp_size=1)
            if c.pp_size > 1 or c.tp_size == 1 or EST.skip_check(layout) is not None:
                continue
            e = EST.estimate(layout)
            for state, amount in whole.items():
                expected = amount * _copies(state, layout, expert_share)
                assert e[state] * n == pytest.approx(expected, rel=1e-9, abs=n), (state, layout.label())
            checked += 1
    assert checked > 0


def test_etp_1_holds_an_expert_whole_and_lets_ep_span_the_tensor_parallel_gpus():
    """Mixtral-8x7B under Megatron ZeRO-1 on 8 H100, TP2: with ETP = TP (the default) EP must divide the 4
    data-parallel ranks; with etp_size 1 EP 8 folds over TP × DP, one whole expert per GPU. The weights per
    GPU, counted by hand from the model's parameters: (total − experts) ÷ tp + experts ÷ (etp × ep)."""
    s = Scenario(model="Mixtral-8x7B", workload="full", framework="megatron", zero_stage=1, num_gpus=8, tp_size=2,
                 ep_size=8, seq_len=1024, prompt_len=0, gen_len=0, gpu=H100, checkpointing="full")
    assert EST.skip_check(s).code == "ep_train_dp"
    folded = replace(s, etp_size=1)
    assert EST.skip_check(folded) is None
    row = MODELS["Mixtral-8x7B"]
    total, experts = row["total_params"], row["expert_params"]
    bytes_per_weight = _whole(s)["weights"] / total
    assert EST.estimate(folded)["weights"] == pytest.approx(
        ((total - experts) / 2 + experts / 8) * bytes_per_weight, rel=1e-9, abs=1)
    four = replace(s, ep_size=4)  # ETP = TP 2 × EP 4: two experts per GPU, each half of it: an eighth
    assert EST.estimate(four)["weights"] == pytest.approx(
        ((total - experts) / 2 + experts / 8) * bytes_per_weight, rel=1e-9, abs=1)
    whole_experts = replace(four, etp_size=1)  # 2 whole experts per GPU: twice the expert bytes
    assert EST.estimate(whole_experts)["weights"] == pytest.approx(
        ((total - experts) / 2 + experts / 4) * bytes_per_weight, rel=1e-9, abs=1)


@pytest.mark.parametrize("change, code", [
    (dict(framework="deepspeed", zero_stage=1), "etp_megatron"),  # Megatron-Core's alone
    (dict(model="Llama-3-8B", ep_size=1), "etp_megatron"),  # a dense model has no experts to split
    (dict(etp_size=4), "etp_group"),  # 4 × EP 8 = 32 does not divide TP 2 × DP 4
])
def test_etp_is_refused_where_megatron_could_not_lay_it_out(change, code):
    s = Scenario(model="Mixtral-8x7B", workload="full", framework="megatron", zero_stage=1, num_gpus=8, tp_size=2,
                 ep_size=8, etp_size=1, seq_len=1024, prompt_len=0, gen_len=0, gpu=H100, checkpointing="full")
    assert EST.skip_check(replace(s, **change)).code == code
    served = Scenario(model="Mixtral-8x7B", workload="inference", num_gpus=2, tp_size=2, etp_size=1, gpu=H100)
    assert EST.skip_check(served).code == "etp_megatron"


@pytest.mark.parametrize("model", MOE + DENSE[::3])
def test_serving_weights_are_conserved(model):
    s = Scenario(model=model, workload="inference", prompt_len=512, gen_len=0, gpu=H100, serving_engine="vllm")
    assert _check(s) > 0


@pytest.mark.parametrize("model", DENSE[::2])
def test_dense_training_states_are_conserved(model):
    s = Scenario(model=model, workload="full", framework="deepspeed", seq_len=1024, prompt_len=0, gen_len=0,
                 gpu=H100, checkpointing="full", offload="none")
    assert _check(s) > 0


@pytest.mark.parametrize("model", sorted(set(MOE + DENSE + HYBRID)))
def test_kv_cache_is_split_over_the_kv_heads_and_mla_is_replicated(model):
    """A hybrid model's Mamba-2 states split over every tensor-parallel GPU by their heads, beside its KV cache."""
    row = MODELS[model]
    s = Scenario(model=model, workload="inference", prompt_len=4096, gen_len=0, batch_size=4, gpu=H100)
    states = 4 * EST.estimate(s)["mamba_state_bytes"]
    whole = EST.estimate(s)["kv_cache"] - states
    assert whole > 0 and (states > 0) == (model in HYBRID)
    for tp in (1, 2, 4, 8):
        layout = replace(s, num_gpus=tp, tp_size=tp)
        if EST.skip_check(layout) is not None:
            continue
        held_per_gpu = 1.0 if row["is_mla"] else 1 / min(tp, row["num_key_value_heads"])
        assert EST.estimate(layout)["kv_cache"] == pytest.approx(whole * held_per_gpu + states / tp,
                                                                 rel=1e-9, abs=1), tp


def test_the_deepseek_v3_case_of_issue_32():
    """TP4 EP4 on 4 GPUs: each GPU holds a quarter of the routed experts, not a sixteenth."""
    s = Scenario(model="DeepSeek-V3", workload="inference", weight_dtype="fp8", num_gpus=4, tp_size=4, ep_size=4,
                 serving_engine="vllm", gpu=H100)
    e = EST.estimate(s)
    whole = EST.estimate(replace(s, num_gpus=1, tp_size=1, ep_size=1))["weights"]
    assert e["weights"] * 4 == pytest.approx(whole, abs=4)
    assert whole > 671e9  # 671 B parameters, fp8 with its scales and 16-bit embeddings


def test_plan_for_deepseek_v3_fp8_serving_needs_the_weights_room():
    """The weights alone are 671 GB or more: 8 × 80 GB cannot hold them with the safety factor, and the
    plan says why at its largest count without an answer."""
    s = Scenario(model="DeepSeek-V3", workload="inference", weight_dtype="fp8", serving_engine="vllm", gpu=H100)
    option = plan(EST, s, [H100]).options[0]
    assert option.total_gpus >= 16 and option.estimate["fits_recommended"]
    miss = plan(EST, s, [H100], counts=(8,)).misses[0]
    assert miss.nearest is not None and miss.nearest["fits_recommended"] == 0


def test_mixtral_8x22b_full_fine_tune_needs_what_its_states_need():
    """Without offload the GPUs hold every state: 141 B parameters × (2 weights + 2 gradients + 4 master
    + 2 × 1 (8-bit Adam) at least) bytes, over 80 GB GPUs."""
    s = Scenario(model="Mixtral-8x22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, gpu=H100,
                 offload="none")
    params = MODELS["Mixtral-8x22B"]["total_params"]
    for framework in ("hf", "deepspeed", "megatron"):
        option = plan(EST, replace(s, framework=framework), [H100], fixed=("offload",)).options[0]
        assert option.total_gpus * load_gpus()[H100].memory_mib * 2**20 >= params * 10, framework


@pytest.mark.parametrize("model,workload", [("Mixtral-8x7B", "full"), ("Qwen3-30B-A3B", "full"),
                                            ("DeepSeek-V3", "inference"), ("Llama-3.1-70B", "full"),
                                            ("Qwen3-235B-A22B", "inference")])
@pytest.mark.slow  # several seconds: the full run has it
def test_plan_never_recommends_states_larger_than_the_gpu(model, workload):
    s = Scenario(model=model, workload=workload, seq_len=4096, prompt_len=512 if workload == "inference" else 0,
                 gen_len=0, gpu=H100, framework="deepspeed" if workload == "full" else "hf")
    result = plan(EST, s, [H100, "A100-80GB", "L40S"], goal=Goal())
    assert result.options
    for option in result.options:
        e = option.estimate
        states = e["weights"] + e["gradients"] + e["optimizer_states"] + e["master_weights"]
        assert states <= e["gpu_memory_bytes"], (option.gpu, option.layout)
        assert np.isfinite(states / GiB)


# ---- sequence parallelism (Korthikanti et al. 2022) -------------------------------------------------

SP_BASE = Scenario(model="Llama-3.1-70B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                   tp_size=8, gpu=H100, framework="megatron", zero_stage=1)


def test_what_tensor_parallelism_leaves_whole_is_korthikantis_10_sbh():
    """GPT-2 (16-bit LayerNorms, dropout as configured): the norms' inputs and outputs and the two dropout
    masks, 10 bytes per hidden element per layer (Korthikanti et al. 2022, §4.2: 10·s·b·h of 34·s·b·h)."""
    e = EST.estimate(Scenario(model="GPT-2", workload="full", seq_len=1024, prompt_len=0, gen_len=0, dropout="config",
                              num_gpus=4, tp_size=4, framework="megatron"))
    assert e["layer_replicated_per_token"] == 10 * e["hidden_size"]


@pytest.mark.parametrize("checkpointing", ["none", "selective", "full"])
def test_sequence_parallelism_splits_every_saved_tensor_and_without_it_the_rest_is_whole(checkpointing):
    one = EST.estimate(replace(SP_BASE, num_gpus=1, tp_size=1, zero_stage=0, checkpointing=checkpointing))
    on = EST.estimate(replace(SP_BASE, checkpointing=checkpointing, sequence_parallel="on"))
    off = EST.estimate(replace(SP_BASE, checkpointing=checkpointing, sequence_parallel="off"))
    tokens = SP_BASE.seq_len * SP_BASE.batch_size
    assert on["training_activations"] * 8 == pytest.approx(one["training_activations"], abs=8)
    whole = tokens * on["replicated_saved_per_token"]
    assert off["training_activations"] - on["training_activations"] == pytest.approx(whole * 7 / 8, abs=1)
    assert 0 < whole < one["training_activations"]


def test_each_framework_sets_sequence_parallelism_its_own_way():
    on = {f for f in ("hf", "deepspeed", "fsdp2", "megatron", "litgpt")
          if EST.estimate(replace(SP_BASE, framework=f, zero_stage=3 if f == "fsdp2" else 0))["sp_on"]}
    assert on == {"fsdp2", "megatron"}
    assert EST.estimate(replace(SP_BASE, num_gpus=1, tp_size=1))["sp_on"] == 0
    assert "tp_size > 1" in EST.skip_reason(replace(SP_BASE, num_gpus=1, tp_size=1, sequence_parallel="on"))


# ---- context parallelism (ring attention) ------------------------------------------------------------

CP_BASE = Scenario(model="Llama-3.1-8B", workload="full", seq_len=32768, prompt_len=0, gen_len=0, num_gpus=16,
                   tp_size=2, gpu=H100, framework="megatron", zero_stage=1, checkpointing="selective")


def test_context_parallelism_splits_every_activation_and_shards_states_over_data_and_context():
    one = EST.estimate(CP_BASE)
    four = EST.estimate(replace(CP_BASE, cp_size=4))
    # every saved tensor is per token: a quarter of the tokens, a quarter of the bytes (autocast copies aside)
    assert four["training_activations"] == pytest.approx(one["training_activations"] / 4, abs=1)
    # ZeRO-1 shards the optimizer over data × context parallel GPUs: the same 8 ranks, whatever the split
    assert four["dp_size"] == 2 and four["zero_group"] == one["zero_group"] == 8
    assert four["optimizer_states"] == one["optimizer_states"]
    # the throughput counts every token of the sequences, each GPU computing a quarter of them
    assert four["train_tokens_per_s"] == pytest.approx(
        CP_BASE.seq_len * CP_BASE.grad_accum_steps * four["dp_size"] / four["step_seconds"])


def test_the_context_parallel_ring_is_counted_only_beyond_the_attention_it_overlaps():
    four = EST.estimate(replace(CP_BASE, cp_size=4))
    layers, tokens = four["pp_stage_layers"], CP_BASE.seq_len / 4
    assert four["cp_ring_bytes"] == pytest.approx(3 * layers * 3 * tokens * 2 * four["kv_dim"] * 2 / 2)
    assert four["cp_ring_seconds"] >= 0
    assert EST.estimate(CP_BASE)["cp_ring_seconds"] == 0


def test_what_context_parallelism_cannot_split_is_refused_with_its_reason():
    for framework in ("hf", "litgpt"):
        assert "no context parallelism" in EST.skip_reason(replace(CP_BASE, cp_size=2, framework=framework))
    assert "2 × cp_size" in EST.skip_reason(replace(CP_BASE, cp_size=4, seq_len=32764))
    assert "does not divide num_gpus" in EST.skip_reason(replace(CP_BASE, cp_size=16))
    assert EST.skip_reason(replace(CP_BASE, cp_size=8)) is None


# DeepSpeed's context parallelism: Ulysses, on data parallelism and ZeRO alone
ULYSSES_BASE = replace(CP_BASE, framework="deepspeed", tp_size=1, zero_stage=3, num_gpus=8)


def test_ulysses_splits_the_heads_it_swaps_and_nothing_else():
    """Ulysses hands each GPU num_heads ÷ cp heads of every token: cp must divide the query and the key/value heads
    (Llama-3.1-8B: 32 and 8); it runs beside data parallelism and ZeRO, not TP or a pipeline, and its sequence splits
    into cp chunks, not ring attention's 2 × cp."""
    assert EST.skip_reason(replace(ULYSSES_BASE, cp_size=8)) is None
    for refused in (dict(cp_size=16, num_gpus=16), dict(cp_size=4, tp_size=2), dict(cp_size=4, pp_size=2)):
        assert "Ulysses" in EST.skip_reason(replace(ULYSSES_BASE, **refused)), refused
    assert EST.skip_reason(replace(ULYSSES_BASE, cp_size=4, seq_len=32764)) is None  # 4 chunks of 8,191
    assert "must split into 4 equal chunks" in EST.skip_reason(replace(ULYSSES_BASE, cp_size=4, seq_len=32766))
    mla = replace(ULYSSES_BASE, model="DeepSeek-V2-Lite", cp_size=2, num_gpus=8)
    assert "multi-head latent attention" in EST.skip_reason(mla)


def test_ulysses_divides_the_activations_like_a_ring_and_swaps_queries_keys_values_and_outputs():
    """Outside attention each GPU holds seq ÷ cp tokens, as under ring attention (every saved tensor per token);
    the all-to-alls move q, k, v in and the output back, forward, backward and the recomputed forward, (cp − 1) ÷ cp
    of them off the GPU: Llama-3.1-8B's 32 layers of q 4,096 and k, v 1,024 wide in bf16."""
    one, four = EST.estimate(ULYSSES_BASE), EST.estimate(replace(ULYSSES_BASE, cp_size=4))
    assert four["training_activations"] == pytest.approx(one["training_activations"] / 4, abs=1)
    assert four["zero_group"] == one["zero_group"] == 8 and four["optimizer_states"] == one["optimizer_states"]
    assert four["cp_ring_bytes"] == 0 and one["cp_a2a_bytes"] == 0 == one["cp_a2a_seconds"]
    tokens = ULYSSES_BASE.seq_len // 4
    assert four["cp_a2a_bytes"] == pytest.approx(2 * 32 * tokens * (4096 + 1024 + 1024 + 4096) * 2 * 3 / 4)
    full = EST.estimate(replace(ULYSSES_BASE, cp_size=4, checkpointing="full"))
    assert full["cp_a2a_bytes"] == pytest.approx(four["cp_a2a_bytes"] * 3 / 2)
    assert four["step_seconds"] > four["stage_compute_seconds"] + four["cp_a2a_seconds"] * 0.999


def test_ulysses_across_nodes_pays_the_network_for_the_peers_off_the_node():
    """Llama-2-7B has 32 key/value heads: cp 16 spans two 8-GPU nodes, and half of each GPU's peers (8 of 15) are
    on the other node, whose link is slower than NVLink: more seconds per byte than cp 8 inside one node."""
    base = replace(ULYSSES_BASE, model="Llama-2-7B", seq_len=65536, num_gpus=16)
    inside, across = (EST.estimate(replace(base, cp_size=cp)) for cp in (8, 16))
    gpu = EST.gpus[H100]
    assert gpu.gpus_per_node == 8 and gpu.inter_node_gbps < gpu.link_gbps
    latency = lambda e: 4 * 2 * 32 * 15e-6  # noqa: E731  four all-to-alls a layer, forward and backward
    per_byte = [(e["cp_a2a_seconds"] - latency(e)) / e["cp_a2a_bytes"] for e in (inside, across)]
    assert per_byte[1] > per_byte[0]


@pytest.mark.parametrize("model", ["Llama-3.1-70B", "Mixtral-8x7B", "Qwen3-30B-A3B"])
def test_a_pipeline_stage_holds_at_least_its_share_and_at_most_its_layers_plus_the_embedding(model):
    """pp > 1: the estimator counts the busiest stage, so conservation is a bound. Over the GPUs, each state
    is at least the whole model's copies (the busiest stage holds no less than the mean) and at most what
    every stage would hold with ⌈L ÷ pp⌉ layers and the larger of the embedding and the head. Copies of a
    stage under Megatron's ZeRO-1: weights and gradients one per data-parallel rank (experts one per ep of
    them); optimizer states and master weights one in all (the distributed optimizer shards them)."""
    s = Scenario(model=model, workload="full", framework="megatron", seq_len=1024, prompt_len=0, gen_len=0, gpu=H100,
                 checkpointing="full", offload="none", zero_stage=1)
    row = MODELS[model]
    checked = 0
    for state, whole in _whole(s).items():
        per_param = whole / row["total_params"]
        experts = row["expert_params"] * per_param
        edges = (row["embedding_params"] + row["lm_head_params"]) * per_param
        edge = max(row["embedding_params"], row["lm_head_params"]) * per_param
        for n in (16, 64):
            for layout in candidates(s, EST, n, fixed=KEEP + ("zero_stage",)):
                if layout.pp_size == 1 or EST.skip_check(layout) is not None:
                    continue
                pp, layers = layout.pp_size, row["num_hidden_layers"]
                sharded = layout.zero_stage >= STATES[state]
                dense_copies = 1 if sharded else n / (layout.tp_size * pp)
                expert_copies = 1 if sharded else n / ((layout.etp_size or layout.tp_size) * layout.ep_size * pp)
                held = EST.estimate(layout)[state] * n
                assert held >= ((whole - experts) * dense_copies + experts * expert_copies) * (1 - 1e-9), (
                    state, layout.label())
                busiest = -(-layers // pp) / layers
                bound = pp * (((whole - experts - edges) * dense_copies + experts * expert_copies) * busiest
                              + edge * dense_copies)
                assert held <= bound * (1 + 1e-9) + n, (state, layout.label())
                checked += 1
    assert checked > 0


def test_megatron_offloads_no_parameters():
    s = replace(SP_BASE, offload="all")
    assert "optimizer only" in EST.skip_reason(s)
    assert EST.skip_reason(replace(s, offload="optimizer")) is None
    assert EST.skip_reason(replace(s, framework="deepspeed", zero_stage=3)) is None


def test_offload_shards_what_it_offloads():
    """DeepSpeed offloads the optimizer states from ZeRO-1 and the parameters with ZeRO-3 (each GPU its shard);
    pipelines run no ZeRO-3, so no parameter offload. On one data-parallel rank nothing shards (ZeRO-Offload on one
    GPU). The plan had answered a 70B fine-tune with ZeRO-2 and offload all on 16 RTX-3090."""
    s = Scenario(model="Llama-2-7B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                 gpu=H100, framework="deepspeed", checkpointing="full")
    for zero, offload, code in ((0, "optimizer", "offload_zero"), (1, "optimizer", None), (2, "all", "offload_zero"),
                                (3, "all", None), (0, "none", None)):
        reason = EST.skip_check(replace(s, zero_stage=zero, offload=offload))
        assert (reason.code if reason else None) == code, (zero, offload)
    assert "ZeRO-2 over 8 data-parallel GPUs" in EST.skip_reason(replace(s, zero_stage=2, offload="all"))
    assert EST.skip_check(replace(s, num_gpus=1, zero_stage=0, offload="all")) is None
    piped = replace(s, framework="megatron", zero_stage=1, pp_size=2, offload="all")
    assert EST.skip_check(piped).code in ("offload_framework", "offload_pipeline")
    assert EST.skip_check(replace(piped, framework="hf", zero_stage=0, num_gpus=2)).code == "offload_pipeline"
    assert EST.skip_check(replace(piped, framework="hf", zero_stage=0, num_gpus=2, offload="optimizer")) is None
    # FSDP2's CPUOffloadPolicy has no optimizer-only form
    fsdp2 = replace(s, framework="fsdp2", zero_stage=3)
    assert EST.skip_check(replace(fsdp2, offload="optimizer")).code == "offload_fsdp2"
    assert EST.skip_check(replace(fsdp2, offload="all")) is None


def test_autocast_keeps_no_whole_model_copy_under_fsdp_full_shard():
    """Autocast caches the bf16 copy of a weight only if the weight is a leaf and not a view (PyTorch's
    cached_cast). Under ZeRO-3 as the HF Trainer and Composer run it (FSDP FULL_SHARD) a layer's gathered weights
    are views of the flat parameter, so no copy is cached: MPT-70B (llm-foundry's published 64 × H100 run) was
    estimated at 212 GiB per GPU, 122 GiB of it a bf16 copy of the whole model. FSDP2 gathers into leaf
    parameters, so its fp32 weights under autocast are still cached."""
    s = Scenario(model="Llama-3.1-70B", workload="full", precision="amp-bf16", framework="hf", zero_stage=3,
                 num_gpus=64, batch_size=1, seq_len=2048, checkpointing="full", gpu="H100-80GB-SXM")
    params = EST.estimate(s)["trainable_params"]
    fsdp1 = EST.estimate(s)
    assert fsdp1["autocast_cache_bytes"] == 0 and fsdp1["allocated_peak"] < 2 * params / 4  # 30 GB of 141
    fsdp2 = EST.estimate(replace(s, framework="fsdp2"))
    assert 0.97 * 2 * params < fsdp2["autocast_cache_bytes"] < 2 * params  # every linear weight's bf16 copy
    zero2 = EST.estimate(replace(s, zero_stage=2))
    assert zero2["autocast_cache_bytes"] == fsdp2["autocast_cache_bytes"]


def test_megatron_fsdp_shards_as_zero_2_and_3_with_fp32_main_grads():
    """#32: Megatron's own FSDP (--use-megatron-fsdp, --data-parallel-sharding-strategy optim_grads /
    optim_grads_params: the README of megatron/core/distributed/fsdp calls them ZeRO-2 and ZeRO-3) as megatron at
    zero_stage 2 and 3, where it was refused. Hand-computed for Llama-2-7B on 8 GPUs: bf16 weights sharded at
    ZeRO-3, Megatron's fp32 main grads sharded from ZeRO-2, fp32 master weights and Adam states sharded; one decoder
    layer gathered and the next prefetched, and one layer's fp32 gradients before their reduce-scatter. A pipeline
    and optimizer offload stay Megatron's distributed optimizer's (ZeRO-1) alone."""
    n = MODELS["Llama-2-7B"]["total_params"]
    layer = MODELS["Llama-2-7B"]["decoder_layer_params"]
    s = Scenario(model="Llama-2-7B", workload="full", framework="megatron", zero_stage=3, num_gpus=8, seq_len=4096,
                 prompt_len=0, gen_len=0, gpu=H100)
    assert EST.skip_check(s) is None and EST.skip_check(replace(s, zero_stage=2)) is None
    e, two = EST.estimate(s), EST.estimate(replace(s, zero_stage=2))
    assert e["weights"] == -(-2 * n // 8) and two["weights"] == 2 * n
    assert e["gradients"] == two["gradients"] == -(-4 * n // 8)
    assert e["master_weights"] == -(-4 * n // 8) and e["optimizer_states"] == -(-8 * n // 8)
    assert e["zero3_buffer"] == 2 * 2 * MODELS["Llama-2-7B"]["largest_layer_params"]  # two layers, bf16
    assert e["fsdp_reduce_scatter_bytes"] == two["fsdp_reduce_scatter_bytes"] == 4 * layer
    assert EST.skip_check(replace(s, pp_size=2, grad_accum_steps=4)).code == "pp_zero"
    assert EST.skip_check(replace(s, offload="optimizer")).code == "offload_framework"


def test_megatron_runs_its_own_optimizer_not_bitsandbytes():
    """Megatron-Core builds its own Adam or SGD (--optimizer; states fp32, or bf16 with
    --use-precision-aware-optimizer): bitsandbytes' 8-bit AdamW under megatron is refused by name, and the plan,
    which offers adamw-8bit as a trade-off, never picks it under megatron (it did for Llama-3.1-70B at 32K tokens on
    16 H100 until 2026-12-06: 'ZeRO-3 TP2 CP8 · ckpt full · adamw-8bit · megatron')."""
    base = Scenario(model="Llama-3.1-8B", workload="full", framework="megatron", zero_stage=1, num_gpus=8,
                    seq_len=4096, prompt_len=0, gen_len=0, gpu="H100-80GB-SXM", optimizer="adamw-8bit")
    assert [r.code for r in EST.skip_reasons(base)] == ["optimizer_framework"]
    assert EST.skip_reasons(replace(base, framework="deepspeed")) == []
    assert EST.skip_reasons(replace(base, optimizer="adamw")) == []
    asked = Scenario(model="Llama-3.1-70B", workload="full", framework="megatron", seq_len=32768, prompt_len=0,
                     gen_len=0, gpu="H100-80GB-SXM")
    option = plan(EST, asked, ["H100-80GB-SXM"]).options[0]
    assert option.lead.optimizer == "adamw" and option.estimate["fits_recommended"], option.lead.label()


def test_an_offloaded_optimizer_is_not_bitsandbytes():
    """An offloaded optimizer steps on the host (DeepSpeed's ZeRO-Offload runs DeepSpeedCPUAdam, FSDP2's CPU offload
    steps the CPU shards, Megatron its --optimizer-cpu-offload) with fp32 or bf16 states; bitsandbytes' 8-bit AdamW
    runs on the GPU. Refused by name; the plan for Llama-3.1-405B full fine-tuning on H100 said 'ZeRO-3 TP2 · ckpt
    full · offload all · adamw-8bit' until 2026-12-06 and now offloads Adam."""
    base = Scenario(model="Llama-3.1-8B", workload="full", framework="deepspeed", zero_stage=3, num_gpus=8,
                    seq_len=4096, prompt_len=0, gen_len=0, gpu="H100-80GB-SXM", optimizer="adamw-8bit")
    for offload in ("optimizer", "all"):
        assert [r.code for r in EST.skip_reasons(replace(base, offload=offload))] == ["offload_optimizer_8bit"]
        assert EST.skip_reasons(replace(base, offload=offload, optimizer="adamw")) == []
    assert EST.skip_reasons(base) == []
    option = plan(EST, Scenario(model="Llama-3.1-405B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                                gpu="H100-80GB-SXM"), ["H100-80GB-SXM"]).options[0]
    assert option.lead.offload != "none" and option.lead.optimizer == "adamw", option.lead.label()


def test_litgpt_runs_what_its_scripts_run():
    """LitGPT's training scripts (litgpt at 2685705) run FSDP with cpu_offload=False on several GPUs and no strategy
    on one (finetune/full.py, pretrain.py), LoRA on ModelParallelStrategy with tensor_parallel_size=1 (lora.py), and
    refuse quantised (QLoRA) training on more than one GPU. So offload, TP and PP are refused under litgpt, and a
    plan keeps to data parallelism and FSDP: Llama-3.1-8B full fine-tuning on H100 took 'single GPU · offload
    optimizer · litgpt' until 2026-12-06, then, with offload refused, 'TP2 · adamw-8bit · litgpt'."""
    base = Scenario(model="Llama-3.1-8B", workload="full", framework="litgpt", zero_stage=3, num_gpus=8, seq_len=2048,
                    prompt_len=0, gen_len=0, gpu="H100-80GB-SXM")
    for offload in ("optimizer", "all"):
        assert [r.code for r in EST.skip_reasons(replace(base, offload=offload))] == ["offload_litgpt"]
    for layout in ({"tp_size": 2}, {"pp_size": 2, "num_gpus": 2, "zero_stage": 0}, {"workload": "lora", "tp_size": 2}):
        assert [r.code for r in EST.skip_reasons(replace(base, **layout))] == ["litgpt_parallel"], layout
    assert [r.code for r in EST.skip_reasons(replace(base, workload="qlora"))] == ["litgpt_qlora"]
    assert EST.skip_reasons(replace(base, workload="qlora", num_gpus=1, zero_stage=0)) == []
    assert EST.skip_reasons(base) == [] and EST.skip_reasons(replace(base, framework="deepspeed", offload="all")) == []
    option = plan(EST, replace(base, num_gpus=1, zero_stage=0), ["H100-80GB-SXM"]).options[0]
    assert option.lead.offload == "none" and option.lead.tp_size == option.lead.pp_size == 1, option.lead.label()
    assert option.estimate["fits_recommended"]
