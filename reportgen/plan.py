"""Procurement search: per GPU type, the smallest layout that fits in memory and meets a goal.

A goal is what the buyer needs besides fitting: a training run of N tokens within a deadline, or
serving U concurrent users at a context length with a minimum decode speed per user. The search
takes, per GPU type, the fewest GPUs (then the fastest layout at that count) whose recommended budget
fits and that meets the goal; the options are then ranked by purchase price and by hourly cost.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .errors import InputError
from .estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario
from .inputs import INPUT_BY_NAME
from .units import parse_duration

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TP_SIZES = (1, 2, 4, 8)
MEASURES = ("purchase", "hourly")


@dataclass(frozen=True)
class Goal:
    """What a plan must meet besides fitting. Training: `within_seconds` for the scenario's train_tokens.
    Serving: `users` sequences at once (the batch), `context` tokens each, at least
    `min_tokens_per_s` output tokens per second per user."""
    within_seconds: float | None = None
    users: int | None = None
    context: int | None = None
    min_tokens_per_s: float | None = None

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str | None, key_path: str) -> "Goal":
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a mapping, got {raw!r}", source=source, key_path=key_path)
        allowed = ("within", "users", "context", "min_tokens_per_s")
        for key in raw:
            if key not in allowed:
                from .errors import unknown_name
                raise unknown_name("key", key, allowed, source=source, key_path=f"{key_path}.{key}")
        within = raw.get("within")
        if within is not None:
            try:
                within = parse_duration(within)
            except ValueError:
                raise InputError(f"expected a duration such as 7d, 36h or 90m, got {within!r}", source=source,
                                 key_path=f"{key_path}.within") from None
        out = {"within_seconds": within}
        for key, spec in (("users", INPUT_BY_NAME["batch_size"]), ("context", INPUT_BY_NAME["prompt_len"])):
            if raw.get(key) is not None:
                out[key] = spec.check(raw[key], source=source, key_path=f"{key_path}.{key}")
        speed = raw.get("min_tokens_per_s")
        if speed is not None:
            if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed < 1e6:
                raise InputError(f"expected tokens per second between 0 and 1,000,000, got {speed!r}",
                                 source=source, key_path=f"{key_path}.min_tokens_per_s")
            out["min_tokens_per_s"] = float(speed)
        return cls(**out)

    @property
    def serving(self) -> bool:
        return any(v is not None for v in (self.users, self.context, self.min_tokens_per_s))

    def shape(self, s: Scenario) -> Scenario:
        """The scenario the goal describes: the users spread over the data-parallel replicas (each
        replica's batch), the context is prompt + generated."""
        if s.workload != "inference":
            return s
        changes: dict[str, int] = {}
        if self.users is not None:
            replicas = max(1, s.num_gpus // s.tp_size)
            changes["batch_size"] = -(-self.users // replicas)
        if self.context is not None:
            if self.context <= s.gen_len:
                raise InputError(f"the context ({self.context:,} tokens) must exceed the generated tokens "
                                 f"({s.gen_len:,})", key_path="goal.context")
            changes["prompt_len"] = self.context - s.gen_len
        return replace(s, **changes)

    def met(self, values: Mapping[str, float]) -> bool:
        if self.within_seconds is not None and values["is_train"]:
            if values["time_to_train_seconds"] > self.within_seconds:
                return False
        if self.min_tokens_per_s is not None and not values["is_train"]:
            if values["tokens_per_s_per_user"] < self.min_tokens_per_s:
                return False
        return True

    def describe(self) -> str:
        parts = []
        if self.within_seconds is not None:
            parts.append(f"train within {self.within_seconds / 86400:g} days")
        if self.users is not None:
            parts.append(f"{self.users:,} users at once")
        if self.context is not None:
            parts.append(f"{self.context:,} tokens of context")
        if self.min_tokens_per_s is not None:
            parts.append(f"≥ {self.min_tokens_per_s:g} tokens/s per user")
        return ", ".join(parts) or "fits in memory"


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


def candidates(s: Scenario, estimator: Estimator, n: int, fixed: Iterable[str] = ()) -> Iterator[Scenario]:
    """Every layout of scenario s on n GPUs the plan may try: the SEARCH choices not in `fixed`, tensor
    parallelism inside one node, expert parallelism only for MoE models."""
    space = dict(SEARCH["serve" if s.workload == "inference" else "train"])
    per_node = estimator.gpus[s.gpu].gpus_per_node
    space["tp_size"] = tuple(tp for tp in space["tp_size"] if tp <= min(n, per_node))
    moe = estimator.tables["Models"][s.model]["is_moe"]
    space["ep_size"] = tuple(ep for ep in space["ep_size"] if ep <= n and (moe or ep == 1))
    if "optimizer" in space and s.optimizer not in space["optimizer"]:
        space.pop("optimizer")  # SGD is a different recipe, not a state dtype of Adam
    for name in fixed:
        space.pop(name, None)
    names = list(space)
    for values in itertools.product(*(space[k] for k in names)):
        choice = dict(zip(names, values))
        model_parallel = choice.get("tp_size", s.tp_size) * choice.get("pp_size", s.pp_size)
        if model_parallel > n or (choice.get("zero_stage", 0) and n // model_parallel < 2):
            continue  # more stages than GPUs, or nothing left to shard
        yield replace(s, num_gpus=n, **choice)


def plan(estimator: Estimator, scenario: Scenario | RlhfScenario, gpus: Sequence[str], goal: Goal = Goal(),
         counts: Sequence[int] = GPU_COUNTS, fixed: Iterable[str] = ()) -> Plan:
    """For each GPU type, the smallest GPU count with a layout whose recommended budget fits and that
    meets the goal (at that count, the fastest such layout); GPU types where nothing up to max(counts)
    does are left out. `fixed`: inputs the search must keep as the scenario has them."""
    fixed = tuple(fixed)
    options = [o for o in (_search(estimator, scenario, gpu, goal, counts, fixed) for gpu in dict.fromkeys(gpus)) if o]
    return Plan(goal, tuple(sorted(options, key=lambda o: (o.purchase_usd, o.total_gpus, o.gpu))))


def _speed(est: Estimate | GroupEstimate) -> float:
    """Lower is faster: a training run's time, a served token's time (groups: their peak memory)."""
    if isinstance(est, GroupEstimate):
        return est["recommended"]
    return est["time_to_train_seconds"] if est["is_train"] else est["seconds_per_output_token"]


def _search(estimator: Estimator, scenario, gpu: str, goal: Goal, counts: Sequence[int],
            fixed: tuple[str, ...]) -> PlanOption | None:
    base = replace(scenario.actor if isinstance(scenario, RlhfScenario) else scenario, gpu=gpu)
    # RLHF groups keep their roles' recipes: the plan lays the actor out (ZeRO stage, GPUs).
    fixed_here = fixed + (("tp_size", "pp_size", "ep_size", "checkpointing", "offload", "optimizer")
                          if isinstance(scenario, RlhfScenario)
                          else ())
    for n in counts:
        found = []
        for candidate in candidates(base, estimator, n, fixed_here):
            candidate = goal.shape(candidate)
            if estimator.skip_check(candidate):
                continue
            if isinstance(scenario, RlhfScenario):
                est = estimator.estimate_group(scenario.relayout(gpu=gpu, num_gpus=n,
                                                                 zero_stage=candidate.zero_stage))
            else:
                est = estimator.estimate(candidate)
            if est["fits_recommended"] and (isinstance(est, GroupEstimate) or goal.met(est.values)):
                found.append(PlanOption(gpu, n, candidate.zero_stage, candidate.tp_size, est))
        if found:
            return min(found, key=lambda o: _speed(o.estimate))
    return None
