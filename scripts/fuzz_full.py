"""The full fuzz run of issue #36: tests/test_fuzz.py at FUZZ_SCALE (default 24: at least 20,000 cases),
one JSON line per category in fuzz-report.jsonl, then the count by category.

    nice -n 19 python3 scripts/fuzz_full.py [--scale 24] [--seed 20] [--report fuzz-report.jsonl] [--shard k/n]
                                            [-- pytest args]

--shard k/n: this process runs the k-th of n shares of the bad-input category (the longest, ~10,800 cases);
n processes with k = 0 … n−1 run it whole (`--shard 0/2 -- -k bad_input` beside `--shard 1/2 -- -k bad_input`).

CI runs the same file at scale 1 (about 900 cases)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KINDS = ("traceback", "hang", "mixed", "other")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=24.0)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--report", type=Path, default=REPO / "fuzz-report.jsonl")
    parser.add_argument("--shard", default="0/1")
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    args.report.unlink(missing_ok=True)
    env = {**os.environ, "FUZZ_SCALE": str(args.scale), "FUZZ_SEED": str(args.seed), "FUZZ_REPORT": str(args.report),
           "FUZZ_SHARD": args.shard}
    status = subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-s",
                              str(REPO / "tests" / "test_fuzz.py"), *args.pytest_args], env=env, cwd=REPO)
    rows = [json.loads(line) for line in args.report.read_text().splitlines()] if args.report.exists() else []
    print(f"\n| category | cases | {' | '.join(KINDS)} | most CPU of a case | seconds |")
    print("|---|---|" + "---|" * len(KINDS) + "---|---|")
    for row in rows:
        print(f"| {row['category']} | {row['cases']:,} | " + " | ".join(str(row[k]) for k in KINDS)
              + f" | {row['max_cpu_s']} s | {row['seconds']} |")
    print(f"| all | {sum(r['cases'] for r in rows):,} | "
          + " | ".join(str(sum(r[k] for r in rows)) for k in KINDS) + " | | |")
    return status


if __name__ == "__main__":
    sys.exit(main())
