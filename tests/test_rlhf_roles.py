"""RLHF groups as people run them (#17): per-role GPU types and counts, a LoRA actor, judges served at
an inference dtype, a rollout engine beside the trainer."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator, make_scenario
from reportgen.pipeline import load, make_report

EST = Estimator(load_models(), load_gpus())
GPUS = load_gpus()


def run(*args):
    return CliRunner().invoke(main, list(args))


def test_ppo_with_a_lora_actor_and_judges_on_a_cheaper_card_is_priced_per_role():
    out = run("estimate", "--json", "--model", "Llama-2-7B", "--workload", "ppo", "--actor-workload", "lora",
              "--reward-model", "Llama-2-7B", "--placement", "separate", "--role-gpus", "critic=2,reference=1,reward=1",
              "--role-gpu-types", "reference=L40S,reward=L40S", "--gpus", "2", "--gpu", "H100-80GB-SXM")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["gpu_type_per_role"] == {"actor": "H100-80GB-SXM", "critic": "H100-80GB-SXM", "reference": "L40S",
                                         "reward": "L40S"}
    assert data["roles"]["actor"]["inputs"]["workload"] == "lora"
    assert data["roles"]["critic"]["inputs"]["workload"] == "lora"  # the critic trains as the actor does
    price = {g: GPUS[g].price_purchase_usd for g in ("H100-80GB-SXM", "L40S")}
    assert data["cost"]["purchase_usd"] == 4 * price["H100-80GB-SXM"] + 2 * price["L40S"]
    assert data["total_gpus"] == 6
    # each pool is checked against its own card: the L40S pools against 48 GB, not 80
    assert data["roles"]["reward"]["gpu_memory_bytes"] == GPUS["L40S"].memory_bytes


def test_a_plan_says_which_pools_run_on_another_gpu_type():
    """A plan row is named by the actor's GPU type; pools given another type say so, in the table and the JSON (the
    table said 'pools: actor 1, critic 1, reference 1, reward 1' while two of its four GPUs were L40S)."""
    args = ("plan", "--model", "Qwen2.5-7B", "--workload", "ppo", "--placement", "separate",
            "--role-gpu-types", "reference=L40S,reward=L40S", "--gpu-type", "A100-80GB")
    out = run(*args)
    assert out.exit_code == 0, out.output
    assert "pools: actor 1, critic 1, reference 1 × L40S, reward 1 × L40S" in out.output
    assert out.output.splitlines()[3].startswith("A100-80GB + L40S ")  # the row's GPU types, the actor's first
    (option,) = json.loads(run(*args, "--json").output)["options"]
    assert option["layout"]["role_gpu_types"] == {"actor": "A100-80GB", "critic": "A100-80GB", "reference": "L40S",
                                                  "reward": "L40S"}
    price = {g: GPUS[g].price_purchase_usd for g in ("A100-80GB", "L40S")}
    assert option["purchase_usd"] == 2 * price["A100-80GB"] + 2 * price["L40S"]


def test_the_preset_expresses_it_too():
    report = make_report(load("ppo-rlhf"), "2026-01-01T00:00:00+00:00")
    groups = [r for r in report.results if r.matrix == "LoRA actor, judges on an inference card"]
    assert groups
    for r in groups:
        roles = dict(r.estimate.roles)
        assert roles["reward"].scenario.gpu == "L40S" and roles["actor"].scenario.workload == "lora"
        assert r.estimate["purchase_usd"] == sum(e["purchase_usd"] for e in roles.values())


def test_role_pools_need_separate_placement():
    out = run("estimate", "--model", "Llama-2-7B", "--workload", "ppo", "--role-gpu-types", "reward=L40S")
    assert out.exit_code == 1 and "--role-gpu-types.reward: applies to placement separate" in out.output
    bad = run("estimate", "--model", "Llama-2-7B", "--workload", "ppo", "--placement", "separate",
              "--role-gpu-types", "judge=L40S")
    assert bad.exit_code == 1 and "judge" in bad.output


def test_judges_are_served_at_the_weight_dtype():
    """A full actor does not read --weight-dtype: it sets the frozen reference and reward models'."""
    def group(dtype):
        s, _ = make_scenario({"model": "Llama-2-7B", "num_gpus": 8, "zero_stage": 3, "weight_dtype": dtype},
                             workload="ppo", rlhf={}, estimator=EST)
        return dict(EST.estimate_group(s).roles)
    bf16, int8 = group("bf16"), group("int8")
    # 2 bytes → 1 byte per parameter (int8 keeps 16-bit embeddings: a little over half)
    assert 0.5 < int8["reward"]["weights"] / bf16["reward"]["weights"] < 0.53
    assert bf16["actor"]["weights"] == int8["actor"]["weights"]  # the trained actor keeps its precision


def test_a_rollout_engine_holds_its_budget_beside_the_trainer():
    def actor(extra):
        s, _ = make_scenario({"model": "Llama-2-7B", "num_gpus": 8, "zero_stage": 3, **extra}, workload="ppo",
                             rlhf={}, estimator=EST)
        return dict(EST.estimate_group(s).roles)["actor"]
    engine = actor({"serving_engine": "vllm", "gpu_memory_utilization": 0.4})
    budget = int((GPUS["H100-80GB-SXM"].memory_mib - EST.assumptions["driver_reserved_mib"]) * 2**20 * 0.4)
    assert engine["engine_budget_bytes"] == budget
    assert engine["generation_phase"] == engine["model_states"] + budget
    assert actor({})["generation_phase"] == actor({})["phase_forward"]


def test_padded_roles_pass_over_padded_sequences():
    """veRL without padding removal (use_remove_padding off) pads every sequence to the prompt and response caps
    before the log-probability, value, scoring and training passes: rlhf-104's critic (512 + 1,024 tokens against a
    mean of 265) takes 4.5× the actor's time for its values in the log. A padded role's sequences are padded_len
    long (default: the prompt and the longest response), for its memory and its time; an unpadded one's the mean."""
    from reportgen.model.estimate import Scenario, rlhf_scenario
    actor = Scenario(model="Qwen2.5-7B", workload="full", precision="bf16-mixed", framework="fsdp2", zero_stage=3,
                     checkpointing="full", num_gpus=8, gpu="H100-80GB-SXM", serving_engine="vllm", batch_size=8,
                     prompt_len=93, gen_len=172, max_gen_len=1024)

    def group(**padding):
        g = rlhf_scenario(name="", algorithm="ppo", placement="colocated", actor=actor, **padding)
        return g, {r: s.seq_len for r, s in g.roles}, dict(EST.estimate_group(g).roles)

    plain, plain_seq, plain_roles = group()
    assert set(plain_seq.values()) == {265}
    critic, critic_seq, critic_roles = group(padded_roles="critic", padded_len=1536)
    assert critic_seq == {**plain_seq, "critic": 1536}
    assert group(padded_roles="critic")[1]["critic"] == 93 + 1024  # default: the prompt and the longest response
    assert group(padded_roles="all", padded_len=1536)[1] == dict.fromkeys(plain_seq, 1536)
    for term in ("forward_pass_seconds", "step_seconds"):  # 2N FLOPs a token and more: at least the length ratio
        assert critic_roles["critic"][term] >= 1536 / 265 * plain_roles["critic"][term]
        assert critic_roles["actor"][term] == plain_roles["actor"][term]
    assert critic_roles["critic"]["activations"] > plain_roles["critic"]["activations"]


def test_rlhf_settings_that_change_nothing_or_cannot_be_are_refused():
    base = ["estimate", "--model", "Qwen2.5-7B", "--gpus", "8", "--zero", "3"]
    for args, words in ((["--workload", "ppo", "--padded-len", "1536"], "applies with padded_roles critic or all"),
                        (["--workload", "ppo", "--padded-roles", "all", "--prompt-len", "600", "--gen-len", "100",
                          "--padded-len", "512"], "at least the prompt and the mean response (700 tokens)"),
                        ):
        out = CliRunner().invoke(main, base + args)
        assert out.exit_code == 1 and words in out.output, out.output  # as every combination the estimator refuses
    # a setting no part of the workload reads is bad usage, as an input's is (exit 2); a preset gets one Error line
    for args, words in ((["--workload", "ppo", "--group-size", "4"], "applies to GRPO only (PPO has no groups)"),
                        (["--workload", "grpo", "--critic-model", "Qwen2.5-0.5B"], "applies to PPO only (GRPO has no critic)"),
                        (["--workload", "full", "--micro-batch", "2"], "applies to RLHF workloads (ppo, grpo, dpo)"),
                        (["--workload", "dpo", "--padded-roles", "all"], "applies to PPO and GRPO (DPO has no rollouts)"),
                        (["--workload", "dpo", "--rollout-mode", "async"], "applies to PPO and GRPO (DPO has no rollouts)"),
                        (["--workload", "dpo", "--reward-model", "Qwen2.5-0.5B"],
                         "applies to PPO and GRPO (DPO has no reward model)")):
        out = CliRunner().invoke(main, base + args)
        assert out.exit_code == 2 and words in out.output, out.output
    from reportgen.model.estimate import make_scenario
    from reportgen.errors import InputError
    with pytest.raises(InputError, match="group_size: applies to GRPO only"):
        make_scenario({"model": "Qwen2.5-7B"}, workload="ppo", rlhf={"group_size": 4}, estimator=EST, source="p.yaml")


def _plan_options(*extra):
    out = run("plan", "--model", "Qwen2.5-7B", "--workload", "ppo", "--engine", "vllm", "--placement", "separate",
              "--json", *extra)
    assert out.exit_code == 0, out.output
    return {o["gpu"]: o for o in json.loads(out.output)["options"]}


@pytest.mark.slow  # the deadline's plan searches the L4 up to 512 GPUs (about 19 s)
def test_the_plan_puts_a_separate_pool_on_a_cheaper_gpu_type_that_holds_it():
    """#33: per-role GPU types. Beside an H100 actor, the critic, reference and reward pools each on the GPU type
    where they cost least to buy (the L4), unless a deadline needs the faster card; a pool given a type or a count
    keeps it; beside a data-centre card no pool goes on a GeForce one (its licence forbids data-centre use)."""
    price = {g: GPUS[g].price_purchase_usd for g in ("H100-80GB-SXM", "L4")}
    mixed = _plan_options("--gpu-type", "H100-80GB-SXM", "--gpu-type", "L4")["H100-80GB-SXM"]
    types = mixed["layout"]["role_gpu_types"]
    assert types == {"actor": "H100-80GB-SXM", "critic": "L4", "reference": "L4", "reward": "L4"}
    counts = mixed["layout"]["role_gpus"]
    assert mixed["purchase_usd"] == sum(counts[r] * price[types[r]] for r in counts)
    alone = _plan_options("--gpu-type", "H100-80GB-SXM")["H100-80GB-SXM"]
    assert set(alone["layout"]["role_gpu_types"].values()) == {"H100-80GB-SXM"}
    assert mixed["purchase_usd"] < alone["purchase_usd"] and mixed["iteration_seconds"] > alone["iteration_seconds"]
    # 1,000 iterations within 6.5 h: the L4 pools' iteration (24.6 s) would take 6.8 h, the H100 ones' 6.1 h
    hours = 6.5
    assert alone["iteration_seconds"] * 1000 < hours * 3600 < mixed["iteration_seconds"] * 1000
    timed = _plan_options("--gpu-type", "H100-80GB-SXM", "--gpu-type", "L4", "--steps", "1000", "--within",
                          f"{hours}h")["H100-80GB-SXM"]
    assert set(timed["layout"]["role_gpu_types"].values()) == {"H100-80GB-SXM"}
    given = _plan_options("--gpu-type", "H100-80GB-SXM", "--gpu-type", "L4", "--role-gpu-types",
                          "reward=H100-80GB-SXM", "--role-gpus", "reference=2")["H100-80GB-SXM"]
    assert given["layout"]["role_gpu_types"]["reward"] == "H100-80GB-SXM"
    assert (given["layout"]["role_gpus"]["reference"], given["layout"]["role_gpu_types"]["reference"]) == (
        2, "H100-80GB-SXM")
    assert given["layout"]["role_gpu_types"]["critic"] == "L4"
    beside_geforce = _plan_options("--gpu-type", "H100-80GB-SXM", "--gpu-type", "RTX-3090")["H100-80GB-SXM"]
    assert "RTX-3090" not in beside_geforce["layout"]["role_gpu_types"].values()
