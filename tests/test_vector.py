"""The term table's array rendering (vector.py) against its scalar rendering (formulas.compile_terms):
for every term of every row the same value and the same Python type (int, float, bool, str), exactly,
on thousands of random scenarios; rows an array cannot hold exactly (int64 overflow, ints beyond
float64's 2**53) go through the scalar path and still agree."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import _ROLE_FN, _SKIP_FN, _SKIP_TERMS, SWEEP_ROW_INPUTS, Estimator, Scenario, _role_var
from reportgen.model.formulas import ROW_FIELD, compile_terms
from reportgen.report.i18n import load_workbook_catalogue
from reportgen.model.inputs import INPUT_NAMES, INPUTS
from reportgen.model.terms import ROLE_TERMS, SKIP_RULES, Term
from reportgen.model.vector import Text, VectorTerms

EST = Estimator(load_models(), load_gpus())
MODELS, GPUS = sorted(EST.specs), sorted(EST.gpus)
ROLE = VectorTerms(ROLE_TERMS, SWEEP_ROW_INPUTS, _ROLE_FN)
NAMES = tuple(t.name for t in ROLE_TERMS)


def same(a, b) -> bool:
    return type(a) is type(b) and (a == b or (a != a and b != b))


def scalar_rows(rows, fn=_ROLE_FN, tables=EST.tables):
    """(rows the scalar path computes, their values): rows that raise (skipped combinations such as an
    empty context) are left out."""
    kept, values = [], []
    for r in rows:
        try:
            values.append(fn(r, EST.assumptions, tables, None))
        except (ArithmeticError, ValueError):
            continue
        kept.append(r)
    return kept, values


def assert_columns_equal(vector, rows, expected, *, chunk_rows=4096, tables=EST.tables):
    columns = {n: [r[n] for r in rows] for n in rows[0]}
    result = vector.evaluate(columns, len(rows), EST.assumptions, tables, chunk_rows=chunk_rows)
    for j, name in enumerate(vector.names):
        got = result.tolist(name)
        wrong = [(i, got[i], e[j]) for i, e in enumerate(expected) if not same(got[i], e[j])]
        assert not wrong, (name, wrong[:5], rows[wrong[0][0]])
    return result


def _input_strategy(i):
    if i.catalog == "model":
        return st.sampled_from(MODELS)
    if i.catalog == "gpu":
        return st.sampled_from(GPUS)
    if i.choices:
        return st.sampled_from(i.choices)
    if i.decimal:
        return st.floats(*i.limits)
    return st.integers(*i.limits)


OUTER = st.fixed_dictionaries({i.name: _input_strategy(i) for i in INPUTS if i.name not in SWEEP_ROW_INPUTS})
INNER = st.fixed_dictionaries({n: _input_strategy(i) for i in INPUTS for n in [i.name] if n in SWEEP_ROW_INPUTS})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(OUTER, min_size=1, max_size=6), st.lists(INNER, min_size=1, max_size=40),
       st.sampled_from([5, 64, 4096]), st.randoms(use_true_random=False))
def test_every_term_equals_the_scalar_path(outer, inner, chunk_rows, rnd):
    """Layouts × row inputs, as a sweep lays them out (the outer terms computed once per layout), in
    sweep order or shuffled, across chunk boundaries."""
    rows = [{**o, **r} for o in outer for r in inner]
    if rnd.random() < 0.5:
        rnd.shuffle(rows)
    rows, expected = scalar_rows(rows)
    if rows:
        assert_columns_equal(ROLE, rows, expected, chunk_rows=chunk_rows)


def _random_rows(seed: int, n: int, extreme: float) -> list[dict]:
    """Random scenarios: with probability `extreme` a whole number is a limit of its range, else
    log-uniform in it (so both small sweeps and products beyond int64 occur)."""
    rng = random.Random(seed)

    def value(i):
        if i.catalog:
            return rng.choice(MODELS if i.catalog == "model" else GPUS)
        if i.choices:
            return rng.choice(i.choices)
        lo, hi = i.limits
        if i.decimal:
            return rng.uniform(lo, hi)
        if rng.random() < extreme:
            return rng.choice((lo, hi))
        return min(hi, int(math.exp(rng.uniform(math.log(max(lo, 1)), math.log(hi + 1))))) if hi > 64 else \
            rng.randint(lo, hi)
    return [{i.name: value(i) for i in INPUTS} for _ in range(n)]


@pytest.mark.parametrize("seed, extreme", [(1, 0.0), (2, 0.1), (3, 0.5)])
def test_thousands_of_random_scenarios(seed, extreme):
    rows, expected = scalar_rows(_random_rows(seed, 3000, extreme))
    result = assert_columns_equal(ROLE, rows, expected)
    overridden = sum(len(c.overrides) for c in result.chunks)
    if extreme >= 0.5:  # products past int64, ints past 2**53 in a division: the scalar path's rows
        assert overridden > 0


@pytest.mark.parametrize("seed, extreme", [(4, 0.0), (5, 0.5)])
def test_a_sweep_of_random_layouts_equals_the_scalar_path(seed, extreme):
    """40 random layouts × 30 random row inputs: the outer terms, and the subexpressions of the inner
    ones that read no row input (hoisted: computed once per layout), gathered for the rows. Where a
    hoisted subexpression raises for a layout, only the rows that read it (the branch they take) go to
    the scalar path."""
    outer = [{n: v for n, v in r.items() if n not in SWEEP_ROW_INPUTS} for r in _random_rows(seed, 40, extreme)]
    inner = [{n: v for n, v in r.items() if n in SWEEP_ROW_INPUTS} for r in _random_rows(seed + 10, 30, extreme)]
    rows, expected = scalar_rows([{**o, **r} for o in outer for r in inner])
    result = assert_columns_equal(ROLE, rows, expected)
    assert all(c.index is not None for c in result.chunks)  # computed per layout, not per row
    assert len(ROLE.hoisted) >= 50


def test_huge_integers_stay_exact():
    """A 70B model fully trained on a million sequences of ten million tokens: the saved activations
    exceed int64 (Python's int does not); the row is computed the scalar way."""
    row = {**{i.name: i.default for i in INPUTS}, "model": "Llama-3.1-70B", "workload": "full",
           "batch_size": 1_000_000, "seq_len": 10_000_000, "prompt_len": 0, "gen_len": 0}
    rows, expected = scalar_rows([row, {**row, "batch_size": 1}])
    assert expected[0][NAMES.index("training_activations")] > 2**63
    result = assert_columns_equal(ROLE, rows, expected)
    assert list(result.chunks[0].overrides) == [0]


def test_a_row_the_scalar_path_refuses_is_refused():
    """An inference with no tokens divides by zero in the scalar path (a skipped combination): the
    array path raises the same error instead of inventing a number."""
    row = {**{i.name: i.default for i in INPUTS}, "model": "Llama-2-7B", "prompt_len": 0, "gen_len": 0}
    with pytest.raises(ZeroDivisionError):
        _ROLE_FN(row, EST.assumptions, EST.tables, None)
    with pytest.raises(ZeroDivisionError):
        ROLE.evaluate({n: [row[n]] for n in row}, 1, EST.assumptions, EST.tables)


def test_columns_of_every_kind():
    """Inputs as NumPy arrays, categorical text, constants or lists give the same terms."""
    n = 50
    b = np.arange(1, n + 1)
    rows = [{**{i.name: i.default for i in INPUTS}, "model": "Llama-3-8B" if k % 2 else "Mixtral-8x7B",
             "workload": "full", "batch_size": int(b[k])} for k in range(n)]
    _, expected = scalar_rows(rows)
    columns = {"model": Text(np.array([k % 2 for k in range(n)], np.int32), ("Mixtral-8x7B", "Llama-3-8B")),
               "workload": "full", "batch_size": b}
    result = EST.estimate_columns(columns, n)
    for j, name in enumerate(NAMES):
        assert all(same(a, e[j]) for a, e in zip(result.tolist(name), expected)), name
    assert result.numbers("weights").dtype == np.int64


def test_skip_codes_equal_skip_check():
    rows, _ = scalar_rows(_random_rows(4, 2000, 0.2), _SKIP_FN)
    scenarios = [Scenario(**r) for r in rows]
    codes = EST.skip_codes({n: [getattr(s, n) for s in scenarios] for n in INPUT_NAMES}, len(scenarios))
    rule_index = {r.code: k for k, r in enumerate(SKIP_RULES, start=1)}
    expected = [rule_index[r.code] if r else 0 for r in map(EST.skip_check, scenarios)]
    assert codes.tolist() == expected
    assert len(set(expected)) > 4  # several rules fire
    skip = VectorTerms(_SKIP_TERMS, SWEEP_ROW_INPUTS, _SKIP_FN)
    assert_columns_equal(skip, rows, scalar_rows(rows, _SKIP_FN)[1])


# ---- every kind of node: the workbook's labels and checks (text, lookups by text, LEFT, FIND…) ------

def _workbook_terms():
    from reportgen.writers.xlsx.book import key_row_columns
    from reportgen.writers.xlsx.checks import INPUT_LISTS, RULE_LISTS, checked, input_problems, rule_problems
    from reportgen.writers.xlsx.labels import scenario_label
    from reportgen.model.formulas import Var
    t = load_workbook_catalogue("en")
    lists = INPUT_LISTS + RULE_LISTS
    return (Term("label", "", "", scenario_label(t)), *(Term(c.name, "", "", c.expr) for c in key_row_columns()),
            *(Term(name, "", "", expr) for name, expr in zip(INPUT_LISTS, input_problems(t))),
            *(Term(name, "", "", expr) for name, expr in zip(RULE_LISTS, rule_problems(t))),
            Term("check", "", "", checked(*(Var(name) for name in lists))))


WORKBOOK_TERMS = _workbook_terms()
WORKBOOK_FN = compile_terms(WORKBOOK_TERMS, lambda n: f"I[{n!r}]" if n in INPUT_NAMES else f"A[{n!r}]",
                            "_workbook")
CHECKED_TABLES = {name: {key: {**row, "check": "ok" if len(key) % 5 else "bad row", ROW_FIELD: place}
                         for place, (key, row) in enumerate(rows.items(), start=2)}
                  for name, rows in EST.tables.items()}


ODD = ["", "bf16", "oops", 0, -1, 2.5, 1e30, True]


def _odd_input(i):
    """Mostly the input's own values, sometimes one of the wrong kind; a catalog key stays a key (a
    row naming no catalog row raises in either path: test_unknown_catalog_key_raises)."""
    if i.catalog or i.choices and i.name in ("precision", "weight_dtype", "kv_dtype", "optimizer"):
        return _input_strategy(i)
    return st.one_of(_input_strategy(i), _input_strategy(i), st.sampled_from(ODD))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({i.name: _odd_input(i) for i in INPUTS}), min_size=1, max_size=30))
@pytest.mark.slow  # several seconds: the full run has it
def test_text_nodes_equal_the_scalar_path(rows):
    """Labels and checks read text, numbers written as text, text where numbers belong, fractions and
    out-of-range values: concatenation, LEFT, FIND, ISNUMBER, NOT, catalog membership and lookups of
    text keys follow Python's semantics row by row."""
    vector = VectorTerms(WORKBOOK_TERMS, SWEEP_ROW_INPUTS, WORKBOOK_FN)
    assumptions = {**EST.assumptions, "assumptions_check": "ok"}
    kept, expected = [], []
    for r in rows:
        try:
            expected.append(WORKBOOK_FN(r, assumptions, CHECKED_TABLES, None))
        except Exception:
            continue
        kept.append(r)
    assert kept
    if kept:
        columns = {n: [r[n] for r in kept] for n in INPUT_NAMES}
        result = vector.evaluate(columns, len(kept), assumptions, CHECKED_TABLES, chunk_rows=7)
        for j, name in enumerate(vector.names):
            got = result.tolist(name)
            assert all(same(a, e[j]) for a, e in zip(got, expected)), (name, got, [e[j] for e in expected])


def test_unknown_catalog_key_raises():
    row = {**{i.name: i.default for i in INPUTS}, "model": "Llama-2-7B", "precision": "fp6"}
    with pytest.raises(KeyError):
        _ROLE_FN(row, EST.assumptions, EST.tables, None)
    with pytest.raises(KeyError):
        ROLE.evaluate({n: [row[n], "bf16" if n == "precision" else row[n]] for n in row}, 2, EST.assumptions,
                      EST.tables)


# ---- coverage: the array rendering is generated from the term table, so it cannot fall behind it ---------

def _nodes(expr):
    yield expr
    for child in expr.children():
        yield from _nodes(child)


def test_every_term_of_the_table_has_an_array_rendering():
    """The estimator's array rendering evaluates the very Term objects of terms.ROLE_TERMS (no second
    list to keep in step), and every kind of expression node the table uses has an array form."""
    from reportgen.model import estimate, formulas, vector
    from reportgen.model.terms import TERM_BY_NAME
    assert estimate._role_vector().terms == ROLE_TERMS and set(estimate._role_vector().names) == set(TERM_BY_NAME)
    used = {type(node) for t in ROLE_TERMS + _SKIP_TERMS for node in _nodes(t.expr)}
    kinds = {c for c in vars(formulas).values() if isinstance(c, type) and issubclass(c, formulas.Expr)}
    assert used <= set(vector._EVAL) and kinds - {formulas.Expr} <= set(vector._EVAL)
    assert len(EST.estimate_columns({"model": "Llama-2-7B"}, 1).names) == len(ROLE_TERMS)


def test_a_term_added_to_the_table_is_rendered_without_code():
    """A new term (any expression over inputs and earlier terms) is an array column at once."""
    from reportgen.model.formulas import IF, MAX, Var
    extra = Term("pp_probe", "", "", IF(Var("is_train").eq(1), MAX(Var("weights") / 3, Var("batch_size")),
                                         Var("kv_cache") * 2))
    terms = ROLE_TERMS + (extra,)
    fn = compile_terms(terms, _role_var, "_probe")
    rows, expected = scalar_rows(_random_rows(5, 500, 0.0), fn)
    assert_columns_equal(VectorTerms(terms, SWEEP_ROW_INPUTS, fn), rows, expected)


def test_a_hoisted_subexpression_raises_only_for_the_rows_that_read_it():
    """weights / (lora_rank - 16) reads no row input: it is computed once per layout, and divides by
    zero for lora_rank 16. Rows of that layout that do not take its branch (batch ≤ 8) keep the
    array path's value; one that takes it raises, as the scalar path does."""
    from reportgen.model.formulas import IF, Var
    extra = Term("hoist_probe", "", "", IF(Var("batch_size").gt(8), Var("weights") / (Var("lora_rank") - 16), 0))
    terms = ROLE_TERMS + (extra,)
    fn = compile_terms(terms, _role_var, "_hoist_probe")
    vector = VectorTerms(terms, SWEEP_ROW_INPUTS, fn)
    base = {**{i.name: i.default for i in INPUTS}, "model": "Llama-2-7B"}
    rows = ([{**base, "lora_rank": 16, "batch_size": b} for b in range(1, 9)]
            + [{**base, "lora_rank": 17, "batch_size": b} for b in range(1, 17)])
    rows, expected = scalar_rows(rows, fn)
    assert len(rows) == 24
    result = assert_columns_equal(vector, rows, expected)
    assert result.chunks[0].index is not None and not result.chunks[0].overrides
    with pytest.raises(ZeroDivisionError):
        fn({**base, "lora_rank": 16, "batch_size": 12}, EST.assumptions, EST.tables, None)
    raising = rows + [{**base, "lora_rank": 16, "batch_size": 12}]
    with pytest.raises(ZeroDivisionError):
        vector.evaluate({n: [r[n] for r in raising] for n in raising[0]}, len(raising), EST.assumptions, EST.tables)


@pytest.mark.parametrize("name", sorted(__import__("reportgen.scenarios.presets", fromlist=["x"]).bundled_presets()))
@pytest.mark.slow  # several seconds: the full run has it
def test_every_bundled_preset_estimates_as_the_scalar_path(name):
    """A build estimates its scenarios as arrays; every single scenario of every bundled preset has, term by
    term, the value and type the one-at-a-time estimator gives (so the JSON is the scalar path's)."""
    from reportgen.pipeline import load, make_report
    loaded = load(name)
    report = make_report(loaded, "2026-01-01T00:00:00+00:00")
    singles = [r for r in report.results if not r.is_group]
    if not singles:
        assert all(r.is_group for r in report.results)  # RLHF groups: each role by estimate(), one at a time
    for r in singles:
        scalar = loaded.estimator.estimate(r.estimate.scenario).values
        built = dict(r.estimate.values)
        assert built.keys() == scalar.keys(), r.label
        for term, value in scalar.items():
            assert built[term] == value and type(built[term]) is type(value), (name, r.label, term)
