"""The estimator against oracle peaks of architectures it was NOT calibrated on.

presets/validation/oracle_extra.json holds peaks measured with ../shared/oracle (real transformers models under
fake tensors, same protocol as ../shared/reference/measured.json) for Qwen2.5-0.5B, GPT-2 (with and without
its default dropout), an untied Llama-3.2-1B, a tiny untied Llama and a Qwen3-0.6B-shaped qk-norm model.
See tests/data/README.md. Each case is compared exactly as reportgen.validation.validate compares
measured.json. Cases the estimator misses by more than 10 % are strict xfails whose reason names the
mis-modelled term; fix the formula, then delete the entry (a strict xfail that passes fails the run).
"""
import json
from pathlib import Path

import pytest

from reportgen.catalog import load_gpus, load_models
from reportgen.estimate import Estimator
from reportgen.models import spec_from_config
from reportgen.validation import scenario_for_case

DATA = Path(__file__).resolve().parent.parent / "presets" / "validation" / "oracle_extra.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
EST = Estimator(load_models(), load_gpus())
TOLERANCE = 0.10

# Dropout is assumed off (0), as in Llama/Qwen/Mistral configs; GPT-2's default of 0.1 is not modelled.
_GPT2_DROPOUT = ("dropout (GPT2Config default attn/resid/embd_pdrop 0.1) is not modelled — the estimator assumes "
                 "dropout 0, as modern LLM configs set it; with sdpa the oracle also routes dropout_p > 0 to the math "
                 "kernel (S x S saved), an upper bound for a real FlashAttention-2 GPU")

XFAIL = {
    "GPT-2/train/bf16/sdpa/b4/s1024/nogc/fused": f"-58.8 %: {_GPT2_DROPOUT}",
    "GPT-2/train/amp/sdpa/b1/s1024/nogc/fused": f"-35.5 %: {_GPT2_DROPOUT}",
    "GPT-2/train/bf16/sdpa/b1/s512/nogc/foreach": f"-27.5 %: {_GPT2_DROPOUT}",
    "GPT-2/train/bf16/eager/b2/s1024/nogc/fused": f"-26.1 %: {_GPT2_DROPOUT} (masks and dropped copies of the "
                                                   "attention probabilities and residual outputs)",
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
    assert {c["config_name"] for c in CASES} == {"Qwen2.5-0.5B", "GPT-2", "GPT-2-nodropout", "Llama-3.2-1B-untied",
                                                 "Llama-tiny-4L-512", "Qwen3-0.6B"}


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES])
def test_parameter_counts_match_transformers(case):
    e = _estimate(case)
    assert e.params_total == case["params"] - (case["trainable_params"] if case["workload"] == "lora" else 0)
    if case["setting"]["mode"] == "train":
        assert int(e["trainable_params"]) == case["trainable_params"]


@pytest.mark.parametrize("case", [_params(c) for c in CASES])
def test_peak_within_ten_percent(case):
    measured = case["peak_bytes"]
    estimated = int(_estimate(case)["allocated_peak"])
    error = (estimated - measured) / measured
    assert abs(error) <= TOLERANCE, f"{case['id']}: estimated {estimated / 2**30:.3f} GiB, " \
                                    f"measured {measured / 2**30:.3f} GiB ({100 * error:+.1f} %)"
