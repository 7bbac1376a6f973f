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
EXCEL_FUNCTIONS = frozenset({"IF", "MAX", "MIN", "ROUNDUP", "INT", "MOD", "AND", "OR", "ISNUMBER", "NOT", "LEFT",
                             "FIND"})
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
class Const(Num):
    """A number with a name: prose says the name ("MiB"), Excel and Python use the value."""
    name: str = ""


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
def FLOOR(x) -> Expr: return Fn("INT", (lift(x),))  # round down (INT in Excel)
def MOD(a, b) -> Expr: return Fn("MOD", (lift(a), lift(b)))
def AND(*args) -> Expr: return Fn("AND", tuple(lift(a) for a in args))
def OR(*args) -> Expr: return Fn("OR", tuple(lift(a) for a in args))


def ISNUMBER(x) -> Expr: return Fn("ISNUMBER", (lift(x),))  # a number, not text or a blank cell
def NOT(x) -> Expr: return Fn("NOT", (lift(x),))
def LEFT(text, n) -> Expr: return Fn("LEFT", (lift(text), lift(n)))  # the first n characters
def FIND(part, text) -> Expr: return Fn("FIND", (lift(part), lift(text)))  # 1-based; part must occur


# ---- text and catalog membership: the workbook's checks and labels -----------------------------

@dataclass(frozen=True, eq=False)
class Concat(Expr):
    """Text joined from parts: `&` in Excel, where a number reads as Excel's General format
    (whole numbers without a decimal point), which Python's rendering follows."""
    parts: tuple
    precedence = 0.5  # Excel: below + and -, above comparisons

    def children(self):
        return self.parts


def concat(*parts) -> Expr:
    """Concat of the parts (nested Concats flattened; adjacent literal texts merged)."""
    flat: list[Expr] = []
    for part in map(lift, parts):
        for p in (part.parts if isinstance(part, Concat) else (part,)):
            if isinstance(p, Str) and flat and isinstance(flat[-1], Str):
                flat[-1] = Str(flat[-1].value + p.value)
            elif not (isinstance(p, Str) and p.value == ""):
                flat.append(p)
    return flat[0] if len(flat) == 1 else Concat(tuple(flat))


@dataclass(frozen=True, eq=False)
class InTable(Expr):
    """1 when `key` names a row of lookup table `table` (ISNUMBER(MATCH(…)) in the workbook)."""
    table: str
    key: Expr

    def children(self):
        return (self.key,)


def spreadsheet_text(value) -> str:
    """A value as Excel's & shows it: whole numbers without '.0', text as it is."""
    kind = type(value)  # called per part of every row's label: the common cases first
    if kind is str:
        return value
    if kind is int or (kind is float and value.is_integer()):
        return str(int(value))
    return repr(value)


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
    and `key_range(table)` for lookups, and `constant(const)` a named constant's workbook name
    (None: its number)."""
    cell: Callable[[str], str]
    column_range: Callable[[str, str], str]
    key_range: Callable[[str], str]
    constant: Callable[[Const], str | None] = lambda c: None


def to_excel(expr: Expr, ctx: ExcelContext) -> str:
    """The expression as an Excel formula body (without the leading '=')."""
    return _render(expr, lambda e: _excel_atom(e, ctx), excel=True)


def _excel_atom(expr: Expr, ctx: ExcelContext) -> str | None:
    if isinstance(expr, Var):
        return ctx.cell(expr.name)
    if isinstance(expr, Lookup):
        key = to_excel(expr.key, ctx)
        return f"INDEX({ctx.column_range(expr.table, expr.column)},MATCH({key},{ctx.key_range(expr.table)},0))"
    if isinstance(expr, InTable):
        return f"ISNUMBER(MATCH({to_excel(expr.key, ctx)},{ctx.key_range(expr.table)},0))"
    if isinstance(expr, Const):
        return ctx.constant(expr)
    return None


def to_text(expr: Expr, label: Callable[[str], str] = lambda n: n) -> str:
    """The expression as prose for the method section: names, ×, ÷, max(…)."""
    return _render(expr, lambda e: _text_atom(e, label), excel=False)


def _text_atom(expr: Expr, label) -> str | None:
    if isinstance(expr, Var):
        return label(expr.name)
    if isinstance(expr, Lookup):
        return f"{expr.column}({to_text(expr.key, label)})"
    if isinstance(expr, InTable):
        return f"{to_text(expr.key, label)} ∈ {expr.table}"
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
    if isinstance(expr, Const) and not excel:
        return expr.name
    if isinstance(expr, Num):
        return _number(expr.value)
    if isinstance(expr, Str):
        return '"' + expr.value.replace('"', '""') + '"' if excel else f"“{expr.value}”"
    if isinstance(expr, Concat):
        parts = [_render(p, atom, excel=excel) for p in expr.parts]
        parts = [f"({s})" if p.precedence < expr.precedence else s for p, s in zip(expr.parts, parts)]
        return ("&" if excel else " & ").join(parts)
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
        if expr.name == "INT":
            return f"⌊{args[0]}⌋"
        if expr.name == "MOD":
            return f"({args[0]} mod {args[1]})"
        if expr.name == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if expr.name == "NOT":
            return f"not {args[0]}"
        return f"{expr.name.lower()}({', '.join(args)})"
    raise TypeError(f"cannot render {expr!r}")


# ---------------------------------------------------------------------------------------------
# Compilation to Python, for sweeps of many scenarios

def _is_text(expr: Expr) -> bool:
    """True when the expression's value is text whatever the cells hold (a literal, a join, an IF of those)."""
    if isinstance(expr, (Str, Concat)):
        return True
    return isinstance(expr, Fn) and expr.name == "IF" and _is_text(expr.args[1]) and _is_text(expr.args[2])


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
    if isinstance(expr, InTable):
        return f"({to_python(expr.key, var, lookup)} in T[{expr.table!r}])"
    if isinstance(expr, Concat):  # parts that are text already need no conversion
        return "(" + " + ".join(to_python(p, var, lookup) if _is_text(p) else f"_text({to_python(p, var, lookup)})"
                                for p in expr.parts) + ")"
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
        if expr.name == "INT":
            return f"_floor({args[0]})"
        if expr.name == "MOD":
            return f"({args[0]} % {args[1]})"
        if expr.name == "AND":
            return "(" + " and ".join(args) + ")"
        if expr.name == "OR":
            return "(" + " or ".join(args) + ")"
        if expr.name == "NOT":
            return f"(not {args[0]})"
        if expr.name == "ISNUMBER":
            return f"_isnumber({args[0]})"
        if expr.name == "LEFT":
            return f"({args[0]})[:int({args[1]})]"
        if expr.name == "FIND":
            return f"(({args[1]}).index({args[0]}) + 1)"
        return f"{expr.name.lower()}({', '.join(args)})"
    raise TypeError(f"cannot compile {expr!r}")


def compile_terms(terms: Sequence, var_code: Callable[[str], str], name: str = "_estimate",
                  batch_inputs: Sequence[str] = (), row_inputs: Sequence[str] = ()) -> Callable:
    """Compile a term table into Python.

    Default: def _estimate(I, A, T, R) -> tuple of every term's value, in table order. Inputs,
    assumptions and looked-up catalog rows are read once into locals at the top.
    With batch_inputs: def _estimate(rows, A, T, R) -> list of such tuples, one per row of input
    values (in batch_inputs order); the loop lives inside the generated code, so a sweep pays no
    per-scenario call or dictionary overhead.
    With row_inputs (a subset of batch_inputs, the ones a sweep varies fastest): terms and catalog
    rows that do not depend on them, directly or through earlier terms, are computed once per
    distinct combination of the other batch inputs and reused for the following rows.
    """
    local = {t.name: f"t_{i}" for i, t in enumerate(terms)}
    hoisted: dict[str, str] = {}  # local name -> how to read it once (outside any loop)
    per_row: dict[str, str] = {}  # catalog rows looked up per scenario
    varying = set(row_inputs)  # names whose value changes from row to row: row inputs, then terms
    inner_rows: set[str] = set()  # catalog rows whose key reads a row input

    def ident(text: str) -> str:
        return "".join(c if c.isalnum() else "_" for c in text)

    def var(n: str) -> str:
        if n in local:
            return local[n]
        name_ = "v_" + ident(n)
        if n not in batch_inputs:
            hoisted.setdefault(name_, var_code(n))
        return name_

    def lookup(e: Lookup) -> str:
        key = to_python(e.key, var, lookup)
        row = "r_" + ident(f"{e.table}_{key}")
        per_row.setdefault(row, f"T[{e.table!r}][{key}]")
        if e.key.names() & varying:
            inner_rows.add(row)
        return f"{row}[{e.column!r}]"

    body = {}
    for t in terms:
        body[t.name] = f"{local[t.name]} = {to_python(t.expr, var, lookup)}"
        if t.expr.names() & varying:
            varying.add(t.name)
    result = "(" + ", ".join(local[t.name] for t in terms) + ",)"
    # Builtins bound as defaults: local lookups are faster than global ones in a hot loop.
    if batch_inputs:
        targets = ", ".join("v_" + ident(n) for n in batch_inputs)
        outer_rows = [k for k in per_row if k not in inner_rows]
        outer_terms = [t.name for t in terms if t.name not in varying]
        reuse = bool(varying & set(batch_inputs) and outer_terms)
        lines = [f"def {name}(rows, A, T, R, _ceil=_ceil, _floor=_floor, max=max, min=min):"]
        lines += [f"    {k} = {v}" for k, v in hoisted.items()]
        lines += ["    cache = {}", "    cache_get = cache.get"] if reuse else []
        lines += ["    out = []", "    append = out.append", f"    for {targets} in rows:"]
        if reuse:
            saved = ", ".join(outer_rows + [local[n] for n in outer_terms]) + ","
            key = ", ".join("v_" + ident(n) for n in batch_inputs if n not in varying) + ","
            lines += ["        key = (" + key + ")", "        saved = cache_get(key)", "        if saved is None:"]
            lines += [f"            {k} = {per_row[k]}" for k in outer_rows]
            lines += [f"            {body[n]}" for n in outer_terms]
            lines += [f"            cache[key] = ({saved})", "        else:", f"            {saved} = saved"]
            lines += [f"        {k} = {per_row[k]}" for k in per_row if k in inner_rows]
            lines += [f"        {body[t.name]}" for t in terms if t.name in varying]
        else:
            lines += [f"        {k} = {v}" for k, v in per_row.items()] + [f"        {b}" for b in body.values()]
        lines += [f"        append({result})", "    return out"]
    else:
        lines = [f"def {name}(I, A, T, R, _ceil=_ceil, _floor=_floor, max=max, min=min):"]
        lines += [f"    {k} = {v}" for k, v in {**hoisted, **per_row}.items()] + [f"    {b}" for b in body.values()]
        lines.append(f"    return {result}")
    namespace = {"_ceil": spreadsheet_ceil, "_floor": math.floor, "_text": spreadsheet_text,
                 "_isnumber": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)}
    exec(compile("\n".join(lines), f"<{name}>", "exec"), namespace)  # noqa: S102 - our own table
    return namespace[name]
