"""A sweep block's rows of the Scenarios table computed as columns, as json_columns.py renders its
JSON lines: no Result and no dict per row.

The terms and the table's summary and helper columns (label, check, requirement, plan keys: book.py)
are one term table, evaluated by vector.py over the block's input columns and the rows' ids, chunk by
chunk; the stream writes the rows from those columns (stream.CellColumns). Columns that do not read
batch or lengths (nor the row's place) are computed once per combination of the other inputs, and
the stream writes their cells once per combination. The rows the scalar path computed are written
from their values, as the object path writes every row. A row becomes a dict only where a sheet reads
it (the Plan's picks).
"""
from __future__ import annotations

import abc
import bisect
from dataclasses import replace
from typing import Any, Callable, Iterator, Mapping, Sequence

from ...model.arrays import np
from ...model.estimate import SWEEP_ROW_INPUTS, needed_terms
from ...model.formulas import compile_terms
from ...report.build import BlockResults
from ...scenarios.sweep import SMALL_BATCH_ROWS, SMALL_BLOCK_ROWS, Parts, joined_columns
from ...model.terms import Term
from ...model.vector import Chunk, VectorTerms, column_of, take, to_list
from .stream import CellColumns, ColumnRun

Ids = Callable[[BlockResults, np.ndarray, np.ndarray], Mapping[str, Any]]


class TableColumns:
    """A table's values as one term table over input columns: its terms (in table order, each
    reading inputs, ids and earlier terms; var: how the scalar path reads a name that is no term),
    for the rows of sweep blocks. ids(part, rows, places): the id columns of a block's rows `rows`
    at the table's places `places` (0-based); those named in per_row differ by row."""

    def __init__(self, terms: Sequence[Term], var: Callable[[str], str], ids: Ids, per_row: Sequence[str],
                 assumptions: Mapping[str, Any], tables: Mapping):
        self.terms, self.var, self.ids = tuple(terms), var, ids
        self.row_inputs = SWEEP_ROW_INPUTS + tuple(per_row)
        self.assumptions, self.tables = assumptions, tables
        self.vectors: dict[tuple[str, ...] | None, VectorTerms] = {None: self._vector(self.terms)}
        self._last: tuple[tuple, Chunk, dict[str, Any]] | None = None  # evaluate_runs' last runs

    def _vector(self, terms: Sequence[Term]) -> VectorTerms:
        return VectorTerms(terms, self.row_inputs, compile_terms(terms, self.var, "_row"))

    def evaluate(self, part: BlockResults, rows: np.ndarray, places: np.ndarray,
                 names: Sequence[str] | None = None) -> Iterator[tuple[Chunk, dict[str, Any]]]:
        """(chunk of terms, input and id columns) of the block's rows `rows` (in this order) at the
        table's places `places`; with `names`, only those terms and what they read."""
        key = None if names is None else tuple(names)
        if key not in self.vectors:
            self.vectors[key] = self._vector(needed_terms(self.terms, key))
        block = replace(part.block, rows=part.block.rows[rows])  # the rows in sheet order
        columns = {**part.estimator.input_columns(block.columns()),
                   **{n: column_of(v) for n, v in self.ids(part, rows, places).items()}}
        for chunk in self.vectors[key].chunks(columns, len(rows), self.assumptions, self.tables):
            yield chunk, columns

    def evaluate_runs(self, runs: tuple["BlockRows", ...]) -> tuple[Chunk, dict[str, Any]]:
        """evaluate() of every row of these runs as one chunk (from row 0) and its columns: small runs
        computed together, as a call costs about as much as a thousand rows. The last runs' are kept (the
        Plan reads a few rows of each; the stream then writes them all, in order)."""
        last = self._last  # (read once: writers in threads may move it on)
        if last is None or last[0] is not runs:
            ids: dict[str, list] = {}
            for run in runs:
                for n, c in self.ids(run.part, run.rows, run.place + np.arange(len(run))).items():
                    ids.setdefault(n, []).extend(to_list(column_of(c), len(run)))
            inputs, size = joined_columns([replace(run.part.block, rows=run.part.block.rows[run.rows]) for run in runs])
            joined = {**runs[0].part.estimator.input_columns(inputs), **{n: column_of(v) for n, v in ids.items()}}
            (chunk,) = self.vectors[None].chunks(joined, size, self.assumptions, self.tables)
            last = self._last = (runs, chunk, joined)
        return last[1], last[2]


class ColumnRows(ColumnRun, Sequence):
    """Consecutive rows of a table computed as columns; _evaluate(positions, names) gives (chunk of
    terms, input and id columns) of its rows at these positions (with names: at least those terms)."""
    columns: Callable[[], TableColumns]  # the table's TableColumns (laid out after its rows)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.dicts(range(*i.indices(len(self))))
        return self.dicts([i])[0]

    @abc.abstractmethod
    def _evaluate(self, positions: np.ndarray, names: Sequence[str] | None = None
                  ) -> Iterator[tuple[Chunk, dict[str, Any]]]: ...

    def chunks(self) -> Iterator[CellColumns]:
        row_inputs = self.columns().row_inputs
        for chunk, columns in self._evaluate(np.arange(len(self))):
            rows = slice(chunk.start, chunk.start + chunk.size)
            objects = {row: {**_row_inputs(columns, chunk.start + row), **dict(zip(chunk.names, values))}
                       for row, values in chunk.overrides.items()}
            if chunk.outer is None:
                yield CellColumns(chunk.start, chunk.size, {**{n: take(c, rows) for n, c in columns.items()},
                                                            **chunk.values}, {}, None, 0, objects)
                continue
            per_row = {n: take(c, rows) for n, c in columns.items() if n in row_inputs}
            per_combination = {n: take(c, chunk.outer_rows) for n, c in columns.items() if n not in row_inputs}
            yield CellColumns(chunk.start, chunk.size, {**per_row, **chunk.values},
                              {**per_combination, **chunk.outer}, chunk.index, len(chunk.outer_rows), objects)

    def dicts(self, positions: Sequence[int]) -> list[dict[str, Any]]:
        """Rows at these positions (in this run) as dicts: every id, input, term and column."""
        out = []
        for chunk, columns in self._evaluate(np.asarray(positions, dtype=np.int64)):
            rows = slice(chunk.start, chunk.start + chunk.size)
            values = {**{n: to_list(take(c, rows), chunk.size) for n, c in columns.items()},
                      **{n: chunk.tolist(n) for n in chunk.names}}
            out += [dict(zip(values, row)) for row in zip(*values.values())]
        return out

    def column(self, name: str) -> list:
        """One column's value in every row, in order."""
        out = []
        for chunk, _ in self._evaluate(np.arange(len(self)), [name]):
            out += chunk.tolist(name)
        return out


class BlockRows(ColumnRows):
    """Consecutive rows of a table from one sweep block: its rows `rows` (in sheet order) from the
    table's place `place` (0-based)."""

    def __init__(self, part: BlockResults, rows: np.ndarray, place: int, columns: Callable[[], TableColumns]):
        self.part, self.rows, self.place, self.columns = part, rows, place, columns

    def __len__(self) -> int:
        return len(self.rows)

    def _evaluate(self, positions: np.ndarray, names: Sequence[str] | None = None):
        return self.columns().evaluate(self.part, self.rows[positions], self.place + positions, names)


class SmallRuns(ColumnRows):
    """Consecutive runs of small blocks' rows (BlockRows under SMALL_BLOCK_ROWS rows each, up to
    SMALL_BATCH_ROWS in all) computed together: one run of the table."""

    def __init__(self, runs: tuple[BlockRows, ...], columns: Callable[[], TableColumns]):
        self.runs, self.columns = runs, columns
        self.size = sum(map(len, runs))

    def __len__(self) -> int:
        return self.size

    def _evaluate(self, positions: np.ndarray, names: Sequence[str] | None = None):
        chunk, columns = self.columns().evaluate_runs(self.runs)
        return iter(((chunk.take(positions), {n: take(c, positions) for n, c in columns.items()}),))


def joined_small_runs(runs: Sequence, columns: Callable[[], TableColumns]) -> list:
    """The runs with each stretch of consecutive small BlockRows (under SMALL_BLOCK_ROWS rows, up to
    SMALL_BATCH_ROWS in all) as one SmallRuns."""
    out: list = []
    pending: list[BlockRows] = []
    pending_rows = 0

    def flush() -> None:
        out.extend([SmallRuns(tuple(pending), columns)] if len(pending) > 1 else pending)
        pending.clear()

    for run in runs:
        small = isinstance(run, BlockRows) and len(run) < SMALL_BLOCK_ROWS
        if not small or pending_rows + len(run) > SMALL_BATCH_ROWS:
            flush()
            pending_rows = 0
        (pending if small else out).append(run)
        pending_rows += len(run) if small else 0
    flush()
    return out


def _row_inputs(columns: Mapping[str, Any], row: int) -> dict[str, Any]:
    """The input and id values of one row, as Python values."""
    return {n: to_list(take(c, slice(row, row + 1)), 1)[0] for n, c in columns.items()}


class TableRows(Parts):
    """A table's rows in sheet order, held as runs: lists of row dicts, and ColumnRows."""

    def objects(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(place in the table, 1 = the first row; the row) of each row held as a dict."""
        place = 1
        for run in self.parts:
            if not isinstance(run, ColumnRows):
                yield from enumerate(run, start=place)
            place += len(run)

    def rows_at(self, places: Sequence[int]) -> list[dict[str, Any]]:
        """The rows at these places (0-based), each run's read together."""
        by_run: dict[int, list[int]] = {}
        for place in places:
            by_run.setdefault(bisect.bisect_right(self._starts, place) - 1, []).append(place)
        found = {}
        for n, wanted in by_run.items():
            run, start = self.parts[n], self._starts[n]
            made = run.dicts([p - start for p in wanted]) if isinstance(run, ColumnRows) else [run[p - start] for p in wanted]
            found.update(zip(wanted, made))
        return [found[p] for p in places]

    def column(self, name: str) -> list:
        """One column's value in every row, in order."""
        return [v for run in self.parts for v in (run.column(name) if isinstance(run, ColumnRows)
                                                   else (row[name] for row in run))]
