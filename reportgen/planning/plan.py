"""Procurement search: per GPU type, the configuration to buy that fits in memory and meets a goal.

A goal is what the buyer needs besides fitting: a training run of N tokens within a deadline, or
serving U concurrent users at a context length with a minimum decode speed per user. The search keeps
every input the user gave (a GPU count, TP, PP, EP, ZeRO stage, framework, checkpointing, offload…) and
chooses the rest among the counts a buyer can buy (buyable_counts) and the layouts of SEARCH. Per GPU
type it takes the first candidate by the plan's order (ranking.py, as the report and the workbook do)
among those of the smallest GPU count where one fits and meets the goal; the GPU types are then ranked
by the same order. A GPU type where nothing does says why (PlanMiss).
The candidates of a GPU type are input columns, estimated as arrays (Estimator.estimate_chunks), a
batch of GPU counts at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..model.arrays import np
from ..model.estimate import (Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario, SkipReason, pool_unit, share_free,
                              first_skip_codes, iteration_sequences_of, rank_sequences, rlhf_batch_check)
from ..model.terms import SKIP_RULES
from .goals import GOAL_TERMS, Goal
from ..model.inputs import INPUT_NAMES, PARALLEL_LAYOUT, ROLLOUT
from ..model.lookups import RECOMPUTE_MODULES, recomputing
from .ranking import CLOSEST_ORDER, PLAN_FITS, PLAN_ORDER, RENT_ORDER, first_rows
from ..model.vector import CHUNK_ROWS, Text, take, to_list
from ..model.units import duration_words

MAX_GPUS = 512  # the largest purchase the search considers, per GPU type
TP_SIZES = (1, 2, 4, 8)
# A pipeline of p stages idles (p − 1) / m of each step with m micro-batches (Narayanan et al. 2021, §2.2):
# the plan runs its pipeline layouts with at least this many micro-batches per stage (a bubble under 25 %,
# published runs use more: Megatron-LM 2021's GPT-3 175B, PP 16 and DP 8, 192 micro-batches of one sequence),
# unless the gradient accumulation is given. 1F1B keeps at most p micro-batches in flight, so more costs
# no activation memory.
PIPELINE_MICRO_BATCHES_PER_STAGE = 4
# Context parallelism for long sequences, where each GPU still keeps a chunk of at least this many tokens
# (shorter chunks leave the ring's key/value hops too little attention to hide behind).
CP_MIN_CHUNK_TOKENS = 4096
CP_SIZES = (1, 2, 4, 8, 16, 32)
# Megatron's interleaved 1F1B: model chunks per GPU the search tries on a pipeline.
VP_SIZES = (1, 2, 4)
# Megatron's expert tensor parallelism for MoE: as TP (0, its default) or whole experts (1, as MoE recipes set).
ETP_SIZES = (0, 1)
# Expert parallelism may span nodes (vLLM's EP is TP × DP; Megatron's lives in the data-parallel group).
EP_SIZES = tuple(2 ** k for k in range(MAX_GPUS.bit_length()))
MEASURES = ("purchase", "hourly")
# The inputs that lay a job out on its GPUs: a plan keeps those given and searches the others.
LAYOUT_INPUTS = ("num_gpus",) + PARALLEL_LAYOUT


def buyable_counts(gpus_per_node: int, most: int = MAX_GPUS) -> tuple[int, ...]:
    """The GPU counts a buyer can buy, ascending: a server with fewer GPUs than a full node (a divisor
    of the node's count), then whole nodes (any number of them, not powers of two only)."""
    within = [n for n in range(1, gpus_per_node + 1) if gpus_per_node % n == 0]
    return tuple(within + list(range(2 * gpus_per_node, most + 1, gpus_per_node)))


@dataclass(frozen=True)
class PlanOption:
    gpu: str
    estimate: Estimate | GroupEstimate
    index: int  # the order of consideration (GPU types as given, then counts, then the layouts of SEARCH)

    @property
    def lead(self) -> Scenario:
        """The scenario whose layout the plan chose: itself, or an RLHF group's actor."""
        return self.estimate.scenario.actor if isinstance(self.estimate, GroupEstimate) else self.estimate.scenario

    @property
    def num_gpus(self) -> int:
        return self.lead.num_gpus

    @property
    def total_gpus(self) -> int:
        """GPUs to buy: num_gpus per role pool when RLHF roles sit on separate pools."""
        return int(self.estimate["total_gpus"]) if isinstance(self.estimate, GroupEstimate) else self.num_gpus

    def key(self, order: Sequence[str]) -> tuple:
        """This option's values of a ranking's keys (ranking.PLAN_ORDER, RENT_ORDER)."""
        own = {"total_gpus": self.total_gpus, "index": self.index}
        return tuple(own[k] if k in own else self.estimate[k] for k in order)

    @property
    def is_train(self) -> bool:
        return isinstance(self.estimate, GroupEstimate) or bool(self.estimate["is_train"])

    @property
    def layout(self) -> dict[str, Any]:
        """What the plan chose: the lead scenario's layout and trade-off inputs; an RLHF group's sequences per GPU
        and iteration, and the micro-batch its roles take them in."""
        out = {k: getattr(self.lead, k) for k in LAYOUT_INPUTS + ("framework", "checkpointing", "offload", "optimizer",
                                                                  "grad_accum_steps")}
        if isinstance(self.estimate, GroupEstimate):
            g = self.estimate.scenario
            out["sequences_per_gpu"] = g.rank_sequences
            out["micro_batch_size"] = g.lead.batch_size
            if g.actor.serving_engine != "hf-generate":
                out["rollout_tp_size"] = g.actor.rollout_tp_size
                out["gpu_memory_utilization"] = g.actor.gpu_memory_utilization
                out["rollout_mode"] = "async" if g.generates_ahead else "sync"
                if not g.engine_apart:
                    out["engine_sleep"] = g.actor.engine_sleep
            if g.pooled_roles:
                out["placement"] = g.placement
                out["role_gpus"] = {role: s.num_gpus for role, s in g.roles}
                out["role_gpu_types"] = {role: s.gpu for role, s in g.roles}
        return out

    def to_json(self) -> dict:
        e = self.estimate
        out = {"gpu": self.gpu, "num_gpus": self.num_gpus, "total_gpus": self.total_gpus,
               "zero_stage": self.lead.zero_stage, "tp_size": self.lead.tp_size, "layout": self.layout,
               "purchase_usd": e["purchase_usd"], "hourly_usd": e["hourly_usd"],
               "per_gpu_bytes": e.per_gpu_bytes,
               "host_offload_bytes": 0 if isinstance(e, GroupEstimate) else int(e["host_offload_bytes"])}
        if isinstance(e, GroupEstimate):
            out["gpus_per_role"] = {r: role.scenario.num_gpus for r, role in e.roles}
            out["iteration_seconds"] = e["iteration_seconds"]
        else:
            if e["is_train"]:
                out["run_cost_usd"] = e["cost_usd"]
            time = e.time_json()
            if time:
                out["time"] = time
        return out


@dataclass(frozen=True)
class PlanMiss:
    """A GPU type on which no candidate up to `most_gpus` fits and meets the goal, and why: every
    candidate was skipped (`skipped`, the first one's reason), or `nearest` is the candidate nearest to
    an answer: the fastest that fits (it misses the goal), else the one whose budget is the smallest
    share of the GPU's memory (fit_limit says what binds). `skipped` counts only when nothing was
    estimated."""
    gpu: str
    most_gpus: int
    skipped: tuple[SkipReason, ...]  # the first reason of each rule that skipped a candidate
    nearest: Estimate | GroupEstimate | None


@dataclass(frozen=True)
class Plan:
    goal: Goal
    options: tuple[PlanOption, ...]  # one per GPU type that can meet the goal, in the plan's order
    misses: tuple[PlanMiss, ...] = ()  # the GPU types that cannot, in the order given
    tried: int = 0  # candidate layouts considered
    gen_len: int | None = None  # serving: the tokens each user generates (the goal's context is prompt + these)
    # RLHF with a run to finish: its iterations and the time they must end within (plan_run)
    steps: int | None = None
    within_seconds: float | None = None
    prompts: int | None = None  # the run's length as prompts trained on, where it was given so (steps from it)

    def cheapest(self, measure: str) -> PlanOption | None:
        order = PLAN_ORDER if measure == "purchase" else RENT_ORDER
        return min(self.options, key=lambda o: o.key(order), default=None)

    def describe_goal(self) -> str:
        if self.steps is not None:
            run = f"{self.prompts:,} prompts ({self.steps:,} iterations)" if self.prompts else f"{self.steps:,} iterations"
            return f"{run} within {duration_words(self.within_seconds)}"
        return self.goal.describe(self.gen_len)

    def to_json(self) -> dict:
        return {"goal": self.describe_goal(),
                "cheapest": {m: (self.cheapest(m).gpu if self.cheapest(m) else None) for m in MEASURES},
                "options": [o.to_json() | ({"run_seconds": run_seconds(o.estimate, self.steps),
                                            "run_usd": run_usd(o.estimate, self.steps)} if self.steps else {})
                            for o in self.options],
                "not_found": [{"gpu": m.gpu, "most_gpus": m.most_gpus} for m in self.misses],
                "candidates_tried": self.tried,
                **({"steps": self.steps, "within_seconds": self.within_seconds} if self.steps else {}),
                **({"prompts": self.prompts} if self.prompts else {})}


# What a plan may choose, per workload kind, unless the user fixed it: the layout, and for training
# the recompute and offload trade-offs (slower, less memory) and Adam's state dtype (bitsandbytes'
# 8-bit AdamW: a quarter of the state memory; under Megatron, its precision-aware optimizer's bf16 moments: half).
SEARCH = {
    "train": {"zero_stage": (0, 1, 2, 3), "tp_size": TP_SIZES, "pp_size": (1, 2, 4, 8), "ep_size": EP_SIZES,
              "checkpointing": ("none", "selective", "full"), "offload": ("none", "optimizer", "all"),
              "optimizer": ("adamw", "adamw-8bit")},
    "serve": {"tp_size": TP_SIZES, "ep_size": EP_SIZES},
}


def _space(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str]) -> dict[str, tuple]:
    """The SEARCH choices for scenario s on n GPUs, less those in `fixed`: tensor parallelism inside
    one node, expert parallelism only for MoE models and over a divisor of n, context parallelism under
    the frameworks that have it for chunks of at least CP_MIN_CHUNK_TOKENS per GPU, virtual pipeline
    stages under Megatron, torchtitan's per-op checkpointing under FSDP2."""
    space = dict(SEARCH["serve" if s.workload == "inference" else "train"])
    per_node = estimator.gpus[s.gpu].gpus_per_node
    space["tp_size"] = tuple(tp for tp in space["tp_size"] if tp <= min(n, per_node))
    moe = estimator.tables["Models"][s.model]["is_moe"]
    space["ep_size"] = tuple(ep for ep in space["ep_size"] if n % ep == 0 and (moe or ep == 1))
    if s.workload != "inference" and _has_context_parallelism(s, estimator):
        # what else a CP size needs (the sequence's chunks, the heads Ulysses splits) the skip rules prune
        space["cp_size"] = tuple(cp for cp in CP_SIZES if n % cp == 0
                                 and (cp == 1 or s.seq_len // cp >= CP_MIN_CHUNK_TOKENS))
    if s.workload == "full" and s.framework == "fsdp2" and estimator.tables["Models"][s.model]["op_checkpoint_layers"]:
        # torchtitan's per-op checkpointing, where its count is modelled (without TP, CP or PP: the skip rule)
        space["checkpointing"] += ("op",)
    if s.workload != "inference" and s.framework == "megatron":
        space["vp_size"] = VP_SIZES
        if moe:
            space["etp_size"] = ETP_SIZES
            if s.workload == "full":  # with Megatron's recompute module lists (MLA's up-projections where it has them)
                mla = estimator.tables["Models"][s.model]["is_mla"]
                space["checkpointing"] = tuple(c for c in RECOMPUTE_MODULES if mla or c not in recomputing("mla_up_proj"))
        if "optimizer" in space:  # Megatron-Core's own Adam: bf16 moments, never bitsandbytes' 8-bit
            space["optimizer"] = ("adamw", "adamw-bf16")
    if "optimizer" in space and s.optimizer not in space["optimizer"]:
        space.pop("optimizer")  # SGD is a different recipe, not a state dtype of Adam
    for name in fixed:
        space.pop(name, None)
    return space


def _has_context_parallelism(s: Scenario, estimator: Estimator) -> bool:
    """Whether s's framework (and attention) has context parallelism: the skip rule cp_framework, asked of s at
    cp_size 2, says no (one place says which frameworks have it)."""
    probe = estimator.skip_check(replace(s, cp_size=2, num_gpus=2 * s.tp_size * s.pp_size))
    return probe is None or probe.code != "cp_framework"


def candidate_columns(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str] = ()) -> tuple[dict, int]:
    """(columns, how many): every layout of scenario s on n GPUs the plan may try, as the columns of
    the inputs it chooses (num_gpus included), in the order of the product of the choices."""
    space = _space(s, estimator, n, fixed)
    grids = [g.ravel() for g in np.meshgrid(*(np.arange(len(v)) for v in space.values()), indexing="ij")]
    columns: dict[str, Any] = {}
    for (name, values), index in zip(space.items(), grids):
        columns[name] = (Text(index.astype(np.int32), values) if isinstance(values[0], str)
                         else np.array(values, dtype=np.int64)[index])
    size = len(grids[0]) if grids else 1
    zero = np.asarray(columns.get("zero_stage", s.zero_stage))
    model_parallel = np.asarray(columns.get("tp_size", s.tp_size)) * np.asarray(columns.get("pp_size", s.pp_size))
    context = np.asarray(columns.get("cp_size", s.cp_size if s.workload != "inference" else 1))
    # Layouts not worth estimating among those searched: more stages than GPUs, or a ZeRO stage without
    # two ranks to shard over (data × context parallel). What the user fixed is estimated, or skipped with
    # its reason.
    pruned = np.zeros(size, dtype=bool)
    if not {"tp_size", "pp_size", "cp_size"} <= set(fixed):
        pruned |= model_parallel * context > n
    if "zero_stage" not in fixed:
        pruned |= (zero != 0) & (n // model_parallel < 2)
    if "vp_size" in columns and "pp_size" not in fixed:  # chunks of a pipeline that is not there
        pruned |= (np.asarray(columns.get("pp_size", s.pp_size)) == 1) & (columns["vp_size"] > 1)
    if "etp_size" in columns and "tp_size" not in fixed:  # whole experts beside no TP: the default layout again
        pruned |= (np.asarray(columns.get("tp_size", s.tp_size)) == 1) & (columns["etp_size"] == 1)
    keep = np.flatnonzero(~pruned)
    columns = {k: take(v, keep) for k, v in columns.items()}
    columns["num_gpus"] = np.full(len(keep), n, dtype=np.int64)
    if "grad_accum_steps" not in fixed and s.workload != "inference":
        stages = np.broadcast_to(np.asarray(columns.get("pp_size", s.pp_size)), len(keep))
        columns["grad_accum_steps"] = np.where(stages > 1, np.maximum(s.grad_accum_steps,
                                                                      PIPELINE_MICRO_BATCHES_PER_STAGE * stages),
                                               s.grad_accum_steps).astype(np.int64)
    return columns, len(keep)


def candidates(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str] = ()) -> Iterator[Scenario]:
    """candidate_columns as scenarios."""
    columns, size = candidate_columns(s, estimator, n, fixed)
    values = {k: to_list(v, size) for k, v in columns.items()}
    for i in range(size):
        yield s.with_inputs(**{k: v[i] for k, v in values.items()})


def plan(estimator: Estimator, scenario: Scenario | RlhfScenario, gpus: Sequence[str], goal: Goal = Goal(),
         counts: Sequence[int] | None = None, fixed: Iterable[str] = (), iteration_seconds: float | None = None,
         cheaper_than: Mapping[str, float] | None = None) -> Plan:
    """Per GPU type, the first candidate by the plan's order at the smallest GPU count where one fits
    with the safety factor and meets the goal; GPU types where none does up to the largest count are
    misses, with why. `fixed`: inputs the search must keep as the scenario has them (num_gpus among
    them: that count alone); counts: the GPU counts to try (default: buyable_counts per GPU type);
    iteration_seconds: an RLHF group's iterations must take at most this long, where a layout of the count can
    (plan_run's deadline); cheaper_than: per GPU type, another plan's purchase (USD) for the same goal, which
    best_of keeps unless this plan's option there costs no more: an RLHF group's counts that must cost more are
    not searched."""
    fixed = tuple(fixed)
    options, misses, tried = [], [], 0
    lead = scenario.actor if isinstance(scenario, RlhfScenario) else scenario
    gpu_types = tuple(dict.fromkeys(gpus))
    counts_of = {gpu: ((lead.num_gpus,) if "num_gpus" in fixed else
                       tuple(counts) if counts is not None else buyable_counts(estimator.gpus[gpu].gpus_per_node))
                 for gpu in gpu_types}
    if isinstance(scenario, RlhfScenario):
        searches = []
        for k, gpu in enumerate(gpu_types):
            gpu_counts = counts_of[gpu]
            if cheaper_than and gpu in cheaper_than:
                gpu_counts = tuple(n for n in gpu_counts
                                   if _least_purchase_usd(estimator, scenario, gpu, n, gpus) <= cheaper_than[gpu])
            searches.append(_search_group(estimator, scenario, gpu, goal, gpu_counts, fixed, k, pool_gpus=gpu_types,
                                          iteration_seconds=iteration_seconds))
    else:
        bases = [scenario.with_inputs(gpu=gpu) for gpu in gpu_types]
        batches = [_batches(base, estimator, counts_of[base.gpu], fixed) for base in bases]
        # Every GPU type's first batch in one evaluation (most searches end in it): a small batch costs the term
        # table's walk more than its candidates.
        firsts = [next(b, None) for b in batches]
        joined = iter(_estimate_batches(estimator, goal, [(base, first) for base, first in zip(bases, firsts) if first]))
        searches = []
        for k, (base, first, rest) in enumerate(zip(bases, firsts, batches)):
            evaluated = chain([next(joined)] if first else [], (_estimate_batch(estimator, base, goal, b) for b in rest))
            searches.append(_search(estimator, base, goal, evaluated, counts_of[base.gpu], k))
    for found, n in searches:
        tried += n
        (options if isinstance(found, PlanOption) else misses).append(found)
    return Plan(goal, tuple(sorted(options, key=lambda o: o.key(PLAN_ORDER))), tuple(misses), tried,
                lead.gen_len if lead.workload == "inference" else None)


def _least_purchase_usd(estimator: Estimator, scenario: RlhfScenario, gpu: str, n: int,
                        pool_gpus: Sequence[str]) -> float:
    """The least an RLHF group can cost with its actor on n GPUs of `gpu`: those; a rollout engine's own pool, unless
    given, on as many of the same type (_sized_pools, _with_cheaper_pools); any other pool one GPU of the cheapest
    type searched at least."""
    given = dict(scenario.settings)
    price = estimator.gpus[gpu].price_purchase_usd
    cheapest = min(estimator.gpus[g].price_purchase_usd for g in dict.fromkeys((gpu, *pool_gpus)))
    sized = set(given.get("role_gpus") or ()) | set(given.get("role_gpu_types") or ())
    return n * price + sum(n * price if role == ROLLOUT and role not in sized else cheapest
                           for role, _ in scenario.pooled_roles)


def best_of(plans: Sequence[Plan]) -> Plan:
    """Plans for one goal over the same GPU types, each for a choice the search does not make itself (an RLHF
    group's rollout placements): per GPU type the option first by the plan's order, whichever plan found it; a
    GPU type is a miss where every plan missed it (the first plan's miss says why)."""
    best: dict[str, PlanOption] = {}
    for found in plans:
        for option in found.options:
            if option.gpu not in best or option.key(PLAN_ORDER) < best[option.gpu].key(PLAN_ORDER):
                best[option.gpu] = option
    return replace(plans[0], options=tuple(sorted(best.values(), key=lambda o: o.key(PLAN_ORDER))),
                   misses=tuple(m for m in plans[0].misses if m.gpu not in best), tried=sum(p.tried for p in plans))


def run_seconds(estimate: GroupEstimate, steps: int) -> float:
    """An RLHF run's length: its iterations, one after another."""
    return steps * float(estimate["iteration_seconds"])


def run_usd(estimate: GroupEstimate, steps: int) -> float:
    """An RLHF run's cost rented: every role's GPUs for the run's length at the hourly price."""
    return run_seconds(estimate, steps) / 3600 * float(estimate["hourly_usd"])


def plan_run(estimator: Estimator, scenario: RlhfScenario, gpus: Sequence[str], steps: int, within_seconds: float,
             goal: Goal = Goal(), fixed: Iterable[str] = ()) -> Plan:
    """An RLHF run of `steps` iterations that must end within `within_seconds`: per GPU type, the plan's group
    at the smallest GPU count whose iterations end in time. The plan lays a group out by memory, so the
    counts above its first answer are tried in turn; a GPU type where none is fast enough is a miss whose
    `nearest` is the answer at the most GPUs tried (it fits, and is too slow)."""
    fixed = tuple(fixed)
    options, misses, tried = [], [], 0
    for k, gpu in enumerate(dict.fromkeys(gpus)):
        counts = buyable_counts(estimator.gpus[gpu].gpus_per_node)
        first, slow = 0, None  # slow: the answer found last, too slow
        while True:
            found = plan(estimator, scenario, [gpu], goal, counts=counts[first:], fixed=fixed,
                         iteration_seconds=within_seconds / steps)
            tried += found.tried
            if not found.options:  # nothing fits at these counts: the first count's miss, or the last answer
                misses.append(found.misses[0] if slow is None else PlanMiss(gpu, counts[-1], (), slow.estimate))
                break
            option = slow = found.options[0]
            if run_seconds(option.estimate, steps) <= within_seconds:
                options.append(replace(option, index=k * 10**9 + option.index))  # one GPU type's plan: k = 0
                break
            first = counts.index(option.num_gpus) + 1 if option.num_gpus in counts else len(counts)
            if first >= len(counts) or "num_gpus" in fixed:
                misses.append(PlanMiss(gpu, option.num_gpus, (), option.estimate))
                break
    return Plan(goal, tuple(sorted(options, key=lambda o: o.key(PLAN_ORDER))), tuple(misses), tried,
                steps=steps, within_seconds=within_seconds)


# The least candidates in a GPU type's first batch: counts up to 16-32 GPUs of a dense model's layouts. Every GPU
# type's first batch is evaluated at once (plan()).
FIRST_BATCH_ROWS = 4_096

# The terms the search reads of each candidate: its orders' keys, the goal's and what a miss reports.
_SEARCH_TERMS = tuple(dict.fromkeys((PLAN_FITS, "purchase_usd", "rent_usd", "plan_seconds", *GOAL_TERMS,
                                     "recommended", "gpu_memory_bytes")))


def _batches(base: Scenario, estimator: Estimator, counts: Sequence[int], fixed: tuple[str, ...]
             ) -> Iterator[list[tuple[dict, int]]]:
    """base's candidates (candidate_columns) by GPU count in ascending batches: the first of about
    FIRST_BATCH_ROWS (most answers need few GPUs), the others of about CHUNK_ROWS."""
    pending: list[tuple[dict, int]] = []
    least = FIRST_BATCH_ROWS
    for k, n in enumerate(counts):
        pending.append(candidate_columns(base, estimator, n, fixed))
        if sum(p[1] for p in pending) >= least or k == len(counts) - 1:
            yield pending
            pending, least = [], CHUNK_ROWS


def _search(estimator: Estimator, base: Scenario, goal: Goal, evaluated: Iterable[tuple], counts: Sequence[int],
            gpu_order: int) -> tuple[PlanOption | PlanMiss, int]:
    """(the option or the miss, candidates considered) on base's GPU type: its batches (_batches), evaluated
    (_estimate_batch) one after another, until the first where a candidate fits and meets the goal."""
    gpu = base.gpu
    tried = 0
    nearest: dict[str, Any] | None = None  # the inputs of the candidate nearest to an answer so far
    nearest_fits, skipped = False, {}
    everywhere: dict[str, SkipReason] | None = None  # the reasons that held for every candidate so far
    for columns, values, reasons, always in evaluated:
        skipped = {**reasons, **skipped}
        everywhere = _shared(everywhere, always)
        if not len(columns["num_gpus"]):
            continue
        values["total_gpus"] = columns["num_gpus"]
        values["index"] = tried + np.arange(len(values["total_gpus"]))
        tried += len(values["total_gpus"])
        fits = values[PLAN_FITS] != 0
        whole = np.zeros(len(fits), dtype=np.int64)
        row = pick(values, goal)
        if row is not None:
            return PlanOption(gpu, estimator.estimate(_row_scenario(base, columns, row)),
                              gpu_order * 10**9 + int(values["index"][row])), tried
        if fits.any():
            row = first_rows(CLOSEST_ORDER, values, fits, whole)[0]
            nearest, nearest_fits = _row_inputs(columns, row), True
        elif not nearest_fits:
            values["share"] = values["recommended"] / values["gpu_memory_bytes"]
            row = first_rows(("share", "index"), values, ~fits, whole)[0]
            nearest = _row_inputs(columns, row)
    last = counts[-1] if counts else 0
    if nearest is None:  # nothing could run: the reasons every candidate shares, else each rule's first
        return PlanMiss(gpu, last, tuple((everywhere or skipped).values()), None), tried
    return PlanMiss(gpu, last, (), estimator.estimate(base.with_inputs(**nearest))), tried


def _shared(so_far: dict[str, SkipReason] | None, held: dict[str, SkipReason]) -> dict[str, SkipReason]:
    """The skip reasons every candidate so far shares, after more candidates held `held` (so_far None: the first)."""
    return held if so_far is None else {k: r for k, r in so_far.items() if k in held}


def pick(values: dict[str, np.ndarray], goal: Goal) -> int | None:
    """The row a plan picks among candidates of one GPU type (term columns, with total_gpus and index):
    the first by PLAN_ORDER of those that fit with k and meet the goal; None if none does."""
    eligible = (values[PLAN_FITS] != 0) & goal.met(values)
    return first_rows(PLAN_ORDER, values, eligible, np.zeros(len(eligible), dtype=np.int64)).get(0)


def choose(candidates: dict[str, Sequence[Estimate | GroupEstimate]], goal: Goal = Goal()) -> Plan:
    """The plan over given candidates (per GPU type, estimates in the order considered): what plan()
    does with the candidates it generates, for candidates from elsewhere (a preset's scenarios)."""
    options, misses = [], []
    for k, (gpu, estimates) in enumerate(candidates.items()):
        values = {t: np.array([e.values.get(t, 0) for e in estimates], dtype=float)
                  for t in _SEARCH_TERMS + ("iteration_seconds",)}
        values["total_gpus"] = np.array([PlanOption(gpu, e, 0).total_gpus for e in estimates], dtype=np.int64)
        values["index"] = np.arange(len(estimates))
        row = pick(values, goal)
        if row is None:
            misses.append(PlanMiss(gpu, int(values["total_gpus"].max(initial=0)), (), None))
        else:
            options.append(PlanOption(gpu, estimates[row], k * 10**9 + row))
    return Plan(goal, tuple(sorted(options, key=lambda o: o.key(PLAN_ORDER))), tuple(misses),
                sum(len(e) for e in candidates.values()))


def _estimate_batch(estimator: Estimator, base: Scenario, goal: Goal, batch: list[tuple[dict, int]]
                    ) -> tuple[dict, dict[str, np.ndarray], dict[str, SkipReason], dict[str, SkipReason]]:
    """The candidates of several GPU counts that can run (skipped combinations are not estimated):
    their input columns, their _SEARCH_TERMS columns, the first skipped candidate's reason per rule, and the
    reasons of the rules that hold for every candidate (what the options given rule out, whatever the layout)."""
    (evaluated,) = _estimate_batches(estimator, goal, [(base, batch)])
    return evaluated


def _estimate_batches(estimator: Estimator, goal: Goal, batches: Sequence[tuple[Scenario, list[tuple[dict, int]]]]
                      ) -> list[tuple]:
    """_estimate_batch of each (base, batch), the bases one scenario on several GPU types, in one evaluation of
    their candidates end to end (the terms are computed row by row)."""
    if not batches:  # no GPU type has a count to try
        return []
    parts = []
    for base, batch in batches:
        columns = {n: getattr(base, n) for n in INPUT_NAMES}
        columns.update({k: _concat([chosen[k] for chosen, _ in batch]) for k in batch[0][0]})
        columns.update(goal.shape(base.workload, base.gen_len, columns["num_gpus"], np.asarray(columns["tp_size"])))
        parts.append((base, columns, sum(size for _, size in batch)))
    flags, codes, values = _estimate_rows(estimator, _joined([(columns, size) for _, columns, size in parts]),
                                          sum(size for _, _, size in parts))
    out, start, run = [], 0, 0
    for base, columns, size in parts:
        rows = slice(start, start + size)
        runs = int(np.count_nonzero(codes[rows] == 0))
        out.append(_estimate_part(estimator, base, columns, flags[:, rows], codes[rows],
                                  {k: v[run:run + runs] for k, v in values.items()}))
        start, run = start + size, run + runs
    return out


def _estimate_rows(estimator: Estimator, columns: dict, size: int
                   ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(skip flags, first skip codes, _SEARCH_TERMS of the rows that can run) of `size` candidates' columns."""
    flags = estimator.skip_flags(columns, size)
    codes = first_skip_codes(flags)
    runs = np.flatnonzero(codes == 0)
    columns = _rows_of(columns, runs)
    values = {k: np.empty(len(runs)) for k in _SEARCH_TERMS}
    for chunk in estimator.estimate_chunks(columns, len(runs)):
        for k in _SEARCH_TERMS:
            values[k][chunk.start:chunk.start + chunk.size] = chunk.numbers(k)
    return flags, codes, values


def _estimate_part(estimator: Estimator, base: Scenario, columns: dict, flags: np.ndarray, codes: np.ndarray,
                   values: dict[str, np.ndarray]) -> tuple:
    """_estimate_batch's answer for one base's candidates from their rows' flags, codes and values."""
    _, first = np.unique(codes, return_index=True)
    reasons = {r.code: r for r in (estimator.skip_check(_row_scenario(base, columns, int(row)))
                                   for row in first.tolist() if codes[row])}
    always = [rule.code for rule, held in zip(SKIP_RULES, flags) if len(codes) and held.all()]
    everywhere = {code: estimator.skip_check(_row_scenario(base, columns, 0), among=(code,)) for code in always}
    return _rows_of(columns, np.flatnonzero(codes == 0)), values, reasons, everywhere


def _rows_of(columns: dict, rows: np.ndarray) -> dict:
    """These rows of the candidates' columns (a constant stays one)."""
    return {k: take(v, rows) if isinstance(v, (np.ndarray, Text)) else v for k, v in columns.items()}


def _joined(parts: Sequence[tuple[dict, int]]) -> dict:
    """The parts' columns end to end: a column the parts hold as the same constant stays one, the others become
    rows (text over the union of the parts' words; a constant beside another part's rows, rows of it)."""
    if len(parts) == 1:
        return parts[0][0]
    out = {}
    for name in parts[0][0]:
        values = [columns[name] for columns, _ in parts]
        if not any(isinstance(v, (np.ndarray, Text)) for v in values) and all(
                type(v) is type(values[0]) and v == values[0] for v in values):
            out[name] = values[0]
            continue
        rows = [v if isinstance(v, (np.ndarray, Text)) else
                Text(np.zeros(size, dtype=np.int32), (v,)) if isinstance(v, str) else np.full(size, v)
                for v, (_, size) in zip(values, parts)]
        # one scenario's inputs: the same kind in every part (np.concatenate would turn whole numbers into fractions)
        assert len({"text" if isinstance(r, Text) else r.dtype.kind for r in rows}) == 1, name
        out[name] = _concat(rows)
    return out


def _row_inputs(columns: dict, row: int) -> dict[str, Any]:
    return {k: to_list(take(v, slice(row, row + 1)), 1)[0] if isinstance(v, (np.ndarray, Text)) else v
            for k, v in columns.items()}


def _row_scenario(base: Scenario, columns: dict, row: int) -> Scenario:
    return base.with_inputs(**_row_inputs(columns, row))


def _concat(parts: list) -> Any:
    if isinstance(parts[0], Text):
        vocab = tuple(dict.fromkeys(word for p in parts for word in p.vocab))
        return Text(np.concatenate([p.codes if p.vocab == vocab else
                                    np.array([vocab.index(w) for w in p.vocab], dtype=p.codes.dtype)[p.codes]
                                    for p in parts]), vocab)
    return np.concatenate(parts)


# What an RLHF group keeps of its roles' recipes: the plan lays the actor out (ZeRO stage, GPUs) and
# chooses the trade-offs of every training job (checkpointing, CPU offload); the roles follow.
_GROUP_KEEPS = ("tp_size", "pp_size", "ep_size", "optimizer")


def _least_memory(layouts: Sequence[Scenario]) -> list[Scenario]:
    """The layouts of one GPU count that need the least memory per GPU: the highest ZeRO stage and full
    recompute, every offload, the rollout engine's widest TP. If none fits at any engine share, no layout of that
    count does (sharding, recompute and offload never raise per-GPU memory), and the search passes the count over."""
    zero = max(c.zero_stage for c in layouts)
    recompute = "full" if any(c.checkpointing == "full" for c in layouts) else None
    engine_tp = max(c.rollout_tp_size for c in layouts)  # a rollout engine's weights are spread widest
    return [c for c in layouts if c.zero_stage == zero and recompute in (None, c.checkpointing)
            and c.rollout_tp_size == engine_tp]


def _search_group(estimator: Estimator, scenario: RlhfScenario, gpu: str, goal: Goal, counts: Sequence[int],
                  fixed: tuple[str, ...], gpu_order: int, pool_gpus: Sequence[str] = (),
                  iteration_seconds: float | None = None) -> tuple[PlanOption | PlanMiss, int]:
    """An RLHF group keeps its roles' recipes: the plan lays the actor out (ZeRO stage, checkpointing,
    offload and GPUs) and, unless given, the micro-batch, one group at a time, in ascending GPU counts. Separate
    pools may go on other GPU types of `pool_gpus` where they cost less (_with_cheaper_pools). With a bound on the
    iteration (a deadline's), separate pools may also take as many GPUs as the actor's (_with_matched_pools), and a
    count's answer is the cheapest of its groups within the bound, where one is.

    More GPUs never need more memory per GPU of a count's least-memory layouts (the states shard further, each rank
    takes fewer of the iteration's sequences, the engine's TP widens up to a node), so where a whole node's do not
    fit the largest count is tried next: where its least-memory layouts run and none fits, no count fits and the
    search ends there."""
    base = scenario.actor.with_inputs(gpu=gpu)
    skipped: dict[str, SkipReason] = {}
    everywhere: dict[str, SkipReason] | None = None  # the reasons that held for every candidate so far

    def runnable(n: int, record: bool = True) -> list[Scenario]:
        """This count's layouts that can run (recording why the others cannot)."""
        nonlocal everywhere
        layouts = []
        for trainer in candidates(base, estimator, n, fixed + _GROUP_KEEPS):
            # the iteration's prompts split over the actor's data-parallel ranks, which its engine's TP does not set
            splits = not rlhf_batch_check(scenario.algorithm, _laid_out_actor(scenario, gpu, trainer),
                                          dict(scenario.settings))
            for candidate in _rollout_layouts(trainer, estimator, n, fixed):
                reasons = estimator.skip_reasons(candidate)
                if record:
                    everywhere = _shared(everywhere, {r.code: r for r in reasons})
                    if reasons:
                        skipped.setdefault(reasons[0].code, reasons[0])
                if not reasons and splits:
                    layouts.append(candidate)
        return layouts

    def nearest_miss(layouts: list[Scenario], known: dict) -> tuple[GroupEstimate | None, int]:
        """Where the count's least-memory layouts fit at no engine share, the one nearest to fitting (else None),
        and how many they are."""
        smallest = [_fitting_group(estimator, scenario, gpu, c, fixed, known) for c in _least_memory(layouts)]
        if any(g["fits_recommended"] for g in smallest):
            return None, len(smallest)
        return min(smallest, key=lambda e: e["recommended"] / e["gpu_memory_bytes"]), len(smallest)

    tried, nearest = 0, None
    ruled_out = estimator.skip_reasons(base, undecided=_GROUP_SEARCHED)
    if ruled_out:  # a rule that reads nothing the search chooses (bf16 on a V100): no count can run
        return PlanMiss(gpu, counts[-1] if counts else 0, tuple(ruled_out), None), 0
    per_node = estimator.gpus[gpu].gpus_per_node
    for n in counts:
        known: dict = {}  # this count's role estimates (its layouts share frozen roles)
        layouts = runnable(n)
        if layouts:
            miss, least = nearest_miss(layouts, known)
            if miss is not None:
                tried += least
                nearest = miss
                if n == per_node and n < counts[-1]:  # a node is not enough: can the largest count be?
                    largest = runnable(counts[-1], record=False)
                    miss, least = nearest_miss(largest, {}) if largest else (None, 0)
                    if miss is not None:
                        return PlanMiss(gpu, counts[-1], (), miss), tried + least
                continue
        fitting = [_fitting_group(estimator, scenario, gpu, c, fixed, known) for c in layouts]
        groups = [g for f in fitting for g in _with_cheaper_pools(estimator, scenario, f, pool_gpus, known)]
        if iteration_seconds is not None:
            groups += [g for f in fitting for g in _with_matched_pools(estimator, scenario, f, known)]
            in_time = [g for g in groups if g["iteration_seconds"] <= iteration_seconds]
            groups = in_time or groups
        found = choose({gpu: groups}, goal).options
        if found:
            return replace(found[0], index=gpu_order * 10**9 + tried + found[0].index), tried + len(layouts)
        tried += len(layouts)
    # nothing could run: the reasons every candidate shares, else each rule's first
    return PlanMiss(gpu, counts[-1] if counts else 0, () if nearest else tuple((everywhere or skipped).values()),
                    nearest), tried


# The shares of a GPU a colocated rollout engine may take beside the trainer (veRL's performance guide
# recommends 0.5-0.7; a small share leaves room for the trainer's states, a large one a bigger KV pool).
ENGINE_BUDGETS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def _rollout_layouts(trainer: Scenario, estimator: Estimator, n: int, fixed: tuple[str, ...]) -> list[Scenario]:
    """A trainer layout with each tensor-parallel degree its rollout engine may take (inside a node, dividing the
    GPUs; the heads are the skip rules'): an engine's TP is its own (veRL, OpenRLHF), and a model whose weights
    pass the engine's share of one GPU needs it. generate() and a TP given keep theirs."""
    if trainer.serving_engine == "hf-generate" or "rollout_tp_size" in fixed:
        return [trainer]
    per_node = estimator.gpus[trainer.gpu].gpus_per_node
    return [trainer.with_inputs(rollout_tp_size=tp) for tp in TP_SIZES if tp <= min(n, per_node) and n % tp == 0]


def _engine_shares(candidate: Scenario, fixed: tuple[str, ...]) -> tuple[float, ...]:
    """The shares of each GPU the plan offers a rollout engine, largest first (a larger KV pool generates in fewer
    rounds; a smaller one leaves the trainer room): the one given, generate()'s (it has no budget), or
    ENGINE_BUDGETS."""
    if candidate.serving_engine == "hf-generate" or "gpu_memory_utilization" in fixed:
        return (candidate.gpu_memory_utilization,)
    return ENGINE_BUDGETS


_ACTOR_LAYOUT = ("num_gpus", "zero_stage", "checkpointing", "offload", "rollout_tp_size", "gpu_memory_utilization")
# Every input an RLHF search may choose, whether or not this search does (the layout, the trade-offs, the actor's
# engine, a pipeline's accumulation, the micro-batch): a skip rule that reads none of them holds for every candidate.
_GROUP_SEARCHED = LAYOUT_INPUTS + tuple(SEARCH["train"]) + _ACTOR_LAYOUT + ("grad_accum_steps", "batch_size")


def _actor_layout(candidate: Scenario) -> dict[str, Any]:
    return {k: getattr(candidate, k) for k in _ACTOR_LAYOUT}


def _laid_out_actor(scenario: RlhfScenario, gpu: str, candidate: Scenario) -> Scenario:
    """The group's actor on this GPU type with the candidate's layout (before its rank's share of the prompts)."""
    return scenario.actor.with_inputs(gpu=gpu, **_actor_layout(candidate))


def _relayout(scenario: RlhfScenario, gpu: str, candidate: Scenario, micro_batch_size: int | None = None
              ) -> RlhfScenario:
    return scenario.relayout({"micro_batch_size": micro_batch_size} if micro_batch_size else {}, gpu=gpu,
                             **_actor_layout(candidate))


def _group(estimator: Estimator, group: RlhfScenario, known: dict | None = None) -> GroupEstimate:
    """A laid-out group's estimate, its separate pools sized."""
    if group.pooled_roles:
        group = _sized_pools(estimator, group, {} if known is None else known)
    return estimator.estimate_group(group, known)


def _sized_pools(estimator: Estimator, group: RlhfScenario, known: dict) -> RlhfScenario:
    """Separate pools the user did not size: each role on the fewest GPUs of its type that hold it with the safety
    factor (buyable counts, ascending; a pool holds whole tensor-parallel groups, and whole pipelines of a trained
    role); a rollout engine's pool on as many as the actor's at least. A role that fits on none keeps the actor's
    count, and the group does not fit.

    known: the search's made estimates (estimate_group's), and the sizes found per group. A role that generates
    nothing reads no term of the engine's share of each GPU, which the search varies, nor does a pool read the
    actor's share: the sizes are found once for every share (share_free; a rollout engine apart keeps its share)."""
    given = dict(group.settings).get("role_gpus") or {}
    key = ("pools", tuple(share_free(s) for _, s in group.pooled_roles),
           group.actor.with_inputs(gpu_memory_utilization=0.0), repr(group.settings))
    sizes = known.get(key)
    if sizes is None:
        sizes = dict(given)
        for role, s in group.pooled_roles:
            n = None if role in given else _pool_size(estimator, group, role, known)
            if n and role == ROLLOUT:  # as many GPUs as the actor's at least (OpenRLHF's examples): a deadline's
                # larger actor then brings more engines, which generate the iteration sooner
                n = max(n, _as_many_as_the_actors(group, s))
            if n:
                sizes[role] = n
        known[key] = sizes
    return group.with_pools(sizes) if sizes != given else group


def _micro_batches(scenario: RlhfScenario, gpu: str, candidate: Scenario, fixed: tuple[str, ...]) -> tuple[int, ...]:
    """The micro-batches the plan tries for this layout, largest first: the one given, or the sequences of an
    actor's rank per iteration split into powers of two (a smaller micro-batch needs less memory, and the
    same compute in more passes: the plan takes the largest that fits)."""
    given = dict(scenario.settings).get("micro_batch_size")
    if given or "micro_batch_size" in fixed:
        return (given,)
    sequences = rank_sequences(scenario.algorithm, _laid_out_actor(scenario, gpu, candidate), dict(scenario.settings))
    return tuple(sorted({sequences} | {2 ** k for k in range(sequences.bit_length()) if sequences % 2 ** k == 0},
                        reverse=True))


def _with_cheaper_pools(estimator: Estimator, scenario: RlhfScenario, fitting: GroupEstimate,
                        pool_gpus: Sequence[str], known: dict) -> list[GroupEstimate]:
    """A layout's group, and where some of its separate pools cost less to buy on another of the plan's GPU types,
    the group with each such pool there (the fewest GPUs of that type that hold it; ties: fewer GPUs, then the
    type it had). A pool whose type or count the user gave stays, as does a rollout engine's (sized by the actor's),
    and beside a data-centre card a pool goes on one too (a GeForce card's licence forbids data-centre use). Both
    go to the plan's choice: the cheaper one wins unless its slower cards miss the goal."""
    group = fitting.scenario
    given = dict(scenario.settings)
    lead = estimator.gpus[group.actor.gpu]
    options = [gpu for gpu in pool_gpus if estimator.gpus[gpu].datacenter or not lead.datacenter]
    if group.placement != "separate" or len(options) < 2:
        return [fitting]
    counts, types = {role: s.num_gpus for role, s in group.roles}, {role: s.gpu for role, s in group.roles}
    price = {gpu: estimator.gpus[gpu].price_purchase_usd for gpu in {*options, *types.values()}}
    iteration = iteration_sequences_of(group.algorithm, group.actor, given["group_size"])
    moved = False
    for role, s in group.roles[1:]:
        if role in (given.get("role_gpu_types") or {}) or role in (given.get("role_gpus") or {}) or role == ROLLOUT:
            continue  # given, or a rollout engine, whose pool is sized by the actor's (_sized_pools) and whose speed
            # a cheaper card changes
        # a pool's size on each type reads its recipe and the iteration's sequences, not the other pools: found once
        key = ("cheapest", role, share_free(s).with_inputs(gpu="", num_gpus=1, batch_size=1, grad_accum_steps=1),
               iteration, group.actor.grad_accum_steps,
               given.get("micro_batch_size"), s.gpu, lead.datacenter)
        if key not in known:
            best = (counts[role] * price[s.gpu], counts[role], 0, s.gpu)
            for gpu in options:
                if gpu == s.gpu or price[gpu] > best[0]:
                    continue  # one GPU of it costs more than the pool it would replace
                n = _pool_size(estimator, group, role, known, most=int(best[0] // price[gpu]), gpu=gpu)
                if n and (n * price[gpu], n, 1, gpu) < best:
                    best = (n * price[gpu], n, 1, gpu)
            known[key] = best
        _, n, _, gpu = known[key]
        if gpu != s.gpu:
            counts[role], types[role], moved = n, gpu, True
    if not moved:
        return [fitting]
    return [fitting, estimator.estimate_group(group.relayout({"role_gpus": counts, "role_gpu_types": types}), known)]


def _with_matched_pools(estimator: Estimator, scenario: RlhfScenario, fitting: GroupEstimate, known: dict
                        ) -> list[GroupEstimate]:
    """A layout's group with every separate pool the user did not size on as many GPUs as the actor's at least (whole
    tensor-parallel groups, and whole pipelines of a trained role), as OpenRLHF's examples run them: pools sized by
    their memory alone take the iteration's sequences on few GPUs and may bound it (a reference model scoring every
    sequence on one GPU). None where that changes no pool."""
    group = fitting.scenario
    given = dict(scenario.settings).get("role_gpus") or {}
    if not group.pooled_roles:
        return []
    sizes = {role: max(s.num_gpus, _as_many_as_the_actors(group, s)) for role, s in group.pooled_roles
             if role not in given}
    if all(dict(group.roles)[role].num_gpus == n for role, n in sizes.items()):
        return []
    counts = {role: s.num_gpus for role, s in group.pooled_roles}
    return [estimator.estimate_group(group.relayout({"role_gpus": {**counts, **sizes}}), known)]


def _as_many_as_the_actors(group: RlhfScenario, s: Scenario) -> int:
    """The actor's GPU count, rounded up to whole units of role s's pool (pool_unit)."""
    return -(-group.actor.num_gpus // pool_unit(s)) * pool_unit(s)


def _pool_size(estimator: Estimator, group: RlhfScenario, role: str, known: dict, most: int = MAX_GPUS,
               gpu: str | None = None) -> int | None:
    """The fewest GPUs of its type (or of type `gpu`), `most` at the most (buyable: whole tensor-parallel groups, and
    whole pipelines of a trained role), that hold the group's `role` with the safety factor and run it (no skip rule
    holds); None where none does. A pool's role reads the actor and the group's settings, not the other pools' sizes."""
    s = group.role(role)
    unit, per_node = pool_unit(s), estimator.gpus[gpu or s.gpu].gpus_per_node
    counts = [n for n in buyable_counts(per_node, most) if n <= most and not n % unit]

    def holds(n: int) -> bool:
        return bool(estimator.estimate_known(group.role_on(role, n, gpu), known)["fits_recommended"])

    past_node = next((k for k, n in enumerate(counts) if n > per_node), None)
    for k, n in enumerate(counts):
        if k == past_node and not holds(counts[-1]):
            # past a node, more GPUs never need more memory per GPU for a pool's role (its rank's sequences and its
            # shards only shrink): where the largest count does not hold it, none does
            return None
        if holds(n):
            return None if estimator.skip_reasons(group.role_on(role, n, gpu)) else n
    return None


def _fitting_group(estimator: Estimator, scenario: RlhfScenario, gpu: str, candidate: Scenario,
                   fixed: tuple[str, ...], known: dict | None = None) -> GroupEstimate:
    """The group of this layout with its rollout engine's largest share of each GPU and then the largest
    micro-batch that fit with the safety factor (or, where none do, the smallest of both).

    A smaller micro-batch never needs more memory, so each share is tried first with the smallest (a share where
    it does not fit is passed over) and its largest fitting micro-batch is then bisected. A share is tried each in
    turn: a small one may not hold the engine's weights and one sequence's KV cache, a large one the trainer.

    known: a count's made estimates (_search_group's); the layout's group is kept there too, as the count's
    least-memory layouts are laid out again with the others once one of them fits."""
    if known is not None and ("fitting", candidate) in known:
        return known["fitting", candidate]
    micros = _micro_batches(scenario, gpu, candidate, fixed)
    made: dict[tuple[float, int], GroupEstimate] = {}  # where none fits, the smallest share's group is made once
    laid: dict[int, RlhfScenario] = {}  # the layout's group at each micro-batch, made once; each share changed on it

    def group(share: float, micro: int) -> GroupEstimate:
        if (share, micro) not in made:
            if micro not in laid:
                laid[micro] = _relayout(scenario, gpu, candidate, micro)
            made[share, micro] = _group(estimator, laid[micro].with_engine_share(share), known)
        return made[share, micro]

    shares = _engine_shares(candidate, fixed)
    smallest = _largest_fitting_share(shares, lambda share: group(share, micros[-1]))
    if smallest is None:
        fitting = group(shares[-1], micros[-1])
    else:
        share = smallest.scenario.actor.gpu_memory_utilization
        fitting, low, high = smallest, 0, len(micros) - 1  # micros[high] fits; find the first that does
        while low < high:
            middle = (low + high) // 2
            tried = group(share, micros[middle])
            if tried["fits_recommended"]:
                fitting, high = tried, middle
            else:
                low = middle + 1
    if known is not None:
        known["fitting", candidate] = fitting
    return fitting


# fit_limit's codes (terms.py) by what a larger engine share does to them: the budget binds more, the KV pool less;
# the weights alone and the host RAM do not depend on the share.
_LARGER_SHARE_BINDS, _SMALLER_SHARE_BINDS, _NO_SHARE_HELPS = (2,), (3,), (1, 4)


def _largest_fitting_share(shares: Sequence[float], group: Callable[[float], GroupEstimate]) -> GroupEstimate | None:
    """The group at the largest of `shares` (descending) that fits, or None. A larger share of each GPU for the engine
    only adds to the recommended budget and only enlarges its KV pool, so the shares whose budget fits are the
    smallest few and those whose pool holds a sequence the largest few: the largest share that fits is the largest
    whose budget fits, where its pool holds a sequence, else none fits. The largest share is tried first (most
    layouts fit there), then the rest bisected on what binds."""
    first = group(shares[0])
    if first["fits_recommended"] or first["fit_limit"] in _SMALLER_SHARE_BINDS + _NO_SHARE_HELPS:
        return first if first["fits_recommended"] else None
    low, high, best = 1, len(shares) - 1, None  # shares[:low] bind on the budget; bisect the first that does not
    while low <= high:
        middle = (low + high) // 2
        tried = group(shares[middle])
        if tried["fit_limit"] in _NO_SHARE_HELPS:
            return None
        if tried["fit_limit"] in _LARGER_SHARE_BINDS:
            low = middle + 1
        else:
            best, high = tried, middle - 1
    return best if best is not None and best["fits_recommended"] else None
