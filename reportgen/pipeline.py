"""preset → scenarios → estimates → report → files. The CLI calls these.

Only timestamp() reads the clock (or SOURCE_DATE_EPOCH); the CLI calls it once and passes the result down."""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from . import __version__
from .catalog import data_dir, load_gpus, load_models
from .errors import InputError
from .estimate import Estimator
from .models import read_json
from .notes import build_notes
from .presets import Expansion, Preset, expand, load_preset
from .report import Report, build_report, priced_gpus
from .validation import (Excluded, PublishedFigure, ValidationRow, finetune_excluded, published_figures, published_rows,
                         validate)
from .writers.atomic import Staging

# format -> writer module (each has write(report, path, lang, **options)); imported only when asked for.
WRITERS = {"json": "reportgen.writers.json_writer", "xlsx": "reportgen.writers.xlsx",
           "html": "reportgen.writers.html", "pdf": "reportgen.writers.pdf"}
LANGUAGES = ("en", "zh")


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


def load(preset_arg: str) -> Loaded:
    preset = load_preset(preset_arg)
    gpus = priced_gpus(load_gpus(), preset)
    estimator = Estimator(load_models(), gpus, preset.assumptions)
    expansion = expand(preset, estimator)
    return Loaded(preset, estimator, expansion)


def validation_paths() -> list[Path]:
    """Measured peaks bundled with the package: the reference set (Llama-3.2-1B, which the activation
    coefficients were derived from), the oracle runs of architectures they were not derived from, and
    those of the terms of issue #18 (each record marked fit or holdout)."""
    folder = data_dir("presets") / "validation"
    return [folder / "measured.json", folder / "oracle_extra.json", folder / "oracle_arch.json"]


def published_path(name: str = "finetune") -> Path:
    """A bundled set of published figures: finetune (peak memory), throughput (training, decode) or serving."""
    return data_dir("presets") / "validation" / f"published_{name}.json"


def validation_rows(estimator: Estimator) -> list[ValidationRow]:
    """Measured peaks (kind "measured"), then the compared published fine-tuning figures (kind "published",
    each at the level it reports)."""
    rows = []
    for path in validation_paths():
        rows += validate(path, estimator)
    return rows + published_rows(published_path(), estimator)


def validation_figures(estimator: Estimator) -> tuple[list[PublishedFigure], list[Excluded]]:
    """The published time and serving figures against their estimates, and every excluded published record
    (fine-tuning, training, decode, serving) with why."""
    figures, excluded = published_figures(read_json(published_path("throughput")), read_json(published_path("serving")),
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
