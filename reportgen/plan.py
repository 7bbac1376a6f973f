"""Procurement search: per GPU type, the smallest layout that fits in memory and meets a goal.

A goal is what the buyer needs besides fitting: a training run of N tokens within a deadline, or
serving U concurrent users at a context length with a minimum decode speed per user. The search
takes, per GPU type, the fewest GPUs (then the fastest layout at that count) whose recommended budget
fits and that meets the goal; the options are then ranked by purchase price and by hourly cost.
The candidates of a GPU type are input columns, estimated as arrays (Estimator.estimate_chunks), a
batch of GPU counts at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Sequence


from .arrays import np
from .estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario
from .goals import Goal
from .inputs import INPUT_NAMES
from .vector import CHUNK_ROWS, Text, take, to_list

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TP_SIZES = (1, 2, 4, 8)
MEASURES = ("purchase", "hourly")


@dataclass(frozen=True)
class PlanOption:
    gpu: str
    num_gpus: int
    zero_stage: int
    tp_size: int
    estimate: Estimate | GroupEstimate

    @property
    def purchase_usd(self) -> float:
        return self.estimate["purchase_usd"]

    @property
    def hourly_usd(self) -> float:
        return self.estimate["hourly_usd"]

    @property
    def run_cost_usd(self) -> float | None:
        """A training run's cost at the hourly price (serving has no end: compare hourly_usd)."""
        if isinstance(self.estimate, GroupEstimate) or not self.estimate["is_train"]:
            return None
        return self.estimate["cost_usd"]

    @property
    def total_gpus(self) -> int:
        """GPUs to buy: num_gpus per role pool when RLHF roles sit on separate pools."""
        return int(self.estimate["total_gpus"]) if isinstance(self.estimate, GroupEstimate) else self.num_gpus

    def cost(self, measure: str) -> float:
        """The ranking cost: purchase price, or the hourly bill (a training run: its whole cost)."""
        if measure == "purchase":
            return self.purchase_usd
        return self.estimate.rent_usd

    @property
    def layout(self) -> dict[str, Any]:
        """What the plan chose: the lead scenario's layout and trade-off inputs."""
        s = self.estimate.scenario.actor if isinstance(self.estimate, GroupEstimate) else self.estimate.scenario
        return {k: getattr(s, k) for k in ("num_gpus", "tp_size", "pp_size", "ep_size", "zero_stage", "checkpointing",
                                           "offload", "optimizer")}

    def to_json(self) -> dict:
        out = {"gpu": self.gpu, "num_gpus": self.num_gpus, "total_gpus": self.total_gpus, "zero_stage": self.zero_stage,
               "tp_size": self.tp_size, "layout": self.layout, "purchase_usd": self.purchase_usd,
               "hourly_usd": self.hourly_usd, "per_gpu_bytes": self.estimate.per_gpu_bytes,
               "host_offload_bytes": int(self.estimate["host_offload_bytes"]) if not isinstance(
                   self.estimate, GroupEstimate) else 0}
        if isinstance(self.estimate, GroupEstimate):
            out["gpus_per_role"] = {r: e.scenario.num_gpus for r, e in self.estimate.roles}
        else:
            time = self.estimate.time_json()
            if time:
                out["time"] = time
        return out


@dataclass(frozen=True)
class Plan:
    goal: Goal
    options: tuple[PlanOption, ...]  # one per GPU type that can meet the goal, by purchase price
    tried: int = 0  # candidate layouts considered

    def cheapest(self, measure: str) -> PlanOption | None:
        return min(self.options, key=lambda o: (o.cost(measure), o.total_gpus, o.gpu), default=None)

    def to_json(self) -> dict:
        return {"goal": self.goal.describe(),
                "cheapest": {m: (self.cheapest(m).gpu if self.cheapest(m) else None) for m in MEASURES},
                "options": [o.to_json() for o in self.options]}


# What a plan may choose, per workload kind, unless the user fixed it: the layout, and for training
# the recompute and offload trade-offs (slower, less memory) and Adam's state dtype (bitsandbytes'
# 8-bit AdamW: a quarter of the state memory).
SEARCH = {
    "train": {"zero_stage": (0, 1, 2, 3), "tp_size": TP_SIZES, "pp_size": (1, 2, 4, 8), "ep_size": (1, 2, 4, 8),
              "checkpointing": ("none", "selective", "full"), "offload": ("none", "optimizer", "all"),
              "optimizer": ("adamw", "adamw-8bit")},
    "serve": {"tp_size": TP_SIZES, "ep_size": (1, 2, 4, 8)},
}


def _space(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str]) -> dict[str, tuple]:
    """The SEARCH choices for scenario s on n GPUs, less those in `fixed`: tensor parallelism inside
    one node, expert parallelism only for MoE models."""
    space = dict(SEARCH["serve" if s.workload == "inference" else "train"])
    per_node = estimator.gpus[s.gpu].gpus_per_node
    space["tp_size"] = tuple(tp for tp in space["tp_size"] if tp <= min(n, per_node))
    moe = estimator.tables["Models"][s.model]["is_moe"]
    space["ep_size"] = tuple(ep for ep in space["ep_size"] if ep <= n and (moe or ep == 1))
    if "optimizer" in space and s.optimizer not in space["optimizer"]:
        space.pop("optimizer")  # SGD is a different recipe, not a state dtype of Adam
    for name in fixed:
        space.pop(name, None)
    return space


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
    # more stages than GPUs, or a ZeRO stage without two data-parallel ranks to shard over
    runs = ~((model_parallel > n) | ((zero != 0) & (n // model_parallel < 2)))
    keep = np.flatnonzero(np.broadcast_to(runs, (size,)))
    columns = {k: take(v, keep) for k, v in columns.items()}
    columns["num_gpus"] = np.full(len(keep), n, dtype=np.int64)
    return columns, len(keep)


def candidates(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str] = ()) -> Iterator[Scenario]:
    """candidate_columns as scenarios."""
    columns, size = candidate_columns(s, estimator, n, fixed)
    values = {k: to_list(v, size) for k, v in columns.items()}
    for i in range(size):
        yield replace(s, **{k: v[i] for k, v in values.items()})


def plan(estimator: Estimator, scenario: Scenario | RlhfScenario, gpus: Sequence[str], goal: Goal = Goal(),
         counts: Sequence[int] = GPU_COUNTS, fixed: Iterable[str] = ()) -> Plan:
    """For each GPU type, the smallest GPU count with a layout whose recommended budget fits and that
    meets the goal (at that count, the fastest such layout); GPU types where nothing up to max(counts)
    does are left out. `fixed`: inputs the search must keep as the scenario has them."""
    fixed = tuple(fixed)
    search = _search_group if isinstance(scenario, RlhfScenario) else _search
    found = [search(estimator, scenario, gpu, goal, counts, fixed) for gpu in dict.fromkeys(gpus)]
    options = [o for o, _ in found if o]
    return Plan(goal, tuple(sorted(options, key=lambda o: (o.purchase_usd, o.total_gpus, o.gpu))),
                sum(tried for _, tried in found))


# The terms the search reads of each candidate.
_SEARCH_TERMS = ("fits_recommended", "is_train", "time_to_train_seconds", "seconds_per_output_token",
                 "tokens_per_s_per_user")


def _search(estimator: Estimator, scenario: Scenario, gpu: str, goal: Goal, counts: Sequence[int],
            fixed: tuple[str, ...]) -> tuple[PlanOption | None, int]:
    """(the option, candidates considered): GPU counts in ascending batches of about CHUNK_ROWS
    candidates, stopping at the first count where a candidate fits and meets the goal."""
    base = replace(scenario, gpu=gpu)
    tried = 0
    pending: list[tuple[int, dict, int]] = []
    for k, n in enumerate(counts):
        columns, size = candidate_columns(base, estimator, n, fixed)
        pending.append((n, columns, size))
        if sum(p[2] for p in pending) < CHUNK_ROWS and k < len(counts) - 1:
            continue
        tried += sum(p[2] for p in pending)
        option = _best(estimator, base, goal, pending)
        pending = []
        if option:
            return option, tried
    return None, tried


def _best(estimator: Estimator, base: Scenario, goal: Goal, batch: list[tuple[int, dict, int]]) -> PlanOption | None:
    """The fastest candidate at the fewest GPUs that fits and meets the goal (None: none does) among
    the candidates of several GPU counts; skipped combinations are not estimated."""
    chosen = {k: _concat([columns[k] for _, columns, _ in batch]) for k in batch[0][1]}
    size = sum(p[2] for p in batch)
    columns = {n: getattr(base, n) for n in INPUT_NAMES}
    columns.update(chosen)
    columns.update(goal.shape(base, columns["num_gpus"], np.asarray(columns["tp_size"])))
    runs = np.flatnonzero(estimator.skip_codes(columns, size) == 0)
    columns = {k: take(v, runs) if isinstance(v, (np.ndarray, Text)) else v for k, v in columns.items()}
    values = {k: np.empty(len(runs)) for k in _SEARCH_TERMS}
    for chunk in estimator.estimate_chunks(columns, len(runs)):
        for k in _SEARCH_TERMS:
            values[k][chunk.start:chunk.start + chunk.size] = chunk.numbers(k)
    good = (values["fits_recommended"] != 0) & goal.met(values)
    if not good.any():
        return None
    gpus = columns["num_gpus"]
    fewest = gpus[good].min()
    speed = np.where(values["is_train"] != 0, values["time_to_train_seconds"], values["seconds_per_output_token"])
    best = int(np.argmin(np.where(good & (gpus == fewest), speed, np.inf)))  # the first of equals, as min() takes
    inputs = {k: to_list(take(v, slice(best, best + 1)), 1)[0] if isinstance(v, (np.ndarray, Text)) else v
              for k, v in columns.items()}
    candidate = replace(base, **inputs)
    return PlanOption(base.gpu, candidate.num_gpus, candidate.zero_stage, candidate.tp_size,
                      estimator.estimate(candidate))


def _concat(parts: list) -> Any:
    if isinstance(parts[0], Text):
        return Text(np.concatenate([p.codes for p in parts]), parts[0].vocab)
    return np.concatenate(parts)


# What an RLHF group keeps of its roles' recipes: the plan lays the actor out (ZeRO stage, GPUs).
_GROUP_KEEPS = ("tp_size", "pp_size", "ep_size", "checkpointing", "offload", "optimizer")


def _search_group(estimator: Estimator, scenario: RlhfScenario, gpu: str, goal: Goal, counts: Sequence[int],
                  fixed: tuple[str, ...]) -> tuple[PlanOption | None, int]:
    """An RLHF group keeps its roles' recipes: the plan lays the actor out (ZeRO stage, GPUs), one
    group at a time (a few dozen candidates)."""
    base = replace(scenario.actor, gpu=gpu)
    tried = 0
    for n in counts:
        found = []
        for candidate in candidates(base, estimator, n, fixed + _GROUP_KEEPS):
            tried += 1
            if estimator.skip_check(candidate):
                continue
            est = estimator.estimate_group(scenario.relayout(gpu=gpu, num_gpus=n, zero_stage=candidate.zero_stage))
            if est["fits_recommended"]:
                found.append(PlanOption(gpu, n, candidate.zero_stage, candidate.tp_size, est))
        if found:
            return min(found, key=lambda o: o.estimate["recommended"]), tried
    return None, tried
