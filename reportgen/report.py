"""The Report: everything every writer needs, computed once and purely.

build_report(preset, expansion, estimator, …) -> Report. Writers (JSON, workbook, HTML, PDF) read
the Report; the numbers they show are its terms and fields.
"""
from __future__ import annotations

import bisect
import operator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .arrays import np

from .catalog import GpuSpec
from .estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario
from .goals import Goal
from .inputs import job_inputs
from .models import ModelSpec
from .notes import Note
from .presets import Expansion, Preset, Skipped
from .sweep import Parts, SweepBlock
from .vector import Chunk
from .validation import Excluded, PublishedFigure, ValidationRow, summary

SENSITIVITY_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
SENSITIVITY_BATCHES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Result:
    """One estimated scenario of the sweep."""
    index: int  # 1-based, stable: the workbook row order and the HTML anchors follow it
    matrix: str
    estimate: Estimate | GroupEstimate

    @property
    def is_group(self) -> bool:
        return isinstance(self.estimate, GroupEstimate)

    @property
    def lead(self) -> Scenario:
        """The scenario that names the row: itself, or an RLHF group's actor/policy."""
        return self.estimate.scenario.roles[0][1] if self.is_group else self.estimate.scenario

    @property
    def label(self) -> str:
        return self.estimate.scenario.label()

    @property
    def workload(self) -> str:
        return self.estimate.scenario.algorithm if self.is_group else self.lead.workload

    @property
    def model(self) -> str:
        return self.lead.model

    @property
    def gpu(self) -> str:
        return self.lead.gpu

    @property
    def total_gpus(self) -> int:
        return int(self.estimate["total_gpus"]) if self.is_group else self.lead.num_gpus

    @property
    def purchase_usd(self) -> float:
        return self.estimate["purchase_usd"]

    @property
    def rent_usd(self) -> float:
        return self.estimate.rent_usd


class BlockResults:
    """The results of a SweepBlock, computed as term columns; a row becomes a Result when read."""

    def __init__(self, first_index: int, block: SweepBlock, estimator: Estimator):
        self.first_index, self.block, self.estimator = first_index, block, estimator
        self._made: list[Result] | None = None

    def __len__(self) -> int:
        return self.block.size

    def chunks(self) -> Iterator[Chunk]:
        """Every term of the block's rows, chunk by chunk."""
        return self.estimator.estimate_chunks(self.block.columns(), self.block.size)

    def __getitem__(self, k: int) -> Result:
        if self._made is not None:
            return self._made[k]
        return Result(self.first_index + k, self.block.matrix, self.estimator.estimate(self.block.scenario(k)))

    def __iter__(self) -> Iterator[Result]:
        """Every row as a Result (kept: a writer that reads them once reads them again)."""
        if self._made is None:
            made: list[Result] = []
            for chunk in self.chunks():
                scenarios = self.block.scenarios(chunk.start, chunk.start + chunk.size)
                made += (Result(self.first_index + chunk.start + i, self.block.matrix, self.estimator.estimate_row(s, row))
                         for i, (s, row) in enumerate(zip(scenarios, chunk.rows())))
            self._made = made
        return iter(self._made)


class Results(Parts):
    """The sweep's results in index order, held as parts: runs of Result objects and BlockResults."""

    def gpu_names(self) -> set[str]:
        """The GPU types the results run on (a block's without making its Results)."""
        out = set()
        for part in self.parts:
            out |= part.block.gpu_names() if isinstance(part, BlockResults) else {r.gpu for r in part}
        return out


# The plan's rankings, defined once. Among the results of one requirement × GPU type whose term
# PLAN_FITS is 1 (the recommended budget fits), the plan takes the first by PLAN_ORDER (Result
# fields: cheapest to buy, then fewest GPUs, then the earliest scenario); across GPU types, the
# first of those picks by the same order. The cheapest to rent is the first by RENT_ORDER, the same
# way. recommend() sorts by them; the workbook's Plan formulas are rendered from them
# (writers/xlsx/plan.py).
PLAN_FITS = "fits_recommended"
PLAN_ORDER = ("purchase_usd", "total_gpus", "index")
RENT_ORDER = ("rent_usd",) + PLAN_ORDER
plan_key = operator.attrgetter(*PLAN_ORDER)
rent_key = operator.attrgetter(*RENT_ORDER)


@dataclass(frozen=True)
class Requirement:
    """What a buyer needs, whatever the layout: a model, a workload and the inputs that say what the job
    is (inputs.job_inputs: dtypes, precision, batch, tokens, checkpointing…; for RLHF the actor's, how
    it trains, the other roles' models and GRPO's group size). Results of different requirements are
    never compared with each other, unless the preset declares the differing inputs interchangeable
    (they are then left out of the requirement)."""
    model: str
    workload: str  # a single workload or an RLHF algorithm
    settings: tuple[tuple[str, Any], ...]  # (input name, value); RLHF role models as ("role.critic", model)

    def value(self, name: str) -> Any:
        return dict(self.settings).get(name)


def requirement(result: Result, interchangeable: Iterable[str] = (), goal: Goal | None = None) -> Requirement:
    """A goal joins the requirement; the inputs it sets per layout (a serving goal's batch and prompt) leave it."""
    if not result.is_group:
        return single_requirement(result.lead, interchangeable, goal)
    free = _free(result.workload, interchangeable, goal)
    g = result.estimate.scenario
    s = g.actor
    # LoRA and QLoRA actors ask the same inputs: their workload tells them apart
    extra = [("actor_workload", s.workload)] + [(f"role.{name}", role.model) for name, role in g.roles[1:]]
    if g.algorithm == "grpo":
        extra.append(("group_size", dict(g.settings)["group_size"]))
    settings = [(n, getattr(s, n)) for n in job_inputs(result.workload, s.workload) if n not in free]
    return Requirement(result.model, result.workload, tuple(settings + [(k, v) for k, v in extra if k not in free]))


def single_requirement(s: Scenario, interchangeable: Iterable[str] = (), goal: Goal | None = None) -> Requirement:
    """The requirement of a single model's scenario."""
    free = _free(s.workload, interchangeable, goal)
    extra = [(k, v) for k, v in (goal.settings(s.workload) if goal else ()) if k not in free]
    return Requirement(s.model, s.workload,
                       tuple([(n, getattr(s, n)) for n in requirement_inputs(s.workload, interchangeable, goal)] + extra))


def requirement_inputs(workload: str, interchangeable: Iterable[str] = (), goal: Goal | None = None) -> list[str]:
    """The inputs whose values tell a single model's requirements apart, besides its model."""
    free = _free(workload, interchangeable, goal)
    return [n for n in job_inputs(workload, workload) if n not in free]


def _free(workload: str, interchangeable: Iterable[str], goal: Goal | None) -> set[str]:
    """Job inputs left out of a requirement: those declared interchangeable, and those a goal sets."""
    return set(interchangeable) | {part.sets for part in (goal.sets(workload) if goal else ())}


class _OfRequirement:
    """The model and workload of a requirement's plan entry or recommendation."""

    @property
    def model(self) -> str:
        return self.requirement.model

    @property
    def workload(self) -> str:
        return self.requirement.workload


@dataclass(frozen=True)
class PlanEntry(_OfRequirement):
    """The cheapest fitting configuration of one requirement on one GPU type (None: nothing fits)."""
    requirement: Requirement
    gpu: str
    result: Result | None
    num_scenarios: int  # how many scenarios of the sweep were tried for this cell
    most_gpus: int  # the most GPUs (in all) a tried scenario used
    rent: Result | None = None  # the cheapest fitting configuration to rent on this GPU type
    # with a goal that no fitting configuration meets: the fitting one nearest to it (the fastest)
    closest: Result | None = None

    @property
    def fits(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class Recommendation(_OfRequirement):
    """Per requirement: the cheapest fitting option to buy, the cheapest to rent, and the per-GPU-type
    entries (each the cheapest to buy on its GPU type)."""
    requirement: Requirement
    best: PlanEntry | None
    entries: tuple[PlanEntry, ...]
    sample: Result  # one result of the requirement (RLHF: which roles it has)
    cheapest_to_rent: PlanEntry | None = None


@dataclass(frozen=True)
class SensitivitySeries:
    """The recommended budget (k × device total, bytes per GPU: the summary's fit rule) of a headline
    scenario as one input varies."""
    result_index: int
    label: str
    axis: str  # "seq_len", "prompt_len" or "batch_size"
    xs: tuple[int, ...]
    recommended_bytes: tuple[int, ...]
    gpu_limits: tuple[tuple[str, int], ...]  # (GPU name, memory bytes) for the "runs out" lines


@dataclass(frozen=True)
class Report:
    preset: Preset
    generated_at: str  # ISO date-time, injected by the caller (SOURCE_DATE_EPOCH honoured there)
    version: str
    assumptions: Mapping[str, float]
    gpus: Mapping[str, GpuSpec]  # with the preset's price overrides
    results: Results
    skipped: tuple[Skipped, ...]
    recommendations: tuple[Recommendation, ...]
    sensitivity: tuple[SensitivitySeries, ...]
    notes: tuple[Note, ...]
    validation: tuple[ValidationRow, ...]  # peak memory: measured, and published fine-tuning figures
    validation_figures: tuple[PublishedFigure, ...]  # published time and serving figures
    validation_excluded: tuple[Excluded, ...]  # published records not compared, with why
    # The catalogs as the formulas read them (Models rows hold config fields and shape terms), and
    # the model specs (their type and source, for the workbook's catalog sheet).
    tables: Mapping[str, Mapping[str, Mapping[str, float]]] = field(repr=False, compare=False)
    models: Mapping[str, ModelSpec] = field(repr=False, compare=False)
    interchangeable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # matrix -> inputs the plan picks
    goals: Mapping[str, Goal] = field(default_factory=dict)  # matrix -> what its picks must meet

    def requirement_of(self, result: Result) -> Requirement:
        """The requirement a result answers, with its matrix's interchangeable inputs and goal."""
        return requirement(result, self.interchangeable.get(result.matrix, ()), self.goals.get(result.matrix))

    @cached_property  # read per GPU by the writers; a sweep has 100,000 results
    def gpu_types(self) -> tuple[str, ...]:
        """GPU types used by the sweep, in catalog order."""
        return used_gpu_types(self.results, self.gpus)

    @property
    def validation_summary(self) -> dict[str, float] | None:
        return summary(list(self.validation)) if self.validation else None


def priced_gpus(gpus: Mapping[str, GpuSpec], preset: Preset) -> dict[str, GpuSpec]:
    out = dict(gpus)
    for name, prices in preset.prices.items():
        if name not in out:
            from .errors import unknown_name
            raise unknown_name("GPU", name, gpus, source=preset.source, key_path=f"prices.{name}")
        out[name] = replace(out[name], **prices)
    return out


def used_gpu_types(results: Sequence[Result], gpus: Mapping[str, GpuSpec]) -> tuple[str, ...]:
    """The GPU types some result runs on, in catalog order."""
    used = results.gpu_names() if isinstance(results, Results) else {r.gpu for r in results}
    return tuple(g for g in gpus if g in used)


def _slowness(r: Result) -> float:
    """Time to train, or (serving) minus the decode speed per user: the fastest configuration is the least."""
    v = r.estimate
    return v["time_to_train_seconds"] if v["is_train"] else -v["tokens_per_s_per_user"]


def recommend(results: Sequence[Result], gpu_types: Sequence[str],
              interchangeable: Mapping[str, Iterable[str]] = {},
              goals: Mapping[str, Goal] = {}) -> tuple[Recommendation, ...]:
    """Cheapest fitting (recommended budget within GPU memory) per requirement × GPU type, among the
    results that meet their matrix's goal. interchangeable: matrix name -> the job inputs its preset
    lets the plan choose; goals: matrix name -> its goal."""
    if goals or not any(isinstance(p, BlockResults) for p in getattr(results, "parts", ())):
        return _recommend_objects(results, gpu_types, interchangeable, goals)
    cells: dict[Requirement, dict[str, _Cell]] = {}
    first: dict[Requirement, int] = {}  # a requirement's first result
    for part in results.parts:
        if isinstance(part, BlockResults):
            _block_cells(part, interchangeable.get(part.block.matrix, ()), cells, first)
            continue
        for r in part:
            need = requirement(r, interchangeable.get(r.matrix, ()))
            first.setdefault(need, r.index)
            cells.setdefault(need, {}).setdefault(r.gpu, _Cell()).add(
                1, r.total_gpus, plan_key(r) if r.estimate[PLAN_FITS] else None, rent_key(r) if r.estimate[PLAN_FITS] else None)
    recs = []
    for need, by_gpu in cells.items():
        entries = [PlanEntry(need, gpu, c.pick(results, c.best), c.tried, c.most_gpus, c.pick(results, c.rent))
                   for gpu in gpu_types if (c := by_gpu.get(gpu))]
        fitting = [e for e in entries if e.fits]
        best = min(fitting, key=lambda e: plan_key(e.result), default=None)
        rent_entry = min(fitting, key=lambda e: rent_key(e.rent), default=None)
        rent_entry = replace(rent_entry, result=rent_entry.rent) if rent_entry else None
        recs.append(Recommendation(need, best, tuple(entries), results[first[need] - 1], rent_entry))
    return tuple(recs)


class _Cell:
    """What the plan keeps of one requirement × GPU type: how many results were tried, the most GPUs
    one used, and the least plan and rent keys among those that fit (each ends with the index)."""
    __slots__ = ("tried", "most_gpus", "best", "rent")

    def __init__(self):
        self.tried, self.most_gpus, self.best, self.rent = 0, 0, None, None

    def add(self, tried: int, most_gpus: int, best: tuple | None, rent: tuple | None) -> None:
        self.tried += tried
        self.most_gpus = max(self.most_gpus, most_gpus)
        if best is not None and (self.best is None or best < self.best):
            self.best = best
        if rent is not None and (self.rent is None or rent < self.rent):
            self.rent = rent

    @staticmethod
    def pick(results: Sequence[Result], key: tuple | None) -> Result | None:
        return None if key is None else results[key[-1] - 1]


def _block_cells(part: BlockResults, interchangeable: Iterable[str], cells: dict, first: dict) -> None:
    """_Cells of a block's rows, computed on columns: the same rankings (PLAN_ORDER, RENT_ORDER) over
    the same requirements as the loop over Result objects."""
    block = part.block
    fields: dict[str, list] = {PLAN_FITS: [], "purchase_usd": [], "rent_usd": []}
    for chunk in part.chunks():
        for name, parts in fields.items():
            parts.append(chunk.numbers(name))
    columns = {name: np.concatenate(parts) for name, parts in fields.items()}
    columns["total_gpus"] = block.numbers("num_gpus")  # a single model's Result.total_gpus
    columns["index"] = part.first_index + np.arange(block.size, dtype=np.int64)
    need_names, need_first, need_of = block_requirements(block, interchangeable)
    gpu_key, _ = block.axis_codes(("gpu",))
    gpus, gpu_first, gpu_of = np.unique(gpu_key, return_index=True, return_inverse=True)
    cell = need_of.astype(np.int64) * len(gpus) + gpu_of
    n_cells = len(need_names) * len(gpus)
    tried = np.bincount(cell, minlength=n_cells)
    most = np.zeros(n_cells, dtype=np.int64)
    np.maximum.at(most, cell, columns["total_gpus"])
    fit = np.flatnonzero(columns[PLAN_FITS].astype(bool))
    picks = {}
    for name, order in (("best", PLAN_ORDER), ("rent", RENT_ORDER)):
        ranked = fit[np.lexsort([columns[f][fit] for f in reversed(order)] + [cell[fit]])]
        starts = np.flatnonzero(np.r_[True, cell[ranked][1:] != cell[ranked][:-1]]) if len(ranked) else ranked
        picks[name] = {int(cell[row]): tuple(columns[f][row].item() for f in order) for row in ranked[starts].tolist()}
    gpu_names = [block.scenario(int(k)).gpu for k in gpu_first.tolist()]
    for n in np.argsort(need_first, kind="stable").tolist():
        need = need_names[n]
        first.setdefault(need, part.first_index + int(need_first[n]))
        by_gpu = cells.setdefault(need, {})
        for g, gpu in enumerate(gpu_names):
            c = n * len(gpus) + g
            if tried[c]:
                by_gpu.setdefault(gpu, _Cell()).add(int(tried[c]), int(most[c]), picks["best"].get(c), picks["rent"].get(c))


def block_requirements(block: SweepBlock, interchangeable: Iterable[str]) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
    """A block's distinct requirements (a block has no goal), the first row of each, and each row's
    (an index into them), found on its axes."""
    key, _ = block.axis_codes(["model"] + requirement_inputs(block.workload, interchangeable))
    _, first, of = np.unique(key, return_index=True, return_inverse=True)
    return [single_requirement(block.scenario(int(k)), interchangeable) for k in first.tolist()], first, of


def _recommend_objects(results: Sequence[Result], gpu_types: Sequence[str], interchangeable: Mapping[str, Iterable[str]],
                       goals: Mapping[str, Goal]) -> tuple[Recommendation, ...]:
    """recommend() over Result objects, goals included."""
    cells: dict[Requirement, dict[str, list[Result]]] = {}
    goal_of: dict[Requirement, Goal | None] = {}
    for r in results:
        goal = goals.get(r.matrix)
        need = requirement(r, interchangeable.get(r.matrix, ()), goal)
        cells.setdefault(need, {}).setdefault(r.gpu, []).append(r)
        goal_of[need] = goal
    recs = []
    for need, by_gpu in cells.items():
        entries = []
        goal = goal_of[need]
        for gpu in gpu_types:
            tried = by_gpu.get(gpu, [])
            if not tried:
                continue
            fitting = [r for r in tried if r.estimate[PLAN_FITS]]
            meeting = [r for r in fitting if goal is None or goal.meets(r.estimate)]
            entries.append(PlanEntry(need, gpu, min(meeting, key=plan_key, default=None), len(tried),
                                     max(r.total_gpus for r in tried), min(meeting, key=rent_key, default=None),
                                     None if meeting else min(fitting, key=_slowness, default=None)))
        fitting = [e for e in entries if e.fits]
        best = min(fitting, key=lambda e: plan_key(e.result), default=None)
        # renting: the cheapest fitting result of the requirement on any GPU type, as the entry of its GPU type
        rent_entry = min(fitting, key=lambda e: rent_key(e.rent), default=None)
        rent_entry = replace(rent_entry, result=rent_entry.rent) if rent_entry else None
        sample = next(r for rs in by_gpu.values() for r in rs)
        recs.append(Recommendation(need, best, tuple(entries), sample, rent_entry))
    return tuple(recs)


def _sensitivity(estimator: Estimator, recs: Sequence[Recommendation], gpus: Mapping[str, GpuSpec],
                 gpu_types: Sequence[str]) -> tuple[SensitivitySeries, ...]:
    """Per model × workload, its first requirement's pick as sequence length and batch vary."""
    limits = tuple((g, gpus[g].memory_bytes) for g in gpu_types)
    series = []
    seen = set()
    for rec in recs:
        if rec.best is None or rec.best.result.is_group or (rec.model, rec.workload) in seen:
            continue
        seen.add((rec.model, rec.workload))
        r = rec.best.result
        s = r.estimate.scenario
        axis = "prompt_len" if s.workload == "inference" else "seq_len"
        for name, xs in ((axis, SENSITIVITY_LENGTHS), ("batch_size", SENSITIVITY_BATCHES)):
            ys = tuple(int(estimator.estimate(replace(s, **{name: x}))["recommended"]) for x in xs)
            series.append(SensitivitySeries(r.index, r.label, name, xs, ys, limits))
    return tuple(series)


def build_report(preset: Preset, expansion: Expansion, estimator: Estimator, *, generated_at: str, version: str,
                 notes: Sequence[Note] = (), validation: Sequence[ValidationRow] = (),
                 validation_figures: Sequence[PublishedFigure] = (),
                 validation_excluded: Sequence[Excluded] = ()) -> Report:
    parts: list[tuple[Result, ...] | BlockResults] = []
    index = 1
    for part in expansion.scenarios.blocks:
        if isinstance(part, SweepBlock):
            parts.append(BlockResults(index, part, estimator))
        else:
            singles = iter(estimator.estimate_all([s for _, s in part if not isinstance(s, RlhfScenario)]))
            parts.append(tuple(Result(i, matrix, estimator.estimate_group(s) if isinstance(s, RlhfScenario)
                                      else next(singles)) for i, (matrix, s) in enumerate(part, start=index)))
        index += len(parts[-1])
    results = Results(parts)
    gpu_types = used_gpu_types(results, estimator.gpus)
    recs = recommend(results, gpu_types, expansion.interchangeable, expansion.goals)
    return Report(
        preset=preset, generated_at=generated_at, version=version, assumptions=dict(estimator.assumptions),
        gpus=estimator.gpus, results=results, skipped=expansion.skipped, recommendations=recs,
        sensitivity=_sensitivity(estimator, recs, estimator.gpus, gpu_types), notes=tuple(notes),
        validation=tuple(validation), validation_figures=tuple(validation_figures),
        validation_excluded=tuple(validation_excluded), tables=estimator.tables,
        models=estimator.specs, interchangeable=dict(expansion.interchangeable), goals=dict(expansion.goals),
    )
