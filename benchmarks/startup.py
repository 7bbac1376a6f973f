"""What a command costs before it does anything (issue #35), paired with `python -c pass` in the same run
(not a test).

    python3 benchmarks/startup.py [--runs 7]

Each command runs in a fresh process, the commands interleaved run by run so that the machine's load
falls on all of them alike; the figures are CPU seconds (user + system), the median of the runs, and
the same less the baseline's median. Target of #35: `--help` and one `estimate` under 0.15 s above
the baseline.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import REPO, machine  # noqa: E402

BASELINE = "python -c pass (baseline)"
COMMANDS = {
    BASELINE: [sys.executable, "-c", "pass"],
    "reportgen --help": [sys.executable, "-m", "reportgen", "--help"],
    "reportgen models": [sys.executable, "-m", "reportgen", "models"],
    "reportgen estimate (one inference scenario)": [sys.executable, "-m", "reportgen", "estimate", "--model",
                                                    "Llama-3-8B", "--workload", "inference"],
    "reportgen plan (Llama-3-8B LoRA, one GPU type)": [sys.executable, "-m", "reportgen", "plan", "--model",
                                                       "Llama-3-8B", "--workload", "lora", "--gpu", "L40S"],
}


# An installed package has its bytecode: a machine with PYTHONDONTWRITEBYTECODE set (this VM has) would
# compile every module from source at every start, some 0.07 s more than a user pays.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_of(argv: list[str]) -> float:
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv)} failed")
    return usage.ru_utime + usage.ru_stime


def startup_costs(runs: int, commands: dict[str, list[str]] = COMMANDS) -> dict[str, float]:
    """Each command's CPU seconds, the median of `runs` runs interleaved with the others (each run once first,
    unmeasured: every module's bytecode written)."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for argv in commands.values():
        cpu_of(argv)
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(cpu_of(argv))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print(machine())
    costs = startup_costs(args.runs)
    base = costs[BASELINE]
    print(f"\n| command | CPU s (median of {args.runs}) | above the baseline |\n|---|---|---|")
    for name, median in costs.items():
        print(f"| {name} | {median:.3f} | {median - base:+.3f} |")
    print(machine())


if __name__ == "__main__":
    main()
