"""A matrix's configurations read from the results' input columns (views._Configurations, #35) against the per-row
algorithm they replace, kept here as the oracle: the same labels for every row of every matrix, the same count of
configurations, for the bundled presets and random ones (matrices with goals, several workloads, explicit
scenarios beside them)."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings

import pytest
from conftest import WHEN, bundled_report
from reportgen.model.inputs import INPUT_NAMES
from reportgen.errors import InputError
from reportgen.pipeline import load, make_report
from reportgen.report.i18n import load_catalogue
from reportgen.report.views import _config_inputs, _config_key, _Configurations
from reportgen.scenarios.presets import bundled_presets
from test_random_presets import preset_file, presets


def per_row_labels(rows, t, wanted=None) -> dict[tuple, str]:
    """The earlier per-row algorithm. Short labels from the inputs that vary within a group of results ('batch 8 · int4 · TP2'), for the
    configurations `wanted` (all where None).

    The workload comes first when it varies; the other inputs are compared within one workload
    (workloads have different defaults, which are not variations the planner asked for). Labels
    that still coincide get the scenario number. rows() gives the group's rows afresh: they are read
    twice (what varies, then the labels), one at a time — a sweep's are not all held (#35)."""
    # what varies: per workload, each name's first value (as text), whether another was seen, how many rows
    # had it (a row without it counts as "None"), and whether a role's model differs from the actor's
    first: dict[str, dict[str, str]] = {}
    varies: dict[str, set[str]] = {}
    present: dict[str, dict[str, int]] = {}
    role_news: dict[str, set[str]] = {}
    rows_of: dict[str, int] = {}
    models: set[str] = set()
    for r in rows():
        i = _config_inputs(r, t)
        w = i["workload"]
        models.add(i["model"])
        rows_of[w] = rows_of.get(w, 0) + 1
        seen, moved, count = first.setdefault(w, {}), varies.setdefault(w, set()), present.setdefault(w, {})
        for n, v in i.items():
            text = str(v)
            if seen.setdefault(n, text) != text:
                moved.add(n)
            count[n] = count.get(n, 0) + 1
            if n.startswith("role.") and v not in (None, i["model"]):
                role_news.setdefault(w, set()).add(n)
    extra = sorted({n for seen in first.values() for n in seen if n not in INPUT_NAMES})
    varying = {w: [n for n in list(INPUT_NAMES) + extra if n not in ("gpu", "workload", "model")
                   and (n in varies[w] or (n in first[w] and present[w][n] < rows_of[w] and first[w][n] != "None"))
                   # a role's model is news only where it differs from the actor's
                   and not (n.startswith("role.") and n not in role_news.get(w, ()))]
               for w in first}
    models_vary, several = len(models) > 1, len(first) > 1

    def part(n: str, v: object) -> str:
        if n.startswith("role."):
            return f"{t(n)} {v}"
        if n == "placement":
            return str(v)
        return t.get(f"axis.{n}", n + " {v}", v=t.get(f"value.{n}.{v}", str(v)))

    labels: dict[tuple, str] = {}
    index: dict[tuple, int] = {}  # a wanted configuration's first scenario number
    owner: dict[str, int] = {}  # a label's first configuration (its key's hash: keys are not all held)
    shared: set[str] = set()  # labels two configurations have
    for r in rows():
        key = _config_key(r)
        i = _config_inputs(r, t)
        parts = [i["model"]] if models_vary else []
        if several:
            parts.append(t(f"workload.{i['workload']}"))
        parts += [part(n, i.get(n)) for n in varying[i["workload"]] if n in i]
        if not parts or (len(parts) == 1 and several and not varying[i["workload"]]):
            parts.append(t("axis.num_gpus", v=r.total_gpus))
        label = " · ".join(parts)
        if owner.setdefault(label, hash(key)) != hash(key):
            shared.add(label)
        if (wanted is None or key in wanted) and key not in index:
            labels[key], index[key] = label, r.index
    return {key: (label if label not in shared else f"{label} (#{index[key]})") for key, label in labels.items()}


def assert_same_as_per_row(report, t) -> None:
    for matrix in report.results.matrices():
        rows = list(report.results.rows(matrix))
        configs = _Configurations(report, matrix, t)
        assert configs.labels(rows) == per_row_labels(lambda: report.results.rows(matrix), t), matrix
        assert configs.count == len({_config_key(r) for r in rows}), matrix


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("name", sorted(bundled_presets()))
def test_the_columns_label_every_configuration_as_the_rows_did(name, lang):
    assert_same_as_per_row(bundled_report(name), load_catalogue(lang))


@pytest.mark.slow
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(presets)
def test_random_presets_label_their_configurations_as_the_rows_did(tmp_path, preset):
    try:
        report = make_report(load(str(preset_file(tmp_path, preset))), WHEN)
    except InputError:
        return  # a preset that cannot run says so (test_random_presets); nothing to label
    assert_same_as_per_row(report, load_catalogue("en"))


def test_labels_that_read_alike_get_their_configurations_first_scenario_number():
    """Where two configurations' labels read alike (here: a catalogue whose words for batch sizes coincide), each label
    ends with its configuration's first scenario number, as the per-row algorithm did: in a sweep block and among
    Result objects (the default preset's RLHF groups and explicit scenarios)."""
    t = load_catalogue("en")
    blurred = replace(t, messages={**t.messages, **{f"value.batch_size.{b}": "some" for b in (1, 2, 4, 8, 16, 32, 64)}})
    shared = 0
    for name in ("default", "finetune", "inference-serving"):
        report = bundled_report(name)
        assert_same_as_per_row(report, blurred)
        shared += sum(len(_Configurations(report, m, blurred).shared) for m in report.results.matrices())
    assert shared > 0
