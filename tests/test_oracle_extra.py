"""The estimator against oracle peaks of architectures beyond the reference set.

presets/validation/oracle_extra.json holds peaks measured with the project's memory oracle (real
transformers models under fake tensors, the protocol of measured.json) for Qwen2.5-0.5B, GPT-2 (with and
without its default dropout), an untied Llama-3.2-1B, a tiny untied Llama and a Qwen3-0.6B-shaped qk-norm
model. See tests/data/README.md. Each case is compared exactly as reportgen.report.validation.validate compares
measured.json.

Which data the terms were derived from: the activation coefficients come from the 54 Llama-3.2-1B
reference peaks (measured.json). The Qwen3-0.6B cases then exposed the q/k-norm term and the GPT-2 cases
the LayerNorm, tanh-GELU and bf16-softmax terms, which were modelled from them (and GPT-2's dropout
records are fit data of the dropout terms, issue #18): those families are TERM_SOURCES here, checked at
the level reached, not evidence of generalisation. The other three families informed no term: they are
HELD_OUT, the accuracy shown on unseen shapes.
"""
import json
from pathlib import Path

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator
from reportgen.model.spec import spec_from_config
from reportgen.report.validation import scenario_for_case

DATA = Path(__file__).resolve().parent.parent / "presets" / "validation" / "oracle_extra.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
EST = Estimator(load_models(), load_gpus())
HELD_OUT = {"Qwen2.5-0.5B", "Llama-3.2-1B-untied", "Llama-tiny-4L-512"}
TERM_SOURCES = {"Qwen3-0.6B", "GPT-2-nodropout", "GPT-2"}
# Largest |error| reached today: held out 1.5 %, term sources 2.3 % (Qwen3-0.6B, amp, eager, checkpointed).
TOLERANCE = {**{m: 0.016 for m in HELD_OUT}, **{m: 0.024 for m in TERM_SOURCES}}

# GPT-2's default dropout (0.1) is modelled (input dropout=config, which validation sets), but these five
# peaks were measured with the oracle's CPU dispatch of dropout: bf16 noise tensors saved where a GPU's
# native_dropout saves bool masks, and SDPA with dropout sent to the math kernel (S x S fp32 saved) where a
# GPU runs FlashAttention-2. They are what no GPU runs; each was re-measured with the CUDA dispatch
# (presets/validation/oracle_arch.json, id + "/cuda-dropout"), where the estimate is within 1.6 %
# (tests/test_oracle_arch.py).
_CPU_DISPATCH = ("measured with the oracle's CPU dispatch of dropout (bf16 noise masks; SDPA math kernel), which "
                 "no GPU runs; its CUDA-dispatch re-measurement in oracle_arch.json is within 1.6 %")

XFAIL = {
    "GPT-2/train/bf16/sdpa/b4/s1024/nogc/fused": f"-58.2 %: {_CPU_DISPATCH}",
    "GPT-2/train/amp/sdpa/b1/s1024/nogc/fused": f"-35.0 %: {_CPU_DISPATCH}",
    "GPT-2/train/bf16/sdpa/b1/s512/nogc/foreach": f"-26.9 %: {_CPU_DISPATCH}",
    "GPT-2/train/bf16/eager/b2/s1024/nogc/fused": f"-6.9 %: {_CPU_DISPATCH}",
    "GPT-2/train/amp/eager/b4/s512/nogc/fused": f"-5.0 %: {_CPU_DISPATCH}",
}


def _estimate(case):
    name = f"measured:{case['config_name']}"
    spec = spec_from_config(case["config"], name=name, source=str(DATA))
    return EST.with_model(spec).estimate(scenario_for_case(case, name))


def _params(case):
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[case["id"]])] if case["id"] in XFAIL else []
    return pytest.param(case, id=case["id"], marks=marks)


def test_file_is_complete():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) == 41
    assert set(XFAIL) <= set(ids)
    assert {c["config_name"] for c in CASES} == HELD_OUT | TERM_SOURCES
    # each record's split (the report's fit/held-out column) says the same
    assert {c["config_name"] for c in CASES if c["split"] == "holdout"} == HELD_OUT
    assert {c["config_name"] for c in CASES if c["split"] == "fit"} == TERM_SOURCES


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
def test_parameter_counts_match_transformers(case):
    e = _estimate(case)
    assert e.params_total == case["params"] - (case["trainable_params"] if case["workload"] == "lora" else 0)
    if case["setting"]["mode"] == "train":
        assert int(e["trainable_params"]) == case["trainable_params"]


@pytest.mark.parametrize("case", [_params(c) for c in CASES])
def test_peak_at_the_level_reached(case):
    measured = case["peak_bytes"]
    estimated = int(_estimate(case)["allocated_peak"])
    error = (estimated - measured) / measured
    assert abs(error) <= TOLERANCE[case["config_name"]], \
        f"{case['id']}: estimated {estimated / 2**30:.3f} GiB, measured {measured / 2**30:.3f} GiB ({100 * error:+.1f} %)"


def test_held_out_measured_peaks_at_the_level_reached():
    """The appendix states accuracy on the held-out shapes only (no estimator term was derived from them):
    320 cases across the three measured files, median |error| 0.09 %, 312 within 1.8 %; the largest GPT-NeoX's full
    fine-tuning checkpointed (its 2 layers cut from the 20B), +4.20 %, and Falcon-7B's in autocast, -3.79 %, the one
    known miss (test_oracle_arch.KNOWN_MISSES: its step peaks inside an eager attention's backward); then LoRA's
    all-linear bf16 adapters with dropout at 2 x 8,192 tokens, +3.56 % (measured past the frozen ratio's fit; q/v
    adapters there were -6.76 % until the rebuilt layer's parts became a floor under the ratio, that record fit since),
    a TP rank at -2.81 %, MLA's +2.73 % (DeepSeek-V2's widths on two checkpointed layers; a known miss at +5.22 % until
    the layer rebuilt with every weight trained was counted by its parts, when the other known miss then, Mistral 7B's
    layers checkpointed on one GPU at 8,192 tokens, -5.44 %, became fit: its trace was read), MLA's autocast on a
    small shape at +2.64 %, Falcon-7B's bf16 step -2.01 %, GPT-2's autocast step -1.90 %, Phi-3-mini's prefill past its
    window at -1.78 %. The 21 records of tools/oracle/measure_lora_layouts.py held out (2026-12-07: LoRA on fused qkv
    layers and plain MLPs, and those shapes' full fine-tuning) added all of these but the LoRA, TP, MLA and Phi-3 ones
    (283 cases, median 0.08 %, largest 3.56 %, before them); tools/oracle/measure_catalog_shapes.py's six (Gemma-7B,
    Qwen3-8B) are within 0.55 %; tools/oracle/measure_ulysses.py's ten (Ulysses under FSDP2, 2026-12-07) within 1.31 %.
    Every case carries its split."""
    import statistics
    from reportgen.pipeline import validation_rows
    rows = [r for r in validation_rows(Estimator(load_models(), load_gpus())) if r.kind == "measured"]
    assert {r.split for r in rows} == {"fit", "holdout"}
    from test_oracle_arch import KNOWN_MISSES
    held_out = sorted(abs(r.error) for r in rows if r.split == "holdout")
    assert len(held_out) == 320 and list(KNOWN_MISSES) == ["Falcon-7B-4L/train/amp/eager/b1/s2048/nogc/fused/layouts"]
    assert statistics.median(held_out) <= 0.0009 and 0.0419 <= held_out[-1] <= 0.0420 and held_out[-2] <= 0.0379 \
        and held_out[-3] <= 0.0357 and held_out[-4] <= 0.0281 and held_out[-5] <= 0.0274 and held_out[-6] <= 0.0265 \
        and held_out[-7] <= 0.0202 and held_out[-9] <= 0.0178

