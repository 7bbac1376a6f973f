"""Speed and memory figures for the README's performance section (not a test).

    python3 benchmarks/bench.py                 # everything: estimator, plan search, builds
    python3 benchmarks/bench.py --quick         # estimator, plan search and the default preset only
    python3 benchmarks/bench.py --sweeps 100000 # the default preset and a 100,000-scenario sweep
    python3 benchmarks/bench.py --write-readme  # also replace the README's table with these figures

Times are CPU seconds (user + system, a build's forked PDF child included), not wall-clock time: the
reference machine is a shared 2-core VM whose other tenants change the wall clock, not the work. Each
estimator figure is paired with a baseline measured in the same run (baselines.py: llm-analysis on the
same scenarios when it is importable, a NumPy floor of the dominant terms; start-up: `python -c pass`),
and the README quotes the ratios.
Each build runs in its own process; peak memory is that process's maximum resident set size. The
machine, its load average and the library versions are printed with the figures.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
README_START, README_END = "<!-- bench: start -->", "<!-- bench: end -->"


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "unknown CPU")
    import numpy
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"{datetime.date.today().isoformat()}, {cpu}, {os.cpu_count()} cores, load average {load} "
            f"(1, 5, 15 min); Python {platform.python_version()}, NumPy {numpy.__version__}")


def cpu_seconds() -> float:
    return time.process_time()


# ---------------------------------------------------------------------------------------------
# In-process figures

def default_columns(size: int):
    """`size` scenarios as input columns: the default preset's single-model scenarios (its models,
    GPUs, workloads and layouts), each repeated with batch sizes 1-64 and a sequence, prompt and
    generated length from a range (the row inputs a sweep varies fastest), in a shuffled order."""
    import numpy as np

    from reportgen.model.estimate import RlhfScenario, scenario_columns
    from reportgen.pipeline import load
    from reportgen.model.vector import column_of, take
    loaded = load("default")
    singles = [s for _, s in loaded.expansion.scenarios if not isinstance(s, RlhfScenario)]
    base = {n: column_of(v) for n, v in scenario_columns(singles).items()}
    rng = np.random.default_rng(0)
    pick = rng.integers(0, len(singles), size)
    columns = {n: take(c, pick) for n, c in base.items()}
    columns["batch_size"] = rng.integers(1, 65, size)
    columns["seq_len"] = 256 * rng.integers(1, 65, size)
    columns["prompt_len"] = rng.integers(1, 8193, size)
    columns["gen_len"] = rng.integers(0, 4097, size)
    return loaded.estimator, columns, len(singles)


def array_rate(estimator, columns: dict, size: int, repeats: int) -> list[float]:
    """Scenarios per CPU second of the array rendering (estimate_chunks, each chunk dropped once computed, as a
    streaming writer does), one figure per repeat."""
    rates = []
    for _ in range(repeats):
        t = cpu_seconds()
        for _chunk in estimator.estimate_chunks(columns, size):
            pass
        rates.append(size / (cpu_seconds() - t))
    return rates


def estimator_rate(size: int = 1_000_000, repeats: int = 3, sample: int = 20_000, small: int = 1_000) -> dict:
    """Scenarios per CPU second, every term of every scenario: the array rendering (best and median of
    `repeats`), beside the NumPy floor of the same columns; the same pair on the first `small` rows (best of
    30); the scalar rendering (the compiled term function, one row at a time, on `sample` rows); and
    estimate(), one Estimate object at a time."""
    from baselines import floor_rate, plain_columns
    from reportgen.model.estimate import _ROLE_FN, Scenario
    from reportgen.model.vector import take
    estimator, columns, distinct = default_columns(size)
    rates = array_rate(estimator, columns, size, repeats)
    floor = floor_rate(plain_columns(columns, size), size, estimator, repeats)
    head = {n: take(c, slice(0, small)) for n, c in columns.items()}
    small_rate = max(array_rate(estimator, head, small, 30))
    small_floor = floor_rate(plain_columns(head, small), small, estimator, 30)
    rows = [dict(zip(columns, row)) for row in zip(*_row_lists(columns, sample))]
    assumptions, tables = estimator.assumptions, estimator.tables
    t = cpu_seconds()
    for row in rows:
        _ROLE_FN(row, assumptions, tables, None)
    scalar = len(rows) / (cpu_seconds() - t)
    one = [Scenario(**row) for row in rows[:2000]]
    t = cpu_seconds()
    for s in one:
        estimator.estimate(s)
    return {"size": size, "layouts": distinct, "best": max(rates), "median": statistics.median(rates),
            "floor": floor, "small": small, "small_rate": small_rate, "small_floor": small_floor,
            "scalar": scalar, "one_at_a_time": len(one) / (cpu_seconds() - t)}


def presets_rate() -> dict:
    """The estimator on the bundled presets' own single-model scenarios (an RLHF group's roles are left out:
    llm-analysis has no such workload), paired with llm-analysis on the same scenarios when it is importable."""
    from baselines import peer_rates
    from reportgen.model.estimate import RlhfScenario
    from reportgen.pipeline import load
    from reportgen.scenarios.presets import bundled_presets
    scenarios, estimator = [], None
    for name in bundled_presets():
        loaded = load(name)
        estimator = estimator or loaded.estimator
        scenarios += [s for _, s in loaded.expansion.scenarios if not isinstance(s, RlhfScenario)]
    return peer_rates(estimator, scenarios)


def group_rate(copies: int = 20) -> dict:
    """RLHF groups: the bundled presets' groups, each `copies` times, made one by one (estimate_group) and as
    columns (estimate_groups: every role as one sweep, the group terms over role-prefixed columns), paired."""
    from reportgen.model.estimate import RlhfScenario
    from reportgen.pipeline import load
    from reportgen.scenarios.presets import bundled_presets
    groups, estimator = [], None
    for name in bundled_presets():
        loaded = load(name)
        estimator = estimator or loaded.estimator
        groups += [s for _, s in loaded.expansion.scenarios if isinstance(s, RlhfScenario)]
    groups *= copies
    t = cpu_seconds()
    for g in groups:
        estimator.estimate_group(g)
    one = cpu_seconds() - t
    t = cpu_seconds()
    columns = estimator.estimate_groups(groups)
    as_columns = cpu_seconds() - t
    for k in range(len(groups)):
        columns.estimate(k)
    read_back = cpu_seconds() - t
    return {"groups": len(groups), "one": len(groups) / one, "columns": len(groups) / as_columns,
            "read_back": len(groups) / read_back}


def _row_lists(columns, n):
    from reportgen.model.vector import take, to_list
    return [to_list(take(c, slice(0, n)), n) for c in columns.values()]


def plan_rate(counts: int = 120) -> dict:
    """The layout search for Mixtral-8x7B full fine-tuning over every GPU type and GPU counts
    1..counts, with a deadline no layout meets (every candidate is considered)."""
    from reportgen.model.catalog import load_gpus, load_models
    from reportgen.model.estimate import Estimator, Scenario
    from reportgen.planning.plan import Goal, plan
    estimator = Estimator(load_models(), load_gpus())
    s = Scenario(model="Mixtral-8x7B", workload="full", seq_len=4096, prompt_len=0, gen_len=0)
    t = cpu_seconds()
    result = plan(estimator, s, list(estimator.gpus), Goal(within_seconds=1.0), counts=range(1, counts + 1))
    seconds = cpu_seconds() - t
    return {"candidates": result.tried, "seconds": seconds, "gpus": len(estimator.gpus),
            "rate": result.tried / seconds}


# ---------------------------------------------------------------------------------------------
# Builds, each in a fresh process

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


def timed_build(preset: str, fmt: str, out: Path, *extra: str, scenarios: int = 0) -> dict:
    """CPU seconds (the build and its forked PDF child), wall seconds and peak MiB of `reportgen build
    PRESET --format FMT` in a fresh process (scenarios: how many the preset expands to, past the
    default limit of REPORTGEN_MAX_SCENARIOS)."""
    env = {"SOURCE_DATE_EPOCH": "0"}
    if scenarios:  # past the default limits, which refuse what this measures: the 1,000,000-scenario JSON is
        # estimated (BUILD_COSTS) at 2.9 GiB, and measured at about 0.2
        env.update(REPORTGEN_MAX_SCENARIOS=str(scenarios), REPORTGEN_MAX_BUILD_MIB="1000000")
    figures = timed_command(["build", preset, "--format", fmt, "-o", str(out), "-q", *extra], env)
    if figures["status"]:
        raise SystemExit(f"build {preset} --format {fmt} failed with status {figures['status']}")
    return figures


def timed_command(args: list[str], env: dict[str, str] | None = None, stdout=None) -> dict:
    """CPU seconds (the command and the children it waited for), wall seconds, peak MiB and exit status
    of `reportgen ARGS` in a fresh process."""
    wall = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "reportgen.cli", *args], env={**os.environ, **(env or {})},
                            cwd=REPO, stdout=stdout)
    _, status, usage = os.wait4(proc.pid, 0)  # the child's own usage, with the children it waited for
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - wall,
            "mib": usage.ru_maxrss / 1024, "status": os.waitstatus_to_exitcode(status)}


def pdf_pages(path: Path) -> int:
    text = subprocess.run(["pdfinfo", str(path)], capture_output=True, text=True).stdout
    return int(re.search(r"Pages:\s+(\d+)", text).group(1))


def builds(out: Path, sweeps: list[int]) -> list[tuple[str, dict]]:
    rows = []
    for fmt in ("json", "xlsx", "html", "pdf"):
        figures = timed_build("default", fmt, out)
        if fmt == "pdf":
            figures["pages"] = pdf_pages(out / "default.pdf")
        rows.append((f"default preset, {fmt}", figures))
    rows.append(("default preset, all four formats in one build", timed_build("default", "json,xlsx,html,pdf", out)))
    appendix = timed_build("default", "pdf", out, "--pdf-appendix")
    appendix["pages"] = pdf_pages(out / "default.pdf")
    rows.append(("default preset, PDF with --pdf-appendix", appendix))
    formats = {10_000: ("json", "xlsx", "html", "pdf"), 100_000: ("json", "xlsx"), 1_000_000: ("json", "html", "xlsx")}
    for size in sweeps:
        fmts = formats.get(size, ("json",))
        if fmts:
            preset = str(sweep_preset(out / f"sweep-{size}.yaml", size))
            for fmt in fmts:
                rows.append((f"{size:,} scenarios, {fmt}", timed_build(preset, fmt, out, scenarios=size)))
    return rows


# ---------------------------------------------------------------------------------------------

def table(machine_line: str, est: dict, presets: dict, search: dict, startup: dict, questions: dict,
          build_rows: list[tuple[str, dict]]) -> str:
    from startup import BASELINE
    base = startup[BASELINE]
    lines = [f"Measured by `python3 benchmarks/bench.py`: {machine_line}. Each rate is paired with a baseline "
             f"measured in the same run (`benchmarks/baselines.py`).", "",
             "| what | CPU time | paired baseline, same run | peak memory |", "|---|---|---|---|"]
    for name, cost in startup.items():
        if name.startswith(("reportgen --help", "reportgen estimate")):  # #35's start-up targets
            lines.append(f"| start-up: {name} | {cost:.3f} s | {cost - base:+.3f} s above `python -c pass` "
                         f"({base:.3f} s), median of 5 | |")
    slowest = max(questions, key=questions.get)
    lines.append(f"| `reportgen plan`, the {len(questions)} buyer questions of `benchmarks/questions.py`, each in a fresh "
                 f"process, median of 3 | median {statistics.median(questions.values()):.2f} s, slowest "
                 f"{questions[slowest]:.2f} s ({slowest}) | `python -c pass` {base:.3f} s | |")
    for what, f in build_rows:
        pages = f" ({f['pages']} pages)" if "pages" in f else ""
        lines.append(f"| {what}{pages} | {f['cpu']:.2f} s | | {f['mib']:,.0f} MiB |")
    if presets["peer"]:
        peer = f"{presets['array'] / presets['peer']:.1f}× llm-analysis {presets['peer_version']} ({presets['peer']:,.0f} scenarios/s)"
    else:
        peer = "llm-analysis not installed"
    mine = (f"the {presets['answered']:,} of the bundled presets' {presets['scenarios']:,} single-model scenarios "
            f"that llm-analysis answers" if presets["peer"] else
            f"the bundled presets' {presets['scenarios']:,} single-model scenarios")
    lines.append(f"| estimator on {mine}, array rendering (`estimate_many`), best of 3 | {presets['array']:,.0f} "
                 f"scenarios/s | {peer} | |")
    lines.append(f"| estimator, array rendering: every term of {est['small']:,} scenarios (rows of the next line), best of 30 | "
                 f"{est['small_rate']:,.0f} scenarios/s | {est['small_floor'] / est['small_rate']:.1f}× below the NumPy "
                 f"floor of the dominant terms ({est['small_floor']:,.0f}/s) | |")
    lines.append(f"| estimator, array rendering (`estimate_chunks`): every term of {est['size']:,} scenarios "
                 f"({est['layouts']} layouts of the default preset × batch and lengths), best of 3 (median) | "
                 f"{est['best']:,.0f} ({est['median']:,.0f}) scenarios/s | {est['floor'] / est['best']:.1f}× below the "
                 f"NumPy floor ({est['floor']:,.0f}/s) | |")
    lines.append(f"| plan search: Mixtral-8x7B full fine-tuning, {search['gpus']} GPU types, "
                 f"{search['candidates']:,} candidate layouts | {search['seconds']:.2f} s "
                 f"({search['rate']:,.0f} candidates/s) | {est['floor'] / search['rate']:.1f}× below the NumPy floor | |")
    return "\n".join(lines)


def write_readme(text: str) -> None:
    readme = REPO / "README.md"
    content = readme.read_text(encoding="utf-8")
    start, end = content.index(README_START) + len(README_START), content.index(README_END)
    readme.write_text(content[:start] + "\n" + text + "\n" + content[end:], encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the 10,000 to 1,000,000-scenario sweeps")
    parser.add_argument("--sweeps", default="10000,100000,1000000",
                        help="comma-separated sweep sizes to build (10000: every format; 100000: JSON and "
                             "workbook; 1000000: JSON, HTML and workbook; others: JSON)")
    parser.add_argument("--estimator-size", type=int, default=1_000_000, help="scenarios the estimator rate uses")
    parser.add_argument("--write-readme", action="store_true", help="replace the README's table with the figures")
    args = parser.parse_args()
    before = machine()
    with tempfile.TemporaryDirectory() as tmp:  # builds first: a forked child starts from this process's size
        build_rows = builds(Path(tmp), [] if args.quick else [int(x) for x in args.sweeps.split(",") if x])
    for what, f in build_rows:
        print(f"{what}: {f['cpu']:.2f} s CPU ({f['wall']:.2f} s wall), peak {f['mib']:,.0f} MiB"
              + (f", {f['pages']} pages" if "pages" in f else ""))
    from startup import BASELINE, startup_costs
    startup = startup_costs(5)
    for name, cost in startup.items():
        print(f"start-up: {name}: {cost:.3f} s CPU (median of 5)")
    from questions import question_costs
    questions = question_costs(3)
    questions.pop(BASELINE)
    for name, cost in questions.items():
        print(f"plan, {name}: {cost:.2f} s CPU (median of 3)")
    est = estimator_rate(args.estimator_size)
    print(f"estimator: array rendering {est['best']:,.0f} scenarios/s best of 3, {est['median']:,.0f} median "
          f"(NumPy floor {est['floor']:,.0f}/s); at {est['small']:,} rows {est['small_rate']:,.0f}/s (floor "
          f"{est['small_floor']:,.0f}/s); scalar rendering {est['scalar']:,.0f} scenarios/s; "
          f"{est['one_at_a_time']:,.0f} scenarios/s as Estimate objects one at a time")
    presets = presets_rate()
    print(f"estimator on the presets' {presets['scenarios']:,} scenarios: {presets['array']:,.0f}/s; llm-analysis: "
          + (f"{presets['peer']:,.0f}/s on the {presets['answered']:,} it answers" if presets["peer"] else "not installed"))
    grouped = group_rate()
    print(f"RLHF groups ({grouped['groups']:,}: the presets' groups 20 times): {grouped['one']:,.0f}/s one at a time, "
          f"{grouped['columns']:,.0f}/s as columns, {grouped['read_back']:,.0f}/s with every group read back")
    search = plan_rate()
    print(f"plan search: {search['candidates']:,} candidates in {search['seconds']:.2f} s CPU "
          f"({search['rate']:,.0f} candidates/s)")
    line = machine()
    line = line if line == before else f"{line} (at the start: load average {before.split('load average ')[1]})"
    print(line)
    if args.write_readme:
        write_readme(table(line, est, presets, search, startup, questions, build_rows))
    print(f"this process: peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
