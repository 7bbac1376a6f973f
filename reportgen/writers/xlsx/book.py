"""The workbook model: every table's columns and rows, laid out before anything is written."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ...model.arrays import np
from ...model.catalog import GPU_COLUMNS
from ...model.estimate import (GROUP_SPLIT, RANKS, ROLE_LENGTHS, ROLE_SPLIT, ROLE_SPLIT_INPUTS, GroupEstimate,
                               RlhfScenario, Scenario, group_lengths, group_terms, own_pool,
                               role_own_inputs)
from ...model.formulas import (AND, IF, ISNUMBER, ROW_FIELD, Expr, ExcelContext, Num, RowOf, Var, compile_terms, concat,
                               lift, specialise, substituted, to_excel)
from ...planning.goals import Goal, goal_met_expr
from ...report.i18n import Catalogue, load_workbook_catalogue
from ...model.inputs import INPUT_BY_NAME, INPUTS, RLHF_INPUT_BY_NAME, Input
from ...planning.ranking import PLAN_FITS, PLAN_ORDER, RENT_ORDER
from ...report.build import BlockResults, Report, Result, requirement_numbers
from ...model.shape import MODEL_FIELDS, MODEL_TERMS, TEXT_FIELDS
from ...model.lookups import LOOKUP_TABLES
from ...model.terms import ASSUMPTION_DEFAULTS, ROLE_TERMS, TERM_BY_NAME, Term
from .columns import BlockRows, TableColumns, TableRows, joined_small_runs
from .checks import (CATALOG_KIND, INPUT_LISTS, LOOKUP_KEY_INPUTS, ROW_CHECK, ROW_OK, RULE_LISTS, catalog_problems, checked, gated,
                     SETTINGS_CHECK, SETTINGS_LISTS, group_check, group_settings_problems, input_problems, message,
                     row_check, rule_problems, scenario_check)
from .labels import scenario_label
from .layout import (ASSUMPTIONS_CHECK, DASH, GIB, LOOKUP_FIRST_ROW, NO_FIT, OK, SCENARIO_FIRST_ROW, Column, Names,
                     Table, key_row_column, row_context, value_row_count)
from .requirements import group_requirement, scenario_requirement
from .stream import ROW


def _gib(name: str) -> Expr:
    return Var(name) / GIB


# Shown right after the identifying columns, the label and the check (and printed): the answer in
# GiB, then fit and cost. Blank in a row whose check fails.
SUMMARY = (
    Column("allocated_peak_gib", "Allocated peak", "gib", "summary", 10, _gib("allocated_peak")),
    Column("device_total_gib", "Device total (nvidia-smi)", "gib", "summary", 11, _gib("device_total")),
    Column("recommended_gib", "Recommended (k × device total)", "gib", "summary", 12, _gib("recommended")),
    Column("gpu_memory_gib", "GPU memory", "gib", "summary", 10, _gib("gpu_memory_bytes")),
    Column("headroom_gib", "Headroom (GPU − device total)", "gib", "summary", 11, _gib("headroom_bytes")),
    Column("fits_with_k", "Fits with k (1/0)", "flag", "summary", 7, Var("fits_recommended")),
    Column("summary_purchase_usd", "Purchase cost", "usd", "summary", 11, Var("purchase_usd")),
)


def _gated(cols: Sequence[Column], check: str = "check") -> tuple[Column, ...]:
    return tuple(replace(c, gate=check) for c in cols)


def rendered(col: Column) -> Expr:
    """What a column's formula computes: its expression, blank in a row whose check fails if gated."""
    return gated(col.expr, col.gate) if col.gate else col.expr


def key_row_columns() -> tuple[Column, ...]:
    """Per catalog input (model, GPU, precision, …): the row of its catalog that holds the row's
    value, found once (MATCH), blank when there is none. Every lookup of the row reads INDEX(column,
    this cell) instead of a MATCH of its own (a scenario reads its catalogs over a hundred times),
    and the check's "unknown model" is a blank here."""
    out = []
    for name in (i.name for i in INPUTS if i.name in LOOKUP_KEY_INPUTS):
        table, kind = LOOKUP_KEY_INPUTS[name], CATALOG_KIND.get(name, name.replace("_", " "))
        row = RowOf(table, Var(name))
        out.append(Column(key_row_column(name), f"{table} row of the {kind}", "count", "helper", 8,
                          IF(ISNUMBER(row), row, ""),
                          help=f"the row of the {table} sheet that holds this row's {name} (its lookups read that "
                               f"row); blank: none (the check says why)"))
    return tuple(out)


def problem_columns(t: Catalogue) -> tuple[Column, ...]:
    """What a scenario row's check reports, by rule (its formulas stay short and shallow)."""
    first, second = input_problems(t)
    inputs = "each input against its allowed values, range or catalog row"
    return (Column(INPUT_LISTS[0], "Input problems (first inputs)", "text", "helper", 12, first, help=inputs),
            Column(INPUT_LISTS[1], "Input problems (other inputs)", "text", "helper", 12, second, help=inputs),
            *(Column(name, f"Skip-rule problems (rules, part {part} of {len(RULE_LISTS)})", "text", "helper", 20,
                     expr, help="the skip rules the command line applies, once the inputs are valid")
              for part, (name, expr) in enumerate(zip(RULE_LISTS, rule_problems(t)), start=1)),
            Column(ROW_CHECK, "Check of the row's inputs", "text", "helper", 20, row_check(),
                   help="ok, or the row's first problem (the check less the assumptions')"),
            Column(ROW_OK, "Row's inputs ok (1/0)", "flag", "helper", 7, IF(Var(ROW_CHECK).eq(OK), 1, 0),
                   help="1 when row_check is ok: the terms are blank unless it is 1"))


def label_columns(t: Catalogue, label: Expr | None, check: Expr | None) -> tuple[Column, ...]:
    """The row's live label and its check (expressions; None: each row brings its own formula)."""
    return (Column("label", "Scenario (from its inputs)", "text", "summary", 62, label,
                   "" if label is not None else "group",
                   help="model · workload · precision or dtype · batch · tokens · inputs that differ from "
                        "their default · GPUs × type · ZeRO/TP/EP"),
            Column("check", "Check", "text", "summary", 36, check, "" if check is not None else "group",
                   help="ok, or why the row cannot be computed (its totals are then blank and no plan, chart, "
                        "group or note reads it)"))


def requirement_column(expr: Expr | None) -> Column:
    """The row's requirement text (requirements.py; None: each row brings its own formula)."""
    return Column("requirement", "Requirement (model · workload · job inputs)", "text", "summary", 40, expr,
                  "" if expr is not None else "group",
                  help="what the job is, whatever its layout: the Plan compares the rows of one requirement; copy "
                       "it into a Plan row to plan it")


def _input_column(i) -> Column:
    width = {"model": 16, "gpu": 16, "lora_targets": 24, "precision": 11}.get(i.name, 10)
    return Column(i.name, i.label, "count" if i.is_int else "text", "input", width, help=i.help)


def _term_column(t: Term, label: str | None = None, special: str = "") -> Column:
    """A term's column; with `special`, each row brings its own formula instead of the expression."""
    width = {"bytes": 17, "usd": 12}.get(t.unit, 12)
    return Column(t.name, label or t.label, t.unit, "formula", width, None if special else t.expr, special, t.source)


# ---------------------------------------------------------------------------------------------
# What the Plan reads from a candidate table: the Result fields its rankings sort by, as columns

PLAN_KEYS = tuple(dict.fromkeys(PLAN_ORDER + RENT_ORDER))  # to buy, then to rent


@dataclass(frozen=True)
class PlanFields:
    """The column of a candidate table that holds each Result field the Plan ranks by (ranking.PLAN_ORDER
    and RENT_ORDER), and the Plan's figures whose expression differs by table."""
    columns: Mapping[str, str]
    figures: Mapping[str, Expr]

    def __post_init__(self):
        assert set(self.columns) == set(PLAN_KEYS), "a candidate table must hold every plan key"


# The scenario order (Result.index) is the row order; a row's place in its table stands for it. The
# summary's speed (views.speed): a training run's time or a served model's tokens per second per
# user; an RLHF group's time per iteration.
SCENARIO_PLAN = PlanFields(
    {"rent_usd": "rent_usd", "purchase_usd": "purchase_usd", "total_gpus": "num_gpus", "plan_seconds": "plan_seconds",
     "index": "row_in_table"},
    {"train_hours": IF(Var("is_train").eq(1), Var("time_to_train_seconds") / 3600, DASH),
     "iteration_seconds": lift(DASH),
     "tokens_per_s_per_user": IF(Var("is_train").eq(1), DASH, Var("tokens_per_s_per_user"))})
RLHF_PLAN = PlanFields(
    {"rent_usd": "rent_usd", "purchase_usd": "purchase_usd", "total_gpus": "total_gpus", "plan_seconds": "plan_seconds",
     "index": "row_in_table"},
    {"train_hours": lift(DASH), "iteration_seconds": Var("iteration_seconds"), "tokens_per_s_per_user": lift(DASH)})


def plan_key_column(key: str) -> str:
    return f"plan_{key}"


# A preset matrix's goal (goals.Goal), per row: editable conditions (blank: none) — a Scenarios row
# is a candidate only when it meets them. Written only when the report's preset states a goal.
GOAL_COLUMNS = (
    Column("goal_within_days", "Goal: trained within (days)", "decimal", "input", 9,
           help="the training deadline for the row's train_tokens, in days; blank: none"),
    Column("goal_users", "Goal: users at once", "count", "input", 8,
           help="serving: the users the goal asks for; the row's batch is users ÷ data-parallel replicas, "
                "set for its layout when the workbook was made"),
    Column("goal_context_tokens", "Goal: context per user (tokens)", "count", "input", 9,
           help="serving: prompt + generated tokens per user; the row's prompt was set from it"),
    Column("goal_min_tokens_per_s", "Goal: output tokens/s per user (at least)", "tokens_per_s", "input", 9,
           help="serving: the decode speed each user needs; blank: none"),
    Column("goal_max_ttft_s", "Goal: time to first token (s, at most)", "seconds", "input", 9,
           help="serving: one request's prefill on the row's layout (queueing behind other prompts not counted); "
                "blank: none"),
)
GOAL_MET = Column("goal_met", "Meets its goal (1/0)", "flag", "helper", 8, goal_met_expr(), gate="check",
                  help="1 when the row meets its goal cells (or has none): only such rows are plan candidates")


def plan_helpers(candidate: Expr, fields: PlanFields, goals: bool = False) -> tuple[Column, ...]:
    """Per-row columns the Plan reads: whether the row may be picked and fits (and meets its goal,
    with goals), then each plan key (NO_FIT when it does not), so that the Plan's minimum over the
    rows is the plan's pick."""
    fits = IF(Var("goal_met").eq(1), Var(PLAN_FITS), 0) if goals else Var(PLAN_FITS)
    keys = tuple(
        Column(plan_key_column(k), f"Plan key: {fields.columns[k]} if it fits with k (else 10^15)",
               {"purchase_usd": "usd", "rent_usd": "usd", "plan_seconds": "seconds"}.get(k, "count"), "helper", 12,
               IF(Var("plan_fits").eq(1), Var(fields.columns[k]), NO_FIT))
        for k in PLAN_KEYS)
    return (
        Column("row_in_table", "Row in table", "count", "helper", 7, special="position",
               help="the row's place in this table (1 = first data row): the scenario order"),
        Column("plan_candidate", "Plan candidate (1/0)", "flag", "helper", 9, candidate,
               help="1 for a row the Plan may pick: its check is ok (RLHF role rows are covered by their group)"),
        Column("plan_fits", "Candidate that fits with k (1/0)", "flag", "helper", 9,
               IF(Var("plan_candidate").eq(1), fits, 0)),
    ) + ((GOAL_MET,) if goals else ()) + keys


# "#": the report's number of the scenario a row states, while the row stays the one written (it moves with rows
# inserted or deleted above it); a copy elsewhere shows "—", a scenario the report does not number.
REPORT_INDEX = "report_index"
REPORT_INDEX_COLUMN = Column(REPORT_INDEX, "Report's number as written", "count", "id", 6,
                             help="the number the report gives the scenario this row was written for; '#' shows it "
                                  "while the row is that row")
SCENARIO_IDS = (
    Column("index", "#", "count", "id", 5, special="report_number",
           help="the report's number of this scenario; a copied row shows —: the report does not number it"),
    Column("name", "Name (preset)", "text", "id", 12),
    Column("matrix", "Matrix", "text", "id", 14),
    Column("group", "RLHF group", "text", "id", 8, help="the RLHF sheet row this role belongs to"),
    Column("role", "Role", "text", "id", 9),
)
NOTE_SCENARIO_IDS = (
    Column("note", "Note", "text", "id", 6),
    Column("key", "Scenario key", "text", "id", 9, help="figures read this scenario as <key>.<term>"),
    Column("name", "Name (preset)", "text", "id", 12),
)
RLHF_IDS = (
    Column("group", "Group", "text", "id", 7),
    Column("index", "#", "count", "id", 5),
    Column("name", "Name (preset)", "text", "id", 12),
    Column("matrix", "Matrix", "text", "id", 16),
    Column("workload", "Algorithm", "text", "id", 9),
    Column("placement", "Placement", "text", "id", 10),
    Column("rollout_placement", "Rollout engine placement", "text", "id", 10,
           help="PPO/GRPO: actor, the engine beside the actor; separate, engines on GPUs of their own (role rollout)"),
    Column("roles", "Role rows (Scenarios)", "text", "id", 22),
)
# An RLHF group reads its model, GPU type and count from its first role's row (as the estimator does).
RLHF_LINKS = tuple(
    Column(n, INPUT_BY_NAME[n].label, "count" if INPUT_BY_NAME[n].is_int else "text", "formula",
           8 if INPUT_BY_NAME[n].is_int else 14, special="link", help="from the group's first role row")
    for n in ("model", "gpu", "num_gpus", "zero_stage", "tp_size"))
# An RLHF group's settings that split its iteration over its pools (estimate.GROUP_SPLIT, ROLE_SPLIT), inputs of its
# row: its role rows' micro-batch, accumulation and ZeRO stage are formulas of them and of each role's GPUs.
GROUP_SETTINGS = (
    Column("given_zero_stage", "ZeRO stage (given)", "count", "input", 8,
           help="the ZeRO stage the group is given: each role runs it where it applies (a frozen model: ZeRO-3 only; "
                "a rollout engine and a pool of one data-parallel rank: none)"),
    Column("given_batch_size", "Prompts per actor rank (given)", "count", "input", 9,
           help="the prompts each of the actor's data-parallel ranks takes per iteration where prompts per iteration "
                "is blank"),
    Column("given_grad_accum_steps", "Accumulation (given)", "count", "input", 8,
           help="the accumulation the group is given: each role's is this times its micro-batches"),
    Column("given_seq_len", "Sequence length (DPO pairs)", "count", "input", 9,
           help="DPO: the tokens of each chosen or rejected sequence"),
    Column("given_prompt_len", "Prompt length", "count", "input", 9,
           help="PPO/GRPO: the rollouts' prompt tokens; the roles train on the prompt and the mean response"),
    Column("given_gen_len", "Mean response", "count", "input", 9,
           help="PPO/GRPO: the rollouts' mean generated tokens (the cache and the work)"),
    Column("given_max_gen_len", "Longest response", "count", "input", 9,
           help="PPO/GRPO: the longest response of an iteration, which the generation waits for; 0: every response "
                "is the mean"),
    *(_input_column(RLHF_INPUT_BY_NAME[n]) for n in ("group_size", "prompts_per_iteration", "micro_batch_size",
                                                      "padded_roles", "padded_len", "rollout_mode")),
)
GROUP_SETTING_NAMES = tuple(c.name for c in GROUP_SETTINGS)
# The settings only some algorithms read (blank for the others): GRPO's group, DPO's pairs, the rollouts' lengths.
_ROLLOUTS = ("ppo", "grpo")
SETTING_WORKLOADS = {"group_size": ("grpo",), "given_seq_len": ("dpo",), "given_prompt_len": _ROLLOUTS,
                     "given_gen_len": _ROLLOUTS, "padded_roles": _ROLLOUTS, "padded_len": _ROLLOUTS,
                     "rollout_mode": _ROLLOUTS}
ACTOR = "lead"  # how a group row's formulas name its first role's row (the actor, DPO's policy)


def _actor_ranks() -> Expr:
    """The actor's data-parallel ranks, from its row's inputs; blank where they are not numbers (its row says why)."""
    ranks = substituted(RANKS, lambda n: Var(f"{ACTOR}.{n}"))
    return IF(ISNUMBER(ranks), ranks, "")


# The group's split (GROUP_SPLIT) on its row: the actor's ranks, the prompts and sequences of an iteration (blank
# unless the settings pass their check), then the settings' check (their values, then veRL's two rules). Each row
# brings its own formulas (they read its role rows): group_split_exprs.
_SPLIT = {t.name: t for t in GROUP_SPLIT}
SETTINGS_CHECK_COLUMN = Column(SETTINGS_CHECK, "Settings check", "text", "helper", 20, special="group",
                               help="ok, or what is wrong with the group's settings (the group's check shows it first)")
GROUP_SPLIT_COLUMNS = (
    Column("actor_ranks", "Actor's data-parallel ranks", "count", "helper", 8, special="group",
           help="the actor's GPUs over tensor × pipeline × context parallelism"),
    *(_term_column(_SPLIT[n], special="group") for n in ("sequences_per_prompt", "rank_prompts")),
    *(Column(n, n, "text", "helper", 12, special="group") for n in SETTINGS_LISTS),
    SETTINGS_CHECK_COLUMN,
    _term_column(_SPLIT["iteration_sequences"], special="group"),
)


def group_split_exprs(t: Catalogue) -> dict[str, Expr]:
    """The expressions of GROUP_SPLIT_COLUMNS, in dependency order."""
    def split(name: str) -> Expr:  # a rank's sequences written in: no column of its own
        return substituted(_SPLIT[name].expr, lambda n: _SPLIT[n].expr if n == "rank_sequences" else None)

    rules = {n: split(n) for n in ("prompts_uneven", "micro_uneven", "rank_sequences")}
    rules["async_beside"] = AND(Var("rollout_mode").eq("async"), Var("rollout_placement").ne("separate"))
    return {"actor_ranks": _actor_ranks(),
            **{n: split(n) for n in ("sequences_per_prompt", "rank_prompts")},
            **dict(zip(SETTINGS_LISTS, group_settings_problems(t, [input_rules(n) for n in GROUP_SETTING_NAMES],
                                                              SETTING_WORKLOADS, rules))),
            SETTINGS_CHECK: checked(*map(Var, SETTINGS_LISTS)),
            "iteration_sequences": IF(AND(Var(SETTINGS_CHECK).eq(OK), ISNUMBER(Var("actor_ranks"))),
                                      split("iteration_sequences"), "")}


def input_rules(name: str) -> Input | None:
    """The rules of value of an input column: a scenario input's, an RLHF group setting's, or the scenario input's
    that a group setting is given as (given_zero_stage); None for another column (a goal cell)."""
    if name in INPUT_BY_NAME or name in RLHF_INPUT_BY_NAME:
        return INPUT_BY_NAME.get(name) or RLHF_INPUT_BY_NAME[name]
    given = name.removeprefix("given_")
    return replace(INPUT_BY_NAME[given], name=name) if given != name and given in INPUT_BY_NAME else None


def scenario_columns(t: Catalogue, ids: Sequence[Column], helpers: Sequence[Column] = (),
                     requirement: Expr | None = None, goals: bool = False) -> tuple[Column, ...]:
    """A sheet of model instances; with `requirement`, each row's (the sheet whose rows the Plan picks);
    with `goals`, the goal cells after the inputs."""
    return (tuple(ids) + label_columns(t, scenario_label(t), scenario_check(t))
            + ((requirement_column(requirement),) if requirement is not None else ()) + _gated(SUMMARY)
            + tuple(_input_column(i) for i in INPUTS) + (GOAL_COLUMNS if goals else ())
            + _gated([_term_column(term) for term in ROLE_TERMS], ROW_OK)
            + key_row_columns() + problem_columns(t) + tuple(helpers))


def rlhf_columns(t: Catalogue, groups: Sequence[Result]) -> tuple[Column, ...]:
    """Every group term that any of these groups has, in table order; a group leaves the columns of
    the other placement empty."""
    terms: dict[str, Term] = {}
    for r in groups:
        g = r.estimate.scenario
        for term in group_terms(tuple(n for n, _ in g.roles), g.placement):
            terms.setdefault(term.name, term)
    # Their formulas read the group's own role rows, so each row brings its own ("group"). Group
    # terms named after a role term (weights, …) carry only their name as label.
    cols = tuple(_term_column(term, term.label if term.label != term.name else TERM_BY_NAME[term.name].label + " (group)",
                              "group") for term in terms.values())
    candidate = IF(Var("check").eq(OK), 1, 0)
    return (RLHF_IDS + label_columns(t, None, None) + (requirement_column(None),) + RLHF_LINKS + _gated(SUMMARY)
            + GROUP_SETTINGS + GROUP_SPLIT_COLUMNS + cols + plan_helpers(candidate, RLHF_PLAN))


def row_templates(table: Table, ctx: ExcelContext) -> dict[str, str]:
    """One formula template per formula column (row number = ROW placeholder)."""
    out = {}
    for col in table.columns:
        if col.expr is not None:
            out[col.name] = "=" + to_excel(rendered(col), ctx)
        elif col.special == "position":
            out[col.name] = f"=ROW()-{table.first_row - 1}"
        elif col.special == "report_number":  # the written row (absolute: it stays put when the row is copied)
            number = table.letter(REPORT_INDEX)
            out[col.name] = f'=IF(ROW(${number}${ROW})=ROW(),{number}{ROW},"{DASH}")'
    return out


# ---------------------------------------------------------------------------------------------
# Python values of the non-term formula columns (the terms' values come from the estimator)

def book_var(row: str) -> Callable[[str], str]:
    """How compiled columns read a name: book values (the assumptions and the book-level names:
    assumptions_check) as A[name], anything else from `row` (R: the row's dict, I: the inputs)."""
    return lambda n: f"A[{n!r}]" if n in ASSUMPTION_DEFAULTS or n == ASSUMPTIONS_CHECK else f"{row}[{n!r}]"


def column_terms(cols: Sequence[Column], *, chained: bool = True) -> tuple[Term, ...]:
    """Expression columns as terms of their rendered expressions (not chained: renamed, so that every
    name they read is the row's)."""
    return tuple(Term(c.name if chained else f"_{c.name}", c.label, c.unit, rendered(c)) for c in cols)


def compiled_columns(cols: Sequence[Column], *, chained: bool = True) -> Callable[..., tuple]:
    """One function for a run of expression columns: fn(row, book values, tables) -> their values.
    Book values are the assumptions and the book-level names (assumptions_check); tables the
    catalogs with their checks. Chained: a later column reads an earlier one by name; else every
    name is the row's (columns of another table that read a candidate row's same-named columns)."""
    fn = compile_terms(column_terms(cols, chained=chained), book_var("R"), "_columns")
    return lambda row, values, tables=None: fn(None, values, tables, row)


def derived_order(columns: Sequence[Column]) -> list[Column]:
    """The expression columns, each after the columns it reads (the formulas' dependency order)."""
    pending = {c.name: c for c in columns if c.expr is not None and c.kind != "formula"}
    out: list[Column] = []
    while pending:
        ready = [c for c in pending.values() if not (rendered(c).names() & set(pending)) - {c.name}]
        assert ready, f"circular columns: {sorted(pending)}"
        for c in ready:
            out.append(pending.pop(c.name))
    return out


def derived_columns(table: Table) -> list[Column]:
    """The summary and helper columns whose values the writer computes, in dependency order."""
    return derived_order([c for c in table.columns if c.kind in ("summary", "helper") and c.special != "group"])


def position_columns(table: Table) -> list[str]:
    """The columns that hold the row's place in its table (1 = the first row)."""
    return [c.name for c in table.columns if c.special == "position"]


def fill_derived(table: Table, rows: Iterable[tuple[int, dict[str, Any]]], values: Mapping[str, Any],
                 tables: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
    """Add the value of every summary and helper column to each row dict, from the same expressions
    their formulas are rendered from (the terms' values come from the estimator). rows: (place in
    the table, 1 = the first row; the row)."""
    positions = position_columns(table)
    derived = derived_columns(table)
    fn, names = compiled_columns(derived), [c.name for c in derived]
    for place, row in rows:
        row.update(dict.fromkeys(positions, place))
        row.update(zip(names, fn(row, values, tables)))


# ---------------------------------------------------------------------------------------------
# The book

@dataclass
class Book:
    report: Report
    t: Catalogue  # the workbook's language
    lookups: dict[str, Table]  # by table name, as in Lookup(table, …)
    catalog_rows: dict[str, dict[str, dict[str, Any]]]  # table -> key -> every column's value
    scenarios: Table
    rlhf: Table
    note_scenarios: Table
    scenario_rows: TableRows
    role_rows: dict[tuple[int, str], int]  # (result index, role) -> Scenarios row
    result_rows: dict[int, int]  # result index -> row on Scenarios (single) or RLHF (group)
    group_rows: list[dict[str, Any]] = field(default_factory=list)
    group_formulas: dict[int, dict[str, str]] = field(default_factory=dict)  # group place -> its own formulas
    role_formulas: dict[int, dict[str, str]] = field(default_factory=dict)  # role row's place -> its input formulas
    note_rows: list[dict[str, Any]] = field(default_factory=list)
    note_cells: dict[tuple[str, str], int] = field(default_factory=dict)  # (note id, key) -> NoteScenarios row
    names: Names = field(default_factory=Names)
    plan_values: list[dict[str, Any]] | None = None  # the Plan's rows, once computed (plan.plan_rows)
    scenario_columns: TableColumns | None = None  # the Scenarios values of a sweep block's rows
    made: dict[int, dict[str, Any]] = field(default_factory=dict)  # result index -> its Scenarios row, once read
    live_rows: int | None = None  # Scenarios rows with live formulas (None: all); the rest values

    def value_rows(self) -> int:
        """How many Scenarios rows hold values, not formulas."""
        return value_row_count(len(self.scenario_rows), self.live_rows)

    def frozen_rows(self) -> np.ndarray | None:
        """Per Scenarios row, True where it holds values: all but live_rows rows, the Plan's picks (to buy, to rent,
        nearest a goal; a group's role rows) first, then the first rows (None: every row live)."""
        if not self.value_rows():
            return None
        picks = sorted({row - SCENARIO_FIRST_ROW for rec in self.report.recommendations for e in rec.entries
                        for r in (e.result, e.rent, e.closest) if r is not None
                        for row in ([self.role_rows[(r.index, role)] for role, _ in r.estimate.roles] if r.is_group
                                    else [self.result_rows[r.index]])})[:self.live_rows]
        frozen = np.ones(len(self.scenario_rows), dtype=bool)
        frozen[picks] = False
        first = np.flatnonzero(frozen)[:self.live_rows - len(picks)]
        frozen[first] = False
        return frozen

    def candidates(self, result: Result) -> tuple[Table, TableRows, PlanFields]:
        """The table, rows and plan fields holding a result: RLHF for groups, else Scenarios."""
        if result.is_group:
            return self.rlhf, TableRows([self.group_rows]), RLHF_PLAN
        return self.scenarios, self.scenario_rows, SCENARIO_PLAN

    def row_of(self, result: Result) -> dict[str, Any]:
        return self.rows_of([result])[0]

    def rows_of(self, results: Sequence[Result]) -> list[dict[str, Any]]:
        """The rows holding these results (a sweep block's rows are made into dicts together, once)."""
        new = {r.index: self.result_rows[r.index] - self.scenarios.first_row for r in results
               if not r.is_group and r.index not in self.made}
        self.made.update(zip(new, self.scenario_rows.rows_at(list(new.values()))))
        return [self.group_rows[self.result_rows[r.index] - self.rlhf.first_row] if r.is_group else self.made[r.index]
                for r in results]

    def context(self, table: Table, extra: Callable[[str], str | None] = lambda n: None) -> ExcelContext:
        return row_context(table, self.lookups, self.names, extra, LOOKUP_KEY_INPUTS)

    @property
    def book_values(self) -> dict[str, Any]:
        """What formulas read besides a row and the catalogs: the assumptions and their check
        (every value the report carries passed Assumption.check)."""
        return {**self.report.assumptions, ASSUMPTIONS_CHECK: OK}


def _catalog_column(name: str, values, kind: str = "input", **kw) -> Column:
    """A catalog column: whole numbers (config fields, flags) as counts, other numbers as they are."""
    unit = "count" if all(float(v).is_integer() for v in values) else "general"
    return Column(name, name, unit, kind, **kw)


CHECK_WIDTH = 30


def _catalog_table(t: Catalogue, name: str, key: str, read: Sequence[Column], others: Sequence[Column],
                   num_rows: int) -> Table:
    """A catalog: its key, its check, the columns formulas read, then formulas and notes."""
    check = Column("check", "check", "text", "summary", CHECK_WIDTH, checked(Var("problems_1"), Var("problems_2")),
                   help="ok, or why this row cannot be used (scenarios that use it say so in their check)")
    first, second = catalog_problems(t, name, [c.name for c in read])
    problems = (Column("problems_1", "problems_1", "text", "helper", 12, first),
                Column("problems_2", "problems_2", "text", "helper", 12, second))
    return Table(name, (Column(key, key, "text", "input"), check) + tuple(read) + tuple(others) + problems,
                 LOOKUP_FIRST_ROW, num_rows, key=key)


def lookup_tables(t: Catalogue, report: Report) -> dict[str, Table]:
    """The catalogs the formulas look up. Models holds every config field of a model and, as
    formulas over them, what they imply (shape.MODEL_TERMS), so editing a field recomputes every
    scenario of that model."""
    models = report.tables["Models"].values()
    model_fields = tuple(
        Column(f, f, "text", "input") if f in TEXT_FIELDS else _catalog_column(f, [m[f] for m in models])
        for f in MODEL_FIELDS)
    model_terms = tuple(Column(s.name, s.label, "flag" if s.unit == "flag" else "count", "formula", expr=s.expr,
                               help=s.source) for s in MODEL_TERMS)
    text_fields = tuple(c for c in model_fields if c.name in TEXT_FIELDS)
    out = {"Models": _catalog_table(t, "Models", "model", [c for c in model_fields if c.name not in TEXT_FIELDS],
                                    text_fields + model_terms + (Column("source", "source", "note", "id", 40),),
                                    len(report.tables["Models"]))}
    gpus = report.tables["GPUs"].values()
    out["GPUs"] = _catalog_table(
        t, "GPUs", "gpu", [_catalog_column(c, [g[c] for g in gpus]) for c in GPU_COLUMNS],
        [Column(f, f, "note", "id", 36 if f.endswith("source") else 12) for f in GPU_TEXT_FIELDS],
        len(report.tables["GPUs"]))
    for lt in LOOKUP_TABLES:
        out[lt.name] = _catalog_table(
            t, lt.name, lt.key, [_catalog_column(c, [r[c] for r in lt.rows.values()]) for c in lt.columns],
            [Column("source", "description and source", "note", "id", 90)], len(lt.rows))
    return out


GPU_TEXT_FIELDS = ("vendor", "marketed_memory", "memory_source", "spec_source", "price_source")


def catalog_rows(t: Catalogue, report: Report, lookups: Mapping[str, Table]) -> dict[str, dict[str, dict[str, Any]]]:
    """Every catalog cell's value: the report's tables (config fields and shape terms, GPU figures,
    lookup rows), texts, and each row's check (the same expression as its formula)."""
    out = {"Models": {k: {**row, "model": k, "source": t.text(report.models[k].source)}
                      for k, row in report.tables["Models"].items()},
           "GPUs": {k: {**row, "gpu": k, **{f: t.text(getattr(report.gpus[k], f)) for f in GPU_TEXT_FIELDS}}
                    for k, row in report.tables["GPUs"].items()}}
    for lt in LOOKUP_TABLES:
        out[lt.name] = {k: {**row, lt.key: k, "source": t.source(f"{lt.name}.{k}", lt.notes.get(k, ""))}
                        for k, row in lt.rows.items()}
    for name, rows in out.items():
        derived = derived_order(lookups[name].columns)
        fn = compiled_columns(derived)
        for sheet_row, row in enumerate(rows.values(), start=lookups[name].first_row):
            row.update(zip((c.name for c in derived), fn(row, {})))
            row[ROW_FIELD] = sheet_row  # where MATCH finds it (scenario rows' key_row_columns)
    return out


def _goal_cells(report: Report) -> Callable[[Goal | None, str], dict[str, Any]]:
    """A Scenarios row's goal cells, given its matrix's goal (or None) and its workload: none when the
    preset states no goal (the sheet has no goal columns); blank where the row's goal asks nothing."""
    blank = {c.name: "" for c in GOAL_COLUMNS}

    def cells(goal: Goal | None, workload: str) -> dict[str, Any]:
        return {} if not report.goals else goal.cells(workload) if goal else blank
    return cells


def _scenario_values(s: Scenario, values: Mapping[str, float], **ids) -> dict[str, Any]:
    return {**ids, **s.inputs(), **values}


def _single_ids(index, name: str, matrix: str) -> dict[str, Any]:
    """A single scenario's id cells on Scenarios (index: its result's, or each row's)."""
    return {"index": index, REPORT_INDEX: index, "name": name, "matrix": matrix, "group": "", "role": ""}


def sheet_runs(report: Report) -> Iterator[tuple[Sequence[Result] | BlockResults, np.ndarray]]:
    """The results in sheet order, as runs of one part of report.results: (the part, the places in
    it). The rows of one requirement stand together (requirements in the order they first appear,
    as the Plan lists them), in scenario order within each, so that a Plan row searches only its
    requirement's rows (plan.py) and ties still go to the first scenario. A sweep block's
    requirements are found on its columns."""
    parts = report.results.parts
    numbers, needs = requirement_numbers(report.results, report.interchangeable, report.goals)
    if not numbers:
        return
    order = np.argsort(np.concatenate(needs), kind="stable")
    starts = np.cumsum([0] + [len(p) for p in parts])
    part_of = np.searchsorted(starts, order, side="right") - 1
    cuts = np.flatnonzero(np.diff(part_of)) + 1
    for run, n in zip(np.split(order, cuts), part_of[np.r_[0, cuts]].tolist()):
        yield parts[n], run - starts[n]


def build_book(report: Report, lang: str = "en", live_rows: int | None = None) -> Book:
    t = load_workbook_catalogue(lang)
    lookups = lookup_tables(t, report)
    book = Book(report, t, lookups, catalog_rows(t, report, lookups), None, None, None, None, {}, {},
                live_rows=live_rows)
    role_rows, result_rows = book.role_rows, book.result_rows
    runs: list[list[dict[str, Any]] | BlockRows] = []
    groups: list[Result] = []
    place = 0  # the rows laid out so far
    goal_cells = _goal_cells(report)
    for part, places in sheet_runs(report):
        if isinstance(part, BlockResults):
            result_rows.update(zip((part.first_index + places).tolist(),
                                   range(SCENARIO_FIRST_ROW + place, SCENARIO_FIRST_ROW + place + len(places))))
            runs.append(BlockRows(part, places, place, lambda: book.scenario_columns))
            place += len(places)
            continue
        rows: list[dict[str, Any]] = []
        for r in (part[k] for k in places.tolist()):
            if r.is_group:
                groups.append(r)
                for role, est in r.estimate.roles:
                    role_rows[(r.index, role)] = SCENARIO_FIRST_ROW + place + len(rows)
                    rows.append(_scenario_values(est.scenario, est.values, index=r.index, name=r.estimate.scenario.name,
                                                 matrix=r.matrix, group=f"G{r.index}", role=role,
                                                 **{REPORT_INDEX: r.index}, **goal_cells(None, r.workload)))
            else:
                result_rows[r.index] = SCENARIO_FIRST_ROW + place + len(rows)
                rows.append(_scenario_values(r.lead, r.estimate.values, **_single_ids(r.index, r.lead.name, r.matrix),
                                             **goal_cells(report.goals.get(r.matrix), r.workload)))
        runs.append(rows)
        place += len(rows)
    goals = bool(report.goals)
    book.scenario_rows = TableRows(joined_small_runs(runs, lambda: book.scenario_columns))
    candidate = IF(AND(Var("check").eq(OK), Var("group").eq("")), 1, 0)
    helpers = plan_helpers(candidate, SCENARIO_PLAN, goals) + (REPORT_INDEX_COLUMN,)
    book.scenarios = Table("Scenarios", scenario_columns(t, SCENARIO_IDS, helpers,
                                                         scenario_requirement(report.interchangeable, goals), goals),
                           SCENARIO_FIRST_ROW, place, count_column="check")
    fill_derived(book.scenarios, book.scenario_rows.objects(), book.book_values, book.catalog_rows)
    book.scenario_columns = _block_columns(book)

    # the groups' term columns in the order the report meets them
    book.rlhf = Table("RLHF", rlhf_columns(t, sorted(groups, key=lambda r: r.index)), SCENARIO_FIRST_ROW, len(groups),
                      count_column="check")
    for r in groups:
        result_rows[r.index] = SCENARIO_FIRST_ROW + len(book.group_rows)
        row, formulas = _group_row(book, r, result_rows[r.index])
        book.group_formulas[len(book.group_rows)] = formulas
        book.group_rows.append(row)
        book.role_formulas.update(_role_formulas(book, r))
    fill_derived(book.rlhf, enumerate(book.group_rows, start=1), book.book_values, book.catalog_rows)

    for note in report.notes:
        for key, s in note.scenarios.items():
            book.note_cells[(note.id, key)] = SCENARIO_FIRST_ROW + len(book.note_rows)
            book.note_rows.append(_scenario_values(s, note.scenario_values[key], note=note.id, key=key, name=s.name))
    book.note_scenarios = Table("NoteScenarios", scenario_columns(t, NOTE_SCENARIO_IDS), SCENARIO_FIRST_ROW,
                                len(book.note_rows), count_column="check")
    fill_derived(book.note_scenarios, enumerate(book.note_rows, start=1), book.book_values, book.catalog_rows)
    return book


def _block_columns(book: Book) -> TableColumns:
    """The Scenarios table's values for a sweep block's rows: the terms, then the summary and helper
    columns, as one term table over the inputs and the rows' ids."""
    table = book.scenarios
    positions = position_columns(table)

    goal_cells = _goal_cells(book.report)

    def ids(part: BlockResults, rows: np.ndarray, places: np.ndarray) -> dict[str, Any]:
        return {**_single_ids(part.first_index + rows, part.block.texts("name", rows), part.block.matrix),
                **dict.fromkeys(positions, places + 1),
                **goal_cells(book.report.goals.get(part.block.matrix), part.block.workload)}

    return TableColumns(ROLE_TERMS + column_terms(derived_columns(table)), book_var("I"), ids,
                        ["index", REPORT_INDEX, *positions],
                        book.book_values, book.catalog_rows)


def _group_row(book: Book, r: Result, sheet_row: int) -> tuple[dict[str, Any], dict[str, str]]:
    """An RLHF group's values and its own formulas: Var("actor.X") is the actor row's X cell (Var "lead.X" its first
    role's). Its check is its settings', then its roles' checks; its label and terms read them only when they are ok."""
    g: GroupEstimate = r.estimate
    t = book.t
    roles = tuple(name for name, _ in g.scenario.roles)
    role_rows = {role: book.role_rows[(r.index, role)] for role in roles}
    lead = g.scenario.lead
    # where it runs is fixed by its rows; whether its engines generate ahead is its rollout_mode cell's
    prefix = " · ".join([g.scenario.algorithm.upper(), *g.scenario.placement_words(ahead=False)])
    row = {"group": f"G{r.index}", "index": r.index, "name": g.scenario.name, "matrix": r.matrix,
           "workload": g.scenario.algorithm, "placement": g.scenario.placement,
           "rollout_placement": g.rollout_settings().get("rollout_placement", ""),
           "roles": ", ".join(t("group.role_rows", role=role, row=n) for role, n in role_rows.items()),
           **{c.name: getattr(lead, c.name) for c in RLHF_LINKS}, **_group_settings(g.scenario), **g.values}
    formulas = {c.name: f"={book.scenarios.cell(c.name, role_rows[roles[0]])}" for c in RLHF_LINKS}

    def role_row(role: str) -> int:
        return role_rows[roles[0] if role == ACTOR else role]

    def role_cell(name: str) -> str | None:
        if "." not in name:
            return None
        role, term = name.split(".", 1)
        return book.scenarios.cell(term, role_row(role))

    def role_value(name: str) -> Any:
        role, _, column = name.rpartition(".")
        return book.scenario_rows[role_row(role) - SCENARIO_FIRST_ROW][column]

    ctx = book.context(book.rlhf, role_cell)
    free = book.report.interchangeable
    split = tuple(Column(name, "", "count", "helper", expr=expr) for name, expr in group_split_exprs(t).items())
    read = set().union(*(c.expr.names() for c in split)) - {c.name for c in split}
    row.update(zip((c.name for c in split), compiled_columns(split)(
        {n: role_value(n) if "." in n else row[n] for n in read}, {})))
    ahead = IF(Var("rollout_mode").eq("async"), " · async", "")  # DPO's cell is blank
    # a pool on GPUs of its own says them (the actor's label ends with the actor's): its type may be another
    pools = [part for role, _ in g.scenario.pooled_roles
             for part in (f" · {role} ", Var(f"{role}.num_gpus"), "×", Var(f"{role}.gpu"))]
    own = (Column("label", "", "text", "summary", expr=concat(prefix, ahead, " · ", Var(f"{roles[0]}.label"), *pools)),
           Column("check", "", "text", "summary", expr=IF(Var(SETTINGS_CHECK).ne(OK), Var(SETTINGS_CHECK),
                                                          group_check(t, list(role_rows.items())))),
           Column("requirement", "", "text", "summary",
                  expr=group_requirement(book.report.requirement_of(r), roles, free)))
    # What they read: the role rows' cells ("actor.label") and the group row's own (its matrix).
    values = {name: role_value(name) if "." in name else row[name]
              for name in set().union(*(c.expr.names() for c in own))}
    row.update(zip((c.name for c in own), compiled_columns(own, chained=False)(values, {})))
    exprs = {c.name: rendered(c) for c in split + own}
    exprs.update({term.name: gated(term.expr) for term in group_terms(roles, g.scenario.placement)})
    for name, expr in exprs.items():
        formulas[name] = ("=" + to_excel(expr, ctx)).replace(ROW, str(sheet_row))
    return row, formulas



def _group_settings(g: RlhfScenario) -> dict[str, Any]:
    """A group's settings cells: the actor's given ZeRO stage, batch (its rank's prompts) and accumulation, the
    lengths its roles read (group_lengths), and the group's; blank where a setting is unset or the algorithm does
    not read it (SETTING_WORKLOADS)."""
    settings = dict(g.settings)
    values = {**{f"given_{n}": getattr(g.actor, n) for n in ("zero_stage", "batch_size", "grad_accum_steps")},
              **group_lengths(g.algorithm, g.actor, settings), **settings}
    return {n: "" if values[n] is None or g.algorithm not in SETTING_WORKLOADS.get(n, (g.algorithm,)) else values[n]
            for n in GROUP_SETTING_NAMES}


# Where a role row's inputs come from: its lengths (ROLE_LENGTHS, over its group's settings), the split (ROLE_SPLIT,
# over its group's settings and its own GPUs), what the role sets itself (role_own_inputs: a value, or the actor's
# input it names), and every other input the actor's row's (the GPU count and type of a role on the actor's GPUs
# too: colocated, or a pool not given its own).
_ROLE_SPLIT = {t.name: t.expr for t in ROLE_SPLIT}
ROLE_LENGTHS_READ = set().union(*(t.expr.names() for t in ROLE_LENGTHS))
_GROUP_CELLS = ("iteration_sequences", "micro_batch_size", "given_grad_accum_steps", "given_zero_stage", SETTINGS_CHECK,
                *(n for n in GROUP_SETTING_NAMES if n in ROLE_LENGTHS_READ))


def _role_formulas(book: Book, r: Result) -> dict[int, dict[str, str]]:
    """Each role row's input formulas (by its place on Scenarios): its lengths, micro-batch, accumulation and ZeRO
    stage from its group's row (and its own GPUs), and every input it takes from the actor (the first role row) from
    the actor's row. References to other rows are absolute: a copied role row still reads its group. Blank while the
    group's settings or the row's GPUs are not numbers (the group's check says why)."""
    g: RlhfScenario = r.estimate.scenario
    settings = dict(g.settings)
    group_row = book.result_rows[r.index]
    roles = [name for name, _ in g.roles]
    actor_row = book.role_rows[(r.index, roles[0])]

    def absolute(table: Table, name: str, row: int) -> str:
        return f"{table.sheet}!${table.letter(name)}${row}"

    def split(name: str) -> Expr:
        written_in = {"role_sequences": _ROLE_SPLIT["role_sequences"], "ranks": RANKS}  # no columns of their own
        expr = substituted(substituted(_ROLE_SPLIT[name], written_in.get), written_in.get)
        return IF(AND(ISNUMBER(Var("iteration_sequences")), ISNUMBER(RANKS)), expr, "")

    def cell(name: str) -> str | None:
        return absolute(book.rlhf, name, group_row) if name in _GROUP_CELLS else None

    ctx = book.context(book.scenarios, cell)
    group = {"workload": g.algorithm, "rollout_placement": settings["rollout_placement"]}
    # While the group's settings fail, its roles' inputs are blank: each role row says why, not that they are blank.
    check = IF(Var(SETTINGS_CHECK).ne(OK), message(book.t("check.group_settings"), row=str(group_row),
                                                   reason=Var(SETTINGS_CHECK)), scenario_check(book.t))
    out = {}
    for role in roles:
        place = book.role_rows[(r.index, role)]
        exprs = {n: split(n) for n in ROLE_SPLIT_INPUTS}
        lengths = {t.name: specialise(t.expr, {**group, "role": role}) for t in ROLE_LENGTHS}
        exprs.update({n: IF(Var(SETTINGS_CHECK).eq(OK), e, "")  # a constant stays a value
                      for n, e in lengths.items() if not isinstance(e, Num)})
        exprs["check"] = check
        formulas = {n: ("=" + to_excel(e, ctx)).replace(ROW, str(place)) for n, e in exprs.items()}
        if role != roles[0]:
            own = role_own_inputs(role, settings)
            follows = {i.name: i.name for i in INPUTS if i.name not in own and i.name not in exprs
                       and i.name not in lengths}
            follows.update({n: v.name for n, v in own.items() if isinstance(v, Var)})
            for name, given in (("num_gpus", "role_gpus"), ("gpu", "role_gpu_types")):
                if own_pool(g.placement, role) and role in (settings[given] or {}):
                    del follows[name]  # a pool of its own
            formulas.update({n: "=" + absolute(book.scenarios, actor, actor_row) for n, actor in follows.items()})
        out[place - SCENARIO_FIRST_ROW] = formulas
    return out
