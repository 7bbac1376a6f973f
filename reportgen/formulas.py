"""A tiny expression language: one definition, three renderings.

A memory term is written once as an expression over named inputs, catalog lookups and earlier
terms. The same expression
- evaluates to a number (the estimator),
- renders to an Excel formula whose references are cells (the workbook), and
- renders to readable prose (the report's method section).
Only functions that Excel 2010 and LibreOffice both evaluate without an `_xlfn.` prefix are
offered. Parentheses come from precedence; there is no unary minus and no `^`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

# Excel functions this language may emit (all pre-2010, no _xlfn. prefix needed); Fn refuses others.
EXCEL_FUNCTIONS = frozenset({"IF", "MAX", "MIN", "ROUNDUP", "AND", "OR"})
_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
_TEXT_OP = {"+": "+", "-": "−", "*": "×", "/": "÷", "=": "=", "<>": "≠", "<": "<", "<=": "≤", ">": ">", ">=": "≥"}
# Python's math.ceil on a value a hair above an integer (float noise, 1e-12 relative) would differ
# from LibreOffice's approximate ROUNDUP, which snaps such values to the integer; so do we.
_CEIL_SLACK = 1e-12


class Expr:
    precedence = 3

    def __add__(self, other): return Op("+", self, lift(other))
    def __radd__(self, other): return Op("+", lift(other), self)
    def __sub__(self, other): return Op("-", self, lift(other))
    def __rsub__(self, other): return Op("-", lift(other), self)
    def __mul__(self, other): return Op("*", self, lift(other))
    def __rmul__(self, other): return Op("*", lift(other), self)
    def __truediv__(self, other): return Op("/", self, lift(other))
    def __rtruediv__(self, other): return Op("/", lift(other), self)

    def eq(self, other): return Cmp("=", self, lift(other))
    def ne(self, other): return Cmp("<>", self, lift(other))
    def gt(self, other): return Cmp(">", self, lift(other))
    def ge(self, other): return Cmp(">=", self, lift(other))
    def lt(self, other): return Cmp("<", self, lift(other))
    def le(self, other): return Cmp("<=", self, lift(other))

    def names(self) -> set[str]:
        """Every Var name this expression reads (inputs and earlier terms)."""
        out: set[str] = set()
        self._collect(out)
        return out

    def _collect(self, out: set[str]) -> None:
        for child in self.children():
            child._collect(out)

    def children(self) -> Sequence["Expr"]:
        return ()


def lift(value) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return Num(1 if value else 0)
    if isinstance(value, (int, float)):
        return Num(value)
    if isinstance(value, str):
        return Str(value)
    raise TypeError(f"cannot use {value!r} in a formula")


@dataclass(frozen=True, eq=False)
class Num(Expr):
    value: float


@dataclass(frozen=True, eq=False)
class Str(Expr):
    value: str


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """An input or an earlier term, by name; in the workbook, a cell."""
    name: str

    def _collect(self, out):
        out.add(self.name)


@dataclass(frozen=True, eq=False)
class Lookup(Expr):
    """table[column] of the row whose key equals `key`: INDEX/MATCH in the workbook."""
    table: str
    column: str
    key: Expr

    def children(self):
        return (self.key,)


@dataclass(frozen=True, eq=False)
class Op(Expr):
    op: str
    a: Expr
    b: Expr

    @property
    def precedence(self):
        return _PREC[self.op]

    def children(self):
        return (self.a, self.b)


@dataclass(frozen=True, eq=False)
class Cmp(Expr):
    op: str
    a: Expr
    b: Expr
    precedence = 0

    def children(self):
        return (self.a, self.b)


@dataclass(frozen=True, eq=False)
class Fn(Expr):
    name: str
    args: tuple

    def __post_init__(self):
        if self.name not in EXCEL_FUNCTIONS:
            raise ValueError(f"{self.name} is not one of the spreadsheet functions both Excel and LibreOffice "
                             f"evaluate without a prefix ({', '.join(sorted(EXCEL_FUNCTIONS))})")

    def children(self):
        return self.args


def IF(cond, then, otherwise) -> Expr: return Fn("IF", (lift(cond), lift(then), lift(otherwise)))
def MAX(*args) -> Expr: return Fn("MAX", tuple(lift(a) for a in args))
def MIN(*args) -> Expr: return Fn("MIN", tuple(lift(a) for a in args))
def CEIL(x) -> Expr: return Fn("ROUNDUP", (lift(x), Num(0)))
def AND(*args) -> Expr: return Fn("AND", tuple(lift(a) for a in args))
def OR(*args) -> Expr: return Fn("OR", tuple(lift(a) for a in args))


def ceil_div(a, b) -> Expr:
    """a ÷ b rounded up to a whole number (shards of bytes are whole bytes)."""
    return CEIL(lift(a) / lift(b))


def is_one_of(x: Expr, *values: str) -> Expr:
    return OR(*(x.eq(v) for v in values)) if len(values) > 1 else x.eq(values[0])


# ---------------------------------------------------------------------------------------------
# Evaluation helpers shared by the compiled estimator

def spreadsheet_ceil(x: float, _ceil=math.ceil, _abs=abs, _slack=_CEIL_SLACK) -> int:
    """Round up, treating a value within 1e-12 (relative) above an integer as that integer."""
    up = _ceil(x)
    return up - 1 if up != x and x - (up - 1) <= _abs(x) * _slack else up


# ---------------------------------------------------------------------------------------------
# Rendering

@dataclass(frozen=True)
class ExcelContext:
    """How names become cells: `cell(name)` for inputs and terms, `column_range(table, column)`
    and `key_range(table)` for lookups."""
    cell: Callable[[str], str]
    column_range: Callable[[str, str], str]
    key_range: Callable[[str], str]


def to_excel(expr: Expr, ctx: ExcelContext) -> str:
    """The expression as an Excel formula body (without the leading '=')."""
    return _render(expr, lambda e: _excel_atom(e, ctx), excel=True)


def _excel_atom(expr: Expr, ctx: ExcelContext) -> str | None:
    if isinstance(expr, Var):
        return ctx.cell(expr.name)
    if isinstance(expr, Lookup):
        key = to_excel(expr.key, ctx)
        return f"INDEX({ctx.column_range(expr.table, expr.column)},MATCH({key},{ctx.key_range(expr.table)},0))"
    return None


def to_text(expr: Expr, label: Callable[[str], str] = lambda n: n) -> str:
    """The expression as prose for the method section: names, ×, ÷, max(…)."""
    return _render(expr, lambda e: _text_atom(e, label), excel=False)


def _text_atom(expr: Expr, label) -> str | None:
    if isinstance(expr, Var):
        return label(expr.name)
    if isinstance(expr, Lookup):
        return f"{expr.column}({to_text(expr.key, label)})"
    return None


def _number(value: float) -> str:
    # Whole floats print as integers, except huge ones (1e99 would otherwise be 100 digits).
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, int):
        return str(value)
    text = repr(value)
    return text.replace("e+", "E+").replace("e-", "E-")


def _render(expr: Expr, atom, *, excel: bool) -> str:
    hit = atom(expr)
    if hit is not None:
        return hit
    if isinstance(expr, Num):
        return _number(expr.value)
    if isinstance(expr, Str):
        return '"' + expr.value.replace('"', '""') + '"' if excel else f"“{expr.value}”"
    if isinstance(expr, (Op, Cmp)):
        left = _render(expr.a, atom, excel=excel)
        right = _render(expr.b, atom, excel=excel)
        if expr.a.precedence < expr.precedence:
            left = f"({left})"
        # Right operand of - and / needs parentheses at equal precedence: a-(b-c), a/(b*c).
        if expr.b.precedence < expr.precedence or (
            expr.b.precedence == expr.precedence and expr.op in ("-", "/")
        ):
            right = f"({right})"
        op = expr.op if excel else f" {_TEXT_OP[expr.op]} "
        return f"{left}{op}{right}"
    if isinstance(expr, Fn):
        args = [_render(a, atom, excel=excel) for a in expr.args]
        if excel:
            return f"{expr.name}({','.join(args)})"
        if expr.name == "ROUNDUP":
            return f"⌈{args[0]}⌉"
        if expr.name == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"
        return f"{expr.name.lower()}({', '.join(args)})"
    raise TypeError(f"cannot render {expr!r}")


# ---------------------------------------------------------------------------------------------
# Compilation to Python, for sweeps of many scenarios

def to_python(expr: Expr, var: Callable[[str], str], lookup: Callable[[Lookup], str]) -> str:
    """Python source for the expression (used to compile the term table into one function)."""
    if isinstance(expr, Num):
        return repr(expr.value)
    if isinstance(expr, Str):
        return repr(expr.value)
    if isinstance(expr, Var):
        return var(expr.name)
    if isinstance(expr, Lookup):
        return lookup(expr)
    if isinstance(expr, Op):
        return f"({to_python(expr.a, var, lookup)} {expr.op} {to_python(expr.b, var, lookup)})"
    if isinstance(expr, Cmp):
        op = {"=": "==", "<>": "!="}.get(expr.op, expr.op)
        return f"({to_python(expr.a, var, lookup)} {op} {to_python(expr.b, var, lookup)})"
    if isinstance(expr, Fn):
        args = [to_python(a, var, lookup) for a in expr.args]
        if expr.name == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if expr.name == "ROUNDUP":
            return f"_ceil({args[0]})"
        if expr.name == "AND":
            return "(" + " and ".join(args) + ")"
        if expr.name == "OR":
            return "(" + " or ".join(args) + ")"
        return f"{expr.name.lower()}({', '.join(args)})"
    raise TypeError(f"cannot compile {expr!r}")
