"""The estimator against oracle peaks of architectures it was NOT calibrated on.

tests/data/oracle_extra.json holds peaks measured with ../shared/oracle (real transformers models under
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

DATA = Path(__file__).resolve().parent / "data" / "oracle_extra.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
EST = Estimator(load_models(), load_gpus())
TOLERANCE = 0.10

_GPT2_MLP_NORM = ("training_activations (layer_saved_per_token) for GPT-2: gelu_new (pow/tanh/mul chain) saves 5 "
                  "mlp-width tensors, the formula 2 (+18,432 B/token/layer bf16); LayerNorm saves ~4 B/elt, not "
                  "RMSNorm's norm_saved_bytes=8 (-6,144); net +12,288 predicted, +12,041 measured")
_GPT2_EAGER = ("GPT-2 eager attention keeps softmax in bf16 (no fp32 upcast), the formula assumes (4 + act_bytes) "
               "x heads x S per token")
_GPT2_DROPOUT = ("dropout (GPT2Config default attn/resid/embd_pdrop 0.1) is not modelled; with sdpa the oracle routes "
                 "dropout_p > 0 to the math kernel (S x S saved), an upper bound for a real FA2 GPU")
_QK_NORM = ("training_activations misses Qwen3's q_norm/k_norm: each saves fp32 input + bf16 output per q/k element, "
            "(4 + act_bytes) x (q_dim + kv_dim) = 18,432 B/token/layer; measured gap 18,541-18,555")

XFAIL = {
    "GPT-2/train/bf16/sdpa/b4/s1024/nogc/fused":
        f"-63.4 %: activations_saved 9.855 GiB measured vs training_activations 2.199; {_GPT2_DROPOUT}; {_GPT2_MLP_NORM}",
    "GPT-2/train/amp/sdpa/b1/s1024/nogc/fused":
        f"-36.1 %: activations_saved 2.398 GiB vs training_activations 0.890 (autocast copies incl.); {_GPT2_DROPOUT}",
    "GPT-2/train/bf16/sdpa/b1/s512/nogc/foreach":
        f"-31.5 %: activations_saved 0.810 GiB vs training_activations 0.275; {_GPT2_DROPOUT}; {_GPT2_MLP_NORM}",
    "GPT-2/infer/bf16/eager/b1/s1024/logits_to_keep1":
        f"+18.0 %: forward_transient_bytes 0.117 GiB vs 0.059 measured (peak - weights - KV); {_GPT2_EAGER}: "
        "(4 + 3 x act_bytes) = 10 B per score, GPT-2 needs ~5",
    "GPT-2-nodropout/train/bf16/sdpa/b4/s1024/nogc/fused":
        f"-11.1 %: activations_saved 2.750 GiB vs training_activations 2.199; {_GPT2_MLP_NORM}",
    "GPT-2-nodropout/train/bf16/eager/b2/s1024/nogc/fused":
        f"+25.0 %: training_activations 2.786 GiB vs activations_saved 1.936; {_GPT2_EAGER} (-49,152 B/token/layer) "
        f"outweighs the MLP/norm gap (+12,288): 0.844 GiB predicted, 0.850 measured",
    "GPT-2-nodropout/infer/bf16/eager/b1/s1024/logits_to_keep1":
        f"+18.0 %: forward_transient_bytes 0.117 GiB vs 0.059 measured; {_GPT2_EAGER}",
    "Qwen3-0.6B/train/bf16/sdpa/b4/s2048/nogc/fused":
        f"-12.1 %: activations_saved 20.049 GiB vs training_activations 16.088; {_QK_NORM}",
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
