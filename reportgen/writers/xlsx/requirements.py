"""A row's requirement, live: the text that names what its job is (report.requirement), a formula over
its inputs, so an edited batch or dtype moves the row to another requirement and an edited layout
(GPUs, ZeRO, TP…) keeps it in its own.

"model · workload · name=value · …": inputs.job_inputs of the row's workload, in the input table's
order, less those its matrix (the row's matrix cell) declares interchangeable, which the plan may
choose. An RLHF group's reads its lengths from its own row (the lengths given, which its roles' follow) and the rest
from its actor's (DPO: policy's) row as the group computes with it: its batch
is a rank's prompts per iteration times the accumulation given (the group row's split), and none where the
iteration's prompts are given; then the settings
report.requirement adds for a group: how the actor trains and the other roles' models (live, from their rows) and GRPO's
group size. Two candidate rows show the same text exactly when report.requirement gives them the
same requirement; the Plan's requirement cells are matched against it. Names and values, not words:
the same text in every language.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from ...model.formulas import AND, IF, NOT, Expr, Var, concat, is_one_of, lift
from ...planning.goals import GOAL_CELLS, GOAL_PARTS, goal_cell_value
from ...model.estimate import ROLE_LENGTH_NAMES
from ...model.inputs import INPUT_BY_NAME, INPUTS, SINGLE_WORKLOADS, TRAINED_WORKLOADS, job_inputs
from ...report.build import GROUP_PASS_INPUTS, Requirement
from .checks import SETTINGS_CHECK
from .layout import OK

SEP = " · "


def _setting(name: str, value) -> Expr:
    return concat(SEP, name, "=", value)


# A serving goal sets these inputs per layout (Goal.sets): they leave the requirement of a row with the cell.
_SET_BY_GOAL = {p.sets: p.cell for p in GOAL_PARTS if p.sets}


def _job_settings(asked: Mapping[str, Sequence[str]], interchangeable: Mapping[str, Iterable[str]],
                  var: Callable[[str], Expr], goals: bool = False) -> Expr:
    """Each job input as ' · name=value' where the row's workload (asked: the job inputs of each) asks
    for it, its matrix does not declare it interchangeable and (with goals) the row's goal does not set it."""
    workloads = tuple(asked)
    parts = []
    for i in INPUTS:
        by = [w for w in workloads if i.name in asked[w]]
        if not by:
            continue
        free = [m for m, names in interchangeable.items() if i.name in names]
        conditions = ([is_one_of(var("workload"), *by)] if len(by) < len(workloads) else []) \
            + ([NOT(is_one_of(Var("matrix"), *free))] if free else []) \
            + ([Var(_SET_BY_GOAL[i.name]).eq("")] if goals and i.name in _SET_BY_GOAL else [])
        part = _setting(i.name, var(i.name))
        parts.append(IF(conditions[0] if len(conditions) == 1 else AND(*conditions), part, "") if conditions else part)
    return concat(*parts)


def _goal_settings() -> Expr:
    """The row's goal as ' · goal.name=value' per goal cell that is not blank (report.requirement adds
    Goal.settings after the job inputs)."""
    return concat(*(IF(Var(cell).eq(""), "", _setting(name, goal_cell_value(name))) for name, cell in GOAL_CELLS.items()))


def scenario_requirement(interchangeable: Mapping[str, Iterable[str]], goals: bool = False) -> Expr:
    """A Scenarios row's requirement; blank on an RLHF role row (its group's is on RLHF). With goals,
    the row's goal cells join it."""
    asked = {w: job_inputs(w) for w in SINGLE_WORKLOADS}
    text = concat(Var("model"), SEP, Var("workload"), _job_settings(asked, interchangeable, Var, goals),
                  *((_goal_settings(),) if goals else ()))
    return IF(Var("group").eq(""), text, "")


def group_requirement(need: Requirement, roles: Sequence[str], interchangeable: Mapping[str, Iterable[str]]) -> Expr:
    """An RLHF group's requirement over its role rows (Var("actor.batch_size"): the actor row's cell).
    `need` (report.requirement of the group) says which group settings follow the actor's inputs;
    those with a cell are read live, GRPO's group size (no cell) is its value."""
    given = dict(need.settings)

    def actor(name: str) -> Expr:
        if name == "batch_size":  # a rank's prompts per iteration × the accumulation given (the group row's cells);
            # while the group's settings fail, the batch as typed (its roles' micro-batches are blank)
            return IF(Var(SETTINGS_CHECK).eq(OK), Var("rank_prompts") * Var("given_grad_accum_steps"),
                      Var("given_batch_size"))
        if name in ROLE_LENGTH_NAMES:  # the lengths given (its row's cells), which its roles' follow
            return Var(f"given_{name}")
        return Var(f"{roles[0]}.{name}")
    live = {"actor_workload": actor("workload"), **{f"role.{r}": Var(f"{r}.model") for r in roles[1:]}}
    extras = [_setting(n, live.get(n, lift(v))) for n, v in need.settings if n not in INPUT_BY_NAME]
    left_out = GROUP_PASS_INPUTS + (("batch_size",) if "prompts_per_iteration" in given else ())
    asked = {w: tuple(n for n in job_inputs(need.workload, w) if n not in left_out)  # w: how the actor trains
             for w in TRAINED_WORKLOADS}
    return concat(actor("model"), SEP, need.workload, _job_settings(asked, interchangeable, actor), *extras)
