"""The JSON writer: the full scenario list with every term, the plan summary and the notes.

Other tools and the tests read this file; its per-scenario objects are exactly what
`reportgen estimate --json` prints for the same inputs.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator

from ..report import BlockResults, PlanEntry, Report
from .json_columns import block_texts, dump, dump_bytes, scenario_json
from ..validation import published_summary


def _entry(e: PlanEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"gpu": e.gpu, "fits": e.fits, "scenarios_tried": e.num_scenarios}
    if e.result:
        r = e.result
        out.update({"scenario": r.index, "name": r.label, "num_gpus": r.total_gpus,
                    "zero_stage": r.lead.zero_stage, "tp_size": r.lead.tp_size,
                    "device_total_bytes": int(r.estimate["device_total"]),
                    "recommended_bytes": int(r.estimate["recommended"]),
                    "headroom_bytes": int(r.estimate["headroom_bytes"]),
                    "purchase_usd": r.estimate["purchase_usd"], "per_hour_usd": r.estimate["hourly_usd"],
                    "rent_usd": r.estimate.rent_usd})
    return out


def report_json(report: Report, scenarios: bool = True) -> dict[str, Any]:
    """The JSON document; scenarios=False leaves the scenario list None, for json_chunks to stream in
    its place."""
    p = report.preset
    return {
        "reportgen_version": report.version,
        "generated_at": report.generated_at,
        "preset": {"name": p.name, "title": p.title, "description": p.description},
        "units": {"bytes": "integers", "GB": 10**9, "GiB": 2**30},
        "assumptions": report.assumptions,
        "gpus": {n: {**g.__dict__, "memory_bytes": g.memory_bytes} for n, g in report.gpus.items()
                 if n in report.gpu_types},
        "scenarios": [scenario_json(r) for r in report.results] if scenarios else None,
        "skipped": [{"matrix": s.matrix, "name": s.label, "reason": s.reason_text, "code": s.reason.code}
                    for s in report.skipped],
        "plan": [{"model": rec.model, "workload": rec.workload, "requirement": dict(rec.requirement.settings),
                  "recommended": _entry(rec.best) if rec.best else None,
                  "cheapest_to_rent": _entry(rec.cheapest_to_rent) if rec.cheapest_to_rent else None,
                  "per_gpu_type": [_entry(e) for e in rec.entries]} for rec in report.recommendations],
        "notes": [note_json(n) for n in report.notes],
        "validation": {"summary": report.validation_summary,
                       "published_summary": published_summary(list(report.validation)),
                       "cases": [{"id": v.case_id, "kind": v.kind, "level": v.level, "split": v.split,
                                  "measured_bytes": v.measured_bytes, "estimated_bytes": v.estimated_bytes,
                                  "error": v.error, "source": v.source, "miss": v.miss} for v in report.validation],
                       "figures": [{"id": f.id, "dataset": f.dataset, "use": f.use, "metric": f.metric,
                                    "published": f.published, "estimated": f.estimated, "error": f.error,
                                    "source": f.source, "miss": f.miss} for f in report.validation_figures],
                       "excluded": [{"id": x.id, "dataset": x.dataset, "source": x.source, "why": x.why}
                                    for x in report.validation_excluded]},
    }


def note_json(n) -> dict[str, Any]:
    return {"id": n.id, "article": n.article, "claim_zh": n.claim_zh, "claim_en": n.claim_en,
            "setting_en": n.setting_en, "setting_zh": n.setting_zh, "verdict": n.verdict,
            "explanation_en": n.explanation_en, "explanation_zh": n.explanation_zh, "source": n.source,
            "scenarios": {k: s.inputs() for k, s in n.scenarios.items()},
            "figures": [{"key": f.key, "label_en": f.label_en, "label_zh": f.label_zh, "unit": f.unit,
                         "value": f.value} for f in n.figures]}


LINES_PER_WRITE = 1000  # scenario lines joined into one write


def json_chunks(report: Report) -> Iterator[bytes]:
    """The file's UTF-8 bytes, one top-level key per line and one scenario per line: diff-friendly; the
    C encoder keeps a 100,000-scenario file fast, and writing chunk by chunk keeps memory flat."""
    data = report_json(report, scenarios=False)
    yield b"{\n"
    for n, (key, value) in enumerate(data.items()):
        comma = "," if n < len(data) - 1 else ""
        if key in ("scenarios", "skipped"):
            yield f"{dump(key)}: [".encode()
            texts = scenario_texts(report) if key == "scenarios" else map(dump_bytes, value)
            lead = b"\n  "
            while batch := list(itertools.islice(texts, LINES_PER_WRITE)):
                yield lead + b",\n  ".join(batch)
                lead = b",\n  "
            yield f"\n]{comma}\n".encode()
        else:
            yield f"{dump(key)}: {dump(value)}{comma}\n".encode()
    yield b"}\n"


def scenario_texts(report: Report) -> Iterator[bytes]:
    """Each scenario's JSON text (UTF-8): a sweep block's rendered from its term columns (no object per
    scenario), the others' from their Result objects; the same text either way."""
    for part in getattr(report.results, "parts", (report.results,)):
        if isinstance(part, BlockResults):
            yield from block_texts(part)
        else:
            yield from (dump_bytes(scenario_json(r)) for r in part)


def write(report: Report, path, lang: str = "en") -> None:
    with open(path, "wb") as out:
        out.writelines(json_chunks(report))
