"""Write a file completely or not at all: a temporary file in the same folder, renamed into place."""
from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..errors import InputError


def write_atomic(path: Path, data: bytes) -> None:
    write_all_or_nothing([(path, lambda tmp: tmp.write_bytes(data))])


def write_all_or_nothing(jobs: Sequence[tuple[Path, Callable[[Path], None]]],
                         background: Sequence[Path] = ()) -> None:
    """Produce every file into a temporary beside its target, then rename them all into place.

    Jobs whose path is in `background` run in a forked child process while the others run here
    (the PDF takes most of a build; on two cores it overlaps with the rest). If any producer fails
    (or the user presses Ctrl-C), every temporary is removed and every previous output stays as it
    was: a build never leaves a mix of new and old files."""
    staged: list[tuple[Path, Path]] = []
    children: list[tuple[int, int, Path]] = []
    try:
        for path, produce in sorted(jobs, key=lambda job: job[0] not in background):
            tmp = _temporary(path)
            staged.append((tmp, path))
            if path in background and hasattr(os, "fork"):
                children.append(_fork(produce, tmp, path))
            else:
                produce(tmp)
        while children:
            _join(*children.pop(0))
        for tmp, path in staged:
            os.chmod(tmp, 0o644)
            os.replace(tmp, path)
    except BaseException:
        for pid, fd, _ in children:
            _stop(pid, fd)
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise


def _fork(produce: Callable[[Path], None], tmp: Path, path: Path) -> tuple[int, int, Path]:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: produce, report the outcome through the pipe, never return
        os.close(read_fd)
        code, message = 0, ""
        try:
            produce(tmp)
        except BaseException as exc:  # noqa: BLE001 - everything must reach the parent
            code = 1
            kind = "InputError" if isinstance(exc, InputError) else type(exc).__name__
            message = f"{kind}\t{exc.one_line() if isinstance(exc, InputError) else exc}"
        finally:
            os.write(write_fd, message.encode("utf-8", "replace"))
            os._exit(code)
    os.close(write_fd)
    return pid, read_fd, path


def _join(pid: int, read_fd: int, path: Path) -> None:
    with os.fdopen(read_fd, "rb") as pipe:
        message = pipe.read().decode("utf-8", "replace")
    _, status = os.waitpid(pid, 0)
    if status:
        kind, _, text = message.partition("\t")
        if kind == "InputError":
            raise InputError(text)
        raise RuntimeError(f"writing {path.name} failed: {kind}: {text}" if message else
                           f"writing {path.name} failed (status {status})")


def _stop(pid: int, read_fd: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
    try:
        os.close(read_fd)
    except OSError:
        pass


def _temporary(path: Path) -> Path:
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot write to the output folder: {exc.strerror}", source=str(folder)) from None
    os.close(fd)
    return Path(tmp_name)
