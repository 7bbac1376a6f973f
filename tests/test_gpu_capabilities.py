"""What a GPU can run (#34): a V100 (Volta) has no bf16, so bf16 recipes, weights and caches are refused on it
with the reason, and the plan does not rank it for them; fp16 runs. Every GPU of the catalogue states it."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.planning.plan import plan

EST = Estimator(load_models(), load_gpus())
V100 = "V100-32GB"
TRAIN = Scenario(model="Llama-3.2-1B", workload="full", seq_len=2048, prompt_len=0, gen_len=0, gpu=V100)
SERVE = Scenario(model="Llama-3.2-1B", workload="inference", prompt_len=512, gen_len=128, gpu=V100)


def test_every_gpu_states_bf16_and_only_volta_lacks_it():
    gpus = load_gpus()
    assert {name for name, g in gpus.items() if not g.bf16} == {V100}
    assert all(g.bf16 in (0, 1) for g in gpus.values())


def test_bf16_work_is_refused_on_a_v100_and_fp16_runs():
    for s in (TRAIN, replace(TRAIN, precision="amp-bf16"), replace(TRAIN, precision="bf16"), SERVE,
              replace(SERVE, weight_dtype="fp16")):  # the last: its KV cache is still bf16
        assert "no bf16" in EST.skip_reason(s), s.label()
    assert EST.skip_reason(replace(TRAIN, precision="fp16-mixed")) is None
    assert EST.skip_reason(replace(SERVE, weight_dtype="fp16", kv_dtype="fp16")) is None
    assert EST.skip_reason(replace(TRAIN, gpu="A100-80GB")) is None


def test_the_plan_does_not_rank_a_v100_for_bf16_and_says_why():
    gpus = ["A100-80GB", V100]
    found = plan(EST, TRAIN, gpus)
    assert [o.gpu for o in found.options] == ["A100-80GB"]
    miss = found.misses[0]
    assert miss.gpu == V100 and miss.nearest is None and [r.code for r in miss.skipped] == ["bf16_gpu"]
    assert V100 in [o.gpu for o in plan(EST, replace(TRAIN, precision="fp16-mixed"), gpus).options]


# ---- data-centre licensing: GeForce cards ----------------------------------------------------------

def test_every_gpu_states_whether_it_may_run_in_a_data_centre():
    """NVIDIA's GeForce driver licence, §2.1.3 'No Datacenter Deployment': the GeForce cards, and only they."""
    gpus = load_gpus()
    assert {name for name, g in gpus.items() if not g.datacenter} == {"RTX-4090", "RTX-3090"}


@pytest.mark.slow  # several seconds: the full run has it
def test_a_geforce_pick_says_so_in_the_summary():
    from reportgen.pipeline import load, make_report
    from reportgen.report.views import build_view
    report = make_report(load("default"), "2026-01-01T00:00:00+00:00")
    for lang, words in (("en", "is a GeForce card"), ("zh", "是 GeForce 消费级显卡")):
        verdicts = build_view(report, lang).verdicts
        picks = [rec.best.result.gpu if rec.best else None for rec in report.recommendations]
        assert any(g in ("RTX-4090", "RTX-3090") for g in picks)
        for gpu, v in zip(picks, verdicts):
            assert (words in v.verdict) == (gpu in ("RTX-4090", "RTX-3090")), (gpu, v.verdict)


def test_the_plan_can_leave_geforce_cards_out():
    import json
    from click.testing import CliRunner
    from reportgen.cli import main
    args = ["plan", "--model", "Llama-2-7B", "--prompt-len", "2048", "--gen-len", "2048", "--json"]
    every = json.loads(CliRunner().invoke(main, args).output)
    datacenter = json.loads(CliRunner().invoke(main, args + ["--datacenter-only"]).output)
    assert {"RTX-4090", "RTX-3090"} & {o["gpu"] for o in every["options"]}
    assert not {"RTX-4090", "RTX-3090"} & {o["gpu"] for o in datacenter["options"]} and datacenter["options"]
    refused = CliRunner().invoke(main, ["plan", "--model", "Llama-2-7B", "--gpu", "RTX-4090", "--datacenter-only"])
    assert refused.exit_code == 2 and "leaves no GPU type" in refused.output


def test_the_mi300x_efficiencies_are_the_h200s_over_the_published_ratio():
    """A single MI300X trained an 8B model in BF16 1.32x to 1.40x slower than a single H200 (the public comparison
    quoted in its efficiency_source): at the midpoint, each of its efficiencies is the H200's scaled by the two BF16
    peaks and divided by the ratio, so the estimate's MI300X trains 1.36x slower than its H200, not 1.32x faster."""
    gpus = load_gpus()
    h200, mi300x = gpus["H200-141GB"], gpus["MI300X"]
    assert "1.32x to 1.40x" in mi300x.efficiency_source
    for efficiency in ("train_efficiency", "attention_efficiency"):
        expected = getattr(h200, efficiency) * h200.bf16_dense_tflops / mi300x.bf16_dense_tflops / ((1.32 + 1.40) / 2)
        assert getattr(mi300x, efficiency) == pytest.approx(expected, abs=5e-4)
    est = Estimator(load_models(), gpus)
    s = Scenario(model="Llama-3-8B", workload="full", seq_len=4096, batch_size=1, prompt_len=0, gen_len=0,
                 gpu="H200-141GB")
    h200_rate, mi300x_rate = (est.estimate(replace(s, gpu=g))["train_tokens_per_s"] for g in ("H200-141GB", "MI300X"))
    assert h200_rate / mi300x_rate == pytest.approx(1.36, rel=0.01)


HOPPER = ("H100-80GB-SXM", "H100-80GB-PCIe", "H200-141GB", "H20", "H800-80GB")


def test_fp8_training_efficiency_is_read_on_hopper_and_claims_no_gain_elsewhere():
    """The H100's fp8_train_efficiency is read from torchao's published pair (tests/test_throughput.py checks the
    read); the other Hopper GPUs share it, as does the B200, whose BF16 efficiencies are the H100's too (a guess,
    stated in its efficiency_source); a GPU with FP8 tensor cores but no FP8 training benchmark otherwise gets the
    efficiency at which its FP8 linear layers run at its BF16 rate, so FP8 training there is no faster than BF16 (its
    casts make it a little slower). Without FP8 tensor cores the efficiency is 0."""
    gpus = load_gpus()
    assert gpus["B200"].train_efficiency == gpus["H100-80GB-SXM"].train_efficiency
    for name, g in gpus.items():
        assert (g.fp8_dense_tflops > 0) == (g.fp8_train_efficiency > 0), name
        if name in HOPPER + ("B200",):
            assert g.fp8_train_efficiency == gpus["H100-80GB-SXM"].fp8_train_efficiency
        elif g.fp8_dense_tflops:
            assert g.fp8_train_efficiency * g.fp8_dense_tflops == pytest.approx(
                g.train_efficiency * g.bf16_dense_tflops, rel=0.005), name
            s = replace(TRAIN, model="Llama-3.1-8B", gpu=name, seq_len=1024)
            assert EST.estimate(replace(s, precision="fp8-te"))["step_seconds"] >= EST.estimate(s)["step_seconds"]


def test_fp8_training_gains_more_on_wider_matrices():
    """torchao's rule: FP8 saves GEMM time in proportion to the FLOPs (hidden × width per token) and pays casts in
    proportion to the elements (hidden + width), so its gain grows with the model's width: on one H100 at 2,048
    tokens, Llama 3.2 1B < Llama 3.1 8B < Qwen2.5 32B (each a gain)."""
    def gain(model):
        s = Scenario(model=model, workload="full", seq_len=2048, batch_size=1, prompt_len=0, gen_len=0,
                     gpu="H100-80GB-SXM", checkpointing="full")
        return EST.estimate(s)["step_seconds"] / EST.estimate(replace(s, precision="fp8-te"))["step_seconds"]
    gains = [gain(m) for m in ("Llama-3.2-1B", "Llama-3.1-8B", "Qwen2.5-32B")]
    assert 1 < gains[0] < gains[1] < gains[2] < 2, gains


def test_a_gpu_with_fp8_tensor_cores_states_its_fp8_training_efficiency(tmp_path):
    from reportgen.errors import InputError
    from reportgen.model.catalog import data_dir
    text = (data_dir("presets") / "gpus.yaml").read_text(encoding="utf-8")
    edited = tmp_path / "gpus.yaml"
    edited.write_text(text.replace("fp8_train_efficiency: 0.394", "fp8_train_efficiency: 0", 1), encoding="utf-8")
    with pytest.raises(InputError, match=r"gpus\[2\]\.fp8_train_efficiency.*expected a positive fp8_train_efficiency"):
        load_gpus(edited)


def test_fp8_weights_keep_a_transpose_only_where_fp8_gemms_need_one():
    """Hopper's and Ada's FP8 GEMMs take only the TN layout, so Transformer Engine keeps each FP8 weight with its
    transpose; Blackwell's take either (fp8_any_layout 1: B200, RTX PRO 6000 Blackwell). Llama-2-7B, full training
    under megatron: fp8-te adds 1 byte a decoder parameter per layout to the bf16 weights (2 on an H100, 1 on a B200);
    fp8-te-params holds the FP8 weight in its layouts where the bf16 one was (2 bytes on an H100, 1 on a B200)."""
    gpus = load_gpus()
    assert {g for g, spec in gpus.items() if spec.fp8_any_layout} == {"B200", "RTX-PRO-6000-Blackwell"}
    assert all(spec.fp8_dense_tflops > 0 for spec in gpus.values() if spec.fp8_any_layout)
    full = Scenario(model="Llama-2-7B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, framework="megatron")
    weights = {(g, p): EST.estimate(replace(full, gpu=g, precision=p))
               for g in ("H100-80GB-SXM", "B200") for p in ("bf16-mixed", "fp8-te", "fp8-te-params")}
    bf16 = weights["H100-80GB-SXM", "bf16-mixed"]
    decoder = bf16["weight_params"] - bf16["embedding_params"] - bf16["lm_head_params"]
    for gpu, layouts in (("H100-80GB-SXM", 2), ("B200", 1)):
        assert weights[gpu, "bf16-mixed"]["weights"] == bf16["weights"] == 2 * bf16["weight_params"]
        assert weights[gpu, "fp8-te"]["weights"] == bf16["weights"] + layouts * decoder
        assert weights[gpu, "fp8-te-params"]["weights"] == bf16["weights"] - (2 - layouts) * decoder
