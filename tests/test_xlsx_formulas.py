"""The expression nodes the workbook's checks and labels use (formulas.py): each rendered to Excel,
prose and Python; Excel's own reading of them checked by LibreOffice; and the live label, which must
tell apart any two configurations."""
from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import xlsxwriter

from lo import recalculated_values, require_soffice
from reportgen.model.formulas import (FIND, ISNUMBER, LEFT, NOT, Const, ExcelContext, InTable, Var, compile_terms, concat,
                                spreadsheet_text, to_excel, to_text)
from reportgen.report.i18n import load_workbook_catalogue
from reportgen.model.inputs import INPUT_BY_NAME, INPUTS, Scenario
from reportgen.model.terms import Term
from reportgen.writers.xlsx.labels import scenario_label

CTX = ExcelContext(lambda n: {"x": "A1", "y": "B1"}[n], lambda t, c: f"{t}_{c}", lambda t: f"{t}_keys",
                   lambda c: {"GiB": "bytes_per_GiB"}.get(c.name))


@pytest.fixture(scope="module")
def soffice():
    require_soffice()


def evaluate(expr, row=None, tables=None):
    fn = compile_terms((Term("v", "v", "", expr),), lambda n: f"R[{n!r}]")
    return fn(None, None, tables, row or {})[0]


def test_concat_renders_to_ampersands_prose_and_python():
    e = concat("tp_size ", Var("x"), " does not divide ", Var("y"), "")
    assert to_excel(e, CTX) == '"tp_size "&A1&" does not divide "&B1'
    assert to_text(e) == "“tp_size ” & x & “ does not divide ” & y"
    assert evaluate(e, {"x": 3, "y": 4.0}) == "tp_size 3 does not divide 4"
    # Nested parts flatten, adjacent texts merge; a comparison inside is parenthesised.
    assert to_excel(concat("a", concat("b", Var("x")), Var("x").eq(1)), CTX) == '"ab"&A1&(A1=1)'
    assert to_excel(concat(Var("x") + 1, "!"), CTX) == 'A1+1&"!"'


def test_left_and_find():
    e = LEFT(Var("x"), FIND(" ¦ ", Var("x")) - 1)
    assert to_excel(e, CTX) == 'LEFT(A1,FIND(" ¦ ",A1)-1)'
    assert evaluate(e, {"x": "first ¦ second ¦ "}) == "first"


def test_membership_isnumber_not_and_named_constants():
    assert to_excel(InTable("Models", Var("x")), CTX) == "ISNUMBER(MATCH(A1,Models_keys,0))"
    assert to_text(InTable("Models", Var("x"))) == "x ∈ Models"
    assert evaluate(InTable("Models", Var("x")), {"x": "a"}, {"Models": {"a": {}}}) is True
    assert evaluate(InTable("Models", Var("x")), {"x": "b"}, {"Models": {"a": {}}}) is False
    assert to_excel(NOT(ISNUMBER(Var("x"))), CTX) == "NOT(ISNUMBER(A1))"
    assert [evaluate(ISNUMBER(Var("x")), {"x": v}) for v in (1, 1.5, "1", None, True)] == [True, True, False,
                                                                                        False, False]
    assert to_excel(Var("x") / Const(2**30, "GiB"), CTX) == "A1/bytes_per_GiB"
    assert to_excel(Var("x") * Const(2**20, "MiB"), CTX) == "A1*1048576"  # no name given: the number
    assert to_text(Var("x") / Const(2**30, "GiB")) == "x ÷ GiB"


VALUES = (4, 4.0, 1.5, 1_000_000, 0, "text", "'quoted'")


def test_excel_joins_numbers_as_python_renders_them(soffice, tmp_path):
    """LibreOffice's & shows each value as spreadsheet_text does (the labels' and checks' numbers)."""
    path = tmp_path / "in" / "concat.xlsx"
    path.parent.mkdir()
    wb = xlsxwriter.Workbook(str(path))
    ws = wb.add_worksheet("Calc")
    for row, value in enumerate(VALUES):
        ws.write(row, 0, value)
        ws.write_formula(row, 1, "=" + to_excel(concat("[", Var("x"), "]"), replace(CTX, cell=lambda n, r=row: f"A{r + 1}")),
                         None, "stale")
    wb.close()
    ws = recalculated_values(path, tmp_path / "out")["Calc"]
    assert [ws.cell(r + 1, 2).value for r in range(len(VALUES))] == [f"[{spreadsheet_text(v)}]" for v in VALUES]


# ---------------------------------------------------------------------------------------------
# The live label tells every two configurations apart

LABEL = scenario_label(load_workbook_catalogue("en"))
_LABEL_FN = compile_terms((Term("label", "", "", LABEL),), lambda n: f"R[{n!r}]")


def label(s: Scenario) -> str:
    return _LABEL_FN(None, None, None, s.inputs())[0]


def _other_value(name: str, value):
    spec = INPUT_BY_NAME[name]
    if spec.choices:
        return next(c for c in spec.choices if c != value)
    if spec.limits:  # a whole number or a fraction within its range
        lo, hi = spec.limits
        step = 1 if spec.is_int else (hi - lo) / 4
        return value + step if value + step <= hi else value - step
    return value + "-other"  # model and GPU names


BASES = [Scenario(model="Llama-2-7B", workload=w, gpu="A100-80GB") for w in ("inference", "full", "lora", "qlora",
                                                                             "frozen")]


@pytest.mark.parametrize("base", BASES, ids=lambda s: s.workload)
def test_rows_that_differ_in_any_one_input_have_different_labels(base):
    seen = {label(base): "base"}
    for i in INPUTS:
        other = replace(base, **{i.name: _other_value(i.name, getattr(base, i.name))})
        text = label(other)
        assert text not in seen, f"changing {i.name} gives the label of {seen.get(text)}: {text}"
        seen[text] = i.name


def test_labels_read_as_the_issue_asks():
    s = Scenario(model="Llama-2-7B", workload="full", precision="bf16-mixed", batch_size=2, seq_len=2048,
                 prompt_len=0, checkpointing="full", num_gpus=8, gpu="H100-80GB-SXM", zero_stage=3)
    assert label(s) == "Llama-2-7B · full · bf16-mixed · batch 2 · seq 2048 · ckpt full · 8×H100-80GB-SXM · ZeRO-3"
    s = Scenario(model="Llama-3.1-70B", workload="inference", weight_dtype="int4", batch_size=4, prompt_len=2048,
                 gen_len=2048, num_gpus=4, tp_size=4, gpu="H100-80GB-SXM")
    assert label(s) == "Llama-3.1-70B · inference · int4 · batch 4 · prompt 2048 + gen 2048 · 4×H100-80GB-SXM · TP4"


def test_pairs_of_changed_inputs_keep_labels_apart():
    """Two inputs changed at once never give the label of another single or double change."""
    base = BASES[2]
    variants = {}
    for a, b in itertools.combinations([i.name for i in INPUTS], 2):
        s = replace(base, **{a: _other_value(a, getattr(base, a)), b: _other_value(b, getattr(base, b))})
        variants.setdefault(label(s), set()).add(s)
    assert all(len(v) == 1 for v in variants.values()), [v for v in variants.values() if len(v) > 1][:2]
