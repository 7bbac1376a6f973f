"""Speed and memory figures for the README's performance section (not a test).

    python3 benchmarks/bench.py            # estimator rate, default preset per format, 10k sweep
    python3 benchmarks/bench.py --large    # also the 100,000-scenario sweep (JSON and xlsx)

Each build runs in its own process; peak memory is that process's maximum resident set size.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def estimator_rate(n: int = 100_000, repeats: int = 3) -> tuple[float, float, float]:
    """(best and median scenarios per second through estimate_many, Estimate objects per second) over n
    varied scenarios. estimate_many is timed `repeats` times: on a shared VM the best run is the
    machine's speed, the median shows the noise (timeit's advice)."""
    from reportgen.catalog import load_gpus, load_models
    from reportgen.estimate import Estimator, Scenario
    est = Estimator(load_models(), load_gpus())
    models = ["Llama-2-7B", "Llama-3-8B", "Mixtral-8x7B", "Qwen2.5-14B", "Llama-3.1-70B"]
    workloads = ["inference", "full", "lora", "qlora"]
    scenarios = [Scenario(model=models[i % 5], workload=workloads[i % 4], batch_size=1 + i % 16,
                          seq_len=512 * (1 + i % 8), num_gpus=8, zero_stage=i % 4, gpu="H100-80GB-SXM")
                 for i in range(n)]
    rates = []
    for _ in range(repeats):
        t = time.perf_counter()
        est.estimate_many(scenarios)
        rates.append(n / (time.perf_counter() - t))
    t = time.perf_counter()
    for s in scenarios[: n // 5]:
        est.estimate(s)
    objects_rate = (n // 5) / (time.perf_counter() - t)
    return max(rates), statistics.median(rates), objects_rate


def sweep_preset(path: Path, size: int) -> Path:
    """A preset whose matrix expands to exactly `size` scenarios (all runnable)."""
    per = size // 1000
    data = {"title": f"{size:,}-scenario sweep", "matrices": [{
        "name": "sweep", "model": ["Llama-3-8B", "Qwen2.5-7B", "Mistral-7B-v0.1", "Llama-2-13B", "Qwen2.5-14B"],
        "workload": [{"type": "full"}, {"type": "lora"}],
        "batch_size": list(range(1, 11)), "seq_len": [256 * (i + 1) for i in range(10)],
        "num_gpus": [8 * (i + 1) for i in range(per)], "zero_stage": [3],
        "gpu": ["H100-80GB-SXM"],
    }]}
    path.write_text(yaml.safe_dump(data))
    return path


def timed_build(preset: str, fmt: str, out: Path) -> tuple[float, float]:
    """(seconds, peak MiB) of `reportgen build PRESET --format FMT` in a fresh process."""
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "reportgen.cli", "build", preset, "--format", fmt, "-o", str(out),
                             "-q"], env={**os.environ, "SOURCE_DATE_EPOCH": "0"}, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own peak resident set size
    seconds = time.perf_counter() - t
    if status:
        raise SystemExit(f"build {preset} --format {fmt} failed with status {status}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="also run the 100,000-scenario sweep")
    parser.add_argument("--formats", default="json,xlsx,html,pdf")
    args = parser.parse_args()
    formats = args.formats.split(",")
    # Builds first: a forked child's peak memory starts from this process's size.
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for fmt in formats:
            seconds, mib = timed_build("default", fmt, out)
            print(f"default preset, {fmt:>9}: {seconds:6.2f} s, peak {mib:5.0f} MiB")
        if {"html", "pdf"} <= set(formats):
            seconds, mib = timed_build("default", "html,pdf", out)
            print(f"default preset,  html,pdf: {seconds:6.2f} s, peak {mib:5.0f} MiB")
        seconds, mib = timed_build("default", ",".join(formats), out)
        print(f"default preset, all formats in one build: {seconds:.2f} s, peak {mib:.0f} MiB")
        for size in [10_000] + ([100_000] if args.large else []):
            preset = sweep_preset(out / f"sweep-{size}.yaml", size)
            runs = ["json", "xlsx", "json,xlsx"] + (["html", "pdf"] if size <= 10_000 else [])
            for fmt in runs:
                if set(fmt.split(",")) <= set(formats):
                    seconds, mib = timed_build(str(preset), fmt, out)
                    print(f"{size:>7,} scenarios, {fmt:>9}: {seconds:6.2f} s, peak {mib:5.0f} MiB")
    best, median, objects_rate = estimator_rate()
    print(f"estimator: {best:,.0f} scenarios/s best of 3, {median:,.0f} median (estimate_many: every term of "
          f"every scenario), {objects_rate:,.0f} scenarios/s (one Estimate object at a time)")


if __name__ == "__main__":
    main()
