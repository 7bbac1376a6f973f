"""parse_expression: the text form of the expression language back into expressions.

The property: every expression the program defines (role terms, model-shape terms, RLHF group terms,
skip rules) prints with to_text and parses back to the same tree, and the parsed term table estimates
exactly what the table does.
"""
from __future__ import annotations

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, _role_var, group_terms
from reportgen.model.formulas import (Cmp, Const, Expr, ExpressionError, Fn, Lookup, Num, Op, Str, Var, compile_terms,
                                parse_expression, to_text)
from reportgen.model.inputs import RLHF_ROLES, Scenario
from reportgen.model.shape import MODEL_TERMS
from reportgen.model.terms import ROLE_TERMS, SKIP_RULES, Term
from reportgen.model.units import GB, MiB


@pytest.fixture(scope="module")
def estimator() -> Estimator:
    return Estimator(load_models(), load_gpus())


@pytest.fixture(scope="module")
def lookups(estimator) -> dict[str, str]:
    return {column: table for table, rows in estimator.tables.items() for column in next(iter(rows.values()))}


def tree(e: Expr):
    """The expression as nested tuples; chains of + and of × are flattened, because to_text prints
    a + (b + c) as a + b + c (the same value)."""
    if isinstance(e, Const):
        return ("const", e.name, e.value)
    if isinstance(e, Num):
        return ("num", e.value)
    if isinstance(e, Str):
        return ("str", e.value)
    if isinstance(e, Var):
        return ("var", e.name)
    if isinstance(e, Lookup):
        return ("lookup", e.table, e.column, tree(e.key))
    if isinstance(e, Op) and e.op in "+*":
        def chain(x):
            return chain(x.a) + chain(x.b) if isinstance(x, Op) and x.op == e.op else [tree(x)]
        return (e.op, *chain(e))
    if isinstance(e, (Op, Cmp)):
        return (e.op, tree(e.a), tree(e.b))
    if isinstance(e, Fn):
        return (e.name, *(tree(a) for a in e.args))
    raise TypeError(e)


def every_expression() -> list[tuple[str, Expr]]:
    out = [(t.name, t.expr) for t in ROLE_TERMS] + [(f"model.{t.name}", t.expr) for t in MODEL_TERMS]
    for roles in RLHF_ROLES.values():
        for placement in ("colocated", "separate"):
            out += [(f"{placement}.{t.name}", t.expr) for t in group_terms(roles, placement)]
    for rule in SKIP_RULES:
        out += [(f"skip.{rule.code}", rule.when)] + [(f"skip.{rule.code}.{k}", e) for k, e in rule.values]
    return out


def test_every_expression_round_trips_through_its_text(lookups):
    expressions = every_expression()
    assert len(expressions) > 200
    for name, expr in expressions:
        text = to_text(expr)
        parsed = parse_expression(text, lookups=lookups)
        assert to_text(parsed) == text, name
        assert tree(parsed) == tree(expr), name


def test_the_parsed_term_table_estimates_the_same(estimator, lookups):
    parsed = tuple(Term(t.name, t.label, t.unit, parse_expression(to_text(t.expr), lookups=lookups))
                   for t in ROLE_TERMS)
    fn = compile_terms(parsed, _role_var, "_parsed")
    scenarios = (Scenario(model="Llama-2-7B", workload="full", num_gpus=8, zero_stage=3, checkpointing="full"),
                 Scenario(model="Mixtral-8x7B", workload="inference", weight_dtype="int4", prompt_len=2048,
                          gen_len=2048, batch_size=8),
                 Scenario(model="Qwen2.5-7B", workload="lora", lora_targets="all-linear", attention="eager",
                          seq_len=1024))
    for s in scenarios:
        want = estimator.estimate(s).values
        got = dict(zip((t.name for t in parsed), fn(s.inputs(), estimator.assumptions, estimator.tables, None)))
        assert got == pytest.approx(want, rel=1e-12), s


@pytest.mark.parametrize("text, want", [
    # Python's precedence: × before +, comparison after arithmetic, the conditional last.
    ("a + b * c", ("+", ("var", "a"), ("*", ("var", "b"), ("var", "c")))),
    ("a - b - c", ("-", ("-", ("var", "a"), ("var", "b")), ("var", "c"))),
    ("a - (b - c)", ("-", ("var", "a"), ("-", ("var", "b"), ("var", "c")))),
    ("a / b / c", ("/", ("/", ("var", "a"), ("var", "b")), ("var", "c"))),
    ("x.y if p.q >= 2 else 0", ("IF", (">=", ("var", "p.q"), ("num", 2)), ("var", "x.y"), ("num", 0))),
    ("a if b else c if d else e", ("IF", ("var", "b"), ("var", "a"), ("IF", ("var", "d"), ("var", "c"), ("var", "e")))),
    ("a + 1 = b", ("=", ("+", ("var", "a"), ("num", 1)), ("var", "b"))),
    ("a != b", ("<>", ("var", "a"), ("var", "b"))),
    ("a mod 2 * 3", ("*", ("MOD", ("var", "a"), ("num", 2)), ("num", 3))),
    ("a % 2", ("MOD", ("var", "a"), ("num", 2))),
    ("⌈a ÷ b⌉ − ⌊c⌋", ("-", ("ROUNDUP", ("/", ("var", "a"), ("var", "b")), ("num", 0)), ("INT", ("var", "c")))),
    ("max(a, b, 3) × MIN(c, d)", ("*", ("MAX", ("var", "a"), ("var", "b"), ("num", 3)),
                                  ("MIN", ("var", "c"), ("var", "d")))),
    ("and(a = “full”, b <> \"x\"\"y\")", ("AND", ("=", ("var", "a"), ("str", "full")),
                                          ("<>", ("var", "b"), ("str", 'x"y')))),
    ("70 * GB - 2.5e3 * MiB", ("-", ("*", ("num", 70), ("const", "GB", GB)), ("*", ("num", 2500.0), ("const", "MiB", MiB)))),
    ("a - -1", ("-", ("var", "a"), ("num", -1))),
    ("bits(kv_dtype) / 8", ("/", ("lookup", "Dtypes", "bits", ("var", "kv_dtype")), ("num", 8))),
])
def test_grammar(text, want, lookups):
    assert tree(parse_expression(text, lookups=lookups)) == want


def test_resolve_replaces_a_name(lookups):
    states = parse_expression("w + g")
    expr = parse_expression("s.states / s.total_params", resolve=lambda n: states if n == "s.states" else None)
    assert tree(expr) == ("/", ("+", ("var", "w"), ("var", "g")), ("var", "s.total_params"))


@pytest.mark.parametrize("text, message, position", [
    ("a +", "expected a number, a name, a string or '(', found the end", 3),
    ("a b", "expected an operator or the end, found 'b'", 2),
    ("(a + b", "expected ')', found the end", 6),
    ("a ^ 2", "unexpected '^'", 2),
    ("sqrt(a)", "sqrt is neither a function", 0),
    ("max()", "expected a number, a name, a string or '(', found ')'", 4),
    ("IF(a, b)", "IF takes 3 argument(s), got 2", 0),
    ("bits(a, b)", "lookup bits(key) takes one key, got 2", 0),
    ("a if b", "expected 'else', found the end", 6),
    ("-a", "expected a number, a name, a string or '(', found '-'", 0),
])
def test_errors_say_what_and_where(text, message, position, lookups):
    with pytest.raises(ExpressionError) as err:
        parse_expression(text, lookups=lookups)
    assert message in str(err.value)
    assert err.value.position == position
