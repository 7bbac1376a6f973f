"""Write a file completely or not at all: a temporary file in the same folder, renamed into place."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InputError


def write_atomic(path: Path, data: bytes) -> None:
    write_all_or_nothing([(path, lambda tmp: tmp.write_bytes(data))])


def write_all_or_nothing(jobs: Sequence[tuple[Path, Callable[[Path], None]]]) -> None:
    """Produce every file into a temporary beside its target, then rename them all into place.

    If any producer fails (or the user presses Ctrl-C), every temporary is removed and every
    previous output stays as it was: a build never leaves a mix of new and old files."""
    staged: list[tuple[Path, Path]] = []
    try:
        for path, produce in jobs:
            tmp = _temporary(path)
            staged.append((tmp, path))
            produce(tmp)
            os.chmod(tmp, 0o644)
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise


def _temporary(path: Path) -> Path:
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write to the output folder: {exc.strerror}", source=str(folder)) from None
    os.close(fd)
    return Path(tmp_name)
