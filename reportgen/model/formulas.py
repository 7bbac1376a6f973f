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

import hashlib
import marshal
import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

# Excel functions this language may emit (all pre-2010, no _xlfn. prefix needed); Fn refuses others.
EXCEL_FUNCTIONS = frozenset({"IF", "MAX", "MIN", "ROUNDUP", "INT", "MOD", "POWER", "AND", "OR", "ISNUMBER", "NOT",
                             "LEFT", "FIND"})
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
def MAX(*args) -> Expr: return lift(args[0]) if len(args) == 1 else Fn("MAX", tuple(lift(a) for a in args))
def MIN(*args) -> Expr: return lift(args[0]) if len(args) == 1 else Fn("MIN", tuple(lift(a) for a in args))
def CEIL(x) -> Expr: return Fn("ROUNDUP", (lift(x), Num(0)))
def FLOOR(x) -> Expr: return Fn("INT", (lift(x),))  # round down (INT in Excel)
def MOD(a, b) -> Expr: return Fn("MOD", (lift(a), lift(b)))
def POWER(a, b) -> Expr: return Fn("POWER", (lift(a), lift(b)))  # a ** b
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


@dataclass(frozen=True, eq=False)
class RowOf(Expr):
    """The sheet row of lookup table `table` whose key equals `key` (MATCH over its key column in the
    workbook, an error there for a key not in the table; None in Python). A workbook row computes it
    once per key (a helper column) and its lookups read INDEX(column, that cell)."""
    table: str
    key: Expr

    def children(self):
        return (self.key,)


# The field of a lookup table's row (in the tables compiled code reads) that holds its sheet row.
ROW_FIELD = "#row"


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
    and `key_range(table)` for lookups, `constant(const)` a named constant's workbook name
    (None: its number), and `key_row(table, key)` the cell that holds RowOf(table, key) for this
    row (None: none does; a lookup then finds its row itself)."""
    cell: Callable[[str], str]
    column_range: Callable[[str, str], str]
    key_range: Callable[[str], str]
    constant: Callable[[Const], str | None] = lambda c: None
    key_row: Callable[[str, Expr], str | None] = lambda table, key: None


def to_excel(expr: Expr, ctx: ExcelContext) -> str:
    """The expression as an Excel formula body (without the leading '=')."""
    return _render(expr, lambda e: _excel_atom(e, ctx), excel=True)


def _excel_atom(expr: Expr, ctx: ExcelContext) -> str | None:
    if isinstance(expr, Var):
        return ctx.cell(expr.name)
    if isinstance(expr, Lookup):
        row = ctx.key_row(expr.table, expr.key) or _match(expr, ctx)
        return f"INDEX({ctx.column_range(expr.table, expr.column)},{row})"
    if isinstance(expr, InTable):  # the row's cell holds a number only when the key is in the table
        return f"ISNUMBER({ctx.key_row(expr.table, expr.key) or _match(expr, ctx)})"
    if isinstance(expr, RowOf):
        return _match(expr, ctx)
    if isinstance(expr, Const):
        return ctx.constant(expr)
    return None


def _match(expr: Lookup | InTable | RowOf, ctx: ExcelContext) -> str:
    return f"MATCH({to_excel(expr.key, ctx)},{ctx.key_range(expr.table)},0)"


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
    if isinstance(expr, RowOf):
        return f"row of {to_text(expr.key, label)} in {expr.table}"
    return None


def _number(value: float) -> str:
    # Whole floats print as integers, except huge ones (1e99 would otherwise be 100 digits).
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        value = int(value)
    if isinstance(value, int):
        return str(value)
    text = repr(value)
    return text.replace("e+", "E+").replace("e-", "E-")


# Excel refuses a text constant longer than 255 characters in a formula ("Text values in formulas are limited to 255
# characters"; LibreOffice accepts it): a longer text is written as its pieces joined by &.
EXCEL_TEXT_LIMIT = 255


def _excel_text(value: str) -> str:
    pieces = ['"' + value[i:i + EXCEL_TEXT_LIMIT].replace('"', '""') + '"'
              for i in range(0, len(value), EXCEL_TEXT_LIMIT)] or ['""']
    return pieces[0] if len(pieces) == 1 else "(" + "&".join(pieces) + ")"


def _render(expr: Expr, atom, *, excel: bool) -> str:
    hit = atom(expr)
    if hit is not None:
        return hit
    if isinstance(expr, Const) and not excel:
        return expr.name
    if isinstance(expr, Num):
        return _number(expr.value)
    if isinstance(expr, Str):
        return _excel_text(expr.value) if excel else f"“{expr.value}”"
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
        if expr.name == "MOD":  # read back as a product-level operator: a compound operand keeps its brackets
            a, b = (f"({x})" if isinstance(e, (Op, Cmp, Concat)) else x for e, x in zip(expr.args, args))
            return f"({a} mod {b})"
        if expr.name == "IF":
            return f"({args[1]} if {args[0]} else {args[2]})"
        return f"{expr.name.lower()}({', '.join(args)})"
    raise TypeError(f"cannot render {expr!r}")


# ---------------------------------------------------------------------------------------------
# Compilation to Python, for sweeps of many scenarios

def _is_text(expr: Expr) -> bool:
    """True when the expression's value is text whatever the cells hold (a literal, a join, an IF of those)."""
    if isinstance(expr, (Str, Concat)):
        return True
    return isinstance(expr, Fn) and expr.name == "IF" and _is_text(expr.args[1]) and _is_text(expr.args[2])


# The functions to_python's code calls.
PYTHON_HELPERS = {"_ceil": spreadsheet_ceil, "_floor": math.floor, "_text": spreadsheet_text, "_power": math.pow,
                  "_isnumber": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)}


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
    if isinstance(expr, RowOf):
        return f"T[{expr.table!r}].get({to_python(expr.key, var, lookup)}, {{}}).get({ROW_FIELD!r})"
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
        if expr.name == "POWER":
            return f"_power({args[0]}, {args[1]})"
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


def compile_terms(terms: Sequence, var_code: Callable[[str], str], name: str = "_estimate", *,
                  cache: bool = False) -> Callable:
    """Compile a term table into Python: def _estimate(I, A, T, R) -> tuple of every term's value, in
    table order. Inputs, assumptions and looked-up catalog rows are read once into locals at the top.
    (Sweeps of many scenarios use the array rendering of the same table: vector.VectorTerms.) cache: keep
    the bytecode for the next run (the package's own tables, compiled at every start; not the tables a
    preset makes, whose variety would fill the cache)."""
    local = {t.name: f"t_{i}" for i, t in enumerate(terms)}
    hoisted: dict[str, str] = {}  # local name -> how to read it once, at the top

    def ident(text: str) -> str:
        return "".join(c if c.isalnum() else "_" for c in text)

    def var(n: str) -> str:
        if n in local:
            return local[n]
        name_ = "v_" + ident(n)
        hoisted.setdefault(name_, var_code(n))
        return name_

    def lookup(e: Lookup) -> str:
        key = to_python(e.key, var, lookup)
        row = "r_" + ident(f"{e.table}_{key}")
        hoisted.setdefault(row, f"T[{e.table!r}][{key}]")
        return f"{row}[{e.column!r}]"

    body = [f"{local[t.name]} = {to_python(t.expr, var, lookup)}" for t in terms]
    # Builtins bound as defaults: local lookups are faster than global ones.
    lines = [f"def {name}(I, A, T, R, _ceil=_ceil, _floor=_floor, max=max, min=min):"]
    lines += [f"    {k} = {v}" for k, v in hoisted.items()] + [f"    {b}" for b in body]
    lines.append(f"    return ({', '.join(local[t.name] for t in terms)},)")
    namespace = dict(PYTHON_HELPERS)
    source = "\n".join(lines)
    code = cached_compile(source, f"<{name}>") if cache else compile(source, f"<{name}>", "exec")
    exec(code, namespace)  # noqa: S102 - our own table
    return namespace[name]


# Compiling the term tables is most of their cost at every start (0.02 s of a command's 0.15, #35): their
# bytecode is kept beside the package's own, named by a hash of the source, as Python keeps a module's.
CODE_CACHE = Path(__file__).resolve().parent / "__pycache__"


def cached_compile(source: str, filename: str):
    """compile(source) from CODE_CACHE where an earlier run left it, else compiled and left there (unless
    Python writes no bytecode here: PYTHONDONTWRITEBYTECODE, a read-only installation). The table's earlier
    caches (another version of its terms) are removed then, as an upgrade or an edit would otherwise leave them."""
    table = "".join(c for c in filename if c.isalnum() or c == "_")
    key = hashlib.sha256(f"{sys.version}\0{filename}\0{source}".encode()).hexdigest()[:24]
    path = CODE_CACHE / f"terms-{table}-{key}.{sys.implementation.cache_tag}.marshal"
    try:
        return marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):  # none yet, or unreadable: compile again
        pass
    code = compile(source, filename, "exec")
    if not sys.dont_write_bytecode:
        try:
            CODE_CACHE.mkdir(exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(marshal.dumps(code))
            os.replace(tmp, path)  # whole or not at all: another process may be reading it
            for stale in CODE_CACHE.glob(f"terms-{table}-*.{sys.implementation.cache_tag}.marshal"):
                if stale != path:
                    stale.unlink(missing_ok=True)
        except OSError:
            pass
    return code


# ---------------------------------------------------------------------------------------------
# Parsing: the text form back into an expression
#
# Data files (the error-correction notes) write expressions as text. The grammar is the one to_text
# prints, with Python's precedence: `b if a else c` (IF), comparisons (= == ≠ != <> < ≤ <= > ≥ >=),
# + − -, × * ÷ / and `mod` (or %), then atoms: numbers, strings (“…” or "…"), names (`key.term`),
# (…), ⌈x⌉ (ROUNDUP), ⌊x⌋ (INT), FUNCTION(args) for EXCEL_FUNCTIONS in either case, and
# column(key) for a lookup column. There is no unary minus, only negative number literals.

class ExpressionError(ValueError):
    """Text that is not an expression; `position` is the 0-based character offset of the problem."""

    def __init__(self, message: str, text: str, position: int):
        super().__init__(f"{message} at character {position + 1} of {text!r}")
        self.position = position


UNIT_CONSTANTS = {name: Const(value, name) for name, value in
                  (("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30), ("MB", 10**6), ("GB", 10**9))}
_TOKEN = re.compile(r"""\s*(?:
    (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>“[^”]*”|"(?:[^"]|"")*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
  | (?P<op><=|>=|<>|==|!=|[-+*/%<>=×÷−≤≥≠(),⌈⌉⌊⌋])
)""", re.VERBOSE)
_ADD_OPS = {"+": "+", "-": "-", "−": "-"}
_MUL_OPS = {"*": "*", "×": "*", "/": "/", "÷": "/"}
_CMP_OPS = {"=": "=", "==": "=", "≠": "<>", "!=": "<>", "<>": "<>", "<": "<", "≤": "<=", "<=": "<=", ">": ">",
            "≥": ">=", ">=": ">="}
_KEYWORDS = {"if", "else", "mod"}
_ARITY = {"IF": (3, 3), "ROUNDUP": (2, 2), "INT": (1, 1), "MOD": (2, 2), "POWER": (2, 2)}


def parse_expression(text: str, *, lookups: Mapping[str, str] | None = None,
                     resolve: Callable[[str], Expr | None] | None = None) -> Expr:
    """The expression a text form denotes (what to_text prints parses back to the same expression).

    lookups maps a lookup column to its table (column names are unique across the lookup tables), so
    `bits(kv_dtype)` is Lookup("Dtypes", "bits", Var("kv_dtype")). Names are unit constants (MiB, GB,
    …) or variables; resolve(name) may return an expression to use instead of Var(name)."""
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while text[pos:].strip():
        m = _TOKEN.match(text, pos)
        if not m:
            pos += len(text[pos:]) - len(text[pos:].lstrip())
            raise ExpressionError(f"unexpected {text[pos]!r}", text, pos)
        kind = m.lastgroup
        tokens.append((kind, m.group(kind), m.start(kind)))
        pos = m.end()
    tokens.append(("end", "", len(text)))
    return _Parser(text, tokens, lookups or {}, resolve).parse()


class _Parser:
    def __init__(self, text, tokens, lookups, resolve):
        self.text, self.tokens, self.lookups, self.resolve = text, tokens, lookups, resolve
        self.i = 0

    def parse(self) -> Expr:
        expr = self.conditional()
        if self.peek()[0] != "end":
            self.fail("expected an operator or the end")
        return expr

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.i]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, value: str, kind: str = "op") -> bool:
        k, v, _ = self.peek()
        return k == kind and v == value

    def expect(self, value: str, kind: str = "op") -> None:
        if not self.at(value, kind):
            self.fail(f"expected {value!r}")
        self.i += 1

    def fail(self, message: str):
        kind, value, pos = self.peek()
        found = "the end" if kind == "end" else repr(value)
        raise ExpressionError(f"{message}, found {found}", self.text, pos)

    def conditional(self) -> Expr:
        then = self.comparison()
        if not self.at("if", "name"):
            return then
        self.i += 1
        cond = self.comparison()
        self.expect("else", "name")
        return Fn("IF", (cond, then, self.conditional()))

    def comparison(self) -> Expr:
        left = self.sum()
        kind, value, _ = self.peek()
        if kind == "op" and value in _CMP_OPS:
            self.i += 1
            return Cmp(_CMP_OPS[value], left, self.sum())
        return left

    def sum(self) -> Expr:
        out = self.product()
        while self.peek()[0] == "op" and self.peek()[1] in _ADD_OPS:
            out = Op(_ADD_OPS[self.take()[1]], out, self.product())
        return out

    def product(self) -> Expr:
        out = self.atom()
        while True:
            kind, value, _ = self.peek()
            if kind == "op" and value in _MUL_OPS:
                self.i += 1
                out = Op(_MUL_OPS[value], out, self.atom())
            elif (kind, value) in (("op", "%"), ("name", "mod")):
                self.i += 1
                out = Fn("MOD", (out, self.atom()))
            else:
                return out

    def atom(self) -> Expr:
        kind, value, pos = self.take()
        if kind == "number":
            return Num(_parse_number(value))
        if kind == "op" and value in ("-", "−") and self.peek()[0] == "number":
            return Num(-_parse_number(self.take()[1]))
        if kind == "string":
            return Str(value[1:-1] if value[0] == "“" else value[1:-1].replace('""', '"'))
        if kind == "op" and value in ("(", "⌈", "⌊"):
            inner = self.conditional()
            close = {"(": ")", "⌈": "⌉", "⌊": "⌋"}[value]
            self.expect(close)
            return {"(": inner, "⌈": Fn("ROUNDUP", (inner, Num(0))), "⌊": Fn("INT", (inner,))}[value]
        if kind == "name" and value not in _KEYWORDS:
            if self.at("("):
                return self.call(value, pos)
            if value in UNIT_CONSTANTS:
                return UNIT_CONSTANTS[value]
            resolved = self.resolve(value) if self.resolve else None
            return resolved if resolved is not None else Var(value)
        self.i -= 1
        self.fail("expected a number, a name, a string or '('")

    def call(self, name: str, pos: int) -> Expr:
        self.expect("(")
        args = [self.conditional()]
        while self.at(","):
            self.i += 1
            args.append(self.conditional())
        self.expect(")")
        if name.upper() in EXCEL_FUNCTIONS:
            lo, hi = _ARITY.get(name.upper(), (1, 255))
            if not lo <= len(args) <= hi:
                raise ExpressionError(f"{name.upper()} takes {lo if lo == hi else f'{lo} or more'} argument(s), "
                                      f"got {len(args)}", self.text, pos)
            return Fn(name.upper(), tuple(args))
        if name in self.lookups:
            if len(args) != 1:
                raise ExpressionError(f"lookup {name}(key) takes one key, got {len(args)}", self.text, pos)
            return Lookup(self.lookups[name], name, args[0])
        raise ExpressionError(f"{name} is neither a function ({', '.join(sorted(EXCEL_FUNCTIONS))}) nor a lookup "
                              f"column", self.text, pos)


def _parse_number(text: str) -> float:
    value = float(text)
    return int(value) if value.is_integer() and abs(value) < 1e15 and "." not in text else value


def with_children(e: Expr, kids: list) -> Expr:
    """The node `e` over other children (as many, in the order children() gives them)."""
    if isinstance(e, (Op, Cmp)):
        return type(e)(e.op, *kids)
    if isinstance(e, Fn):
        return Fn(e.name, tuple(kids))
    if isinstance(e, Concat):
        return Concat(tuple(kids))
    if isinstance(e, Lookup):
        return Lookup(e.table, e.column, *kids)
    if isinstance(e, (InTable, RowOf)):
        return type(e)(e.table, *kids)
    raise TypeError(f"no children to replace in {type(e).__name__}")


def substituted(expr: Expr, replacement: Callable[[str], Expr | None]) -> Expr:
    """The expression with each Var replaced by replacement(its name) (kept where that is None): another row's
    cells (Var "lead.num_gpus"), or a definition written in (a term's expression)."""
    if isinstance(expr, Var):
        return replacement(expr.name) or expr
    children = expr.children()
    return with_children(expr, [substituted(c, replacement) for c in children]) if children else expr


def specialise(expr: Expr, constants: Mapping[str, float | str]) -> Expr:
    """The expression with the named Vars replaced by numbers or texts and every decided condition folded
    away (IF with a constant condition takes its branch; AND/OR drop constant arguments; a zero added or
    subtracted drops), so a term shared by two tables reads, in each, only what applies there."""
    def walk(e: Expr) -> Expr:
        if isinstance(e, Var) and e.name in constants:
            value = constants[e.name]
            return Str(value) if isinstance(value, str) else Num(value)
        if isinstance(e, Op):
            a, b = walk(e.a), walk(e.b)
            if e.op in ("+", "-") and _constant(b) and b.value == 0:
                return a
            if e.op == "+" and _constant(a) and a.value == 0:
                return b
            return Op(e.op, a, b)
        if isinstance(e, Cmp):
            a, b = walk(e.a), walk(e.b)
            if _constant(a) and _constant(b) or type(a) is type(b) is Str:
                return Num(int(_COMPARE[e.op](a.value, b.value)))
            return Cmp(e.op, a, b)
        if isinstance(e, Lookup):
            return Lookup(e.table, e.column, walk(e.key))
        if isinstance(e, Fn):
            args = tuple(walk(a) for a in e.args)
            if e.name == "IF" and _constant(args[0]):
                return args[1] if args[0].value else args[2]
            if e.name in ("AND", "OR"):
                decisive = 0 if e.name == "AND" else 1
                if any(_constant(a) and bool(a.value) == bool(decisive) for a in args):
                    return Num(decisive)
                args = tuple(a for a in args if not _constant(a))
                if not args:
                    return Num(1 - decisive)
                if len(args) == 1:
                    return args[0]
            return Fn(e.name, args)
        return e
    return walk(expr)


def _constant(e: Expr) -> bool:
    return type(e) is Num


_COMPARE = {"=": lambda a, b: a == b, "<>": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
