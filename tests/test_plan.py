"""The layout search: what it may choose, what it must keep, and the answers issue #17 asks for."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.catalog import load_gpus, load_models
from reportgen.estimate import Estimator, Scenario
from reportgen.goals import Goal
from reportgen.plan import candidates, plan

EST = Estimator(load_models(), load_gpus())
H100 = "H100-80GB-SXM"
FULL_70B = Scenario(model="Llama-3.1-70B", workload="full", seq_len=4096, prompt_len=0, gen_len=0)


def test_70b_full_fine_tuning_without_a_checkpointing_choice_fits_within_64_h100s():
    option = plan(EST, FULL_70B, [H100]).options[0]
    assert option.total_gpus <= 64 and option.estimate["fits_recommended"]


def test_fixing_checkpointing_is_no_worse_than_the_old_zero_only_search():
    """Before the search covered TP and offload, 70B with full checkpointing needed 32 × H100 (ZeRO-3)."""
    fixed = replace(FULL_70B, checkpointing="full")
    option = plan(EST, fixed, [H100], fixed=("checkpointing",)).options[0]
    assert option.total_gpus <= 32 and option.layout["checkpointing"] == "full"


def test_options_given_by_the_user_are_kept():
    kept = replace(FULL_70B, offload="none", tp_size=8)
    option = plan(EST, kept, [H100], fixed=("offload", "tp_size")).options[0]
    assert option.layout["offload"] == "none" and option.layout["tp_size"] == 8


def test_tensor_parallelism_stays_inside_a_node():
    l4 = replace(FULL_70B, gpu="L4")
    per_node = load_gpus()["L4"].gpus_per_node
    assert all(c.tp_size <= per_node for n in (8, 16, 64) for c in candidates(l4, EST, n))
    assert max(c.tp_size for c in candidates(replace(FULL_70B, gpu=H100), EST, 64)) == 8


def test_expert_parallelism_only_for_mixture_of_experts():
    dense = {c.ep_size for c in candidates(replace(FULL_70B, gpu=H100), EST, 8)}
    moe = {c.ep_size for c in candidates(replace(FULL_70B, model="Mixtral-8x7B", gpu=H100), EST, 8)}
    assert dense == {1} and moe == {1, 2, 4, 8}


def test_offload_needs_the_host_ram_a_node_has():
    """The same search with 64 GiB of host RAM per node cannot offload a 70B model's states."""
    roomy = plan(EST, FULL_70B, [H100]).options[0]
    assert roomy.layout["offload"] != "none"
    small = Estimator(load_models(), load_gpus(), {"host_ram_per_node_gib": 64})
    tight = plan(small, FULL_70B, [H100]).options[0]
    assert tight.layout["offload"] == "none" and tight.total_gpus > roomy.total_gpus
    e = tight.estimate
    assert e["host_offload_bytes"] * min(tight.num_gpus, 8) <= 64 * 2**30


def test_a_deadline_buys_gpus_instead_of_slow_layouts():
    """Offload and recompute save memory but cost time: a deadline the fewest GPUs miss buys more GPUs,
    and a tight one (10^10 tokens in a week) leaves neither offload nor recompute."""
    tokens = replace(FULL_70B, train_tokens=10**9)
    slow = plan(EST, tokens, [H100]).options[0]
    half = slow.estimate["time_to_train_seconds"] / 2
    fast = plan(EST, tokens, [H100], Goal(within_seconds=half)).options[0]
    assert fast.estimate["time_to_train_seconds"] <= half and fast.total_gpus > slow.total_gpus
    week = plan(EST, replace(FULL_70B, train_tokens=10**10), [H100], Goal(within_seconds=7 * 86400)).options[0]
    assert week.estimate["time_to_train_seconds"] <= 7 * 86400
    assert week.layout["offload"] == "none" and week.layout["checkpointing"] == "none"


# ---- the array search against the plain one: each candidate a Scenario, estimated one at a time -------------

def _reference(scenario, gpu, goal, counts, fixed=()):
    """The search written the slow, obvious way (as it was before the array rendering)."""
    import numpy as np
    base = replace(scenario, gpu=gpu)
    for n in counts:
        found = []
        for c in candidates(base, EST, n, fixed):
            c = replace(c, **{k: int(v) for k, v in goal.shape(c, c.num_gpus, c.tp_size).items()})
            if EST.skip_check(c):
                continue
            e = EST.estimate(c)
            if e["fits_recommended"] and goal.met({k: np.array([e[k]]) for k in e.values})[0]:
                speed = e["time_to_train_seconds"] if e["is_train"] else e["seconds_per_output_token"]
                found.append((speed, c, e))
        if found:
            return min(found, key=lambda f: f[0])[1:]
    return None


SERVE_70B = Scenario(model="Llama-3.1-70B", workload="inference", prompt_len=2048, gen_len=256)


@pytest.mark.parametrize("scenario, goal, fixed", [
    (FULL_70B, Goal(), ()),
    (replace(FULL_70B, train_tokens=10**9), Goal(within_seconds=2 * 86400), ()),
    (replace(FULL_70B, model="Mixtral-8x7B", checkpointing="full"), Goal(), ("checkpointing",)),
    (replace(FULL_70B, model="Llama-3-8B", workload="lora"), Goal(within_seconds=3600), ()),
    (SERVE_70B, Goal(users=64, context=8192, min_tokens_per_s=20), ()),
    (replace(SERVE_70B, model="Mixtral-8x7B"), Goal(users=500, min_tokens_per_s=5), ()),
])
def test_the_array_search_finds_what_the_plain_search_finds(scenario, goal, fixed):
    gpus = ["H100-80GB-SXM", "A100-40GB", "L4"]
    result = plan(EST, scenario, gpus, goal, fixed=fixed)
    by_gpu = {o.gpu: o for o in result.options}
    assert result.tried > 0
    for gpu in gpus:
        expected = _reference(scenario, gpu, goal, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), fixed)
        if expected is None:
            assert gpu not in by_gpu
            continue
        candidate, est = expected
        got = by_gpu[gpu]
        assert got.estimate.scenario == candidate and got.estimate.values == est.values


def test_adams_state_dtype_is_searched_but_never_replaces_another_optimizer():
    """8-bit AdamW keeps 2 states at ~1 byte where AdamW keeps 2 × 4 bytes: without offload, an 8B model
    fits fewer RTX-4090s with it; the search tries it for Adam only, and keeps an optimizer the user set."""
    base = replace(FULL_70B, model="Llama-3.1-8B", offload="none", gpu="RTX-4090")
    tried = {c.optimizer for c in candidates(base, EST, 8, fixed=("offload",))}
    assert tried == {"adamw", "adamw-8bit"}
    assert {c.optimizer for c in candidates(replace(base, optimizer="sgd"), EST, 8)} == {"sgd"}
    chosen = plan(EST, base, ["RTX-4090"], fixed=("offload",)).options[0]
    kept = plan(EST, base, ["RTX-4090"], fixed=("offload", "optimizer")).options[0]
    assert chosen.layout["optimizer"] == "adamw-8bit" and kept.layout["optimizer"] == "adamw"
    assert chosen.total_gpus <= kept.total_gpus
    e, s = chosen.estimate, chosen.estimate.scenario
    # the states the plan counted: 2 per trainable parameter at 1.001953125 bytes (block-wise absmax),
    # sharded over the data-parallel ranks (ZeRO ≥ 1) and the tensor-parallel group
    shards = s.tp_size * (e["dp_size"] if s.zero_stage else 1)
    assert e["optimizer_states"] == pytest.approx(e["resident_trainable_params"] * 2 * 1.001953125 / shards, rel=1e-6)
