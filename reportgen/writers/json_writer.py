"""The JSON writer: the full scenario list with every term, the plan summary and the notes.

Other tools and the tests read this file; its per-scenario objects are exactly what
`reportgen estimate --json` prints for the same inputs.
"""
from __future__ import annotations

import itertools
from typing import Any, Iterator

from ..planning.fleet import Decision, Fleet, JobMiss, PlannedJob
from ..report.build import BlockResults, PlanEntry, Report
from .json_columns import block_texts, dump, dump_bytes, scenario_json
from ..report.validation import published_summary


def _entry(e: PlanEntry) -> dict[str, Any]:
    out: dict[str, Any] = {"gpu": e.gpu, "fits": e.fits, "scenarios_tried": e.num_scenarios}
    if e.result:
        r = e.result
        out.update({"scenario": r.index, "name": r.label, "num_gpus": r.total_gpus,
                    "gpus_by_type": r.estimate.gpus_by_type(),  # an RLHF group's pools may be on other types
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
        "purchase": decision_json(report.decision) if report.decision else None,
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


def decision_json(d: Decision) -> dict[str, Any]:
    """The fleet decision: the portfolio, each job's plan per GPU type (or why none), the fleet and its schedule,
    and buying against renting (seconds, USD; utilisation as a fraction)."""
    def fleet(f: Fleet) -> dict[str, Any]:
        c = d.costs_of(f)
        return {"pools": [{"gpu": p.gpu, "num_gpus": p.num_gpus, "owned_gpus": p.owned_gpus,
                           "busy_gpu_hours": p.busy_gpu_hours, "new_busy_gpu_hours": p.new_busy_gpu_hours,
                           "schedule": [{"job": s.job, "gpus": s.gpus, "start_seconds": s.start_seconds,
                                         "end_seconds": s.end_seconds} for s in p.slots]} for p in f.pools],
                "purchase_usd": c.purchase_usd, "own_usd": c.own_usd, "depreciation_usd": c.depreciation_usd,
                "hosting_usd": c.hosting_usd, "energy_usd": c.energy_usd, "rent_usd": c.rent_usd,
                "utilisation": c.utilisation, "new_utilisation": c.new_utilisation,
                "break_even_utilisation": c.break_even_utilisation,
                "break_even_months": c.break_even_months}

    def planned(p: PlannedJob | JobMiss) -> dict[str, Any]:
        if isinstance(p, JobMiss):
            return {"gpu": p.gpu, "fits": False, "reason": p.reason, "most_gpus": p.most_gpus,
                    **({"best_seconds": p.best_seconds, "best_gpus": p.best_gpus} if p.reason == "deadline" else {}),
                    **({"skip_code": p.skipped.code} if p.skipped else {})}
        o = p.option
        return {"gpu": o.gpu, "fits": True, "gpus": o.gpus, "seconds": o.seconds, "busy_gpu_hours": o.busy_gpu_hours}

    pf = d.portfolio
    return {"horizon_seconds": pf.horizon_seconds, "gpu_types": list(pf.gpu_types), "max_types": pf.max_types,
            "owned": dict(pf.owned),
            "jobs": [{"name": j.name, "kind": j.kind, "start_seconds": j.start_seconds,
                      "deadline_seconds": j.deadline_seconds, "steps": j.steps, "hours_per_day": j.hours_per_day,
                      "goal": j.goal.describe(), "per_gpu_type": [planned(p) for p in d.planned[j.name].values()]}
                     for j in pf.jobs],
            "fleet": fleet(d.choice.best) if d.choice.best else None,
            "single_type_fleets": [fleet(f) for f in d.choice.single_type],
            "unplaced_jobs": list(d.choice.unplaced)}


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
    scenario), the others' (and a block's of a few rows) from their Result objects; the same text either way."""
    for part in getattr(report.results, "parts", (report.results,)):
        if isinstance(part, BlockResults) and len(part) >= FEW_ROWS:
            yield from block_texts(part)
        else:  # (a block's row estimated alone: BlockResults[k])
            yield from (dump_bytes(scenario_json(part[k])) for k in range(len(part)))


# A block of fewer rows is written from its rows estimated one by one: the column renderer's set-up (its
# layouts and each axis's texts) costs about a millisecond a block, a row's estimate and line 0.1 ms.
FEW_ROWS = 16


def write(report: Report, path, lang: str = "en") -> None:
    with open(path, "wb") as out:
        out.writelines(json_chunks(report))
