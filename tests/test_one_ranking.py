"""One ranking (#31): `reportgen plan`'s choice, the report's summary and the workbook's Plan recalculated by
LibreOffice pick the same configuration for every requirement of every bundled preset.

The plan's choice is plan.choose, the code `reportgen plan` runs on the candidates it generates, given
here the requirement's scenarios of the preset per GPU type; the report's is report.recommend; the
workbook's is its Plan formulas, recalculated by LibreOffice (tests/lo.py)."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import WHEN, bundled_report
from lo import recalculated_values, require_soffice
from reportgen.planning.goals import Goal
from reportgen.pipeline import load, make_report
from reportgen.planning.plan import choose
from reportgen.scenarios.presets import bundled_presets
from reportgen.writers import xlsx
from test_xlsx import assert_plan


@pytest.fixture(scope="module", params=sorted(bundled_presets()))
def report(request):
    return bundled_report(request.param)


def test_plan_chooses_what_the_report_recommends(report):
    by_need: dict = {}
    for r in report.results:
        by_need.setdefault(report.requirement_of(r), {}).setdefault(r.gpu, []).append(r)
    assert len(by_need) == len(report.recommendations)
    for rec in report.recommendations:
        tried = by_need[rec.requirement]
        goal = report.goals.get(next(iter(tried.values()))[0].matrix)
        chosen = choose({gpu: [r.estimate for r in tried[gpu]] for gpu in report.gpu_types if gpu in tried},
                        goal or Goal())
        index = {id(r.estimate): r.index for rs in tried.values() for r in rs}  # the result each estimate is
        picks = {o.gpu: index[id(o.estimate)] for o in chosen.options}
        for entry in rec.entries:
            assert picks.get(entry.gpu) == (entry.result.index if entry.result else None), (rec.requirement, entry.gpu)
        assert (chosen.options[0].gpu if chosen.options else None) == (rec.best.gpu if rec.best else None)
        rent = chosen.cheapest("hourly")
        if rec.cheapest_to_rent is None:
            assert rent is None
        elif index[id(rent.estimate)] == rec.cheapest_to_rent.result.index:
            pass  # the cheapest to rent of the GPU types' picks to buy is the requirement's cheapest to rent
        else:  # the report rents the cheapest fitting result of any GPU type, the plan among its picks to buy
            assert rec.cheapest_to_rent.result.rent_usd <= rent.estimate.rent_usd


# Every bundled preset; inference-serving's 1,490 scenarios (162 requirements × 3 GPU types) took LibreOffice 150-210 s
# on two cores, a third of the suite: its matrices are recalculated with the first and last value of each axis
# (extremes kept: the smallest and largest model, context, batch and GPU count), 80 scenarios.
THINNED = {"inference-serving"}


def thinned_preset(name: str, folder: Path) -> Path:
    """The bundled preset with each matrix's axes cut to their first and last values."""
    data = yaml.safe_load(bundled_presets()[name].read_text(encoding="utf-8"))
    for matrix in data["matrices"]:
        for key, value in matrix.items():
            if isinstance(value, list) and key not in ("exclude", "interchangeable") and len(value) > 2:
                matrix[key] = [value[0], value[-1]]
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(bundled_presets()))
def test_the_workbook_plan_recalculates_to_the_same_picks(name, tmp_path):
    require_soffice()
    report = make_report(load(str(thinned_preset(name, tmp_path))), WHEN) if name in THINNED else bundled_report(name)
    assert len(report.recommendations) > 10 or name not in THINNED  # still many requirements to pick for
    path = tmp_path / f"{report.preset.name}.xlsx"
    xlsx.write(report, path, "en")
    fresh = recalculated_values(path, tmp_path / "out")
    assert_plan(fresh, report.recommendations)
