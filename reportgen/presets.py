"""Preset files: a declarative sweep (matrices of axes) expanded into validated scenarios.

One table, AXES, says which keys a matrix may have and how each is checked; unknown keys are
errors naming the file and key path. Combinations that cannot run are skipped with a reason.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .catalog import data_dir, read_yaml
from .errors import InputError, unknown_name
from .estimate import Estimator, RlhfScenario, Scenario, SkipReason, make_scenario
from .goals import Goal
from .arrays import np
from .inputs import INPUTS, RLHF_ALGORITHMS, RLHF_INPUTS, WORKLOAD_TYPES, check_input, check_inputs
from .limits import EXCLUDE_CHECKS, SCENARIOS, check_text
from .sweep import Expanded, SweepBlock, check_axes, excluded_rows, flat_rows, product_size
from .terms import ASSUMPTION_BY_NAME

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
TOP_KEYS = ("title", "title_zh", "description", "description_zh", "assumptions", "prices", "matrices", "scenarios")
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
        matrices = raw.get("matrices") or []
        scenarios = raw.get("scenarios") or []
        for key, value in (("matrices", matrices), ("scenarios", scenarios)):
            if not isinstance(value, list) or not all(isinstance(m, Mapping) for m in value):
                raise InputError("expected a list of mappings", source=source, key_path=key)
        if not matrices and not scenarios:
            raise InputError("a preset needs at least one matrix or scenario", source=source, key_path="matrices")
        names = [m.get("name") for m in matrices]
        for i, n in enumerate(names):
            if not isinstance(n, str) or not n.strip():
                raise InputError(f"expected a matrix name (text), got {n!r}", source=source, key_path=f"matrices[{i}].name")
            if names.index(n) != i:
                raise InputError(f"duplicate matrix name {n!r}", source=source, key_path=f"matrices[{i}].name")
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
                   assumptions=_assumptions(raw.get("assumptions") or {}, source),
                   prices=_prices(raw.get("prices") or {}, source),
                   matrices=tuple(matrices), scenarios=tuple(scenarios))


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
        if not isinstance(entry, Mapping):
            raise InputError("expected a mapping", source=source, key_path=f"prices.{gpu}")
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


def _interchangeable(raw: Any, src: str, path: str) -> tuple[str, ...]:
    """Job inputs a matrix declares interchangeable: the plan may pick any of their values."""
    names = _as_list(raw)
    job = [i.name for i in INPUTS if not i.layout and i.preset_axis and i.name != "model"]
    for k, name in enumerate(names):
        if name not in job:
            where = f"{path}[{k}]" if isinstance(raw, list) else path
            raise unknown_name("job input", name, job, source=src, key_path=where)
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
    entry of one workload becomes a SweepBlock (columns, not objects) unless columnar is False or
    the preset states a goal (a goal sets inputs per layout and gates the plan per result)."""
    out: list[tuple[str, Scenario | RlhfScenario] | SweepBlock] = []
    skipped: list[Skipped] = []
    interchangeable: dict[str, tuple[str, ...]] = {}
    goals: dict[str, Goal] = {}
    src = preset.source
    matrices = []
    for i, matrix in enumerate(preset.matrices):
        path = f"matrices[{i}]"
        _check_keys(matrix, MATRIX_KEYS, src, path)
        interchangeable[matrix["name"]] = _interchangeable(matrix.get("interchangeable") or [], src,
                                                           f"{path}.interchangeable")
        sweeps = _sweeps(matrix, src, path)
        if "goal" in matrix:
            goals[matrix["name"]] = _goal(matrix["goal"], sweeps, src, f"{path}.goal")
        matrices.append((matrix["name"], path, sweeps,
                         _excludes(matrix.get("exclude") or [], src, f"{path}.exclude", estimator)))
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
            if columnar and not goals and _columnar(sweep):
                block = _sweep_block(mname, sweep, excludes, removed, estimator, src, checked, skipped)
                if block.size:
                    out.append(block)
                continue
            keys = list(sweep.axes)
            for combo in itertools.product(*sweep.axes.values()):
                values = dict(zip(keys, combo))
                hits = [j for j, ex in enumerate(excludes)
                        if all(values.get(k) == v or (k == "workload" and v == sweep.workload) for k, v in ex.items())]
                for j in hits:
                    removed[j] += 1
                if hits:
                    continue
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
    for i, raw in enumerate(preset.scenarios):
        path = f"scenarios[{i}]"
        _check_keys(raw, SCENARIO_KEYS, src, path)
        wpath = f"{path}.workload"
        wtype, wparams = _workload_entries(raw.get("workload", "inference"), src, wpath)[0]
        _set_once(wparams, raw, src, wpath, path)
        values = {k: raw[k] for k in AXES if k in raw}
        values.update({k: v for k, v in wparams.items() if k in AXES})
        rlhf = {**{k: raw[k] for k in RLHF_KEYS if k in raw}, **{k: v for k, v in wparams.items() if k in RLHF_KEYS}}
        name = raw.get("name", "")
        if not isinstance(name, str):
            raise InputError(f"expected text, got {name!r}", source=src, key_path=f"{path}.name")
        item, reason = _make(values, wtype, rlhf, estimator, src, path, name=name)
        if reason:
            skipped.append(Skipped("scenarios", item, reason))
        else:
            out.append(("scenarios", item))
    if not out:
        raise InputError("every combination was skipped: nothing to estimate"
                         + (f" (first reason: {skipped[0].reason_text})" if skipped else ""), source=src,
                         key_path="matrices")
    return Expansion(Expanded(out), tuple(skipped), interchangeable, goals)


def _columnar(sweep: "_Sweep") -> bool:
    """Whether a matrix entry can be held as columns: one workload, each scenario its axes' values."""
    return sweep.workload not in RLHF_ALGORITHMS and "num_gpus" not in sweep.axes.get("tp_size", ())


def _sweep_block(mname: str, sweep: "_Sweep", excludes: Sequence[Mapping[str, Any]], removed: list[int],
                 estimator: Estimator, src: str, checked: dict, skipped: list) -> SweepBlock:
    """The loop over the product for a columnar entry: the same exclusions, checks (first error first),
    skips and order, computed as arrays."""
    rows = flat_rows(product_size(sweep.axes), excluded_rows(sweep.axes, sweep.workload, excludes, removed))
    if len(rows) and "model" not in sweep.axes:
        raise InputError("missing required key", source=src, key_path=f"{sweep.where}.model")

    def check(values: dict) -> dict:
        return check_inputs(values, workload=sweep.workload, models=estimator.specs, gpus=estimator.gpus, source=src,
                            key_path=lambda key: f"{sweep.where}.{key}", checked=checked)

    block = SweepBlock(mname, sweep.workload, tuple(sweep.axes), check_axes(sweep.axes, sweep.workload, rows, check),
                       rows)
    codes = estimator.skip_codes(block.columns(), block.size)
    for k in np.flatnonzero(codes).tolist():
        s = block.scenario(k)
        skipped.append(Skipped(mname, s, estimator.skip_check(s)))
    return block.without(codes > 0)


def _goal(raw: Any, sweeps: Sequence["_Sweep"], src: str, path: str) -> Goal:
    """A matrix's goal: its picks must meet it. Users and context set each inference scenario's batch
    and prompt, so the matrix may not sweep those; RLHF groups are planned by memory alone."""
    goal = Goal.from_mapping(raw, source=src, key_path=path)
    for sweep in sweeps:
        if sweep.workload in RLHF_ALGORITHMS:
            raise InputError(f"a goal applies to inference and training workloads, not to {sweep.workload}",
                             source=src, key_path=path)
        for part in goal.sets(sweep.workload):
            if part.sets in sweep.axes:
                raise InputError(f"sets each scenario's {part.sets}: remove {part.sets} from the matrix", source=src,
                                 key_path=f"{path}.{part.key}")
    return goal


def _goal_inputs(goal: Goal, s: Scenario, src: str, path: str) -> dict[str, int]:
    """The batch and prompt a serving goal gives scenario s on its layout."""
    try:
        return {k: int(v) for k, v in goal.shape(s, s.num_gpus, s.tp_size).items()}
    except InputError as exc:
        raise InputError(exc.message, source=src, key_path=f"{path}.context") from None


def _sweeps(matrix: Mapping[str, Any], src: str, path: str) -> list[_Sweep]:
    raw = matrix.get("workload", "inference")
    workloads = _workload_entries(raw, src, f"{path}.workload")
    base_axes = {k: _as_list(matrix[k]) for k in AXES if k in matrix}
    sweeps = []
    for w_index, (wtype, wparams) in enumerate(workloads):
        wpath = f"{path}.workload[{w_index}]" if isinstance(raw, list) else f"{path}.workload"
        _set_once(wparams, matrix, src, wpath, path)
        own = {k: _as_list(v) for k, v in wparams.items() if k in AXES}
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
        entries.append((wtype, {k: v for k, v in item.items() if k != "type"}))
    if not entries:
        raise InputError("empty list: give at least one workload", source=src, key_path=path)
    return entries


def _excludes(raw: Any, src: str, path: str, estimator: Estimator) -> list[dict]:
    """The exclude rules, each value checked as the input it names (a misspelt GPU is an error, not a
    rule that excludes nothing)."""
    if not isinstance(raw, list):
        raise InputError("expected a list of mappings", source=src, key_path=path)
    for i, ex in enumerate(raw):
        if not isinstance(ex, Mapping) or not ex:
            raise InputError("expected a non-empty mapping of axis: value", source=src, key_path=f"{path}[{i}]")
        _check_keys(ex, AXES + ("workload",), src, f"{path}[{i}]")
        for key, value in ex.items():
            where = f"{path}[{i}].{key}"
            if key == "workload":
                if value not in WORKLOAD_TYPES:
                    raise unknown_name("workload", value, WORKLOAD_TYPES, source=src, key_path=where)
            elif not (key == "tp_size" and value == "num_gpus"):
                check_input(key, value, models=estimator.specs, gpus=estimator.gpus, source=src, key_path=where)
    return [dict(ex) for ex in raw]


def _make(values: dict, wtype: str, rlhf: dict, estimator: Estimator, src: str, path: str, name: str,
          checked: dict | None = None):
    return make_scenario(values, workload=wtype, rlhf=rlhf, estimator=estimator, source=src,
                         key_path=lambda key: f"{path}.{key}", name=name, checked=checked)
