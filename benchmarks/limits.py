"""What a build costs by the shape of its plan: requirements × GPU types × layouts (not a test).

    python3 benchmarks/limits.py            # every shape below (about 20 minutes on the 2-core VM)
    python3 benchmarks/limits.py --quick    # two shapes near the PDF's and the HTML's bounds

Each shape is one matrix of Llama-3.2-1B inference: `batch_size` × `prompt_len` make its distinct
requirements, `gpu` its GPU types and `num_gpus` more layouts on each. Each format is built alone, in a
fresh process; the figures are CPU seconds (the build and its forked PDF child) and the peak resident
memory of the largest process. Beside them, the estimate that check and build compare with
REPORTGEN_MAX_BUILD_MIB (BUILD_COSTS in reportgen/pipeline.py, fitted to these figures); a shape past
the limit is built with it raised.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import machine, timed_command  # noqa: E402

GPUS = ("L4", "A10", "A100-40GB", "A100-80GB", "H100-80GB-SXM", "H100-80GB-PCIe", "H200-141GB", "B200", "L40S",
        "RTX-4090", "RTX-3090", "V100-32GB", "MI300X", "H20", "A800-80GB", "H800-80GB", "RTX-6000-Ada")
# (batch sizes, prompt lengths, GPU types, GPU counts, formats)
SHAPES = [
    (10, 100, 1, 1, "json,xlsx,html,pdf"),
    (30, 100, 1, 1, "pdf"),
    (40, 100, 1, 1, "pdf"),  # near the PDF's bound: 4,000 pairs
    (10, 100, 1, 20, "json,html,pdf"),  # more layouts of the same pairs: the HTML and PDF hold every scenario
    (10, 100, 1, 100, "html,pdf"),
    (10, 100, 1, 200, "json,xlsx,html"),  # 200,000 scenarios, the limit of combinations
    (100, 100, 1, 1, "json,xlsx,html"),
    (300, 100, 1, 1, "json,xlsx,html"),
    (500, 100, 1, 1, "json,xlsx"),  # near the bound of the JSON and the workbook
    (18, 100, 17, 1, "json,xlsx,html"),  # 30,600 pairs over 17 GPU types
    (10, 100, 17, 12, "json"),  # the 1,000 requirements × 200 layouts (17,000 pairs)
]
QUICK = [SHAPES[2], SHAPES[4]]


def preset(path: Path, batch_sizes: int, prompt_lens: int, gpus: int, counts: int) -> Path:
    path.write_text("title: shape\nmatrices:\n  - name: shape\n    model: Llama-3.2-1B\n    workload: inference\n"
                    f"    gpu: [{', '.join(GPUS[:gpus])}]\n    num_gpus: {list(range(1, counts + 1))}\n"
                    f"    batch_size: {list(range(1, batch_sizes + 1))}\n"
                    f"    prompt_len: {list(range(1, prompt_lens + 1))}\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="two shapes near the bounds only")
    args = parser.parse_args()
    print(machine())
    from reportgen.pipeline import BUILD_COSTS
    print("| requirements × GPU types × layouts each | pairs | scenarios | format | CPU time | peak memory | estimate |")
    print("|---|---|---|---|---|---|---|")
    raised = {"REPORTGEN_MAX_BUILD_MIB": "1000000", "REPORTGEN_MAX_SCENARIOS": "1000000", "SOURCE_DATE_EPOCH": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        for batch_sizes, prompt_lens, gpus, counts, formats in QUICK if args.quick else SHAPES:
            path = preset(Path(tmp) / "shape.yaml", batch_sizes, prompt_lens, gpus, counts)
            requirements = batch_sizes * prompt_lens
            for fmt in formats.split(","):
                figures = timed_command(["build", str(path), "--format", fmt, "-o", str(Path(tmp) / "out"), "-q"],
                                        raised, stdout=subprocess.DEVNULL)
                if figures["status"]:
                    raise SystemExit(f"the build of {fmt} failed with status {figures['status']}")
                pairs, scenarios = requirements * gpus, requirements * gpus * counts
                estimate = BUILD_COSTS[fmt].bytes(pairs, scenarios) / 2**20
                print(f"| {requirements:,} × {gpus} × {counts} | {pairs:,} | {scenarios:,} | {fmt} | "
                      f"{figures['cpu']:.1f} s | {figures['mib']:,.0f} MiB | {estimate:,.0f} MiB |", flush=True)


if __name__ == "__main__":
    main()
