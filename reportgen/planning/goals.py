"""What a buyer needs besides fitting in memory: a training run finished within a deadline, or serving
a number of users at a context length and a decode speed. The plan search (`reportgen plan`) and the
report's picks of a preset matrix (its `goal:` key) read the same definition. A serving goal may also
bound the time to first token: the term prefill_seconds, one request's prefill on the layout (its
prompt is the goal's context less the generated tokens); waiting behind other requests' prefills is
not counted."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple

from ..model.arrays import np
from ..errors import InputError, unknown_name
from ..model.formulas import IF, ISNUMBER, Expr, Var
from ..model.inputs import INPUT_BY_NAME
from ..model.units import SECONDS_PER, parse_duration

class GoalPart(NamedTuple):
    key: str  # in a preset's goal mapping (the CLI option is --<key>)
    setting: str  # the requirement setting (Goal.settings)
    cell: str  # the workbook column that holds it per row (the deadline in days there: what a planner types)
    attr: str  # the Goal attribute that holds it
    of: str  # the workloads it is asked of: "train" or "serve" (goal_kind)
    sets: str = ""  # the scenario input it sets for each layout (Goal.shape), or ""
    # A condition on a term (Goal.met and the workbook's goal_met, both from here): the term, "le" (at most
    # the goal) or "ge" (at least), the cell's unit in the setting's (the deadline is typed in days).
    term: str = ""
    bound: str = ""
    cell_scale: float = 1


SECONDS_PER_DAY = SECONDS_PER["d"]
GOAL_PARTS = (GoalPart("within", "goal.within_seconds", "goal_within_days", "within_seconds", "train",
                       term="time_to_train_seconds", bound="le", cell_scale=SECONDS_PER_DAY),
              GoalPart("users", "goal.users", "goal_users", "users", "serve", sets="batch_size"),
              GoalPart("context", "goal.context_tokens", "goal_context_tokens", "context", "serve", sets="prompt_len"),
              GoalPart("min_tokens_per_s", "goal.min_tokens_per_s", "goal_min_tokens_per_s", "min_tokens_per_s", "serve",
                       term="tokens_per_s_per_user", bound="ge"),
              GoalPart("max_ttft", "goal.max_ttft_seconds", "goal_max_ttft_s", "max_ttft_seconds", "serve",
                       term="prefill_seconds", bound="le"))
GOAL_KEYS = tuple(p.key for p in GOAL_PARTS)
GOAL_CELLS = {p.setting: p.cell for p in GOAL_PARTS}
CONDITIONS = tuple(p for p in GOAL_PARTS if p.term)
# the terms Goal.met reads
GOAL_TERMS = ("is_train",) + tuple(p.term for p in CONDITIONS)


def goal_kind(workload: str) -> str:
    """The goal parts a scenario of this workload is asked ("serve" for inference, else "train")."""
    return "serve" if workload == "inference" else "train"


@dataclass(frozen=True)
class Goal:
    """What a plan must meet besides fitting. Training: `within_seconds` for the scenario's train_tokens.
    Serving: `users` sequences at once (the batch), `context` tokens each, at least
    `min_tokens_per_s` output tokens per second per user, the first token within `max_ttft_seconds`."""
    within_seconds: float | None = None
    users: int | None = None
    context: int | None = None
    min_tokens_per_s: float | None = None
    max_ttft_seconds: float | None = None

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str | None, key_path: str) -> "Goal":
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a mapping, got {raw!r}", source=source, key_path=key_path)
        for key in raw:
            if key not in GOAL_KEYS:
                raise unknown_name("key", key, GOAL_KEYS, source=source, key_path=f"{key_path}.{key}")
        out = {}
        for key, field in (("within", "within_seconds"), ("max_ttft", "max_ttft_seconds")):
            if raw.get(key) is not None:
                try:
                    out[field] = parse_duration(raw[key])
                except ValueError as exc:
                    raise InputError(str(exc), source=source, key_path=f"{key_path}.{key}") from None
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
        return any(getattr(self, p.attr) is not None for p in GOAL_PARTS if p.of == "serve")

    def sets(self, workload: str) -> tuple[GoalPart, ...]:
        """The goal's parts that set an input of a scenario of this workload (a preset may not also give it)."""
        asked = dict(self.settings(workload))
        return tuple(p for p in GOAL_PARTS if p.sets and p.setting in asked)

    def shape(self, workload: str, gen_len: Any, num_gpus: Any, tp_size: Any) -> dict[str, Any]:
        """The inputs the goal sets for a scenario of `workload` generating gen_len tokens, laid out on
        num_gpus with tp_size (numbers, or arrays of rows or candidates): the users spread over the
        data-parallel replicas (each replica's batch), the context is prompt + generated."""
        if workload != "inference":
            return {}
        changes: dict[str, Any] = {}
        if self.users is not None:
            replicas = np.maximum(1, num_gpus // tp_size)
            changes["batch_size"] = -(-self.users // replicas)
        if self.context is not None:
            self.check_context(gen_len)
            changes["prompt_len"] = self.context - gen_len
        return changes

    def check_context(self, gen_len: Any) -> None:
        """Refuse generated tokens (a number or an array) that leave no prompt in the goal's context."""
        if self.context is None:
            return
        too_long = np.asarray(gen_len) >= self.context
        if too_long.any():
            raise InputError(f"the context ({self.context:,} tokens) must exceed the generated tokens "
                             f"({int(np.asarray(gen_len).flat[int(np.argmax(too_long))]):,})", key_path="goal.context")

    def met(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """Which estimates meet the goal (values: term columns): each CONDITIONS part it asks, on the
        workloads it is asked of."""
        train = values["is_train"] != 0
        ok = np.ones(len(train), dtype=bool)
        for part in CONDITIONS:
            goal = getattr(self, part.attr)
            if goal is not None:
                within = values[part.term] <= goal if part.bound == "le" else values[part.term] >= goal
                ok &= (~train if part.of == "train" else train) | within
        return ok

    def meets(self, estimate: Mapping[str, float]) -> bool:
        """Whether one estimate meets the goal."""
        return bool(self.met({k: np.asarray([estimate[k]]) for k in GOAL_TERMS})[0])

    def settings(self, workload: str) -> tuple[tuple[str, float | int], ...]:
        """What the goal asks of a scenario of this workload, as requirement settings ('goal.' names)."""
        asked = ((p.setting, getattr(self, p.attr)) for p in GOAL_PARTS if p.of == goal_kind(workload))
        return tuple((name, value) for name, value in asked if value is not None)

    def cells(self, workload: str) -> dict[str, float | int | str]:
        """A workbook row's goal cells for a scenario of this workload ('' where the goal asks nothing)."""
        asked = dict(self.settings(workload))
        return {p.cell: asked[p.setting] / p.cell_scale if p.setting in asked else "" for p in GOAL_PARTS}

    def describe(self, gen_len: int | None = None) -> str:
        """The goal in English; a serving context with its prompt/generated split when gen_len is given."""
        parts = []
        if self.within_seconds is not None:
            parts.append(f"train within {self.within_seconds / 86400:g} days")
        if self.users is not None:
            parts.append(f"{self.users:,} users at once")
        if self.context is not None:
            split = f" ({self.context - gen_len:,} prompt + {gen_len:,} generated)" if gen_len is not None else ""
            parts.append(f"{self.context:,} tokens of context{split}")
        if self.min_tokens_per_s is not None:
            parts.append(f"≥ {self.min_tokens_per_s:g} tokens/s per user")
        if self.max_ttft_seconds is not None:
            parts.append(f"first token within {self.max_ttft_seconds:g} s")
        return ", ".join(parts) or "fits in memory"


def goal_cell_value(name: str) -> Expr:
    """A goal setting's value as the workbook computes it from the row's cell (Goal.cells inverted)."""
    (part,) = (p for p in GOAL_PARTS if p.setting == name)
    cell = Var(part.cell)
    # a deadline typed as text ('7d') is shown as typed: the row then meets no deadline (goal_met_expr)
    return IF(ISNUMBER(cell), cell * part.cell_scale, cell) if part.cell_scale != 1 else cell


def goal_met_expr() -> Expr:
    """Goal.met over a workbook row (1/0): the product of its CONDITIONS cells, blank where the goal asks
    nothing; a cell that is not a number meets nothing (its data validation refuses one typed)."""
    out: Expr | None = None
    for part in CONDITIONS:
        cell, term = Var(part.cell), Var(part.term)
        goal = cell * part.cell_scale if part.cell_scale != 1 else cell
        met = term.le(goal) if part.bound == "le" else term.ge(goal)
        applies = Var("is_train").eq(1 if part.of == "train" else 0)
        condition = IF(cell.eq(""), 1, IF(ISNUMBER(cell), IF(applies, IF(met, 1, 0), 1), 0))
        out = condition if out is None else out * condition
    return out
