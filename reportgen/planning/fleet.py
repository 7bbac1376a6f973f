"""The period's purchase: one fleet for a portfolio of jobs, its schedule, and buying it against renting.

A portfolio (a preset's `purchase:` section) states the work of a planning horizon: training runs with a
token volume, a release and a deadline; RLHF runs with a number of iterations; served models with their
users, context and speed, from a start date to the horizon's end. Each job is planned per GPU type by
`plan.plan` (its smallest buyable layout that fits and meets its own window), so a job is a rectangle: a
number of GPUs held for a time. GPUs already owned (`owned`) are always part of the fleet, at no purchase
price; beside them at most `max_types` GPU types are bought, each pool a buyable count (above what is owned
of its type); a pool's jobs are scheduled on it (serving jobs hold their GPUs from their start to the
horizon's end; training jobs are placed one at a time, each at the earliest time its GPUs are free, and
must end by their deadline). The fleet chosen is the cheapest to buy (then the fewest GPUs, then the
least owning cost over the horizon), found exactly over every assignment of jobs to GPU types, every
buyable pool size and, for up to EXACT_ORDER_JOBS training jobs per pool, every order of placing them
(earliest deadline first beyond that).

Buying is then compared with renting the same GPU-hours (the GPUs' hourly prices): owning costs the
horizon's share of straight-line depreciation (`amortisation_years`), hosting per GPU-year, and the energy
of the busy GPU-hours (TDP × `server_power_factor` × `pue` at `electricity_usd_per_kwh`; idle draw is
not counted). Beside owned GPUs only the purchase is compared: the new GPUs' costs against renting the
GPU-hours above what the owned GPUs hold at each moment (the owned GPUs' hosting and energy are paid either
way). The break-even utilisation is the share of a GPU's hours it must be busy for owning to cost
what renting does; the break-even month is when the purchase has paid for itself at the portfolio's rate
of use. Nothing here reads files or knows a writer.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from ..model.catalog import GpuSpec, gpu_row
from ..model.estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario, SkipReason
from ..model.formulas import IF, MIN, Expr, Lookup, Var, compile_terms
from .goals import Goal
from .plan import MAX_GPUS, Plan, PlanOption, buyable_counts, plan, plan_run, run_seconds
from ..model.terms import ASSUMPTION_DEFAULTS
from ..model.units import SECONDS_PER

SECONDS_PER_HOUR = 3600
SECONDS_PER_WEEK = SECONDS_PER["w"]
HOURS_PER_YEAR = 365.25 * 24
HOURS_PER_MONTH = HOURS_PER_YEAR / 12
# Every order of a pool's training jobs is tried up to this many (720 orders); beyond, earliest deadline first.
EXACT_ORDER_JOBS = 6


@dataclass(frozen=True)
class JobOption:
    """A job planned on one GPU type: `gpus` held for `seconds` (a run's time; a served model from its start
    to the horizon's end), `busy_gpu_hours` of use (a served model's hours per day only), released at
    `start_seconds`, due by `deadline_seconds`."""
    job: str
    kind: str  # "train", "rlhf" or "serve"
    gpu: str
    gpus: int
    seconds: float
    busy_gpu_hours: float
    start_seconds: float
    deadline_seconds: float

    @property
    def serving(self) -> bool:
        return self.kind == "serve"


@dataclass(frozen=True)
class Slot:
    job: str
    gpus: int
    start_seconds: float
    end_seconds: float
    busy_share: float = 1.0  # busy hours per hour held: a served model's hours per day over 24


@dataclass(frozen=True)
class Pool:
    """num_gpus of one GPU type (owned_gpus of them already owned) and the jobs scheduled on it;
    new_busy_gpu_hours: the busy GPU-hours above the owned GPUs (hours_above_owned), all of them where
    nothing is owned."""
    gpu: str
    num_gpus: int
    slots: tuple[Slot, ...]
    busy_gpu_hours: float
    owned_gpus: int = 0
    new_busy_gpu_hours: float | None = None

    def __post_init__(self):
        if self.new_busy_gpu_hours is None:
            object.__setattr__(self, "new_busy_gpu_hours", hours_above_owned(self.slots, self.owned_gpus)
                               if self.owned_gpus else self.busy_gpu_hours)

    @property
    def new_gpus(self) -> int:
        return self.num_gpus - self.owned_gpus

    def utilisation(self, horizon_seconds: float) -> float:
        return self.busy_gpu_hours / (self.num_gpus * horizon_seconds / SECONDS_PER_HOUR)


def hours_above_owned(slots: Sequence[Slot], owned_gpus: int) -> float:
    """The busy GPU-hours of the GPUs held above owned_gpus: at each moment the GPUs held beyond the owned
    ones, busy in the same share as all the GPUs held then (no job is preferred for the owned GPUs)."""
    moments = sorted({t for s in slots for t in (s.start_seconds, s.end_seconds)})
    total = 0.0
    for start, end in zip(moments, moments[1:]):
        inside = [s for s in slots if s.start_seconds <= start and s.end_seconds >= end]
        held = sum(s.gpus for s in inside)
        if held > owned_gpus:
            busy = sum(s.gpus * s.busy_share for s in inside)
            total += (held - owned_gpus) * busy / held * (end - start) / SECONDS_PER_HOUR
    return total


@dataclass(frozen=True)
class Fleet:
    pools: tuple[Pool, ...]
    purchase_usd: float
    horizon_own_usd: float  # depreciation share + hosting + energy over the horizon

    @property
    def num_gpus(self) -> int:
        return sum(p.num_gpus for p in self.pools)

    def key(self) -> tuple[float, int, float]:
        """The fleet order: cheapest to buy, then fewest GPUs, then least owning cost over the horizon."""
        return (self.purchase_usd, self.num_gpus, self.horizon_own_usd)


def schedule(options: Sequence[JobOption], pool_gpus: int, order: Sequence[int] | None = None
             ) -> tuple[Slot, ...] | None:
    """The jobs on a pool of pool_gpus, or None where one cannot be placed: served models hold their GPUs
    from their start on; training jobs are placed in `order` (indexes into options; default earliest
    deadline first), each at the earliest time from its release when its GPUs are free for its whole run,
    and must end by its deadline."""
    slots: list[Slot] = []
    for o in options:
        if o.serving:
            if o.gpus + _most_in_use(slots, o.start_seconds, o.start_seconds + o.seconds) > pool_gpus:
                return None
            slots.append(Slot(o.job, o.gpus, o.start_seconds, o.start_seconds + o.seconds, _busy_share(o)))
    runs = [i for i, o in enumerate(options) if not o.serving]
    if order is None:
        order = sorted(runs, key=lambda i: (options[i].deadline_seconds, options[i].start_seconds, i))
    for i in order:
        o = options[i]
        if o.gpus > pool_gpus:
            return None
        starts = sorted({o.start_seconds} | {s.end_seconds for s in slots if s.end_seconds > o.start_seconds})
        for start in starts:
            if start + o.seconds > o.deadline_seconds:
                return None  # later starts end later still
            if o.gpus + _most_in_use(slots, start, start + o.seconds) <= pool_gpus:
                slots.append(Slot(o.job, o.gpus, start, start + o.seconds, _busy_share(o)))
                break
        else:
            return None
    return tuple(sorted(slots, key=lambda s: (s.start_seconds, s.job)))


def _busy_share(o: JobOption) -> float:
    return o.busy_gpu_hours / (o.gpus * o.seconds / SECONDS_PER_HOUR) if o.seconds > 0 else 1.0


def _most_in_use(slots: Sequence[Slot], start: float, end: float) -> int:
    """The most GPUs the slots hold at once during [start, end)."""
    inside = [s for s in slots if s.start_seconds < end and s.end_seconds > start]
    moments = [start] + [s.start_seconds for s in inside if s.start_seconds > start]
    return max((sum(s.gpus for s in inside if s.start_seconds <= t < s.end_seconds) for t in moments), default=0)


def smallest_pool(options: Sequence[JobOption], counts: Sequence[int], owned_gpus: int = 0) -> Pool | None:
    """The smallest count of `counts` (ascending; owned_gpus of them owned) on which every option can be
    scheduled, with its schedule."""
    runs = [i for i, o in enumerate(options) if not o.serving]
    least = max((o.gpus for o in options), default=0)
    for n in counts:
        if n < least:
            continue
        orders: Sequence[Sequence[int] | None] = [None]
        if len(runs) <= EXACT_ORDER_JOBS:
            orders = [None] + list(itertools.permutations(runs))
        for order in orders:
            slots = schedule(options, n, order)
            if slots is not None:
                return Pool(options[0].gpu, n, slots, sum(o.busy_gpu_hours for o in options), owned_gpus)
    return None


@dataclass(frozen=True)
class Costs:
    """Buying a fleet against renting the same GPU-hours over the horizon (USD)."""
    purchase_usd: float
    depreciation_usd: float
    hosting_usd: float
    energy_usd: float
    own_usd: float  # depreciation + hosting + energy
    rent_usd: float
    utilisation: float  # busy GPU-hours over the fleet's GPU-hours in the horizon
    new_utilisation: float | None  # the same of the GPUs bought (None: nothing is bought)
    break_even_utilisation: float | None  # None: renting is cheaper at any use (hourly price below energy)
    break_even_months: float | None  # None: at this use the purchase never pays for itself


class CostTerm(NamedTuple):
    """One figure of owning against renting, defined once: evaluated here (compile_terms) and written as a
    formula on the workbook's Decision sheet (to_excel; its label is the workbook catalogue's decision.<name>)."""
    name: str
    unit: str  # a workbook number format: usd, fraction, count, gpu_hours
    expr: Expr


def _gpu(column: str) -> Expr:
    return Lookup("GPUs", column, Var("gpu"))


_V = Var
# The period, from its length in weeks.
HORIZON_TERMS = (
    CostTerm("horizon_hours", "count", _V("horizon_weeks") * (7 * 24)),
    CostTerm("horizon_years", "fraction", _V("horizon_hours") / HOURS_PER_YEAR),
)
# A pool: num_gpus of one GPU type, owned_gpus of them already owned; busy_gpu_hours used over the period,
# new_busy_gpu_hours of them above the owned GPUs. Only what is bought is costed: the owned GPUs' hosting and
# energy are paid whether the rest is bought or rented.
POOL_TERMS = (
    CostTerm("new_gpus", "count", _V("num_gpus") - _V("owned_gpus")),
    CostTerm("purchase_usd", "usd", _V("new_gpus") * _gpu("price_purchase_usd")),
    CostTerm("depreciation_usd", "usd",
             _V("purchase_usd") * MIN(1, _V("horizon_years") / _V("amortisation_years"))),
    CostTerm("hosting_usd", "usd",
             _V("new_gpus") * _V("hosting_usd_per_gpu_year") * _V("horizon_years")),
    # a busy GPU's energy per hour: its TDP, the server's share around it, the facility's overhead
    CostTerm("energy_usd_per_gpu_hour", "usd",
             _gpu("tdp_watts") / 1000 * _V("server_power_factor") * _V("pue") * _V("electricity_usd_per_kwh")),
    CostTerm("energy_usd", "usd", _V("new_busy_gpu_hours") * _V("energy_usd_per_gpu_hour")),
    CostTerm("own_usd", "usd", _V("depreciation_usd") + _V("hosting_usd") + _V("energy_usd")),
    CostTerm("rent_usd", "usd", _V("new_busy_gpu_hours") * _gpu("price_per_hour_usd")),
    # per year of the pool, owning's fixed part; per hour, renting's margin over energy
    CostTerm("fixed_usd_per_year", "usd",
             _V("new_gpus") * (_gpu("price_purchase_usd") / _V("amortisation_years") + _V("hosting_usd_per_gpu_year"))),
    CostTerm("margin_usd_per_hour", "usd",
             _V("new_gpus") * (_gpu("price_per_hour_usd") - _V("energy_usd_per_gpu_hour"))),
)
# The fleet: its pools' sums of these, then what follows from the sums.
SUMMED = ("num_gpus", "owned_gpus", "busy_gpu_hours", "new_busy_gpu_hours", "new_gpus", "purchase_usd",
          "depreciation_usd", "hosting_usd", "energy_usd", "own_usd", "rent_usd", "fixed_usd_per_year",
          "margin_usd_per_hour")
FLEET_TERMS = (
    CostTerm("utilisation", "percent", _V("busy_gpu_hours") / (_V("num_gpus") * _V("horizon_hours"))),
    CostTerm("new_utilisation", "percent",
             IF(_V("new_gpus").gt(0), _V("new_busy_gpu_hours") / (_V("new_gpus") * _V("horizon_hours")), "")),
    # owning a GPU-hour costs what renting it does at this share of the year busy
    CostTerm("break_even_utilisation", "percent",
             IF(_V("margin_usd_per_hour").gt(0), _V("fixed_usd_per_year") / (HOURS_PER_YEAR * _V("margin_usd_per_hour")),
                "")),
    CostTerm("monthly_saving_usd", "usd",
             (_V("rent_usd") - _V("energy_usd")) / _V("horizon_hours") * HOURS_PER_MONTH
             - _V("hosting_usd") / _V("horizon_years") / 12),
    CostTerm("break_even_months", "decimal",
             IF(_V("monthly_saving_usd").gt(0), _V("purchase_usd") / _V("monthly_saving_usd"), "")),
)


@lru_cache(maxsize=None)
def _compiled(kind: str) -> Callable:
    terms = {"pool": HORIZON_TERMS + POOL_TERMS, "fleet": HORIZON_TERMS + FLEET_TERMS}[kind]
    return compile_terms(terms, lambda n: f"A[{n!r}]" if n in ASSUMPTION_DEFAULTS else f"I[{n!r}]", f"_{kind}")


def evaluate(kind: str, inputs: Mapping[str, Any], assumptions: Mapping[str, float],
             gpus: Mapping[str, GpuSpec]) -> dict[str, Any]:
    """The cost terms of a pool (kind "pool": gpu, num_gpus, owned_gpus, busy_gpu_hours, new_busy_gpu_hours,
    horizon_weeks) or of a fleet
    ("fleet": the SUMMED sums and horizon_weeks): name -> value, "" where a break-even does not exist."""
    terms = HORIZON_TERMS + (POOL_TERMS if kind == "pool" else FLEET_TERMS)
    tables = {"GPUs": {inputs["gpu"]: gpu_row(gpus[inputs["gpu"]])}} if kind == "pool" else {}
    return dict(zip((t.name for t in terms), _compiled(kind)(inputs, assumptions, tables, None)))


def pool_costs(pool: Pool, horizon_seconds: float, gpus: Mapping[str, GpuSpec],
               assumptions: Mapping[str, float]) -> dict[str, Any]:
    return evaluate("pool", {"gpu": pool.gpu, "num_gpus": pool.num_gpus, "owned_gpus": pool.owned_gpus,
                             "busy_gpu_hours": pool.busy_gpu_hours, "new_busy_gpu_hours": pool.new_busy_gpu_hours,
                             "horizon_weeks": horizon_seconds / SECONDS_PER_WEEK}, assumptions, gpus)


def cost_terms(fleet_pools: Sequence[Pool], horizon_seconds: float, gpus: Mapping[str, GpuSpec],
               assumptions: Mapping[str, float]) -> tuple[list[dict[str, Any]], dict[str, float], dict[str, Any]]:
    """Each pool's cost terms, the fleet's sums of SUMMED, and the fleet's terms (the horizon's among them)."""
    pools = [pool_costs(p, horizon_seconds, gpus, assumptions) for p in fleet_pools]
    sums = {k: sum((p[k] if k in p else getattr(pool, k)) for p, pool in zip(pools, fleet_pools)) for k in SUMMED}
    fleet = evaluate("fleet", {**sums, "horizon_weeks": horizon_seconds / SECONDS_PER_WEEK}, assumptions, gpus)
    return pools, sums, fleet


def costs(fleet_pools: Sequence[Pool], horizon_seconds: float, gpus: Mapping[str, GpuSpec],
          assumptions: Mapping[str, float]) -> Costs:
    _, sums, fleet = cost_terms(fleet_pools, horizon_seconds, gpus, assumptions)
    return Costs(sums["purchase_usd"], sums["depreciation_usd"], sums["hosting_usd"], sums["energy_usd"],
                 sums["own_usd"], sums["rent_usd"], fleet["utilisation"],
                 fleet["new_utilisation"] if fleet["new_utilisation"] != "" else None,
                 fleet["break_even_utilisation"] or None,
                 fleet["break_even_months"] or None)


@dataclass(frozen=True)
class FleetChoice:
    """The fleet to buy (None: no fleet of at most max_types GPU types bought runs every job), the cheapest
    fleet running every job on a single GPU type (the alternatives a meeting compares), and the jobs no GPU
    type could run."""
    best: Fleet | None
    single_type: tuple[Fleet, ...]
    unplaced: tuple[str, ...]


def choose_fleet(options: Mapping[str, Mapping[str, JobOption]], gpu_types: Sequence[str],
                 counts: Callable[[str], Sequence[int]], own_usd: Callable[[Sequence[Pool]], float],
                 prices: Mapping[str, float], max_types: int = 2, owned: Mapping[str, int] = {}) -> FleetChoice:
    """options: per job, per GPU type where it can run, its plan. gpu_types: the types that can be bought;
    counts(gpu): how many of a type a buyer can buy, ascending; own_usd(pools): owning cost over the horizon;
    prices: purchase price per type; owned: GPUs already owned per type (always in the fleet, idle or not)."""
    jobs = list(options)
    unplaced = tuple(j for j in jobs if not options[j])
    if unplaced or not jobs:
        return FleetChoice(None, (), unplaced)
    held = tuple(g for g, n in owned.items() if n > 0)
    pools: dict[tuple[str, tuple[str, ...], bool], Pool | None] = {}

    def pool(gpu: str, members: tuple[str, ...], buying: bool) -> Pool | None:
        """The smallest pool of `gpu` running `members`: the owned GPUs, more where `buying`."""
        if (gpu, members, buying) not in pools:
            base = owned.get(gpu, 0)
            sizes = ([base] if base else []) + ([base + n for n in counts(gpu)] if buying else [])
            pools[(gpu, members, buying)] = (
                smallest_pool([options[j][gpu] for j in members], sizes, base) if members
                else Pool(gpu, base, (), 0.0, base))
        return pools[(gpu, members, buying)]

    def purchase(parts: Sequence[Pool]) -> float:
        return sum(p.new_gpus * prices.get(p.gpu, 0.0) for p in parts)

    def used_types(bought: tuple[str, ...]) -> tuple[str, ...]:
        return held + tuple(g for g in bought if g not in held)

    def fleets(bought: tuple[str, ...], assignments: Iterable[Sequence[int]]) -> Iterator[list[Pool]]:
        """The pools of the owned types and `bought`, for each assignment of the jobs to them (indexes
        into used_types(bought)); a type bought without a job is a fleet of fewer types, not made again."""
        used = used_types(bought)
        for assignment in assignments:
            members = [tuple(j for j, a in zip(jobs, assignment) if a == k) for k in range(len(used))]
            if any(not members[k] and used[k] not in held for k in range(len(used))):
                continue
            if not all(used[k] in options[j] for k in range(len(used)) for j in members[k]):
                continue
            parts = [pool(used[k], members[k], used[k] in bought) for k in range(len(used))]
            if all(p is not None for p in parts):
                yield parts

    # every job on one type: the owned types' pools beside it idle
    single: list[Fleet] = []
    for gpu in dict.fromkeys(tuple(gpu_types) + held):
        bought = (gpu,) if gpu in gpu_types else ()
        single += (Fleet(tuple(parts), purchase(parts), own_usd(parts))
                   for parts in fleets(bought, [[used_types(bought).index(gpu)] * len(jobs)]))
    best = min(single, key=Fleet.key, default=None)
    for size in range(max_types + 1):
        for bought in itertools.combinations(gpu_types, size):
            assignments = itertools.product(range(len(used_types(bought))), repeat=len(jobs))
            for parts in fleets(bought, assignments):
                # the owning cost (the third key) only where price and GPUs do not already decide
                first = (purchase(parts), sum(p.num_gpus for p in parts))
                if best is None or first <= best.key()[:2]:
                    candidate = Fleet(tuple(parts), first[0], own_usd(parts))
                    if best is None or candidate.key() < best.key():
                        best = candidate
    return FleetChoice(best, tuple(sorted(single, key=Fleet.key)), ())


# ---------------------------------------------------------------------------------------------
# The jobs, planned per GPU type by the plan search

@dataclass(frozen=True)
class Job:
    """One piece of the period's work (see the module's docstring). `fixed`: the inputs the preset gives,
    which the plan keeps; `goal`: a served model's users, context and speed (a training run's window is
    its deadline less its start)."""
    name: str
    scenario: Scenario | RlhfScenario
    fixed: tuple[str, ...]
    goal: Goal
    start_seconds: float
    deadline_seconds: float
    steps: int = 0  # RLHF iterations
    hours_per_day: float = 24.0  # a served model's hours of use per day (its GPUs are held all day)
    name_zh: str = ""

    @property
    def kind(self) -> str:
        return job_kind(self.scenario)

    @property
    def plan_goal(self) -> Goal:
        """What its plan must meet: a served model its users' goal, a run its window (RLHF: memory alone)."""
        if self.kind == "serve":
            return self.goal
        return Goal(within_seconds=self.deadline_seconds - self.start_seconds) if self.kind == "train" else Goal()

    def name_in(self, lang: str) -> str:
        return self.name_zh if lang == "zh" and self.name_zh else self.name


def job_kind(scenario: Scenario | RlhfScenario) -> str:
    """"rlhf", "serve" or "train"."""
    if isinstance(scenario, RlhfScenario):
        return "rlhf"
    return "serve" if scenario.workload == "inference" else "train"


@dataclass(frozen=True)
class Portfolio:
    horizon_seconds: float
    gpu_types: tuple[str, ...]  # the types that can be bought
    jobs: tuple[Job, ...]
    max_types: int = 2
    owned: tuple[tuple[str, int], ...] = ()  # GPUs already owned: (type, count)

    @property
    def planned_types(self) -> tuple[str, ...]:
        """The types a job may run on: those offered, then those only owned."""
        return tuple(dict.fromkeys(self.gpu_types + tuple(g for g, _ in self.owned)))


@dataclass(frozen=True)
class JobMiss:
    """Why a job cannot run on a GPU type: nothing fits up to most_gpus ("fit"), the fastest that fits
    ends after the deadline ("deadline": best_seconds on best_gpus), or every layout is skipped ("skip":
    the first rule's reason)."""
    gpu: str
    reason: str
    most_gpus: int
    best_seconds: float = 0.0
    best_gpus: int = 0
    skipped: SkipReason | None = None


@dataclass(frozen=True)
class PlannedJob:
    option: JobOption
    estimate: Estimate | GroupEstimate


def plan_jobs(estimator: Estimator, portfolio: Portfolio) -> dict[str, dict[str, PlannedJob | JobMiss]]:
    """Per job, per GPU type of the portfolio: its plan (the smallest buyable layout that fits and meets the
    job's own window) or why there is none."""
    return {job.name: {gpu: _plan_job(estimator, job, gpu, portfolio.horizon_seconds) for gpu in portfolio.planned_types}
            for job in portfolio.jobs}


def _plan_job(estimator: Estimator, job: Job, gpu: str, horizon_seconds: float) -> PlannedJob | JobMiss:
    window = job.deadline_seconds - job.start_seconds
    counts = buyable_counts(estimator.gpus[gpu].gpus_per_node)
    if job.kind == "train":
        found = plan(estimator, job.scenario, [gpu], job.plan_goal, fixed=job.fixed)
        return _planned(job, found, gpu, lambda e: float(e["time_to_train_seconds"]), horizon_seconds)
    if job.kind == "serve":
        found = plan(estimator, job.scenario, [gpu], job.plan_goal, fixed=job.fixed)
        return _planned(job, found, gpu, lambda e: horizon_seconds - job.start_seconds, horizon_seconds)
    # RLHF: the fewest GPUs whose iterations end in its window
    found = plan_run(estimator, job.scenario, [gpu], job.steps, window, job.plan_goal, fixed=job.fixed)
    nearest = found.misses[0].nearest if found.misses else None
    if nearest is not None and nearest["fits_recommended"]:
        return JobMiss(gpu, "deadline", counts[-1], run_seconds(nearest, job.steps), PlanOption(gpu, nearest, 0).total_gpus)
    return _planned(job, found, gpu, lambda e: run_seconds(e, job.steps), horizon_seconds)


def _planned(job: Job, found: Plan, gpu: str, seconds: Callable[[Estimate | GroupEstimate], float],
             horizon_seconds: float) -> PlannedJob | JobMiss:
    if not found.options:
        miss = found.misses[0]
        nearest = miss.nearest
        if nearest is not None and nearest["fits_recommended"] and job.kind == "train":
            return JobMiss(gpu, "deadline", miss.most_gpus, float(nearest["time_to_train_seconds"]),
                           PlanOption(gpu, nearest, 0).total_gpus)
        if miss.skipped and nearest is None:
            return JobMiss(gpu, "skip", miss.most_gpus, skipped=miss.skipped[0])
        return JobMiss(gpu, "fit", miss.most_gpus)
    chosen = found.options[0]
    held = seconds(chosen.estimate)
    if job.kind == "serve":
        busy = chosen.total_gpus * held / SECONDS_PER_HOUR * job.hours_per_day / 24
    else:
        busy = chosen.total_gpus * held / SECONDS_PER_HOUR
    deadline = horizon_seconds if job.kind == "serve" else job.deadline_seconds
    return PlannedJob(JobOption(job.name, job.kind, gpu, chosen.total_gpus, held, busy, job.start_seconds, deadline),
                      chosen.estimate)


@dataclass(frozen=True)
class Decision:
    """What the decision page shows: the portfolio, each job's plans, the fleet chosen and the single-type
    alternatives, each with its costs."""
    portfolio: Portfolio
    planned: Mapping[str, Mapping[str, PlannedJob | JobMiss]]
    choice: FleetChoice
    costs: Mapping[tuple[tuple[str, int], ...], Costs]  # per fleet (its pools' GPU types and counts)

    def costs_of(self, fleet: Fleet) -> Costs:
        return self.costs[fleet_id(fleet)]


def fleet_id(fleet: Fleet) -> tuple[tuple[str, int], ...]:
    return tuple((p.gpu, p.num_gpus) for p in fleet.pools)


def decide(estimator: Estimator, portfolio: Portfolio, assumptions: Mapping[str, float]) -> Decision:
    planned = plan_jobs(estimator, portfolio)
    options = {job: {gpu: p.option for gpu, p in per_gpu.items() if isinstance(p, PlannedJob)}
               for job, per_gpu in planned.items()}
    gpus = estimator.gpus
    horizon = portfolio.horizon_seconds

    def own(pools: Sequence[Pool]) -> float:
        return costs(pools, horizon, gpus, assumptions).own_usd

    def counts(gpu: str) -> Sequence[int]:
        most = max(MAX_GPUS, sum(o[gpu].gpus for o in options.values() if gpu in o))
        return buyable_counts(gpus[gpu].gpus_per_node, most)

    choice = choose_fleet(options, portfolio.gpu_types, counts, own,
                          {g: gpus[g].price_purchase_usd for g in portfolio.gpu_types}, portfolio.max_types,
                          dict(portfolio.owned))
    fleets = ([choice.best] if choice.best else []) + list(choice.single_type)
    return Decision(portfolio, planned, choice, {fleet_id(f): costs(f.pools, horizon, gpus, assumptions) for f in fleets})
