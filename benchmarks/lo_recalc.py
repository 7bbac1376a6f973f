"""LibreOffice's time on the workbook (not a test): the default preset's and a 10,000-scenario sweep's.

    python3 benchmarks/lo_recalc.py              # default preset and 10,000 scenarios
    python3 benchmarks/lo_recalc.py --sizes 0    # the default preset only

For each workbook: the time to write it, then three LibreOffice runs, each in a fresh profile:
- load: open the file and save its first sheet as CSV, keeping the cached values (LibreOffice's
  default: it does not recalculate xlsx files on load);
- load + recalculation: the same with the profile set to recalculate on load (what tests/lo.py
  does); the difference to `load` is the recalculation itself;
- round trip: recalculate and save the whole workbook as xlsx (what the tests read back): saving
  every formula again is most of it;
- in one process (lo_uno.py, timed inside LibreOffice, best of three): calculateAll, the hard
  recalculation (Ctrl+Shift+F9) of the loaded workbook, and an edited safety factor, the
  recalculation a planner waits for, each with the tests' single-threaded formula groups and with
  LibreOffice's default, threaded (needs the system Python's UNO bridge, Debian `python3-uno`;
  without it this figure is left out). The `load + recalculation` difference is within the noise
  of two loads; this is the figure to quote.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests"), str(REPO / "benchmarks")]

from bench import sweep_preset  # noqa: E402
from lo import convert, make_profile, recalculate  # noqa: E402
from reportgen.pipeline import load, make_report, write_outputs  # noqa: E402

STAMP = "2026-01-01T00:00:00+00:00"
CSV = "csv:Text - txt - csv (StarCalc):44,34,76,1"


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def calculate_all(book: Path, root: Path) -> str:
    """lo_uno.py's `load … calculate_all …` line for `book`, or why there is none."""
    system_python = shutil.which("python3", path="/usr/bin")
    probe = subprocess.run([system_python or "python3", "-c", "import uno"], capture_output=True)
    if system_python is None or probe.returncode:
        return "calculateAll not measured (the system Python has no UNO bridge: apt-get install python3-uno)"
    out = []
    for threaded in (False, True):
        profile = make_profile(root / ("threaded" if threaded else "single"), recalc=False, threaded=threaded)
        line = subprocess.run([system_python, str(REPO / "benchmarks" / "lo_uno.py"), str(book), str(profile)],
                              capture_output=True, text=True, timeout=3600, check=True).stdout.split()
        out.append(f"{'threaded (LibreOffice default)' if threaded else 'single-threaded (as the tests)'}: "
                   f"load {float(line[1]):.1f} s, calculateAll {float(line[3]):.1f} s, "
                   f"an edited safety factor {float(line[5]):.1f} s")
    return "in one process, best of 3, " + "; ".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,10000", help="0 = the default preset; else sweep sizes")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for size in (int(s) for s in args.sizes.split(",")):
            preset = "default" if size == 0 else str(sweep_preset(root / f"sweep-{size}.yaml", size))
            report = make_report(load(preset), STAMP)
            out = root / str(size)
            book: list[Path] = []
            write = timed(lambda: book.extend(write_outputs(report, out, ["xlsx"], "en")))
            name = "default preset" if size == 0 else f"{size:,} scenarios"
            loaded = timed(lambda: convert(book[0], out / "load", CSV, out_suffix=".csv", timeout=1800, recalc=False))
            calc = timed(lambda: convert(book[0], out / "calc", CSV, out_suffix=".csv", timeout=1800))
            trip = timed(lambda: recalculate(book[0], out / "trip", timeout=1800))
            print(f"{name} ({len(report.results):,} results): write {write:.2f} s; LibreOffice: load {loaded:.1f} s, "
                  f"load + recalculation {calc:.1f} s (recalculation {calc - loaded:.1f} s), "
                  f"recalculate and save as xlsx {trip:.1f} s; {calculate_all(book[0], out / 'uno')}", flush=True)


if __name__ == "__main__":
    main()
