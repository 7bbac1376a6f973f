"""LibreOffice's recalculation of a loaded workbook, timed inside LibreOffice (not a test).

Run by lo_recalc.py with the system Python, which has the UNO bridge (Debian `python3-uno`):

    /usr/bin/python3 benchmarks/lo_uno.py BOOK.xlsx PROFILE_DIR

Why: timing `soffice --convert-to` with and without recalculation on load and subtracting leaves
the recalculation inside the noise of two ~40 s loads. Here one soffice process loads the book
once (the profile is tests/lo.py's: single-threaded, as the tests recalculate), then
`calculateAll()` (a hard recalculation, Ctrl+Shift+F9) runs three times, and the safety factor is
typed into its Value cell as a planner edits it, three times: `calculate()` (F9) computes the cells
it dirtied (every row's recommended total and fit, its check through the assumptions' check, and the
Plan; headless, nothing on screen asks for them otherwise); the best of each is printed. Prints one
line: `load <s> calculate_all <s> edit <s>`.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import uno
from com.sun.star.beans import PropertyValue

RUNS = 3


def free_port() -> int:
    """A port no other soffice listens on (a second soffice on a taken port would not start, and
    this script would time the first one's document)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port: int, timeout_s: float = 120.0):
    local = uno.getComponentContext()
    resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return resolver.resolve(f"uno:socket,host=127.0.0.1,port={port};urp;StarOffice.ComponentContext")
        except Exception:  # soffice is still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@contextmanager
def loaded(book: Path, profile: Path):
    """(the loaded document, its load time in seconds) in its own soffice, killed on the way out."""
    port = free_port()
    # its own session: `soffice` is a script that starts soffice.bin, which the kill below must reach
    soffice = subprocess.Popen(["soffice", "--headless", "--invisible", "--norestore", "--nolockcheck",
                                f"-env:UserInstallation={profile.as_uri()}",
                                f"--accept=socket,host=127.0.0.1,port={port};urp;"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        context = connect(port)
        desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
        hidden = PropertyValue()
        hidden.Name, hidden.Value = "Hidden", True
        start = time.perf_counter()
        doc = desktop.loadComponentFromURL(book.as_uri(), "_blank", 0, (hidden,))
        yield doc, time.perf_counter() - start
    finally:
        os.killpg(soffice.pid, signal.SIGKILL)  # terminate() over UNO can hang on a large document
        soffice.wait()
        # the killed soffice leaves its lock file, and the next one would not open the book headless
        book.with_name(f".~lock.{book.name}#").unlink(missing_ok=True)


def best_calculate_all(doc, runs: int = RUNS) -> float:
    """The fastest of `runs` hard recalculations, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        doc.calculateAll()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    book, profile = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    with loaded(book, profile) as (doc, load_s):
        calculate_all_s = best_calculate_all(doc)
        # the name is the value in use (a formula); the planner types into the Value column, C
        in_use = doc.NamedRanges.getByName("safety_factor").getReferredCells()
        factor = in_use.getSpreadsheet().getCellByPosition(2, in_use.getCellAddress().Row)
        edits = []
        for value in (1.25, 1.3, 1.2):
            start = time.perf_counter()
            factor.setValue(value)
            doc.calculate()
            edits.append(time.perf_counter() - start)
        print(f"load {load_s:.2f} calculate_all {calculate_all_s:.2f} edit {min(edits):.2f}", flush=True)


if __name__ == "__main__":
    main()
