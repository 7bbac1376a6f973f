"""A matrix entry's scenarios as columns: its axes and the combinations kept, not one Python object
per scenario.

expand() makes a SweepBlock of each single-workload entry of a matrix (a serving goal's batch and
prompt, set per layout, and `tp_size: num_gpus` are axes whose kept combination is each row's) and of
each run of explicit scenarios of one workload (SweepBlock.listing); RLHF groups stay objects. The
estimator computes a block's terms from its input columns chunk by chunk (small blocks together), the
plan aggregates them as arrays and the JSON writer renders its lines from them; a row becomes a
Scenario only where a writer asks for that row.

A block's row k is the combination rows[k] of the Cartesian product of its axes (the last axis
varies fastest, as itertools.product), so the inputs of any row are arithmetic on its number.
"""
from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..model.arrays import np
from ..model.estimate import scenario_columns
from ..model.inputs import INPUT_NAMES, WORKLOAD_DEFAULTS, Scenario
from ..model.vector import as_numbers, column_of, take


@dataclass(frozen=True, eq=False)
class SweepBlock:
    """The kept combinations of one matrix entry: a single workload, every axis value checked. Explicit
    scenarios are held so too (listing): every input an axis, and the scenarios' names (axis "name", no
    input: what the writers label a row by)."""
    matrix: str
    workload: str
    names: tuple[str, ...]  # the axes, in product order
    values: tuple[tuple, ...]  # each axis's checked values
    rows: np.ndarray  # the kept combinations' numbers in the product, in the loop's order (int64)

    @classmethod
    def listing(cls, matrix: str, scenarios: Sequence[Scenario]) -> list["SweepBlock"]:
        """Scenarios of one workload (checked, in order) as blocks: each input's values and the names are
        axes, each scenario the combination of its own (those alike stay two rows). One block, unless
        the product of the axes would not be numbered in 62 bits: then the halves' blocks."""
        names = INPUT_NAMES + ("name",)
        codes = []
        for name in names:
            seen: dict = {}
            codes.append((seen, [seen.setdefault((type(v), v), len(seen)) for v in map(attrgetter(name), scenarios)]))
        if math.prod(len(seen) for seen, _ in codes) >= 2**62:
            half = len(scenarios) // 2
            return cls.listing(matrix, scenarios[:half]) + cls.listing(matrix, scenarios[half:])
        rows = np.zeros(len(scenarios), dtype=np.int64)
        for seen, code in codes:
            rows = rows * len(seen) + np.asarray(code, dtype=np.int64)
        return [cls(matrix, scenarios[0].workload, names, tuple(tuple(v for _, v in seen) for seen, _ in codes), rows)]

    @property
    def size(self) -> int:
        return len(self.rows)

    def codes(self, axis: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Which value of axis `axis` each row (default: every row) takes."""
        return value_codes(self.rows if rows is None else rows, [len(v) for v in self.values], axis)

    def inputs_at(self, k: int) -> dict[str, Any]:
        """Row k's inputs as check_inputs returns them: the workload's defaults under the axes' values."""
        flat = int(self.rows[k])
        values = {}
        for name, vals in zip(reversed(self.names), reversed(self.values)):
            flat, i = divmod(flat, len(vals))
            values[name] = vals[i]
        return {**WORKLOAD_DEFAULTS.get(self.workload, {}), **{n: values[n] for n in self.names}}

    def scenario(self, k: int) -> Scenario:
        return Scenario(**{"workload": self.workload, "name": "", **self.inputs_at(k)})

    def scenarios(self, start: int, stop: int) -> list[Scenario]:
        """Rows start … stop − 1 as Scenarios (axes with one value are passed once, not per row)."""
        fixed = {"workload": self.workload, "name": "", **WORKLOAD_DEFAULTS.get(self.workload, {})}
        varying = []
        rows = self.rows[start:stop]
        for j, (name, vals) in enumerate(zip(self.names, self.values)):
            if len(vals) == 1:
                fixed[name] = vals[0]
            else:
                fixed.pop(name, None)  # an axis overrides the workload's default
                varying.append((name, [vals[c] for c in self.codes(j, rows).tolist()]))
        names = [n for n, _ in varying]
        return [Scenario(**fixed, **dict(zip(names, combo))) for combo in zip(*(v for _, v in varying))] if varying \
            else [Scenario(**fixed)] * (stop - start)

    def columns(self) -> dict[str, Any]:
        """Every row's inputs as the estimator's input columns (an input not given: its default)."""
        out: dict[str, Any] = {"workload": self.workload, **WORKLOAD_DEFAULTS.get(self.workload, {})}
        for j, (name, vals) in enumerate(zip(self.names, self.values)):
            lut = column_of(list(vals))
            out[name] = lut if len(vals) == 1 else take(lut, self.codes(j))
        return out

    def numbers(self, name: str) -> np.ndarray:
        """A number input of every row (an axis, or the value every row has)."""
        if name not in self.names:
            return as_numbers(getattr(self.scenario(0), name), self.size)
        j = self.names.index(name)
        return as_numbers(take(column_of(list(self.values[j])), self.codes(j)), self.size)

    def texts(self, name: str, rows: np.ndarray) -> Any:
        """A text input's (or the names') values in rows `rows` of the block, as an input column: the one
        value every row has, or a list."""
        if name not in self.names:
            return getattr(self.scenario(0), name)
        j = self.names.index(name)
        vals = self.values[j]
        return vals[0] if len(vals) == 1 else [vals[c] for c in self.codes(j, self.rows[rows]).tolist()]

    def gpu_names(self) -> set[str]:
        key, _ = self.axis_codes(("gpu",))
        _, first = np.unique(key, return_index=True)
        return {self.scenario(int(k)).gpu for k in first.tolist()}

    def without(self, mask: np.ndarray) -> "SweepBlock":
        """The block without the rows `mask` marks."""
        return SweepBlock(self.matrix, self.workload, self.names, self.values, self.rows[~mask])

    def axis_codes(self, names: Sequence[str]) -> tuple[np.ndarray, int]:
        """One number per row for the combination of these axes' values (equal values, equal numbers:
        an axis may repeat a value), and how many numbers there can be."""
        key = np.zeros(self.size, dtype=np.int64)
        radix = 1
        for j, (name, vals) in enumerate(zip(self.names, self.values)):
            if name not in names or len(vals) == 1:
                continue
            first = {}
            same = np.array([first.setdefault((type(v), v), i) for i, v in enumerate(vals)], dtype=np.int64)
            key = key * len(vals) + same[self.codes(j)]
            radix *= len(vals)
        return key, radix


def product_size(axes: Mapping[str, Sequence]) -> int:
    return math.prod(len(v) for v in axes.values())


def value_codes(combinations: np.ndarray, sizes: Sequence[int], axis: int) -> np.ndarray:
    """Which value of axis `axis` (of axes with `sizes` values, the last varying fastest) each
    combination number takes."""
    return combinations // math.prod(sizes[axis + 1:]) % sizes[axis]


def excluded_rows(axes: Mapping[str, Sequence], workload: str, excludes: Sequence[Mapping[str, Any]],
                  removed: list[int]) -> np.ndarray:
    """Which combinations of the product an exclude rule removes (raw preset values compared, as the
    rules are written); removed[j] counts rule j's hits. Rules that name the same axes are applied
    together, so the cost grows with the number of rules, not with rules × combinations."""
    size = product_size(axes)
    names, sizes = list(axes), [len(v) for v in axes.values()]
    out = np.zeros(size, dtype=bool)
    if not excludes:
        return out
    groups: dict[tuple[int, ...], list[int]] = {}  # the axes some rules name -> the combinations of them they hit
    position = {name: a for a, name in enumerate(names)}
    codes = [_codes_by_value(values) for values in axes.values()]
    for j, rule in enumerate(excludes):
        if any(k not in axes and not (k == "workload" and want == workload) for k, want in rule.items()):
            continue  # it names a value this entry does not have
        named = sorted(position[k] for k in rule if k in axes)
        matches = [codes[a].get(rule[names[a]], ()) for a in named]
        hits = math.prod(len(m) for m in matches)
        removed[j] += hits * size // math.prod(sizes[a] for a in named)
        if hits:
            groups.setdefault(tuple(named), []).extend(_mixed_radix(itertools.product(*matches),
                                                                    [sizes[a] for a in named]))
    if groups:
        flat = np.arange(size, dtype=np.int64)
        for named, hit in groups.items():
            key = np.zeros(size, dtype=np.int64)
            for a in named:
                key = key * sizes[a] + value_codes(flat, sizes, a)
            out |= np.isin(key, np.asarray(hit, dtype=np.int64))
    return out


def _codes_by_value(values: Sequence) -> dict[Any, list[int]]:
    """Where each value stands in an axis (a dict finds what == finds: 1, 1.0 and True alike). An
    unhashable value, refused by its check, equals no rule's checked value."""
    out: dict[Any, list[int]] = {}
    for code, value in enumerate(values):
        try:
            out.setdefault(value, []).append(code)
        except TypeError:
            pass
    return out


def _mixed_radix(combinations: Iterable[Sequence[int]], sizes: Sequence[int]) -> Iterator[int]:
    """Each combination of value codes as one number (the first code most significant)."""
    for codes in combinations:
        number = 0
        for code, n in zip(codes, sizes):
            number = number * n + code
        yield number


def check_axes(axes: Mapping[str, Sequence], workload: str, kept: np.ndarray,
               check: Callable[[dict], dict]) -> tuple[tuple, ...]:
    """Each axis's values checked (check: make_scenario's check_inputs for one combination's values),
    in the order a loop over the kept combinations meets them, so that the first bad value is the one
    the loop would report. Values no kept combination takes are not checked, as in the loop."""
    names, sizes = list(axes), [len(v) for v in axes.values()]
    if not len(kept):
        return tuple(tuple(v) for v in axes.values())
    # the first kept combination meeting each value, then (within it) the inputs' order
    firsts = []
    for j in range(len(names)):
        if sizes[j] == 1:  # its value is every kept combination's (no array: a matrix may be one row)
            firsts.append((int(kept[0]), j, 0))
            continue
        present, first = np.unique(value_codes(kept, sizes, j), return_index=True)
        firsts += [(int(kept[f]), j, int(c)) for c, f in zip(present.tolist(), first.tolist())]
    order = list(WORKLOAD_DEFAULTS.get(workload, {})) + [n for n in names if n not in WORKLOAD_DEFAULTS.get(workload, {})]
    position = {n: i for i, n in enumerate(order)}
    out = [list(v) for v in axes.values()]
    # the values a combination meets first are checked in one call, in the inputs' order, as the loop would
    for _, met in itertools.groupby(sorted(firsts, key=lambda f: (f[0], position[names[f[1]]])), key=lambda f: f[0]):
        met = [(j, c) for _, j, c in met]
        values = check({names[j]: axes[names[j]][c] for j, c in met})
        for j, c in met:
            out[j][c] = values[names[j]]
    return tuple(tuple(v) for v in out)


def flat_rows(size: int, excluded: np.ndarray) -> np.ndarray:
    """The numbers of the combinations kept."""
    return np.flatnonzero(~excluded).astype(np.int64) if excluded.any() else np.arange(size, dtype=np.int64)


class Parts(Sequence):
    """A sequence held as parts (each a sized sequence of its own): reading item i reads its part's."""

    def __init__(self, parts: Sequence):
        self.parts = tuple(parts)
        self._starts = [0]
        for part in self.parts:
            self._starts.append(self._starts[-1] + len(part))

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(*i.indices(len(self))))
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        n = bisect.bisect_right(self._starts, i) - 1
        return self.parts[n][i - self._starts[n]]

    def __iter__(self) -> Iterator:
        for part in self.parts:
            yield from part

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))


class _BlockPairs(Sequence):
    """A block's rows as (matrix name, Scenario) pairs, made when read."""

    def __init__(self, block: SweepBlock):
        self.block = block

    def __len__(self) -> int:
        return self.block.size

    def __getitem__(self, k: int):
        return self.block.matrix, self.block.scenario(k)

    def __iter__(self):
        b = self.block
        for start in range(0, b.size, BLOCK_ROWS):
            yield from ((b.matrix, s) for s in b.scenarios(start, min(b.size, start + BLOCK_ROWS)))


class Expanded(Parts):
    """An expansion's scenarios in order, as (matrix name, Scenario or RlhfScenario) pairs, held as
    parts: SweepBlocks and runs of pairs. Reading a block's pair makes its Scenario."""

    def __init__(self, items: Sequence[tuple[str, Any] | SweepBlock]):
        parts: list[SweepBlock | list] = []
        for item in items:
            if isinstance(item, SweepBlock) or not parts or isinstance(parts[-1], SweepBlock):
                parts.append(item if isinstance(item, SweepBlock) else [item])
            else:
                parts[-1].append(item)
        self.blocks = tuple(p if isinstance(p, SweepBlock) else tuple(p) for p in parts)
        super().__init__([_BlockPairs(p) if isinstance(p, SweepBlock) else p for p in self.blocks])


BLOCK_ROWS = 32_768  # rows of a block made into objects at a time
# A call of the term table costs about as much as a thousand rows, whatever its size: blocks with fewer
# rows than this are computed together (small_batches), up to SMALL_BATCH_ROWS rows a call.
SMALL_BLOCK_ROWS = 1024
SMALL_BATCH_ROWS = 4096  # (a batch's terms are held while a writer reads its blocks: 300 columns of these)


def joined_columns(blocks: Sequence[SweepBlock]) -> tuple[dict[str, list], int]:
    """The rows of several blocks, in order, as one set of input columns, and how many rows: small blocks
    computed together (a block's rows made into Scenarios first: blocks have different axes)."""
    scenarios = [s for block in blocks for s in block.scenarios(0, block.size)]
    return scenario_columns(scenarios), len(scenarios)


def small_batches(blocks: Sequence[SweepBlock]) -> list[list[list[int]]]:
    """The blocks under SMALL_BLOCK_ROWS rows in batches to compute together, in order: each batch the
    groups of blocks that are the same combinations (a group is computed once, for all of them; a preset
    may have 30,000 one-row matrices alike), up to SMALL_BATCH_ROWS rows."""
    same: dict[tuple, list[int]] = {}
    for i, block in enumerate(blocks):
        if block.size < SMALL_BLOCK_ROWS:
            same.setdefault((block.workload, block.names, block.values, block.rows.tobytes()), []).append(i)
    batches: list[list[list[int]]] = []
    rows = 0
    for group in same.values():
        size = blocks[group[0]].size
        if not batches or rows + size > SMALL_BATCH_ROWS:
            batches.append([])
            rows = 0
        batches[-1].append(group)
        rows += size
    return batches
