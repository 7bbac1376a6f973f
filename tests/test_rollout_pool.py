"""#33: a rollout engine on GPUs of its own (rollout_placement separate: OpenRLHF's default, vllm_num_engines ×
vllm_tensor_parallel_size GPUs). The group gains the role "rollout": the actor's model served by the engine at its
own tensor parallelism, generating the iteration's sequences over its engines, while the actor only trains and
sends it the trained weights over the network."""
import json
import re

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario, rlhf_scenario
from reportgen.model.units import MiB
from reportgen.planning.plan import plan, plan_run
from reportgen.report.build import Result, requirement

EST = Estimator(load_models(), load_gpus())
TIMES = ("generation_seconds", "log_prob_seconds", "scoring_seconds", "training_seconds")


def group(algorithm="ppo", rollout_placement="separate", role_gpus=None, gpu="H100-80GB-SXM", judges="model",
          placement="separate", **actor):
    base = dict(model="Qwen2.5-7B", workload="full", batch_size=8, prompt_len=512, gen_len=1024, num_gpus=8,
                zero_stage=3, checkpointing="full", serving_engine="vllm", gpu_memory_utilization=0.5, gpu=gpu)
    return rlhf_scenario(name="", algorithm=algorithm, placement=placement, actor=Scenario(**{**base, **actor}),
                         group_size=8, prompts_per_iteration=256, micro_batch_size=4, role_gpus=role_gpus,
                         rollout_placement=rollout_placement, reference="none" if judges == "rule" else "model",
                         reward=judges)


@pytest.mark.parametrize("algorithm", ["ppo", "grpo"])
@pytest.mark.parametrize("layout", [dict(), dict(rollout_tp_size=2), dict(rollout_tp_size=4, num_gpus=16),
                                    dict(gpu_memory_utilization=0.3, gen_len=4096, max_gen_len=8192),
                                    dict(gpu_memory_utilization=0.9, generation_factor=2.0)])
def test_engines_of_their_own_generate_as_the_same_engines_beside_the_actor(algorithm, layout):
    """On as many GPUs as the actor's, at the same TP and share of each GPU, the engines are the ones veRL puts
    beside the actor: the same KV pool, rounds and generation time, whatever else the group runs. The passes
    and steps of the trained and frozen roles do not change."""
    beside, apart = (EST.estimate_group(group(algorithm, placement, **layout)) for placement in ("actor", "separate"))
    assert "rollout" not in dict(beside.roles) and "rollout" in dict(apart.roles)
    engine, actor = dict(apart.roles)["rollout"], dict(beside.roles)["actor"]
    for term in ("rollout_pool_bytes", "rollout_batch", "generated_sequences", "rollout_seconds",
                 "seconds_per_output_token", "prefill_seconds"):
        assert engine[term] == pytest.approx(actor[term], rel=1e-12), term
    assert apart["generation_seconds"] > 0
    for term in TIMES:
        assert apart[term] == pytest.approx(beside[term], rel=1e-12), term


def test_the_actor_holds_no_engine_and_the_engine_no_training_state():
    """Apart, the actor's GPUs hold its training alone (no engine budget, KV cache or generation phase: the same
    memory as the actor of the group without rollouts' lengths), and the engine's GPUs its budget alone."""
    apart = EST.estimate_group(group())
    actor, engine = dict(apart.roles)["actor"], dict(apart.roles)["rollout"]
    assert actor["rollout_engine"] == 0 and actor["engine_budget_bytes"] == actor["kv_cache"] == 0
    assert actor["generation_phase"] == 0 and actor["rollout_seconds"] == 0
    beside = dict(EST.estimate_group(group(rollout_placement="actor")).roles)["actor"]
    assert beside["generation_phase"] > actor["allocated_peak"]  # beside the trainer the engine set the peak
    for term in ("weights", "gradients", "optimizer_states", "master_weights", "phase_backward_start",
                 "phase_optimizer_step", "step_seconds", "forward_pass_seconds"):
        assert actor[term] == beside[term], term
    for term in ("weights", "gradients", "optimizer_states", "master_weights", "activations", "model_states",
                 "step_seconds", "forward_pass_seconds", "scoring_seconds"):
        assert engine[term] == 0, term


@pytest.mark.parametrize("gpu,share,gpus", [("H100-80GB-SXM", 0.5, 8), ("A100-40GB", 0.9, 8), ("L40S", 0.7, 1)])
def test_the_engines_gpus_hold_the_budget_it_takes_at_start_up(gpu, share, gpus):
    """vLLM takes gpu_memory_utilization × the memory CUDA reports at start-up, its weights and KV pool inside it,
    and nvidia-smi shows it beside the memory the driver keeps, its CUDA graphs and, across GPUs, NCCL's buffers:
    the budget is allocated at once (no fragmentation) and its margin is what it leaves outside (no safety
    factor on top), as a served engine's is."""
    g = group(gpu=gpu, gpu_memory_utilization=share, model="Qwen2.5-1.5B", role_gpus={"rollout": gpus})
    engine = dict(EST.estimate_group(g).roles)["rollout"]
    spec, a = EST.gpus[gpu], EST.assumptions
    budget = int((spec.memory_mib - a["driver_reserved_mib"]) * MiB * share)
    assert engine["engine_budget_bytes"] == budget == engine["allocated_peak"] == engine["reserved_peak"]
    comm = a["comm_buffer_mib"] * MiB if gpus > 1 else 0
    assert engine["device_total"] == (a["driver_reserved_mib"] + a["cuda_graph_mib"]) * MiB + budget + comm
    assert engine["recommended"] == engine["device_total"]
    weights = dict(EST.estimate_group(g).roles)["actor"]["weight_bytes_unsharded"]  # bf16: 2 bytes a parameter
    assert engine["rollout_pool_bytes"] == budget - weights / engine["decode_tp"]


def test_more_engines_generate_an_iteration_sooner_and_cost_more():
    """Each engine takes its share of the iteration's sequences (in rounds of what its pool holds): twice the
    engines, a shorter generation; the pool's GPUs are bought."""
    counts = (1, 2, 4, 8, 16)
    made = [EST.estimate_group(group("grpo", role_gpus={"rollout": n})) for n in counts]
    times = [g["generation_seconds"] for g in made]
    assert all(b < a for a, b in zip(times, times[1:])), times
    assert dict(made[0].roles)["rollout"]["rollout_batch"] < dict(made[0].roles)["rollout"]["generated_sequences"]
    assert dict(made[-1].roles)["rollout"]["rollout_batch"] == dict(made[-1].roles)["rollout"]["generated_sequences"]
    price = EST.gpus["H100-80GB-SXM"].price_purchase_usd
    for n, g in zip((1, 2, 4, 8, 16), made):
        pools = {role: e.scenario.num_gpus for role, e in g.roles}
        assert pools["rollout"] == n and g["total_gpus"] == sum(pools.values())
        assert g["purchase_usd"] == sum(pools.values()) * price


def test_the_trained_weights_reach_the_engines_over_the_network():
    """An engine apart stays awake (no sleep, no wake-up over PCIe) and receives the whole model from the actor's
    first rank, broadcast over the network: its bytes at one GPU's network bandwidth, whatever the engine count."""
    for n in (2, 8):
        g = EST.estimate_group(group(role_gpus={"rollout": n}))
        engine = dict(g.roles)["rollout"]
        bandwidth = EST.gpus["H100-80GB-SXM"].inter_node_gbps * 1e9 * EST.assumptions["comm_efficiency"]
        assert engine["refit_seconds"] == pytest.approx(engine["weight_bytes_unsharded"] / bandwidth, rel=1e-12)
        trainer = dict(EST.estimate_group(group(rollout_placement="actor")).roles)["actor"]
        assert engine["weight_bytes_unsharded"] == trainer["weight_bytes_unsharded"]  # the bf16 weights it gathers
        assert g["refit_seconds"] == engine["refit_seconds"] and dict(g.roles)["actor"]["refit_seconds"] == 0
        assert g["rollout_phase_seconds"] == pytest.approx(g["refit_seconds"] + g["generation_seconds"], rel=1e-12)


def test_where_the_engine_runs_is_how_the_job_runs_not_what_it_is():
    """Groups with the engine beside the actor and apart answer one requirement: the plan and the report compare
    them (its model is the actor's)."""
    needs = {requirement(Result(1, "m", EST.estimate_group(group(rollout_placement=p)))) for p in ("actor", "separate")}
    assert len(needs) == 1


def test_a_deadline_grows_the_engines_with_the_actor():
    """The plan sizes a pool of engines it is not given as the actor's GPUs at least: a deadline that needs a larger
    actor gets more engines, and a run that would miss it with the fewest engines that hold the model meets it."""
    # 2,048 sequences of up to 8k tokens a rule scores, no KL term: the actor and its engines (the plan sizes frozen
    # roles' pools by their memory: they would bound the iteration)
    g = group("grpo", num_gpus=1, gen_len=4096, max_gen_len=8192, judges="rule")
    within = 4 * 86400
    found = plan_run(EST, g, ["H100-80GB-SXM"], steps=500, within_seconds=within)
    (option,) = found.options
    pools = {role: e.scenario.num_gpus for role, e in option.estimate.roles}
    assert pools["rollout"] >= pools["actor"] > 1
    assert 500 * option.estimate["iteration_seconds"] <= within
    fewest = EST.estimate_group(option.estimate.scenario.relayout({"role_gpus": {**pools, "rollout": 1}}))
    assert fewest["fits_recommended"] and 500 * fewest["iteration_seconds"] > within


@pytest.mark.parametrize("args,message", [
    (["--placement", "separate", "--rollout-placement", "separate"],
     "Error: --rollout-placement: separate needs a rollout engine (serving_engine vllm or sglang): generate() runs "
     "on the actor's GPUs"),
    (["--engine", "vllm", "--rollout-placement", "separate", "--role-gpus", "critic=2"],
     "Error: --role-gpus.critic: applies to placement separate (colocated roles share the actor's GPUs; only a rollout "
     "engine apart, rollout_placement separate, has GPUs of its own)"),
    (["--engine", "vllm", "--role-gpu-types", "rollout=L40S"],
     "Error: --role-gpu-types.rollout: unknown role 'rollout'"),
    (["--engine", "vllm", "--placement", "separate", "--role-gpus", "rollout=2"],
     "Error: --role-gpus.rollout: unknown role 'rollout'"),
    (["--engine", "vllm", "--placement", "separate", "--rollout-placement", "separate", "--rollout-tp", "2",
      "--gpus", "4", "--role-gpus", "rollout=3"],
     "Error: --role-gpus: rollout: 3 GPUs do not make whole engines of 2 GPUs (the engine's tensor parallelism)"),
    (["--engine", "vllm", "--placement", "separate", "--tp", "2", "--gpus", "4", "--role-gpus", "critic=3"],
     "Error: --role-gpus: critic: 3 GPUs do not make whole replicas of 2 GPUs (its tensor × pipeline parallelism)"),
])
def test_an_engine_apart_that_cannot_be_is_one_error_line(args, message):
    out = CliRunner().invoke(main, ["estimate", "--model", "Qwen2.5-7B", "--workload", "ppo", *args])
    assert out.exit_code in (1, 2) and message in out.output and "Traceback" not in out.output, out.output


def test_dpo_has_no_rollouts_to_place():
    out = CliRunner().invoke(main, ["estimate", "--model", "Qwen2.5-7B", "--workload", "dpo", "--placement",
                                    "separate", "--rollout-placement", "separate"])
    assert out.exit_code == 2 and "applies to PPO and GRPO (DPO has no rollouts)" in out.output, out.output


def test_estimate_lists_the_engines_pool_as_a_role():
    out = CliRunner().invoke(main, ["estimate", "--model", "Qwen2.5-7B", "--workload", "grpo", "--engine", "vllm",
                                    "--placement", "separate", "--rollout-placement", "separate", "--rollout-tp", "2",
                                    "--role-gpus", "rollout=4", "--gpus", "8", "--prompts-per-iteration", "64"])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("rollout "))
    assert "rollout" in row.split()[2] and "4 × H100-80GB-SXM" in row


def test_a_deadline_gives_every_pool_as_many_gpus_as_the_actors_where_fewer_would_miss_it():
    """Pools sized by their memory alone score the iteration's sequences on one GPU each: with a deadline the plan
    also tries every pool it was not given on as many GPUs as the actor's (OpenRLHF's examples), and takes the
    cheapest layout within the deadline; without one, pools stay the fewest GPUs that hold them."""
    g = group("grpo", num_gpus=1, gen_len=4096, max_gen_len=8192)  # a reference and a reward model of 7B
    within = 4 * 86400
    (option,) = plan_run(EST, g, ["H100-80GB-SXM"], steps=500, within_seconds=within).options
    pools = {role: e.scenario.num_gpus for role, e in option.estimate.roles}
    assert min(pools.values()) == pools["actor"] > 1 and 500 * option.estimate["iteration_seconds"] <= within
    by_memory = {**pools, "reference": 1, "reward": 1}
    slow = EST.estimate_group(option.estimate.scenario.relayout({"role_gpus": by_memory}))
    assert slow["fits_recommended"] and 500 * slow["iteration_seconds"] > within
    (cheapest,) = plan(EST, g, ["H100-80GB-SXM"]).options
    assert {role: e.scenario.num_gpus for role, e in cheapest.estimate.roles}["reference"] == 1


# ---- engines apart beside colocated trainers (OpenRLHF's colocated actor and reference or critic, veRL's
# one-step-off-policy layout): placement colocated with rollout_placement separate

def test_trainers_share_the_actors_gpus_and_the_engines_keep_their_own():
    """The trainers' pool is a colocated group without generation: its roles are the separate pools' roles on the
    actor's GPUs (the same estimates), its peak every role's resident states plus the largest phase, and no engine
    budget or KV cache; the engines are those of separate pools on as many GPUs; the group fits where both pools
    fit, its GPUs and prices are both pools', its iteration the same phases."""
    mixed = EST.estimate_group(group(placement="colocated", role_gpus={"rollout": 4}))
    apart = EST.estimate_group(group(role_gpus={"rollout": 4}))  # every pool on 8 GPUs, the engines on 4
    roles = dict(mixed.roles)
    assert {name: e.scenario for name, e in mixed.roles} == {name: e.scenario for name, e in apart.roles}
    trainers = [e for name, e in mixed.roles if name != "rollout"]
    states = sum(e["model_states"] for e in trainers)
    assert mixed["trainers_allocated_peak"] == states + max(e["allocated_peak"] - e["model_states"] for e in trainers)
    assert mixed["trainers_kv_cache"] == 0 and all(e["engine_budget_bytes"] == 0 for e in trainers)
    engine = roles["rollout"]
    assert mixed["device_total"] == max(mixed["trainers_device_total"], engine["device_total"])
    assert mixed["trainers_device_total"] > max(e["device_total"] for e in trainers)  # four models on each GPU
    assert mixed["fits"] == min(mixed["trainers_fits"], engine["fits"])
    assert mixed["headroom_bytes"] == min(mixed["trainers_headroom_bytes"], engine["headroom_bytes"])
    assert mixed["total_gpus"] == 8 + 4 and apart["total_gpus"] == 4 * 8 + 4
    assert mixed["purchase_usd"] == 12 * EST.gpus["H100-80GB-SXM"].price_purchase_usd
    for term in ("generation_seconds", "refit_seconds", "log_prob_seconds", "scoring_seconds", "training_seconds",
                 "iteration_seconds"):
        assert mixed[term] == apart[term], term


def test_with_trainers_colocated_the_engines_apart_free_the_actors_gpus():
    """Beside the trainers the engine takes half of each GPU (gpu_memory_utilization 0.5) and sleeps through
    training; apart, the trainers' GPUs hold their states and passes alone: a lower peak on them, more GPUs."""
    beside = EST.estimate_group(group(placement="colocated", rollout_placement="actor"))
    mixed = EST.estimate_group(group(placement="colocated", role_gpus={"rollout": 8}))
    assert mixed["trainers_allocated_peak"] < beside["allocated_peak"]
    assert (beside["total_gpus"], mixed["total_gpus"]) == (8, 16)


def test_an_engines_pool_apart_from_colocated_trainers_takes_its_gpu_type():
    g = group(placement="colocated", role_gpus={"rollout": 2}, model="Qwen2.5-1.5B")
    g = g.relayout({"role_gpu_types": {"rollout": "L40S"}})
    made = EST.estimate_group(g)
    pools = {name: (e.scenario.num_gpus, e.scenario.gpu) for name, e in made.roles}
    assert pools == {"actor": (8, "H100-80GB-SXM"), "critic": (8, "H100-80GB-SXM"), "reference": (8, "H100-80GB-SXM"),
                     "reward": (8, "H100-80GB-SXM"), "rollout": (2, "L40S")}
    price = {gpu: EST.gpus[gpu].price_purchase_usd for gpu in ("H100-80GB-SXM", "L40S")}
    assert made["purchase_usd"] == 8 * price["H100-80GB-SXM"] + 2 * price["L40S"]


def test_the_plan_sizes_the_engines_pool_beside_colocated_trainers():
    """The plan gives the engines the fewest GPUs that hold them, as many as the actor's at least; the trainers
    stay together on the actor's; the layout says which roles share a pool."""
    g = group("grpo", placement="colocated", num_gpus=2, model="Qwen2.5-1.5B", gen_len=2048, judges="rule")
    (option,) = plan(EST, g, ["H100-80GB-SXM"]).options
    pools = {role: e.scenario.num_gpus for role, e in option.estimate.roles}
    assert set(pools) == {"actor", "rollout"} and pools["rollout"] >= pools["actor"]
    assert option.estimate["total_gpus"] == pools["actor"] + pools["rollout"]
    out = CliRunner().invoke(main, ["plan", "--model", "Qwen2.5-7B", "--workload", "ppo", "--engine", "vllm",
                                    "--rollout-placement", "separate", "--gpu", "H100-80GB-SXM"])
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("H100-80GB-SXM"))
    assert "pools: actor+critic+reference+reward " in row and ", rollout " in row


def test_async_engines_generate_the_next_iteration_while_the_trainers_train():
    """rollout_mode async (OpenRLHF's --async_train, veRL's one-step-off-policy recipe): the engines apart generate
    the next iteration's rollouts while the trainers take this one's, so an iteration is the refit and then the
    longer of the generation and the trainers' passes and steps, not their sum; memory is the same."""
    for placement, gen_len in (("colocated", 1024), ("separate", 1024), ("colocated", 8192)):
        sync = group(placement=placement, role_gpus={"rollout": 4}, gen_len=gen_len)
        ahead = sync.relayout({"rollout_mode": "async"})
        a, b = EST.estimate_group(sync), EST.estimate_group(ahead)
        trainers = b["log_prob_seconds"] + b["scoring_seconds"] + b["training_seconds"]
        assert b["iteration_seconds"] == pytest.approx(b["refit_seconds"] + max(b["generation_seconds"], trainers),
                                                       rel=1e-12)
        assert a["iteration_seconds"] == pytest.approx(a["rollout_phase_seconds"] + trainers, rel=1e-12)
        assert b["iteration_seconds"] < a["iteration_seconds"]
        for term in ("device_total", "allocated_peak", "fits", "total_gpus", "purchase_usd", "generation_seconds",
                     "training_seconds"):
            assert a[term] == b[term], term
        assert ahead.label().endswith("engines apart · async")
    long = EST.estimate_group(group(placement="colocated", role_gpus={"rollout": 1}, gen_len=8192)
                              .relayout({"rollout_mode": "async"}))
    assert long["iteration_seconds"] == pytest.approx(long["refit_seconds"] + long["generation_seconds"], rel=1e-12)


@pytest.mark.parametrize("args,message", [
    (["--workload", "ppo", "--engine", "vllm", "--rollout-mode", "async"],
     "Error: --rollout-mode: async needs the rollout engine apart (rollout_placement separate): beside the actor it "
     "sleeps while the actor trains"),
    (["--workload", "dpo", "--rollout-mode", "async"], "Error: --rollout-mode applies to PPO and GRPO (DPO has no "
                                                        "rollouts): it would change nothing"),
])
def test_async_rollouts_that_cannot_be_are_one_error_line(args, message):
    out = CliRunner().invoke(main, ["estimate", "--model", "Qwen2.5-7B", *args])
    assert out.exit_code in (1, 2) and message in out.output and "Traceback" not in out.output, out.output


@pytest.mark.parametrize("args", [["--workload", "ppo", "--engine", "vllm", "--rollout-placement", "separate",
                                   "--rollout-mode", "async", "--role-gpus", "rollout=4"],
                                  ["--workload", "dpo"]])
def test_estimate_prints_a_groups_time_per_iteration(args):
    """A buyer's `estimate` of an RLHF group says how long an iteration takes, phase by phase (those it has), as its
    JSON gives them; async says how its phases combine."""
    common = ["estimate", "--model", "Qwen2.5-7B", "--gpus", "8", "--zero", "3", *args]
    text = CliRunner().invoke(main, common).output
    time = json.loads(CliRunner().invoke(main, common + ["--json"]).output)["time"]
    rows = dict(re.findall(r"^(.+?per (?:RLHF )?iteration.*?)\s{2,}([\d,.]+) s$", text, re.M))
    assert rows, text
    for label, value in rows.items():
        key = next(k for k in time if time[k] and f"{time[k]:,.3f}" == value) if float(value.replace(",", "")) else None
        assert key or label.startswith("Time per"), (label, value)
    iteration = next(v for label, v in rows.items() if label.startswith("Time per RLHF iteration"))
    assert iteration == f"{time['iteration_seconds']:,.3f}"
    assert ("async" in args) == any("(async:" in label for label in rows)
    assert ("dpo" in args) == ("Rollout generation per iteration" not in rows)


@pytest.mark.parametrize("placement,rollout_placement", [("colocated", "actor"), ("colocated", "separate"),
                                                         ("separate", "actor"), ("separate", "separate")])
def test_a_groups_pools_are_its_gpus_and_its_answer(placement, rollout_placement):
    """The JSON's pools: every role in one pool; their GPUs and prices add up to the group's; the group fits where
    every pool fits, and its device total and headroom are the tightest pool's."""
    g = group(placement=placement, rollout_placement=rollout_placement, role_gpus={"rollout": 4} if
              rollout_placement == "separate" else None, gpu_memory_utilization=0.4)
    made = EST.estimate_group(g)
    pools = made.to_json()["pools"]
    assert sorted(r for p in pools for r in p["roles"]) == sorted(name for name, _ in made.roles)
    assert len(pools) == {("colocated", "actor"): 1, ("colocated", "separate"): 2}.get(
        (placement, rollout_placement), len(made.roles))
    assert sum(p["num_gpus"] for p in pools) == made["total_gpus"]
    assert sum(p["purchase_usd"] for p in pools) == pytest.approx(made["purchase_usd"], rel=1e-12)
    assert made.fits == all(p["fits"] for p in pools)
    assert made["device_total"] == max(p["device_total"] for p in pools)
    assert made["headroom_bytes"] == min(p["headroom_bytes"] for p in pools)


# ---- the plan compares the placements when asked (--compare-placements) -------------------------------------------
QWEN_GRPO = ["plan", "--model", "Qwen2.5-7B", "--workload", "grpo", "--group-size", "8", "--prompt-len", "512",
             "--gen-len", "2048", "--max-gen-len", "8192", "--prompts-per-iteration", "256", "--reward", "rule",
             "--engine", "vllm", "--gpu", "H100-80GB-SXM", "--gpu-type", "H200-141GB", "--steps", "200",
             "--within", "12h", "--json"]


def _plan_json(*args: str) -> dict:
    out = CliRunner().invoke(main, [*QWEN_GRPO, *args])
    assert out.exit_code == 0, out.output
    return json.loads(out.output)


def _cheaper_per_gpu(*plans: dict) -> dict:
    """Per GPU type, the plans' option first by the plan's order (price, GPUs, speed)."""
    best = {}
    for option in (o for found in plans for o in found["options"]):
        key = (option["purchase_usd"], option["total_gpus"], option["iteration_seconds"])
        if option["gpu"] not in best or key < best[option["gpu"]][0]:
            best[option["gpu"]] = (key, option)
    return {gpu: option for gpu, (_, option) in best.items()}


@pytest.mark.slow  # two plans over every GPU type: 2 s each
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_comparing_placements_answers_each_gpu_type_with_the_cheaper(mode):
    """The plan with --compare-placements is, per GPU type, the cheaper by the plan's order (price, GPUs, speed) of
    the plans for the engine beside the actor (sync: beside the actor it cannot generate ahead) and apart; it
    reports both searches' candidates."""
    both = _plan_json("--compare-placements", "--rollout-mode", mode)
    beside = _plan_json("--rollout-placement", "actor")
    apart = _plan_json("--rollout-placement", "separate", "--rollout-mode", mode)
    assert both["candidates_tried"] == beside["candidates_tried"] + apart["candidates_tried"]
    assert {o["gpu"]: o for o in both["options"]} == _cheaper_per_gpu(beside, apart)
    assert {m["gpu"] for m in both["not_found"]} == ({m["gpu"] for m in beside["not_found"]}
                                                     & {m["gpu"] for m in apart["not_found"]})
    # which placement and mode each answer runs is in its layout; on H200s, 8 engines generating ahead beside 8
    # trainers (16 GPUs) cost less than the engine beside the actor on as many GPUs as meet the deadline
    apart_answers = set()
    for option in both["options"]:
        apart_answer = "rollout" in option["layout"].get("role_gpus", {})
        assert option["layout"]["rollout_mode"] == (mode if apart_answer else "sync")
        if apart_answer:
            apart_answers.add(option["gpu"])
    assert mode == "sync" or "H200-141GB" in apart_answers  # the merge takes the second plan's answer too


def test_comparing_placements_searches_the_second_only_where_it_could_cost_less():
    """Without a deadline the engine apart is searched, per GPU type, only at counts whose actor and engine pools
    (as many GPUs as the actor's, on its type) cost no more than the engine beside the actor's answer there: the
    answers are the cheaper of the two full plans, from fewer candidates than both (H100: one GPU beside the actor
    answers, two apart cannot cost less, so none is tried; RTX-3090: 48 beside, 16 apart)."""
    gpus = ["--gpu-type", "H100-80GB-SXM", "--gpu-type", "RTX-3090", "--gpu-type", "L4", "--gpu-type", "A100-40GB"]

    def planned(*args):
        out = CliRunner().invoke(main, ["plan", "--model", "Qwen2.5-7B", "--workload", "ppo", "--engine", "vllm",
                                        *gpus, "--json", *args])
        assert out.exit_code == 0, out.output
        return json.loads(out.output)
    both = planned("--compare-placements")
    beside, apart = planned("--rollout-placement", "actor"), planned("--rollout-placement", "separate")
    assert {o["gpu"]: o for o in both["options"]} == _cheaper_per_gpu(beside, apart)
    assert {o["gpu"]: o["total_gpus"] for o in both["options"]} == {"H100-80GB-SXM": 1, "A100-40GB": 4,
                                                                    "RTX-3090": 16, "L4": 16}
    assert both["candidates_tried"] < beside["candidates_tried"] + apart["candidates_tried"]


@pytest.mark.parametrize("args,words", [
    (["--workload", "dpo"], "applies to PPO and GRPO"),
    (["--workload", "full"], "applies to PPO and GRPO"),
    (["--workload", "ppo"], "needs a rollout engine to place"),
    (["--workload", "ppo", "--engine", "vllm", "--rollout-placement", "separate"], "and --rollout-placement both choose the placement"),
    (["--workload", "grpo", "--engine", "vllm", "--engine-sleep", "none"], "places the engine apart too, where --engine-sleep"),
])
def test_comparing_placements_needs_two_to_compare(args, words):
    out = CliRunner().invoke(main, ["plan", "--model", "Qwen2.5-7B", "--compare-placements", *args])
    assert out.exit_code == 2 and f"Error: --compare-placements {words}" in out.output
