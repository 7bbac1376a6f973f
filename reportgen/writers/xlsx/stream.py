"""Data rows written as raw SpreadsheetML and spliced into the package XlsxWriter saved.

Why: XlsxWriter costs ~30 µs per cell (a Python call chain, regexes and escaping per cell), and a
100,000-scenario sweep has 12 million cells on Scenarios. Here XlsxWriter still writes every sheet's
header rows, column widths, validations, filters, panes, print setup, charts and styles; the data
rows of a table are registered with `StreamingWorkbook.stream_rows` and written after XlsxWriter
has saved, straight into that sheet's `<sheetData>` while the zip is copied to the target.

How it stays fast:
- A formula column whose template is the same in every row except for the row number is one
  *shared formula* (ECMA-376 Part 1, §18.3.1.40): its first live row carries the text and
  `t="shared" ref="X3:X100002" si="k"`; every later live row only `<f t="shared" si="k"/>` and its cached
  value. `shareable` checks the template first; other formulas, and those of a sheet that shares
  none (SheetRows.shared_formulas), are written in full in every row.
- A row is one `%` format string, built once per row kind (which cells are text, numbers or
  blank, whether it is the first live row or one written as values, which own formulas it has) and filled
  with the row's values.
- Rows given as columns (a ColumnRun: a sweep block's, columns.py) are grouped by kind with arrays;
  a column's texts are made once per distinct value, and a run of cells that depends only on the
  row's combination of outer inputs (vector.py) once per combination: no Python object per cell.
- Every cell keeps its reference (`r`), optional in ECMA-376: without it rows would deflate in half
  the time, but openpyxl cannot read a shared formula whose cell has none.
- Formulas keep their cached Python value (`<v>`), as XlsxWriter's `write_formula(..., value)`
  does, so viewers that do not recalculate still show numbers.
- Deflate runs in a second thread (it releases the GIL) while the next rows are built, with ISA-L's
  deflate (the isal package) at level 1: a 100,000-scenario sheet is 1.3 GiB of XML, which zlib at
  level 3 took 6 s of CPU to compress (the rest of that build took 5 s); ISA-L takes about a fifth of
  that, for a file about 40 % larger (the 100,000-scenario workbook: 126 MB with zlib, 180 MB).
"""
from __future__ import annotations

import abc
import io
import queue
import re
import threading
import zipfile
from dataclasses import dataclass
from itertools import islice, repeat
from operator import itemgetter
from typing import Any, Iterator, Mapping, Sequence

import xlsxwriter
from isal import isal_zlib
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name, xl_rowcol_to_cell

from ...model.arrays import np
from ...model.vector import BOOL, INT, Nums, Text, is_const, to_list
from ..json_columns import FLOAT_TEXT as _FLOAT_TEXT, INT_TEXT as _INT_TEXT, distinct_texts

ROW = "\x00"  # a template's row number (the same placeholder as the formula templates')
ROW_BYTES = ROW.encode()
MEMO_SIZE = 10_000  # escaped texts kept for reuse
_FLAG_TEXT = {False: b"0", True: b"1"}
ROWS_PER_CHUNK = 500  # rows joined into one bytes object (~3.5 MB) for the compressor
DEFLATE_LEVEL = 1  # ISA-L's (0-3): 2 is hardly smaller on these sheets (0.5 %), 0 a quarter larger
SHEET_RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"


@dataclass(frozen=True)
class StreamColumn:
    name: str  # the key of each row mapping (and of `per_row`)
    fmt: Format | None
    is_formula: bool = False  # cells hold a formula: the row's own, else `template`; no formula: no cell
    template: str | None = None  # "=…" with ROW for the row number
    own_fmt: Format | None = None  # a row's own formula in a value column: styled as a formula's cell, not an input
    frozen_fmt: Format | None = None  # its cells in a row written as values (SheetRows.frozen)


@dataclass(frozen=True)
class SheetRows:
    """The data rows of one sheet: rows[i] is sheet row first_row + i (1-based, as in A1)."""
    columns: Sequence[StreamColumn]  # from column A
    first_row: int
    rows: Sequence[Mapping[str, Any]]
    # A row's own formulas ("=…") by column name, by row (0-based; rows without any left out): in a formula column
    # instead of its template, in a value column (an RLHF role's input that follows its group) instead of a value.
    per_row: Mapping[int, Mapping[str, str]] | None = None
    # False: every formula in full in every row. LibreOffice (7.4) keeps a shared formula's cached number but leaves
    # the cell dirty, so the first reader of a sheet at load (a chart, the view of a tab) recalculates it and every
    # term behind it; a formula written in full keeps its cached number clean. For sheets read as they open (Plan,
    # Charts: benchmarks/lo_load.py), not for Scenarios, whose rows would each carry ~50,000 characters of formulas.
    shared_formulas: bool = True
    # Per row, True: the row holds values, not formulas: each cell its cached value in its column's frozen_fmt (None:
    # every row live). LibreOffice's load pays for every formula's cell references (benchmarks/lo_load.py): a big
    # sweep's book keeps live formulas where a planner edits and loads in seconds.
    frozen: np.ndarray | None = None


class StreamingWorkbook(xlsxwriter.Workbook):
    """An XlsxWriter workbook whose registered data rows are streamed in on close()."""

    def __init__(self, path, options: Mapping[str, Any] | None = None):
        self._target = path
        self._streams: dict[str, SheetRows] = {}
        super().__init__(io.BytesIO(), dict(options or {}))

    def stream_rows(self, ws, rows: SheetRows) -> None:
        """Write `rows` below whatever XlsxWriter writes on `ws` (its header rows)."""
        assert ws.name not in self._streams, ws.name
        for fmt in (f for col in rows.columns for f in (col.fmt, col.own_fmt, col.frozen_fmt)):
            if fmt is not None:
                # A format gets its style index when XlsxWriter writes a cell with it; these cells
                # bypass XlsxWriter, so ask for the index now (it also puts the style in styles.xml).
                fmt._get_xf_index()
        self._streams[ws.name] = rows

    def close(self) -> None:
        if self.fileclosed:
            return super().close()  # XlsxWriter warns about the second call
        super().close()
        package = self.filename.getvalue()
        self.filename = None  # free the buffer while the target is written
        splice(package, self._target, self._streams)


# ---------------------------------------------------------------------------------------------
# Shared formulas

_STRING_LITERAL = re.compile(r'"(?:[^"]|"")*"')
# A cell reference: optional $, column letters, optional $, row digits or the ROW placeholder. Not
# part of a longer name (defined names, sheet names, function names such as LOG10( ).
_CELL_REF = re.compile(r"(?<![\w.$])(\$?)([A-Z]{1,3})(\$?)(\d+|\x00)(?![\w(])")
_ROW_RANGE = re.compile(r"(?<![\w$.])\$?\d+:\$?\d+")  # 3:3, whole rows


def shareable(template: str) -> bool:
    """True when copying the first row's formula down gives every row's formula: every ROW is the
    row of a relative reference, and every other reference's row is absolute ($)."""
    body = _STRING_LITERAL.sub('""', template)
    if _ROW_RANGE.search(body):
        return False
    relative = 0
    for _, _, dollar, row in _CELL_REF.findall(body):
        if row == ROW:
            if dollar:
                return False
            relative += 1
        elif not dollar:
            return False
    return relative == template.count(ROW)  # none inside a text literal either


# ---------------------------------------------------------------------------------------------
# Cell text

_NEEDS_ESCAPE = re.compile(r"[&<>\x00-\x08\x0b-\x1f\ufffe\uffff]|_x[0-9a-fA-F]{4}_")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")
_ESCAPED_LOOKALIKE = re.compile(r"(_x[0-9a-fA-F]{4}_)")


def xml_text(text: str) -> str:
    """Formula text as XML element content."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def cell_text(text: str) -> str:
    """A text value as XML, as XlsxWriter writes inline strings: control characters (which XML
    cannot hold) as _xHHHH_, and a literal _xHHHH_ protected from being read as one."""
    if _NEEDS_ESCAPE.search(text):
        text = _ESCAPED_LOOKALIKE.sub(r"_x005F\1", text)
        text = _CONTROL.sub(lambda m: f"_x{ord(m.group()):04X}_", text)
        text = xml_text(text.replace("\ufffe", "_xFFFE_").replace("\uffff", "_xFFFF_"))
    return text


def inline_text(text: str) -> str:
    """`<t>` and the text of an inline string cell; leading/trailing whitespace preserved."""
    text = cell_text(text)
    if text[:1].isspace() or text[-1:].isspace():
        return '<t xml:space="preserve">' + text
    return "<t>" + text


# ---------------------------------------------------------------------------------------------
# Rows

Piece = str | tuple[int, str]  # a row kind's literal XML (ROW: the row number), or a slot (value position, how)
_FORMAT = {"number": "%r", "flag": "%d", "inline": "%s", "plain": "%s", "own": "%s"}  # a slot in a mapping row
# What a cell's XML depends on, as codes: no value, a number (its text tells an int, a float and a
# flag apart), a text, and an empty text in a value column (no cell, as write_value leaves it).
_NONE, _NUMBER, _STR, _BLANK = range(4)
_CODE_OF = {type(None): _NONE, bool: _NUMBER, int: _NUMBER, float: _NUMBER, str: _STR}
_CODE_TYPES = (type(None), int, str, str)  # a code's type in the template (_BLANK: a blank column)


@dataclass(frozen=True)
class CellColumns:
    """Rows start … start + size − 1 of a ColumnRun, every column a constant or one of vector.py's
    columns (Nums, Text, Objs): of every row (`rows`), or of every combination of the run's outer
    inputs (`combinations`, gathered by each row's `combination`). A column in neither is blank.
    `objects`: rows given as mappings instead (by row within the chunk), written as such."""
    start: int
    size: int
    rows: Mapping[str, Any]
    combinations: Mapping[str, Any]
    combination: np.ndarray | None
    num_combinations: int
    objects: Mapping[int, Mapping[str, Any]]


class ColumnRun(abc.ABC):
    """Consecutive rows of a sheet given as columns, chunk by chunk (SheetRows.rows may hold these
    among runs of mappings: a sequence with `parts`)."""

    @abc.abstractmethod
    def __len__(self) -> int: ...

    @abc.abstractmethod
    def chunks(self) -> Iterator[CellColumns]: ...


def _style(fmt: Format | None) -> str:
    return f' s="{fmt._get_xf_index()}"' if fmt is not None else ""


class RowWriter:
    """Builds the `<row>` elements of one SheetRows."""

    def __init__(self, sheet: SheetRows):
        self.sheet = sheet
        self.names = [c.name for c in sheet.columns]
        self.letters = [xl_col_to_name(i) for i in range(len(sheet.columns))]
        self.styles = [_style(c.fmt) for c in sheet.columns]
        self.own_styles = [_style(c.own_fmt or c.fmt) for c in sheet.columns]
        self.frozen_styles = [_style(c.frozen_fmt or c.fmt) for c in sheet.columns]
        live = np.arange(len(sheet.rows)) if sheet.frozen is None else np.flatnonzero(~sheet.frozen)
        # a shared formula's range: the first live row (which carries its text) to the last
        self.first_live = int(live[0]) if len(live) else -1
        self.first_live_row = sheet.first_row + self.first_live
        self.last_row = sheet.first_row + (int(live[-1]) if len(live) else -1)
        overridden = {n for own in (sheet.per_row or {}).values() for n in own}
        self.shared: dict[int, int] = {}  # column -> si
        for c, col in enumerate(sheet.columns):
            if sheet.shared_formulas and col.template and col.name not in overridden and shareable(col.template):
                self.shared[c] = len(self.shared)
        self.value_columns = [c for c, col in enumerate(sheet.columns) if not col.is_formula]
        self.kinds: dict[tuple, tuple[bytes, tuple[int, ...], tuple[int, ...], Any]] = {}
        self.values = itemgetter(*self.names) if len(self.names) > 1 else (lambda row: (row[self.names[0]],))
        self.memo: dict[str, dict[str, bytes]] = {"inline": {}, "plain": {}}  # text -> escaped

    def rows(self) -> Iterator[bytes]:
        """The rows' XML (UTF-8), ROWS_PER_CHUNK rows at a time. Built as bytes: texts are escaped
        and encoded once each (they repeat), and the big chunks need no encoding."""
        start = 0
        for run in getattr(self.sheet.rows, "parts", (self.sheet.rows,)):
            if isinstance(run, ColumnRun):
                yield from self._column_rows(run, start)
            else:
                for i in range(0, len(run), ROWS_PER_CHUNK):
                    yield b"".join([self._line(row, start + i + k)
                                    for k, row in enumerate(run[i:i + ROWS_PER_CHUNK])])
            start += len(run)

    def _line(self, row: Mapping[str, Any], i: int) -> bytes:
        """Row i (0-based in the table) from its mapping, by the template of its kind."""
        try:
            vals = list(self.values(row))
        except KeyError:  # a row without some columns leaves them blank
            vals = [row.get(n) for n in self.names]
        own = self.sheet.per_row.get(i, {}) if self.sheet.per_row else {}
        frozen = self.sheet.frozen is not None and bool(self.sheet.frozen[i])
        key = (tuple(map(type, vals)), tuple([c for c in self.value_columns if vals[c] == ""]), tuple(own),
               i == self.first_live, frozen)
        kind = self.kinds.get(key)
        if kind is None:
            kind = self.kinds[key] = self._kind(*key)
        template, inline, plain, pick = kind
        for c in inline:
            vals[c] = self._text(vals[c], "inline")
        for c in plain:
            vals[c] = self._text(vals[c], "plain")
        if own and not frozen:
            vals.extend(xml_text(f[1:] if f.startswith("=") else f).encode() for f in own.values())
        return template.replace(ROW_BYTES, b"%d" % (self.sheet.first_row + i)) % pick(vals)

    def _text(self, text: str, how: str) -> bytes:
        """A text value escaped: an inline string (value columns) or a formula's text value."""
        memo = self.memo[how]
        hit = memo.get(text)
        if hit is None:
            if len(memo) >= MEMO_SIZE:
                memo.clear()  # unique texts (scenario names) would otherwise pile up
            hit = memo[text] = (inline_text(text) if how == "inline" else cell_text(text)).encode()
        return hit

    def _kind(self, types: tuple[type, ...], blank: tuple[int, ...], own: tuple[str, ...], first: bool,
              frozen: bool):
        """How to write a mapping row of this kind: a `%` template (ROW for the row number), the
        columns holding an inline string, those holding a formula's text value, and a function that
        picks the template's arguments from the row's values followed by its own formulas."""
        pieces = self._cells(types, blank, own, first, frozen)
        slots = [p for p in pieces if not isinstance(p, str)]
        template = "".join(p.replace("%", "%%") if isinstance(p, str) else _FORMAT[p[1]] for p in pieces)
        return (template.encode(), tuple(c for c, how in slots if how == "inline"),
                tuple(c for c, how in slots if how == "plain"), _picker([c for c, _ in slots]))

    def _cells(self, types: tuple[type, ...], blank: tuple[int, ...], own: tuple[str, ...], first: bool,
               frozen: bool = False) -> list[Piece]:
        """A row of this kind (its values' types, its blank value columns, the columns holding its own
        formula, whether it is the table's first live row, whether it is written as values) as literal XML and
        slots: a slot's value is the column's (or, past the columns, the row's own formulas in order)."""
        if frozen:
            return self._value_cells(types, blank, own)
        pieces: list[Piece] = [f'<row r="{ROW}">']
        own_slot = {name: len(self.names) + k for k, name in enumerate(own)}
        for c, (col, t) in enumerate(zip(self.sheet.columns, types)):
            style = self.own_styles[c] if col.name in own and not col.is_formula else self.styles[c]
            cell = f'<c r="{self.letters[c]}{ROW}"{style}'
            if not col.is_formula and col.name not in own:
                if t is type(None) or c in blank:
                    continue  # a blank cell, as write_value leaves it
                if t is str:
                    pieces += [cell + ' t="inlineStr"><is>', (c, "inline"), "</t></is></c>"]  # inline_text opens <t>
                else:
                    pieces += [cell + "><v>", (c, _number_slot(col, t)), "</v></c>"]
                continue
            if col.name in own:
                formula = ["<f>", (own_slot[col.name], "own"), "</f>"]
            elif col.template is None:
                continue  # no formula in this row (an RLHF group without this term)
            elif c in self.shared and first:
                ref = f"{self.letters[c]}{self.first_live_row}:{self.letters[c]}{self.last_row}"
                formula = [f'<f t="shared" ref="{ref}" si="{self.shared[c]}">' + _literal(col.template) + "</f>"]
            elif c in self.shared:
                formula = [f'<f t="shared" si="{self.shared[c]}"/>']
            else:
                formula = ["<f>" + _literal(col.template) + "</f>"]
            # The cached value, typed as XlsxWriter types write_formula's value: text as t="str",
            # bools as numbers (the formulas' flags are 1/0), none as 0.
            if t is type(None):
                pieces += [cell + ">", *formula, "<v>0</v></c>"]
            elif t is str:
                pieces += [cell + ' t="str">', *formula, "<v>", (c, "plain"), "</v></c>"]
            else:
                pieces += [cell + ">", *formula, "<v>", (c, _number_slot(col, t)), "</v></c>"]
        pieces.append("</row>")
        return pieces

    def _value_cells(self, types: tuple[type, ...], blank: tuple[int, ...], own: tuple[str, ...]) -> list[Piece]:
        """A row past the live rows: every cell that a live row fills, as its value (a formula's cached one), in
        its column's frozen style; text as inline strings."""
        pieces: list[Piece] = [f'<row r="{ROW}">']
        for c, (col, t) in enumerate(zip(self.sheet.columns, types)):
            if t is type(None) or c in blank or (col.is_formula and col.template is None and col.name not in own):
                continue
            cell = f'<c r="{self.letters[c]}{ROW}"{self.frozen_styles[c]}'
            if t is str:
                pieces += [cell + ' t="inlineStr"><is>', (c, "inline"), "</t></is></c>"]
            else:
                pieces += [cell + "><v>", (c, _number_slot(col, t)), "</v></c>"]
        pieces.append("</row>")
        return pieces

    # ---- rows given as columns ------------------------------------------------------------------
    def _column_rows(self, run: ColumnRun, start: int) -> Iterator[bytes]:
        for cols in run.chunks():
            lines = self._column_lines(cols, start + cols.start)
            for i in range(0, cols.size, ROWS_PER_CHUNK):
                yield b"".join(islice(lines, ROWS_PER_CHUNK))

    def _column_lines(self, cols: CellColumns, offset: int) -> Iterator[bytes]:
        """Each row's XML, the same as _line writes from the row's mapping, made as they are read:
        rows are grouped by kind (their values' types), and each kind's template is filled from
        columns of texts, a value's text made once per distinct value; runs of cells that only
        depend on the row's combination are made once per combination."""
        n = cols.size
        sources = [self._source(cols, name) for name in self.names]
        codes = [self._type_codes(src, c, cols) for c, src in enumerate(sources)]
        varying = [k for k in codes if isinstance(k, np.ndarray)]
        kind_of = (np.unique(np.stack(varying, axis=1), axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)
                   if varying else np.zeros(n, dtype=np.int64))
        if offset <= self.first_live < offset + n:  # the table's first live row defines the shared formulas
            kind_of = kind_of + 1
            kind_of[self.first_live - offset] = 0
        frozen_rows = None if self.sheet.frozen is None else self.sheet.frozen[offset:offset + n]
        if frozen_rows is not None and frozen_rows.any():  # rows written as values are kinds of their own
            kind_of = 2 * kind_of + frozen_rows
        texts: dict[Any, list[bytes]] = {}  # a column's texts, by rows or combinations

        def column_texts(c: int, where: str, frozen: bool) -> list[bytes]:
            as_formula = self.sheet.columns[c].is_formula and not frozen  # a value row's texts are inline strings
            if (c, where, as_formula) not in texts:
                _, column = sources[c]
                count = n if where == "rows" else cols.num_combinations
                texts[(c, where, as_formula)] = self._texts(column, count, as_formula)
            return texts[(c, where, as_formula)]

        kinds = {}  # kind -> its rows' XML, in order
        for k in np.unique(kind_of).tolist():
            rows = np.flatnonzero(kind_of == k)
            r = int(rows[0])
            at = [int(x if type(x) is int else x[r]) for x in codes]
            types = tuple(_CODE_TYPES[x] for x in at)
            blank = tuple(c for c, x in enumerate(at) if x == _BLANK)
            frozen = frozen_rows is not None and bool(frozen_rows[r])
            template, fillers = self._compile(self._cells(types, blank, (), offset + r == self.first_live, frozen),
                                              sources, frozen)
            pick = rows.tolist()
            filled = []
            for f in fillers:
                if f[0] == "rows":
                    values = column_texts(f[1], "rows", frozen)
                    values = values if len(rows) == n else [values[i] for i in pick]
                else:  # a run of cells made per combination
                    texts_of = [column_texts(p[0], "combinations", frozen) if type(p) is tuple else repeat(p)
                                for p in f[1]]
                    run = list(map(b"".join, zip(*texts_of)))
                    values = list(map(run.__getitem__, cols.combination[rows].tolist()))
                filled.append(values)
            kinds[k] = _filled(template, [self.sheet.first_row + offset + i for i in pick], filled)
        if len(kinds) == 1 and not cols.objects:
            return next(iter(kinds.values()))

        def in_order() -> Iterator[bytes]:
            for i, k in enumerate(kind_of.tolist()):
                line = next(kinds[k])
                yield self._line(cols.objects[i], offset + i) if i in cols.objects else line
        return in_order()

    def _source(self, cols: CellColumns, name: str) -> tuple[str, Any]:
        """Where a column's values are: ("rows" or "combinations", its column), or ("const", a value)."""
        for where, columns in (("rows", cols.rows), ("combinations", cols.combinations)):
            if name in columns:
                return ("const", columns[name]) if is_const(columns[name]) else (where, columns[name])
        return "const", None

    def _type_codes(self, source: tuple[str, Any], c: int, cols: CellColumns) -> int | np.ndarray:
        """The code of column c's values (_NONE, _NUMBER, _STR, _BLANK): one code, or each row's."""
        where, column = source
        value_column = not self.sheet.columns[c].is_formula
        if where == "const":
            return self._type_code(c, column, value_column)
        if isinstance(column, Nums):
            return _NUMBER
        if isinstance(column, Text):
            words = np.array([self._type_code(c, w, value_column) for w in column.vocab], dtype=np.int8)
            codes = words[column.codes]
        else:
            codes = np.array([self._type_code(c, x, value_column) for x in column.v.tolist()], dtype=np.int8)
        if (codes == codes[0]).all():
            return int(codes[0])
        return codes[cols.combination] if where == "combinations" else codes

    def _type_code(self, c: int, value: Any, value_column: bool) -> int:
        if type(value) not in _CODE_OF:
            raise TypeError(f"column {self.names[c]}: cannot write a {type(value).__name__} value")
        return _BLANK if value_column and value == "" else _CODE_OF[type(value)]

    def _texts(self, column: Any, count: int, is_formula: bool) -> list[bytes]:
        """The text of each of a column's `count` values, as _line writes it."""
        if isinstance(column, Nums) and type(column.t) is int:
            v = column.v
            if column.t == BOOL:
                return list(map(_FLAG_TEXT.__getitem__, (v != 0).tolist()))
            if column.t == INT:
                return distinct_texts(v, _INT_TEXT)
            return distinct_texts(v, _FLOAT_TEXT)
        if isinstance(column, Text):
            words = [self._value_text(w, is_formula) for w in column.vocab]
            return list(map(words.__getitem__, column.codes.tolist()))
        return [self._value_text(x, is_formula) for x in to_list(column, count)]

    def _value_text(self, value: Any, is_formula: bool) -> bytes:
        """A value's text in its slot: a number as %r (a flag as %d), a text escaped."""
        if type(value) is str:
            return self._text(value, "plain" if is_formula else "inline")
        return b"%d" % value if type(value) is bool else b"%r" % value

    def _compile(self, pieces: Sequence[Piece], sources: Sequence[tuple[str, Any]],
                 frozen: bool = False) -> tuple[bytes, list]:
        """A row kind's pieces as a `%` template (ROW for the row number) and its fillers: ("rows", c)
        (column c's text), or ("combinations", run) for a run of cells that depend on the row's
        combination alone (literal bytes and (c,) slots), made once per combination. Constant
        columns become literal text (a value row's as inline strings)."""
        template: list[bytes] = []
        fillers: list = []
        run: list = []  # the open run of cells made per combination

        def literal(text: bytes) -> None:
            if run:
                run.append(text)
            else:
                template.append(text.replace(b"%", b"%%"))

        def close_run() -> None:
            if run:
                template.append(b"%s")
                fillers.append(("combinations", tuple(run)))
                run.clear()

        for piece in pieces:
            if isinstance(piece, str):
                literal(piece.encode())
                continue
            c, _ = piece
            where, column = sources[c]
            if where == "const":
                literal(self._value_text(column, self.sheet.columns[c].is_formula and not frozen))
            elif where == "rows":
                close_run()
                template.append(b"%s")
                fillers.append(("rows", c))
            else:
                run.append((c,))
        close_run()
        return b"".join(template), fillers


def _filled(template: bytes, row_numbers: Sequence[int], columns: Sequence[Sequence[bytes]]) -> Iterator[bytes]:
    """The template filled from each row's texts (one per column), ROW replaced by its row number."""
    for number, args in zip(row_numbers, zip(*columns) if columns else repeat(())):
        yield (template % args).replace(ROW_BYTES, b"%d" % number)


def _literal(formula: str) -> str:
    """A template's formula as XML text (ROW stays for the row number)."""
    return xml_text(formula[1:] if formula.startswith("=") else formula)


def _number_slot(col: StreamColumn, t: type) -> str:
    if t is bool:
        return "flag"  # True -> 1
    if t is int or t is float:
        return "number"  # repr (bytes' %r is ascii(repr)): the shortest text that reads back as the same double
    raise TypeError(f"column {col.name}: cannot write a {t.__name__} value")


def _picker(slots: Sequence[int]):
    if not slots:
        return lambda vals: ()
    if len(slots) == 1:
        (only,) = slots
        return lambda vals: (vals[only],)
    return itemgetter(*slots)


# ---------------------------------------------------------------------------------------------
# The package

def sheet_parts(package: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name -> its part in the zip (xl/worksheets/sheetN.xml), from the workbook's relations."""
    workbook = package.read("xl/workbook.xml").decode("utf-8")
    rels = package.read("xl/_rels/workbook.xml.rels").decode("utf-8")
    targets = {}
    for rel in re.findall(r"<Relationship [^>]*>", rels):
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', rel))
        if attrs.get("Type") == SHEET_RELATIONSHIP:
            target = attrs["Target"]
            targets[attrs["Id"]] = target.lstrip("/") if target.startswith("/") else "xl/" + target
    out = {}
    for sheet in re.findall(r"<sheet [^>]*>", workbook):
        name = re.search(r' name="([^"]*)"', sheet).group(1)
        rid = re.search(r' r:id="([^"]*)"', sheet).group(1)
        out[_unescape(name)] = targets[rid]
    return out


def _unescape(text: str) -> str:
    return (text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'")
            .replace("&amp;", "&"))


def splice(package: bytes, target, streams: Mapping[str, SheetRows]) -> None:
    """Copy the zip `package` to `target`, writing each streamed sheet's rows into its part."""
    with zipfile.ZipFile(io.BytesIO(package)) as src, \
            zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        parts = sheet_parts(src)
        by_part = {parts[name]: rows for name, rows in streams.items()}
        for info in src.infolist():
            data = src.read(info)
            if info.filename in by_part:
                _write_sheet(dst, info.filename, data.decode("utf-8"), by_part[info.filename])
            else:
                out = zipfile.ZipInfo(info.filename, info.date_time)  # XlsxWriter's fixed date
                out.compress_type = zipfile.ZIP_DEFLATED
                out.external_attr = info.external_attr
                dst.writestr(out, data, compresslevel=6)


def _write_sheet(dst: zipfile.ZipFile, part: str, xml: str, sheet: SheetRows) -> None:
    head, tail = _open_sheet_data(xml)
    if sheet.rows:
        written = [int(r) for r in re.findall(r'<row r="(\d+)"', head)]
        assert not written or max(written) < sheet.first_row, f"{part}: streamed rows overlap written ones"
        head = _dimension(head, sheet)
    writer = RowWriter(sheet)
    # Zip64 (which Excel 2007 cannot read) only when the part may exceed 2 GiB. Opened by name,
    # the part gets zipfile's fixed date (1980-01-01).
    size_hint = len(head) + len(tail) + 120 * len(sheet.columns) * len(sheet.rows)
    with dst.open(part, "w", force_zip64=size_hint > 0.9 * zipfile.ZIP64_LIMIT) as f, _Background(f) as out:
        _deflate_with_isal(f)
        out.write(head.encode("utf-8"))
        for chunk in writer.rows():
            out.write(chunk)
        out.write(tail.encode("utf-8"))


def _deflate_with_isal(f) -> None:
    """Give a zip member opened for writing, before its first byte, ISA-L's raw deflate instead of
    zlib's. zipfile has no public way to choose the compressor; its writer keeps one in
    `_compressor` (CPython 3.8-3.13), and the member's header only says "deflated", whoever did it."""
    assert f._file_size == 0 and f._compressor is not None, "zipfile's writer changed: see _deflate_with_isal"
    f._compressor = isal_zlib.compressobj(DEFLATE_LEVEL, isal_zlib.DEFLATED, -isal_zlib.MAX_WBITS)


def _open_sheet_data(xml: str) -> tuple[str, str]:
    """The sheet XML up to the end of its rows (inside <sheetData>), and the rest."""
    head, sep, tail = xml.partition("</sheetData>")
    if sep:
        return head, sep + tail
    head, sep, tail = xml.partition("<sheetData/>")
    assert sep, "a worksheet without <sheetData>"
    return head + "<sheetData>", "</sheetData>" + tail


def _dimension(head: str, sheet: SheetRows) -> str:
    """<dimension ref="…"/> grown to cover the streamed rows (from column A)."""
    found = re.search(r'<dimension ref="([A-Z]+\d+)(?::([A-Z]+\d+))?"/>', head)
    assert found, "a worksheet without <dimension>"
    last = (sheet.first_row + len(sheet.rows) - 2, len(sheet.columns) - 1)  # 0-based (row, col)
    if "<row " in head:  # else XlsxWriter wrote "A1" for an empty sheet
        top, bottom = xl_cell_to_rowcol(found[1]), xl_cell_to_rowcol(found[2] or found[1])
        first, last = (top[0], 0), (max(bottom[0], last[0]), max(bottom[1], last[1]))
    else:
        first = (sheet.first_row - 1, 0)
    return head[:found.start()] + f'<dimension ref="{xl_rowcol_to_cell(*first)}:{xl_rowcol_to_cell(*last)}"/>' \
        + head[found.end():]


class _Background:
    """Writes to a zip member from a second thread, so that deflate (which releases the GIL) runs
    while the next rows are built. At most a few chunks wait in memory."""

    def __init__(self, f):
        self.f = f
        self.queue: queue.Queue = queue.Queue(maxsize=4)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def _run(self) -> None:
        while (data := self.queue.get()) is not None:
            if self.error is None:
                try:
                    self.f.write(data)
                except BaseException as exc:  # handed to the writing thread
                    self.error = exc

    def write(self, data: bytes) -> None:
        if self.error is not None:
            raise self.error
        self.queue.put(data)

    def __exit__(self, *exc) -> None:
        self.queue.put(None)
        self.thread.join()
        if self.error is not None and exc[0] is None:
            raise self.error
