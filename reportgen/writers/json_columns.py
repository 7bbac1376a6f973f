"""A sweep block's scenario lines rendered from columns: the UTF-8 bytes of the text json.dumps gives
for each Result, without making the Result (and without encoding 2 GB of text at the end: a number's
text is ASCII either way, so it is made as bytes).

The line's shape is estimate.estimate_json_layout (the one definition Estimate.to_json fills),
compiled into literal pieces and slots per kind of row (which of "time" and "serving" it has). A
slot's text comes from a term column, an axis, or a text per combination (name, parameters). Most of
a line depends only on the row's outer combination (every input but batch and lengths: see
vector.py): each maximal run of such slots is rendered once per combination, so a row fills a few
slots (its index, batch, lengths and the terms that read them) into one %-template.
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterator, Mapping

from ..model.arrays import np
from ..model.estimate import PHASE_NAMES, SWEEP_ROW_INPUTS, estimate_json_layout
from ..model.inputs import INPUT_NAMES
from ..report.build import BlockResults, Result
from ..scenarios.sweep import SweepBlock
from ..model.vector import BOOL, INT, Chunk, Nums, is_const, to_list

_NONFINITE = {b"inf", b"-inf", b"nan"}  # repr of what JSON spells Infinity, -Infinity, NaN
_BOOL_TEXT = {False: b"false", True: b"true"}
_PHASE_TEXT = {code: json.dumps(name).encode() for code, name in PHASE_NAMES.items()}
INT_TEXT = b"%d".__mod__  # an int's repr, as bytes
FLOAT_TEXT = b"%r".__mod__  # a float's repr (json.dumps writes it so when it is finite), as bytes
Slot = tuple[str, str]  # (kind, name): index, input, label, components, or a JsonField kind and its term


def dump(value: Any) -> str:
    """JSON text as the writer writes it: compact, UTF-8."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def dump_bytes(value: Any) -> bytes:
    return dump(value).encode()


def scenario_json(r: Result) -> dict[str, Any]:
    return {"index": r.index, "matrix": r.matrix, **r.estimate.to_json()}


def _raw_texts(values: list) -> list[bytes]:
    """JSON texts of Python values, as json.dumps writes them."""
    kinds = set(map(type, values))
    if kinds == {int}:
        return list(map(INT_TEXT, values))
    if kinds == {float}:
        out = list(map(FLOAT_TEXT, values))
        if _NONFINITE.isdisjoint(out):
            return out
    return list(map(dump_bytes, values))


def _leaf_texts(kind: str, values: list) -> list[bytes]:
    """JSON texts of a JsonField's values (int(), bool(), a phase's name, or as they are)."""
    if kind == "int":
        return list(map(INT_TEXT, values if set(map(type, values)) == {int} else map(int, values)))
    if kind == "bool":
        return [_BOOL_TEXT[bool(v)] for v in values]
    if kind == "phase":
        return [_PHASE_TEXT[int(v)] for v in values]
    return _raw_texts(values)


def _column_texts(kind: str, column: Any, n: int) -> list[bytes]:
    """_leaf_texts of a term column's n values, straight from its array where its type allows."""
    if not isinstance(column, Nums):
        if is_const(column):
            return _leaf_texts(kind, [column]) * n
        return _leaf_texts(kind, to_list(column, n))
    v, t = column.v, column.t
    if kind == "bool" or (kind == "raw" and t is BOOL):
        return list(map(_BOOL_TEXT.__getitem__, (v != 0).tolist()))
    if type(t) is not int:  # Python types differ by row
        return _leaf_texts(kind, to_list(column, n))
    if kind in ("int", "phase") and v.dtype != np.int64:
        if not (np.isfinite(v).all() and (np.abs(v) < 2.0**63).all()):
            return _leaf_texts(kind, to_list(column, n))
        v = v.astype(np.int64)  # int() of a float: towards zero, as astype
    if kind == "phase":
        return list(map(_PHASE_TEXT.__getitem__, v.tolist()))
    if kind == "int" or t is INT:
        return distinct_texts(v, INT_TEXT)
    if np.isfinite(v).all():
        return distinct_texts(v, FLOAT_TEXT)
    return _leaf_texts(kind, to_list(column, n))


def distinct_texts(v: np.ndarray, text) -> list[bytes]:
    """text() of each value, computed once per distinct value where values repeat (a chunk's times and
    costs repeat across the rows of one layout and length: a float's repr costs 0.6 µs). Floats are
    told apart by their bits (-0.0 and 0.0 differ in text)."""
    bits = v.view(np.int64) if v.dtype == np.float64 else v
    distinct, first, inverse = np.unique(bits, return_index=True, return_inverse=True)
    if 2 * len(distinct) > len(v):
        return list(map(text, v.tolist()))
    texts = list(map(text, v[first].tolist()))
    return list(map(texts.__getitem__, inverse.tolist()))


class _Layout:
    """A layout as literal pieces and slots: text = pieces[0] slot[0] pieces[1] … slot[-1] pieces[-1]."""

    def __init__(self, layout: Mapping[str, Any], constant_inputs: Mapping[str, str], matrix: str):
        self.pieces, self.slots = ['{"index":'], []
        self._slot(("index", ""))
        self.pieces[-1] += ',"matrix":' + dump(matrix)
        self._object(layout, constant_inputs)
        self.pieces[-1] += "}"

    def _object(self, layout: Mapping[str, Any], constant_inputs: Mapping[str, str]) -> None:
        for key, leaf in layout.items():
            self.pieces[-1] += ("" if self.pieces[-1].endswith("{") else ",") + dump(key) + ":"
            if isinstance(leaf, Mapping):
                self.pieces[-1] += "{"
                self._object(leaf, constant_inputs)
                self.pieces[-1] += "}"
            elif leaf.kind == "inputs":
                self.pieces[-1] += "{"
                for i, name in enumerate(INPUT_NAMES):
                    self.pieces[-1] += ("," if i else "") + dump(name) + ":"
                    if name in constant_inputs:
                        self.pieces[-1] += constant_inputs[name]
                    else:
                        self._slot(("input", name))
                self.pieces[-1] += "}"
            else:
                self._slot((leaf.kind, leaf.term))

    def _slot(self, slot: Slot) -> None:
        self.slots.append(slot)
        self.pieces.append("")

    def compile(self, per_combination: Callable[[Slot], bool]) -> tuple[bytes, list]:
        """(a %-template, its fillers): a filler is a slot, or (first, last) for the run of slots
        first … last that depend on the combination alone, rendered with the pieces between them."""
        text, fillers = [self.pieces[0]], []
        k = 0
        while k < len(self.slots):
            if per_combination(self.slots[k]):
                last = k
                while last + 1 < len(self.slots) and per_combination(self.slots[last + 1]):
                    last += 1
                fillers.append((k, last))
            else:
                last = k
                fillers.append(self.slots[k])
            text += ["%s", self.pieces[last + 1]]
            k = last + 1
        return "".join(p if p == "%s" else p.replace("%", "%%") for p in text).encode(), fillers


class _BlockText:
    """What a block's lines share: its constant inputs, its axes' texts and per-combination texts."""

    def __init__(self, part: BlockResults):
        self.block = block = part.block
        self.results = part
        self.axis_of: dict[str, tuple[int, list[bytes]]] = {
            name: (j, [dump_bytes(v) for v in vals])
            for j, (name, vals) in enumerate(zip(block.names, block.values)) if len(vals) > 1}
        # every other input is the same in every row: the first row's
        self.constant_inputs = {n: dump(v) for n, v in block.scenario(0).inputs().items() if n not in self.axis_of}
        # texts of a few inputs' combinations; the name does not read batch or lengths (tested)
        self.shared = {"label": _per_combination(block, [n for n in block.names if n not in SWEEP_ROW_INPUTS],
                                                 lambda s: dump_bytes(s.label())),
                       "components": _per_combination(block, ["model"], lambda s: dump_bytes(
                           dict(part.estimator.components[s.model])))}
        self.layouts: dict[tuple[bool, bool], _Layout] = {}
        self.compiled: dict[tuple, tuple[bytes, list]] = {}
        self.segments: dict[tuple, list[bytes]] = {}  # (kind, first, last) -> text per outer combination

    def layout(self, kind: tuple[bool, bool]) -> _Layout:
        if kind not in self.layouts:
            self.layouts[kind] = _Layout(estimate_json_layout(self.block.workload, *kind), self.constant_inputs,
                                         self.block.matrix)
        return self.layouts[kind]

    def texts(self, slot: Slot, chunk: Chunk, rows: np.ndarray) -> list[bytes] | None:
        """A slot's texts for block rows `rows` (the chunk's, or the outer combinations' representatives)."""
        kind, name = slot
        if kind == "index":
            return list(map(INT_TEXT, (self.results.first_index + rows).tolist()))
        if kind == "input":
            j, texts = self.axis_of[name]
            return list(map(texts.__getitem__, self.block.codes(j, self.block.rows[rows]).tolist()))
        if kind in self.shared:
            codes, texts = self.shared[kind]
            return list(map(texts.__getitem__, codes[rows].tolist()))
        return None  # a term: the caller reads the chunk

    def lines(self, chunk: Chunk) -> list[bytes]:
        stop = chunk.start + chunk.size
        rows = np.arange(chunk.start, stop, dtype=np.int64)
        kinds = list(zip(map(bool, chunk.tolist("is_train")), map(bool, chunk.tolist("engine_mode"))))
        outer = chunk.outer
        grouped = outer is not None

        def per_combination(slot: Slot) -> bool:
            kind, name = slot
            if kind in ("index",):
                return False
            if kind == "input":
                return name not in SWEEP_ROW_INPUTS
            if kind in self.shared:
                return True
            return name in outer and name not in chunk.values

        texts: dict[Any, list[bytes]] = {}

        def filler_texts(kind: tuple[bool, bool], filler) -> list[bytes]:
            key = (kind, filler) if isinstance(filler[0], int) else filler
            if key in texts:
                return texts[key]
            if isinstance(filler[0], int):  # a run rendered per combination, gathered by the rows' combination
                first, last = filler
                if (kind, first, last) not in self.segments:
                    layout = self.layout(kind)
                    reps = chunk.outer_rows
                    parts = [self._slot_texts(layout.slots[k], chunk, reps, combination=True)
                             for k in range(first, last + 1)]
                    glue = [layout.pieces[k].encode() for k in range(first + 1, last + 1)]
                    self.segments[(kind, first, last)] = [
                        b"".join(x for pair in zip(vals, glue + [b""]) for x in pair) for vals in zip(*parts)]
                segment = self.segments[(kind, first, last)]
                out = list(map(segment.__getitem__, chunk.index.tolist()))
            else:
                out = self._slot_texts(filler, chunk, rows)
            texts[key] = out
            return out

        lines: list[bytes] = [b""] * chunk.size
        distinct = dict.fromkeys(kinds)
        for kind in distinct:
            layout = self.layout(kind)
            if (kind, grouped) not in self.compiled:
                self.compiled[(kind, grouped)] = layout.compile(per_combination if grouped else lambda s: False)
            template, fillers = self.compiled[(kind, grouped)]
            columns = [filler_texts(kind, f) for f in fillers]
            if len(distinct) == 1:
                lines = [template % row for row in zip(*columns)]
            else:
                for i in [i for i, k in enumerate(kinds) if k == kind]:
                    lines[i] = template % tuple(c[i] for c in columns)
        for row in chunk.overrides:  # rows the scalar path computed: from their Result
            lines[row] = dump_bytes(scenario_json(self.results[chunk.start + row]))
        return lines

    def _slot_texts(self, slot: Slot, chunk: Chunk, rows: np.ndarray, combination: bool = False) -> list[bytes]:
        out = self.texts(slot, chunk, rows)
        if out is not None:
            return out
        kind, name = slot
        if combination:
            return _column_texts(kind, chunk.outer[name], len(rows))
        if chunk.overrides:  # (their lines are made again from their Results; their columns may be anything)
            return _leaf_texts(kind, chunk.tolist(name))
        return _column_texts(kind, chunk.column(name), chunk.size)


def block_texts(part: BlockResults) -> Iterator[bytes]:
    """Each row's JSON text (UTF-8), in order."""
    text = _BlockText(part)
    for chunk in part.chunks():
        yield from text.lines(chunk)


def _per_combination(block: SweepBlock, names, text) -> tuple[np.ndarray, list[bytes]]:
    """(each row's combination number, each combination's text) over the given axes."""
    key, _ = block.axis_codes(names)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return inverse.astype(np.int64), [text(block.scenario(int(k))) for k in first.tolist()]
