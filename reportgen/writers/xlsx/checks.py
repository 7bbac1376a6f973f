"""Per-row checks: "ok", or why a row cannot be computed, as formulas a planner's edits re-evaluate.

Generated from the tables the command line validates with, never a second list: the scenario
inputs' allowed values, ranges and catalogs (inputs.INPUTS), the skip rules and their words (terms.SKIP_RULES),
the assumptions' limits (terms.ASSUMPTIONS), and the rules
the catalogs are loaded with (positive whole config fields, KV heads dividing the attention heads,
GPU memory a positive number of MiB, non-negative prices and table entries). The first rule that
fails is the reason; a check reads only cells its earlier rules have vouched for (IF evaluates the
branch it takes), so a row with a typo shows its reason instead of an error.
"""
from __future__ import annotations

from dataclasses import fields
from string import Formatter
from typing import Mapping, Sequence

from ...model.formulas import (AND, FIND, FLOOR, IF, ISNUMBER, LEFT, MOD, NOT, OR, Expr, InTable, Lookup, Str, Var,
                               concat, is_one_of)
from ...report.i18n import Catalogue
from ...model.inputs import FROZEN, INPUT_NAMES, INPUTS, ROLLOUT, Input
from ...model.spec import ModelSpec
from ...model.terms import ROLE_TERMS, SKIP_RULES, Assumption, inlined
from .layout import ASSUMPTIONS_CHECK, OK

def _lookup_key_inputs() -> dict[str, str]:
    """Input name -> lookup table it keys (model -> Models, …), read from the term table itself."""
    found: dict[str, str] = {}

    def visit(e: Expr) -> None:
        if isinstance(e, Lookup) and isinstance(e.key, Var):
            found[e.key.name] = e.table
        for child in e.children():
            visit(child)

    for term in ROLE_TERMS:
        visit(term.expr)
    return found


LOOKUP_KEY_INPUTS = _lookup_key_inputs()


# Model config fields that must be at least 1 (the others at least 0): models.py reads them so.
POSITIVE_MODEL_FIELDS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                         "num_key_value_heads", "head_dim")
MODEL_FLAGS = tuple(f.name for f in fields(ModelSpec) if f.type == "bool")
MODEL_NUMBERS = tuple(f.name for f in fields(ModelSpec) if f.type == "float")  # dropout probabilities
# How the command line names a catalog input in "unknown …" messages.
CATALOG_KIND = {"model": "model", "gpu": "GPU"}


def message(template: str, **values) -> Expr:
    """A message template ({name} placeholders, as in the catalogues) as text joined from `values`."""
    parts: list = []
    for literal, name, spec, _ in Formatter().parse(template):
        parts.append(literal)
        if name is not None:
            value = values[name]
            parts.append(format(value, spec) if spec else value)
    return concat(*parts)


def shown(x: Expr) -> Expr:
    """A cell's value as Python's repr shows it in the CLI's messages: numbers plain, text quoted."""
    return IF(ISNUMBER(x), x, quoted(x))


def quoted(x: Expr) -> Expr:
    """shown(x) where x is known not to be a number (the formula is a quarter as long)."""
    return concat("'", x, "'")




def skip_template(t: Catalogue, code: str) -> str:
    """A skip rule's words: in English the CLI's own text; in other languages the report's translation."""
    return t(f"skip.{code}")


# ---------------------------------------------------------------------------------------------
# Problems: each rule gives its message (ending with SEP) or "", independently of the others, so
# the formulas stay shallow (Excel allows 64 nested functions and 8,192 characters): a row's
# problems are lists of them (helper columns list them all), and its check is ok or the first of
# them, as the command line reports the first. A list ends with END, so that a row without problems
# shows END rather than an empty text: LibreOffice takes an empty cached text for a missing value
# and recalculates the cell on load (40,000 such cells cost a third of a 10,000-scenario sweep's load).

SEP = " ¦ "
END = "—"


def _problem(fails: Expr, text: Expr) -> Expr:
    return IF(fails, concat(text, SEP), "")


def _problem_unless(holds: Expr, text: Expr) -> Expr:
    """_problem(NOT(holds), text), without the NOT."""
    return IF(holds, "", concat(text, SEP))


def problem_list(problems: Sequence[Expr]) -> Expr:
    return concat(*problems, END)


def checked(*lists: Expr) -> Expr:
    """ok, or the first problem of the first list that has one."""
    out: Expr = Str(OK)
    for problems in reversed(lists):
        out = IF(problems.ne(END), LEFT(problems, FIND(SEP, problems) - 1), out)
    return out


def _input_problem(t: Catalogue, i: Input) -> Expr:
    x = Var(i.name)
    if i.name in LOOKUP_KEY_INPUTS:
        sheet = LOOKUP_KEY_INPUTS[i.name]
        kind = CATALOG_KIND.get(i.name, i.name.replace("_", " "))
        row_check = Lookup(sheet, "check", x)
        return IF(InTable(sheet, x),
                  _problem(row_check.ne(OK), message(t("check.catalog_row"), input=i.name, sheet=sheet, value=shown(x),
                                                     reason=row_check)),
                  concat(message(t("check.unknown"), input=i.name, kind=kind, value=shown(x), sheet=sheet), SEP))
    if i.choices:
        return _problem_unless(is_one_of(x, *i.choices),
                               message(t("check.choice"), input=i.name, kind=i.name.replace("_", " "), value=shown(x),
                                known=", ".join(sorted(i.choices))))
    if i.decimal:  # the CLI's words: "must be between 0.05 and 1, got 1.5"
        lo, hi = i.limits
        return IF(ISNUMBER(x),
                  _problem(OR(x.lt(lo), x.gt(hi)),
                           message(t("check.between"), field=i.name, lo=f"{lo:g}", hi=f"{hi:g}", value=x)),
                  concat(message(t("check.number"), field=i.name, value=quoted(x)), SEP))
    if i.is_int:
        lo, hi = i.limits
        return IF(ISNUMBER(x),
                  IF(FLOOR(x).ne(x), concat(message(t("check.whole"), input=i.name, value=x), SEP),
                     _problem(OR(x.lt(lo), x.gt(hi)),
                              message(t("check.range"), input=i.name, lo=str(lo), hi=f"{hi:,}", value=x))),
                  concat(message(t("check.whole"), input=i.name, value=quoted(x)), SEP))
    raise AssertionError(f"input {i.name}: no rule to check it by")


def input_problems(t: Catalogue) -> tuple[Expr, Expr]:
    """Each input against its allowed values, range or catalog (and that catalog row's check), in two
    lists: one formula for all would pass Excel's 8,192 characters."""
    return problem_lists([_input_problem(t, i) for i in INPUTS])


def in_parts(parts: Sequence, count: int = 2) -> tuple[Sequence, ...]:
    """`count` consecutive runs of nearly equal length (the first ones the longer): what `count` list columns
    take."""
    size, longer = divmod(len(parts), count)
    runs, start = [], 0
    for k in range(count):
        end = start + size + (k < longer)
        runs.append(parts[start:end])
        start = end
    return tuple(runs)


def problem_lists(parts: Sequence[Expr], count: int = 2) -> tuple[Expr, ...]:
    """The parts as `count` lists (in_parts), each ended by END."""
    return tuple(problem_list(run) for run in in_parts(parts, count))


INPUT_LISTS = ("input_problems_1", "input_problems_2")  # the columns input_problems' lists fill


# The columns rule_problems' lists fill: four, as two passed Excel's 8,192 characters from row 1,000 on (every
# reference to the row grows with its number's digits; tests/test_xlsx.py measures them at the last row), and three
# once the Ulysses rules were added.
RULE_LISTS = ("rule_problems_1", "rule_problems_2", "rule_problems_3", "rule_problems_4")


def rule_problems(t: Catalogue) -> tuple[Expr, ...]:
    """The skip rules, each with its message, once the inputs are valid, in RULE_LISTS' lists (one formula for
    all passes Excel's 8,192 characters). A frozen role row (or a rollout engine's on GPUs of its own) is made
    by the program from its actor's row, which carries the rules: they speak of the scenarios a planner defines
    (ZeRO on a frozen model shards its weights)."""
    rules = [_problem(inlined(r.when), message(skip_template(t, r.code), **{k: inlined(v) for k, v in r.values}))
             for r in SKIP_RULES]
    # A term cell left in would read the check that reads it: a circular reference.
    read = set().union(*(r.names() for r in rules))
    assert read <= set(INPUT_NAMES), f"skip rules read {sorted(read - set(INPUT_NAMES))}"
    skipped = OR(*(Var(name).ne(END) for name in INPUT_LISTS), is_one_of(Var("workload"), FROZEN, ROLLOUT))
    return tuple(IF(skipped, END, part) for part in problem_lists(rules, len(RULE_LISTS)))


# A row's own check (its inputs and the rules), and as a 1/0 flag the gate of its terms: not the
# assumptions, so that an edited assumption recomputes the terms that read it, not every term of every
# row (the terms read each assumption's value in use, a number even while the typed one is invalid);
# a number, as LibreOffice compares texts through its collator (without any gate its recalculation
# was a fifth shorter; the 1/0 gate's own gain over the text one is within the noise of paired runs).
ROW_CHECK, ROW_OK = "row_check", "row_ok"
GATE_OK = {"check": OK, ROW_OK: 1}  # what each gate column holds in a row that may be computed


def row_check() -> Expr:
    """A Scenarios (or NoteScenarios) row's inputs' and the rules' first problem, or ok."""
    return checked(*(Var(name) for name in INPUT_LISTS + RULE_LISTS))


def unless_assumptions_fail(t: Catalogue, otherwise: Expr | str) -> Expr:
    """The first invalid assumption's reason ("Assumptions: …") if there is one, else `otherwise`."""
    return IF(Var(ASSUMPTIONS_CHECK).ne(OK), message(t("check.assumptions"), reason=Var(ASSUMPTIONS_CHECK)),
              otherwise)


def scenario_check(t: Catalogue) -> Expr:
    """A Scenarios (or NoteScenarios) row: the assumptions, then its own check."""
    return unless_assumptions_fail(t, Var(ROW_CHECK))


SETTINGS_LISTS = ("settings_problems_1", "settings_problems_2")  # the columns group_settings_problems' lists fill
SETTINGS_CHECK = "settings_check"  # an RLHF group's column: checked() of those lists


def group_settings_problems(t: Catalogue, settings: Sequence[Input], workloads: Mapping[str, Sequence[str]],
                            rules: Mapping[str, Expr]) -> tuple[Expr, Expr]:
    """An RLHF group's settings (its row's cells), in two lists: each setting's value (blank: none, where the
    setting has no default; one that `workloads` gives algorithms, only for those) and async rollouts asked of an
    engine beside the actor (rules["async_beside"]), then, with every value a number and the actor's ranks known, the
    split's rules (estimate.GROUP_SPLIT's expressions by name: the flags "prompts_uneven" and "micro_uneven", and the
    "rank_sequences" the latter's message names). The group's settings check is checked() of the two."""
    values = []
    for i in settings:
        problem = _input_problem(t, i)
        if i.default is None:
            problem = IF(Var(i.name).eq(""), "", problem)
        if i.name in workloads:
            problem = IF(is_one_of(Var("workload"), *workloads[i.name]), problem, "")
        values.append(problem)
    values.append(_problem(rules["async_beside"], t("check.async_beside")))  # as check_rlhf refuses it
    ranks = Var("actor_ranks")
    split = problem_list([
        _problem(rules["prompts_uneven"].eq(1),
                 message(t("check.prompts_uneven"), ranks=ranks, value=Var("prompts_per_iteration"))),
        _problem(rules["micro_uneven"].eq(1),
                 message(t("check.micro_uneven"), sequences=rules["rank_sequences"], value=Var("micro_batch_size")))])
    return problem_list(values), IF(OR(Var(SETTINGS_LISTS[0]).ne(END), NOT(ISNUMBER(ranks))), END, split)


def group_check(t: Catalogue, roles: Sequence[tuple[str, int]]) -> Expr:
    """An RLHF group: ok when every role row is; else the first role's reason (Var "role.check")."""
    out: Expr = Str(OK)
    for role, row in reversed(roles):
        reason = Var(f"{role}.check")
        out = IF(reason.ne(OK), message(t("check.role"), role=role, row=str(row), reason=reason), out)
    return out


def gated(expr: Expr, check: str = "check") -> Expr:
    """A figure of a checked row: blank unless the row's `check` (a GATE_OK column) says ok (IF
    evaluates only that branch, so a row with a typo shows blanks, not errors)."""
    return IF(Var(check).eq(GATE_OK[check]), expr, "")


# ---------------------------------------------------------------------------------------------
# Catalog rows and assumptions

def _whole(t: Catalogue, name: str, minimum: int) -> Expr:
    x = Var(name)
    return IF(ISNUMBER(x),
              IF(FLOOR(x).ne(x), concat(message(t("check.integer"), field=name, value=x), SEP),
                 _problem(x.lt(minimum), message(t("check.at_least"), field=name, minimum=str(minimum), value=x))),
              concat(message(t("check.integer"), field=name, value=quoted(x)), SEP))


def _non_negative(t: Catalogue, name: str) -> Expr:
    x = Var(name)
    return _problem(IF(ISNUMBER(x), x.lt(0), True), message(t("check.non_negative"), field=name, value=shown(x)))


def _positive_whole(x: Expr) -> Expr:
    """ISNUMBER first: comparing a text with a number is no error in Excel, but INT of a text is."""
    return IF(ISNUMBER(x), IF(FLOOR(x).eq(x), x.gt(0), False), False)


def catalog_rule(table: str, name: str) -> tuple[str, int]:
    """What a catalog column holds, by the catalog loaders: ("flag", 0), ("whole", minimum),
    ("memory", 1: a positive whole number of MiB) or ("number", 0: non-negative)."""
    if table == "Models":
        if name in MODEL_NUMBERS:
            return "number", 0
        return ("flag", 0) if name in MODEL_FLAGS else ("whole", 1 if name in POSITIVE_MODEL_FIELDS else 0)
    if table == "GPUs" and name == "memory_mib":
        return "memory", 1
    return "number", 0


def catalog_validation(table: str, name: str) -> dict:
    """The same rule as Excel's data validation (its check when a value is typed)."""
    kind, minimum = catalog_rule(table, name)
    if kind == "flag":
        return {"validate": "integer", "criteria": "between", "minimum": 0, "maximum": 1}
    if kind == "number":
        return {"validate": "decimal", "criteria": ">=", "value": 0}
    return {"validate": "integer", "criteria": ">=", "value": minimum}


def catalog_problems(t: Catalogue, table: str, columns: Sequence[str]) -> tuple[Expr, Expr]:
    """A catalog row's problems: the columns formulas read, by the catalog loaders' rules (in two
    halves, each within Excel's formula length)."""
    parts = []
    for name in columns:
        x = Var(name)
        kind, minimum = catalog_rule(table, name)
        if kind == "flag":
            parts.append(_problem_unless(is_one_of(x, 0, 1), message(t("check.flag"), field=name, value=shown(x))))
        elif kind == "whole":
            parts.append(_whole(t, name, minimum))
        elif kind == "memory":
            parts.append(_problem_unless(_positive_whole(x), message(t("check.memory"), field=name, value=shown(x))))
        else:
            parts.append(_non_negative(t, name))
    if table == "Models":
        heads, kv = Var("num_attention_heads"), Var("num_key_value_heads")
        whole = AND(_positive_whole(heads), _positive_whole(kv))
        parts.append(IF(whole, _problem(MOD(heads, kv).ne(0), message(t("check.kv_heads"), kv=kv, heads=heads)), ""))
    return problem_lists(parts)


def assumption_in_use(a: Assumption) -> Expr:
    """What formulas read for an assumption: its value (Var "value") while its check is ok, else its
    default (every scenario's check then names the invalid one, and their figures are blank)."""
    return IF(Var("check").eq(OK), Var("value"), a.default)


def assumption_check(t: Catalogue, a: Assumption) -> Expr:
    """An assumption's value (Var "value"), by Assumption.check's rules and words."""
    x = Var("value")
    lo, hi = a.limits
    out: Expr = Str(OK)
    if a.whole:
        out = IF(FLOOR(x).ne(x), message(t("check.whole_assumption"), field=a.name, value=x), out)
    out = IF(OR(x.lt(lo), x.gt(hi)),
             message(t("check.between"), field=a.name, lo=f"{lo:g}", hi=f"{hi:g}", value=x), out)
    return IF(ISNUMBER(x), out, message(t("check.number"), field=a.name, value=quoted(x)))


def first_failure(reasons: Sequence[Expr]) -> Expr:
    """ok when every reason is ok, else the first that is not."""
    out: Expr = Str(OK)
    for reason in reversed(reasons):
        out = IF(reason.ne(OK), reason, out)
    return out
