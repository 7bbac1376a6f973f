"""Data rows written as raw SpreadsheetML and spliced into the package XlsxWriter saved.

Why: XlsxWriter costs ~30 µs per cell (a Python call chain, regexes and escaping per cell), and a
100,000-scenario sweep has 12 million cells on Scenarios. Here XlsxWriter still writes every sheet's
header rows, column widths, validations, filters, panes, print setup, charts and styles; the data
rows of a table are registered with `StreamingWorkbook.stream_rows` and written after XlsxWriter
has saved, straight into that sheet's `<sheetData>` while the zip is copied to the target.

How it stays fast:
- A formula column whose template is the same in every row except for the row number is one
  *shared formula* (ECMA-376 Part 1, §18.3.1.40): its first row carries the text and
  `t="shared" ref="X3:X100002" si="k"`; every later row only `<f t="shared" si="k"/>` and its cached
  value. `shareable` checks the template first; other formulas are written in full in every row.
- A row is one `%` format string, built once per row kind (which cells are text, numbers or
  blank, whether it is the first row, which own formulas it has) and filled with the row's values.
- Formulas keep their cached Python value (`<v>`), as XlsxWriter's `write_formula(..., value)`
  does, so viewers that do not recalculate still show numbers.
- Deflate runs in a second thread (zlib releases the GIL) while the next rows are built.
"""
from __future__ import annotations

import io
import queue
import re
import threading
import zipfile
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, Iterator, Mapping, Sequence

import xlsxwriter
from xlsxwriter.format import Format
from xlsxwriter.utility import xl_cell_to_rowcol, xl_col_to_name, xl_rowcol_to_cell

ROW = "\x00"  # a template's row number (the same placeholder as the formula templates')
ROW_BYTES = ROW.encode()
MEMO_SIZE = 10_000  # escaped texts kept for reuse
ROWS_PER_CHUNK = 500  # rows joined into one bytes object (~3.5 MB) for the compressor
COMPRESS_LEVEL = 3  # zlib; on a 100,000-row sheet ~20 % slower than 1 and a quarter smaller, 6 twice as slow
SHEET_RELATIONSHIP = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"


@dataclass(frozen=True)
class StreamColumn:
    name: str  # the key of each row mapping (and of `per_row`)
    fmt: Format | None
    is_formula: bool = False  # cells hold a formula: the row's own, else `template`; no formula: no cell
    template: str | None = None  # "=…" with ROW for the row number


@dataclass(frozen=True)
class SheetRows:
    """The data rows of one sheet: rows[i] is sheet row first_row + i (1-based, as in A1)."""
    columns: Sequence[StreamColumn]  # from column A
    first_row: int
    rows: Sequence[Mapping[str, Any]]
    per_row: Sequence[Mapping[str, str]] | None = None  # a row's own formulas ("=…"), by column name


class StreamingWorkbook(xlsxwriter.Workbook):
    """An XlsxWriter workbook whose registered data rows are streamed in on close()."""

    def __init__(self, path, options: Mapping[str, Any] | None = None):
        self._target = path
        self._streams: dict[str, SheetRows] = {}
        super().__init__(io.BytesIO(), dict(options or {}))

    def stream_rows(self, ws, rows: SheetRows) -> None:
        """Write `rows` below whatever XlsxWriter writes on `ws` (its header rows)."""
        assert ws.name not in self._streams, ws.name
        for col in rows.columns:
            if col.fmt is not None:
                # A format gets its style index when XlsxWriter writes a cell with it; these cells
                # bypass XlsxWriter, so ask for the index now (it also puts the style in styles.xml).
                col.fmt._get_xf_index()
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

class RowWriter:
    """Builds the `<row>` elements of one SheetRows."""

    def __init__(self, sheet: SheetRows):
        self.sheet = sheet
        self.names = [c.name for c in sheet.columns]
        self.letters = [xl_col_to_name(i) for i in range(len(sheet.columns))]
        self.styles = [f' s="{c.fmt._get_xf_index()}"' if c.fmt is not None else "" for c in sheet.columns]
        self.last_row = sheet.first_row + len(sheet.rows) - 1
        overridden = {n for own in sheet.per_row or () for n in own}
        self.shared: dict[int, int] = {}  # column -> si
        for c, col in enumerate(sheet.columns):
            if col.template and col.name not in overridden and shareable(col.template):
                self.shared[c] = len(self.shared)
        self.value_columns = [c for c, col in enumerate(sheet.columns) if not col.is_formula]
        self.kinds: dict[tuple, tuple[bytes, tuple[int, ...], tuple[int, ...], Any]] = {}

    def rows(self) -> Iterator[bytes]:
        """The rows' XML (UTF-8), ROWS_PER_CHUNK rows at a time. Built as bytes: texts are escaped
        and encoded once each (they repeat), and the big chunks need no encoding."""
        names, value_columns, kinds = self.names, self.value_columns, self.kinds
        first_row, per_row = self.sheet.first_row, self.sheet.per_row
        values = itemgetter(*names) if len(names) > 1 else (lambda row: (row[names[0]],))
        inline_memo: dict[str, bytes] = {}
        plain_memo: dict[str, bytes] = {}
        out: list[bytes] = []
        for i, row in enumerate(self.sheet.rows):
            try:
                vals = list(values(row))
            except KeyError:  # a row without some columns leaves them blank
                vals = [row.get(n) for n in names]
            own = per_row[i] if per_row else {}
            key = (tuple(map(type, vals)), tuple([c for c in value_columns if vals[c] == ""]), tuple(own), i == 0)
            kind = kinds.get(key)
            if kind is None:
                kind = kinds[key] = self._kind(*key)
            template, inline, plain, pick = kind
            for c in inline:
                text = vals[c]
                vals[c] = inline_memo.get(text) or _remember(inline_memo, text, inline_text(text).encode())
            for c in plain:
                text = vals[c]
                vals[c] = plain_memo.get(text) or _remember(plain_memo, text, cell_text(text).encode())
            if own:
                vals.extend(xml_text(f[1:] if f.startswith("=") else f).encode() for f in own.values())
            out.append(template.replace(ROW_BYTES, b"%d" % (first_row + i)) % pick(vals))
            if len(out) == ROWS_PER_CHUNK:
                yield b"".join(out)
                out.clear()
        if out:
            yield b"".join(out)

    def _kind(self, types: tuple[type, ...], blank: tuple[int, ...], own: tuple[str, ...], first: bool):
        """How to write a row of this kind: a `%` template (ROW for the row number), the columns
        holding an inline string, those holding a formula's text value, and a function that picks
        the template's arguments from the row's values followed by its own formulas."""
        parts = [f'<row r="{ROW}">']
        inline: list[int] = []
        plain: list[int] = []
        slots: list[int] = []
        own_slot = {name: len(self.names) + k for k, name in enumerate(own)}
        for c, (col, t) in enumerate(zip(self.sheet.columns, types)):
            cell = f'<c r="{self.letters[c]}{ROW}"{self.styles[c]}'
            if not col.is_formula:
                if t is type(None) or c in blank:
                    continue  # a blank cell, as write_value leaves it
                if t is str:
                    parts.append(cell + ' t="inlineStr"><is>%s</t></is></c>')  # inline_text opens <t>
                    inline.append(c)
                else:
                    parts.append(cell + "><v>" + _number_slot(col, t) + "</v></c>")
                slots.append(c)
                continue
            if col.name in own:
                formula = "<f>%s</f>"
                slots.append(own_slot[col.name])
            elif col.template is None:
                continue  # no formula in this row (an RLHF group without this term)
            elif c in self.shared and first:
                ref = f"{self.letters[c]}{self.sheet.first_row}:{self.letters[c]}{self.last_row}"
                formula = f'<f t="shared" ref="{ref}" si="{self.shared[c]}">' + _literal(col.template) + "</f>"
            elif c in self.shared:
                formula = f'<f t="shared" si="{self.shared[c]}"/>'
            else:
                formula = "<f>" + _literal(col.template) + "</f>"
            # The cached value, typed as XlsxWriter types write_formula's value: text as t="str",
            # bools as numbers (the formulas' flags are 1/0), none as 0.
            if t is type(None):
                parts.append(cell + ">" + formula + "<v>0</v></c>")
            elif t is str:
                parts.append(cell + ' t="str">' + formula + "<v>%s</v></c>")
                slots.append(c)
                plain.append(c)
            else:
                parts.append(cell + ">" + formula + "<v>" + _number_slot(col, t) + "</v></c>")
                slots.append(c)
        parts.append("</row>")
        return "".join(parts).encode(), tuple(inline), tuple(plain), _picker(slots)


def _remember(memo: dict[str, bytes], text: str, escaped: bytes) -> bytes:
    if len(memo) >= MEMO_SIZE:
        memo.clear()  # unique texts (scenario names) would otherwise pile up
    memo[text] = escaped
    return escaped


def _literal(formula: str) -> str:
    """A template's formula as XML text inside a `%` template (ROW stays for the row number)."""
    return xml_text(formula[1:] if formula.startswith("=") else formula).replace("%", "%%")


def _number_slot(col: StreamColumn, t: type) -> str:
    if t is bool:
        return "%d"  # True -> 1
    if t is int or t is float:
        return "%r"  # repr (bytes' %r is ascii(repr)): the shortest text that reads back as the same double
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
            zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=COMPRESS_LEVEL) as dst:
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
    # the part gets the ZipFile's compression level and zipfile's fixed date (1980-01-01).
    size_hint = len(head) + len(tail) + 120 * len(sheet.columns) * len(sheet.rows)
    with dst.open(part, "w", force_zip64=size_hint > 0.9 * zipfile.ZIP64_LIMIT) as f, _Background(f) as out:
        out.write(head.encode("utf-8"))
        for chunk in writer.rows():
            out.write(chunk)
        out.write(tail.encode("utf-8"))


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
