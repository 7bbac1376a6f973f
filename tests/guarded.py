"""Run one `reportgen` command in a forked child with a timeout and a memory cap.

The fuzz and regression tests run thousands of commands: a fresh interpreter per command would
cost half a second each, a fork of this one costs milliseconds and has reportgen already
imported. The child is what a user's process would be: real stdout/stderr (strict UTF-8 on
stdout, as Python sets it up), Click in standalone mode, an uncaught exception printed as a
traceback. It gets an address-space cap above what it inherits (RLIMIT_AS: a run past it fails
with MemoryError, which shows as a traceback) and is killed when the timeout passes.
"""
from __future__ import annotations

import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

MEMORY_CAP = 768 * 2**20  # address space a command may add to the ~0.3-1 GiB it inherits
TIMEOUT_S = 20.0
EXIT_TRACEBACK = 70  # the child's status when the command raised


@dataclass(frozen=True)
class Outcome:
    args: tuple[str, ...]
    status: int | None  # None: killed (timeout)
    stdout: str
    stderr: str
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.status is None

    def problem(self) -> str | None:
        """Why this outcome breaks the promise (one line `Error: …` and status 1, usage errors 2,
        no traceback, no hang), or None."""
        if self.timed_out:
            return f"no answer within the timeout ({self.seconds:.1f} s)"
        if self.status == EXIT_TRACEBACK or "Traceback" in self.stderr:
            return "traceback:\n" + self.stderr[-3000:]
        if self.status not in (0, 1, 2):
            return f"exit status {self.status}"
        if self.status == 1:
            lines = self.stderr.splitlines()
            if len(lines) != 1 or not lines[0].startswith("Error: "):
                return f"expected one `Error:` line, got {self.stderr[:2000]!r}"
            if len(lines[0]) > 2000:
                return f"error line of {len(lines[0])} characters"
        return None


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def run(args, *, env: dict | None = None, cwd: Path | None = None, timeout: float = TIMEOUT_S,
        memory: int = MEMORY_CAP, file_size: int | None = None) -> Outcome:
    """`reportgen ARGS` in a forked child: environment `env` added, working folder `cwd`; with
    `file_size`, writing a file past that many bytes fails as on a full disk (EFBIG)."""
    from reportgen.cli import main

    args = tuple(str(a) for a in args)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    cap = _vm_size() + memory
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = EXIT_TRACEBACK
        try:
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            sys.stdin = open(0, encoding="utf-8", closefd=False)
            sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
            sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.environ.update(env or {})
            if cwd:
                os.chdir(cwd)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            if file_size is not None:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))
            try:
                main.main(args=list(args), prog_name="reportgen", standalone_mode=True)
                status = 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the traceback is the finding
            traceback.print_exc()
            status = EXIT_TRACEBACK
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(status)
    status = None
    while time.monotonic() - start < timeout:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(code)
            break
        time.sleep(0.002)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    seconds = time.monotonic() - start
    texts = []
    for f in (out, err):
        f.seek(0)
        texts.append(f.read().decode("utf-8", "backslashreplace"))
        f.close()
    return Outcome(args, status, texts[0], texts[1], seconds)
