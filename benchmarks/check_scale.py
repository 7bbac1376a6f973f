"""How `reportgen check` grows with the number of matrices and of exclude rules (not a test).

    python3 benchmarks/check_scale.py            # 5,000 to 30,000 matrices; 1,000 to 40,000 rules
    python3 benchmarks/check_scale.py --quick    # 30,000 matrices only (of both kinds)

Each preset is written to a temporary folder and checked by `reportgen check` in a fresh process;
the figures are its CPU seconds (user + system) and peak memory. A matrix is one line, `- {name: mN,
model: Llama-3.2-1B, gpu: L4, batch_size: B}` (a 2 MiB preset holds some 30,000 of them), a bare one
`- {name: mN, model: Llama-3.2-1B}`; the rules exclude (batch_size, prompt_len) pairs of one matrix of
2,000 × 100 = 200,000 combinations, the preset limit.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import machine, timed_command  # noqa: E402


def matrices_preset(path: Path, count: int) -> Path:
    lines = ["title: many matrices", "matrices:"]
    lines += [f"  - {{name: m{i}, model: Llama-3.2-1B, gpu: L4, batch_size: {i % 64 + 1}}}" for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def bare_preset(path: Path, count: int) -> Path:
    lines = ["title: many matrices", "matrices:"] + [f"  - {{name: m{i}, model: Llama-3.2-1B}}" for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def rules_preset(path: Path, count: int) -> Path:
    lines = ["title: many rules", "matrices:", "  - name: m", "    model: Llama-3.2-1B", "    gpu: L4",
             "    batch_size: [" + ", ".join(str(b) for b in range(1, 2001)) + "]",
             "    prompt_len: [" + ", ".join(str(p) for p in range(1, 101)) + "]", "    exclude:"]
    lines += [f"      - {{batch_size: {i // 100 + 1}, prompt_len: {i % 100 + 1}}}" for i in range(count)]
    path.write_text("\n".join(lines) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30,000 matrices only (of both kinds)")
    args = parser.parse_args()
    print(machine())
    shapes = [("matrices", 30_000), ("bare", 30_000)] if args.quick else (
        [("matrices", n) for n in (5_000, 10_000, 20_000, 30_000)] + [("bare", 30_000)]
        + [("rules", n) for n in (1_000, 10_000, 40_000)])
    makers = {"matrices": matrices_preset, "bare": bare_preset, "rules": rules_preset}
    with tempfile.TemporaryDirectory() as tmp:
        for kind, count in shapes:
            make = makers[kind]
            preset = make(Path(tmp) / f"{kind}-{count}.yaml", count)
            # the rules' matrix is past the memory bound of a build: check would say so before the rules counted;
            # 30,000 one-line matrices are 360,000 parser events, past the default budget (250,000); 40,000
            # rules × 200,000 combinations are past the exclude checks' (10^7)
            env = {"REPORTGEN_MAX_BUILD_MIB": "1000000", "REPORTGEN_MAX_YAML_EVENTS": "1000000",
                   "REPORTGEN_MAX_EXCLUDE_CHECKS": "10000000000"}
            figures = timed_command(["check", str(preset)], env, stdout=subprocess.DEVNULL)
            if figures["status"]:
                raise SystemExit(f"check of {count:,} {kind} failed with status {figures['status']}")
            size = preset.stat().st_size / 2**20
            print(f"{count:>7,} {kind:<9} ({size:.2f} MiB): {figures['cpu']:6.2f} s CPU, "
                  f"{figures['cpu'] / count * 1e6:6.0f} µs each, peak {figures['mib']:,.0f} MiB")


if __name__ == "__main__":
    main()
