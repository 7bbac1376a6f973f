"""Fit each GPU type's training efficiencies (presets/gpus.yaml: train_efficiency for matrix
multiplications, attention_efficiency for the attention kernels) to the published runs marked
"fit" in presets/validation/published_throughput.json (llm-foundry's MPT benchmark tables).

    python3 scripts/fit_train_efficiency.py

Prints, per chip (GPU types with the same die share their efficiencies: the A100 40 GB and 80 GB), the
pair that minimises the largest |error| of tokens/s per GPU over that chip's fit rows (grid steps
0.005 and 0.01), and each row's error. Runs marked "holdout" are never used here; tests/test_throughput.py
reports them.
"""
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.model.catalog import load_gpus, load_models  # noqa: E402
from reportgen.report.validation import throughput_cases  # noqa: E402


CHIPS = {"A100": ("A100-40GB", "A100-80GB"), "H100": ("H100-80GB-SXM",)}


def main():
    data = json.loads((Path(__file__).resolve().parents[1] / "presets/validation/published_throughput.json")
                      .read_text(encoding="utf-8"))
    gpus, models = load_gpus(), load_models()
    cases = [c for c in throughput_cases(data) if c.use == "fit"]
    for chip, types in CHIPS.items():
        rows = [c for c in cases if c.scenario.gpu in types]
        best = None
        for el in range(300, 851, 5):
            for ea in range(100, 901, 10):
                edited = {g: dataclasses.replace(gpus[g], train_efficiency=el / 1000, attention_efficiency=ea / 1000)
                          for g in types}
                errors = [c.error({**gpus, **edited}, models) for c in rows]
                worst = max(abs(e) for e in errors)
                if best is None or worst < best[0]:
                    best = (worst, el / 1000, ea / 1000, errors)
        worst, el, ea, errors = best
        print(f"{chip} ({', '.join(types)}): train_efficiency {el:.3f}, attention_efficiency {ea:.3f} (largest |error| {worst:.1%})")
        for c, e in zip(rows, errors):
            print(f"    {c.id}  {e:+.1%}")


if __name__ == "__main__":
    main()
