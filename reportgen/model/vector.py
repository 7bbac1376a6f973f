"""The term table's fourth rendering: NumPy columns, for sweeps of many scenarios.

formulas.compile_terms turns a term table into Python over one scenario's values; compile_vector
turns the same expressions into array operations over columns (one array per input), so a sweep
costs one NumPy operation per expression node instead of one Python operation per node and
scenario. The result is the scalar path's, exactly: the value and the Python type (int, float,
bool, str) of every term of every row.

- A number column is int64 where Python holds an int, float64 where it holds a float, bool where it
  holds a bool; a node whose type differs between rows (IF(c, 0, a / b)) carries a type code per row
  and holds its ints in float64, where they are exact up to 2**53 (checked).
- int64 arithmetic is checked, not trusted: every integer column carries a bound on its magnitude
  (from the inputs and tables, carried through + − ×); where the bound allows an overflow, or an int
  that would not convert to a float exactly (true division, comparison with a float), the rows where
  it happens are computed again by the scalar path.
- IF, AND and OR compute a branch only for the rows that take it, as Python does: a division by zero
  (or the ceiling of infinity) in a branch a row does not take is no error; in one it takes, the row
  goes to the scalar path, which raises what it raises.
- Text is categorical (codes into a vocabulary). A node whose operands are text or constants applies
  the scalar path's own Python (formulas.to_python of the node) to each distinct value; anything else
  without an array form (a number read as text) does so per row, on object arrays.
- Terms that read none of the row inputs (batch, lengths: what a sweep varies fastest) are computed
  once per distinct combination of the other inputs and gathered for the rows; so are the largest
  subexpressions of the other terms that read none (hoisted), whatever branch a row takes: what one
  raises for a combination sends to the scalar path only the rows that read it.
"""
from __future__ import annotations

import collections.abc
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Callable, Iterator, Mapping, Sequence


from .arrays import np
from .formulas import (PYTHON_HELPERS, ROW_FIELD, Cmp, Concat, Const, Expr, Fn, InTable, Lookup, Num, Op, RowOf, Str,
                       Var, spreadsheet_ceil, spreadsheet_text, to_python, with_children)

INT, FLOAT, BOOL = 0, 1, 2  # the Python type of a number: int, float, bool
_PY_TYPE = {int: INT, float: FLOAT, bool: BOOL}
_EXACT = 2**53  # ints up to this magnitude are exact as float64
_SAFE = 2**62  # int64 results below this magnitude did not overflow (float64 shadows are this precise)
_SLACK = 1e-12  # formulas._CEIL_SLACK, read from spreadsheet_ceil's default
assert spreadsheet_ceil.__defaults__[-1] == _SLACK
CHUNK_ROWS = 32_768  # rows per evaluation pass: a column of them stays in the processor's cache
_MISSING = object()


# ---------------------------------------------------------------------------------------------
# Column values. A constant (the same for every row) is a plain Python value, used as Python uses it.

class Nums:
    """Numbers of every row: v (int64, float64 or bool) and t, the Python type (INT, FLOAT, BOOL) or
    an int8 array of them (v is then float64). bound: for int64 and bool, a Python int no row's
    magnitude exceeds."""
    __slots__ = ("v", "t", "bound")

    def __init__(self, v: np.ndarray, t, bound: int | None = None):
        self.v, self.t, self.bound = v, t, bound


class Text:
    """Text of every row: codes into vocab (a tuple of str)."""
    __slots__ = ("codes", "vocab")

    def __init__(self, codes: np.ndarray, vocab: tuple):
        self.codes, self.vocab = codes, vocab


class Objs:
    """Any Python values, one per row (the slow, general form)."""
    __slots__ = ("v",)

    def __init__(self, v: np.ndarray):
        self.v = v


def is_const(x) -> bool:
    """A value the same in every row (a Python scalar), not a column."""
    return not isinstance(x, (Nums, Text, Objs))


def _int_bound(v: np.ndarray) -> int:
    return int(max(-int(v.min()), int(v.max()))) if len(v) else 0


def column_of(values: Any) -> Any:
    """An input column from what a caller has: a constant, a NumPy array, Text, or a list of Python values."""
    if isinstance(values, (Nums, Text, Objs)):
        return values
    if isinstance(values, np.ndarray):
        if values.dtype == bool:
            return Nums(values, BOOL, 1)
        if values.dtype.kind in "iu":
            v = values.astype(np.int64, copy=False)
            return Nums(v, INT, _int_bound(v))
        if values.dtype.kind == "f":
            return Nums(values.astype(np.float64, copy=False), FLOAT)
        return _from_objects(values.astype(object))
    if isinstance(values, (list, tuple)):
        kinds = set(map(type, values))
        if len(kinds) == 1 and kinds <= {int, float, bool, str}:
            distinct = dict.fromkeys(values)
            if len(distinct) == 1:  # one value in every row: a constant, as Python uses it
                return next(iter(distinct))
            if kinds == {int}:
                try:
                    a = np.array(values, dtype=np.int64)
                except OverflowError:
                    pass
                else:
                    return Nums(a, INT, _int_bound(a))
            elif kinds == {float}:
                return Nums(np.array(values, dtype=np.float64), FLOAT)
        return _from_objects(np.array(values, dtype=object) if values else np.empty(0, object))
    return values


def _from_objects(v: np.ndarray) -> Any:
    """The tightest column for Python values: numbers typed, text categorical, else objects."""
    kinds = set(map(type, v))
    if kinds <= {str}:
        vocab = {word: i for i, word in enumerate(dict.fromkeys(v))}  # first-seen order
        codes = np.fromiter(map(vocab.__getitem__, v), np.int32, len(v))
        return Text(codes, tuple(vocab))
    if kinds == {bool}:
        return Nums(v.astype(bool), BOOL, 1)
    if kinds == {int}:
        try:
            a = v.astype(np.int64)
        except OverflowError:
            return Objs(v)
        return Nums(a, INT, _int_bound(a))
    if kinds == {float}:
        return Nums(v.astype(np.float64), FLOAT)
    if kinds <= {int, float, bool} and all(type(x) is float or abs(x) <= _EXACT for x in v):
        return Nums(v.astype(np.float64), np.array([_PY_TYPE[type(x)] for x in v], np.int8))
    return Objs(v)


def _lut(values: list) -> Any:
    """A lookup table (one value per code) as a column."""
    if values and all(type(x) is type(values[0]) for x in values) and type(values[0]) is str:
        return Text(np.arange(len(values), dtype=np.int32), tuple(values))
    return _from_objects(np.array(values + [None], dtype=object)[:-1])


def take(x, index) -> Any:
    """The rows `index` (an int array or a slice) of a column (or of a NumPy array, as callers give one)."""
    if isinstance(x, np.ndarray):
        return x[index]
    if isinstance(x, Nums):
        return Nums(x.v[index], x.t if type(x.t) is int else x.t[index], x.bound)
    if isinstance(x, Text):
        return Text(x.codes[index], x.vocab)
    if isinstance(x, Objs):
        return Objs(x.v[index])
    return x


def to_list(x, n: int) -> list:
    """A column as the scalar path's Python values (ints, floats, bools, str)."""
    if isinstance(x, Nums):
        if type(x.t) is int:
            return x.v.tolist()
        out = x.v.tolist()
        for code, cast in ((INT, int), (BOOL, bool)):
            for i in np.flatnonzero(x.t == code).tolist():
                out[i] = cast(out[i])
        return out
    if isinstance(x, Text):
        vocab = x.vocab
        return [vocab[c] for c in x.codes.tolist()]
    if isinstance(x, (Objs, np.ndarray)):
        return x.v.tolist() if isinstance(x, Objs) else x.tolist()
    return [x] * n


def to_objects(x, n: int) -> np.ndarray:
    out = np.empty(n, dtype=object)
    out[:] = to_list(x, n)
    return out


def as_numbers(x, n: int) -> np.ndarray:
    """A column as a NumPy array of numbers (int64, float64 or bool; exact up to 2**53)."""
    if isinstance(x, Nums):
        return x.v
    if isinstance(x, Text):
        raise TypeError("a text column has no numbers")
    if isinstance(x, Objs):
        return np.array(x.v.tolist())
    return np.full(n, x)


# ---------------------------------------------------------------------------------------------
# Evaluating one set of rows

class _Frame:
    """One pass over `size` rows: input columns, the terms computed so far, and the rows the scalar
    path must redo (bad). `active` is the rows whose values count at this point of an expression
    (None: all): a branch of an IF that other rows take is computed for them too, but what it raises
    there is not theirs."""

    def __init__(self, size: int, inputs: Mapping[str, Any], assumptions: Mapping[str, Any],
                 tables: "_Tables", outer: Callable[[str], Any] | None = None):
        self.size, self.inputs, self.assumptions, self.tables = size, inputs, assumptions, tables
        self.outer = outer  # terms computed on the distinct outer rows, gathered for these rows
        self.terms: dict[str, Any] = {}
        self.bad = np.zeros(size, dtype=bool)
        self.active: np.ndarray | None = None
        self.deferred: np.ndarray | None = None  # where flags go while a hoisted subexpression is computed
        self.watch: Mapping[str, np.ndarray] = {}  # hoisted name -> its rows' deferred flags (see VectorTerms)

    # ---- problems ---------------------------------------------------------------------------
    def flag(self, rows, *, eager: bool = False) -> None:
        """Rows whose scalar evaluation raises or that a column cannot hold exactly (rows: a bool array
        or True for every row). eager: the scalar path computes it whatever the branch (catalog rows)."""
        if rows is True:
            rows = np.ones(self.size, dtype=bool)
        if not eager and self.active is not None:
            rows = rows & self.active
        target = self.bad if eager or self.deferred is None else self.deferred
        np.logical_or(target, rows, out=target)

    def check_exact(self, x: Nums) -> None:
        """The rows whose ints are not exact as float64."""
        if x.bound is not None and x.bound <= _EXACT:
            return
        if type(x.t) is int:
            if x.t != FLOAT:
                self.flag(np.abs(x.v) > _EXACT)
        else:
            self.flag((x.t != FLOAT) & (np.abs(x.v) > _EXACT))

    # ---- evaluation -------------------------------------------------------------------------
    def term(self, name: str, expr: Expr) -> Any:
        with np.errstate(all="ignore"):
            value = self.eval(expr)
        self.terms[name] = value
        return value

    def eval(self, e: Expr) -> Any:
        return _EVAL[type(e)](self, e)

    def var(self, e: Var) -> Any:
        n = e.name
        if n in self.watch:  # a hoisted subexpression that raised for some rows: theirs where read
            self.flag(self.watch[n])
        if n in self.terms:
            return self.terms[n]
        if n in self.inputs:
            return self.inputs[n]
        if self.outer is not None:
            value = self.outer(n)
            if value is not _MISSING:
                self.terms[n] = value
                return value
        return self.assumptions[n]

    def under(self, mask, evaluate):
        """evaluate() with only `mask`'s rows (of the active ones) active."""
        saved = self.active
        self.active = mask if saved is None else mask & saved
        try:
            return evaluate()
        finally:
            self.active = saved

    def truth(self, x) -> Any:
        """Python's truth of each row: a bool array, or a constant bool."""
        if isinstance(x, Nums):
            return x.v if x.v.dtype == bool else x.v != 0
        if is_const(x):
            return bool(x)
        if isinstance(x, Text):
            return np.array([bool(w) for w in x.vocab] + [False], dtype=bool)[x.codes]
        return np.array([bool(v) for v in x.v.tolist()], dtype=bool)

    def decided(self, truth) -> bool | None:
        """True or False when every active row agrees, else None."""
        if type(truth) is bool:
            return truth
        active = self.active
        if active is None:
            if truth.all():
                return True
            if not truth.any():
                return False
            return None
        if np.greater_equal(truth, active).all():
            return True
        if not (truth & active).any():
            return False
        return None

    # ---- the general forms: Python's own semantics per distinct value, or per row ------------------
    def python(self, node: Expr, args: list, *, eager: bool = False) -> Any:
        """Apply the node's scalar-path Python to evaluated operands: per distinct value when every
        operand is text or constant, else per row."""
        fn = _scalar_fn(node)
        if all(is_const(a) for a in args):
            try:
                return fn(*args)
            except Exception:
                self.flag(True, eager=eager)
                return 0
        texts = [a for a in args if isinstance(a, Text)]
        if all(is_const(a) or isinstance(a, Text) for a in args) and len(texts) == 1:
            text = texts[0]
            out, failed = [], []
            for word in text.vocab:
                try:
                    out.append(fn(*(word if a is text else a for a in args)))
                    failed.append(False)
                except Exception:
                    out.append(0)
                    failed.append(True)
            if any(failed):
                self.flag(np.array(failed)[text.codes], eager=eager)
            return take(_lut(out), text.codes)
        columns = [to_objects(a, self.size) for a in args]
        out = np.empty(self.size, dtype=object)
        failed = np.zeros(self.size, dtype=bool)
        for i, values in enumerate(zip(*columns)):
            try:
                out[i] = fn(*values)
            except Exception:
                out[i], failed[i] = 0, True
        if failed.any():
            self.flag(failed, eager=eager)
        return _from_objects(out)


_SCALAR_FNS: dict = {}


def _scalar_fn(node: Expr) -> Callable:
    """The scalar path's Python for this kind of node, over its operands' values: the node rendered by
    formulas.to_python with its operands as parameters (one source of truth for the semantics)."""
    key = (type(node), getattr(node, "op", None), getattr(node, "name", None), len(node.children()))
    fn = _SCALAR_FNS.get(key)
    if fn is None:
        if not isinstance(node, (Op, Cmp, Fn, Concat)):
            raise TypeError(f"no scalar form for {node!r}")
        shaped = with_children(node, [Var(f"_{i}") for i in range(len(node.children()))])
        params = shaped.children()
        source = to_python(shaped, lambda n: n, lambda e: "")
        namespace = dict(PYTHON_HELPERS)
        exec(f"def _fn({', '.join(p.name for p in params)}):\n    return {source}\n", namespace)  # noqa: S102
        fn = _SCALAR_FNS[key] = namespace["_fn"]
    return fn


# ---------------------------------------------------------------------------------------------
# Numbers: the array forms

def _nums(frame: _Frame, x) -> Nums | None:
    """x as Nums if it is a number column or a number constant, else None."""
    if isinstance(x, Nums):
        return x
    t = type(x)
    if t is int or t is bool:
        if abs(x) >= _SAFE:
            return None
        return Nums(np.int64(x) if t is int else np.bool_(x), _PY_TYPE[t], abs(int(x)))
    if t is float:
        return Nums(np.float64(x), FLOAT)
    return None


def _static(t) -> bool:
    return type(t) is int


def _as_int64(x: Nums) -> np.ndarray:
    return x.v.astype(np.int64) if x.v.dtype == bool else x.v


def _as_float(frame: _Frame, x: Nums, *, exact: bool) -> np.ndarray:
    """float64 values; exact: rows whose int would round are flagged (true division, comparisons)."""
    if exact and x.v.dtype != np.float64:
        frame.check_exact(x)
    return x.v.astype(np.float64) if x.v.dtype != np.float64 else x.v


def _types(ta, tb):
    """The Python type of a + b, a − b, a × b, a mod b: float if either is, else int (bools add as ints)."""
    static_a, static_b = _static(ta), _static(tb)
    if (static_a and ta == FLOAT) or (static_b and tb == FLOAT):
        return FLOAT
    if static_a and static_b:
        return INT
    return np.where((ta == FLOAT) | (tb == FLOAT), np.int8(FLOAT), np.int8(INT))


_NP_OP = {"+": "add", "-": "subtract", "*": "multiply"}  # NumPy's names: it is imported at first use


def _arith(frame: _Frame, e: Op) -> Any:
    a, b = frame.eval(e.a), frame.eval(e.b)
    na, nb = _nums(frame, a), _nums(frame, b)
    if na is None or nb is None or (is_const(a) and is_const(b)):
        return frame.python(e, [a, b])
    if e.op == "/":
        zero = nb.v == 0
        if np.any(zero):
            frame.flag(np.broadcast_to(zero, (frame.size,)).copy())
        both_int = (na.t != FLOAT) & (nb.t != FLOAT)
        if np.any(both_int):  # Python divides two ints exactly, then rounds once
            frame.check_exact(na)
            frame.check_exact(nb)
        return Nums(_full(frame, _as_float(frame, na, exact=False) / _as_float(frame, nb, exact=False)), FLOAT)
    t = _types(na.t, nb.t)
    fn = getattr(np, _NP_OP[e.op])
    if t is INT:
        va, vb = _as_int64(na), _as_int64(nb)
        bound = na.bound + nb.bound if e.op != "*" else na.bound * nb.bound
        v = _full(frame, fn(va, vb))
        if bound >= _SAFE:  # the rows whose float64 shadow leaves the safe range may have overflowed
            overflow = _full(frame, np.abs(fn(va.astype(np.float64), vb.astype(np.float64))) >= _SAFE)
            frame.flag(overflow)
            v[overflow] = 0
            bound = _int_bound(v)
        return Nums(v, INT, bound)
    if t is FLOAT:
        return Nums(_full(frame, fn(_as_float(frame, na, exact=False), _as_float(frame, nb, exact=False))), FLOAT)
    # ints and floats by row: ints computed in float64 must stay exact
    frame.check_exact(na)
    frame.check_exact(nb)
    v = _full(frame, fn(_as_float(frame, na, exact=False), _as_float(frame, nb, exact=False)))
    frame.flag((t == INT) & (np.abs(v) > _EXACT))
    return Nums(v, t)


def _full(frame: _Frame, v) -> np.ndarray:
    """A result of array arithmetic as a full column (an operation on two broadcast constants is not)."""
    return v if isinstance(v, np.ndarray) and v.shape == (frame.size,) else np.full(frame.size, v)


_NP_CMP = {"=": "equal", "<>": "not_equal", "<": "less", "<=": "less_equal", ">": "greater", ">=": "greater_equal"}


def _compare(frame: _Frame, e: Cmp) -> Any:
    a, b = frame.eval(e.a), frame.eval(e.b)
    return _compare_values(frame, e, a, b)


def _compare_values(frame: _Frame, e: Cmp, a, b) -> Any:
    na, nb = _nums(frame, a), _nums(frame, b)
    if na is None or nb is None or (is_const(a) and is_const(b)):
        if isinstance(a, Text) and isinstance(b, str) and e.op in ("=", "<>"):  # the common case, fast
            hits = np.array([w == b for w in a.vocab] + [False], dtype=bool)[a.codes]
            return Nums(hits if e.op == "=" else ~hits, BOOL, 1)
        return frame.python(e, [a, b])
    fn = getattr(np, _NP_CMP[e.op])
    if _types(na.t, nb.t) is INT:  # ints (and bools) compare exactly in int64
        v = fn(_as_int64(na), _as_int64(nb))
    else:
        v = fn(_as_float(frame, na, exact=True), _as_float(frame, nb, exact=True))
    return Nums(_full(frame, v), BOOL, 1)


def _select(frame: _Frame, mask: np.ndarray, x, y) -> Any:
    """x where mask, else y (two evaluated branches)."""
    if isinstance(x, (Text, str)) and isinstance(y, (Text, str)):
        tx = x if isinstance(x, Text) else Text(np.zeros(frame.size, np.int32), (x,))
        ty = y if isinstance(y, Text) else Text(np.zeros(frame.size, np.int32), (y,))
        return Text(np.where(mask, tx.codes, ty.codes + len(tx.vocab)).astype(np.int32), tx.vocab + ty.vocab)
    nx, ny = _nums(frame, x), _nums(frame, y)
    if nx is None or ny is None:
        return _from_objects(np.where(mask, to_objects(x, frame.size), to_objects(y, frame.size)))
    if _static(nx.t) and _static(ny.t) and nx.t == ny.t:
        v = np.where(mask, nx.v, ny.v)
        bound = None if nx.t == FLOAT else max(nx.bound, ny.bound)
        return Nums(_full(frame, v), nx.t, bound)
    # different types by row: float64 values, ints exact
    frame.under(mask, lambda: frame.check_exact(nx))
    frame.under(~mask, lambda: frame.check_exact(ny))
    v = np.where(mask, _as_float(frame, nx, exact=False), _as_float(frame, ny, exact=False))
    t = np.where(mask, nx.t if not _static(nx.t) else np.int8(nx.t), ny.t if not _static(ny.t) else np.int8(ny.t))
    return Nums(_full(frame, v), _full(frame, t.astype(np.int8)))


def _if(frame: _Frame, e: Fn) -> Any:
    cond, then, otherwise = e.args
    truth = frame.truth(frame.eval(cond))
    decided = frame.decided(truth)
    if decided is True:
        return frame.eval(then)
    if decided is False:
        return frame.eval(otherwise)
    x = frame.under(truth, lambda: frame.eval(then))
    y = frame.under(~truth, lambda: frame.eval(otherwise))
    return _select(frame, truth, x, y)


def _and_or(frame: _Frame, e: Fn) -> Any:
    """Python's `a and b and …` / `a or b or …`: the value of the first operand that decides (the
    last if none does), each evaluated only for the rows still undecided."""
    result = None
    going = None  # the rows still undecided (None: all)
    for i, arg in enumerate(e.args):
        value = frame.eval(arg) if going is None else frame.under(going, lambda arg=arg: frame.eval(arg))
        result = value if going is None else _select(frame, going, value, result)
        if i == len(e.args) - 1:
            break
        truth = frame.truth(value)
        # `or` stops at the first true operand, `and` at the first false one
        goes_on = (not truth if e.name == "OR" else truth) if type(truth) is bool else (
            ~truth if e.name == "OR" else truth)
        if type(goes_on) is bool:
            if not goes_on:
                break
            continue
        going = goes_on if going is None else going & goes_on
        if frame.decided(going) is False:  # no row (that counts) is still undecided
            break
    return result


def _not(frame: _Frame, e: Fn) -> Any:
    x = frame.eval(e.args[0])
    if is_const(x):
        return frame.python(e, [x])
    truth = frame.truth(x)
    return Nums(~truth, BOOL, 1)


def _extreme(frame: _Frame, e: Fn) -> Any:
    """Python's max/min: the first operand that no later one beats (`>` for max, `<` for min)."""
    values = [frame.eval(a) for a in e.args]
    if all(is_const(v) for v in values) or any(_nums(frame, v) is None for v in values):
        return frame.python(e, values)
    beats = Cmp(">" if e.name == "MAX" else "<", Num(0), Num(0))
    best = values[0]
    for v in values[1:]:
        wins = frame.truth(_compare_values(frame, beats, v, best))
        best = (v if wins else best) if type(wins) is bool else _select(frame, wins, v, best)
    return best


def _round(frame: _Frame, e: Fn) -> Any:
    """ROUNDUP (spreadsheet_ceil) and INT (math.floor): ints, as Python returns them."""
    x = frame.eval(e.args[0])
    n = _nums(frame, x)
    if n is None or is_const(x):
        return frame.python(e, [x] + [frame.eval(a) for a in e.args[1:]])
    if _static(n.t) and n.t != FLOAT:
        return Nums(_as_int64(n), INT, n.bound)
    v = _as_float(frame, n, exact=False)
    if e.name == "ROUNDUP":
        up = np.ceil(v)
        r = up - ((up != v) & (v - (up - 1) <= np.abs(v) * _SLACK))
    else:
        r = np.floor(v)
    outside = ~(np.abs(r) < _SAFE)  # infinity and NaN raise; beyond int64 the scalar path keeps a big int
    frame.flag(outside)
    r[outside] = 0
    r = r.astype(np.int64)
    return Nums(r, INT, _int_bound(r))


def _mod(frame: _Frame, e: Fn) -> Any:
    a, b = frame.eval(e.args[0]), frame.eval(e.args[1])
    na, nb = _nums(frame, a), _nums(frame, b)
    if na is None or nb is None or (is_const(a) and is_const(b)):
        return frame.python(e, [a, b])
    zero = nb.v == 0
    if np.any(zero):
        frame.flag(np.broadcast_to(zero, (frame.size,)).copy())
    t = _types(na.t, nb.t)
    if t is INT:
        vb = np.where(zero, 1, _as_int64(nb)) if np.any(zero) else _as_int64(nb)
        return Nums(_full(frame, np.remainder(_as_int64(na), vb)), INT, nb.bound)
    frame.check_exact(na)
    frame.check_exact(nb)
    v = _full(frame, np.remainder(_as_float(frame, na, exact=False), _as_float(frame, nb, exact=False)))
    return Nums(v, t)


def _power(frame: _Frame, e: Fn) -> Any:
    """The scalar path's POWER (its compiled Python) on each distinct (base, exponent) pair: numpy's power differs
    from it in the last bit, and a term's few distinct pairs (nodes, top-k) make it cheap."""
    a, b = frame.eval(e.args[0]), frame.eval(e.args[1])
    na, nb = _nums(frame, a), _nums(frame, b)
    if na is None or nb is None or (is_const(a) and is_const(b)):
        return frame.python(e, [a, b])
    pairs = np.stack(np.broadcast_arrays(_full(frame, _as_float(frame, na, exact=False)),
                                         _full(frame, _as_float(frame, nb, exact=False))), axis=1)
    distinct, where = np.unique(pairs, axis=0, return_inverse=True)
    values, failed = np.zeros(len(distinct)), np.zeros(len(distinct), dtype=bool)
    power = _scalar_fn(e)
    for k, (base, exponent) in enumerate(distinct.tolist()):
        try:
            values[k] = power(base, exponent)
        except Exception:  # a negative base to a fractional power, an overflow: the spreadsheet's #NUM!
            failed[k] = True
    where = where.reshape(-1)
    if failed.any():
        frame.flag(failed[where])
    return Nums(values[where], FLOAT)


def _fn(frame: _Frame, e: Fn) -> Any:
    handler = _FN.get(e.name)
    if handler is not None:
        return handler(frame, e)
    return frame.python(e, [frame.eval(a) for a in e.args])


_FN = {"IF": _if, "AND": _and_or, "OR": _and_or, "NOT": _not, "MAX": _extreme, "MIN": _extreme,
       "ROUNDUP": _round, "INT": _round, "MOD": _mod, "POWER": _power}


def _lookup(frame: _Frame, e: Lookup) -> Any:
    """table[key][column]. The scalar path fetches a catalog row before any term, whatever the
    branches: a key the table lacks is the row's error even where no branch reads it (eager)."""
    key = frame.eval(e.key)
    text = key if isinstance(key, Text) else _text_codes(frame, key)
    column, missing = frame.tables.column(e.table, e.column, text.vocab)
    if missing is not None:
        frame.flag(missing[text.codes], eager=True)
    return column if is_const(key) else take(column, text.codes)


def _in_table(frame: _Frame, e: InTable) -> Any:
    key = frame.eval(e.key)
    text = key if isinstance(key, Text) else _text_codes(frame, key)
    rows = frame.tables.raw.get(e.table, {})
    hits = [_hashable(k) and k in rows for k in text.vocab]
    return hits[0] if is_const(key) else Nums(np.array(hits, dtype=bool)[text.codes], BOOL, 1)


def _row_of(frame: _Frame, e: RowOf) -> Any:
    """The key's row's ROW_FIELD (its sheet row in the workbook), None for a key not in the table."""
    key = frame.eval(e.key)
    text = key if isinstance(key, Text) else _text_codes(frame, key)
    rows = frame.tables.raw.get(e.table, {})
    found = [rows[k].get(ROW_FIELD) if _hashable(k) and k in rows else None for k in text.vocab]
    return found[0] if is_const(key) else Objs(np.array(found, dtype=object)[text.codes])


def _text_codes(frame: _Frame, key) -> Text:
    """A lookup key as codes into its distinct values (a constant: one code)."""
    if is_const(key):
        return Text(np.zeros(frame.size, np.int32), (key,))
    mapping: dict = {}
    values = to_list(key, frame.size)
    codes = np.fromiter((mapping.setdefault((type(k), k) if _hashable(k) else id(k), len(mapping)) for k in values),
                        np.int32, frame.size)
    vocab = [None] * len(mapping)
    for k in values:
        vocab[mapping[(type(k), k) if _hashable(k) else id(k)]] = k
    return Text(codes, tuple(vocab))


def _hashable(x) -> bool:
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _concat(frame: _Frame, e: Concat) -> Any:
    """The scalar path's join of its parts' texts (formulas.spreadsheet_text), each part's text made
    once per distinct value and the texts joined row by row (a sweep's labels: a row's 30 parts)."""
    parts = [frame.eval(p) for p in e.parts]
    if sum(isinstance(p, Text) for p in parts) <= 1 and all(is_const(p) or isinstance(p, Text) for p in parts):
        return frame.python(e, parts)  # per distinct value
    texts = [_spreadsheet_texts(p, frame.size) for p in parts]
    joined = list(map("".join, zip(*(repeat(t, frame.size) if type(t) is str else t for t in texts))))
    return _from_objects(np.array(joined, dtype=object))


def _spreadsheet_texts(x, n: int) -> str | list[str]:
    """spreadsheet_text of a constant, or of each of a column's n values."""
    if is_const(x):
        return spreadsheet_text(x)
    if isinstance(x, Text):
        words = [spreadsheet_text(w) for w in x.vocab]
        return list(map(words.__getitem__, x.codes.tolist()))
    if isinstance(x, Nums) and type(x.t) is int:  # -0.0 and 0.0, or NaNs, fall together: their texts are the same
        distinct, inverse = np.unique(x.v, return_inverse=True)
        words = [spreadsheet_text(v) for v in distinct.tolist()]
        return list(map(words.__getitem__, inverse.reshape(-1).tolist()))
    return list(map(spreadsheet_text, to_list(x, n)))


_EVAL: dict[type, Callable] = {
    Num: lambda f, e: e.value, Const: lambda f, e: e.value, Str: lambda f, e: e.value,
    Var: _Frame.var, Op: _arith, Cmp: _compare, Fn: _fn, Lookup: _lookup, InTable: _in_table, RowOf: _row_of,
    Concat: _concat,
}


# ---------------------------------------------------------------------------------------------
# Catalog tables as columns

class _Tables:
    """The lookup tables (name -> row key -> column -> value) with each column as a lookup array per
    vocabulary of keys."""

    def __init__(self, raw: Mapping[str, Mapping[str, Mapping[str, Any]]]):
        self.raw = raw
        self._cache: dict = {}

    def column(self, table: str, column: str, vocab: tuple) -> tuple[Any, np.ndarray | None]:
        key = (table, column, vocab)
        hit = self._cache.get(key)
        if hit is None:
            rows = self.raw.get(table, {})
            found = [_hashable(k) and k in rows and column in rows[k] for k in vocab]
            values = [rows[k][column] if ok else 0 for k, ok in zip(vocab, found)]
            lut = values[0] if len(vocab) == 1 else _lut(values)  # one key: the value itself
            hit = (lut, None if all(found) else ~np.array(found))
            self._cache[key] = hit
        return hit


# ---------------------------------------------------------------------------------------------
# A term table, compiled

@dataclass(frozen=True)
class Chunk:
    """Every term of rows start … start + size − 1: columns (a term computed once per distinct outer
    combination is that column and the rows' `index` into it), and the rows the scalar path computed
    (overrides: row within the chunk -> every term's value, in table order)."""
    names: tuple[str, ...]
    start: int
    size: int
    values: Mapping[str, Any]  # name -> column (constant, Nums, Text or Objs)
    overrides: Mapping[int, tuple]
    outer: Mapping[str, Any] | None = None
    index: np.ndarray | None = None
    outer_rows: np.ndarray | None = None  # a row (of all chunks') of each outer combination

    def column(self, name: str) -> Any:
        if name in self.values:
            return self.values[name]
        return take(self.outer[name], self.index)

    def tolist(self, name: str) -> list:
        if name in self.values:
            out = to_list(self.values[name], self.size)
        elif is_const(self.outer[name]):
            out = [self.outer[name]] * self.size
        else:  # the rows of one outer combination share its Python values: one object, not one a row
            distinct = to_list(self.outer[name], 0)
            out = list(map(distinct.__getitem__, self.index.tolist()))
        if self.overrides:
            i = self.names.index(name)
            for row, values in self.overrides.items():
                out[row] = values[i]
        return out

    def numbers(self, name: str) -> np.ndarray:
        """A number term as an array (float64 where types differ by row; exact up to 2**53)."""
        v = as_numbers(self.column(name), self.size)
        if self.overrides:
            i = self.names.index(name)
            scalar = [o[i] for o in self.overrides.values()]
            if v.dtype == np.int64 and all(type(x) is int and abs(x) < _SAFE for x in scalar):
                v = v.copy()
            else:
                v = v.astype(np.float64 if all(type(x) in _PY_TYPE for x in scalar) else object)
            for row, values in self.overrides.items():
                v[row] = values[i]
        return v

    def rows(self) -> Iterator[tuple]:
        """Each row's values in table order, as the scalar path returns them."""
        return zip(*(self.tolist(n) for n in self.names))

    def take(self, rows: np.ndarray) -> "Chunk":
        """These rows (positions in the chunk, in this order) as a chunk of their own (from row 0, every
        term a column of its rows): rows computed with others are read so."""
        at = {int(row): k for k, row in enumerate(rows.tolist())}
        return Chunk(self.names, 0, len(rows), _Taken(self, rows), {at[row]: v for row, v in self.overrides.items()
                                                                     if row in at})


class _Taken(collections.abc.Mapping):
    """Chunk.take's columns, each taken when first read (a reader of a few terms takes only those)."""

    def __init__(self, chunk: Chunk, rows: np.ndarray):
        self.chunk, self.rows, self.taken = chunk, rows, {}

    def __getitem__(self, name: str) -> Any:
        if name not in self.taken:
            if name not in self.chunk.names:
                raise KeyError(name)
            self.taken[name] = take(self.chunk.column(name), self.rows)
        return self.taken[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.chunk.names)

    def __len__(self) -> int:
        return len(self.chunk.names)


@dataclass(frozen=True)
class TermColumns:
    """Every term of every row of a sweep, held as the chunks it was computed in."""
    names: tuple[str, ...]
    chunks: tuple[Chunk, ...]

    def __len__(self) -> int:
        return sum(c.size for c in self.chunks)

    def tolist(self, name: str) -> list:
        return [v for c in self.chunks for v in c.tolist(name)]

    def numbers(self, name: str) -> np.ndarray:
        parts = [c.numbers(name) for c in self.chunks]
        return np.concatenate(parts) if parts else np.empty(0)

    def rows(self) -> Iterator[tuple]:
        for c in self.chunks:
            yield from c.rows()

    def __iter__(self) -> Iterator[tuple]:
        return self.rows()


class VectorTerms:
    """A term table compiled for columns. scalar: the same table compiled by formulas.compile_terms
    (I, A, T, R) -> every term's value in table order; the rows a column cannot hold exactly go
    through it. row_inputs: the inputs a sweep varies fastest (see the module's docstring)."""

    def __init__(self, terms: Sequence, row_inputs: Sequence[str], scalar: Callable[..., tuple]):
        self.terms = tuple(terms)
        self.names = tuple(t.name for t in self.terms)
        self.scalar = scalar
        varying = set(row_inputs)
        for t in self.terms:
            if t.expr.names() & varying:
                varying.add(t.name)
        self.row_inputs = tuple(row_inputs)
        self.outer = tuple(t for t in self.terms if t.name not in varying)
        hoisted: dict[str, tuple[str, Expr]] = {}
        self.inner = tuple((t.name, _hoist(t.expr, varying, hoisted)) for t in self.terms if t.name in varying)
        self.hoisted = tuple(hoisted.values())

    def evaluate(self, columns: Mapping[str, Any], size: int, assumptions: Mapping[str, Any],
                 tables: Mapping, chunk_rows: int = CHUNK_ROWS) -> TermColumns:
        return TermColumns(self.names, tuple(self.chunks(columns, size, assumptions, tables, chunk_rows)))

    def chunks(self, columns: Mapping[str, Any], size: int, assumptions: Mapping[str, Any], tables: Mapping,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Chunk]:
        """The terms of `size` rows, chunk by chunk (memory stays flat however many rows). columns:
        input name -> a constant, a NumPy array, Text, or a list of Python values."""
        if not size:
            return
        columns = {n: column_of(v) for n, v in columns.items()}
        catalog = _Tables(tables)
        groups = _outer_groups(columns, self.row_inputs, size) if self.inner and self.outer else None
        outer = None
        if groups is not None:  # the outer terms once per distinct combination of the outer inputs
            rep, inverse = groups
            outer = _Frame(len(rep), {n: take(c, rep) for n, c in columns.items()}, assumptions, catalog)
            for t in self.outer:
                outer.term(t.name, t.expr)
            deferred = {}
            for name, expr in self.hoisted:  # for every combination, whichever branch its rows take
                outer.deferred = np.zeros(len(rep), dtype=bool)
                outer.term(name, expr)
                if outer.deferred.any():
                    deferred[name] = outer.deferred
            outer.deferred = None
        for start in range(0, size, chunk_rows):
            part = slice(start, min(size, start + chunk_rows))
            inputs = {n: take(c, part) for n, c in columns.items()}
            n = part.stop - start
            if outer is None:
                frame = _Frame(n, inputs, assumptions, catalog)
                for t in self.terms:
                    frame.term(t.name, t.expr)
                bad, index = frame.bad, None
            else:
                index = inverse[part]
                frame = _Frame(n, inputs, assumptions, catalog,
                               lambda name, index=index: take(outer.terms[name], index) if name in outer.terms
                               else _MISSING)
                frame.watch = {name: rows[index] for name, rows in deferred.items()}
                for name, expr in self.inner:
                    frame.term(name, expr)
                bad = frame.bad | outer.bad[index]
            overrides = {}
            for row in np.flatnonzero(bad).tolist():
                one = {name: to_list(take(c, slice(start + row, start + row + 1)), 1)[0] for name, c in columns.items()}
                overrides[row] = tuple(self.scalar(one, assumptions, tables, None))
            values = {name: v for name, v in frame.terms.items() if outer is None or name not in outer.terms}
            yield Chunk(self.names, start, n, values, overrides, outer.terms if outer else None, index,
                        groups[0] if outer else None)


def _hoist(expr: Expr, varying: set[str], hoisted: dict[str, tuple[str, Expr]]) -> Expr:
    """expr with each largest subexpression that reads nothing varying (and is more than a name or a
    number) replaced by the name of a term computed once per outer combination, like an outer term:
    hoisted collects them (one per distinct subexpression). Where such a subexpression raises for a
    combination, its rows are flagged where the expression reads it (a branch they take), as before."""
    kids = expr.children()
    if not kids:
        return expr
    if not expr.names() & varying:
        name, _ = hoisted.setdefault(repr(expr), (f"\0hoisted {len(hoisted)}", expr))
        return Var(name)
    return with_children(expr, [_hoist(k, varying, hoisted) for k in kids])


def _outer_groups(columns: Mapping[str, Any], row_inputs: Sequence[str], size: int):
    """(rep, inverse): a row of each distinct combination of the inputs other than row_inputs, and for
    every row its combination; None when the combinations are nearly as many as the rows."""
    codes = []
    for name, column in columns.items():
        if name in row_inputs or is_const(column):
            continue
        c = _codes(column)
        if c is not None:
            codes.append(c)
    if not codes:
        return np.zeros(1, dtype=np.int64), np.zeros(size, dtype=np.int64)
    key = np.zeros(size, dtype=np.int64)
    radix = 1
    for c, n in codes:
        if radix * n >= 2**62:  # compact the key so far before it overflows
            uniq, key = np.unique(key, return_inverse=True)
            radix = len(uniq)
        key = key * n + c
        radix *= n
    if radix <= 4 * size:
        present = np.zeros(radix, dtype=bool)
        present[key] = True
        number = np.cumsum(present) - 1
        inverse = number[key]
        count = int(number[-1]) + 1
    else:
        uniq, inverse = np.unique(key, return_inverse=True)
        count = len(uniq)
    if count * 4 > size:
        return None
    rep = np.empty(count, dtype=np.int64)
    rep[inverse] = np.arange(size)  # any row of a combination represents it
    return rep, inverse


def _codes(column) -> tuple[np.ndarray, int] | None:
    """(codes, how many) of a column: equal values, equal codes."""
    if isinstance(column, Text):
        return column.codes.astype(np.int64), len(column.vocab)
    if isinstance(column, Nums):
        v = column.v
        if v.dtype != np.float64 and type(column.t) is int:
            lo, hi = int(v.min()), int(v.max())
            if hi - lo < 2**20:
                return v.astype(np.int64) - lo, hi - lo + 1
        if (v == v[0]).all() and type(column.t) is int:
            return np.zeros(len(v), dtype=np.int64), 1
        pairs = v if type(column.t) is int else v + np.asarray(column.t) * 1j  # the type tells 1 from 1.0
        uniq, inverse = np.unique(pairs, return_inverse=True)
        return inverse.astype(np.int64), len(uniq)
    objs = column.v
    mapping: dict = {}
    codes = np.fromiter((mapping.setdefault((type(x), x), len(mapping)) for x in objs), np.int64, len(objs))
    return codes, len(mapping)
