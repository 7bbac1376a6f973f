"""preset → scenarios → estimates → report → files. The CLI calls these.

Only timestamp() reads the clock (or SOURCE_DATE_EPOCH); the CLI calls it once and passes the result down."""
from __future__ import annotations

import gc
import importlib
import os
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from . import __version__
from .model.arrays import np
from .model.catalog import data_dir, load_gpus, load_models
from .errors import InputError
from .model.estimate import Estimator, RlhfScenario, Scenario
from .limits import BUILD_MEMORY
from .model.spec import read_json
from .report.notes import build_notes
from .scenarios.presets import Expansion, Preset, expand, load_preset
from .report.build import Report, block_requirements, build_report, priced_gpus, requirement_inputs, single_requirement
from .scenarios.sweep import SweepBlock
from .model.units import GiB, KiB, MiB
from .report.validation import (Excluded, PublishedFigure, ValidationRow, finetune_excluded, published_figures,
                                published_path, published_rows, validate)
from .writers.atomic import Staging

# format -> writer module (each has write(report, path, lang, **options)); imported only when asked for.
WRITERS = {"json": "reportgen.writers.json_writer", "xlsx": "reportgen.writers.xlsx",
           "html": "reportgen.writers.html", "pdf": "reportgen.writers.pdf"}
LANGUAGES = ("en", "zh")


@dataclass(frozen=True)
class BuildCost:
    """The peak memory of building one format: a base, plus so much per (requirement, GPU type) pair of
    the plan and per scenario. Fitted to benchmarks/limits.py (2026-12-03, after #31's ranking), rounded
    up: the JSON streams its scenarios, the PDF lays every pair out. The HTML's per-scenario part since its
    views stopped holding a sweep's rows (#35: 100,000 scenarios 174 MiB, 1,000,000 scenarios 483 MiB of
    1,000 pairs each, 2026-12-04): at most 1.1 KiB a scenario, taken as 2 KiB."""
    base_bytes: int
    pair_bytes: int
    scenario_bytes: int

    def bytes(self, pairs: int, scenarios: int) -> int:
        return self.base_bytes + self.pair_bytes * pairs + self.scenario_bytes * scenarios


BUILD_COSTS = {"json": BuildCost(45 * MiB, 17 * KiB, 3 * KiB), "xlsx": BuildCost(100 * MiB, 25 * KiB, 1 * KiB),
               "html": BuildCost(50 * MiB, 16 * KiB, 2 * KiB), "pdf": BuildCost(120 * MiB, 400 * KiB, 12 * KiB)}
FORMAT_NAMES = {"json": "JSON", "xlsx": "workbook", "html": "HTML", "pdf": "PDF"}


def timestamp(environ=os.environ) -> str:
    """The report's date: SOURCE_DATE_EPOCH when set (reproducible builds), else now (UTC)."""
    epoch = environ.get("SOURCE_DATE_EPOCH")
    if epoch is not None:
        try:
            moment = datetime.fromtimestamp(int(epoch), tz=timezone.utc)
        except (ValueError, OverflowError, OSError):
            raise InputError(f"expected whole seconds since 1970, got {epoch!r}", key_path="SOURCE_DATE_EPOCH") from None
    else:
        moment = datetime.now(tz=timezone.utc)
    return moment.replace(microsecond=0).isoformat()


@dataclass(frozen=True)
class Loaded:
    preset: Preset
    estimator: Estimator
    expansion: Expansion


def load(preset_arg: str, formats: Sequence[str] = tuple(WRITERS)) -> Loaded:
    """A preset expanded; refused before anything is estimated if building one of `formats` would need
    more memory than BUILD_MEMORY (`reportgen check` asks for all of them)."""
    with _cycle_collection_paused():
        preset = load_preset(preset_arg)
        gpus = priced_gpus(load_gpus(), preset)
        estimator = Estimator(load_models(), gpus, preset.assumptions)
        expansion = expand(preset, estimator)
        check_build_memory(expansion, formats, preset.source)
    return Loaded(preset, estimator, expansion)


@contextmanager
def _cycle_collection_paused() -> Iterator[None]:
    """Parsing and expanding a preset make up to a million objects that reference counting frees (the
    YAML nodes, the matrices' sweeps) and almost no cycles; the cycle collector would walk the live ones
    again and again: 40 % of `check` for 30,000 matrices. The few cycles left are found once, after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_build_memory(expansion: Expansion, formats: Sequence[str], source: str) -> None:
    """Refuse, before anything is estimated, a preset whose build of one of `formats` would need more
    memory than BUILD_MEMORY (BUILD_COSTS' estimate). The pairs that parts of the expansion share are
    told apart only when the estimate without that passes the limit."""
    limit, scenarios = BUILD_MEMORY.value() * MiB, len(expansion.scenarios)

    def largest(pairs: int) -> tuple[int, str]:
        return max((BUILD_COSTS[f].bytes(pairs, scenarios), f) for f in formats)

    pairs = plan_entries(expansion)
    if largest(pairs)[0] > limit:
        pairs = plan_entries(expansion, exact=True)
    need, fmt = largest(pairs)
    if need > limit:
        fit = [f for f in formats if BUILD_COSTS[f].bytes(pairs, scenarios) <= limit]
        raise BUILD_MEMORY.refuse(f"the {FORMAT_NAMES[fmt]} of {pairs:,} requirement × GPU type pairs and "
                                  f"{scenarios:,} scenarios would take about {need / GiB:.1f} GiB to build"
                                  + (f" (--format {','.join(fit)} would fit)" if fit else ""),
                                  source=source, key_path="matrices")


def plan_entries(expansion: Expansion, exact: bool = False) -> int:
    """How many (requirement, GPU type) pairs the report's plan will hold (an RLHF group counted as a
    requirement of its own): what every format's size grows with. Each part of the expansion is counted
    on its own, a sweep block on its axes, without objects; exact: the pairs parts share told apart."""
    parts = expansion.scenarios.blocks
    if exact and len(parts) > 1:
        return len(set().union(*(_pairs(part, expansion) for part in parts)))
    return sum(_pair_count(part, expansion) if isinstance(part, SweepBlock) else len(_pairs(part, expansion))
               for part in parts)


def _pair_count(block: SweepBlock, expansion: Expansion) -> int:
    if block.size == 1:  # without arrays: a preset may have 30,000 one-row matrices
        return 1
    names = ["model", *requirement_inputs(block.workload, expansion.interchangeable.get(block.matrix, ()),
                                          expansion.goals.get(block.matrix)), "gpu"]
    key, _ = block.axis_codes(names)
    return len(np.unique(key))


def _pairs(part, expansion: Expansion) -> set[tuple]:
    """A part's (requirement, GPU type) pairs."""
    if isinstance(part, SweepBlock) and part.size == 1:  # without arrays, as _pair_count
        one = part.scenario(0)
        return {(single_requirement(one, expansion.interchangeable.get(part.matrix, ())), one.gpu)}
    if isinstance(part, SweepBlock):
        needs, _, of = block_requirements(part, expansion.interchangeable.get(part.matrix, ()),
                                          expansion.goals.get(part.matrix))
        gpu, _ = part.axis_codes(["gpu"])
        _, first = np.unique(of * (int(gpu.max()) + 1) + gpu, return_index=True)
        return {(needs[of[k]], part.scenario(int(k)).gpu) for k in first.tolist()}
    return {(("group", id(item)) if isinstance(item, RlhfScenario) else
             single_requirement(item, expansion.interchangeable.get(matrix, ()), expansion.goals.get(matrix)), item.gpu
             if isinstance(item, Scenario) else item.actor.gpu) for matrix, item in part}


def validation_paths() -> list[Path]:
    """Measured peaks bundled with the package: the reference set (Llama-3.2-1B, which the activation
    coefficients were derived from), the oracle runs of architectures they were not derived from, and
    those of the terms of issue #18 (each record marked fit or holdout)."""
    folder = data_dir("presets") / "validation"
    return [folder / "measured.json", folder / "oracle_extra.json", folder / "oracle_arch.json"]


def validation_rows(estimator: Estimator) -> list[ValidationRow]:
    """Measured peaks (kind "measured"), then the compared published fine-tuning figures (kind "published",
    each at the level it reports)."""
    rows = []
    for path in validation_paths():
        rows += validate(path, estimator)
    return rows + published_rows(published_path(), estimator)


def validation_figures(estimator: Estimator) -> tuple[list[PublishedFigure], list[Excluded]]:
    """The published time and serving figures against their estimates, and every excluded published record
    (fine-tuning, training, offload, decode, serving) with why."""
    figures, excluded = published_figures(read_json(published_path("throughput")), read_json(published_path("serving")),
                                          read_json(published_path("rlhf")), read_json(published_path("offload")),
                                          estimator)
    return figures, finetune_excluded(read_json(published_path())) + excluded


def make_report(loaded: Loaded, generated_at: str) -> Report:
    figures, excluded = validation_figures(loaded.estimator)
    return build_report(loaded.preset, loaded.expansion, loaded.estimator, generated_at=generated_at,
                        version=__version__, notes=build_notes(loaded.estimator),
                        validation=validation_rows(loaded.estimator), validation_figures=figures,
                        validation_excluded=excluded)


def output_name(preset: str, fmt: str, lang: str) -> str:
    """'default.pdf', or 'default.zh.pdf' for another language, so both can share a folder; the JSON
    holds every figure and no prose, so it has no language."""
    return f"{preset}.{fmt}" if lang == "en" or fmt == "json" else f"{preset}.{lang}.{fmt}"


def write_outputs(report: Report, out_dir: Path, formats: Sequence[str], lang: str,
                  progress: Callable[[str], None] = lambda _: None, staging: Staging | None = None,
                  options: Mapping[str, Mapping[str, Any]] = {}) -> list[Path]:
    """Write every format; all files appear together and complete, or none changes. Given a
    `staging`, the files are only staged: they appear when its owner commits (a build of several
    presets commits once, after all are rendered). options: format -> its writer's keyword options
    ({"pdf": {"appendix": True}})."""
    jobs = []
    for fmt in formats:
        writer = importlib.import_module(WRITERS[fmt])
        path = out_dir / output_name(report.preset.name, fmt, lang)

        def produce(tmp, writer=writer, path=path, kwargs=options.get(fmt, {})):
            writer.write(report, tmp, lang, **kwargs)
            progress(f"rendered {path.name}")

        jobs.append((path, produce))
    # The PDF renders in a forked child, alone too: WeasyPrint's C libraries abort or crash under memory
    # pressure, which must end the child (one Error: line), not the build. With others, it overlaps them.
    pdf = [path for path, _ in jobs if path.suffix == ".pdf"]
    if staging is not None:
        staging.stage(jobs, background=pdf)
    else:
        with Staging() as own:
            own.stage(jobs, background=pdf)
            own.commit()
    return [path for path, _ in jobs]
