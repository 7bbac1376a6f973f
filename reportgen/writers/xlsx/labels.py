"""A scenario row's label, live: a formula over its inputs, so a row switched to int4 or to another
model, or copied and given a new batch, names itself anew.

Model · workload · precision (training) or weight dtype · batch · tokens (inference: prompt
+ generated; else the sequence) · every other input that differs from its workload's default ·
GPUs × type · ZeRO, TP, PP and EP when used. Every input shows where it differs from its default, so
two rows that differ in any input have different labels. Each input is shown with the report's
format for it (the catalogue's "axis.<input>").
"""
from __future__ import annotations

from ...model.formulas import AND, IF, NOT, Expr, Var, concat, is_one_of, lift
from ...report.i18n import Catalogue
from ...model.inputs import INPUT_BY_NAME, INPUTS, PARALLEL_LAYOUT as LAYOUT, TRAINED_WORKLOADS, WORKLOAD_DEFAULTS
from .checks import message

SEP = " · "
# Shown in every label, in this order (the dtype and token slots pick an input by workload).
ALWAYS = ("model", "workload", "batch_size", "num_gpus", "gpu")


def _default(name: str, workload: Expr) -> Expr:
    """The input's default for the row's workload (WORKLOAD_DEFAULTS over the input's own)."""
    out = lift(INPUT_BY_NAME[name].default)
    for w, values in WORKLOAD_DEFAULTS.items():
        if name in values:
            out = IF(workload.eq(w), values[name], out)
    return out


def _part(t: Catalogue, name: str) -> Expr:
    return message(t.get(f"axis.{name}", name + " {v}"), v=Var(name))


def scenario_label(t: Catalogue) -> Expr:
    w = Var("workload")
    trains, inference = is_one_of(w, *TRAINED_WORKLOADS), w.eq("inference")
    # Inputs a slot shows for this workload are not repeated among the differing ones.
    in_slot = {"precision": trains, "weight_dtype": NOT(trains), "prompt_len": inference, "gen_len": inference,
               "seq_len": NOT(inference)}
    parts: list = [Var("model"), SEP, w, SEP, IF(trains, Var("precision"), Var("weight_dtype")), SEP,
                   _part(t, "batch_size"), SEP,
                   IF(inference, concat(_part(t, "prompt_len"), " + ", _part(t, "gen_len")), _part(t, "seq_len"))]
    for i in INPUTS:
        if i.name in ALWAYS or i.name in LAYOUT:
            continue
        differs = Var(i.name).ne(_default(i.name, w))
        shown = AND(NOT(in_slot[i.name]), differs) if i.name in in_slot else differs
        parts.append(IF(shown, concat(SEP, _part(t, i.name)), ""))
    parts += [SEP, Var("num_gpus"), "×", Var("gpu")]
    parts += [IF(Var(n).ne(_default(n, w)), concat(SEP, _part(t, n)), "") for n in LAYOUT]
    return concat(*parts)
