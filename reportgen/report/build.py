"""The Report: everything every writer needs, computed once and purely.

build_report(preset, expansion, estimator, …) -> Report. Writers (JSON, workbook, HTML, PDF) read
the Report; the numbers they show are its terms and fields.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, ClassVar, Iterable, Iterator, Mapping, Sequence

from ..model.arrays import np

from ..model.catalog import GpuSpec
from ..model.estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario
from ..planning.fleet import Decision, PlannedJob, decide
from ..planning.goals import GOAL_TERMS, Goal
from ..model.inputs import job_inputs
from ..model.spec import ModelSpec
from .notes import Note
from ..scenarios.presets import Expansion, Preset, Skipped
from ..planning.ranking import CLOSEST_ORDER, PLAN_FITS, PLAN_ORDER, RENT_ORDER, first_rows
from ..scenarios.sweep import Parts, SweepBlock, joined_columns, small_batches
from ..model.vector import CHUNK_ROWS, Chunk
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
        return self.estimate.scenario.lead if self.is_group else self.estimate.scenario

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

    @property
    def plan_seconds(self) -> float:
        return self.estimate["plan_seconds"]

    def result(self) -> "Result":
        return self


@dataclass(frozen=True)
class ScenarioRow:
    """A sweep block's row before it is estimated: what grouping and labels read (its inputs), not its terms;
    result() estimates it. The HTML of a 100,000-scenario sweep reads every row's inputs but only 1,000 rows'
    terms per group: holding 100,000 Results took 1.7 GB (#35)."""
    index: int
    matrix: str
    lead: Scenario
    part: "BlockResults" = field(repr=False, compare=False)
    is_group: ClassVar[bool] = False

    @property
    def workload(self) -> str:
        return self.lead.workload

    @property
    def gpu(self) -> str:
        return self.lead.gpu

    @property
    def total_gpus(self) -> int:
        return self.lead.num_gpus

    def result(self) -> Result:
        return self.part[self.index - self.part.first_index]


# A row without this input in InputColumns: a single scenario has no RLHF group's placement or other roles.
ABSENT = object()


@dataclass(frozen=True)
class InputColumns:
    """One results part's rows of one matrix as dict-encoded columns: what labels and grouping read, without a
    Scenario per row (a 1,000,000-row sweep's HTML made 1,000,000 of them per pass over its rows, #35)."""
    indices: np.ndarray  # each row's Result.index, ascending
    columns: Mapping[str, tuple[tuple, np.ndarray | None]]  # name -> (values, each row's position in them, or
    # None: values[0] in every row)
    keys: np.ndarray  # each row's configuration within the part: equal numbers for rows alike but for the GPU type
    row: Callable[[int], "Result | ScenarioRow"]  # the part's k-th row
    objects: bool  # the rows are Result objects (their estimates are at hand)

    @property
    def size(self) -> int:
        return len(self.indices)

    @classmethod
    def of_rows(cls, rows: Sequence[Result], inputs_of: Callable[[Result], Mapping[str, Any]],
                key_of: Callable[[Result], tuple]) -> "InputColumns":
        dicts = [inputs_of(r) for r in rows]
        columns = {}
        for name in dict.fromkeys(n for d in dicts for n in d):
            seen: dict = {}  # (type, value) -> position: 1 and True are different values here
            codes = [seen.setdefault((type(v), v), len(seen)) for v in (d.get(name, ABSENT) for d in dicts)]
            columns[name] = (tuple(v for _, v in seen), np.array(codes, dtype=np.int64))
        known: dict = {}
        keys = np.array([known.setdefault(key_of(r), len(known)) for r in rows], dtype=np.int64)
        return cls(np.array([r.index for r in rows], dtype=np.int64), columns, keys, rows.__getitem__, True)


class _ObjectRows:
    """The questions the Results ask of a part, answered from its rows as Result objects (self: a sequence of them)."""

    def rows(self, matrix: str | None = None) -> Iterator[Result]:
        return (r for r in self if matrix is None or r.matrix == matrix)

    def matrices(self) -> Iterable[str]:
        return dict.fromkeys(r.matrix for r in self)

    def gpu_names(self) -> set[str]:
        return {r.gpu for r in self}

    def single_scenarios(self) -> int:
        """Its single-model scenarios: one a row, an RLHF group's roles each."""
        return sum(len(r.estimate.roles) if r.is_group else 1 for r in self)

    def input_columns(self, matrix: str, inputs_of: Callable[[Result], Mapping[str, Any]],
                      key_of: Callable[[Result], tuple]) -> InputColumns | None:
        rows = tuple(self.rows(matrix))
        return InputColumns.of_rows(rows, inputs_of, key_of) if rows else None

    def requirements(self, interchangeable: Mapping[str, Iterable[str]], goals: Mapping[str, Goal]
                     ) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
        """The distinct requirements, the first row of each, and each row's (an index into them)."""
        return distinct_requirements(requirement(r, interchangeable.get(r.matrix, ()), goals.get(r.matrix))
                                     for r in self)

    def plan_columns(self) -> dict[str, np.ndarray]:
        # an RLHF group has no goal (a preset refuses one), nor the terms a goal reads
        columns = {k: np.array([r.estimate.values.get(k, 0) for r in self], dtype=float) for k in _PLAN_TERMS}
        columns["total_gpus"] = np.array([r.total_gpus for r in self], dtype=np.int64)
        columns["index"] = np.array([r.index for r in self], dtype=np.int64)
        return columns

    def gpu_positions(self, position: Mapping[str, int]) -> np.ndarray:
        return np.array([position[r.gpu] for r in self], dtype=np.int64)

    def goal_met(self, columns: Mapping[str, np.ndarray], goals: Mapping[str, Goal]) -> np.ndarray:
        met = np.ones(len(self), dtype=bool)
        for matrix in set(self.matrices()) & set(goals):
            rows = np.array([r.matrix == matrix for r in self])
            met[rows] = goals[matrix].met({k: v[rows] for k, v in columns.items()})
        return met


class ResultRun(_ObjectRows, tuple):
    """Result objects in index order (a fleet's planned jobs; the scenarios of expand(columnar=False), the test
    oracle of the columnar path): a part of the Results with the same questions as a sweep's BlockResults."""


class GroupResults(_ObjectRows, Sequence):
    """A run of RLHF groups, computed as columns (Estimator.estimate_groups); a group becomes a Result when read
    (kept: the writers read them again). The plan reads its columns and its groups' settings, not its Results."""

    def __init__(self, first_index: int, pairs: Sequence[tuple[str, RlhfScenario]], estimator: Estimator):
        self.first_index = first_index
        self.matrix_of = tuple(m for m, _ in pairs)
        self.columns = estimator.estimate_groups([g for _, g in pairs])
        self._made: list[Result | None] = [None] * len(pairs)

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(self[i] for i in range(*k.indices(len(self))))
        made = self._made[k]
        if made is None:
            k = range(len(self))[k]
            made = self._made[k] = Result(self.first_index + k, self.matrix_of[k], self.columns.estimate(k))
        return made

    def matrices(self) -> Iterable[str]:
        return dict.fromkeys(self.matrix_of)

    def gpu_names(self) -> set[str]:
        return {g.lead.gpu for g in self.columns.groups}

    def single_scenarios(self) -> int:
        return sum(len(g.roles) for g in self.columns.groups)

    def requirements(self, interchangeable: Mapping[str, Iterable[str]], goals: Mapping[str, Goal]
                     ) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
        return distinct_requirements(group_requirement(g, interchangeable.get(m, ()), goals.get(m))
                                     for m, g in zip(self.matrix_of, self.columns.groups))

    def plan_columns(self) -> dict[str, np.ndarray]:
        columns = {k: self.columns.numbers(k) for k in _PLAN_TERMS}
        columns["total_gpus"] = self.columns.numbers("total_gpus").astype(np.int64)
        columns["index"] = self.first_index + np.arange(len(self), dtype=np.int64)
        return columns

    def gpu_positions(self, position: Mapping[str, int]) -> np.ndarray:
        return np.array([position[g.lead.gpu] for g in self.columns.groups], dtype=np.int64)

    def goal_met(self, columns: Mapping[str, np.ndarray], goals: Mapping[str, Goal]) -> np.ndarray:
        return np.ones(len(self), dtype=bool)  # a preset refuses a goal for RLHF groups


class SmallBlocks:
    """Small blocks' terms, computed together (sweep.small_batches: a call of the term table costs about as
    much as a thousand rows). The last batch computed is kept: a writer reads the blocks in order."""

    def __init__(self, blocks: Sequence[SweepBlock], estimator: Estimator):
        self.blocks, self.estimator = blocks, estimator
        self.batches = small_batches(blocks)
        self.place: dict[int, tuple[int, int]] = {}  # id(block) -> (its batch, its first row there)
        for b, batch in enumerate(self.batches):
            start = 0
            for same in batch:
                self.place.update((id(blocks[i]), (b, start)) for i in same)
                start += blocks[same[0]].size
        self._last: tuple[int, Chunk] | None = None

    def chunk(self, block: SweepBlock) -> Chunk | None:
        """Every term of a small block's rows, or None for a block not computed here."""
        if id(block) not in self.place:
            return None
        b, start = self.place[id(block)]
        last = self._last  # (read once: writers in threads may move it on)
        if last is None or last[0] != b:
            (chunk,) = self.estimator.estimate_chunks(*joined_columns([self.blocks[same[0]] for same in self.batches[b]]))
            last = self._last = (b, chunk)
        return last[1].take(np.arange(start, start + block.size))


class BlockResults:
    """The results of a SweepBlock, computed as term columns; a row becomes a Result when read. small: the
    preset's small blocks, computed together (None: this block computes its own)."""

    def __init__(self, first_index: int, block: SweepBlock, estimator: Estimator, small: SmallBlocks | None = None):
        self.first_index, self.block, self.estimator, self.small = first_index, block, estimator, small
        self._made: list[Result] | None = None

    def __len__(self) -> int:
        return self.block.size

    def chunks(self) -> Iterator[Chunk]:
        """Every term of the block's rows, chunk by chunk."""
        chunk = self.small.chunk(self.block) if self.small is not None else None
        return iter((chunk,)) if chunk is not None else self.estimator.estimate_chunks(self.block.columns(),
                                                                                        self.block.size)

    def __getitem__(self, k: int) -> Result:
        if self._made is not None:
            return self._made[k]
        return Result(self.first_index + k, self.block.matrix, self.estimator.estimate(self.block.scenario(k)))

    def rows(self, matrix: str | None = None) -> Iterator[Result | ScenarioRow]:
        """Every row (of `matrix`) as its inputs (its Results where they are already made), none of them kept."""
        if matrix is not None and matrix != self.block.matrix:
            return
        if self._made is not None:
            yield from self._made
            return
        for start in range(0, self.block.size, CHUNK_ROWS):
            scenarios = self.block.scenarios(start, min(start + CHUNK_ROWS, self.block.size))
            yield from (ScenarioRow(self.first_index + k, self.block.matrix, s, self)
                        for k, s in enumerate(scenarios, start))

    def row(self, k: int) -> ScenarioRow:
        return ScenarioRow(self.first_index + k, self.block.matrix, self.block.scenario(k), self)

    def matrices(self) -> Iterable[str]:
        return (self.block.matrix,)

    def single_scenarios(self) -> int:
        return self.block.size

    def gpu_names(self) -> set[str]:
        return self.block.gpu_names()

    def input_columns(self, matrix: str, inputs_of: Callable[[Result], Mapping[str, Any]] | None = None,
                      key_of: Callable[[Result], tuple] | None = None) -> InputColumns | None:
        """The block's rows as InputColumns (a single scenario's inputs: an axis's values and codes, the value every
        row has for the rest), from its axes alone (inputs_of and key_of are a ResultRun's)."""
        b = self.block
        if matrix != b.matrix or not b.size:
            return None
        columns: dict[str, tuple[tuple, np.ndarray | None]] = {
            n: ((v,), None) for n, v in b.scenario(0).inputs().items()}
        for j, (name, vals) in enumerate(zip(b.names, b.values)):
            if len(vals) > 1 and name != "name":  # (explicit scenarios' names: not inputs)
                columns[name] = (tuple(vals), b.codes(j))
        keys, _ = b.axis_codes([n for n in b.names if n not in ("gpu", "name")])
        return InputColumns(np.arange(self.first_index, self.first_index + b.size, dtype=np.int64), columns, keys,
                            self.row, False)

    def requirements(self, interchangeable: Mapping[str, Iterable[str]], goals: Mapping[str, Goal]
                     ) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
        """As ResultRun.requirements, found on the block's axes."""
        return block_requirements(self.block, interchangeable.get(self.block.matrix, ()), goals.get(self.block.matrix))

    def plan_columns(self) -> dict[str, np.ndarray]:
        chunks = list(self.chunks())
        columns = {k: np.concatenate([c.numbers(k) for c in chunks]) for k in _PLAN_TERMS}
        columns["total_gpus"] = self.block.numbers("num_gpus")  # a single model's total
        columns["index"] = self.first_index + np.arange(len(self), dtype=np.int64)
        return columns

    def gpu_positions(self, position: Mapping[str, int]) -> np.ndarray:
        key, _ = self.block.axis_codes(("gpu",))
        _, first, of = np.unique(key, return_index=True, return_inverse=True)
        return np.array([position[self.block.scenario(int(k)).gpu] for k in first.tolist()], dtype=np.int64)[of]

    def goal_met(self, columns: Mapping[str, np.ndarray], goals: Mapping[str, Goal]) -> np.ndarray:
        goal = goals.get(self.block.matrix)
        return np.ones(len(self), dtype=bool) if goal is None else goal.met(columns)

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

    def rows(self, matrix: str | None = None) -> Iterator[Result | ScenarioRow]:
        """Every result (of `matrix`) in order, as what grouping and labels read: Result objects, and a block's
        rows unestimated (ScenarioRow.result() estimates one), none of them kept."""
        for part in self._parts_of(matrix):
            yield from part.rows(matrix)

    def _parts_of(self, matrix: str | None) -> Sequence:
        """The parts that hold results of `matrix` (every part for None), in order: a preset may have
        thousands of matrices, each asked for."""
        return self.parts if matrix is None else self._by_matrix.get(matrix, ())

    @cached_property
    def _by_matrix(self) -> dict[str, list]:
        out: dict[str, list] = {}
        for part in self.parts:
            for matrix in part.matrices():
                out.setdefault(matrix, []).append(part)
        return out

    def input_columns(self, matrix: str, inputs_of: Callable[[Result], Mapping[str, Any]],
                      key_of: Callable[[Result], tuple]) -> list[InputColumns]:
        """`matrix`'s rows as InputColumns, part by part in order: a block's from its axes; Result objects' by
        inputs_of(result) (a single scenario's must be its inputs, as a block's are) and key_of(result)."""
        return [c for c in (part.input_columns(matrix, inputs_of, key_of) for part in self._parts_of(matrix))
                if c is not None]

    def matrices(self) -> list[str]:
        """The results' matrices, in order of their first result."""
        return list(dict.fromkeys(m for part in self.parts for m in part.matrices()))

    def gpu_names(self) -> set[str]:
        """The GPU types the results run on (a block's without making its Results)."""
        return set().union(*(part.gpu_names() for part in self.parts))


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


# How an RLHF group splits its rank's sequences into passes: how it runs, not what the job is.
GROUP_PASS_INPUTS = ("grad_accum_steps",)


def requirement(result: Result, interchangeable: Iterable[str] = (), goal: Goal | None = None) -> Requirement:
    """A goal joins the requirement; the inputs it sets per layout (a serving goal's batch and prompt) leave it."""
    if not result.is_group:
        return single_requirement(result.lead, interchangeable, goal)
    return group_requirement(result.estimate.scenario, interchangeable, goal)


def group_requirement(g: RlhfScenario, interchangeable: Iterable[str] = (), goal: Goal | None = None) -> Requirement:
    """The requirement of an RLHF group: its actor's job, how it trains and its other roles' models."""
    free = _free(g.algorithm, interchangeable, goal)
    s = g.actor
    # LoRA and QLoRA actors ask the same inputs: their workload tells them apart
    extra = [("actor_workload", s.workload)] + [(f"role.{name}", role.model) for name, role in g.job_roles[1:]]
    if g.algorithm == "grpo":
        extra.append(("group_size", dict(g.settings)["group_size"]))
    prompts = dict(g.settings).get("prompts_per_iteration")
    if prompts:  # the iteration's prompts, not a rank's share of them (which each layout sets)
        extra.append(("prompts_per_iteration", prompts))
    # A rank's prompts per iteration are its batch × accumulation, however the roles' micro-batches split them.
    values = {**{n: getattr(s, n) for n in job_inputs(g.algorithm, s.workload)},
              "batch_size": s.batch_size * s.grad_accum_steps}
    settings = [(n, v) for n, v in values.items() if n not in free and n not in GROUP_PASS_INPUTS
                and not (prompts and n == "batch_size")]
    return Requirement(g.lead.model, g.algorithm, tuple(settings + [(k, v) for k, v in extra if k not in free]))


def distinct_requirements(needs: Iterable[Requirement]) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
    """Rows' requirements as the distinct ones, the first row of each, and each row's (an index into them)."""
    distinct: dict[Requirement, int] = {}
    first: list[int] = []
    of = []
    for k, need in enumerate(needs):
        if need not in distinct:
            distinct[need] = len(distinct)
            first.append(k)
        of.append(distinct[need])
    return list(distinct), np.array(first, dtype=np.int64), np.array(of, dtype=np.int64)


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
    """The recommended budget (k × device total, bytes per GPU) of a headline scenario as one input
    varies over the values it can run (lengths within the model's positions), and whether each point fits with k
    (the term fits_recommended: the budget, and for a serving engine its KV pool against the users' demand) on each
    GPU type with the same layout, where it can run there."""
    result_index: int
    label: str
    axis: str  # "seq_len", "prompt_len" or "batch_size"
    xs: tuple[int, ...]
    recommended_bytes: tuple[int, ...]  # on the pick's GPU type
    gpu_limits: tuple[tuple[str, int], ...]  # (GPU name, memory bytes) for the "runs out" lines
    fits: tuple[tuple[str, tuple[bool, ...]], ...]  # (GPU name, fits_recommended per x)
    cut: bool = False  # larger values were left out: the pick cannot run them (a length past the model's context)


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
    decision: Decision | None = None  # the fleet for the preset's purchase section, if it has one
    # GPU types the preset's datacenter_only left out, and how many combinations they had
    left_out: tuple[tuple[str, tuple[str, ...], int], ...] = ()

    def matrix_name_in(self, name: str, lang: str) -> str:
        """A matrix's name in `lang`: a purchase job's (its scenarios form a matrix of its name), else the preset's."""
        job = next((j for j in self.decision.portfolio.jobs if j.name == name), None) if self.decision else None
        return job.name_in(lang) if job else self.preset.matrix_name_in(name, lang)

    def requirement_of(self, result: Result) -> Requirement:
        """The requirement a result answers, with its matrix's interchangeable inputs and goal."""
        return requirement(result, self.interchangeable.get(result.matrix, ()), self.goals.get(result.matrix))

    @cached_property  # read per GPU by the writers; a sweep has 100,000 results
    def gpu_types(self) -> tuple[str, ...]:
        """GPU types used by the sweep, in catalog order."""
        return used_gpu_types(self.results, self.gpus)

    @property
    def validation_summary(self) -> list[dict[str, Any]]:
        return summary(self.validation)


def priced_gpus(gpus: Mapping[str, GpuSpec], preset: Preset) -> dict[str, GpuSpec]:
    out = dict(gpus)
    for name, prices in preset.prices.items():
        if name not in out:
            from ..errors import unknown_name
            raise unknown_name("GPU", name, gpus, source=preset.source, key_path=f"prices.{name}")
        out[name] = replace(out[name], **prices)
    return out


def used_gpu_types(results: Sequence[Result], gpus: Mapping[str, GpuSpec]) -> tuple[str, ...]:
    """The GPU types some result runs on, in catalog order."""
    used = results.gpu_names() if isinstance(results, Results) else {r.gpu for r in results}
    return tuple(g for g in gpus if g in used)


def block_requirements(block: SweepBlock, interchangeable: Iterable[str], goal: Goal | None = None
                       ) -> tuple[list[Requirement], np.ndarray, np.ndarray]:
    """A block's distinct requirements, the first row of each, and each row's (an index into them), found
    on its axes (its matrix's goal, which sets none of its inputs, joins every one)."""
    key, _ = block.axis_codes(["model"] + requirement_inputs(block.workload, interchangeable, goal))
    _, first, of = np.unique(key, return_index=True, return_inverse=True)
    return [single_requirement(block.scenario(int(k)), interchangeable, goal) for k in first.tolist()], first, of


def requirement_numbers(results: Results, interchangeable: Mapping[str, Iterable[str]] = {},
                        goals: Mapping[str, Goal] = {}) -> tuple[list[Requirement], list[np.ndarray]]:
    """The requirements of the results in the order they first appear, and per part of the results each
    row's requirement (its place in that list). A sweep block's are found on its axes."""
    numbers: dict[Requirement, int] = {}
    per_part = []
    for part in results.parts:
        distinct, first, of = part.requirements(interchangeable, goals)
        number = np.empty(len(distinct), dtype=np.int64)
        for d in np.argsort(first, kind="stable").tolist():
            number[d] = numbers.setdefault(distinct[d], len(numbers))
        per_part.append(number[of])
    return list(numbers), per_part


# The term columns the plan reads of every result: its rankings' keys and what a goal reads.
_PLAN_TERMS = tuple(dict.fromkeys((PLAN_FITS, "purchase_usd", "rent_usd", "plan_seconds") + GOAL_TERMS))


def recommend(results: Results | Sequence[Result], gpu_types: Sequence[str], interchangeable: Mapping[str, Iterable[str]] = {},
              goals: Mapping[str, Goal] = {}) -> tuple[Recommendation, ...]:
    """Per requirement × GPU type, the first fitting result by the plan's orders (ranking.py) among those
    that meet their matrix's goal, computed on columns. interchangeable: matrix name -> the job inputs
    its preset lets the plan choose; goals: matrix name -> its goal."""
    results = results if isinstance(results, Results) else Results([ResultRun(results)])
    needs, per_part = requirement_numbers(results, interchangeable, goals)
    if not needs:
        return ()
    parts = [part.plan_columns() for part in results.parts]
    columns = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    need_of = np.concatenate(per_part)
    fits = columns[PLAN_FITS] != 0
    meets = np.concatenate([part.goal_met(p, goals) for part, p in zip(results.parts, parts)])
    picked = fits & meets
    position = {g: i for i, g in enumerate(gpu_types)}
    cell = need_of * len(gpu_types) + np.concatenate([part.gpu_positions(position) for part in results.parts])
    n_cells = len(needs) * len(gpu_types)
    tried = np.bincount(cell, minlength=n_cells)
    most = np.zeros(n_cells, dtype=np.int64)
    np.maximum.at(most, cell, columns["total_gpus"])
    best = first_rows(PLAN_ORDER, columns, picked, cell)
    rent = first_rows(RENT_ORDER, columns, picked, cell)
    closest = first_rows(CLOSEST_ORDER, columns, fits, cell)
    # across GPU types: the first of each requirement's picks by the same orders
    best_of_need = first_rows(PLAN_ORDER, columns, np.isin(np.arange(len(cell)), list(best.values())), need_of)
    rent_of_need = first_rows(RENT_ORDER, columns, np.isin(np.arange(len(cell)), list(rent.values())), need_of)
    _, first_row = np.unique(need_of, return_index=True)

    made: dict[int, Result] = {}  # a block's row becomes a Result when read: one object per row

    def result(row: int | None) -> Result | None:
        if row is not None and row not in made:
            made[row] = results[row]
        return None if row is None else made[row]

    recs = []
    for n, need in enumerate(needs):
        entries = {}
        for g, gpu in enumerate(gpu_types):
            c = n * len(gpu_types) + g
            if tried[c]:
                entries[gpu] = PlanEntry(need, gpu, result(best.get(c)), int(tried[c]), int(most[c]),
                                         result(rent.get(c)), None if c in best else result(closest.get(c)))
        top = best_of_need.get(n)
        cheapest_rent = rent_of_need.get(n)
        rent_entry = None
        if cheapest_rent is not None:
            rent_entry = replace(entries[gpu_types[cell[cheapest_rent] % len(gpu_types)]], result=result(cheapest_rent))
        recs.append(Recommendation(need, None if top is None else entries[gpu_types[cell[top] % len(gpu_types)]],
                                   tuple(entries.values()), result(int(first_row[n])), rent_entry))
    return tuple(recs)


def _sensitivity(estimator: Estimator, recs: Sequence[Recommendation], gpus: Mapping[str, GpuSpec],
                 gpu_types: Sequence[str]) -> tuple[SensitivitySeries, ...]:
    """Per model × workload, its first requirement's pick as sequence length and batch vary, on its own GPU
    type (the curve) and on every GPU type of the sweep (the fit of each point)."""
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
        for name, tried in ((axis, SENSITIVITY_LENGTHS), ("batch_size", SENSITIVITY_BATCHES)):
            # the points the pick can run (a length past the model's positions cannot), and on each GPU type those
            # that run there and fit with k
            xs = tuple(x for x in tried if estimator.skip_check(s.with_inputs(**{name: x})) is None)
            if not xs:  # (a model whose context is shorter than the shortest length tried)
                continue
            points = {g: [s.with_inputs(gpu=g, **{name: x}) for x in xs] for g in gpu_types}
            made = {g: estimator.estimate_all(points[g]) for g in gpu_types}
            ys = tuple(int(e["recommended"]) for e in made[s.gpu])
            fits = tuple((g, tuple(bool(e["fits_recommended"]) and estimator.skip_check(p) is None
                                   for p, e in zip(points[g], made[g]))) for g in gpu_types)
            series.append(SensitivitySeries(r.index, r.label, name, xs, ys, limits, fits, xs[-1] < tried[-1]))
    return tuple(series)


def build_report(preset: Preset, expansion: Expansion, estimator: Estimator, *, generated_at: str, version: str,
                 notes: Sequence[Note] = (), validation: Sequence[ValidationRow] = (),
                 validation_figures: Sequence[PublishedFigure] = (),
                 validation_excluded: Sequence[Excluded] = ()) -> Report:
    parts: list[ResultRun | GroupResults | BlockResults] = []
    index = 1
    small = SmallBlocks([p for p in expansion.scenarios.blocks if isinstance(p, SweepBlock)], estimator)
    for part in expansion.scenarios.blocks:
        if isinstance(part, SweepBlock):
            parts.append(BlockResults(index, part, estimator, small))
        elif all(isinstance(s, RlhfScenario) for _, s in part):
            parts.append(GroupResults(index, part, estimator))
        else:
            singles = iter(estimator.estimate_all([s for _, s in part if not isinstance(s, RlhfScenario)]))
            parts.append(ResultRun(Result(i, matrix, estimator.estimate_group(s) if isinstance(s, RlhfScenario)
                                          else next(singles)) for i, (matrix, s) in enumerate(part, start=index)))
        index += len(parts[-1])
    goals = dict(expansion.goals)
    decision = decide(estimator, expansion.purchase, estimator.assumptions) if expansion.purchase else None
    if decision is not None:  # each job's plan on the fleet's GPU type: the detail behind the decision page
        jobs = [(job, planned) for job, planned in _fleet_plans(decision)]
        parts.append(ResultRun(Result(i, job.name, planned.estimate) for i, (job, planned) in enumerate(jobs, start=index)))
        # RLHF groups are planned by memory alone, as a matrix's are: no goal
        goals.update({job.name: job.plan_goal for job, _ in jobs if job.kind != "rlhf"})
        if not parts[-1]:
            parts.pop()
    results = Results(parts)
    gpu_types = used_gpu_types(results, estimator.gpus)
    recs = recommend(results, gpu_types, expansion.interchangeable, goals)
    return Report(
        preset=preset, generated_at=generated_at, version=version, assumptions=dict(estimator.assumptions),
        gpus=estimator.gpus, results=results, skipped=expansion.skipped, recommendations=recs,
        sensitivity=_sensitivity(estimator, recs, estimator.gpus, gpu_types), notes=tuple(notes),
        validation=tuple(validation), validation_figures=tuple(validation_figures),
        validation_excluded=tuple(validation_excluded), tables=estimator.tables,
        models=estimator.specs, interchangeable=dict(expansion.interchangeable), goals=goals, decision=decision,
        left_out=expansion.left_out,
    )


def _fleet_plans(decision: Decision) -> list[tuple[Any, PlannedJob]]:
    """Each job with its plan on the GPU type the fleet runs it on; without a fleet, on the first GPU type
    where it can run at all (jobs that run nowhere are left out)."""
    where = {s.job: p.gpu for p in (decision.choice.best.pools if decision.choice.best else ()) for s in p.slots}
    out = []
    for job in decision.portfolio.jobs:
        per_gpu = decision.planned[job.name]
        gpu = where.get(job.name) or next((g for g, p in per_gpu.items() if isinstance(p, PlannedJob)), None)
        if gpu is not None:
            out.append((job, per_gpu[gpu]))
    return out
