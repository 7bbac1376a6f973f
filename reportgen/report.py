"""The Report: everything every writer needs, computed once and purely.

build_report(preset, expansion, estimator, …) -> Report. Writers (JSON, workbook, HTML, PDF) read
the Report; the numbers they show are its terms and fields.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Mapping, Sequence

from .catalog import GpuSpec
from .estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario
from .models import ModelSpec
from .notes import Note
from .presets import Expansion, Preset, Skipped
from .validation import ValidationRow, summary

SENSITIVITY_LENGTHS = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
SENSITIVITY_BATCHES = (1, 2, 4, 8, 16, 32, 64)


@dataclass(frozen=True)
class Result:
    """One estimated scenario of the sweep."""
    index: int  # 1-based, stable: the workbook row order and the HTML anchors follow it
    matrix: str
    estimate: Estimate | GroupEstimate

    @property
    def is_group(self) -> bool:
        return isinstance(self.estimate, GroupEstimate)

    @property
    def lead(self) -> Scenario:
        """The scenario that names the row: itself, or an RLHF group's actor/policy."""
        return self.estimate.scenario.roles[0][1] if self.is_group else self.estimate.scenario

    @property
    def label(self) -> str:
        return self.estimate.scenario.label()

    @property
    def workload(self) -> str:
        return self.estimate.scenario.algorithm if self.is_group else self.lead.workload

    @property
    def model(self) -> str:
        return self.lead.model

    @property
    def gpu(self) -> str:
        return self.lead.gpu

    @property
    def total_gpus(self) -> int:
        return int(self.estimate["total_gpus"]) if self.is_group else self.lead.num_gpus

    @property
    def purchase_usd(self) -> float:
        return self.estimate["purchase_usd"]


# The plan's ranking, defined once. Among the results of one model × workload × GPU type whose term
# PLAN_FITS is 1 (the recommended budget fits), the plan takes the first by PLAN_ORDER (Result
# fields: cheapest, then fewest GPUs, then the earliest scenario); across GPU types, the first of
# those picks by the same order. recommend() sorts by it; the workbook's Plan formulas are
# rendered from it (writers/xlsx/plan.py).
PLAN_FITS = "fits_recommended"
PLAN_ORDER = ("purchase_usd", "total_gpus", "index")
plan_key = operator.attrgetter(*PLAN_ORDER)


@dataclass(frozen=True)
class PlanEntry:
    """The cheapest fitting configuration of one model × workload on one GPU type (None: nothing fits)."""
    model: str
    workload: str
    gpu: str
    result: Result | None
    num_scenarios: int  # how many scenarios of the sweep were tried for this cell

    @property
    def fits(self) -> bool:
        return self.result is not None


@dataclass(frozen=True)
class Recommendation:
    """Per model × workload: the overall cheapest fitting option and the per-GPU-type entries."""
    model: str
    workload: str
    best: PlanEntry | None
    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True)
class SensitivitySeries:
    """Device total (bytes per GPU) of a headline scenario as one input varies."""
    result_index: int
    label: str
    axis: str  # "seq_len", "prompt_len" or "batch_size"
    xs: tuple[int, ...]
    device_total_bytes: tuple[int, ...]
    gpu_limits: tuple[tuple[str, int], ...]  # (GPU name, memory bytes) for the "runs out" lines


@dataclass(frozen=True)
class Report:
    preset: Preset
    generated_at: str  # ISO date-time, injected by the caller (SOURCE_DATE_EPOCH honoured there)
    version: str
    assumptions: Mapping[str, float]
    gpus: Mapping[str, GpuSpec]  # with the preset's price overrides
    results: tuple[Result, ...]
    skipped: tuple[Skipped, ...]
    recommendations: tuple[Recommendation, ...]
    sensitivity: tuple[SensitivitySeries, ...]
    notes: tuple[Note, ...]
    validation: tuple[ValidationRow, ...]
    validation_protocol: str
    # The catalogs as the formulas read them (Models rows hold config fields and shape terms), and
    # the model specs (their type and source, for the workbook's catalog sheet).
    tables: Mapping[str, Mapping[str, Mapping[str, float]]] = field(repr=False, compare=False)
    models: Mapping[str, ModelSpec] = field(repr=False, compare=False)

    @cached_property  # read per GPU by the writers; a sweep has 100,000 results
    def gpu_types(self) -> tuple[str, ...]:
        """GPU types used by the sweep, in catalog order."""
        return used_gpu_types(self.results, self.gpus)

    @property
    def validation_summary(self) -> dict[str, float] | None:
        return summary(list(self.validation)) if self.validation else None


def priced_gpus(gpus: Mapping[str, GpuSpec], preset: Preset) -> dict[str, GpuSpec]:
    out = dict(gpus)
    for name, prices in preset.prices.items():
        if name not in out:
            from .errors import unknown_name
            raise unknown_name("GPU", name, gpus, source=preset.source, key_path=f"prices.{name}")
        out[name] = replace(out[name], **prices)
    return out


def used_gpu_types(results: Sequence[Result], gpus: Mapping[str, GpuSpec]) -> tuple[str, ...]:
    """The GPU types some result runs on, in catalog order."""
    used = {r.gpu for r in results}
    return tuple(g for g in gpus if g in used)


def recommend(results: Sequence[Result], gpu_types: Sequence[str]) -> tuple[Recommendation, ...]:
    """Cheapest fitting (recommended budget within GPU memory) per model × workload × GPU type."""
    cells: dict[tuple[str, str], dict[str, list[Result]]] = {}
    for r in results:
        cells.setdefault((r.model, r.workload), {}).setdefault(r.gpu, []).append(r)
    recs = []
    for (model, workload), by_gpu in cells.items():
        entries = []
        for gpu in gpu_types:
            tried = by_gpu.get(gpu, [])
            if not tried:
                continue
            best = min((r for r in tried if r.estimate[PLAN_FITS]), key=plan_key, default=None)
            entries.append(PlanEntry(model, workload, gpu, best, len(tried)))
        best = min((e for e in entries if e.fits), key=lambda e: plan_key(e.result), default=None)
        recs.append(Recommendation(model, workload, best, tuple(entries)))
    return tuple(recs)


def _sensitivity(estimator: Estimator, recs: Sequence[Recommendation], gpus: Mapping[str, GpuSpec],
                 gpu_types: Sequence[str]) -> tuple[SensitivitySeries, ...]:
    limits = tuple((g, gpus[g].memory_bytes) for g in gpu_types)
    series = []
    for rec in recs:
        if rec.best is None or rec.best.result.is_group:
            continue
        r = rec.best.result
        s = r.estimate.scenario
        axis = "prompt_len" if s.workload == "inference" else "seq_len"
        for name, xs in ((axis, SENSITIVITY_LENGTHS), ("batch_size", SENSITIVITY_BATCHES)):
            ys = tuple(int(estimator.estimate(replace(s, **{name: x}))["device_total"]) for x in xs)
            series.append(SensitivitySeries(r.index, r.label, name, xs, ys, limits))
    return tuple(series)


def build_report(preset: Preset, expansion: Expansion, estimator: Estimator, *, generated_at: str, version: str,
                 notes: Sequence[Note] = (), validation: Sequence[ValidationRow] = (),
                 validation_protocol: str = "") -> Report:
    singles = iter(estimator.estimate_all([s for _, s in expansion.scenarios if not isinstance(s, RlhfScenario)]))
    results = [Result(i, matrix, estimator.estimate_group(s) if isinstance(s, RlhfScenario) else next(singles))
               for i, (matrix, s) in enumerate(expansion.scenarios, start=1)]
    gpu_types = used_gpu_types(results, estimator.gpus)
    recs = recommend(results, gpu_types)
    return Report(
        preset=preset, generated_at=generated_at, version=version, assumptions=dict(estimator.assumptions),
        gpus=estimator.gpus, results=tuple(results), skipped=expansion.skipped, recommendations=recs,
        sensitivity=_sensitivity(estimator, recs, estimator.gpus, gpu_types), notes=tuple(notes),
        validation=tuple(validation), validation_protocol=validation_protocol, tables=estimator.tables,
        models=estimator.specs,
    )
