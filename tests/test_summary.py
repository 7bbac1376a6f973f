"""The summary's unit is a requirement: what a planner compares is the same job on different hardware.

Over every bundled preset: the plan never puts two jobs in one comparison, each chosen configuration
answers its requirement, and every summary line (en and zh) names the settings that differ between
the lines it stands among."""
from __future__ import annotations


import pytest
from hypothesis import given, strategies as st

from reportgen.model.inputs import INPUT_BY_NAME
from reportgen.pipeline import load, make_report
from reportgen.scenarios.presets import bundled_presets
from reportgen.report.build import recommend
from reportgen.report.views import build_view, setting_text
from reportgen.writers.json_writer import report_json
from conftest import bundled_report

WHEN = "2026-01-01T00:00:00+00:00"
HEADLINE = tuple(i.name for i in INPUT_BY_NAME.values() if i.headline)


@pytest.fixture(scope="module", params=bundled_presets())
def report(request):
    return bundled_report(request.param)


def test_every_entry_answers_its_requirement(report):
    for rec in report.recommendations:
        for e in rec.entries:
            tried = [r for r in report.results if r.gpu == e.gpu and need_of(report, r) == rec.requirement]
            assert len(tried) == e.num_scenarios
            if e.result is not None:
                assert need_of(report, e.result) == rec.requirement
                assert e.result.estimate["fits_recommended"]
                # the cheapest to buy among the fitting scenarios of this requirement and GPU type that
                # meet its matrix's goal
                fitting = [r for r in tried if r.estimate["fits_recommended"] and (
                    r.matrix not in report.goals or report.goals[r.matrix].meets(r.estimate))]
                assert e.result.purchase_usd == min(r.purchase_usd for r in fitting)
                # and the cheapest to rent among them (a training run's cost, else an hour)
                assert e.rent.rent_usd == min(r.rent_usd for r in fitting)
            else:
                assert e.rent is None
        if rec.cheapest_to_rent:
            rent = rec.cheapest_to_rent.result
            assert rent.rent_usd == min(e.rent.rent_usd for e in rec.entries if e.rent)
            assert rent is next(e.rent for e in rec.entries if e.gpu == rec.cheapest_to_rent.gpu)


def need_of(report, result):
    return report.requirement_of(result)


def test_requirements_of_one_model_and_workload_differ_in_a_setting(report):
    seen = {}
    for rec in report.recommendations:
        key = (rec.model, rec.workload, rec.requirement.settings)
        assert key not in seen
        seen[key] = rec


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_summary_line_names_the_settings_that_differ(report, lang):
    view = build_view(report, lang)
    recs = report.recommendations
    assert len(view.verdicts) == len(recs)
    for name in HEADLINE:
        values = {repr(r.requirement.value(name)) for r in recs if name in dict(r.requirement.settings)}
        if len(values) < 2:
            continue
        for rec, line in zip(recs, view.verdicts):
            if name in dict(rec.requirement.settings):
                words = setting_text(name, rec.requirement.value(name), view.t)
                assert words in "".join(p.text for p in line.settings), (report.preset.name, lang, line.title, words)


def test_interchangeable_inputs_join_requirements():
    """A matrix that declares checkpointing interchangeable lets the plan pick it: one requirement
    where there were two, and its lines name the checkpointing each configuration chose."""
    base = load("default")
    report = make_report(base, WHEN)
    split = [r for r in report.recommendations if r.model == "Llama-2-7B" and r.workload == "full"]
    assert len(split) == 2 and {r.requirement.value("checkpointing") for r in split} == {"none", "full"}
    results = [r for r in report.results if r.model == "Llama-2-7B" and r.workload == "full"]
    joined = recommend(results, report.gpu_types, {r.matrix: ("checkpointing",) for r in results})
    assert len(joined) == 1 and "checkpointing" not in dict(joined[0].requirement.settings)
    cheapest = min((e.result for e in joined[0].entries if e.result), key=lambda r: r.purchase_usd)
    assert cheapest.purchase_usd == min(e.result.purchase_usd for rec in split for e in rec.entries if e.result)


RLHF_PRESET = """\
title: RLHF jobs that differ
matrices:
  - name: rollouts
    model: Qwen2.5-0.5B
    workload:
      - {type: ppo, prompt_len: 256, gen_len: 256}
      - {type: ppo, prompt_len: 256, gen_len: 512}
      - {type: grpo, prompt_len: 256, gen_len: 256, group_size: 4}
    seq_len: [2048, 4096]
    gpu: A100-80GB
  - name: adapters
    model: Qwen2.5-0.5B
    workload:
      - {type: dpo, actor_workload: lora, seq_len: 1024}
      - {type: dpo, actor_workload: qlora, seq_len: 1024}
    gpu: A100-80GB
"""


def test_an_rlhf_requirement_is_its_actors_job(tmp_path):
    """A PPO or GRPO actor's sequences are its rollouts: their lengths (and KV-cache dtype) say what the
    job is, the seq_len it is given does not (rlhf_scenario sets it); LoRA and QLoRA actors, asked the
    same inputs, are told apart by how they train. (Before: seq_len 2048 and 4096 were two jobs, gen_len
    256 and 512 one, and the LoRA and QLoRA policies one.)"""
    preset = tmp_path / "rlhf.yaml"
    preset.write_text(RLHF_PRESET)
    report = make_report(load(str(preset)), WHEN)
    needs = {(rec.workload, rec.requirement.value("gen_len"), rec.requirement.value("actor_workload"))
             for rec in report.recommendations}
    assert needs == {("ppo", 256, "full"), ("ppo", 512, "full"), ("grpo", 256, "full"), ("dpo", None, "lora"),
                     ("dpo", None, "qlora")}
    for rec in report.recommendations:
        names = dict(rec.requirement.settings)
        if rec.workload == "dpo":
            assert names["seq_len"] == 1024 and "prompt_len" not in names
        else:
            assert {"prompt_len", "gen_len", "kv_dtype", "logits"} <= set(names) and "seq_len" not in names
        assert {e.num_scenarios for e in rec.entries} == {2 if rec.workload != "dpo" else 1}
    line = build_view(report, "en").verdicts[0]
    assert "256-token prompts" in "".join(p.text for p in line.settings)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_input_a_user_sets_has_words(lang):
    """The summary and configuration columns name any input in words (a new input needs them)."""
    from reportgen.report.i18n import load_catalogue
    from reportgen.model.inputs import INPUTS
    t = load_catalogue(lang)
    missing = [i.name for i in INPUTS if i.option and i.name not in ("gpu", "num_gpus")
               and f"setting.{i.name}" not in t.messages]
    assert not missing, missing


def test_a_share_reads_as_a_percentage_and_a_ratio_as_a_multiple():
    """Decimal inputs: the engine's share of a GPU (at most 1) in per cent, the MoE load imbalance (1–16) as a
    multiple of the mean, in both languages."""
    from reportgen.report.i18n import load_catalogue
    en, zh = load_catalogue("en"), load_catalogue("zh")
    assert setting_text("gpu_memory_utilization", 0.9, en) == "engine takes 90 % of memory"
    assert setting_text("moe_load_imbalance", 1.25, en) == "MoE load imbalance ×1.25"
    assert setting_text("moe_load_imbalance", 1.25, zh) == "MoE 负载不均衡度 ×1.25"


@pytest.mark.parametrize("lang,with_k,engine", [("en", "with k = 1.2", "no k on top"), ("zh", "乘以 k = 1.2 后", "不再乘以 k")])
def test_an_engines_budget_is_said_to_be_its_margin_not_scaled_by_k(lang, with_k, engine):
    """A serving engine's recommended budget is its device total (its margin is the memory outside
    gpu_memory_utilization): the summary says so instead of '(74.33 GiB with k = 1.2)' beside 74.33 GiB per GPU;
    a configuration that k scales keeps its figure."""
    report = bundled_report("inference-serving")
    view = build_view(report, lang)
    checked = set()
    for rec, line in zip(report.recommendations, view.verdicts):
        if rec.best is None:
            continue
        v = rec.best.result.estimate
        engine_budget = v["recommended"] == v["device_total"]
        assert (engine in line.verdict) == engine_budget and (with_k in line.verdict) != engine_budget, line.verdict
        checked.add(engine_budget)
    assert checked == {True, False}


@given(st.floats(min_value=1e-8, max_value=1.0), st.integers(0, 2), st.booleans())
def test_a_non_zero_error_is_never_shown_as_zero(fraction, digits, signed):
    """The summary's accuracy line said 'memory peaks median error 0.0 %' for 0.05 %: a figure that is not zero
    keeps its first significant digit; a larger one keeps the digits asked."""
    from reportgen.report.views import percent
    for value in (fraction, -fraction):
        text = percent(value, digits, signed)
        assert float(text.rstrip(" %").replace(",", "")) != 0, text
        if abs(value) * 100 >= 10 ** -digits:  # shown with the digits asked
            assert len(text.split(" ")[0].partition(".")[2]) == digits, text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_purchase_on_several_gpu_types_is_said_by_type(lang):
    """An RLHF group whose separate pools went on a cheaper GPU type (ppo-rlhf's LoRA PPO: critic on the actor's
    type, reference and reward on L40S) was said to need '5 × A100-80GB' for '$63,000 (5 × $15,000)'. Each pick says
    its GPUs and their prices type by type; the prices, read from the GPU catalogue, add up to its purchase cost."""
    report = bundled_report("ppo-rlhf")
    view = build_view(report, lang)
    mixed = 0
    plan = report_json(report, scenarios=False)["plan"]  # the JSON's entries say the same
    assert [e.get("gpus_by_type") for p in plan for e in p["per_gpu_type"]] == [
        e.result.estimate.gpus_by_type() if e.result else None for rec in report.recommendations for e in rec.entries]
    for rec, group in zip(report.recommendations, view.verdicts):
        for entry, row in zip([e for e in rec.entries if e.result], [r for r in group.rows if r.fits]):
            by_type = entry.result.estimate.gpus_by_type()
            assert sum(by_type.values()) == entry.result.total_gpus
            assert sum(n * report.gpus[g].price_purchase_usd for g, n in by_type.items()) == pytest.approx(
                entry.result.purchase_usd, rel=1e-12)
            units = " + ".join(f"{n} × ${report.gpus[g].price_purchase_usd:,.0f}" for g, n in by_type.items())
            assert row.unit_price == units
            if rec.best and entry.result.index == rec.best.result.index:
                assert " + ".join(f"{n} × {g}" for g, n in by_type.items()) in group.verdict and units in group.verdict
                mixed += len(by_type) > 1
    assert mixed  # the case that was said wrongly is among the picks
    # the capacity matrix's cell of such a configuration says its types when pointed at
    titles = {c.title for row in view.capacity.rows for c in row if c.title}
    assert any(" + " in title and "L40S" in title for title in titles)
