"""Random presets (#31): matrices whose axes are drawn from the input table, with and without goals,
beside explicit scenarios, build without a traceback: status 0, or one `Error:` line and status 1.

Found by it: a requirement with a goal beside the same requirement without one ended in a TypeError
(views.duration of a missing goal setting); see also test_decisions.py."""
from __future__ import annotations

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

import pytest
from reportgen.cli import main
from reportgen.model.inputs import INPUT_BY_NAME, INPUTS

MODELS = ("Llama-3.2-1B", "Qwen2.5-0.5B", "Mixtral-8x7B", "Llama-2-7B")
GPUS = ("L4", "A100-80GB", "H100-80GB-SXM")
# The lengths and the token budget come with the workload (below); every other input a matrix may sweep is an
# axis, generated from the input table: its choices, or for a number its default, its least value and the next
# step up (small, so that a build stays quick; out-of-place values are the point: a build either runs or says why).
WITH_WORKLOAD = ("model", "gpu", "seq_len", "prompt_len", "gen_len", "train_tokens")
AXES = tuple(i.name for i in INPUTS if i.preset_axis and i.name not in WITH_WORKLOAD)


def _numbers(i) -> tuple:
    lo, hi = i.limits
    step = max(2 * i.default, 2) if not i.decimal else (lo + hi) / 2
    return tuple(sorted({i.default, lo, min(hi, step)}))


def axis_values(name: str):
    i = INPUT_BY_NAME[name]
    values = i.user_choices if i.choices else _numbers(i)
    return st.lists(st.sampled_from(values), min_size=1, max_size=2, unique=True).map(
        lambda v: v[0] if len(v) == 1 else v)


def test_the_axes_are_every_input_a_matrix_may_sweep():
    assert len(AXES) == sum(i.preset_axis for i in INPUTS) - len(WITH_WORKLOAD) >= 37
    assert all(INPUT_BY_NAME[n].choices or INPUT_BY_NAME[n].limits for n in AXES)


workloads = st.one_of(
    st.fixed_dictionaries({"type": st.just("inference"), "prompt_len": st.sampled_from([128, 1024]),
                           "gen_len": st.sampled_from([16, 256])}),
    st.fixed_dictionaries({"type": st.sampled_from(["full", "lora", "qlora"]), "seq_len": st.sampled_from([512, 2048]),
                           "train_tokens": st.just(100_000_000)}),
    st.fixed_dictionaries({"type": st.sampled_from(["ppo", "grpo", "dpo"]), "prompt_len": st.just(128),
                           "gen_len": st.just(128)}))


@st.composite
def matrix(draw, k: int):
    workload = draw(workloads)
    out = {"name": f"m{k}", "model": draw(st.sampled_from(MODELS)), "workload": workload,
           "gpu": draw(st.lists(st.sampled_from(GPUS), min_size=1, max_size=2, unique=True))}
    for name in draw(st.lists(st.sampled_from(AXES), max_size=4, unique=True)):
        out[name] = draw(axis_values(name))
    if draw(st.booleans()):
        if workload["type"] == "inference" and "batch_size" not in out:
            out["goal"] = {"users": draw(st.sampled_from([4, 32])), "min_tokens_per_s": 10,
                           **({"max_ttft": draw(st.sampled_from(["200ms", "5s"]))} if draw(st.booleans()) else {})}
        elif workload["type"] in ("full", "lora", "qlora"):
            out["goal"] = {"within": draw(st.sampled_from(["1d", "12h"]))}
    return out


presets = st.builds(lambda ms, extra: {"title": "random", "matrices": ms, **({"scenarios": extra} if extra else {})},
                    st.integers(1, 3).flatmap(lambda n: st.tuples(*(matrix(k) for k in range(n))).map(list)),
                    st.lists(st.fixed_dictionaries({"name": st.just("extra"), "model": st.sampled_from(MODELS),
                                                    "workload": st.sampled_from(["lora", "inference"]),
                                                    "gpu": st.sampled_from(GPUS)}), max_size=1))


def preset_file(tmp_path, preset: dict):
    path = tmp_path / "random.yaml"
    path.write_text(yaml.safe_dump(preset, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(presets)
def test_a_random_preset_builds_or_says_why(tmp_path, preset):
    out = CliRunner().invoke(main, ["build", str(preset_file(tmp_path, preset)), "-o", str(tmp_path / "out"),
                                    "--format", "json,xlsx,html",
                                    "-q"])
    if out.exit_code == 0:
        assert (tmp_path / "out" / "random.html").exists()
        return
    lines = out.output.strip().splitlines()
    assert out.exit_code == 1 and len(lines) == 1 and lines[0].startswith("Error: "), (out.output, out.exception)
