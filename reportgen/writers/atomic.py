"""Write a file completely or not at all: a temporary file in the same folder, renamed into place."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

from ..errors import InputError


def write_atomic(path: Path, data: bytes) -> None:
    write_atomic_with(path, lambda tmp: tmp.write_bytes(data))


def write_atomic_with(path: Path, produce: Callable[[Path], None]) -> None:
    """Call produce(tmp_path); on success rename tmp over path, on any failure remove tmp.

    The previous file at `path` is untouched unless the new one is complete (os.replace is atomic
    within one file system)."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write output folder: {exc.strerror}", source=str(folder)) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        produce(tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
