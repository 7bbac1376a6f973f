"""Preset files: a declarative sweep (matrices of axes) expanded into validated scenarios.

One table, AXES, says which keys a matrix may have and how each is checked; unknown keys are
errors naming the file and key path. Combinations that cannot run are skipped with a reason.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from ..model.catalog import data_dir, read_yaml
from ..errors import InputError, shown, unknown_name
from ..model.estimate import Estimator, RlhfScenario, Scenario, SkipReason, make_scenario
from ..planning.fleet import Job, Portfolio, job_kind
from ..planning.goals import GOAL_KEYS, GOAL_PARTS, Goal, goal_kind
from ..model.arrays import np
from ..model.inputs import (INPUT_BY_NAME, INPUTS, RLHF_ALGORITHMS, RLHF_INPUTS, WORKLOAD_DEFAULTS, WORKLOAD_TYPES,
                            check_input, check_inputs)
from ..limits import EXCLUDE_CHECKS, SCENARIOS, check_text
from .sweep import (SMALL_BLOCK_ROWS, Expanded, SweepBlock, check_axes, excluded_rows, flat_rows, joined_columns,
                    product_size, small_batches, value_codes)
from ..model.terms import ASSUMPTION_BY_NAME
from ..model.units import SECONDS_PER, parse_duration

# Axes a matrix may sweep (each a scalar or a list): every input a user sets. The Cartesian product
# varies the last axis fastest; the first ones keep the order scenarios have always been numbered in,
# inputs added later follow in table order.
_SWEEP_FIRST = ("model", "precision", "weight_dtype", "kv_dtype", "optimizer", "optimizer_impl", "zero_stage",
                "num_gpus", "gpu", "tp_size", "ep_size", "checkpointing", "attention", "offload", "batch_size",
                "seq_len", "prompt_len", "gen_len", "lora_rank", "lora_targets", "logits")
AXES = _SWEEP_FIRST + tuple(i.name for i in INPUTS if i.preset_axis and i.name not in _SWEEP_FIRST)
RLHF_KEYS = tuple(i.name for i in RLHF_INPUTS)
WORKLOAD_KEYS = ("type",) + AXES[1:] + RLHF_KEYS
MATRIX_KEYS = ("name", "name_zh", "description", "workload", "exclude", "interchangeable", "goal") + AXES
SCENARIO_KEYS = ("name", "workload") + AXES + RLHF_KEYS
TOP_KEYS = ("title", "title_zh", "description", "description_zh", "assumptions", "prices", "matrices", "scenarios",
            "purchase", "datacenter_only")
PURCHASE_KEYS = ("horizon", "gpus", "max_types", "owned", "jobs")
# A job is an explicit scenario (its inputs, less the GPU type the fleet chooses) and when it runs.
JOB_KEYS = tuple(k for k in SCENARIO_KEYS if k != "gpu") + ("name_zh", "start", "deadline", "steps", "serve")
SERVE_KEYS = ("users", "context", "min_tokens_per_s", "max_ttft", "hours_per_day")
MAX_JOBS = 8  # a two-type fleet tries every assignment of jobs to types: 2^jobs per pair of types
# GPU types owned: each is one more type every job may be assigned to ((owned + 2)^jobs per pair bought)
MAX_OWNED_TYPES = 2
MAX_OWNED_GPUS = 100_000
PRICE_KEYS = ("price_purchase_usd", "price_per_hour_usd")


@dataclass(frozen=True)
class Preset:
    name: str
    source: str  # the file read (error messages name it)
    title: str
    description: str
    assumptions: Mapping[str, float]
    prices: Mapping[str, Mapping[str, float]]
    matrices: tuple[Mapping[str, Any], ...]
    scenarios: tuple[Mapping[str, Any], ...]
    given_path: str = ""  # the path as the user gave it; "" for a bundled preset chosen by name
    # Chinese texts for the zh report (each falls back to the English one).
    title_zh: str = ""
    description_zh: str = ""
    matrix_names_zh: Mapping[str, str] = field(default_factory=dict)
    purchase: Mapping[str, Any] | None = None  # the period's work (a fleet to choose), read by portfolio()
    # leave out GPU types not licensed for data-centre use (GeForce: the driver licence, §2.1.3)
    datacenter_only: bool = False

    def title_in(self, lang: str) -> str:
        return self.title_zh if lang == "zh" and self.title_zh else self.title

    def description_in(self, lang: str) -> str:
        return self.description_zh if lang == "zh" and self.description_zh else self.description

    def matrix_name_in(self, name: str, lang: str) -> str:
        return self.matrix_names_zh.get(name, name) if lang == "zh" else name

    @classmethod
    def from_mapping(cls, raw: Any, *, name: str, source: str, given_path: str = "") -> "Preset":
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a mapping at the top level, got {type(raw).__name__}", source=source)
        _check_keys(raw, TOP_KEYS, source, "")
        title = raw.get("title", name)
        if not isinstance(title, str) or not title.strip():
            raise InputError(f"expected non-empty text, got {title!r}", source=source, key_path="title")
        description = raw.get("description", "")
        if not isinstance(description, str):
            raise InputError(f"expected text, got {description!r}", source=source, key_path="description")
        if raw.get("matrices", []) == [] and raw.get("scenarios", []) == [] and "purchase" not in raw:
            raise InputError("a preset needs at least one matrix, scenario or purchase", source=source,
                             key_path="matrices")
        matrices = _given(raw, "matrices", list, "matrix", source, "") or []
        scenarios = _given(raw, "scenarios", list, "scenario", source, "") or []
        for key, value in (("matrices", matrices), ("scenarios", scenarios)):
            if not all(isinstance(m, Mapping) for m in value):
                raise InputError("expected a list of mappings", source=source, key_path=key)
        first: dict[str, int] = {}
        for i, m in enumerate(matrices):
            n = m.get("name")
            if not isinstance(n, str) or not n.strip():
                raise InputError(f"expected a matrix name (text), got {n!r}", source=source, key_path=f"matrices[{i}].name")
            if first.setdefault(n, i) != i:
                raise InputError(f"duplicate matrix name {n!r}", source=source, key_path=f"matrices[{i}].name")
        datacenter_only = raw.get("datacenter_only", False)
        if not isinstance(datacenter_only, bool):
            raise InputError(f"expected true or false, got {shown(datacenter_only)}", source=source,
                             key_path="datacenter_only")
        texts = {}
        for key in ("title_zh", "description_zh"):
            value = raw.get(key, "")
            if not isinstance(value, str):
                raise InputError(f"expected text, got {value!r}", source=source, key_path=key)
            texts[key] = value
        names_zh = {}
        for i, m in enumerate(matrices):
            if "name_zh" in m:
                if not isinstance(m["name_zh"], str) or not m["name_zh"].strip():
                    raise InputError(f"expected non-empty text, got {m['name_zh']!r}", source=source,
                                     key_path=f"matrices[{i}].name_zh")
                names_zh[m["name"]] = m["name_zh"]
        return cls(name=name, source=source, given_path=given_path, **texts, matrix_names_zh=names_zh,
                   title=title, description=description,
                   assumptions=_assumptions(_given(raw, "assumptions", Mapping, "assumption", source, "") or {},
                                            source),
                   prices=_prices(_given(raw, "prices", Mapping, "GPU", source, "") or {}, source),
                   matrices=tuple(matrices), scenarios=tuple(scenarios),
                   purchase=_given(raw, "purchase", Mapping, "key", source, ""), datacenter_only=datacenter_only)


def _given(raw: Mapping, key: str, kind: type, item: str, source: str, path: str) -> Any:
    """raw[key], None if absent. Present, it must be a non-empty list or mapping (`kind`): null, 0 or
    an empty one would do nothing, which a planner would not see."""
    if key not in raw:
        return None
    value, where = raw[key], f"{path}.{key}" if path else key
    noun = "list" if kind is list else "mapping"
    if not isinstance(value, kind):
        raise InputError(f"expected a {noun}, got {shown(value)}", source=source, key_path=where)
    if not value:
        raise InputError(f"empty {noun}: give at least one {item}, or leave the key out", source=source,
                         key_path=where)
    return value


class _Once:
    """The items of a list, met one by one, each at most once: a repeated axis value, workload or rule
    would make or remove the same scenarios twice."""

    def __init__(self, what: str, source: str, path: str):
        self.what, self.source, self.path = what, source, path
        self.first: dict = {}

    def add(self, i: int, value: Any) -> None:
        key = _frozen(value)
        if key is not None and self.first.setdefault(key, i) != i:
            raise InputError(f"{self.what} {shown(value)} is listed twice (first at [{self.first[key]}])",
                             source=self.source, key_path=f"{self.path}[{i}]")


def _check_distinct(values: Sequence, what: str, source: str, path: str) -> None:
    once = _Once(what, source, path)
    for i, value in enumerate(values):
        once.add(i, value)


def _frozen(value: Any) -> Any:
    """A hashable stand-in equal for equal values (1 and 1.0 alike, True apart), or None for a value
    that is neither a scalar, a list nor a mapping."""
    if isinstance(value, (str, int, float)):  # most values; a bool is an int, told apart
        return ("bool" if isinstance(value, bool) else "value", value)
    if isinstance(value, Mapping):
        items = [(k, _frozen(v)) for k, v in value.items()]
        return None if any(v is None for _, v in items) else ("map", frozenset(items))
    if isinstance(value, list):
        items = [_frozen(v) for v in value]
        return None if any(v is None for v in items) else ("list", tuple(items))
    try:
        hash(value)
    except TypeError:
        return None
    return ("value", value)


def _no_nulls(raw: Mapping, keys: Sequence[str], source: str, path: str) -> None:
    """A setting given as null would silently take its default (RLHF) or ask nothing (a goal)."""
    for key in keys:
        if key in raw and raw[key] is None:
            raise InputError("expected a value, got null: give one, or leave the key out", source=source,
                             key_path=f"{path}.{key}")


def _check_keys(raw: Mapping, allowed: Sequence[str], source: str, path: str) -> None:
    for key in raw:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise unknown_name("key", key, allowed, source=source, key_path=where)


def _number(value: Any, source: str, path: str, *, minimum: float = 0.0, maximum: float = 1e18) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {value!r}", source=source, key_path=path)
    if not minimum <= value <= maximum:
        raise InputError(f"must be between {minimum:g} and {maximum:g}, got {value}", source=source, key_path=path)
    return value


def _assumptions(raw: Any, source: str) -> dict[str, float]:
    if not isinstance(raw, Mapping):
        raise InputError("expected a mapping", source=source, key_path="assumptions")
    _check_keys(raw, tuple(ASSUMPTION_BY_NAME) + ("currency",), source, "assumptions")
    out = {}
    for key, value in raw.items():
        if key == "currency":
            if value != "USD":
                raise InputError(f"only USD prices are supported, got {value!r}", source=source,
                                 key_path="assumptions.currency")
            continue
        out[key] = ASSUMPTION_BY_NAME[key].check(value, source=source, key_path=f"assumptions.{key}")
    return out


def _prices(raw: Any, source: str) -> dict[str, dict[str, float]]:
    if not isinstance(raw, Mapping):
        raise InputError("expected a mapping of GPU name to prices", source=source, key_path="prices")
    out = {}
    for gpu, entry in raw.items():
        if not isinstance(entry, Mapping) or not entry:
            raise InputError(f"expected a mapping of {' and/or '.join(PRICE_KEYS)}, got {shown(entry)}",
                             source=source, key_path=f"prices.{gpu}")
        _check_keys(entry, PRICE_KEYS, source, f"prices.{gpu}")
        out[str(gpu)] = {k: _number(v, source, f"prices.{gpu}.{k}") for k, v in entry.items()}
    return out


def bundled_presets() -> dict[str, Path]:
    return {p.stem: p for p in sorted((data_dir("presets")).glob("*.yaml")) if p.stem != "gpus"}


def load_preset(name_or_path: str) -> Preset:
    """A bundled preset by name, or a YAML file by path."""
    check_text(name_or_path, source=None, key_path="PRESET")  # the path is printed in the report
    bundled = bundled_presets()
    path = bundled.get(name_or_path) or Path(name_or_path)
    if name_or_path not in bundled and not path.exists() and not name_or_path.endswith((".yaml", ".yml")):
        raise unknown_name("preset", name_or_path, bundled, key_path="PRESET")
    raw = read_yaml(path)
    given = "" if name_or_path in bundled else name_or_path
    return Preset.from_mapping(raw, name=path.stem, source=str(path), given_path=given)


# ---------------------------------------------------------------------------------------------
# Expansion

@dataclass(frozen=True)
class Skipped:
    matrix: str
    scenario: Any  # Scenario or RlhfScenario: a report names it in its own language
    reason: SkipReason

    @property
    def label(self) -> str:
        return self.scenario.label()

    @property
    def reason_text(self) -> str:
        return self.reason.text()


@dataclass(frozen=True)
class Expansion:
    scenarios: Expanded  # (matrix name, scenario) pairs, a columnar entry's made when read
    skipped: tuple[Skipped, ...]
    # matrix name -> the job inputs its preset declares interchangeable (a plan may choose them)
    interchangeable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # matrix name -> what its picks must meet besides fitting (matrices without a goal are absent)
    goals: Mapping[str, Goal] = field(default_factory=dict)
    purchase: Portfolio | None = None  # the period's work, when the preset states it
    # what datacenter_only left out: (key path, the GPU types, how many combinations)
    left_out: tuple[tuple[str, tuple[str, ...], int], ...] = ()


def _interchangeable(raw: Any, src: str, path: str) -> tuple[str, ...]:
    """Job inputs a matrix declares interchangeable: the plan may pick any of their values."""
    names = _as_list(raw)
    if not names:
        raise InputError("empty list: give at least one job input, or leave the key out", source=src, key_path=path)
    job = [i.name for i in INPUTS if not i.layout and i.preset_axis and i.name != "model"]
    for k, name in enumerate(names):
        if name not in job:
            where = f"{path}[{k}]" if isinstance(raw, list) else path
            raise unknown_name("job input", name, job, source=src, key_path=where)
    _check_distinct(names, "job input", src, path)
    return tuple(names)


def _as_list(value: Any) -> list:
    return list(value) if isinstance(value, list) else [value]


@dataclass(frozen=True)
class _Sweep:
    """One workload entry of a matrix: the axes whose Cartesian product it contributes."""
    where: str  # key path that the errors of its scenarios name
    workload: str
    rlhf: Mapping[str, Any]
    axes: Mapping[str, list]

    @property
    def size(self) -> int:
        return math.prod(len(values) for values in self.axes.values())


def expand(preset: Preset, estimator: Estimator, columnar: bool = True) -> Expansion:
    """Every scenario of every matrix (Cartesian product of its axes), plus the explicit ones.

    The combinations are counted before any is made: past SCENARIOS the preset is refused. A matrix
    entry of one workload becomes a SweepBlock (columns, not objects) unless columnar is False."""
    out: list[tuple[str, Scenario | RlhfScenario] | SweepBlock] = []
    skipped: list[Skipped | SweepBlock] = []  # a block stands for its skipped rows until all blocks are made
    interchangeable: dict[str, tuple[str, ...]] = {}
    goals: dict[str, Goal] = {}
    src = preset.source
    consumer = {n for n, g in estimator.gpus.items() if not g.datacenter} if preset.datacenter_only else set()
    left_out: list[tuple[str, tuple[str, ...], int]] = []
    matrices = []
    for i, matrix in enumerate(preset.matrices):
        path = f"matrices[{i}]"
        _check_keys(matrix, MATRIX_KEYS, src, path)
        interchangeable[matrix["name"]] = (_interchangeable(matrix["interchangeable"], src, f"{path}.interchangeable")
                                           if "interchangeable" in matrix else ())
        sweeps = [_datacenter(s, consumer, left_out, src, path) for s in _sweeps(matrix, src, path)]
        if "goal" in matrix:
            goals[matrix["name"]] = _goal(matrix["goal"], sweeps, src, f"{path}.goal")
        matrices.append((matrix["name"], path, sweeps,
                         _excludes(_given(matrix, "exclude", list, "rule", src, path) or [], src, f"{path}.exclude",
                                   estimator)))
    count = sum(sweep.size for _, _, sweeps, _ in matrices for sweep in sweeps) + len(preset.scenarios)
    if count > SCENARIOS.value():
        raise SCENARIOS.refuse(f"{count:,} combinations", source=src, key_path="matrices")
    for _, path, sweeps, excludes in matrices:  # each rule is compared with each combination
        combinations = sum(sweep.size for sweep in sweeps)
        if len(excludes) * combinations > EXCLUDE_CHECKS.value():
            raise EXCLUDE_CHECKS.refuse(f"{len(excludes):,} rules × {combinations:,} combinations", source=src,
                                        key_path=f"{path}.exclude")
    checked: dict = {}  # a sweep repeats its axes' values: each is checked once
    for mname, path, sweeps, excludes in matrices:
        removed = [0] * len(excludes)
        goal = goals.get(mname)
        for sweep in sweeps:
            if columnar and _columnar(sweep):
                block = _sweep_block(mname, sweep, excludes, removed, estimator, src, checked,
                                     goal if goal and goal.sets(sweep.workload) else None, f"{path}.goal")
                if block.size:
                    out.append(block)
                    skipped.append(block)
                continue
            keys = list(sweep.axes)
            excluded = excluded_rows(sweep.axes, sweep.workload, excludes, removed)
            for combo, gone in zip(itertools.product(*sweep.axes.values()), excluded.tolist()):
                if gone:
                    continue
                values = dict(zip(keys, combo))
                item, reason = _make(values, sweep.workload, sweep.rlhf, estimator, src, sweep.where, "", checked)
                if goal and goal.sets(sweep.workload):
                    values.update(_goal_inputs(goal, item, src, f"{path}.goal"))
                    item, reason = _make(values, sweep.workload, sweep.rlhf, estimator, src, sweep.where, "", checked)
                if reason:
                    skipped.append(Skipped(mname, item, reason))
                else:
                    out.append((mname, item))
        for j, n in enumerate(removed):
            if not n:
                raise InputError("matches no combination of this matrix (check the values against its axes)",
                                 source=src, key_path=f"{path}.exclude[{j}]")
    listed: list[Scenario] = []  # consecutive explicit scenarios of one single-model workload: one block

    def list_them() -> None:
        for block in SweepBlock.listing("scenarios", listed) if listed else ():
            out.append(block)
            skipped.append(block)
        listed.clear()

    for i, raw in enumerate(preset.scenarios):
        _check_keys(raw, SCENARIO_KEYS, src, f"scenarios[{i}]")
        if isinstance(raw.get("gpu"), str) and raw["gpu"] in consumer:
            raise InputError(f"{raw['gpu']} is not licensed for data-centre use (GeForce) and the preset sets "
                             "datacenter_only: remove the scenario or the setting", source=src,
                             key_path=f"scenarios[{i}].gpu")
        item, reason, _ = _explicit(raw, estimator, src, f"scenarios[{i}]", skips=not columnar)
        if columnar and isinstance(item, Scenario) and reason is None:  # (a skipped RLHF group gives its actor)
            if listed and listed[0].workload != item.workload:
                list_them()
            listed.append(item)
            continue
        list_them()
        if reason:
            skipped.append(Skipped("scenarios", item, reason))
        else:
            out.append(("scenarios", item))
    list_them()
    out, skipped = _skip_blocks(out, skipped, estimator)
    purchase = portfolio(preset, estimator, consumer, left_out)
    if not out and purchase is None:
        raise InputError("every combination was skipped: nothing to estimate"
                         + (f" (first reason: {skipped[0].reason_text})" if skipped else ""), source=src,
                         key_path="matrices")
    return Expansion(Expanded(out), tuple(skipped), interchangeable, goals, purchase, tuple(left_out))


def _datacenter(sweep: "_Sweep", consumer: set[str], left_out: list, src: str, path: str) -> "_Sweep":
    """The sweep without the GPU types datacenter_only leaves out (each named in left_out with the combinations
    it had); a matrix whose GPU types are all left out is an error."""
    gpus = sweep.axes.get("gpu", [])
    # values are checked later, with their key paths: a mapping or list given as a GPU is no GPU type here
    removed = tuple(g for g in gpus if isinstance(g, str) and g in consumer)
    if not removed:
        return sweep
    kept = [g for g in gpus if g not in removed]
    if not kept:
        raise InputError(f"datacenter_only leaves no GPU type: {', '.join(removed)} "
                         f"{'is' if len(removed) == 1 else 'are'} not licensed for data-centre use (GeForce)",
                         source=src, key_path=f"{path}.gpu")
    left_out.append((sweep.where, removed, sweep.size * len(removed) // len(gpus)))
    return replace(sweep, axes={**sweep.axes, "gpu": kept})

def _explicit(raw: Mapping[str, Any], estimator: Estimator, src: str, path: str, skips: bool = True
              ) -> tuple[Scenario | RlhfScenario, SkipReason | None, tuple[str, ...]]:
    """An explicit scenario (a preset's `scenarios` entry, a purchase's job): (it, why it cannot run or None,
    the inputs it gives). Without `skips`, a single model's scenario is not checked against the skip rules
    (its block's rows are checked together)."""
    wpath = f"{path}.workload"
    wtype, wparams = _workload_entries(raw.get("workload", "inference"), src, wpath)[0]
    _set_once(wparams, raw, src, wpath, path)
    _no_nulls(raw, RLHF_KEYS, src, path)
    values = {k: raw[k] for k in AXES if k in raw}
    values.update({k: v for k, v in wparams.items() if k in AXES})
    rlhf = {**{k: raw[k] for k in RLHF_KEYS if k in raw}, **{k: v for k, v in wparams.items() if k in RLHF_KEYS}}
    name = raw.get("name", "")
    if not isinstance(name, str):
        raise InputError(f"expected text, got {name!r}", source=src, key_path=f"{path}.name")
    item, reason = _make(values, wtype, rlhf, estimator, src, path, name=name, skips=skips or wtype in RLHF_ALGORITHMS)
    return item, reason, tuple(values)


def _offset(raw: Any, src: str, path: str, zero: bool = True) -> float:
    """A moment of the horizon as a duration from its start ('0d' is the first day), or (zero False) a length."""
    try:
        return parse_duration(raw, zero=zero)
    except ValueError as exc:
        raise InputError(str(exc), source=src, key_path=path) from None


def portfolio(preset: Preset, estimator: Estimator, consumer: set[str] = frozenset(),
              left_out: list | None = None) -> Portfolio | None:
    """The preset's `purchase:` section as a Portfolio (None without one): each job checked as an explicit
    scenario is, and its window inside the horizon; the GPU types in `consumer` left out (named in left_out)."""
    raw, src = preset.purchase, preset.source
    if raw is None:
        return None
    _check_keys(raw, PURCHASE_KEYS, src, "purchase")
    for key in ("horizon", "gpus", "jobs"):
        if key not in raw:
            raise InputError("missing required key", source=src, key_path=f"purchase.{key}")
    horizon = _offset(raw["horizon"], src, "purchase.horizon", zero=False)
    gpus = _given(raw, "gpus", list, "GPU type", src, "purchase")
    _check_distinct(gpus, "GPU type", src, "purchase.gpus")
    for i, gpu in enumerate(gpus):
        check_input("gpu", gpu, models=estimator.specs, gpus=estimator.gpus, source=src, key_path=f"purchase.gpus[{i}]")
    removed = tuple(g for g in gpus if g in consumer)
    if removed:
        gpus = [g for g in gpus if g not in consumer]
        if not gpus:
            raise InputError(f"datacenter_only leaves no GPU type: {', '.join(removed)} not licensed for data-centre "
                             "use (GeForce)", source=src, key_path="purchase.gpus")
        if left_out is not None:
            left_out.append(("purchase.gpus", removed, 0))
    max_types = raw.get("max_types", 2)
    if isinstance(max_types, bool) or max_types not in (1, 2):
        raise InputError(f"expected 1 or 2 GPU types, got {shown(max_types)}", source=src, key_path="purchase.max_types")
    owned = _owned(raw, estimator, consumer, src, left_out)
    jobs_raw = _given(raw, "jobs", list, "job", src, "purchase")
    if len(jobs_raw) > MAX_JOBS:
        raise InputError(f"{len(jobs_raw)} jobs: at most {MAX_JOBS} (the fleet search tries every assignment of jobs "
                         "to GPU types)", source=src, key_path="purchase.jobs")
    jobs, names = [], _Once("job name", src, "purchase.jobs")
    for i, job in enumerate(jobs_raw):
        path = f"purchase.jobs[{i}]"
        if not isinstance(job, Mapping):
            raise InputError(f"expected a mapping, got {shown(job)}", source=src, key_path=path)
        _check_keys(job, JOB_KEYS, src, path)
        if not isinstance(job.get("name"), str) or not job["name"].strip():
            raise InputError(f"expected a job name (text), got {shown(job.get('name'))}", source=src,
                             key_path=f"{path}.name")
        names.add(i, job["name"])
        jobs.append(_job(job, gpus[0], estimator, src, path, horizon))
    return Portfolio(horizon, tuple(gpus), tuple(jobs), max_types, owned)


def _owned(raw: Mapping[str, Any], estimator: Estimator, consumer: set[str], src: str,
           left_out: list | None) -> tuple[tuple[str, int], ...]:
    """`purchase.owned`: GPU type -> how many are already owned (the consumer types left out as offered ones are)."""
    owned = _given(raw, "owned", Mapping, "GPU type and count", src, "purchase") or {}
    if len(owned) > MAX_OWNED_TYPES:
        raise InputError(f"{len(owned)} GPU types: at most {MAX_OWNED_TYPES} (each is one more type the fleet search "
                         "assigns every job to)", source=src, key_path="purchase.owned")
    out = []
    for gpu, count in owned.items():
        path = f"purchase.owned.{gpu}"
        check_input("gpu", gpu, models=estimator.specs, gpus=estimator.gpus, source=src, key_path=path)
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_OWNED_GPUS:
            raise InputError(f"expected a number of GPUs from 1 to {MAX_OWNED_GPUS:,}, got {shown(count)}",
                             source=src, key_path=path)
        out.append((gpu, count))
    removed = tuple(g for g, _ in out if g in consumer)
    if removed and left_out is not None:
        left_out.append(("purchase.owned", removed, 0))
    return tuple((g, n) for g, n in out if g not in consumer)


def _job(raw: Mapping[str, Any], gpu: str, estimator: Estimator, src: str, path: str, horizon: float) -> Job:
    """A job, its scenario laid out on `gpu` until the plan lays it out per GPU type: a layout that cannot
    run is the plan's to change; what no layout runs, each GPU type's plan says."""
    item, _, given = _explicit({**raw, "gpu": gpu}, estimator, src, path)
    kind = job_kind(item)
    allowed = {"serve": ("serve",), "train": ("deadline",), "rlhf": ("deadline", "steps")}[kind]
    for key in ("serve", "deadline", "steps"):
        if key in raw and key not in allowed:
            raise InputError(f"does not apply to a {'served model' if kind == 'serve' else 'training run'}",
                             source=src, key_path=f"{path}.{key}")
    needed = {"serve": "serve", "train": "train_tokens", "rlhf": "steps"}[kind]
    if needed not in (given if kind == "train" else raw):
        raise InputError(f"missing required key: a job states its volume ({needed})", source=src,
                         key_path=f"{path}.{needed}")
    start = _offset(raw["start"], src, f"{path}.start") if "start" in raw else 0.0
    deadline = _offset(raw["deadline"], src, f"{path}.deadline") if "deadline" in raw else horizon
    if not start < deadline <= horizon:
        raise InputError(f"the job must start before its deadline and end within the horizon "
                         f"({horizon / SECONDS_PER['d']:g} days)", source=src,
                         key_path=f"{path}.{'deadline' if 'deadline' in raw else 'start'}")
    goal, hours = Goal(), 24.0
    if kind == "serve":
        serve = _given(raw, "serve", Mapping, "key", src, path)
        _check_keys(serve, SERVE_KEYS, src, f"{path}.serve")
        _no_nulls(serve, SERVE_KEYS, src, f"{path}.serve")
        if "users" not in serve:
            raise InputError("missing required key", source=src, key_path=f"{path}.serve.users")
        goal = Goal.from_mapping({k: v for k, v in serve.items() if k != "hours_per_day"}, source=src,
                                 key_path=f"{path}.serve")
        for part in goal.sets("inference"):
            if part.sets in given:
                raise InputError(f"the serve goal sets {part.sets}: remove it from the job", source=src,
                                 key_path=f"{path}.{part.sets}")
        if goal.context is not None:
            _goal_inputs(goal, item, src, f"{path}.serve")
        hours = _number(serve.get("hours_per_day", 24), src, f"{path}.serve.hours_per_day", minimum=0.5, maximum=24)
        item = item.with_inputs(**goal.shape(item.workload, item.gen_len, item.num_gpus, item.tp_size))
    steps = 0
    if kind == "rlhf":
        steps = raw["steps"]
        if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= 10**9:
            raise InputError(f"expected a whole number of iterations from 1 to 1,000,000,000, got {shown(steps)}",
                             source=src, key_path=f"{path}.steps")
    name_zh = raw.get("name_zh", "")
    if not isinstance(name_zh, str):
        raise InputError(f"expected text, got {shown(name_zh)}", source=src, key_path=f"{path}.name_zh")
    fixed = tuple(k for k in given if k != "gpu")
    return Job(raw["name"], item, fixed, goal, start, deadline, steps, float(hours), name_zh)


def _columnar(sweep: "_Sweep") -> bool:
    """Whether a matrix entry can be held as columns: one workload, not an RLHF group."""
    return sweep.workload not in RLHF_ALGORITHMS


def _sweep_block(mname: str, sweep: "_Sweep", excludes: Sequence[Mapping[str, Any]], removed: list[int],
                 estimator: Estimator, src: str, checked: dict, goal: Goal | None, goal_path: str) -> SweepBlock:
    """The loop over the product for a columnar entry: the same exclusions and checks (first error
    first), computed as arrays; the skips follow (_skip_blocks). goal: the matrix's goal where it sets
    inputs of this workload per layout (a serving goal's batch and prompt), else None."""
    rows = flat_rows(product_size(sweep.axes), excluded_rows(sweep.axes, sweep.workload, excludes, removed))
    if len(rows) and "model" not in sweep.axes:
        raise InputError("missing required key", source=src, key_path=f"{sweep.where}.model")
    sweep, rows = _tp_across_gpus(sweep, rows)

    def check(values: dict) -> dict:
        return check_inputs(values, workload=sweep.workload, models=estimator.specs, gpus=estimator.gpus, source=src,
                            key_path=lambda key: f"{sweep.where}.{key}", checked=checked)

    if goal is None:
        return SweepBlock(mname, sweep.workload, tuple(sweep.axes), check_axes(sweep.axes, sweep.workload, rows, check),
                          rows)
    # The loop checks a row's inputs, then the goal's context against its generated tokens: a row whose
    # gen_len leaves no prompt is an error unless an earlier row (or its own inputs) has one first.
    first_bad = _first_row(rows, sweep, "gen_len", lambda v: goal.context is not None and isinstance(v, (int, float))
                           and not isinstance(v, bool) and v >= goal.context)
    values = check_axes(sweep.axes, sweep.workload, rows if first_bad is None else rows[:first_bad + 1], check)
    try:
        if first_bad is not None:  # (the values only that row and those before it take are checked)
            goal.check_context(SweepBlock(mname, sweep.workload, tuple(sweep.axes), values,
                                          rows[first_bad:first_bad + 1]).numbers("gen_len"))  # raises
        return _with_goal_inputs(SweepBlock(mname, sweep.workload, tuple(sweep.axes), values, rows), goal, check)
    except InputError as exc:
        raise InputError(exc.message, source=src, key_path=f"{goal_path}.context") from None


def _tp_across_gpus(sweep: "_Sweep", rows: np.ndarray) -> tuple["_Sweep", np.ndarray]:
    """`tp_size: num_gpus` (tensor parallel across each row's GPUs, as make_scenario reads it) as numbers:
    the tp_size axis's values become every (tp value, num_gpus value) pair, a pair's value the GPU count
    where the tp value is "num_gpus", and each row takes the pair of its two values. A pair's code grows
    with both of its codes, so the rows keep the loop's order; two values that come to the same number
    stay two rows, as in the loop (an axis may repeat a value)."""
    tp = sweep.axes.get("tp_size", ())
    if "num_gpus" not in tp:
        return sweep, rows
    names, sizes = list(sweep.axes), [len(v) for v in sweep.axes.values()]
    gpus = sweep.axes.get("num_gpus", [1])  # make_scenario's rule: the GPUs given, else one
    j = names.index("tp_size")
    gpu_codes = value_codes(rows, sizes, names.index("num_gpus")) if "num_gpus" in sweep.axes else 0
    pairs = [g if v == "num_gpus" else v for v in tp for g in gpus]
    after = math.prod(sizes[j + 1:])
    rows = ((rows // (after * sizes[j]) * len(pairs) + value_codes(rows, sizes, j) * len(gpus) + gpu_codes) * after
            + rows % after)
    return replace(sweep, axes={**sweep.axes, "tp_size": pairs}), rows


def _first_row(rows: np.ndarray, sweep: "_Sweep", name: str, bad: Callable[[Any], bool]) -> int | None:
    """The first of `rows` (their place) whose raw value of input `name` is bad, or None."""
    if name not in sweep.axes:
        value = WORKLOAD_DEFAULTS.get(sweep.workload, {}).get(name, INPUT_BY_NAME[name].default)
        return 0 if len(rows) and bad(value) else None
    j = list(sweep.axes).index(name)
    codes = [c for c, v in enumerate(sweep.axes[name]) if bad(v)]
    hits = np.flatnonzero(np.isin(value_codes(rows, [len(v) for v in sweep.axes.values()], j), codes))
    return int(hits[0]) if len(hits) else None


def _with_goal_inputs(block: SweepBlock, goal: Goal, check: Callable[[dict], dict]) -> SweepBlock:
    """The block with the inputs its goal sets per layout as its last axes: each value they take once,
    and of that larger product only the combination whose values are the goal's for each row's layout.
    Its rows keep the loop's order, and whatever reads a block's inputs reads these."""
    names, values, rows = list(block.names), list(block.values), block.rows
    shaped = goal.shape(block.workload, block.numbers("gen_len"), block.numbers("num_gpus"), block.numbers("tp_size"))
    for name, column in shaped.items():
        distinct, code = np.unique(np.asarray(column, dtype=np.int64), return_inverse=True)
        names.append(name)
        values.append(tuple(check({name: int(v)})[name] for v in distinct.tolist()))
        rows = rows * len(distinct) + code
    return SweepBlock(block.matrix, block.workload, tuple(names), tuple(values), rows)


def _skip_blocks(out: list, skipped: list, estimator: Estimator) -> tuple[list, list[Skipped]]:
    """out without the blocks' rows that cannot run, and skipped with those rows in each block's place,
    in the loop's order."""
    blocks = [item for item in out if isinstance(item, SweepBlock)]
    codes = dict(zip(map(id, blocks), _skip_codes(blocks, estimator)))
    kept = [item.without(codes[id(item)] > 0) if isinstance(item, SweepBlock) else item for item in out]
    reasons: list[Skipped] = []
    for item in skipped:
        if not isinstance(item, SweepBlock):
            reasons.append(item)
            continue
        for k in np.flatnonzero(codes[id(item)]).tolist():
            s = item.scenario(k)
            reasons.append(Skipped(item.matrix, s, estimator.skip_check(s)))
    return [item for item in kept if not isinstance(item, SweepBlock) or item.size], reasons


def _skip_codes(blocks: Sequence[SweepBlock], estimator: Estimator) -> list[np.ndarray]:
    """estimator.skip_codes of each block; the small ones computed together, as scenarios (small_batches:
    a preset of 30,000 one-row matrices took 20 s, one call each)."""
    codes: list = [estimator.skip_codes(block.columns(), block.size) if block.size >= SMALL_BLOCK_ROWS else None
                   for block in blocks]
    for batch in small_batches(blocks):
        together = estimator.skip_codes(*joined_columns([blocks[same[0]] for same in batch]))
        ends = np.cumsum([blocks[same[0]].size for same in batch])
        for same, part in zip(batch, np.split(together, ends[:-1])):
            for i in same:
                codes[i] = part
    return codes


def _goal(raw: Any, sweeps: Sequence["_Sweep"], src: str, path: str) -> Goal:
    """A matrix's goal: its picks must meet it. Users and context set each inference scenario's batch
    and prompt, so the matrix may not sweep those; RLHF groups are planned by memory alone."""
    if isinstance(raw, Mapping):  # Goal treats a missing part as None: here, null would silently ask nothing
        if not raw:
            raise InputError(f"empty mapping: give at least one of {', '.join(GOAL_KEYS)}, or leave the key out",
                             source=src, key_path=path)
        _no_nulls(raw, GOAL_KEYS, src, path)
    goal = Goal.from_mapping(raw, source=src, key_path=path)
    for sweep in sweeps:
        if sweep.workload in RLHF_ALGORITHMS:
            raise InputError(f"a goal applies to inference and training workloads, not to {sweep.workload}",
                             source=src, key_path=path)
        for part in goal.sets(sweep.workload):
            if part.sets in sweep.axes:
                raise InputError(f"sets each scenario's {part.sets}: remove {part.sets} from the matrix", source=src,
                                 key_path=f"{path}.{part.key}")
    read = {goal_kind(sweep.workload) for sweep in sweeps}
    for part in GOAL_PARTS:  # a part no workload of the matrix reads would be silently ignored
        if getattr(goal, part.attr) is not None and part.of not in read:
            kind = "serving (inference)" if part.of == "serve" else "training"
            raise InputError(f"a goal of {kind}: no workload of this matrix reads it", source=src,
                             key_path=f"{path}.{part.key}")
    return goal


def _goal_inputs(goal: Goal, s: Scenario, src: str, path: str) -> dict[str, int]:
    """The batch and prompt a serving goal gives scenario s on its layout."""
    try:
        return {k: int(v) for k, v in goal.shape(s.workload, s.gen_len, s.num_gpus, s.tp_size).items()}
    except InputError as exc:
        raise InputError(exc.message, source=src, key_path=f"{path}.context") from None


def _sweeps(matrix: Mapping[str, Any], src: str, path: str) -> list[_Sweep]:
    raw = matrix.get("workload", "inference")
    workloads = _workload_entries(raw, src, f"{path}.workload")
    base_axes = {k: _as_list(matrix[k]) for k in AXES if k in matrix}
    for k, values in base_axes.items():
        _check_distinct(values, "value", src, f"{path}.{k}")
    sweeps = []
    for w_index, (wtype, wparams) in enumerate(workloads):
        wpath = f"{path}.workload[{w_index}]" if isinstance(raw, list) else f"{path}.workload"
        _set_once(wparams, matrix, src, wpath, path)
        own = {k: _as_list(v) for k, v in wparams.items() if k in AXES}
        for k, values in own.items():
            _check_distinct(values, "value", src, f"{wpath}.{k}")
        axes = {**base_axes, **own}
        for k, values in axes.items():
            if not values:  # an empty axis would silently drop the whole workload
                raise InputError("empty list: give at least one value", source=src,
                                 key_path=f"{wpath if k in own else path}.{k}")
        where = f"{path}.workload[{w_index}]" if len(workloads) > 1 else path
        sweeps.append(_Sweep(where, wtype, {k: v for k, v in wparams.items() if k in RLHF_KEYS}, axes))
    return sweeps


def _set_once(inner: Mapping[str, Any], outer: Mapping[str, Any], src: str, inner_path: str, outer_path: str) -> None:
    """A workload mapping may not set what its matrix or scenario sets: one of the two would be ignored."""
    for key in inner:
        if key in outer and key not in ("name", "workload"):
            raise InputError(f"also set at {outer_path}.{key}: set it in one place", source=src,
                             key_path=f"{inner_path}.{key}")


def _workload_entries(raw: Any, src: str, path: str) -> list[tuple[str, dict]]:
    entries = []
    for i, item in enumerate(_as_list(raw)):
        where = f"{path}[{i}]" if isinstance(raw, list) else path
        if isinstance(item, str):
            item = {"type": item}
        if not isinstance(item, Mapping):
            raise InputError(f"expected a workload name or mapping, got {item!r}", source=src, key_path=where)
        _check_keys(item, WORKLOAD_KEYS, src, where)
        wtype = item.get("type")
        if wtype not in WORKLOAD_TYPES:
            raise unknown_name("workload", wtype, WORKLOAD_TYPES, source=src, key_path=f"{where}.type")
        _no_nulls(item, RLHF_KEYS, src, where)
        entries.append((wtype, {k: v for k, v in item.items() if k != "type"}))
    if not entries:
        raise InputError("empty list: give at least one workload", source=src, key_path=path)
    if isinstance(raw, list):
        _check_distinct([{"type": t, **params} for t, params in entries], "workload", src, path)
    return entries


def _excludes(raw: Any, src: str, path: str, estimator: Estimator) -> list[dict]:
    """The exclude rules, each value checked as the input it names (a misspelt GPU is an error, not a
    rule that excludes nothing)."""
    if not isinstance(raw, list):
        raise InputError("expected a list of mappings", source=src, key_path=path)
    once = _Once("rule", src, path)
    for i, ex in enumerate(raw):
        if not isinstance(ex, Mapping) or not ex:
            raise InputError("expected a non-empty mapping of axis: value", source=src, key_path=f"{path}[{i}]")
        _check_keys(ex, AXES + ("workload",), src, f"{path}[{i}]")
        once.add(i, ex)  # a copy of an earlier rule is refused before its values are checked again
        for key, value in ex.items():
            where = f"{path}[{i}].{key}"
            if key == "workload":
                if value not in WORKLOAD_TYPES:
                    raise unknown_name("workload", value, WORKLOAD_TYPES, source=src, key_path=where)
            elif not (key == "tp_size" and value == "num_gpus"):
                check_input(key, value, models=estimator.specs, gpus=estimator.gpus, source=src, key_path=where)
    return [dict(ex) for ex in raw]


def _make(values: dict, wtype: str, rlhf: dict, estimator: Estimator, src: str, path: str, name: str,
          checked: dict | None = None, skips: bool = True):
    return make_scenario(values, workload=wtype, rlhf=rlhf, estimator=estimator, source=src,
                         key_path=lambda key: f"{path}.{key}", name=name, checked=checked, skips=skips)
