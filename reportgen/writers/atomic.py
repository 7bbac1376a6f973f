"""Write a build's files completely and together, or not at all.

Each file is produced into a temporary beside its target (`.<target>.<build id>.tmp`, the build id
being the start time in nanoseconds and the process id; where that name would pass the folder's
NAME_MAX, the target's part is cut and followed by a hash of it), the PDF in a forked child. Nothing is
renamed until every file of the build is complete; then commit() checks every target again
(absent or a regular file: never a directory, device, FIFO or symbolic link), keeps a hard link of
each target it will replace (`.<target>.<build id>.old`), writes a journal of the renames
(`.reportgen.<build id>.commit`) and renames with SIGINT, SIGTERM and SIGHUP blocked. A rename that
fails rolls the earlier ones back from the kept links. Commits into one folder take turns (a flock on
the folder), so two builds running at once never interleave their files.

SIGKILL cannot be blocked. Every file of a build stays flock()ed while its build runs, so the next
build into the same folder knows what a dead build left behind: it completes the renames of a
journal (the journal is written only once every temporary is complete, so the outputs become all
new) and removes that build's temporaries and kept links. The PDF child is killed with its parent
(PR_SET_PDEATHSIG) and never writes after the parent gave up; a child that sleeps without using CPU for
RENDERER_STALL_SECONDS is stuck and killed (one Error: line), however long a busy render takes.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import json
import os
import re
import select
import signal
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from ..errors import INTERRUPTS, InputError, Interrupted, OutputError, handled_interrupts

_OWN_FILE = re.compile(r"^\.(?:(?P<target>.+)\.(?P<build>[0-9a-f]{16}-\d+)\.(?P<kind>tmp|old)"
                       r"|reportgen\.(?P<journal_build>[0-9a-f]{16}-\d+)\.commit)$")
# Failures of the machine rather than of reportgen: one line, not a traceback.
_MACHINE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS, errno.EACCES, errno.EPERM,
                   errno.ENAMETOOLONG}
_PR_SET_PDEATHSIG = 1
_NAME_MAX = 255  # where the folder does not say (pathconf)
# A renderer that has used no CPU for this long while sleeping is stuck (a thread it waits for could not be
# started: #36's fuzz under ulimit -v), not slow: a render is CPU-bound, and even at nice 19 beside busy cores
# it gets clock ticks within seconds. Time alone bounds nothing: a large sweep's PDF legitimately takes minutes.
RENDERER_STALL_SECONDS = 30.0

Job = tuple[Path, Callable[[Path], None]]


class Staging:
    """The files of one build: stage() produces them into temporaries, commit() renames them all into
    place. Leaving the `with` block without a commit (an error, Ctrl-C) removes every temporary and
    leaves every previous output as it was."""

    def __init__(self):
        self.build_id = f"{time.time_ns():016x}-{os.getpid()}"  # sorts by start time
        self.staged: list[tuple[Path, Path]] = []  # (temporary, target)
        self.locks: dict[Path, int] = {}  # file of this build -> descriptor holding its flock
        self.written: list[Path] = []  # targets replaced so far (all of them once commit() returns)
        self.folder: Path | None = None

    def __enter__(self) -> "Staging":
        return self

    def __exit__(self, *exc) -> None:
        self.discard()

    def stage(self, jobs: Sequence[Job], background: Sequence[Path] = ()) -> None:
        """Produce each job's file into its temporary. Jobs whose path is in `background` run in a
        forked child while the others run here (the PDF takes most of a build; on two cores it
        overlaps with the rest); stage() returns when all are complete."""
        targets = [target for _, target in self.staged]
        for path, _ in jobs:  # every target before the first file is produced
            self._enter(path.parent)
            if path in targets:
                raise OutputError("written twice by this build (two presets with one file name?)", source=str(path))
            targets.append(path)
            _check_target(path)
        children: list[_Child] = []
        try:
            for path, produce in sorted(jobs, key=lambda job: job[0] not in background):
                tmp = self._temporary(path)
                if path in background:
                    children.append(self._fork(produce, tmp, path))
                else:
                    _machine_errors_as_one_line(produce, tmp, path)
            for child in children:
                child.join()
        finally:
            for child in children:  # after a failure only: the renders still running are useless
                child.kill()

    def commit(self) -> list[Path]:
        """Rename every temporary into place; on a failed rename, put back what was replaced."""
        if not self.staged:
            return []
        kept: dict[Path, Path] = {}
        journal = None
        with _folder_locked(self.folder):  # one commit at a time per folder: concurrent builds do not interleave
            blocked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
            try:
                for _, path in self.staged:  # again: the folder may have changed while the files rendered
                    _check_target(path)
                kept = self._keep_copies()
                journal = self._journal()
                for tmp, path in self.staged:
                    try:
                        _install(tmp, path)
                    except OSError as exc:
                        raise OutputError(f"cannot replace the file: {exc.strerror}; {self._roll_back(kept)}",
                                          source=str(path)) from None
                    self.written.append(path)
                self.staged = []
            finally:
                for link in kept.values():
                    _remove(link)
                if journal:
                    # emptied first: where it cannot be removed (a folder made append-only since), the
                    # next build finds nothing to finish, not the renames this commit rolled back
                    with contextlib.suppress(OSError):
                        os.ftruncate(self.locks[journal], 0)
                    _remove(journal)
                    self._unlock(journal)
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return list(self.written)

    def discard(self) -> None:
        """Remove every temporary that was not renamed; release the locks."""
        for tmp, _ in self.staged:
            _remove(tmp)
        self.staged = []
        for path in list(self.locks):
            self._unlock(path)

    # -----------------------------------------------------------------------------------------

    def _enter(self, folder: Path) -> None:
        """Make the output folder and clean up after earlier builds into it that died."""
        if self.folder is None:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise _folder_error(folder, exc) from None
            self.folder = folder
            with _folder_locked(folder):
                try:
                    _recover(folder, self.build_id)
                except OSError as exc:  # a folder (or a file in it) made read-only or immutable since
                    raise OutputError(f"cannot finish or clean up after an earlier build that died "
                                      f"({Path(exc.filename).name}): {exc.strerror}", source=str(folder)) from None
        # One journal per build, in the one folder it writes to.
        assert folder == self.folder, f"{folder} is not {self.folder}"

    def _temporary(self, path: Path) -> Path:
        folder = path.parent
        tmp = folder / _own_name(path, self.build_id, "tmp")
        self.staged.append((tmp, path))  # before it exists: an interrupt from here on removes it
        try:
            self._create_locked(tmp)
        except OSError as exc:
            raise _folder_error(folder, exc) from None
        return tmp

    def _create_locked(self, path: Path, data: bytes = b"") -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        self.locks[path] = fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, data)

    def _unlock(self, path: Path) -> None:
        fd = self.locks.pop(path, None)
        if fd is not None:
            os.close(fd)

    def _fork(self, produce: Callable[[Path], None], tmp: Path, path: Path) -> "_Child":
        read_fd, write_fd = os.pipe()
        # The child's own messages (GLib's, when the renderer's libraries abort) go to a file, not the terminal:
        # a failed build says one line, which quotes the last of them.
        stderr = tempfile.TemporaryFile()
        parent = os.getpid()
        # No interrupt between the fork and the bookkeeping that lets the parent clean up after it.
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, INTERRUPTS)
        try:
            pid = os.fork()
            if pid == 0:
                os.close(read_fd)
                os.dup2(stderr.fileno(), 2)
                _run_child(produce, tmp, path, write_fd, parent, blocked)
            os.close(write_fd)
            return _Child(pid, read_fd, path, stderr)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _keep_copies(self) -> dict[Path, Path]:
        """A hard link to each target that exists: what a failed rename restores."""
        kept = {}
        for _, path in self.staged:
            link = path.parent / _own_name(path, self.build_id, "old")
            try:
                os.link(path, link)
            except FileNotFoundError:
                continue
            except OSError as exc:
                for done in kept.values():
                    _remove(done)
                raise OutputError(f"cannot keep a copy before replacing it: {exc.strerror}", source=str(path)) from None
            kept[path] = link
        return kept

    def _journal(self) -> Path:
        """Written only when every temporary is complete: from here on, finishing the renames is right."""
        journal = self.folder / f".reportgen.{self.build_id}.commit"
        renames = [[tmp.name, path.name] for tmp, path in self.staged]
        try:
            self._create_locked(journal, json.dumps({"renames": renames}).encode())
        except OSError as exc:
            journal.unlink(missing_ok=True)
            raise OutputError(f"cannot write to the output folder: {exc.strerror}", source=str(self.folder)) from None
        return journal

    def _roll_back(self, kept: dict[Path, Path]) -> str:
        """Put back the targets already replaced; say what the folder now holds."""
        failed = []
        for path in reversed(self.written):
            try:
                if path in kept:
                    os.replace(kept.pop(path), path)
                else:
                    path.unlink()
            except OSError as exc:
                failed.append(f"{path.name} ({exc.strerror})")
        self.written = []
        if failed:
            return f"the new version stays in place of {', '.join(failed)}; the other outputs are as before"
        return "every output is as before"


def _folder_error(folder: Path, exc: OSError) -> OutputError:
    """What failing to make the output folder, or a file in it, says about the path: the errno's own
    words where they say it (read-only file system, permission denied, not a directory)."""
    if exc.errno == errno.EEXIST:  # mkdir: something else has the name
        reason = f"it is {_kind_of(folder)}, not a folder"
    elif exc.errno == errno.ENOENT:  # a folder that exists, yet a new name in it is "not found"
        where = "it takes" if folder.is_dir() else "it cannot be made: a folder above it takes"
        reason = f"{where} no new files (a kernel file system such as /proc or /sys?)"
    else:
        reason = exc.strerror
    return OutputError(f"cannot write to the output folder: {reason}", source=str(folder))


def _kind_of(path: Path) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "a broken symbolic link"
    return ("a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a file")


def _own_name(target: Path, build_id: str, kind: str) -> str:
    """'.<target>.<build id>.<kind>'; where that would pass the folder's NAME_MAX (a 250-character
    target), the target's part is cut and followed by '~' and a hash of the whole, so that two targets
    of one build stay apart."""
    name_bytes = os.fsencode(target.name)
    suffix = f".{build_id}.{kind}"
    try:
        name_max = os.pathconf(target.parent, "PC_NAME_MAX")
    except OSError:
        name_max = _NAME_MAX
    if 1 + len(name_bytes) + len(suffix) <= name_max:
        return f".{target.name}{suffix}"
    digest = "~" + hashlib.sha256(name_bytes).hexdigest()[:16]
    cut = name_bytes[:max(0, name_max - 1 - len(digest) - len(suffix))]
    return f".{os.fsdecode(cut)}{digest}{suffix}"  # a cut UTF-8 sequence comes back as the same bytes


def _install(tmp: Path, path: Path) -> None:
    """One rename of a commit (tests stretch the commit by wrapping this)."""
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def _remove(path: Path) -> None:
    """Remove a file of this build if it can be: in a folder made read-only or immutable since, it stays
    until the next build into the folder removes it (_recover); the error already reported is the one
    to see."""
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def _check_target(path: Path) -> None:
    """A build replaces only regular files (or creates new ones)."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputError(f"cannot check the file: {exc.strerror}", source=str(path)) from None
    if not stat.S_ISREG(mode):
        kind = ("a directory" if stat.S_ISDIR(mode) else "a symbolic link" if stat.S_ISLNK(mode)
                else "a device, FIFO or socket")
        raise OutputError(f"is {kind}; reportgen replaces only regular files", source=str(path))


def _run_child(produce: Callable[[Path], None], tmp: Path, path: Path, write_fd: int, parent: int,
               mask: set) -> None:
    """The forked child: die with the parent, produce, report the outcome through the pipe, never return."""
    code, message = 1, ""
    try:
        prctl = getattr(ctypes.CDLL(None), "prctl", None)  # Linux; elsewhere the child may outlive a killed parent
        if prctl:
            prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the parent died before the death signal was set
            os._exit(1)
        for signum in handled_interrupts():  # an interrupt ends the child at once; the parent cleans up
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _machine_errors_as_one_line(produce, tmp, path)
        code = 0
    except BaseException as exc:  # noqa: BLE001 - everything must reach the parent
        kind = "InputError" if isinstance(exc, InputError) else type(exc).__name__
        message = f"{kind}\t{exc.one_line() if isinstance(exc, InputError) else exc}"
    finally:
        try:
            os.write(write_fd, message.encode("utf-8", "replace"))
        finally:
            os._exit(code)


class _Child:
    """A forked producer: its pipe (the outcome) and whether it has been reaped (a reaped pid may be
    reused by another process, so it is never signalled again)."""

    def __init__(self, pid: int, fd: int, path: Path, stderr):
        self.pid, self.fd, self.path, self.stderr, self.reaped = pid, fd, path, stderr, False

    def join(self) -> None:
        chunks = []
        progress = _CpuProgress(self.pid)
        while True:
            if not select.select([self.fd], [], [], 1.0)[0]:
                if progress.idle_seconds() >= RENDERER_STALL_SECONDS:
                    said = self._last_message()
                    self.kill()
                    raise OutputError(f"the renderer stopped: it used no CPU for {RENDERER_STALL_SECONDS:g} s "
                                      f"(out of memory?){f'; its last message: {said}' if said else ''}",
                                      source=str(self.path))
                continue
            if not (chunk := os.read(self.fd, 65536)):
                break
            chunks.append(chunk)
        _, status = os.waitpid(self.pid, 0)
        said = self._last_message()
        self._reaped()
        message = b"".join(chunks).decode("utf-8", "replace")
        if os.WIFSIGNALED(status):
            signum = os.WTERMSIG(status)
            if signum in INTERRUPTS:
                raise Interrupted(signum)
            raise OutputError(f"the renderer was killed by signal {signum} ({signal.Signals(signum).name}; "
                              f"out of memory?){f'; its last message: {said}' if said else ''}", source=str(self.path))
        if status:
            kind, _, text = message.partition("\t")
            if kind == "InputError":
                raise InputError(text)
            # reported as the parent's own would be (entry.run); a C extension that fails to allocate may raise
            # SystemError ('error return without exception set': the fuzz's ulimit -v cases) instead
            if kind in ("MemoryError", "SystemError"):
                raise MemoryError(text)
            raise RuntimeError(f"writing {self.path.name} failed: {kind}: {text}")

    def _last_message(self) -> str:
        """The last line the child wrote to its standard error (GLib's abort message), shortened."""
        self.stderr.seek(0)
        lines = [line.strip() for line in self.stderr.read()[-4096:].decode("utf-8", "replace").splitlines()]
        last = next((line for line in reversed(lines) if line), "")
        return last if len(last) <= 200 else last[:199] + "…"

    def kill(self) -> None:
        if not self.reaped:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):  # reaped by an interrupted join()
                pass
            self._reaped()

    def _reaped(self) -> None:
        self.reaped = True
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            self.stderr.close()


class _CpuProgress:
    """How long a process has slept without using CPU (Linux's /proc; elsewhere never: no watchdog). A
    stopped process (Ctrl-Z, a debugger) is not stuck: its time starts again when it runs."""

    def __init__(self, pid: int):
        self.path, self.cpu_ticks, self.since = f"/proc/{pid}/stat", None, time.monotonic()

    def idle_seconds(self) -> float:
        try:
            with open(self.path) as stat_file:
                fields = stat_file.read().rpartition(")")[2].split()
        except OSError:
            return 0.0
        state, cpu_ticks = fields[0], int(fields[11]) + int(fields[12])  # state, utime + stime (all threads)
        now = time.monotonic()
        if cpu_ticks != self.cpu_ticks or state not in ("S", "D"):
            self.cpu_ticks, self.since = cpu_ticks, now
        return now - self.since


def _machine_errors_as_one_line(produce: Callable[[Path], None], tmp: Path, path: Path) -> None:
    """Run a producer; a full disk or a refused write (also when a library wrapped the OSError) becomes
    an OutputError naming the target."""
    try:
        produce(tmp)
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not (isinstance(cause, OSError) and cause.errno in _MACHINE_ERRNOS):
            cause = cause.__cause__ or cause.__context__
        if cause is None:
            raise
        raise OutputError(f"cannot write: {cause.strerror}", source=str(path)) from None


@contextlib.contextmanager
def _folder_locked(folder: Path):
    """An exclusive flock on the output folder itself (waiting for it can be interrupted)."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise OutputError(f"cannot use the output folder: {exc.strerror}", source=str(folder)) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _recover(folder: Path, build_id: str) -> None:
    """Clean up after the builds into `folder` that started before this one and have died (their
    files are no longer locked): finish the renames their journals list, remove the rest."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    builds: dict[str, list[tuple[str, str]]] = {}
    for entry in entries:
        match = _OWN_FILE.match(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            build = match["build"] or match["journal_build"]
            if build.split("-")[0] < build_id.split("-")[0]:
                builds.setdefault(build, []).append((entry.name, match["kind"] or "commit"))
    for build, files in builds.items():
        locks = []
        try:
            if not all(_try_lock(folder / name, locks) for name, kind in files if kind != "old"):
                continue  # still running
            for name, kind in sorted(files, key=lambda f: f[1] != "commit"):  # the journal first
                if kind == "commit":
                    _finish_renames(folder, folder / name)
                (folder / name).unlink(missing_ok=True)
        finally:
            for fd in locks:
                os.close(fd)


def _try_lock(path: Path, locks: list[int]) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return True  # gone already
    locks.append(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _finish_renames(folder: Path, journal: Path) -> None:
    try:
        renames = json.loads(journal.read_text())["renames"]
    except (OSError, ValueError, KeyError, TypeError):
        return  # cut short before it was complete: no rename had begun
    for tmp_name, target_name in renames:
        tmp = folder / tmp_name
        if tmp.is_file() and not tmp.is_symlink():
            os.chmod(tmp, 0o644)
            os.replace(tmp, folder / target_name)
