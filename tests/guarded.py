"""Run one `reportgen` command in a forked child (run) or a fresh interpreter (spawn), with a timeout,
a CPU limit and a memory cap, and judge its outcome.

The fuzz and regression tests run thousands of commands: a fresh interpreter per command would
cost half a second each, a fork of this one costs milliseconds and has reportgen already
imported. The child is what a user's process would be: the command's entry point (reportgen.entry)
on real stdout/stderr (strict UTF-8 on stdout as Python sets it up, or PYTHONIOENCODING's
encoding), Click in standalone mode, an uncaught exception printed as a traceback. It gets an
address-space cap above what it inherits (RLIMIT_AS: a run past it fails with MemoryError, which
the entry point reports as `Error: out of memory` and the judgement counts as a finding unless the
case is about memory) and is killed as hung when it and its children have used no CPU for the timeout
(a busy loop ends at the CPU limit): a machine loaded by other work slows a command, it does not hang
it (#36's full run counted a 1,000-scenario PDF needing 30 s of CPU, niced on a busy machine, as a hang).

What a fork cannot show — the interpreter's start-up under LC_ALL or `ulimit -v`, its flush of the
streams at exit — spawn shows: `python tests/guarded.py ARGS…` runs the same entry point in a new
interpreter (exit status 70 where an exception escaped it).

Standard streams: "file" (captured), "full" (/dev/full), "pipe" (a pipe whose reader has gone) or
"closed".
"""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

MEMORY_CAP = 768 * 2**20  # address space a command may add to the ~0.3-1 GiB it inherits
TIMEOUT_S = 20.0
CPU_LIMIT_S = 60  # CPU seconds a command may use (issue #36: none may run past a minute)
EXIT_TRACEBACK = 70  # the child's status when the command raised
STREAMS = ("file", "full", "pipe", "closed")
OUT_OF_MEMORY = "Error: out of memory"
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Outcome:
    args: tuple[str, ...]
    status: int | None  # None: killed (timeout)
    stdout: str
    stderr: str
    seconds: float
    cpu_s: float = 0.0
    stdout_to: str = "file"
    stderr_to: str = "file"
    memory_bound: bool = False  # the case caps memory on purpose: running out of it is an answer
    encoding: str = "utf-8"  # what stdout and stderr must decode in
    undecodable: str = ""  # the first stream that did not

    @property
    def timed_out(self) -> bool:
        return self.status is None

    @property
    def traceback(self) -> bool:
        return self.status == EXIT_TRACEBACK or "Traceback" in self.stderr

    def problem(self) -> str | None:
        """Why this outcome breaks the promise (one line `Error: …` and status 1, usage errors 2,
        no traceback, no hang, nothing past CPU_LIMIT_S; a stdout that cannot be written is one line
        and status 1, a closed pipe status 1 and nothing), or None."""
        if self.timed_out:
            return f"no answer: no CPU used for the timeout (after {self.seconds:.1f} s)"
        if self.cpu_s > CPU_LIMIT_S:
            return f"{self.cpu_s:.1f} s of CPU"
        if self.traceback:
            return "traceback:\n" + self.stderr[-3000:]
        if self.status not in (0, 1, 2):
            return f"exit status {self.status}"
        if self.undecodable:
            return f"{self.undecodable} is not {self.encoding}"
        if self.stderr_to != "file":
            return None  # nothing to read: the status has said it
        lines = self.stderr.splitlines()
        if self.status == 1:
            if not lines and self.stdout_to == "pipe":
                return None  # the reader went away: nothing to say
            if len(lines) != 1 or not lines[0].startswith("Error: "):
                return f"expected one `Error:` line, got {self.stderr[:2000]!r}"
            if len(lines[0]) > 2000:
                return f"error line of {len(lines[0])} characters"
            if lines[0] == OUT_OF_MEMORY and not self.memory_bound:
                return "ran out of memory: an input is not bounded"
        return None


def others_can_read_the_package() -> bool:
    """Whether another user (a case run with user=) can reach the checkout: every folder above it must
    let others search it (a clone under /root, or in a folder mktemp made, does not)."""
    return all(os.stat(folder).st_mode & 0o001 for folder in (REPO, *REPO.parents))


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _encoding(env: dict) -> tuple[str, str]:
    """(encoding, errors) of stdout as PYTHONIOENCODING would make them at start-up."""
    encoding, _, errors = env.get("PYTHONIOENCODING", "").partition(":")
    return encoding or "utf-8", errors or "strict"


def _point(fd: int, to: str, capture) -> None:
    """Make `fd` what the case wants: the capture file, /dev/full, a pipe without reader, or closed."""
    if to == "file":
        os.dup2(capture.fileno(), fd)
    elif to == "full":
        full = os.open("/dev/full", os.O_WRONLY)
        os.dup2(full, fd)
        os.close(full)
    elif to == "pipe":
        read, write = os.pipe()
        os.close(read)
        os.dup2(write, fd)
        os.close(write)
    else:
        os.close(fd)


class _Watch:
    """Whether a command is hung: it and its children have used no CPU for `idle_s` seconds (read from
    /proc at most every half second), or it has run for 20 × idle_s in all."""

    def __init__(self, pid: int, idle_s: float):
        self.pid, self.idle_s = pid, idle_s
        self.start = self.since = self.checked = time.monotonic()
        self.ticks = -1

    def hung(self) -> bool:
        now = time.monotonic()
        if now - self.checked >= 0.5:
            self.checked = now
            ticks = _tree_ticks(self.pid)
            if ticks != self.ticks:
                self.ticks, self.since = ticks, now
        return now - self.since >= self.idle_s or now - self.start >= 20 * self.idle_s


def _tree_ticks(pid: int) -> int:
    """CPU clock ticks of a process, its descendants and the children they reaped."""
    stats = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    fields = f.read().rpartition(")")[2].split()
            except OSError:
                continue
            stats[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))  # ppid; u, s, cu, cs
    tree, total, grew = {pid}, 0, True
    while grew:
        grew = False
        for p, (ppid, _) in stats.items():
            if ppid in tree and p not in tree:
                tree.add(p)
                grew = True
    return sum(stats[p][1] for p in tree if p in stats)


def _limit(cpu_s: int, address_space: int | None, file_size: int | None) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s + 1, cpu_s + 2))  # a hang ends with SIGXCPU
    if address_space is not None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    if file_size is not None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))


def run(args, *, env: dict | None = None, cwd: Path | None = None, timeout: float = TIMEOUT_S,
        memory: int = MEMORY_CAP, file_size: int | None = None, stdout: str = "file", stderr: str = "file",
        user: int | None = None) -> Outcome:
    """`reportgen ARGS` in a forked child: environment `env` added, working folder `cwd`; with
    `file_size`, writing a file past that many bytes fails as on a full disk (EFBIG); `stdout` and
    `stderr` one of STREAMS; `user`: the uid to run as (a folder that root could write regardless)."""
    from reportgen.entry import run as entry

    env = dict(env or {})
    args = tuple(str(a) for a in args)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    cap = _vm_size() + memory
    encoding, errors = _encoding(env)
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = EXIT_TRACEBACK
        try:
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)  # before a stream is closed, which would hand its number to the next open()
            _point(1, stdout, out)
            _point(2, stderr, err)
            sys.stdin = open(0, encoding="utf-8", closefd=False)
            # as Python sets them up at start-up (None where the descriptor is closed)
            sys.stdout = open(1, "w", encoding=encoding, errors=errors, closefd=False) if stdout != "closed" else None
            sys.stderr = (open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False)
                          if stderr != "closed" else None)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.environ.update(env)
            if cwd:
                os.chdir(cwd)
            if user is not None:
                os.setgroups([])
                os.setgid(user)
                os.setuid(user)
            _limit(CPU_LIMIT_S, cap, file_size)
            try:
                entry(list(args), prog_name="reportgen")
                status = 0
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
        except BaseException:  # noqa: BLE001 - the traceback is the finding
            try:  # into the capture file even where the case's stderr is full or closed
                err.write(traceback.format_exc().encode())
                err.flush()
            finally:
                status = EXIT_TRACEBACK
        finally:
            try:
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:
                        stream.flush()
            finally:
                os._exit(status)
    status, cpu_s = None, 0.0
    watch = _Watch(pid, timeout)
    while not watch.hung():
        done, code, usage = os.wait4(pid, os.WNOHANG)
        if done:
            status, cpu_s = os.waitstatus_to_exitcode(code), usage.ru_utime + usage.ru_stime
            break
        time.sleep(0.002)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    return _outcome(args, status, out, err, time.monotonic() - start, cpu_s, stdout, stderr, False, encoding)


def spawn(args, *, env: dict | None = None, cwd: Path | None = None, timeout: float = TIMEOUT_S * 3,
          address_space: int | None = None, stdout: str = "file", stderr: str = "file") -> Outcome:
    """`reportgen ARGS` in a new interpreter (see the module's docstring): `env` added to this one's
    (PYTHONIOENCODING, LC_ALL as the interpreter reads them at start-up); `address_space`: an absolute
    cap, as `ulimit -v` sets."""
    env = dict(env or {})
    args = tuple(str(a) for a in args)
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    encoding = _encoding(env)[0] if "PYTHONIOENCODING" in env else "utf-8"

    def prepare() -> None:  # in the child, before the interpreter starts
        _point(1, stdout, out)
        _point(2, stderr, err)
        _limit(CPU_LIMIT_S, address_space, None)

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *args], cwd=cwd, preexec_fn=prepare,
                            env={**os.environ, "PYTHONPATH": str(REPO), **env}, stdin=subprocess.DEVNULL,
                            stdout=None, stderr=None, close_fds=True)
    watch = _Watch(proc.pid, timeout)
    status = None
    while not watch.hung():
        try:
            status = proc.wait(timeout=0.2)
            break
        except subprocess.TimeoutExpired:
            continue
    else:
        proc.kill()
        proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return _outcome(args, status, out, err, time.monotonic() - start, cpu_s, stdout, stderr,
                    address_space is not None, encoding)


def _outcome(args, status, out, err, seconds, cpu_s, stdout, stderr, memory_bound, encoding) -> Outcome:
    texts, undecodable = [], ""
    for name, f in (("stdout", out), ("stderr", err)):
        f.seek(0)
        data = f.read()
        f.close()
        try:
            data.decode(encoding)
        except UnicodeDecodeError:
            undecodable = undecodable or name
        texts.append(data.decode(encoding, "backslashreplace"))
    return Outcome(args, status, texts[0], texts[1], seconds, cpu_s, stdout, stderr, memory_bound, encoding,
                   undecodable)


if __name__ == "__main__":  # spawn's interpreter
    from reportgen.entry import run as entry
    try:
        entry(sys.argv[1:], prog_name="reportgen")
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - the traceback is the finding
        try:
            traceback.print_exc()
        finally:
            os._exit(EXIT_TRACEBACK)
