"""The layout search: what it may choose, what it must keep, and the answers issue #17 asks for."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.lookups import RECOMPUTE_MODULES
from reportgen.planning.goals import Goal
from reportgen.planning.plan import buyable_counts, candidates, plan

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


def test_per_op_checkpointing_is_searched_under_fsdp2_where_it_is_modelled():
    """torchtitan's per-op checkpointing (checkpointing op) is a choice of the FSDP2 search for the dense layers it is
    modelled for, without TP or PP (its skip rule), and not elsewhere."""
    fsdp2 = replace(FULL_70B, model="Llama-3.1-8B", gpu=H100, framework="fsdp2")
    runnable = [c for c in candidates(fsdp2, EST, 8) if c.checkpointing == "op" and EST.skip_check(c) is None]
    assert runnable and all(c.tp_size == c.pp_size == c.cp_size == 1 for c in runnable)
    for other in (replace(fsdp2, framework="hf"), replace(fsdp2, model="Qwen3-30B-A3B"), replace(fsdp2, workload="lora")):
        assert all(c.checkpointing != "op" for c in candidates(other, EST, 8))


def test_megatrons_recompute_modules_are_searched_for_its_moe_full_training_only():
    """The plan tries Megatron's --recompute-modules lists (layernorm+moe_act, layernorm+moe; with MLA, those with
    mla_up_proj) where they apply: MoE full training under megatron. Qwen3-30B-A3B on H100: each of none, selective and full fixed also fits 4 GPUs, the
    first two at half the speed (TP 2 without experts spread), full recomputing every layer; the plan takes
    layernorm+moe, the fastest of them (441 tokens/s per GPU against 438 with full)."""
    moe = replace(FULL_70B, model="Qwen3-30B-A3B", gpu=H100, framework="megatron")
    assert {c.checkpointing for c in candidates(moe, EST, 8)} == {
        "none", "selective", "full", "layernorm+moe_act", "layernorm+moe"}
    # a model with multi-head latent attention also has the lists that recompute its up-projections
    assert {c.checkpointing for c in candidates(replace(moe, model="DeepSeek-V2-Lite"), EST, 8)} == set(RECOMPUTE_MODULES)
    for other in (replace(moe, model="Llama-3.1-8B"), replace(moe, framework="fsdp2"), replace(moe, workload="lora")):
        assert {c.checkpointing for c in candidates(other, EST, 8)} <= {"none", "selective", "full"}
    best = plan(EST, moe, [H100]).options[0]
    assert best.layout["checkpointing"] == "layernorm+moe" and best.total_gpus == 4
    for checkpointing in ("none", "selective", "full"):
        fixed = plan(EST, replace(moe, checkpointing=checkpointing), [H100], fixed=("checkpointing",)).options[0]
        assert fixed.total_gpus == 4
        assert fixed.estimate["train_tokens_per_s_per_gpu"] < best.estimate["train_tokens_per_s_per_gpu"]


def test_adams_state_dtype_searched_is_the_frameworks_own():
    """Bitsandbytes' 8-bit AdamW where the framework can run it; under megatron, which builds its own Adam, the bf16
    moments of its precision-aware optimizer instead."""
    for framework, searched in (("hf", {"adamw", "adamw-8bit"}), ("megatron", {"adamw", "adamw-bf16"})):
        s = replace(FULL_70B, model="Llama-3.1-8B", gpu=H100, framework=framework)
        assert {c.optimizer for c in candidates(s, EST, 8)} == searched


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
    and a tight one (10^10 tokens in 5 days, FSDP2 with tensor and sequence parallelism) leaves neither
    offload nor recompute (the HF Trainer's TP, without sequence parallelism, keeps full recompute). (A week was
    tight until 2026-12-07, when a data-parallel group beside TP 8 got one NIC per node, not the node's eight: 24 GPUs
    with full recompute and no TP then meet it, TP 8's gradient traffic being slower than recomputing.)"""
    tokens = replace(FULL_70B, train_tokens=10**9)
    slow = plan(EST, tokens, [H100]).options[0]
    half = slow.estimate["time_to_train_seconds"] / 2
    fast = plan(EST, tokens, [H100], Goal(within_seconds=half)).options[0]
    assert fast.estimate["time_to_train_seconds"] <= half and fast.total_gpus > slow.total_gpus
    week = plan(EST, replace(FULL_70B, train_tokens=10**10, framework="fsdp2"), [H100], Goal(within_seconds=5 * 86400),
                fixed=("framework",)).options[0]
    assert week.estimate["time_to_train_seconds"] <= 5 * 86400
    assert week.layout["offload"] == "none" and week.layout["checkpointing"] == "none"


def test_a_first_token_goal_buys_the_prefill_it_needs():
    """A time-to-first-token goal is met by the term prefill_seconds (one request's prefill under an engine):
    it moves the pick to tensor parallelism wide enough, and where even a whole node's is too slow, the
    GPU type has no answer, saying so. First principles: 70B at 7,680 prompt tokens is 2 × 70.6e9 × 7,680
    ≈ 1.08e15 FLOPs before attention, so no layout on 8 A100s (312 TFLOPS bf16 at the assumed prefill
    efficiency) reaches 0.5 s."""
    serve = replace(SERVE_70B, serving_engine="vllm", gen_len=512)
    users = Goal(users=32, context=8192)
    plain = plan(EST, serve, [H100, "A100-80GB"], users)
    ttft = {o.gpu: o.estimate["prefill_seconds"] for o in plain.options}
    goal = Goal(users=32, context=8192, max_ttft_seconds=0.5)
    fast = plan(EST, serve, [H100, "A100-80GB"], goal)
    assert ttft[H100] > 0.5  # the cheapest H100 layout is too slow to its first token
    (pick,) = fast.options
    assert pick.gpu == H100 and pick.estimate["prefill_seconds"] <= 0.5 < ttft[H100]
    cheaper = next(o for o in plain.options if o.gpu == H100)
    assert pick.estimate.scenario.tp_size > cheaper.estimate.scenario.tp_size
    e, tp = pick.estimate, pick.estimate.scenario.tp_size
    dense = 2 * e["active_params"] * 7680 / (tp * e["peak_flops"] * EST.assumptions["prefill_efficiency"])
    assert dense <= e["prefill_seconds"] <= 1.2 * dense  # causal attention adds under 20 % at 7,680 tokens
    (miss,) = fast.misses
    assert miss.gpu == "A100-80GB" and miss.nearest["prefill_seconds"] > 0.5
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-70B", "--engine", "vllm", "--users", "32",
                                    "--context", "8k", "--gen-len", "512", "--max-ttft", "500ms", "--gpu", H100,
                                    "--gpu-type", "A100-80GB"]).output
    assert "first token within 0.5 s" in out and "first token, s" in out.splitlines()[1]
    assert "A100-80GB: fits, but the fastest layout up to 512 GPUs gives its first token in" in out


def test_generate_makes_every_prompt_wait_for_the_whole_batchs_prefill():
    """Under generate() the first token comes after every prompt of the batch is prefilled; an engine
    serves a request's first token after its own prefill: a first-token goal reads the difference."""
    one = EST.estimate(replace(SERVE_70B, gpu=H100, num_gpus=8, tp_size=8, batch_size=1))
    for batch in (4, 16):
        hf = EST.estimate(replace(SERVE_70B, gpu=H100, num_gpus=8, tp_size=8, batch_size=batch))
        vllm = EST.estimate(replace(SERVE_70B, gpu=H100, num_gpus=8, tp_size=8, batch_size=batch,
                                    serving_engine="vllm"))
        assert hf["prefill_seconds"] == pytest.approx(batch * one["prefill_seconds"])
        assert vllm["prefill_seconds"] == pytest.approx(one["prefill_seconds"])


# ---- the array search against the plain one: each candidate a Scenario, estimated one at a time -------------

def _reference(scenario, gpu, goal, counts, fixed=()):
    """The search written the slow, obvious way (as it was before the array rendering)."""
    import numpy as np
    base = replace(scenario, gpu=gpu)
    for n in counts:
        found = []
        for c in candidates(base, EST, n, fixed):
            c = replace(c, **{k: int(v) for k, v in goal.shape(c.workload, c.gen_len, c.num_gpus, c.tp_size).items()})
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


@pytest.mark.slow
@pytest.mark.parametrize("scenario, goal, fixed", [
    (FULL_70B, Goal(), ()),
    (replace(FULL_70B, train_tokens=10**9), Goal(within_seconds=2 * 86400), ()),
    (replace(FULL_70B, model="Mixtral-8x7B", checkpointing="full"), Goal(), ("checkpointing",)),
    (replace(FULL_70B, model="Llama-3-8B", workload="lora"), Goal(within_seconds=3600), ()),
    (SERVE_70B, Goal(users=64, context=8192, min_tokens_per_s=20), ()),
    (replace(SERVE_70B, model="Mixtral-8x7B"), Goal(users=500, min_tokens_per_s=5), ()),
    (replace(SERVE_70B, serving_engine="vllm"), Goal(users=32, context=8192, max_ttft_seconds=0.5), ()),
])
def test_the_array_search_finds_what_the_plain_search_finds(scenario, goal, fixed):
    gpus = ["H100-80GB-SXM", "A100-40GB", "L4"]
    result = plan(EST, scenario, gpus, goal, fixed=fixed)
    by_gpu = {o.gpu: o for o in result.options}
    assert result.tried > 0
    for gpu in gpus:
        expected = _reference(scenario, gpu, goal, buyable_counts(EST.gpus[gpu].gpus_per_node), fixed)
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


# ---- the command as a buyer uses it (#31): every layout option kept, buyable counts, reasons -----------

def _cli_plan(*args):
    import json
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--json", *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


@pytest.mark.parametrize("args, kept", [
    (("--zero", "3"), {"zero_stage": 3}),  # refused before: "ZeRO-3 on one data-parallel rank shards nothing"
    (("--tp", "8"), {"tp_size": 8}),  # refused before: "tp_size 8 does not divide num_gpus 1"
    (("--pp", "2"), {"pp_size": 2}),
    (("--gpus", "24"), {"num_gpus": 24}),  # ignored before
    (("--framework", "megatron"), {"framework": "megatron"}),
    # refused before: the pre-check ran the fsdp2 framework at ZeRO-0 ("does not run ZeRO-0")
    (("--framework", "fsdp2"), {"framework": "fsdp2"}),
    (("--framework", "fsdp2", "--zero", "3"), {"framework": "fsdp2", "zero_stage": 3}),
    (("--framework", "fsdp2", "--precision", "fsdp-bf16"), {"framework": "fsdp2"}),
    (("--checkpointing", "full"), {"checkpointing": "full"}),
    (("--offload", "none"), {"offload": "none"}),
    (("--gpus", "16", "--tp", "4", "--pp", "2", "--zero", "1", "--framework", "megatron", "--checkpointing", "full"),
     {"num_gpus": 16, "tp_size": 4, "pp_size": 2, "zero_stage": 1, "framework": "megatron", "checkpointing": "full"}),
])
def test_plan_keeps_every_layout_option_given(args, kept):
    found = _cli_plan("--model", "Llama-3.1-70B", "--workload", "full", "--gpu", H100, "--gpu-type", "A100-80GB",
                      *args)
    assert found["options"], found
    for option in found["options"]:
        assert {k: option["layout"][k] for k in kept} == kept


def test_plan_keeps_expert_parallelism_for_a_moe_model():
    found = _cli_plan("--model", "Mixtral-8x7B", "--ep", "4", "--gpu", H100)
    assert [o["layout"]["ep_size"] for o in found["options"]] == [4]


def test_plan_buys_whole_nodes_not_powers_of_two():
    """70B full fine-tuning without offload fits 24 L40S (three 8-GPU servers); the power-of-two search
    bought 32. Every count the search tries is a divisor of a node or a whole number of nodes."""
    found = _cli_plan("--model", "Llama-3.1-70B", "--workload", "full", "--offload", "none", "--gpu", "L40S")
    assert found["options"][0]["total_gpus"] == 24
    assert buyable_counts(8)[:6] == (1, 2, 4, 8, 16, 24) and buyable_counts(4)[:4] == (1, 2, 4, 8)
    assert 48 in buyable_counts(8) and all(n % 8 == 0 for n in buyable_counts(8)[3:])
    fewer = plan(EST, replace(FULL_70B, offload="none"), ["L40S"], counts=(1, 2, 4, 8, 16, 32), fixed=("offload",))
    assert fewer.options[0].total_gpus == 32  # 24 is the cheaper purchase


def test_plan_finds_a_56_gpu_answer_where_it_is_cheapest():
    """70B without offload on RTX 4090s (24 GB) under FSDP2 (TP with sequence parallelism): seven 8-GPU servers;
    the power-of-two search buys 64. (On L4, 22.5 GiB, it was 56 too until torchtitan's TP was measured: each GPU
    makes the whole vocabulary's embedding gradient, and 56 L4 are 0.26 GiB short.)"""
    kept = replace(FULL_70B, offload="none", framework="fsdp2")
    found = plan(EST, kept, ["RTX-4090"], fixed=("offload", "framework"))
    assert found.options[0].total_gpus == 56
    powers = plan(EST, kept, ["RTX-4090"], counts=(1, 2, 4, 8, 16, 32, 64, 128), fixed=("offload", "framework"))
    assert powers.options[0].total_gpus == 64 and powers.options[0].key(("purchase_usd",)) > found.options[0].key(
        ("purchase_usd",))


def test_plan_finds_a_48_gpu_answer_where_it_is_cheapest():
    """Mixtral-8x7B (46.7 B parameters) fully fine-tuned under DeepSpeed without offload on L4s: six 8-GPU servers,
    where the power-of-two search buys 64; the five servers below hold it only without the safety factor's room."""
    found = _cli_plan("--model", "Mixtral-8x7B", "--workload", "full", "--offload", "none", "--framework",
                      "deepspeed", "--gpu", "L4")
    best = found["options"][0]
    assert best["total_gpus"] == 48
    kept = Scenario(model="Mixtral-8x7B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, offload="none",
                    framework="deepspeed")
    picked = plan(EST, kept, ["L4"], fixed=("offload", "framework")).options[0]
    assert picked.total_gpus == 48 and picked.estimate["fits_recommended"]
    assert not EST.estimate(picked.estimate.scenario.with_inputs(num_gpus=40))["fits_recommended"]
    powers = plan(EST, kept, ["L4"], counts=(1, 2, 4, 8, 16, 32, 64, 128), fixed=("offload", "framework"))
    assert powers.options[0].total_gpus == 64
    assert powers.options[0].estimate["purchase_usd"] > picked.estimate["purchase_usd"]


def test_plan_says_why_a_gpu_type_has_no_answer():
    from click.testing import CliRunner
    from reportgen.cli import main
    # options no layout can run with: an input error, as estimate's (#31: it printed a miss and exited 0)
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-70B", "--workload", "full", "--gpu", H100,
                                    "--tp", "3"])
    assert out.exit_code == 1 and out.output.startswith(f"Error: no layout can run on {H100}: tp_size 3 does not "
                                                        "divide 64 attention heads") and out.output.count("\n") == 1
    # what does not fit is an answer, not an error
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-70B", "--workload", "full", "--gpu", "L4",
                                    "--gpus", "3"])
    assert out.exit_code == 0
    assert "L4: nothing fits up to 3 GPUs; at 3 GPUs the recommended budget (k × device total) is" in out.output
    slow = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-70B", "--users", "64", "--min-tokens-per-s", "500",
                                     "--gpu", H100]).output
    assert f"{H100}: fits, but the fastest layout up to 512 GPUs gives" in slow and "(goal: 500)" in slow


@pytest.mark.parametrize("options, reason", [
    (("--workload", "full", "--framework", "fsdp2", "--zero", "1"), "the fsdp2 framework does not run ZeRO-1"),
    (("--workload", "grpo", "--framework", "fsdp2", "--zero", "1"), "the fsdp2 framework does not run ZeRO-1"),
])
def test_plan_names_the_rule_every_layout_breaks(options, reason):
    """Options that rule out every layout: one Error line names the rule they break, alone (it listed the first
    candidate skipped by each rule: 'tp_size 2 × pp_size 8 does not divide num_gpus 24; ZeRO-3 with pipeline
    parallelism …'), exit status 1 as estimate's."""
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-2-7B", "--gpu", H100, *options])
    (line,) = out.output.splitlines()
    assert out.exit_code == 1 and line.startswith(f"Error: no layout can run on {H100}: {reason}") and ";" not in line


def test_plan_error_names_what_rules_out_every_gpu_type():
    """Over several GPU types the error names the rules that held on all of them (a V100's missing bf16 is its
    own, not the options')."""
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-3.1-8B", "--workload", "full", "--gpu-type", "V100-32GB",
                                    "--gpu-type", H100, "--pp", "64"])
    assert out.exit_code == 1 and out.output == "Error: no layout can run on any GPU type: pp_size 64 exceeds the 32 layers\n"


def test_plan_refuses_a_precision_its_framework_does_not_run():
    """A rule that reads no layout input is checked before the search, as estimate checks it (it was a miss on every
    GPU type, listing three reasons)."""
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-2-7B", "--workload", "full", "--precision", "fsdp-bf16",
                                    "--gpu", H100])
    assert out.exit_code == 1 and out.output.strip() == (
        "Error: precision fsdp-bf16 is FSDP2's mixed-precision policy: it needs framework fsdp2, not hf")


def test_plan_labels_each_column_with_its_unit():
    from click.testing import CliRunner
    from reportgen.cli import main
    train = CliRunner().invoke(main, ["plan", "--model", "Llama-3-8B", "--workload", "full", "--gpu", H100]).output
    header = train.splitlines()[1]
    for label in ("device total GiB/GPU", "recommended GiB/GPU", "time to train, h", "purchase USD", "rent USD/h",
                  "run cost USD"):
        assert label in header
    serve = CliRunner().invoke(main, ["plan", "--model", "Llama-3-8B", "--gpu", H100]).output.splitlines()[1]
    assert "output tokens/s per user" in serve and "run cost" not in serve and "speed" not in serve


@pytest.mark.parametrize("workload, option, value", [("full", "--users", "50"), ("full", "--context", "32k"),
                                                     ("full", "--min-tokens-per-s", "20"), ("full", "--max-ttft", "1s"),
                                                     ("inference", "--within", "7d")])
def test_plan_refuses_a_goal_that_does_not_apply(workload, option, value):
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Llama-3-8B", "--workload", workload, option, value])
    assert out.exit_code == 2 and option in out.output and "does not apply" in out.output


@pytest.mark.parametrize("args", [["--workload", "ppo", "--within", "7d"], ["--workload", "ppo", "--steps", "100"],
                                  ["--workload", "full", "--steps", "100", "--within", "7d"],
                                  ["--workload", "ppo", "--prompts", "1000", "--prompts-per-iteration", "100"]])
def test_an_rlhf_run_needs_both_its_steps_and_its_deadline(args):
    from click.testing import CliRunner
    from reportgen.cli import main
    out = CliRunner().invoke(main, ["plan", "--model", "Qwen2.5-7B", *args])
    assert out.exit_code == 2 and ("--steps or --prompts (an RLHF run's length) and --within go together, for RLHF "
                                   "only") in out.output


def test_an_rlhf_run_gets_the_fewest_gpus_that_end_it_in_time():
    """#33 item 3 (part): `plan --steps N --within T` for RLHF. The iteration's 64 prompts are shared by the
    data-parallel ranks, so more GPUs end an iteration sooner. Without a deadline the plan lays the group out by
    memory (one A100); with 80 % of that run's time, the answer is the smallest GPU count whose iterations end in
    time: every smaller buyable count either does not fit or is too slow (checked count by count)."""
    from reportgen.model.estimate import rlhf_scenario
    from reportgen.planning.plan import plan_run, run_seconds
    group = rlhf_scenario(name="", algorithm="ppo", placement="colocated", prompts_per_iteration=64,
                          actor=Scenario(model="Qwen2.5-7B", workload="full", batch_size=8, prompt_len=512, gen_len=512))
    a100, steps = "A100-80GB", 1000
    plain = plan(EST, group, [a100]).options[0]
    within = 0.8 * run_seconds(plain.estimate, steps)
    run = plan_run(EST, group, [a100], steps, within)
    (pick,) = run.options
    assert run_seconds(pick.estimate, steps) <= within < run_seconds(plain.estimate, steps)
    assert pick.total_gpus > plain.total_gpus
    for n in buyable_counts(EST.gpus[a100].gpus_per_node):
        if n >= pick.num_gpus:
            break
        at_n = plan(EST, group, [a100], counts=[n])
        assert not at_n.options or run_seconds(at_n.options[0].estimate, steps) > within, n
    data = run.to_json()
    assert (data["steps"], data["within_seconds"]) == (steps, within)
    assert data["options"][0]["run_seconds"] == run_seconds(pick.estimate, steps)
    never = plan_run(EST, group, [a100], steps, 1.0)  # one second: no count is fast enough
    assert not never.options and never.misses[0].nearest["fits_recommended"]


def test_plan_tries_checkpointing_and_offload_for_rlhf():
    """Qwen2.5-7B PPO at batch 8 on A100-80GB was 'impossible' until --checkpointing full was given."""
    found = _cli_plan("--model", "Qwen2.5-7B", "--workload", "ppo", "--batch", "8", "--gpu", "A100-80GB")
    layout = found["options"][0]["layout"]
    assert found["options"][0]["gpu"] == "A100-80GB"
    assert layout["checkpointing"] != "none" or layout["offload"] != "none"


def test_pipeline_layouts_are_timed_with_the_micro_batches_that_fill_them():
    """#32: a pipeline timed with one micro-batch per step idles (p − 1) / p of it (Llama-3.1-405B under
    Megatron on H100: 143.6 h for 10^9 tokens on 128 GPUs, TP8 PP8). The plan runs p stages with at least
    4p micro-batches, so the time is within the bubble's (p − 1) / 4p of the compute alone; an
    accumulation given is kept. (Megatron's distributed optimizer, ZeRO-1: its FSDP, ZeRO-2/3, runs no pipeline.)"""
    s = replace(FULL_70B, model="Llama-3.1-405B", framework="megatron", offload="none", zero_stage=1, gpu=H100)
    option = plan(EST, s, [H100], fixed=("offload", "framework", "zero_stage")).options[0]
    layout, e = option.layout, option.estimate
    assert layout["pp_size"] > 1 and layout["grad_accum_steps"] >= 4 * layout["pp_size"]
    m = layout["grad_accum_steps"]
    assert (e["pipeline_slots"] - m) / e["pipeline_slots"] < 0.25  # the bubble's share of the step
    one = EST.estimate(replace(option.lead, grad_accum_steps=1, vp_size=1))  # plain 1F1B: interleaving needs m ≥ p
    assert one["time_to_train_seconds"] > 3 * e["time_to_train_seconds"]
    kept = plan(EST, replace(s, grad_accum_steps=2), [H100],
                fixed=("offload", "framework", "zero_stage", "grad_accum_steps"))
    assert kept.options[0].layout["grad_accum_steps"] == 2


@pytest.mark.slow  # several seconds: the full run has it
def test_long_sequences_may_be_split_over_context_parallel_gpus():
    """#32: Llama-3.1-70B at 128k tokens under Megatron: the search tries context parallelism (chunks of at
    least 4k tokens per GPU) and takes it where it needs fewer GPUs or is faster at the same purchase: with it the
    job fits 32 H100 (Megatron-FSDP, CP 32), without it 64 (a pipeline), and on those 64 CP is faster. (Until
    2026-12-06 both took 64 GPUs: the plan gave megatron bitsandbytes' 8-bit AdamW, which it does not run.)"""
    s = replace(FULL_70B, seq_len=131072, framework="megatron", offload="none", checkpointing="full")
    keep = ("framework", "offload", "checkpointing")
    split = plan(EST, s, [H100], fixed=keep).options[0]
    whole = plan(EST, s, [H100], fixed=keep + ("cp_size",)).options[0]
    assert split.layout["cp_size"] > 1 and whole.layout["cp_size"] == 1
    assert split.total_gpus < whole.total_gpus
    same = plan(EST, replace(s, num_gpus=whole.total_gpus), [H100], fixed=keep + ("num_gpus",)).options[0]
    assert same.layout["cp_size"] > 1
    assert same.estimate["time_to_train_seconds"] < whole.estimate["time_to_train_seconds"]
    assert {c.cp_size for c in candidates(replace(s, seq_len=4096), EST, 64)} == {1}  # 4k: nothing to split
    assert {c.cp_size for c in candidates(replace(s, framework="hf"), EST, 64)} == {1}  # hf has none


def test_deepspeed_long_sequences_may_be_split_by_ulysses():
    """Llama-3.1-8B at 128k tokens under DeepSpeed: Ulysses over the 8 GPUs of a node (its 8 key/value heads allow
    no more) holds seq ÷ 8 tokens of activations per GPU; without context parallelism the same job needs more GPUs."""
    s = Scenario(model="Llama-3.1-8B", workload="full", seq_len=131072, prompt_len=0, gen_len=0, gpu=H100,
                 framework="deepspeed")
    split = plan(EST, s, [H100], fixed=("framework",)).options[0]
    whole = plan(EST, s, [H100], fixed=("framework", "cp_size")).options[0]
    assert split.layout["cp_size"] == 8 and whole.layout["cp_size"] == 1
    assert split.total_gpus < whole.total_gpus
    # Ulysses splits a sequence into cp chunks, ring attention into 2 × cp: 8 × 8,191 tokens go to 8 GPUs under
    # DeepSpeed, not under Megatron (the skip rule cp_seq, which the search leaves to prune)
    odd = replace(s, seq_len=8 * 8191)
    assert 8 in {c.cp_size for c in candidates(odd, EST, 8) if EST.skip_check(c) is None}
    assert {c.cp_size for c in candidates(replace(odd, framework="megatron"), EST, 8)
            if EST.skip_check(c) is None} == {1, 2, 4}


def test_megatron_pipelines_may_interleave_their_stages():
    """#32: under Megatron the search tries 2 and 4 model chunks per GPU on a pipeline (never without one):
    Llama-3.1-70B on 16 H100 takes TP4 PP4 with interleaving, faster than the same purchase without (under its
    distributed optimizer, ZeRO-1: Megatron-FSDP runs no pipeline)."""
    s = replace(FULL_70B, framework="megatron", offload="none", zero_stage=1)
    keep = ("framework", "offload", "zero_stage")
    chunked = plan(EST, s, [H100], fixed=keep).options[0]
    plain = plan(EST, s, [H100], fixed=keep + ("vp_size",)).options[0]
    assert chunked.layout["vp_size"] > 1 and chunked.layout["pp_size"] > 1 and plain.layout["vp_size"] == 1
    assert chunked.total_gpus == plain.total_gpus
    assert chunked.estimate["time_to_train_seconds"] < plain.estimate["time_to_train_seconds"]
    assert all(c.pp_size > 1 for c in candidates(s, EST, 16) if c.vp_size > 1)
    assert {c.vp_size for c in candidates(replace(s, framework="deepspeed"), EST, 16)} == {1}


def _as_lists(evaluated: tuple) -> tuple:
    """_estimate_batch's answer with every column as a list: answers compared value by value."""
    from reportgen.model.vector import to_list
    columns, values, reasons, everywhere = evaluated
    size = len(values["purchase_usd"])
    return ({k: to_list(v, size) for k, v in columns.items()}, {k: v.tolist() for k, v in values.items()},
            reasons, everywhere)


def test_gpu_types_first_batches_evaluated_at_once_answer_as_each_alone(monkeypatch):
    """plan() evaluates every GPU type's first batch of candidates in one pass (plan._estimate_batches): each type's
    candidates that can run, their terms, the first skip reason per rule and the rules every candidate breaks are
    what its batch evaluated alone gives. H100, V100 (no bf16: every candidate skipped), L4 and A100 with its TP kept
    (a column the others choose, one number there)."""
    from reportgen.planning import plan as search
    goal = Goal(within_seconds=3 * 86400)
    scenario = replace(FULL_70B, model="Llama-3-8B", train_tokens=10**9)
    bases = [(replace(scenario, gpu=gpu), fixed)
             for gpu, fixed in ((H100, ()), ("V100-32GB", ()), ("L4", ()), ("A100-80GB", ("tp_size",)))]
    parts = [(base, next(search._batches(base, EST, buyable_counts(8), fixed))) for base, fixed in bases]
    assert "tp_size" in parts[0][1][0][0] and "tp_size" not in parts[3][1][0][0]
    alone = [_as_lists(search._estimate_batch(EST, base, goal, batch)) for base, batch in parts]
    passes = []
    rows = search._estimate_rows
    monkeypatch.setattr(search, "_estimate_rows", lambda e, columns, size: passes.append(size) or rows(e, columns, size))
    assert [_as_lists(t) for t in search._estimate_batches(EST, goal, parts)] == alone
    one_pass = [sum(size for _, batch in parts for _, size in batch)]
    assert passes == one_pass
    h100, v100, l4, a100 = alone
    assert len(h100[1]["purchase_usd"]) > 100 and not v100[1]["purchase_usd"] and "bf16_gpu" in v100[3]
    # no count to try on any GPU type: no pass, and each type a miss at no count
    nothing = plan(EST, scenario, [H100, "L4"], goal, counts=())
    assert passes == one_pass and not nothing.options
    assert [(m.gpu, m.most_gpus, m.skipped, m.nearest) for m in nothing.misses] == [(H100, 0, (), None),
                                                                                    ("L4", 0, (), None)]
    assert set(a100[0]["tp_size"]) == {1} and len(set(h100[0]["tp_size"])) > 1
