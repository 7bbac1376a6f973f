"""User-facing errors: each carries where the bad value came from and what is allowed.

The CLI turns an InputError into one line `Error: <file>: <key path>: <message>` and exit
status 1. Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import difflib
import signal
from typing import Iterable

EXIT_BAD_INPUT = 1  # bad input files and values; Click exits with 2 for bad command-line usage
INTERRUPTS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # each ends a command as Ctrl-C does
SHOWN_CHARS = 500  # longest part of an error line: a 1 MB bad value is not repeated in full


def handled_interrupts() -> tuple[signal.Signals, ...]:
    """The INTERRUPTS this process acts on: not those it was started with ignored (SIGHUP under nohup,
    SIGINT in a shell's background job), which stay ignored, in the PDF child too."""
    return tuple(signum for signum in INTERRUPTS if signal.getsignal(signum) is not signal.SIG_IGN)


class InputError(Exception):
    """A problem with a file or value that the user can fix."""

    def __init__(self, message: str, *, source: str | None = None, key_path: str | None = None):
        self.message = message
        self.source = source
        self.key_path = key_path
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.key_path) if p]
        parts.append(self.message)
        return ": ".join(shorten(p) for p in parts).replace("\n", " ")


class OutputError(InputError):
    """An output that could not be written (a full disk, a directory where a file goes, a killed
    renderer): also one line and exit status 1, after every previous output was kept or put back."""


class StreamError(OSError):
    """Standard output or standard error could not be written: a full device, a closed pipe, a closed
    descriptor. The entry point ends the command on it (entry.run): one line on stderr for stdout,
    quietly for a closed pipe (as `head` users expect) and when stderr is the one failing; exit status 1.
    A command that has already committed its outputs may catch it to say so."""

    def __init__(self, number: int, strerror: str, stream: str):
        super().__init__(number, strerror)
        self.stream = stream  # "standard output" or "standard error"

    def one_line(self) -> str:
        return f"cannot write to {self.stream}: {self.strerror}"


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP. `written` lists the outputs a commit had already replaced: its renames
    run with these signals blocked, so an interrupt during them arrives after all were made."""

    def __init__(self, signum: int = signal.SIGINT, written: tuple = ()):
        super().__init__(signum)
        self.signum, self.written = signum, tuple(written)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum  # as a shell reports a process that the signal ended

    def message(self, shown_written: str = "") -> str:
        """The one line a command ends with; shown_written: the written outputs as the user reads them."""
        name = signal.Signals(self.signum).name
        if self.written:
            return f"Interrupted ({name}) after every output was written: {shown_written}"
        return f"Interrupted ({name}): no output was changed."


def shown(value: object, limit: int = 80) -> str:
    """repr(value) for a message, shortened (see shorten)."""
    return shorten(repr(value), limit)


def shorten(text: str, limit: int = SHOWN_CHARS) -> str:
    """The text, or its start and end around a count of what was left out (the end of a message
    usually says what is allowed)."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 4
    return f"{text[:head]}…[{len(text) - head - tail:,} characters]…{text[-tail:]}"


def did_you_mean(value: object, known: Iterable[str]) -> str:
    """' (did you mean 'bf16'?)' or '' — appended to unknown-name messages."""
    known = list(known)
    text = str(value).lower()
    prefixed = [k for k in known if k.lower().startswith(text)] if text else []
    matches = prefixed or difflib.get_close_matches(str(value), known, n=1, cutoff=0.6)
    return f" (did you mean '{matches[0]}'?)" if matches else ""


def unknown_name(kind: str, value: object, known: Iterable[str], **where) -> InputError:
    known = sorted(known)
    listed = ", ".join(known) if len(known) <= 12 else ", ".join(known[:12]) + f", … ({len(known)} in all)"
    return InputError(f"unknown {kind} {shown(value)}{did_you_mean(value, known)} (known: {listed})", **where)
