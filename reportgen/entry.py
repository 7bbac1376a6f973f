"""The command's entry point (python -m reportgen and the reportgen script): what can go wrong around
any command ends in one line, not a traceback.

- Ctrl-C while the modules load is answered as during a command.
- Standard output that cannot be written (a full device, a closed descriptor) is one line on stderr and
  exit status 1; a closed pipe ends quietly with 1, as `head` users expect; a failing stderr leaves
  nothing to say, and the status is 1 (errors.StreamError).
- Text that the stream's encoding lacks ('—' under PYTHONIOENCODING=latin-1) is written in ASCII.
- Running out of memory (ulimit -v) is one line and exit status 1.
"""
import codecs
import errno
import io
import os
import sys

from .errors import EXIT_BAD_INPUT, Interrupted, StreamError

ASCII_FALLBACK = "reportgen.ascii"  # the error handler of both streams
_ASCII = {"—": "-", "–": "-", "−": "-", "…": "...", "×": "x", "·": "-", "÷": "/", "±": "+/-", "²": "^2",
          "≤": "<=", "≥": ">=", "→": "->", "‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "}


def run(args: list[str] | None = None, prog_name: str | None = None) -> None:
    """`reportgen ARGS` (default: the command line's); ends the process's command with its exit status."""
    missing = _reserve_standard_descriptors()
    sys.stdout = _standard_stream(sys.stdout, 1, "standard output", missing)
    sys.stderr = _standard_stream(sys.stderr, 2, "standard error", missing)
    try:
        status = _invoke(args, prog_name)
        sys.stdout.flush()  # here, not at exit, where a failure would be Python's complaint
    except StreamError as exc:
        status = _stream_failed(exc)
    except MemoryError:
        status = _say("Error: out of memory")
    sys.exit(status)


def _invoke(args: list[str] | None, prog_name: str | None):
    """The command's exit status (Click ends every command with SystemExit)."""
    try:
        _load_hashlib()
        from .cli import main
    except KeyboardInterrupt:
        interrupt = Interrupted()
        sys.stderr.write(interrupt.message() + "\n")
        return interrupt.exit_status
    try:
        main.main(args=args, prog_name=prog_name)
    except SystemExit as exc:
        return exc.code
    return 0


def _load_hashlib() -> None:
    """hashlib (which tempfile and the writers load) logs a traceback for each hash whose module it cannot
    load, rather than raising: under a small address space (ulimit -v) that is every one. Loaded here with
    those messages unseen, a hashlib without sha256 is the memory it lacked, said in one line."""
    shown, sys.stderr = sys.stderr, io.StringIO()
    try:
        import hashlib
    finally:
        sys.stderr = shown
    if not hasattr(hashlib, "sha256"):
        raise MemoryError


def _stream_failed(exc: StreamError) -> int:
    """Says why stdout failed (a closed pipe needs no words), on stderr if it still works."""
    if exc.stream == "standard output" and exc.errno != errno.EPIPE:
        return _say(f"Error: {exc.one_line()}")
    return EXIT_BAD_INPUT


def _say(line: str) -> int:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except StreamError:
        pass  # nowhere left to say it
    return EXIT_BAD_INPUT


def _reserve_standard_descriptors() -> set[int]:
    """Descriptors 0-2 that were closed, each now open on /dev/null: otherwise the next file opened (an
    output's temporary) would take the number, and writing 'stdout' would write into it."""
    missing = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
            missing.add(fd)
    return missing


def _standard_stream(stream, fd: int, name: str, missing: set[int]) -> io.TextIOWrapper:
    """A text stream on `fd` in the encoding Python chose for `stream` (PYTHONIOENCODING, the locale),
    falling back to ASCII (ASCII_FALLBACK) and raising StreamError when a write fails."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    raw = _StandardFile(fd, name, closed=fd in missing)
    return _Text(io.BufferedWriter(raw), encoding=encoding, errors=ASCII_FALLBACK,
                 line_buffering=getattr(stream, "line_buffering", False))


class _StandardFile(io.RawIOBase):
    """The descriptor under sys.stdout or sys.stderr: a failed write raises StreamError, which names the
    stream, so that it is told apart from every other OSError; later writes are dropped (what the
    stream still buffers is flushed at exit, where a failure would be Python's complaint). `closed`:
    the descriptor was closed when the command started (now on /dev/null); writing to it fails as
    writing to a closed one would."""

    def __init__(self, fd: int, name: str, closed: bool):
        super().__init__()
        self.fd, self.name, self.was_closed, self.failed = fd, name, closed, False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def isatty(self) -> bool:
        return not self.was_closed and os.isatty(self.fd)

    def write(self, data) -> int:
        if self.failed:
            return len(data)
        try:
            if self.was_closed:
                raise OSError(errno.EBADF, "it was closed when the command started")
            return os.write(self.fd, data)
        except OSError as exc:
            self.failed = True
            raise StreamError(exc.errno, exc.strerror, self.name) from None


class _Text(io.TextIOWrapper):
    # Click re-encodes a stream whose encoding is ASCII as UTF-8, through its `buffer`; without one
    # it writes through this wrapper, whose ASCII fallback is what an ASCII terminal can show.
    buffer = None


def _ascii_fallback(exc: UnicodeEncodeError) -> tuple[str, int]:
    """The characters an encoding lacks: typographic ones as their ASCII forms, others as \\u escapes."""
    text = exc.object[exc.start:exc.end]
    return "".join(_ASCII.get(c) or c.encode("ascii", "backslashreplace").decode() for c in text), exc.end


codecs.register_error(ASCII_FALLBACK, _ascii_fallback)
