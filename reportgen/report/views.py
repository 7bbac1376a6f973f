"""View models for the HTML/PDF report: every number formatted, every CSS class and colour chosen.

build_view(report, lang) -> ReportView. The template (templates/report.html.j2) only loops over
these objects and places their strings; it makes no numeric decision. Strings come from the
message catalogue of the language (i18n.py); numbers and units are formatted the same way in
every language. Charts arrive as finished SVG (charts.py), marked safe here because charts.py
escapes every string it places.
"""
from __future__ import annotations

import bisect
import itertools
import math
import re
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Callable, Generic, Iterable, Mapping, Sequence, TypeVar
from urllib.parse import urlsplit


from . import charts
from ..model.arrays import np
from ..model.catalog import slug
from ..planning.fleet import Fleet, JobMiss, Pool, fleet_id, pool_costs
from ..planning.plan import MAX_GPUS
from ..model.estimate import PHASE_NAMES, Estimate, GroupEstimate, group_terms
from ..model.formulas import to_text
from .i18n import Catalogue, load_catalogue
from ..scenarios.presets import WORKLOAD_TYPES
from .build import (ABSENT, GROUP_PASS_INPUTS, InputColumns, Recommendation, Report, Requirement, Result, ScenarioRow,
                    SensitivitySeries)
from ..model.lookups import LOOKUP_TABLES
from ..model.inputs import (INPUT_BY_NAME, INPUT_NAMES, INPUTS, FROZEN, ROLLOUT, RLHF_INPUTS, WORKLOAD_DEFAULTS, Input,
                            job_inputs, rlhf_readers)
from .notes import PLACEHOLDER
from ..model.terms import ASSUMPTIONS, BAR_PARTS, GROUP_BAR, RLHF_TIME_KEYS, ROLE_TERMS, SINGLE_BAR, Term
from ..model.units import GB, MB, SECONDS_PER, GiB, MiB, duration_unit, format_count
from .validation import TARGETS, Excluded, PublishedFigure, RunName, ValidationRow, error_stats

# Sweeps of thousands of scenarios: the appendix lists this many scenarios of each scenario group and
# points to the JSON and workbook for the rest (a 100,000-scenario table would be a 50 MB page, and a
# PDF of 2,000 pages); a breakdown chart shows this many configurations.
HTML_SCENARIO_ROWS = 1000
PDF_SCENARIO_ROWS = 500
MAX_BARS = 40

# The term groups the management PDF's method prints: how the phases make the peak and the peak the
# budget (the figures a meeting sees). The HTML and --pdf-appendix print every group.
MANAGEMENT_TERM_GROUPS = ("total",)

# The segments of every breakdown bar (terms.BAR_PARTS). Single models stack their peak's parts (SINGLE_BAR); RLHF
# groups their tightest pool's (GROUP_BAR).
SEGMENTS = BAR_PARTS

# Capacity-matrix colour buckets: 1, 2, 4, 8, 16, 32, ≥64 GPUs.
CAPACITY_BUCKETS = 7

FONT_FAMILY_SVG = {"en": "'Report Sans Supplement', 'Report Sans SC', sans-serif",
                   "zh": "'Report Sans SC', 'Report Sans Supplement', sans-serif"}
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef]")


# ---------------------------------------------------------------------------------------------
# Formatting: the only place the report turns numbers into text

def gib(num_bytes: float) -> str:
    """A byte count as GiB with two decimals, no unit ('13.04'); column headers carry the unit."""
    return f"{num_bytes / GiB:,.2f}"


def gib_unit(num_bytes: float) -> str:
    return f"{num_bytes / GiB:,.2f} GiB"


def usd(value: float) -> str:
    return f"${value:,.0f}"


def usd_hour(value: float) -> str:
    return f"${value:,.2f}/h"


def percent(fraction: float, digits: int = 1, signed: bool = False) -> str:
    """A non-zero fraction is never shown as 0 %: below the digits asked, as many as its first significant one."""
    value = fraction * 100
    if value and abs(value) < 0.5 * 10 ** -digits:
        digits = min(6, -math.floor(math.log10(abs(value))))
    return f"{value:{'+' if signed else ''},.{digits}f} %"


def tokens_short(n: int) -> str:
    """Powers-of-two token counts on chart axes: 512, 1K, …, 128K (K = 1,024)."""
    return f"{n // 1024}K" if n >= 1024 and n % 1024 == 0 else str(n)


# Large counts in words (training tokens): each language groups digits its own way.
COUNT_SCALES = {"en": ((10**12, "trillion"), (10**9, "billion"), (10**6, "million")),
                "zh": ((10**12, "万亿"), (10**8, "亿"), (10**4, "万"))}


def count_words(n: float, lang: str) -> str:
    """'1 billion', '2.5 trillion', '10 亿'; smaller counts with thousands separators."""
    for scale, word in COUNT_SCALES[lang]:
        if n >= scale:
            return f"{n / scale:,.3g} {word}"
    return format_count(n)


def duration(seconds: float, t: Catalogue) -> str:
    """A run's length in the largest unit that keeps it readable (units.duration_unit)."""
    unit, value = duration_unit(seconds)
    return t(f"duration.{unit}", v=f"{value:,.1f}")


def breakable(name: str) -> str:
    """An identifier that may wrap after its underscores (a zero-width space), not inside words."""
    return name.replace("_", "_\u200b")


def format_figure(value: float, unit: str) -> str:
    """A note's figure by its unit (fractions for 'percent', as the validation errors are)."""
    if unit == "bytes" and abs(value) < GiB:  # adapter states and buffers: 96 MiB, not 0.09 GiB
        return f"{value / MiB:,.1f} MiB ({value / MB:,.1f} MB)"
    if unit == "bytes":
        return f"{gib_unit(value)} ({value / GB:,.2f} GB)"
    if unit in ("count", "gpus"):
        return format_count(round(value))
    if unit == "ratio":
        return f"{value:,.2f}×"
    if unit == "percent":  # small shares keep two significant digits: 0.062 % reads 0.06 %, not 0.1 %
        return percent(value, 2 if abs(value) < 0.01 else 1)
    if unit == "usd":
        return usd(value)
    if unit == "seconds":  # a step or a decode step: milliseconds below a second
        return f"{value * 1000:,.1f} ms" if abs(value) < 1 else f"{value:,.2f} s"
    return f"{value:,.4g}"


def format_assumption(value: float, unit: str, t: Catalogue) -> str:
    """An assumption's value with its unit: fractions as percent, MiB also in GiB, counts grouped."""
    if unit.startswith("fraction"):
        return percent(value, 0)
    if unit == "MiB":
        return f"{value:,.0f} MiB ({gib_unit(value * MiB)})"
    if unit == "tokens":
        return format_count(value)
    if unit == "×":
        return f"{value:g}"
    return f"{value:g} {t.unit(unit)}"


def format_date(iso: str) -> str:
    """'2026-01-01 00:00 UTC' from an ISO date-time (the report's injected timestamp)."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if moment.utcoffset() is not None and moment.utcoffset().total_seconds() == 0:
        return moment.strftime("%Y-%m-%d %H:%M UTC")
    return moment.isoformat(sep=" ")


# ---------------------------------------------------------------------------------------------
# View objects (what the template sees)

@dataclass(frozen=True)
class Cell:
    text: str
    css: str = ""  # CSS classes decided here
    sort: str = ""  # data-sort value for the sortable table ('' = sort by text)
    title: str = ""  # tooltip (HTML only)
    href: str = ""  # the cell's text links here (a published figure's source)


@dataclass(frozen=True)
class Table:
    headers: tuple[Cell, ...]
    rows: tuple[tuple[Cell, ...], ...]
    css: str = ""
    caption: str = ""
    row_ids: tuple[str, ...] = ()  # anchors, parallel to rows ('' for none)
    row_groups: tuple[str, ...] = ()  # parallel to rows: a group heading to print before the row ('' for none)
    group_css: str = "group"


Item = TypeVar("Item")


@dataclass(frozen=True)
class Column(Generic[Item]):
    """One column of a table, declared once for the HTML and the PDF. media: "all"; "html" (left out of
    the PDF, printed from the HTML); "screen" (left out of the PDF, hidden when the HTML is printed, so
    it prints like the PDF). WeasyPrint's time grows with the number of cells: the PDF drops what
    print does not need."""
    header: Cell
    cell: Callable[[Item], Cell]
    media: str = "all"
    pdf_cell: Callable[[Item], Cell] | None = None  # the PDF's form of the cell, where it differs

    def shown(self, pdf: bool) -> bool:
        return self.media == "all" or not pdf


def build_table(columns: Sequence[Column[Item]], items: Sequence[Item], pdf: bool, css: str = "",
                **options) -> Table:
    """The table of `items` with the columns shown in this medium. The PDF has no tooltips, sort keys
    or row anchors (nothing links to them there, and each costs WeasyPrint)."""
    shown = [c for c in columns if c.shown(pdf)]

    def media(cell: Cell, column: Column) -> Cell:
        if pdf:
            return replace(cell, title="", sort="")
        return replace(cell, css=f"{cell.css} screen-only".strip()) if column.media == "screen" else cell

    rows = tuple(tuple(media((c.pdf_cell if pdf and c.pdf_cell else c.cell)(item), c) for c in shown)
                 for item in items)
    if pdf:
        options.pop("row_ids", None)
    return Table(tuple(media(c.header, c) for c in shown), rows, css, **options)


@dataclass(frozen=True)
class TocEntry:
    anchor: str
    number: str
    title: str


@dataclass(frozen=True)
class PlanRow:
    gpu: str
    count: str
    layout: str  # what the configuration chose beyond the requirement, in words ('ZeRO-2 · checkpointing: full')
    device: str
    budget: str
    capacity: str
    headroom: str
    purchase: str  # the total
    unit_price: str  # 'count × per-GPU price', by GPU type
    hourly: str
    speed: str  # time to train, tokens/s per user, or time per RLHF iteration
    mark: str  # '★ cheapest to buy', '◆ cheapest to rent', both, or ''
    css: str
    fits: bool
    tried: str  # for rows that do not fit: how many configurations were tried


@dataclass(frozen=True)
class PlanGroup:
    anchor: str
    subject: str  # the requirement: model, workload and what tells it from its siblings
    title: str  # model and workload only (the summary line, whose settings follow)
    settings: tuple[TextPart, ...]  # every setting that defines the job, in words; strong: what tells it apart
    verdict: str
    verdict_css: str
    rows: tuple[PlanRow, ...]


@dataclass(frozen=True)
class Figure:
    """A chart with its caption; `svg` is finished markup."""
    anchor: str
    title: str
    svg: str  # SVG markup built by charts.py from escaped text; the HTML writer inserts it verbatim
    caption: str


@dataclass(frozen=True)
class BreakdownSection:
    anchor: str
    title: str
    figure: Figure
    table: Table
    note: str  # '' or 'first N of M configurations'


@dataclass(frozen=True)
class SensitivitySection:
    anchor: str
    title: str
    figures: tuple[Figure, ...]
    table: Table


@dataclass(frozen=True)
class TermGroup:
    title: str
    table: Table


@dataclass(frozen=True)
class TextPart:
    text: str
    strong: bool = False


@dataclass(frozen=True)
class NoteFigureView:
    label: str
    value: str


@dataclass(frozen=True)
class NoteCard:
    anchor: str
    id: str
    claim_original: str
    claim_translation: str
    article: str  # title and section(s), in the report's language
    setting: str
    verdict: str
    verdict_css: str
    figures: tuple[NoteFigureView, ...]  # every figure but the error's, which the card shows under its title
    explanation: tuple[TextPart, ...]
    source: str
    error: NoteFigureView | None = None  # the size of the error: the figure the note names for it


@dataclass(frozen=True)
class Accuracy:
    """The held-out errors of one comparison: a line of its section and a row of the validation summary."""
    label: str
    errors: tuple[float, ...]
    target: float


@dataclass(frozen=True)
class ValidationSection:
    anchor: str
    title: str
    intro: str  # what was measured or published, how, and on what
    summary: tuple[str, ...]  # medians and largest errors, the target
    table: Table
    excluded: Table  # published records left out, with why (no rows: none)
    accuracy: tuple[Accuracy, ...]  # the comparisons the validation summary shows


@dataclass(frozen=True)
class ValidationGroup:
    anchor: str
    title: str
    sections: tuple[ValidationSection, ...]


@dataclass(frozen=True)
class PageStrings:
    """Pieces of the PDF's 'page X of Y' (string-set, so the static CSS stays language-free)."""
    before: str
    between: str
    after: str


@dataclass(frozen=True)
class DecisionView:
    """The decision page: the fleet to buy, buying against renting, the accuracy of the figures, the jobs
    with when and where they run, the schedule, and the single-type fleets a meeting compares."""
    intro: str
    headline: str
    own_vs_rent: str
    accuracy: str
    problems: tuple[str, ...]  # jobs no fleet runs, and why
    jobs: Table
    schedule: Figure | None
    alternatives: Table


@dataclass(frozen=True)
class ReportView:
    lang: str
    html_lang: str
    t: Catalogue  # the template reads fixed strings with t("key")
    title: str
    preset_name: str
    description: str
    date: str
    generated_at: str  # ISO, for the document's metadata
    version: str
    meta: tuple[tuple[str, str], ...]
    page: PageStrings
    toc: tuple[TocEntry, ...]
    safety_factor: str  # k, as the report prints it
    summary_intro: str
    decision: DecisionView | None
    accuracy_line: str  # the figures' held-out accuracy in a sentence (the decision page says it where there is one)
    verdicts: tuple[PlanGroup, ...]
    plan_headers: tuple[Cell, ...]
    capacity: Table
    capacity_legend: tuple[Cell, ...]
    breakdowns: tuple[BreakdownSection, ...]
    breakdowns_note: str  # '' or where the breakdown charts and tables are (the section is then this note)
    sensitivity: tuple[SensitivitySection, ...]
    sensitivity_note: str  # '' or where the sensitivity curves and tables are (the section is then this note)
    sensitivity_none: str  # why there is no curve, where there is none
    terms: tuple[TermGroup, ...]
    # every input, from the one table the CLI, presets and workbook read (inputs.INPUTS); None: left out
    inputs: Table | None
    assumptions: Table
    lookup_tables: tuple[TermGroup, ...]
    gpu_table: Table
    method_note: str  # '' or what the method leaves out and where it is
    notes: tuple[NoteCard, ...]
    notes_note: str  # '' or where the figure tables the cards leave out are
    scenarios: Table
    scenarios_note: str
    skipped: Table
    skipped_note: str  # '' or where the skipped combinations are listed
    accuracy: Table  # the validation summary: one row per comparison, held-out figures only
    validation: tuple[ValidationGroup, ...]
    validation_note: str  # '' or where the validation tables are


# ---------------------------------------------------------------------------------------------
# Helpers over results

def _fit_state(values: Mapping[str, float]) -> str:
    if not values["fits"]:
        return "no"
    return "yes" if values["fits_recommended"] else "tight"


def segments(est: Estimate | GroupEstimate) -> dict[str, int]:
    """The stacked parts of one configuration, in SEGMENTS order (an RLHF group's: its tightest pool's); they add up
    to device_total."""
    v = est.values
    out = {part: int(v[name]) if name else 0
           for part, name in (GROUP_BAR if isinstance(est, GroupEstimate) else SINGLE_BAR).items()}
    assert sum(out.values()) == int(v["device_total"]), "breakdown parts must add up to the device total"
    return out


def _config_key(r: Result | ScenarioRow) -> tuple:
    """What a configuration is, apart from the GPU type it runs on (its per-GPU bytes do not depend on it); an RLHF
    group's, its roles' and where and how they run (its engines generating ahead or in turn share their memory, not
    their time)."""
    if r.is_group:
        return (tuple(r.estimate.scenario.placement_words()),) + tuple(
            (name, tuple((k, v) for k, v in e.scenario.inputs().items() if k != "gpu")) for name, e in r.estimate.roles)
    return tuple((k, v) for k, v in r.lead.inputs().items() if k != "gpu")


def _config_inputs(r: Result | ScenarioRow, t: Catalogue) -> dict[str, object]:
    """What a label may mention: the lead scenario's inputs, GPUs in all, and for RLHF groups the group's lengths
    (not its first role's: an actor whose engines run apart generates nothing), the placement and the other roles'
    models."""
    out: dict[str, object] = {**r.lead.inputs(), "num_gpus": r.total_gpus, "workload": r.workload}
    if r.is_group:
        g = r.estimate.scenario
        out.update({n: getattr(g.actor, n) for n in ("seq_len", "prompt_len", "gen_len", "max_gen_len")})
        out["placement"] = t("list.sep").join(g.placement_words(_words(t)))
        for name, s in g.roles[1:]:
            out[f"role.{name}"] = s.model
    return out


class _Configurations:
    """A matrix's configurations (its rows alike but for the GPU type), read from the results' input columns, not a
    Scenario per row (#35): how many there are, and short labels from the inputs that vary within the matrix
    ('batch 8 · int4 · TP2').

    The workload comes first when it varies; the other inputs are compared within one workload (workloads have
    different defaults, which are not variations the planner asked for). Labels that still coincide get the
    configuration's first scenario number. Each value's words are made once per distinct value; a row is the
    numbers of its words."""

    def __init__(self, report: Report, matrix: str, t: Catalogue):
        self.t = t
        self.parts = report.results.input_columns(matrix, lambda r: _config_inputs(r, t), _config_key)
        self._what_varies()
        self._words_of_rows()
        self._coinciding()

    # what varies: per workload, each name's first value (as text), whether another was seen, how many rows had it
    # (a row without it counts as "None"), and whether a role's model differs from the actor's
    def _what_varies(self) -> None:
        first: dict[str, dict[str, str]] = {}
        varies: dict[str, set[str]] = {}
        present: dict[str, dict[str, int]] = {}
        role_news: dict[str, set[str]] = {}
        rows_of: dict[str, int] = {}
        models: set = set()
        for p in self.parts:
            for w, mask, count in _by_workload(p):
                rows_of[w] = rows_of.get(w, 0) + count
                seen, moved, counts = first.setdefault(w, {}), varies.setdefault(w, set()), present.setdefault(w, {})
                for n, (values, codes) in p.columns.items():
                    used, first_row = _used(values, codes, mask, count)
                    texts = {i: str(values[i]) for i in used if values[i] is not ABSENT}
                    if not texts:
                        continue
                    if any(x != seen.setdefault(n, texts[first_row]) for x in texts.values()):
                        moved.add(n)
                    counts[n] = counts.get(n, 0) + sum(used[i] for i in texts)
                    if n == "model":
                        models.update(values[i] for i in texts)
                    elif n.startswith("role.") and self._role_is_news(p, n, mask):
                        role_news.setdefault(w, set()).add(n)
        extra = sorted({n for seen in first.values() for n in seen if n not in INPUT_NAMES})
        self.varying = {w: [n for n in list(INPUT_NAMES) + extra if n not in ("gpu", "workload", "model")
                            and (n in varies[w]
                                 or (n in first[w] and present[w][n] < rows_of[w] and first[w][n] != "None"))
                            # a role's model is news only where it differs from the actor's
                            and not (n.startswith("role.") and n not in role_news.get(w, ()))]
                        for w in first}
        self.models_vary, self.several = len(models) > 1, len(first) > 1

    @staticmethod
    def _role_is_news(p: InputColumns, name: str, mask) -> bool:
        """Whether a row of these has a role model (name: role.<role>) that is not the actor's."""
        values, codes = p.columns[name]
        models, model_codes = p.columns["model"]
        rows = range(p.size) if mask is None else np.flatnonzero(mask).tolist()
        role_models = (values[_code(codes, k)] for k in rows)
        return any(v is not ABSENT and v not in (None, models[_code(model_codes, k)]) for k, v in zip(rows, role_models))

    def _part_words(self, n: str, v: object) -> str:
        t = self.t
        if n == "model":
            return v
        if n.startswith("role."):
            return f"{t(n)} {v}"
        if n == "placement":
            return str(v)
        return t.get(f"axis.{n}", n + " {v}", v=t.get(f"value.{n}.{v}", str(v)))

    def _words_of_rows(self) -> None:
        """Each row's label as numbers of words (self.words: one text per number), in label order: the model where
        models vary, the workload where workloads do, each varying input the row has, and its GPUs in all where
        nothing else would tell it (-1: no word); per part, one array of them per row."""
        self.words: list[str] = []
        number: dict[str, int] = {}
        self.row_words: list[np.ndarray] = []
        width = max(((1 if self.models_vary else 0) + len(v) + 2 for v in self.varying.values()), default=2)
        for p in self.parts:
            out = np.full((p.size, width), -1, dtype=np.int64)
            for w, mask, count in _by_workload(p):
                names = (["model"] if self.models_vary else []) + self.varying[w]
                columns = [self._word_numbers(p, n, mask, count, number) for n in names]
                if self.several:
                    columns.insert(1 if self.models_vary else 0,
                                   np.full(count, self._number(number, self.t(f"workload.{w}")), dtype=np.int64))
                told = sum((c >= 0).astype(np.int64) for c in columns) if columns else np.zeros(count, dtype=np.int64)
                alone = (told == 0) | ((told == 1) & self.several & (not self.varying[w]))
                gpus = self._word_numbers(p, "num_gpus", mask, count, number, axis_words=True)
                columns.append(np.where(alone, gpus, -1))
                block = np.stack(columns, axis=1)
                target = out if mask is None else out[mask]
                target[:, :block.shape[1]] = block
                if mask is not None:
                    out[mask] = target
            # the words in order, those a row lacks (-1) last: rows whose labels read alike are alike
            self.row_words.append(np.take_along_axis(out, np.argsort(out < 0, axis=1, kind="stable"), axis=1))

    def _number(self, number: dict[str, int], text: str) -> int:
        if text not in number:
            number[text] = len(self.words)
            self.words.append(text)
        return number[text]

    def _word_numbers(self, p: InputColumns, n: str, mask, count: int, number: dict[str, int],
                      axis_words: bool = False) -> np.ndarray:
        if n not in p.columns:
            return np.full(count, -1, dtype=np.int64)
        values, codes = p.columns[n]
        words = (lambda v: self.t("axis.num_gpus", v=v)) if axis_words else (lambda v: self._part_words(n, v))
        lut = np.array([-1 if v is ABSENT else self._number(number, words(v)) for v in values], dtype=np.int64)
        if codes is None:
            return np.full(count, lut[0], dtype=np.int64)
        return lut[codes if mask is None else codes[mask]]

    def _coinciding(self) -> None:
        """Which labels two configurations have, and the first scenario of each configuration (rows alike but for
        the GPU type: equal keys within a part; across parts, compared where their labels coincide)."""
        labels = np.unique(np.concatenate(self.row_words), axis=0, return_inverse=True)[1].ravel()
        part_of = np.concatenate([np.full(p.size, i, dtype=np.int64) for i, p in enumerate(self.parts)])
        keys = np.concatenate([p.keys for p in self.parts])
        position = np.concatenate([np.arange(p.size, dtype=np.int64) for p in self.parts])
        order = np.lexsort((position, keys, part_of, labels))
        new = np.ones(len(order), dtype=bool)  # a configuration's first row (within its part), in label order
        new[1:] = ((labels[order][1:] != labels[order][:-1]) | (part_of[order][1:] != part_of[order][:-1])
                   | (keys[order][1:] != keys[order][:-1]))
        firsts = order[new]
        self.count = len(firsts)
        self.shared: set[int] = set()
        self.same: dict[tuple[int, int], tuple[int, int]] = {}  # (part, key) -> the first part's of its configuration
        by_label: dict[int, list[int]] = {}
        for row in firsts[np.isin(labels[firsts], np.flatnonzero(np.bincount(labels[firsts]) > 1))].tolist():
            by_label.setdefault(int(labels[row]), []).append(row)
        for label, rows in by_label.items():  # rare: the words of two values coincide, or parts repeat a configuration
            distinct: dict[tuple, tuple[int, int]] = {}
            for row in rows:
                i, k = int(part_of[row]), int(position[row])
                first = distinct.setdefault(_config_key(self.parts[i].row(k)), (i, int(keys[row])))
                self.same[(i, int(keys[row]))] = first
            self.count -= len(rows) - len(distinct)
            if len(distinct) > 1:
                self.shared.add(label)
        self.label_of_row = labels
        self.starts = np.cumsum([0] + [p.size for p in self.parts])
        self.first_indices = [int(p.indices[0]) for p in self.parts]  # ascending: parts are in results order

    def labels(self, rows: Iterable[Result | ScenarioRow]) -> dict[tuple, str]:
        """The labels of these rows' configurations, by _config_key: a label two configurations have ends with the
        configuration's first scenario number."""
        out: dict[tuple, str] = {}
        for r in rows:
            i, k = self._place(r.index)
            text = " · ".join(self.words[x] for x in self.row_words[i][k].tolist() if x >= 0)
            if int(self.label_of_row[self.starts[i] + k]) in self.shared:
                text = f"{text} (#{self._first_index(i, int(self.parts[i].keys[k]))})"
            out[_config_key(r)] = text
        return out

    def _place(self, index: int) -> tuple[int, int]:
        """(part, position in it) of the row with this scenario number."""
        i = bisect.bisect_right(self.first_indices, index) - 1
        p = self.parts[max(i, 0)]
        k = int(np.searchsorted(p.indices, index))
        if i < 0 or k >= p.size or p.indices[k] != index:
            raise KeyError(index)
        return i, k

    def _first_index(self, part: int, key: int) -> int:
        """The first scenario number of the configuration of (part, key)."""
        first = self.same.get((part, key), (part, key))
        return min(int(self.parts[i].indices[np.flatnonzero(self.parts[i].keys == k)[0]])
                   for (i, k) in [pk for pk, f in self.same.items() if f == first] or [first])


def _by_workload(p: InputColumns):
    """(workload, the rows of it: a mask, or None for all, how many) of a part's rows."""
    values, codes = p.columns["workload"]
    if codes is None:
        yield values[0], None, p.size
        return
    for i, w in enumerate(values):
        mask = codes == i
        count = int(mask.sum())
        if count:
            yield w, mask, count


def _used(values: tuple, codes, mask, count: int) -> tuple[dict[int, int], int]:
    """The positions of the values these rows have -> how many rows have each, and the position of the first row's
    value among those that have one (not ABSENT)."""
    if codes is None:
        return {0: count}, 0
    chosen = codes if mask is None else codes[mask]
    counts = np.bincount(chosen, minlength=len(values))
    absent = next((i for i, v in enumerate(values) if v is ABSENT), -1)
    if chosen[0] != absent or counts[absent] == count:
        first = int(chosen[0])
    else:
        first = int(chosen[chosen != absent][0])
    return {int(i): int(counts[i]) for i in np.flatnonzero(counts).tolist()}, first


def _code(codes, k: int) -> int:
    return 0 if codes is None else int(codes[k])


def _svg_font(lang: str, texts: Sequence[str]) -> str:
    # SVG text does not fall back per glyph: a chart with any CJK text puts the CJK family first.
    if lang == "zh" or any(CJK.search(x) for x in texts):
        return FONT_FAMILY_SVG["zh"]
    return FONT_FAMILY_SVG["en"]


# ---------------------------------------------------------------------------------------------
# Requirements and configurations in words

def setting_text(name: str, value: object, t: Catalogue, need: Requirement | None = None) -> str:
    """One setting in words: 'batch 8', 'int4 weights', 'checkpointing: full', 'critic: Qwen2.5-0.5B'; a
    serving goal's context with its split when the requirement is given."""
    if name.startswith("role."):
        return t("setting.role", role=t(name), v=value)
    if name.startswith("goal."):
        return t("setting.goal", v=_goal_words(name, value, t, need))
    if name == "train_tokens":
        words = count_words(value, t.lang)
    elif isinstance(value, float) and INPUT_BY_NAME[name].decimal:  # a share of a GPU as a percentage, a ratio as is
        words = percent(value, 0) if INPUT_BY_NAME[name].limits[1] <= 1 else f"{value:g}"
    elif isinstance(value, int):
        words = format_count(value)
    else:
        words = t.get(f"value.{name}.{value}", str(value))
    return t(f"setting.{name}", v=words)


def _goal_words(name: str, value: float | int, t: Catalogue, need: Requirement | None = None) -> str:
    """One part of a goal in words: 'trained within 7.0 days', '50 users at once', '32,768-token context
    per user (31,744 prompt + 1,024 generated)': the split of a context decides the answer, so it is said."""
    if name == "goal.within_seconds":
        return t(name, v=duration(value, t))
    if name == "goal.max_ttft_seconds":  # a few hundred milliseconds, as serving SLAs state it
        return t(name, v=f"{value * 1000:,.0f} ms" if value < 1 else f"{value:g} s")
    if name == "goal.context_tokens" and need is not None and need.value("gen_len") is not None:
        gen = need.value("gen_len")
        return t("goal.context_split", v=format_count(value), prompt=format_count(value - gen), gen=format_count(gen))
    return t(name, v=format_count(value) if isinstance(value, int) else f"{value:g}")


def _default(name: str, workload: str) -> object:
    return WORKLOAD_DEFAULTS.get(workload, {}).get(name, INPUT_BY_NAME[name].default if name in INPUT_BY_NAME else None)


def _distinguishing(recs: Sequence[Recommendation]) -> dict[Requirement, tuple[str, ...]]:
    """Per requirement, the settings that tell it from the other requirements of its model × workload."""
    siblings: dict[tuple[str, str], list[Requirement]] = {}
    for rec in recs:
        siblings.setdefault((rec.model, rec.workload), []).append(rec.requirement)
    out = {}
    for needs in siblings.values():
        names = list(dict.fromkeys(n for need in needs for n, _ in need.settings))
        varying = tuple(n for n in names if len({repr(need.value(n)) for need in needs}) > 1)
        out.update({need: varying for need in needs})
    return out


def _subject(rec: Recommendation, sample: Result, varying: Sequence[str], t: Catalogue) -> str:
    """'Mixtral-8x7B inference (int4 weights)': the requirement, with what tells it from its siblings."""
    workload = t(f"workload.{rec.workload}")
    if sample.is_group:
        roles = [t(f"role.{name}") for name, _ in sample.estimate.scenario.job_roles]
        text = (t("subject.group", model=rec.model, workload=workload, count=len(roles),
                  roles=t("list.sep").join(roles)) if len(roles) > 1
                else t("subject.group_alone", model=rec.model, workload=workload, role=roles[0]))
    else:
        text = t("subject.single", model=rec.model, workload=workload)
    return text + variant_text(rec.requirement, varying, t)


def variant_text(need: Requirement, varying: Sequence[str], t: Catalogue) -> str:
    """' (int4 weights, batch 8)': the settings that tell a requirement from its siblings, those it has
    (a requirement without a goal beside one with a goal has no goal setting)."""
    texts = [setting_text(n, need.value(n), t, need) for n in varying if need.value(n) is not None]
    return t("subject.variant", settings=t("list.sep").join(texts)) if texts else ""


def _settings(need: Requirement, varying: Sequence[str], t: Catalogue) -> tuple[TextPart, ...]:
    """Every setting that defines the job: the headline inputs (dtype, precision, batch, tokens,
    checkpointing), those that differ from the workload's defaults, and those that vary between
    requirements of the same model × workload."""
    shown = [(n, v) for n, v in need.settings
             if n in varying or n.startswith(("role.", "goal.")) or n in ("group_size", "prompts_per_iteration")
             or (n in INPUT_BY_NAME and (INPUT_BY_NAME[n].headline or v != _default(n, need.workload)))]
    goal = [(n, v) for n, v in shown if n.startswith("goal.")]
    words = [(setting_text(n, v, t), n in varying) for n, v in shown if not n.startswith("goal.")]
    if goal:  # one 'goal: …' part for all of the goal's conditions
        words.append((t("setting.goal", v=t("list.sep").join(_goal_words(n, v, t, need) for n, v in goal)),
                      any(n in varying for n, _ in goal)))
    parts: list[TextPart] = []
    for i, (text, strong) in enumerate(words):
        if i:
            parts.append(TextPart(t("list.sep")))
        parts.append(TextPart(text, strong))
    return tuple(parts)


# Inputs a configuration may choose beyond its requirement, in the order a reader scans them.
_CHOICE_INPUTS = tuple(i.name for i in INPUTS if i.layout and i.name not in ("gpu", "num_gpus"))


def configuration(r: Result, need: Requirement, t: Catalogue) -> str:
    """What a configuration chose beyond its requirement, in words ('ZeRO-2 · TP 2 · offload: optimizer'):
    layout inputs away from their defaults, the job inputs its preset lets the plan choose, and an RLHF
    group's placement."""
    s = r.lead
    chosen = set(job_inputs(r.workload, s.workload)) - {n for n, _ in need.settings}
    if r.is_group:  # a role's batch and accumulation split the rank's sequences: said as its micro-batch
        chosen -= {"batch_size", *GROUP_PASS_INPUTS}
    parts = [setting_text(n, getattr(s, n), t) for n in INPUT_NAMES
             if n in chosen or (n in _CHOICE_INPUTS and INPUT_BY_NAME[n].applies_to(s.workload)
                                and getattr(s, n) != _default(n, s.workload))]
    if r.is_group:
        g = r.estimate.scenario
        if s.grad_accum_steps > g.actor.grad_accum_steps:
            parts.append(t("setting.micro_batch_size", v=format_count(s.batch_size)))
        parts.append(t(f"placement.{g.placement}"))
        if g.generates_ahead:  # a faster iteration: said
            parts.append(t("rollout_mode.async"))
        padded = dict(g.settings).get("padded_roles", "none")
        if padded != "none":  # how the framework runs the passes: it costs, so it is said
            parts.append(t("setting.padded", roles=t(f"value.padded_roles.{padded}"),
                           v=format_count(max(role.seq_len for _, role in g.roles))))
        # each other pool, where it differs from the actor's; the engines' always
        parts += [t("setting.role_pool", role=t(f"role.{name}"), count=role.num_gpus, gpu=role.gpu)
                  for name, role in g.pooled_roles
                  if (role.num_gpus, role.gpu) != (s.num_gpus, s.gpu) or name == ROLLOUT]
    return t("list.sep").join(parts)


def speed(r: Result, t: Catalogue, short: bool = False) -> str:
    """Time to train the requirement's tokens, decode speed per user, or time per RLHF iteration
    (short: the table's form, whose header names the unit)."""
    v = r.estimate
    if r.is_group:
        seconds = v["iteration_seconds"]
        time = duration(seconds, t) if seconds >= 120 else t("duration.seconds", v=f"{seconds:,.1f}")
        return time if short else t("speed.iteration", v=time)
    if v["is_train"]:
        return duration(v["time_to_train_seconds"], t)
    if short:
        return t("speed.per_user_short", v=f"{v['tokens_per_s_per_user']:,.0f}")
    if v["engine_mode"]:  # a serving buyer's first question: how many sequences the KV pool holds
        return t("speed.per_user_pool", v=f"{v['tokens_per_s_per_user']:,.0f}", n=f"{math.floor(v['max_concurrency']):,}",
                 tokens=f"{v['context_tokens']:,.0f}")
    return t("speed.per_user", v=f"{v['tokens_per_s_per_user']:,.0f}")


def _gpus(r: Result, t: Catalogue) -> str:
    """What a configuration buys: '4 × H100-80GB-SXM', or an RLHF group's pools by type, '3 × A100-80GB + 2 × L40S'."""
    return t("plan.and").join(t("plan.gpus", count=n, gpu=gpu) for gpu, n in r.estimate.gpus_by_type().items())


def _unit_prices(r: Result, report: Report, t: Catalogue) -> str:
    """Its purchase as GPUs × their price: '4 × $30,000', or by type, '3 × $15,000 + 2 × $9,000'."""
    return t("plan.and").join(t("plan.unit_price", count=n, price=usd(report.gpus[gpu].price_purchase_usd))
                              for gpu, n in r.estimate.gpus_by_type().items())


def _rent(r: Result) -> str:
    """Renting: a training run's cost, or the hourly price."""
    return usd(r.estimate.rent_usd) if r.estimate.values.get("is_train") else usd_hour(r.estimate.rent_usd)


# ---------------------------------------------------------------------------------------------
# Sections

def _plan(report: Report, t: Catalogue) -> tuple[PlanGroup, ...]:
    k = report.assumptions["safety_factor"]
    varying = _distinguishing(report.recommendations)
    groups = []
    for n, rec in enumerate(report.recommendations, start=1):
        need = rec.requirement
        subject = _subject(rec, rec.sample, varying[need], t)
        settings = _settings(need, varying[need], t)
        if rec.best:
            r = rec.best.result
            v = r.estimate
            layout = configuration(r, need, t)
            # an engine's budget (a served model's, or its own pool's) is its margin: no k on top
            margin = (t("verdict.engine_margin") if v["recommended"] == v["device_total"]
                      else t("verdict.with_k", budget=gib_unit(v["recommended"]), k=f"{k:g}"))
            verdict = t("verdict.fit" if not layout else "verdict.fit_layout", subject=subject, gpus=_gpus(r, t),
                        layout=layout, device=gib_unit(v["device_total"]), margin=margin,
                        capacity=gib_unit(v["gpu_memory_bytes"]),
                        price=usd(v["purchase_usd"]), units=_unit_prices(r, report, t), speed=speed(r, t),
                        rent=_rent(r))
            if not report.gpus[r.gpu].datacenter:
                verdict += t("sentence.sep") + t("verdict.consumer_gpu", gpu=r.gpu)
            rent = rec.cheapest_to_rent.result
            if rent.index != r.index:
                rent_layout = configuration(rent, need, t)
                verdict += t("sentence.sep") + t("verdict.rent_layout" if rent_layout else "verdict.rent",
                                                 gpus=_gpus(rent, t), layout=rent_layout, speed=speed(rent, t),
                                                 rent=_rent(rent))
            css = "verdict-fit"
        else:
            missed = any(e.closest for e in rec.entries)  # something fits, nothing meets the goal
            verdict = t("verdict.none_goal" if missed else "verdict.none", subject=subject,
                        max=max(e.most_gpus for e in rec.entries))
            css = "verdict-none"
        rows = []
        for e in rec.entries:
            if e.result is None:
                rows.append(PlanRow(e.gpu, "", "", "", "", gib(report.gpus[e.gpu].memory_bytes), "", "", "", "", "",
                                    t("fit.goal_missed", speed=speed(e.closest, t)) if e.closest else t("fit.no"),
                                    "nofit", False,
                                    t("plan.tried", n=e.num_scenarios) if e.num_scenarios != 1
                                    else t("plan.tried_one")))
                continue
            r, v = e.result, e.result.estimate
            marks = ["★" if rec.best is not None and r.index == rec.best.result.index else "",
                     "◆" if rec.cheapest_to_rent and r.index == rec.cheapest_to_rent.result.index else ""]
            best = bool(marks[0])
            rows.append(PlanRow(e.gpu, str(r.total_gpus), configuration(r, need, t) or "—", gib(v["device_total"]),
                                gib(v["recommended"]), gib(v["gpu_memory_bytes"]), gib(v["headroom_bytes"]),
                                usd(v["purchase_usd"]), _unit_prices(r, report, t),
                                usd_hour(v["hourly_usd"]), speed(r, t, short=True) + (
                                    f" · {_rent(r)}" if v.values.get("is_train") else ""),
                                " ".join(m for m in marks if m), "best" if best else "", True, ""))
        groups.append(PlanGroup(f"plan-{n}", subject, _subject(rec, rec.sample, (), t), settings, verdict, css,
                                tuple(rows)))
    return tuple(groups)


def _capacity(report: Report, t: Catalogue) -> tuple[Table, tuple[Cell, ...]]:
    """Per workload (a heading row each), requirement × GPU type -> the fewest GPUs that fit with k."""
    headers = (Cell(t("capacity.model")),) + tuple(Cell(g, "num") for g in report.gpu_types)
    varying = _distinguishing(report.recommendations)
    order = {w: i for i, w in enumerate(WORKLOAD_TYPES)}
    recs = sorted(enumerate(report.recommendations), key=lambda x: (order.get(x[1].workload, len(order)), x[0]))
    rows, groups = [], []
    previous = None
    for _, rec in recs:
        need = rec.requirement
        name = rec.model + variant_text(need, varying[need], t)
        cells = [Cell(name)]
        entries = {e.gpu: e for e in rec.entries}
        for gpu in report.gpu_types:
            e = entries.get(gpu)
            if e is None:
                cells.append(Cell("—", "num cap-na", title=t("capacity.not_tried")))
            elif e.result is None:
                cells.append(Cell(t("capacity.none", max=e.most_gpus), "num cap-none",
                                  title=t("fit.goal_missed", speed=speed(e.closest, t)) if e.closest else t("fit.no")))
            else:
                # the fewest GPUs among the fitting configurations (the plan's pick may use more: it is cheapest)
                n = e.result.total_gpus
                bucket = min(int(math.log2(n)), CAPACITY_BUCKETS - 1)
                star = rec.best is not None and rec.best.gpu == gpu
                cells.append(Cell(f"{n}{' ★' if star else ''}", f"num cap-{bucket}", title=_gpus(e.result, t)))
        rows.append(tuple(cells))
        groups.append(t(f"workload.{rec.workload}") if rec.workload != previous else "")
        previous = rec.workload
    legend = tuple(Cell(label, f"cap-{i}") for i, label in
                   enumerate(("1", "2", "4", "8", "16", "32", "≥ 64"))) + (
        Cell(t("capacity.legend_none"), "cap-none"), Cell(t("capacity.legend_na"), "cap-na"),
        Cell(t("capacity.legend_best"), "cap-star"))
    return Table(headers, tuple(rows), "capacity", row_groups=tuple(groups)), legend


def _segment_series(t: Catalogue, present: Sequence[str]) -> list[charts.Series]:
    return [charts.Series(k, t(f"part.{k}")) for k in present]


def _reference_line(r: Result | ScenarioRow, report: Report) -> tuple[str, int]:
    """The GPU type whose memory a breakdown bar is read against, and that memory: a row's own GPU type; an RLHF
    group's on pools of several types is the one whose memory its term gpu_memory_bytes holds (the tightest
    pool's), not its actor's (the line was labelled with the actor's GPU at the judges' card's memory)."""
    if not r.is_group:
        return r.gpu, report.gpus[r.gpu].memory_bytes
    memory = int(r.estimate["gpu_memory_bytes"])
    gpu = next((s.gpu for _, s in r.estimate.scenario.roles if report.gpus[s.gpu].memory_bytes == memory), r.gpu)
    return gpu, memory


def _reference_lines(configs: _Configurations, report: Report) -> dict[str, int]:
    """Each GPU type a matrix's bars are read against and its memory, in the order of their first rows: a sweep
    block's from its GPU column, Result objects' by _reference_line."""
    out: dict[str, int] = {}
    for p in configs.parts:
        if p.objects:
            for k in range(p.size):
                out.setdefault(*_reference_line(p.row(k), report))
            continue
        values, codes = p.columns["gpu"]
        if codes is None:
            order = [0]
        else:
            used, first = np.unique(codes, return_index=True)
            order = used[np.argsort(first)].tolist()
        for i in order:
            out.setdefault(values[i], report.gpus[values[i]].memory_bytes)
    return out


def _breakdowns(report: Report, t: Catalogue, lang: str, pdf: bool) -> tuple[BreakdownSection, ...]:
    k = report.assumptions["safety_factor"]
    sections = []
    for m, matrix_key in enumerate(report.results.matrices(), start=1):
        matrix = report.matrix_name_in(matrix_key, lang)
        every = _Configurations(report, matrix_key, t)
        configs: dict[tuple, Result | ScenarioRow] = {}  # the first MAX_BARS configurations
        for r in report.results.rows(matrix_key):
            configs.setdefault(_config_key(r), r)
            if len(configs) == min(MAX_BARS, every.count):
                break
        shown = [(key, r.result()) for key, r in configs.items()]
        labels = every.labels(configs.values())
        gpus_used = _reference_lines(every, report)
        parts = {key: segments(r.estimate) for key, r in shown}
        present = [s for s in SEGMENTS if any(p[s] for p in parts.values())]
        colour_index = {s: SEGMENTS.index(s) for s in present}
        series = _segment_series(t, present)
        bars = [charts.Bar(labels[key], tuple(parts[key][s] / GiB for s in present),
                           gib_unit(r.estimate["device_total"]), r.estimate["recommended"] / GiB)
                for key, r in shown]
        lines = [charts.RefLine(g, b / GiB) for g, b in gpus_used.items()]
        chart_id = f"bd{m}"
        texts = [b.label for b in bars] + [s.label for s in series] + [l.label for l in lines]
        svg = charts.stacked_bars(bars, series, lines, x_title=t("chart.per_gpu_gib"), chart_id=chart_id,
                                  font_family=_svg_font(lang, texts), title=t("breakdown.chart_title", matrix=matrix),
                                  colour_index=[colour_index[s] for s in present])
        figure = Figure(f"{chart_id}-fig", t("breakdown.chart_title", matrix=matrix), svg,
                        t("breakdown.caption", k=f"{k:g}"))
        # the budget column is on screen only: the chart's dashed outline shows it in print
        headers = (Cell(t("breakdown.config")),) + tuple(Cell(s.label, "num") for s in series) + (
            (Cell(t("col.device_total"), "num"),)
            + (() if pdf else (Cell(t("col.budget", k=f"{k:g}"), "num screen-only"),)))
        rows = []
        for key, r in shown:
            rows.append((Cell(labels[key]),) + tuple(Cell(gib(parts[key][s]), "num") for s in present)
                        + (Cell(gib(r.estimate["device_total"]), "num strong"),)
                        + (() if pdf else (Cell(gib(r.estimate["recommended"]), "num screen-only"),)))
        note = t("breakdown.truncated", n=len(shown), total=every.count) if every.count > len(shown) else ""
        sections.append(BreakdownSection(f"breakdown-{m}-{slug(matrix_key)}", matrix, figure,
                                         Table(headers, tuple(rows), "breakdown", t("breakdown.table_caption")), note))
    return tuple(sections)


def _runs_out(xs: Sequence[int], fits: Sequence[bool], t: Catalogue, fmt, cut: bool) -> Cell:
    fitting = [x for x, ok in zip(xs, fits) if ok]
    if not fitting:
        return Cell(t("sens.none", x=fmt(xs[0])), "num nofit")
    if len(fitting) == len(xs):
        return Cell(t("sens.all_it_takes" if cut else "sens.all", x=fmt(xs[-1])), "num")
    return Cell(fmt(max(fitting)), "num")


def _sensitivity(report: Report, t: Catalogue, lang: str) -> tuple[SensitivitySection, ...]:
    by_result: dict[int, list[SensitivitySeries]] = {}
    wanted = {s.result_index for s in report.sensitivity}
    scenarios = {r.index: r.lead for r in report.results.rows() if r.index in wanted}  # their rows are not groups
    for s in report.sensitivity:
        by_result.setdefault(s.result_index, []).append(s)
    sections = []
    for n, (index, series_list) in enumerate(by_result.items(), start=1):
        figures = []
        columns = []
        for j, s in enumerate(series_list):
            fmt = tokens_short if s.axis != "batch_size" else str
            x_title = t(f"sens.axis.{s.axis}")
            lines = [charts.RefLine(g, b / GiB) for g, b in s.gpu_limits]
            chart_id = f"sn{n}-{j + 1}"
            scenario = scenarios[s.result_index]
            # a named scenario (a purchase job's) is named as its matrix is, in this language
            label = report.matrix_name_in(scenario.name, lang) if scenario.name else scenario.label(_words(t))
            title = t("sens.chart_title", label=label, axis=x_title)
            texts = [l.label for l in lines] + [x_title, t("sens.y_title")]
            svg = charts.line_chart(s.xs, [y / GiB for y in s.recommended_bytes], lines,
                                    x_labels=[fmt(x) for x in s.xs], x_title=x_title, y_title=t("sens.y_title"),
                                    chart_id=chart_id, font_family=_svg_font(lang, texts), title=title)
            figures.append(Figure(f"{chart_id}-fig", title, svg, ""))
            columns.append((s, fmt, x_title))
        headers = (Cell(t("col.gpu")), Cell(t("col.gpu_memory"), "num")) + tuple(
            Cell(t("sens.largest", axis=x_title), "num") for _, _, x_title in columns)
        rows = []
        for g, limit in series_list[0].gpu_limits:
            rows.append((Cell(g), Cell(gib(limit), "num")) + tuple(
                _runs_out(s.xs, dict(s.fits)[g], t, fmt, s.cut) for s, fmt, _ in columns))
        sections.append(SensitivitySection(f"sensitivity-{n}", label, tuple(figures),
                                           Table(headers, tuple(rows), "sens")))
    return tuple(sections)


def _term_rows(terms: Sequence[Term], t: Catalogue, prefix: str = "") -> tuple[tuple[Cell, ...], ...]:
    return tuple((Cell(breakable(term.name), "code"), Cell(t.label(prefix + term.name, term.label)),
                  Cell(t.unit(term.unit)), Cell(to_text(term.expr), "formula"),
                  Cell(t.source(prefix + term.name, term.source), "source")) for term in terms)


def _input_default(i: Input) -> str:
    if i.default in ("", None):
        return "—"
    return format_count(i.default) if isinstance(i.default, int) else f"{i.default:g}" if isinstance(
        i.default, float) else str(i.default)


def _input_allowed(i: Input, t: Catalogue) -> str:
    if i.catalog:
        return t(f"method.inputs.catalog.{i.catalog}")
    if i.choices:
        return ", ".join(i.user_choices)
    if i.limits:
        lo, hi = i.limits
        return f"{lo:g}–{hi:g}" if i.decimal else f"{format_count(lo)}–{format_count(hi)}"
    return "—"


def _input_reads(i: Input, t: Catalogue) -> str:
    """The workloads whose result the input changes (and the engine it needs)."""
    words = t("list.sep").join(t(f"method.inputs.{w}") if w == FROZEN else t(f"workload.{w}")
                                   for w in i.applies) if i.applies else t("method.inputs.all")
    if i.readers:  # read by its workloads only as an RLHF role: said so, with the other input it needs
        words = t(f"method.inputs.{i.readers}")
    if i.only_with and not (i.readers and i.only_with[0] == "gen_len"):  # a rollout generates by definition
        name, values = i.only_with
        wanted = f"≥ {values.start}" if isinstance(values, range) else f"= {', '.join(values)}"
        words += t("punct.open") + f"{name} {wanted}" + t("punct.close")
    return words


# Inputs the command line declares apart from the input table: --model sits beside --config (a model
# given by its config file); --workload also offers the RLHF algorithms (cli._scenario_options).
CLI_OWN = {"model": "--model", "workload": "--workload"}


def inputs_table(t: Catalogue) -> Table:
    """The method section's inputs: name, meaning, default, allowed values, command-line option and the
    workloads that read it, one row per entry of inputs.INPUTS and then of RLHF_INPUTS."""
    headers = tuple(Cell(t(f"method.inputs.col.{c}")) for c in ("name", "label", "default", "allowed", "option",
                                                                 "reads"))
    items = [(i, "") for i in INPUTS] + [(i, "rlhf") for i in RLHF_INPUTS]
    rows = tuple((Cell(breakable(i.name), "code"), Cell(t.label(f"input.{i.name}", i.label)),
                  Cell(_input_default(i), "code"), Cell(_input_allowed(i, t), "" if i.catalog else "code"),
                  Cell(i.option or CLI_OWN.get(i.name, "—"), "code"),
                  Cell(t("method.inputs.rlhf", algorithms=t("list.sep").join(a.upper() for a in rlhf_readers(i.name)))
                       if group else _input_reads(i, t))) for i, group in items)
    groups = tuple(t(f"method.inputs.group.{g or 'scenario'}") if n == 0 or items[n - 1][1] != g else ""
                   for n, (_, g) in enumerate(items))
    return Table(headers, rows, "inputs", row_groups=groups)


def _method(report: Report, t: Catalogue, full: bool = True
            ) -> tuple[tuple[TermGroup, ...], Table, tuple[TermGroup, ...], Table]:
    """Term groups, assumptions, lookup tables and GPU types. full=False (the management PDF, the method on a
    page): only the MANAGEMENT_TERM_GROUPS, no assumptions and no lookup tables, the GPU types without their
    sources."""
    headers = tuple(Cell(t(f"method.col.{c}")) for c in ("name", "label", "unit", "formula", "source"))
    groups: dict[str, list[Term]] = {}
    for term in ROLE_TERMS:
        if full or term.group in MANAGEMENT_TERM_GROUPS:
            groups.setdefault(term.group, []).append(term)
    out = [TermGroup(t.get(f"term_group.{g}", g), Table(headers, _term_rows(ts, t), "terms"))
           for g, ts in groups.items()]
    seen = set()
    for r in report.results.rows() if full else ():
        if r.is_group:
            key = (tuple(n for n, _ in r.estimate.scenario.roles), r.estimate.scenario.placement)
            if key in seen:
                continue
            seen.add(key)
            roles = t("list.sep").join(t(f"role.{n}") for n in key[0])
            placement = t(f"placement.{key[1]}") + (t("list.sep") + t("rollout_placement.engines apart")
                                                     if ROLLOUT in key[0] else "")  # the terms' layout, not a group's
            out.append(TermGroup(t("term_group.rlhf", roles=roles, placement=placement),
                                 Table(headers, _term_rows(group_terms(*key), t, "group."), "terms")))
    a_rows = tuple((Cell(breakable(a.name), "code"), Cell(t.label(a.name, a.label)),
                    Cell(format_assumption(report.assumptions[a.name], a.unit, t), "num"),
                    Cell(t.label(a.name + ".help", a.help), "source")) for a in (ASSUMPTIONS if full else ()))
    assumptions = Table(tuple(Cell(t(f"method.col.{c}")) for c in ("name", "label", "value", "note")), a_rows,
                        "assumptions")
    lookups = []
    for table in LOOKUP_TABLES if full else ():
        head = (Cell(breakable(table.key), "code"),) + tuple(Cell(breakable(c), "code num") for c in table.columns) + (
            Cell(t("method.col.note")),)
        rows = tuple((Cell(breakable(name), "code"),) + tuple(Cell(f"{row[c]:g}", "num") for c in table.columns)
                     + (Cell(t.source(f"{table.name}.{name}", table.notes.get(name, "")), "source"),)
                     for name, row in table.rows.items())
        lookups.append(TermGroup(table.name, Table(head, rows, "lookup")))
    columns = ("name", "mib", "gib", "gb", "purchase", "hourly") + (("source",) if full else ())
    g_head = tuple(Cell(t(f"gpu.col.{c}"), "num" if c not in ("name", "source") else "") for c in columns)
    g_rows = tuple(((Cell(g.name), Cell(format_count(g.memory_mib), "num"), Cell(gib(g.memory_bytes), "num"),
                     Cell(f"{g.memory_bytes / GB:,.2f}", "num"), Cell(usd(g.price_purchase_usd), "num"),
                     Cell(usd_hour(g.price_per_hour_usd), "num"))
                    + ((Cell(f"{t.text(g.memory_source)} {t('gpu.price_source')}{t('punct.colon')}"
                             f"{t.text(g.price_source)}", "source"),)
                       if full else ()))
                   for name, g in report.gpus.items() if name in report.gpu_types)
    return tuple(out), assumptions, tuple(lookups), Table(g_head, g_rows, "gpus")


def _explanation(text: str, figures: Mapping[str, str]) -> tuple[TextPart, ...]:
    """Split 'a {key} b' into text and figure parts (unknown {names} stay as written)."""
    parts, pos = [], 0
    for m in PLACEHOLDER.finditer(text):
        if m.group(1) not in figures:
            continue
        if m.start() > pos:
            parts.append(TextPart(text[pos:m.start()]))
        parts.append(TextPart(figures[m.group(1)], True))
        pos = m.end()
    if pos < len(text):
        parts.append(TextPart(text[pos:]))
    return tuple(parts)


def _notes(report: Report, t: Catalogue, full: bool = True) -> tuple[NoteCard, ...]:
    """The note cards. full=False (the management PDF): a card's figure table leaves out the figures its
    explanation states (in bold), which is all of them in the bundled notes, and the card is brief (below)."""
    zh = t.lang == "zh"
    cards = []
    for n in report.notes:
        values = {f.key: format_figure(f.value, f.unit) for f in n.figures}
        views = {f.key: NoteFigureView(f.label_zh if zh else f.label_en, values[f.key]) for f in n.figures}
        explanation = n.explanation_zh if zh else n.explanation_en
        stated = set() if full else set(PLACEHOLDER.findall(explanation))
        # the management PDF's card is brief: the claim in the reader's language, without the article's title and
        # the correction's sources (the HTML report's cards have them)
        cards.append(NoteCard(f"note-{slug(n.id)}", n.id, n.claim_zh if zh or full else "", "" if zh else n.claim_en,
                              ((n.article_zh or n.article) if zh else n.article) if full else "",
                              n.setting_zh if zh else n.setting_en,
                              t(f"note_verdict.{n.verdict}"), f"badge verdict-{n.verdict}",
                              tuple(v for k, v in views.items() if k != n.error and k not in stated),
                              _explanation(explanation, values),
                              ((n.source_zh or n.source) if zh else n.source) if full else "", views.get(n.error)))
    return tuple(cards)


def _words(t: Catalogue) -> Callable[[str, str], str]:
    """A scenario label's value words in the report's language ('workload.full', 'placement.separate')."""
    return lambda axis, value: t(f"{axis}.{value}")


def _first_of_each_group(report: Report, limit: int) -> list[Result]:
    """The first `limit` results of each scenario group, in the report's order (only those estimated)."""
    return [r.result() for matrix in report.results.matrices()
            for r in itertools.islice(report.results.rows(matrix), limit)]


def _appendix(report: Report, t: Catalogue, pdf: bool, listed: bool = True) -> tuple[Table, str, Table, str]:
    """The scenario table and its note, the skipped combinations and theirs. Each scenario group lists
    its first HTML_SCENARIO_ROWS (PDF: PDF_SCENARIO_ROWS) scenarios, the note says so. listed=False
    (the management PDF without --pdf-appendix): neither table has rows, the notes say where they are.

    The PDF gets the lean form of the scenario table (the columns' media): scenario groups as heading
    rows instead of a column, no peak-phase or budget (× k) column (the fit mark says whether the budget
    fits), the fit mark beside the headroom."""
    k = report.assumptions["safety_factor"]
    limit = PDF_SCENARIO_ROWS if pdf else HTML_SCENARIO_ROWS
    shown = _first_of_each_group(report, limit) if listed else []
    labels: dict[tuple, str] = {}
    for matrix in dict.fromkeys(r.matrix for r in shown):
        for key, label in _Configurations(report, matrix, t).labels(r for r in shown if r.matrix == matrix).items():
            labels[(matrix, key)] = label

    def fit_css(r: Result) -> str:
        state = _fit_state(r.estimate.values)
        return "num" if state == "yes" else f"num fit-{state}"

    def mark(r: Result) -> Cell:
        state = _fit_state(r.estimate.values)
        return Cell(t(f"fit.{state}.mark"), "mark" if state == "yes" else f"mark fit-{state}", title=t(f"fit.{state}"))

    def phase(r: Result) -> Cell:
        return Cell(t("phase.rlhf") if r.is_group else t(f"phase.{PHASE_NAMES[int(r.estimate['peak_phase'])]}"))

    columns = (
        Column(Cell("#", "num col-index"), lambda r: Cell(str(r.index), "num")),
        Column(Cell(t("col.matrix")), lambda r: Cell(report.matrix_name_in(r.matrix, t.lang)), "screen"),
        Column(Cell(t("breakdown.config"), "col-config"),
               lambda r: Cell(labels[(r.matrix, _config_key(r))], title=r.label)),
        Column(Cell(t("col.gpus"), "col-gpus"),
               lambda r: Cell(f"{r.total_gpus} × {r.gpu}", sort=f"{r.gpu} {r.total_gpus:06d}")),
        Column(Cell(t("col.phase")), phase, "screen"),
        Column(Cell(t("col.device_total"), "num"), lambda r: Cell(gib(r.estimate["device_total"]), fit_css(r))),
        Column(Cell(t("col.budget", k=f"{k:g}"), "num"), lambda r: Cell(gib(r.estimate["recommended"]), fit_css(r)),
               "screen"),
        # the PDF puts the mark after the headroom in one cell: a cell costs WeasyPrint more than its text
        Column(Cell(t("col.headroom"), "num"), lambda r: Cell(gib(r.estimate["headroom_bytes"]), fit_css(r)),
               pdf_cell=lambda r: Cell(f"{gib(r.estimate['headroom_bytes'])} {mark(r).text}", fit_css(r))),
        Column(Cell(t("col.fit"), "col-fit"), mark, "html"),
        Column(Cell(t("col.purchase"), "num"), lambda r: Cell(usd(r.estimate["purchase_usd"]), "num")),
    )
    groups, previous = [], None
    for r in shown:
        groups.append(report.matrix_name_in(r.matrix, t.lang) if r.matrix != previous else "")
        previous = r.matrix
    total = format_count(len(report.results))
    note = (t("appendix.elsewhere", total=total) if not listed
            else t("appendix.truncated", n=format_count(limit), shown=format_count(len(shown)), total=total)
            if len(shown) < len(report.results) else "")
    # Row anchors serve links into the HTML; in the PDF nothing links to them and each one costs
    # WeasyPrint a named destination.
    scenarios = build_table(columns, shown, pdf, "scenarios sortable",
                            row_ids=() if pdf else tuple(f"s{r.index}" for r in shown),
                            row_groups=tuple(groups), group_css="group print-only")
    if listed:
        counts: dict[tuple[str, str, str], int] = {}
        for s in report.skipped:
            key = (s.matrix, s.scenario.label(_words(t)), t(f"skip.{s.reason.code}", **s.reason.values))
            counts[key] = counts.get(key, 0) + 1
        skipped = Table((Cell(t("col.matrix")), Cell(t("skipped.combination")), Cell(t("skipped.reason")),
                         Cell(t("skipped.count"), "num")),
                        tuple((Cell(report.matrix_name_in(m, t.lang)), Cell(label), Cell(reason), Cell(str(c), "num"))
                              for (m, label, reason), c in counts.items()), "skipped")
        skipped_note = ""
    else:  # the management PDF says why, rule by rule (its first combination's reason), and how often
        rules: dict[str, list] = {}
        for s in report.skipped:
            rules.setdefault(s.reason.code, [s, 0])[1] += 1
        skipped = Table((), (), "skipped")
        skipped_note = t("appendix.skipped_elsewhere", n=len(report.skipped), rules=t("list.clauses").join(
            t("appendix.skipped_rule", reason=t(f"skip.{first.reason.code}", **first.reason.values), n=format_count(n))
            for first, n in rules.values())) if report.skipped else ""
    return scenarios, note, skipped, skipped_note


# ---------------------------------------------------------------------------------------------
# Validation: the estimate against measured and published figures

# How each published metric is printed in the unit its label names: scale, decimals below 100.
METRIC_FORMATS = {"train_tokens_per_s_per_gpu": (1, 0), "tpot_s": (1000, 1), "ttft_s": (1000, 1),
                  "output_tokens_per_s": (1, 1), "latency_s": (1, 3), "kv_tokens": (1, 0), "kv_gib": (1, 2),
                  "gpu_blocks": (1, 0), "max_concurrency": (1, 2), "allocated_peak_gib": (1, 2), "host_optimizer_seconds": (1, 2),
                  "offload_step_seconds": (1, 2), **{k: (1, 1) for k in RLHF_TIME_KEYS}}


def metric_value(value: float, metric: str) -> str:
    """A published or estimated figure; from 100 up, whole numbers (decimals there are noise)."""
    scale, decimals = METRIC_FORMATS[metric]
    return f"{value * scale:,.{decimals if abs(value * scale) < 100 else 0}f}"


def source_link(source: str) -> Cell:
    """A published figure's source: a short label linking to its address; the full citation as tooltip."""
    url = source.split()[0]
    parts = urlsplit(url)
    path = [p for p in parts.path.split("/") if p]
    if parts.netloc == "github.com" and len(path) >= 2:
        label = "/".join(path[:2]) + (f" #{path[3]}" if len(path) >= 4 and path[2] in ("issues", "pull") else "")
    elif parts.netloc == "arxiv.org" and path:
        label = f"arXiv:{path[-1]}"
    else:
        label = parts.netloc or source
    return Cell(label, "source", title=source, href=url)


def run_name(name: RunName, t: Catalogue) -> str:
    """'Llama-2-7b · LoRA · 1 × A10G · lit-gpt' as the source names the run, the workload translated (its cells
    are marked "as-published": quoted as the source wrote them, in its language)."""
    parts = [name.model] + ([t(f"workload.{name.workload}")] if name.workload else []) + [name.setup]
    if name.seq_len:
        parts.append(t("validation.tokens", n=format_count(name.seq_len)))
    return " · ".join(parts)


def _error_cell(error: float, target: float) -> Cell:
    """The error, red beyond the comparison's target (such a row carries its reason in the note column)."""
    return Cell(percent(error, 2, signed=True), "num fit-no" if abs(error) > target else "num")


def _miss(error: float, target: float, miss: str, t: Catalogue) -> str:
    """What is known about a miss, where the error is beyond the target."""
    return t.source(miss, miss) if abs(error) > target and miss else ""


def _stats(label: str, errors: Sequence[float], t: Catalogue) -> str:
    st = error_stats(errors)
    if st["figures"] == 1:
        return t("validation.stats_one", label=label, error=percent(st["max_abs_error"], 2))
    return t("validation.stats", label=label, n=st["figures"], median=percent(st["median_abs_error"], 2),
             max=percent(st["max_abs_error"], 2))


def _excluded(excluded: Sequence[Excluded], t: Catalogue) -> Table:
    """Published records left out of a comparison, one row per reason."""
    by_reason: dict[str, list[str]] = {}
    for x in excluded:
        by_reason.setdefault(t.source(x.why, x.why), []).append(run_name(x.name, t))
    return Table((Cell(t("validation.reason")), Cell(t("validation.figures"))),
                 tuple((Cell(why, "source"), Cell(t("list.sep").join(names), "as-published"))
                       for why, names in by_reason.items()),
                 "excluded")


SPLITS = ("holdout", "fit")  # held-out rows first: the accuracy the section states is theirs


def _by_split(items: Sequence[Item], split: Callable[[Item], str], t: Catalogue) -> tuple[list[Item], tuple[str, ...]]:
    """The items, held-out ones first, and the heading row that opens each split (fit rows are
    residuals of a fit, not a measure of accuracy: the heading says so)."""
    ordered = sorted(items, key=lambda x: SPLITS.index(split(x)))
    groups = tuple(t(f"validation.rows.{split(x)}") if i == 0 or split(ordered[i - 1]) != split(x) else ""
                   for i, x in enumerate(ordered))
    return ordered, groups


def _validation_table(columns: list[Column], items: Sequence, split: Callable, note: Callable[[Item], str],
                      t: Catalogue, pdf: bool, css: str) -> Table:
    """Rows grouped by split; the reason column only where a row has one (an error beyond the target, a
    published run the estimate does not fit): a reason the row above gave in full reads 'As above'."""
    ordered, groups = _by_split(items, split, t)
    notes = [note(x) for x in ordered]
    if any(notes):
        shown = {id(x): t("validation.as_above") if i and n and n == notes[i - 1] and not groups[i] else n
                 for i, (x, n) in enumerate(zip(ordered, notes))}
        columns = columns + [Column(Cell(t("validation.note"), "col-note"), lambda x: Cell(shown[id(x)], "source"))]
    return build_table(columns, ordered, pdf, css, row_groups=groups)


def _measured_section(rows: Sequence[ValidationRow], t: Catalogue, pdf: bool) -> ValidationSection:
    target = TARGETS["measured"]
    columns = [
        Column(Cell(t("validation.case"), "col-case"), lambda r: Cell(r.case_id, "code")),
        Column(Cell(t("validation.file"), "col-file"), lambda r: Cell(r.source, "code")),
        Column(Cell(t("validation.measured"), "num"), lambda r: Cell(gib(r.measured_bytes), "num")),
        Column(Cell(t("validation.estimated_gib"), "num"), lambda r: Cell(gib(r.estimated_bytes), "num")),
        Column(Cell(t("validation.error"), "num col-error"), lambda r: _error_cell(r.error, target)),
        Column(Cell(t("validation.phase")), lambda r: Cell(t(f"measured_phase.{r.measured_phase}"))),
    ]
    holdout = tuple(r.error for r in rows if r.split == "holdout")
    accuracy = (Accuracy(t("validation.group.holdout"), holdout, target),) if holdout else ()
    summary = (t("validation.measured_summary", cases=len(rows), fit=len(rows) - len(holdout),
                 holdout=len(holdout), target=percent(target, 0),
                 within=sum(abs(e) <= target for e in holdout)),) if rows else (t("validation.none"),)
    summary += tuple(_stats(a.label, a.errors, t) for a in accuracy)
    models = len({r.case_id.split("/")[0] for r in rows})
    table = _validation_table(columns, rows, lambda r: r.split, lambda r: _miss(r.error, target, r.miss, t), t, pdf,
                              "validation measured")
    return ValidationSection("validation-measured", t("validation.measured_title"),
                             t("validation.measured_intro", models=models), summary, table, _excluded((), t), accuracy)


def _finetune_section(rows: Sequence[ValidationRow], excluded: Sequence[Excluded], t: Catalogue,
                      pdf: bool) -> ValidationSection:
    target = TARGETS["finetune"]
    columns = [
        Column(Cell(t("validation.figure"), "col-figure"), lambda r: Cell(run_name(r.name, t), "as-published")),
        Column(Cell(t("validation.source"), "col-source"), lambda r: source_link(r.source)),
        Column(Cell(t("validation.level")), lambda r: Cell(t(f"validation.level.{r.level}"))),
        Column(Cell(t("validation.published_gib"), "num"), lambda r: Cell(gib(r.measured_bytes), "num")),
        Column(Cell(t("validation.estimated_gib"), "num"), lambda r: Cell(gib(r.estimated_bytes), "num")),
        Column(Cell(t("validation.error"), "num col-error"), lambda r: _error_cell(r.error, target)),
    ]
    summary: tuple[str, ...] = ()
    held_out = [r for r in rows if r.split == "holdout"]
    accuracy = (Accuracy(t("validation.all_levels"), tuple(r.error for r in held_out), target),) if held_out else ()
    if held_out:
        summary = (t("validation.targets.finetune", target=percent(target, 0)),
                   _stats(accuracy[0].label, accuracy[0].errors, t)) + tuple(
            _stats(t("validation.at_level", level=t(f"validation.level.{level}")),
                   [r.error for r in held_out if r.level == level], t)
            for level in dict.fromkeys(r.level for r in held_out))
    table = _validation_table(columns, rows, lambda r: r.split, lambda r: _miss(r.error, target, r.miss, t), t, pdf,
                              "validation published")
    return ValidationSection("validation-finetune", t("validation.finetune_title"),
                             t("validation.finetune_intro", compared=len(rows), excluded=len(excluded)),
                             summary, table, _excluded(excluded, t), accuracy)


def _figures_section(dataset: str, figures: Sequence[PublishedFigure], excluded: Sequence[Excluded], t: Catalogue,
                     pdf: bool) -> ValidationSection:
    """Training throughput, decode times or serving KV pools: one row per published number. Where every
    row publishes the same metric, its name moves into the value headers."""
    target = TARGETS[dataset]
    metrics = {f.metric for f in figures}
    one = t(f"validation.metric.{next(iter(metrics))}") if len(metrics) == 1 else ""
    columns = [
        Column(Cell(t("validation.figure"), "col-figure"), lambda f: Cell(run_name(f.name, t), "as-published")),
        Column(Cell(t("validation.source"), "col-source"), lambda f: source_link(f.source)),
    ] + ([] if one else [
        Column(Cell(t("validation.metric"), "col-metric"), lambda f: Cell(t(f"validation.metric.{f.metric}")))]) + [
        Column(Cell(t("validation.published_in", unit=one) if one else t("validation.published"), "num col-value"),
               lambda f: Cell(metric_value(f.published, f.metric), "num")),
        Column(Cell(t("validation.estimated_in", unit=one) if one else t("validation.estimated"), "num col-value"),
               lambda f: Cell(metric_value(f.estimated, f.metric), "num")),
        Column(Cell(t("validation.error"), "num col-error"), lambda f: _error_cell(f.error, target)),
    ]
    ran = [f for f in figures if f.memory]  # published training runs ran: does the estimate fit them?
    if ran:
        columns.append(Column(Cell(t("validation.memory_gib"), "num col-value"), lambda f: Cell(
            t("validation.memory_of", total=gib(f.memory[0]), gpu=gib(f.memory[1])), "num" if f.fits else "num fit-no")
            if f.memory else Cell("", "num")))  # an RLHF run's verdict stands on its first figure
    summary: tuple[str, ...] = ()
    held_out = [f for f in figures if f.use == "holdout"]
    if dataset == "decode":  # the first token is a prefill: compared apart from the decode figures
        groups = {t("validation.decode_figures"): [f.error for f in held_out if f.metric != "ttft_s"],
                  t("validation.ttft_figures"): [f.error for f in held_out if f.metric == "ttft_s"]}
    else:
        groups = {t("validation.group.holdout"): [f.error for f in held_out]}
    accuracy = tuple(Accuracy(label, tuple(errors), target) for label, errors in groups.items() if errors)
    if figures:
        summary = (t(f"validation.targets.{dataset}", target=percent(target, 0)),)
        summary += tuple(_stats(a.label, a.errors, t) for a in accuracy)
    if ran:  # one verdict per run
        fit = sum(f.fits for f in ran)
        summary += (t("validation.memory_summary" if fit < len(ran) else "validation.memory_summary_all", fit=fit,
                      runs=len(ran)),)
    def note(f: PublishedFigure) -> str:  # the time's miss, then why the run does not fit the estimate's memory
        memory = "" if not f.memory or f.fits else t("validation.memory_miss", why=t.source(f.memory_miss, f.memory_miss))
        time = _miss(f.error, target, f.miss, t)
        return t("validation.miss_and_memory", miss=time, memory=memory) if time and memory else time or memory

    table = _validation_table(columns, figures, lambda f: f.use, note, t, pdf,
                              "validation timing" + (" one-metric" if one else ""))
    return ValidationSection(f"validation-{dataset}", t(f"validation.{dataset}_title"),
                             t(f"validation.{dataset}_intro", compared=len({f.id for f in figures}),
                               excluded=len(excluded)),
                             summary, table, _excluded(excluded, t), accuracy)


def _validation(report: Report, t: Catalogue, pdf: bool) -> tuple[ValidationGroup, ...]:
    measured = [r for r in report.validation if r.kind == "measured"]
    published = [r for r in report.validation if r.kind == "published"]
    excluded = {d: [x for x in report.validation_excluded if x.dataset == d]
                for d in ("finetune", "rlhf_memory", "training", "training_moe", "offload", "decode", "serving", "rlhf")}
    figures = {d: [f for f in report.validation_figures if f.dataset == d]
               for d in ("training", "training_moe", "offload", "decode", "serving", "rlhf")}
    rlhf_memory = [f for f in report.validation_figures if f.dataset == "rlhf_memory"]
    memory = (_measured_section(measured, t, pdf), _finetune_section(published, excluded["finetune"], t, pdf)) + (
        (_figures_section("rlhf_memory", rlhf_memory, excluded["rlhf_memory"], t, pdf),) if rlhf_memory else ())
    time = tuple(_figures_section(d, figures[d], excluded[d], t, pdf) for d in figures if figures[d] or excluded[d])
    return (ValidationGroup("appendix-validation", t("appendix.validation"), memory),) + (
        (ValidationGroup("appendix-time", t("appendix.time"), time),) if time else ())


def _accuracy_table(groups: Sequence[ValidationGroup], t: Catalogue) -> Table:
    """The validation summary: per comparison, its held-out figures, how many are within its target,
    and the median and largest |error|; a heading row per validation group."""
    headers = (Cell(t("validation.summary.col.comparison")),) + tuple(
        Cell(t(f"validation.summary.col.{c}"), "num") for c in ("figures", "target", "within", "median", "max"))
    rows, headings = [], []
    for g in groups:
        accuracy = [(s, a) for s in g.sections for a in s.accuracy]
        for n, (s, a) in enumerate(accuracy):
            st = error_stats(a.errors)
            label = s.title if len(s.accuracy) == 1 else t("validation.summary.row", section=s.title, group=a.label)
            within = sum(abs(e) <= a.target for e in a.errors)
            rows.append((Cell(label), Cell(str(st["figures"]), "num"), Cell(f"±{percent(a.target, 0)}", "num"),
                         Cell(str(within), "num"),
                         Cell(percent(st["median_abs_error"], 2), "num"), Cell(percent(st["max_abs_error"], 2), "num")))
            headings.append(g.title if n == 0 else "")
    return Table(headers, tuple(rows), "accuracy", row_groups=tuple(headings))


# ---------------------------------------------------------------------------------------------
# The decision page (fleet.py)

def _fleet_words(fleet: Fleet, t: Catalogue) -> str:
    return t("decision.and").join(t("decision.pool_owned", n=p.num_gpus, gpu=p.gpu, owned=p.owned_gpus) if p.owned_gpus
                                  else t("decision.pool", n=p.num_gpus, gpu=p.gpu) for p in fleet.pools)


def _gpus_words(pools: Sequence[tuple[str, int]], t: Catalogue) -> str:
    """'8 × H100 and 4 × A100' for (GPU type, count) pairs, those of count 0 left out."""
    return t("decision.and").join(t("decision.pool", n=n, gpu=gpu) for gpu, n in pools if n)


def _weeks(seconds: float) -> float:
    return seconds / SECONDS_PER["w"]


def _band(groups: Sequence[ValidationGroup], anchor: str, t: Catalogue) -> str:
    """'median 4.7 %, largest 25 % over 9 held-out figures' for the first comparison of a validation section."""
    for g in groups:
        for sec in g.sections:
            if sec.anchor == anchor and sec.accuracy:
                errors = sec.accuracy[0].errors
                st = error_stats(errors)
                short = sum(e < 0 for e in errors)
                # most estimates on one side (four in five of five or more: a symmetric band would put about
                # half there): say so, or a median reads as a symmetric band
                key = ("decision.band_one" if len(errors) == 1 else
                       "decision.band_short" if len(errors) >= 5 and short >= 0.8 * len(errors) else "decision.band")
                return t(key, median=percent(st["median_abs_error"]), most=percent(st["max_abs_error"], 0),
                         n=st["figures"], short=short)
    return t("decision.no_band")


def _miss_words(miss: JobMiss, t: Catalogue) -> str:
    if miss.reason == "deadline":
        return t("decision.miss.deadline", gpu=miss.gpu, time=duration(miss.best_seconds, t), n=miss.best_gpus)
    if miss.reason == "skip" and miss.skipped is not None:
        return t("decision.miss.skip", gpu=miss.gpu, why=t(f"skip.{miss.skipped.code}", **miss.skipped.params))
    return t("decision.miss.fit", gpu=miss.gpu, most=miss.most_gpus)


def accuracy_line(validation: Sequence[ValidationGroup], t: Catalogue) -> str:
    """How the time, speed, RLHF and memory figures compare with held-out published ones, in a sentence: beside
    the figures where a meeting reads them (the decision page, or the summary where there is none)."""
    return t("decision.accuracy", time=_band(validation, "validation-training", t),
             speed=_band(validation, "validation-decode", t), rlhf=_band(validation, "validation-rlhf", t),
             memory=_band(validation, "validation-measured", t))


def _decision(report: Report, t: Catalogue, lang: str, validation: Sequence[ValidationGroup]) -> DecisionView | None:
    d = report.decision
    if d is None:
        return None
    pf, best = d.portfolio, d.choice.best
    horizon_weeks = _weeks(pf.horizon_seconds)
    intro = t("decision.intro", n=len(pf.jobs), weeks=f"{horizon_weeks:g}")
    owned = _gpus_words(pf.owned, t)  # "" where nothing is owned
    if owned:
        intro += t("decision.intro_owned", owned=owned, types=pf.max_types)
    accuracy = accuracy_line(validation, t)
    problems = tuple(t("decision.unplaced", job=job.name_in(lang),
                       why="; ".join(_miss_words(m, t) for m in d.planned[job.name].values()))
                     for job in pf.jobs if job.name in d.choice.unplaced)
    # beside owned GPUs the use that decides owning against renting is that of the GPUs bought
    use = "new_use" if owned else "use"
    alternatives = Table(
        tuple(Cell(t(f"decision.alt.{c}"), "" if c == "fleet" else "num")
              for c in ("fleet", "purchase", "own", "rent", use, "break_even")),
        tuple((Cell(_fleet_words(f, t)), Cell(usd(c.purchase_usd), "num"), Cell(usd(c.own_usd), "num"),
               Cell(usd(c.rent_usd), "num"),
               # the use of the GPUs bought: all of the fleet's where nothing is owned
               Cell(percent(c.new_utilisation, 0) if c.new_utilisation is not None else "—", "num"),
               Cell(percent(c.break_even_utilisation, 0) if c.break_even_utilisation is not None else "—", "num"))
              for f in ([best] if best and fleet_id(best) not in map(fleet_id, d.choice.single_type) else [])
              + list(d.choice.single_type)
              for c in (d.costs_of(f),)), "decision-alternatives")
    if best is None:
        return DecisionView(intro, t("decision.none", most=MAX_GPUS) if not problems else t("decision.none_unplaced"),
                            "", accuracy, problems, Table((), ()), None, alternatives)
    c = d.costs_of(best)
    rent_cheaper = c.rent_usd < c.own_usd
    bought = _gpus_words([(p.gpu, p.new_gpus) for p in best.pools], t)
    # the headline says which is cheaper: "Buy …" alone would read as advice to buy where renting is cheaper
    key = ("decision.headline_owned" if not bought else "decision.headline_rent" if rent_cheaper
           else "decision.headline") + ("_beside" if owned and bought else "")
    headline = t(key, fleet=bought, owned=owned, usd=usd(c.purchase_usd), weeks=f"{horizon_weeks:g}", n=len(pf.jobs))
    if not bought:
        own_vs_rent = t("decision.owned_use", use=percent(c.utilisation, 0))
    else:
        cheaper = "decision.rent_cheaper" if rent_cheaper else "decision.own_cheaper"
        own_vs_rent = t(cheaper, own=usd(c.own_usd), rent=usd(c.rent_usd), weeks=f"{horizon_weeks:g}",
                        depreciation=usd(c.depreciation_usd), hosting=usd(c.hosting_usd), energy=usd(c.energy_usd),
                        use=percent(c.new_utilisation, 0))
    if owned and bought:
        own_vs_rent += t("punct.sentence") + t("decision.beyond_owned", owned=owned,
                                               all=percent(c.utilisation, 0))
    if c.break_even_utilisation is not None:
        own_vs_rent += t("punct.sentence") + t("decision.break_even", use=percent(c.break_even_utilisation, 0))
    if c.break_even_months is not None:
        own_vs_rent += t("punct.sentence") + t("decision.break_even_month", months=f"{c.break_even_months:,.0f}",
                               years=f"{report.assumptions['amortisation_years']:g}")
    pool_of = {s.job: (p, s) for p in best.pools for s in p.slots}
    colours = {p.gpu: k * 2 for k, p in enumerate(best.pools)}
    rows, spans = [], []
    for job in pf.jobs:
        pool, slot = pool_of[job.name]
        option = d.planned[job.name][pool.gpu].option
        # the weeks it runs in, counted from 1 as the chart's ticks are
        a = math.floor(_weeks(slot.start_seconds)) + 1
        b = max(a, math.ceil(_weeks(slot.end_seconds) - 1e-9))
        when = t("decision.weeks", a=a, b=b) if a != b else t("decision.week", a=a)
        time = (t("decision.serving_time", hours=f"{job.hours_per_day:g}") if job.kind == "serve"
                else duration(option.seconds, t))
        rows.append((Cell(job.name_in(lang)), Cell(t(f"decision.kind.{job.kind}")), Cell(pool.gpu),
                     Cell(str(option.gpus), "num"), Cell(when), Cell(time, "num"),
                     Cell(f"{option.busy_gpu_hours:,.0f}", "num"),
                     Cell(usd(pool_costs(Pool(pool.gpu, option.gpus, (), option.busy_gpu_hours), pf.horizon_seconds,
                                         report.gpus, report.assumptions)["rent_usd"]), "num")))
        spans.append(charts.Span(job.name_in(lang), _weeks(slot.start_seconds), _weeks(slot.end_seconds),
                                 t("decision.span", n=option.gpus, gpu=pool.gpu), colours[pool.gpu]))
    # beside owned GPUs a job's own rent is not what renting instead of buying costs (the hours above them): said
    rent = "rent_alone" if owned else "rent"
    jobs = Table(tuple(Cell(t(f"decision.col.{c}"), "num" if c in ("gpus", "time", "hours", rent) else "")
                       for c in ("job", "kind", "gpu", "gpus", "when", "time", "hours", rent)), tuple(rows),
                 "decision-jobs")
    labels = [s.row for s in spans] + [s.text for s in spans]
    svg = charts.schedule_chart(spans, length=horizon_weeks, tick=1, tick_label=t("decision.week_tick"),
                                x_title=t("decision.axis"), chart_id="schedule", font_family=_svg_font(lang, labels),
                                title=t("decision.chart"),
                                legend=[charts.Series(p.gpu, p.gpu) for p in best.pools if p.slots],
                                legend_colours=[colours[p.gpu] for p in best.pools if p.slots])
    figure = Figure("decision-schedule", t("decision.chart"), svg, t("decision.chart_caption"))
    return DecisionView(intro, headline, own_vs_rent, accuracy, problems, jobs, figure, alternatives)


# ---------------------------------------------------------------------------------------------

SECTIONS = ("summary", "capacity", "breakdowns", "sensitivity", "method", "notes", "appendix")


def build_view(report: Report, lang: str = "en", *, pdf: bool = False, appendix: bool = True) -> ReportView:
    """Everything the template shows, formatted for one language (pdf: the lean appendix, see _appendix).

    appendix=False, the management PDF: what a meeting reads (#19: summary, capacity matrix, breakdowns,
    method, notes). The sensitivity section is a pointer to the HTML report's curves, the method prints
    the MANAGEMENT_TERM_GROUPS, the note cards leave out the figure tables their explanations state, the
    appendix has the validation summary but no scenario, skipped-combination or validation rows; each of
    these parts says where the rest is (the HTML report, the workbook, the JSON file, or reportgen build
    --pdf-appendix)."""
    t = load_catalogue(lang)
    # string-set drops the spaces around the numbers; the stylesheet puts one space back on each side
    before, rest = t("pdf.page_of").split("{page}")
    between, after = (x.strip() for x in rest.split("{pages}"))
    before = before.strip()
    toc = tuple(TocEntry(s, str(i), t(f"section.{s}")) for i, s in enumerate(SECTIONS, start=1))
    terms, assumptions, lookups, gpu_table = _method(report, t, appendix)
    capacity, legend = _capacity(report, t)
    scenarios, note, skipped, skipped_note = _appendix(report, t, pdf, appendix)
    validation = _validation(report, t, pdf)
    # the management PDF leaves out the curves (a sixth of its render) and says where they are
    sensitivity_note = t("sens.elsewhere") if report.sensitivity and not appendix else ""
    sensitivity = () if sensitivity_note else _sensitivity(report, t, lang)
    # the curves are a single model's: a preset of RLHF groups alone has none to draw, whether or not they fit
    sensitivity_none = t("sens.none_rlhf" if all(r.is_group for r in (rec.sample for rec in report.recommendations))
                         else "sens.none_available")
    # and the breakdowns (#34: a meeting's PDF is the decision, the plan, the capacity matrix, the notes, the
    # method on a page and the validation summary)
    breakdowns_note = t("breakdown.elsewhere") if not appendix else ""
    meta = ((t("meta.preset"), report.preset.name), (t("meta.generated"), format_date(report.generated_at)),
            (t("meta.version"), f"reportgen {report.version}"),
            (t("meta.scenarios"), t("meta.scenarios_value", n=len(report.results), skipped=len(report.skipped))))
    return ReportView(
        lang=lang, html_lang=t.html_lang, t=t, title=report.preset.title_in(lang), preset_name=report.preset.name,
        description=report.preset.description_in(lang), date=format_date(report.generated_at),
        generated_at=report.generated_at, version=report.version,
        meta=meta, page=PageStrings(before, between, after), toc=toc,
        safety_factor=f"{report.assumptions['safety_factor']:g}",
        summary_intro=t("summary.intro", k=f"{report.assumptions['safety_factor']:g}") + (
            t("punct.sentence") + t("summary.datacenter_only", gpus=t("list.sep").join(
                dict.fromkeys(g for _, gpus, _ in report.left_out for g in gpus)),
                n=f"{sum(n for _, _, n in report.left_out):,}") if report.left_out else ""),
        decision=_decision(report, t, lang, validation), accuracy_line=accuracy_line(validation, t),
        verdicts=_plan(report, t),
        plan_headers=tuple(Cell(t(f"plan.col.{c}", k=f"{report.assumptions['safety_factor']:g}"),
                                "" if c in ("gpu", "layout", "mark") else "num")
                           for c in ("gpu", "gpus", "layout", "device", "budget", "capacity", "purchase",
                                     "hourly", "speed", "mark")),
        capacity=capacity, capacity_legend=legend,
        breakdowns=() if breakdowns_note else _breakdowns(report, t, lang, pdf), breakdowns_note=breakdowns_note,
        sensitivity=sensitivity, sensitivity_note=sensitivity_note, sensitivity_none=sensitivity_none, terms=terms, assumptions=assumptions, lookup_tables=lookups,
        gpu_table=gpu_table, inputs=inputs_table(t) if appendix else None,
        method_note="" if appendix else t("method.elsewhere"), notes=_notes(report, t, appendix),
        notes_note="" if appendix else t("notes.figures_elsewhere"), scenarios=scenarios, scenarios_note=note,
        skipped=skipped, skipped_note=skipped_note, accuracy=_accuracy_table(validation, t),
        validation=validation if appendix else (), validation_note="" if appendix else t("validation.elsewhere"),
    )
