"""The summary's unit is a requirement: what a planner compares is the same job on different hardware.

Over every bundled preset: the plan never puts two jobs in one comparison, each chosen configuration
answers its requirement, and every summary line (en and zh) names the settings that differ between
the lines it stands among."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from reportgen.inputs import INPUT_BY_NAME
from reportgen.pipeline import load, make_report
from reportgen.presets import bundled_presets
from reportgen.report import recommend, requirement
from reportgen.views import build_view, setting_text

WHEN = "2026-01-01T00:00:00+00:00"
HEADLINE = tuple(i.name for i in INPUT_BY_NAME.values() if i.headline)


@pytest.fixture(scope="module", params=bundled_presets())
def report(request):
    return make_report(load(request.param), WHEN)


def test_every_entry_answers_its_requirement(report):
    for rec in report.recommendations:
        for e in rec.entries:
            tried = [r for r in report.results if r.gpu == e.gpu and requirement(
                r, report_interchangeable(report, r)) == rec.requirement]
            assert len(tried) == e.num_scenarios
            if e.result is not None:
                assert requirement(e.result, report_interchangeable(report, e.result)) == rec.requirement
                assert e.result.estimate["fits_recommended"]
                # the cheapest to buy among the fitting scenarios of this requirement and GPU type
                fitting = [r for r in tried if r.estimate["fits_recommended"]]
                assert e.result.purchase_usd == min(r.purchase_usd for r in fitting)


def report_interchangeable(report, result):
    return report.interchangeable.get(result.matrix, ())


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


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_input_a_user_sets_has_words(lang):
    """The summary and configuration columns name any input in words (a new input needs them)."""
    from reportgen.i18n import load_catalogue
    from reportgen.inputs import INPUTS
    t = load_catalogue(lang)
    missing = [i.name for i in INPUTS if i.option and i.name not in ("gpu", "num_gpus")
               and f"setting.{i.name}" not in t.messages]
    assert not missing, missing
