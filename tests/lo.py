"""Run a real LibreOffice (headless) from tests: recalculate a workbook, or
render it to PDF.

LibreOffice keeps the cached values stored in an .xlsx (it ignores
``fullCalcOnLoad``), so a plain ``soffice --convert-to xlsx`` proves nothing
about the formulas.  Every call here therefore runs soffice with a fresh,
throw-away user profile whose ``registrymodifications.xcu`` sets
``/org.openoffice.Office.Calc/Formula/Load/OOXMLRecalcMode`` to 0 ("always
recalculate").  A fresh profile per call also lets several soffice processes
run at once (pytest-xdist) without fighting over one profile lock.

System package: ``libreoffice-calc-nogui`` (see scripts/install-system-deps.sh).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree

__all__ = [
    "LibreOfficeError",
    "soffice_path",
    "soffice_available",
    "require_soffice",
    "recalculate",
    "recalculated_values",
    "to_pdf",
    "convert",
    "make_profile",
]

DEFAULT_TIMEOUT_S = 180

_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry"
           xmlns:xs="http://www.w3.org/2001/XMLSchema"
           xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
  <!-- 0 = always recalculate on load (1 = never, 2 = ask) -->
  <item oor:path="/org.openoffice.Office.Calc/Formula/Load">
    <prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop>
  </item>
  <item oor:path="/org.openoffice.Office.Calc/Formula/Load">
    <prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop>
  </item>
  <!-- LibreOffice 7.4's threaded formula-group calculation can read a same-row check cell before it
       is computed, after an edited assumption (a blank saved_per_token in NoteScenarios' first row;
       a second recalculation fixes it). Tests recalculate single-threaded, deterministically; the
       workbook's Guide tells planners to recalculate hard (Ctrl+Shift+F9) if they see it. -->
  <item oor:path="/org.openoffice.Office.Calc/Formula/Calculation">
    <prop oor:name="UseThreadedCalculationForFormulaGroups" oor:op="fuse"><value>false</value></prop>
  </item>
</oor:items>
"""


class LibreOfficeError(RuntimeError):
    """soffice is missing, failed, timed out, or produced no output file."""


def soffice_path() -> str | None:
    """Path of the soffice binary ($SOFFICE overrides), or None."""
    env = os.environ.get("SOFFICE")
    if env:
        return env if Path(env).exists() or shutil.which(env) else None
    for name in ("soffice", "libreoffice"):
        found = shutil.which(name)
        if found:
            return found
    for candidate in ("/usr/lib/libreoffice/program/soffice",
                      "/opt/libreoffice/program/soffice"):
        if Path(candidate).exists():
            return candidate
    return None


def soffice_available() -> bool:
    return soffice_path() is not None


def require_soffice() -> None:
    """Fail the calling test (never skip it) when soffice is missing: a silently skipped formula
    check proves nothing."""
    if not soffice_available():
        import pytest
        pytest.fail("LibreOffice (soffice) is not installed, so formulas cannot be verified. "
                    "Run scripts/install-system-deps.sh.", pytrace=False)


def _require_soffice() -> str:
    exe = soffice_path()
    if exe is None:
        raise LibreOfficeError(
            "LibreOffice (soffice) not found on PATH. Install it with "
            "scripts/install-system-deps.sh (Debian package "
            "libreoffice-calc-nogui), or set $SOFFICE to the binary."
        )
    return exe


def make_profile(root: Path, recalc: bool, threaded: bool = False) -> Path:
    """A throw-away soffice profile: recalculate on load or never; formula groups single-threaded
    (threaded: as LibreOffice's default, for timing what a planner sees)."""
    profile = root / "lo-profile"
    (profile / "user").mkdir(parents=True)
    xcu = _XCU if recalc else _XCU.replace("<value>0</value>", "<value>1</value>")  # 1 = never
    if threaded:
        xcu = xcu.replace("<value>false</value>", "<value>true</value>")
    (profile / "user" / "registrymodifications.xcu").write_text(xcu, encoding="utf-8")
    return profile


def convert(
    src: Path,
    out_dir: Path,
    target: str,
    *,
    out_suffix: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    recalc: bool = True,
) -> Path:
    """Run ``soffice --convert-to <target>`` on *src* into *out_dir*.

    *target* is a LibreOffice filter spec such as ``"xlsx"``, ``"pdf"`` or
    ``'csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,false,false,false,-1'``.
    Returns the path of the converted file.  Raises LibreOfficeError with
    soffice's stdout/stderr on any failure.  ``recalc=False`` keeps the
    cached values (LibreOffice's default), for timing the load alone.
    """
    exe = _require_soffice()
    src = Path(src).resolve()
    out_dir = Path(out_dir).resolve()
    if not src.is_file():
        raise LibreOfficeError(f"input workbook does not exist: {src}")
    out_dir.mkdir(parents=True, exist_ok=True)
    suffix = out_suffix or "." + target.split(":", 1)[0]
    expected = out_dir / (src.stem + suffix)
    if expected == src:
        raise LibreOfficeError(
            f"output would overwrite the input ({src}); choose another out_dir"
        )
    if expected.exists():
        expected.unlink()

    with tempfile.TemporaryDirectory(prefix="reportgen-lo-") as tmp:
        tmp_path = Path(tmp)
        profile = make_profile(tmp_path, recalc)
        cmd = [
            exe,
            "--headless",
            "--norestore",
            "--nologo",
            "--nodefault",
            "--nolockcheck",
            f"-env:UserInstallation={profile.as_uri()}",
            "--convert-to",
            target,
            "--outdir",
            str(out_dir),
            str(src),
        ]
        env = dict(os.environ)
        env["HOME"] = str(tmp_path)  # keep soffice away from the real $HOME
        env.pop("DISPLAY", None)
        try:
            proc = subprocess.run(
                cmd,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired as exc:
            raise LibreOfficeError(
                f"soffice timed out after {timeout:.0f} s converting {src.name} "
                f"to {target}\ncommand: {' '.join(cmd)}\n"
                f"stdout: {_text(exc.stdout)}\nstderr: {_text(exc.stderr)}"
            ) from exc

    if proc.returncode != 0 or not expected.is_file():
        raise LibreOfficeError(
            f"soffice failed converting {src.name} to {target} "
            f"(exit {proc.returncode}; expected {expected}, "
            f"{'exists' if expected.exists() else 'missing'})\n"
            f"command: {' '.join(cmd)}\n"
            f"stdout: {proc.stdout.strip()}\nstderr: {proc.stderr.strip()}"
        )
    return expected


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace").strip()
    return data.strip()


def recalculate(xlsx_path: Path, out_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> Path:
    """Open *xlsx_path* in LibreOffice, recalculate every formula, save as
    xlsx in *out_dir* (same file name) and return that path.

    Read the result with ``openpyxl.load_workbook(path, data_only=True)``, or call
    recalculated_values, which reads LibreOffice's values sooner. *out_dir* must differ from the
    input's directory.
    """
    return convert(Path(xlsx_path), Path(out_dir), "xlsx:Calc MS Excel 2007 XML",
                   out_suffix=".xlsx", timeout=timeout)


def to_pdf(xlsx_path: Path, out_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> Path:
    """Render *xlsx_path* (recalculated first) to PDF in *out_dir*; return it."""
    return convert(Path(xlsx_path), Path(out_dir), "pdf:calc_pdf_Export",
                   out_suffix=".pdf", timeout=timeout)


# Every sheet (-1) as UTF-8 CSV, text cells quoted (so a quoted "12" is text and an unquoted 12 a number),
# values not as shown (a number's digits, not its cell format's).
CSV_ALL_SHEETS = "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,true,true,false,false,false,-1"
_MAIN_NS = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"


def recalculated_values(xlsx_path: Path, out_dir: Path, *, timeout: float = DEFAULT_TIMEOUT_S) -> "ValueBook":
    """Open *xlsx_path* in LibreOffice, recalculate every formula and read back every sheet's values.

    What ``openpyxl.load_workbook(recalculate(...), data_only=True)`` reads, about 4 s sooner for the
    fixture's book: LibreOffice writes CSV in half the time it writes an xlsx, and CSV parses in a
    twentieth of openpyxl's time. The differences: a number keeps LibreOffice's 15 significant digits
    (as its xlsx does), or 20 decimals where its cell format shows a fixed-point number (1.3e-11 reads
    1.312820513e-11); an error reads as LibreOffice shows it (Err:502 where the xlsx says #VALUE!).
    """
    src = Path(xlsx_path)
    names = sheet_names(src)
    convert(src, out_dir, CSV_ALL_SHEETS, out_suffix=f"-{names[0]}.csv", timeout=timeout)
    return ValueBook([(name, _csv_values((Path(out_dir) / f"{src.stem}-{name}.csv").read_text(encoding="utf-8")))
                      for name in names])


def sheet_names(xlsx_path: Path) -> list[str]:
    """The workbook's sheet names, in order (its xl/workbook.xml)."""
    with zipfile.ZipFile(xlsx_path) as z:
        root = ElementTree.fromstring(z.read("xl/workbook.xml"))
    return [sheet.get("name") for sheet in root.iter(f"{_MAIN_NS}sheet")]


_FIELD = re.compile(r'"((?:[^"]|"")*)"|([^,\n"]*)')


def _csv_values(text: str) -> list[list]:
    """CSV_ALL_SHEETS' text as rows of values: quoted fields are text (empty text is None, as openpyxl
    reads LibreOffice's empty strings), TRUE and FALSE booleans, any other field a number (12.5% 0.125)."""
    rows, row, at = [], [], 0
    while at < len(text):
        field = _FIELD.match(text, at)
        quoted, bare = field.group(1), field.group(2)
        row.append(quoted.replace('""', '"') or None if quoted is not None else _bare(bare))
        at = field.end()
        if at < len(text) and text[at] == ",":
            at += 1
            continue
        rows.append(row)
        row = []
        at += 1  # the newline
    return rows


def _bare(token: str):
    if token == "":
        return None
    if token in ("TRUE", "FALSE"):
        return token == "TRUE"
    try:
        return int(token)
    except ValueError:
        pass
    try:
        # a percent-formatted cell keeps its % sign even when not written as shown
        return float(token[:-1]) / 100 if token.endswith("%") else float(token)
    except ValueError:
        return token  # an error LibreOffice writes unquoted


class ValueBook:
    """The values of a recalculated workbook with the part of openpyxl's read-only interface the tests
    use: ``book["Plan"]``, iteration over sheets, ``.sheetnames``, ``.worksheets``, ``.active``."""

    def __init__(self, sheets: list[tuple[str, list[list]]]):
        self.worksheets = [ValueSheet(name, rows) for name, rows in sheets]
        self.sheetnames = [ws.title for ws in self.worksheets]
        self._by_name = dict(zip(self.sheetnames, self.worksheets))

    def __getitem__(self, name: str) -> "ValueSheet":
        return self._by_name[name]

    def __iter__(self):
        return iter(self.worksheets)

    @property
    def active(self) -> "ValueSheet":
        return self.worksheets[0]


class ValueCell:
    __slots__ = ("value", "row", "column")

    def __init__(self, value, row: int, column: int):
        self.value, self.row, self.column = value, row, column

    @property
    def coordinate(self) -> str:
        return f"{_letters(self.column)}{self.row}"


class ValueSheet:
    """One sheet's values, 1-based as openpyxl's: ``cell(row, column)``, ``ws["B7"]``, ``ws["B"]`` (a
    column's cells), ``ws[7]`` (a row's), ``iter_rows(...)``, ``max_row``, ``max_column``."""

    def __init__(self, title: str, rows: list[list]):
        self.title = title
        self.max_row = len(rows)
        self.max_column = max((len(r) for r in rows), default=0)
        self._rows = rows

    def cell(self, row: int, column: int) -> ValueCell:
        values = self._rows[row - 1] if 1 <= row <= self.max_row else ()
        return ValueCell(values[column - 1] if 1 <= column <= len(values) else None, row, column)

    def __getitem__(self, key):
        if isinstance(key, int):
            return tuple(self.cell(key, c) for c in range(1, self.max_column + 1))
        letters, digits = re.fullmatch(r"([A-Z]+)(\d*)", key).groups()
        column = _column(letters)
        if digits:
            return self.cell(int(digits), column)
        return tuple(self.cell(r, column) for r in range(1, self.max_row + 1))

    def iter_rows(self, min_row: int = 1, max_row: int | None = None, min_col: int = 1,
                  max_col: int | None = None, values_only: bool = False):
        for r in range(min_row, (max_row or self.max_row) + 1):
            cells = [self.cell(r, c) for c in range(min_col, (max_col or self.max_column) + 1)]
            yield tuple(c.value for c in cells) if values_only else tuple(cells)


def _letters(column: int) -> str:
    letters = ""
    while column:
        column, rest = divmod(column - 1, 26)
        letters = chr(65 + rest) + letters
    return letters


def _column(letters: str) -> int:
    number = 0
    for ch in letters:
        number = number * 26 + ord(ch) - 64
    return number
