"""Fit each GPU type's training efficiencies (presets/gpus.yaml) to the published runs marked "fit" in
presets/validation/published_throughput.json:
- train_efficiency (matrix multiplications) and attention_efficiency (the attention kernels) to the 16-bit fit
  rows (llm-foundry's MPT benchmark tables, and torchao's bfloat16 baseline);
- fp8_train_efficiency (FP8 training's linear layers, their casts counted apart) to each FP8 fit row's ratio to
  its twin, the fit row with the same inputs in bf16-mixed (torchao's float8 README: Llama 3 8B on 8 H100).

    python3 scripts/fit_train_efficiency.py

Prints, per chip (GPU types with the same die share their efficiencies: the A100 40 GB and 80 GB), the
pair that minimises the largest |error| of tokens/s per GPU over that chip's 16-bit fit rows (grid steps
0.005 and 0.01), each row's error, and the FP8 efficiency (grid step 0.001) whose estimated FP8-over-BF16 ratio
is nearest the published one. Runs marked "holdout" are never used here; tests/test_throughput.py reports them.
"""
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from reportgen.model.catalog import load_gpus, load_models  # noqa: E402
from reportgen.model.estimate import Estimator  # noqa: E402
from reportgen.report.validation import throughput_cases  # noqa: E402


CHIPS = {"A100": ("A100-40GB", "A100-80GB"), "H100": ("H100-80GB-SXM",)}
FP8 = "fp8-te"


def fp8_twins(cases):
    """(FP8 fit row, its bf16-mixed twin) pairs."""
    return [(c, t) for c in cases if c.scenario.precision == FP8 for t in cases
            if t.scenario == dataclasses.replace(c.scenario, precision="bf16-mixed")]


def main():
    data = json.loads((Path(__file__).resolve().parents[1] / "presets/validation/published_throughput.json")
                      .read_text(encoding="utf-8"))
    gpus, models = load_gpus(), load_models()
    cases = [c for c in throughput_cases(data) if c.use == "fit"]
    for chip, types in CHIPS.items():
        rows = [c for c in cases if c.scenario.gpu in types and c.scenario.precision != FP8]
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
        for fp8, twin in fp8_twins([c for c in cases if c.scenario.gpu in types]):
            published = fp8.published / twin.published

            def ratio(efficiency):
                estimator = Estimator(models, {**gpus, **{g: dataclasses.replace(gpus[g], fp8_train_efficiency=efficiency)
                                                          for g in types}})
                return fp8.estimated(estimator) / twin.estimated(estimator)
            efficiency = min((e / 1000 for e in range(200, 801)), key=lambda e: abs(ratio(e) - published))
            print(f"    fp8_train_efficiency {efficiency:.3f}: {fp8.id} over {twin.id} estimated {ratio(efficiency):.4f}, "
                  f"published {published:.4f}")


if __name__ == "__main__":
    main()
