"""Time, throughput and cost: physical limits, published measurements, and what a buyer asks.

Published figures: presets/validation/published_throughput.json (each record with its source and a
verbatim quote; its "reportgen" block maps the run to estimator inputs). Which data what was fitted to:
- the per-GPU training efficiencies in presets/gpus.yaml were fitted to the llm-foundry runs marked
  "fit", and the H100's FP8 efficiency to torchao's float8-over-bfloat16 pair, marked "fit" too
  (scripts/fit_train_efficiency.py); the runs marked "holdout" (torchtitan, the Llama 3 paper,
  Megatron-LM, NVIDIA's DGX Cloud recipes, the FP8 runs of llm-foundry and NeMo, BigScience's BLOOM, MLPerf Training
  v4.0's GPT-3) were never used for fitting;
- the decode, prefill and communication efficiencies are assumptions with their own published
  sources (terms.ASSUMPTIONS); no decode record was fitted.
Targets of issue #16: training within ±15 % median and ±30 % max (not met since the 405B rows carry their
pipeline: see below); decode within ±25 % median.
"""
from __future__ import annotations

import json
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.units import GiB
from reportgen.report.validation import TARGETS, decode_cases, throughput_cases

DATA = json.loads((Path(__file__).resolve().parent.parent / "presets" / "validation" /
                   "published_throughput.json").read_text(encoding="utf-8"))
EST = Estimator(load_models(), load_gpus())
TRAINING = [c for c in throughput_cases(DATA) if c.use != "excluded" and c.dataset == "training"]
MOE_TRAINING = [c for c in throughput_cases(DATA) if c.use != "excluded" and c.dataset == "training_moe"]
MODELZOO = [c for c in MOE_TRAINING if "Megatron-MoE-ModelZoo" in c.source]
DECODE = [c for c in decode_cases(DATA) if c.use != "excluded"]


def _training_errors(use: str) -> list[float]:
    return [c.estimated(EST) / c.published - 1 for c in TRAINING if c.use == use]


def test_enough_published_figures_with_reasons_for_the_rest():
    cases = throughput_cases(DATA) + decode_cases(DATA)
    assert len([c for c in cases if c.use != "excluded"]) >= 20
    assert len(TRAINING) >= 20 and len(DECODE) >= 10
    assert all(c.why for c in cases if c.use == "excluded")


def test_training_fit_rows_at_the_level_reached():
    """The llm-foundry rows the efficiencies were fitted to, and torchao's Llama 3 8B pair (bfloat16 +9.7 %, float8
    +9.7 %: the FP8 efficiency is read from their ratio): largest error 17.3 % today."""
    errors = _training_errors("fit")
    assert len(errors) == 17
    assert max(abs(e) for e in errors) <= 0.18


def test_training_held_out_rows_at_the_level_reached():
    """A hundred and ten runs never fitted to: median |error| 13.9 % today, above issue #32's 10 % target (14.3 % over
    sixty-six before MLPerf Training's Llama 2 70B LoRA benchmark was added, 2026-12-07: every stored submission of
    v4.0 to v5.1 on H100 SXM, H200 SXM or B200 whose layout and throughput the stored files give, one row per round,
    GPU count and layout (the median of its submitters), forty-four: NeMo's FP8 LoRA on one or a few nodes −14.7 to
    +7.9 % (−25 % when LoRA's frozen layers were timed in 16-bit, before that day), at TP 4 × CP 2 with one
    micro-batch a GPU a step on 16 to 1,024 GPUs +16.7 to +77.3 % (no fixed cost per step, one GEMM efficiency), on
    B200 −34.3 to +3.3 % (its FP8 efficiency is the H100's), and Hugging Face's LoRA under DeepSpeed +11.9 and +43.5 %;
    15.5 % over forty-seven
    before MLPerf Training's other rounds were added, 2026-12-07: every NVIDIA-GPU GPT-3 175B submission of v3.0, v3.1
    and v4.1 that is stored, nineteen, FP8 on 64 to 11,616 GPUs, −26.4 to +20.9 %: v3.x's within ±10 % but the two
    largest scales of v3.0 and the three of v3.1 (+13 to +21 %: the estimate's data-parallel traffic hides behind the
    pipeline), v4.1's smaller runs −14 to −26 % (its software had layer CUDA graphs); 18.4 % over
    forty-three before the rest of torchtitan's 2024 A100 tables were added, 2026-12-07: Llama 2 13B at a local batch
    of 2 without checkpointing +13.2 % and with per-op checkpointing +15.5 %, Llama 2 70B with per-op at 1 +21.7 % and
    full at 2 +2.2 %; its two rows with layer-selective checkpointing are excluded, not an option here; 11.5 % over the
    twenty-eight before BigScience's BLOOM runs, MLPerf Training v4.0's GPT-3 175B and torchtitan's H200 table were
    added, 2026-12-07, every row of each table read, none chosen by its error). BLOOM-176B's production run (Megatron-
    DeepSpeed on 384 A100, TP 4 × PP 12, steady state) +5.0 %; its trial at a global batch of 16 (one micro-batch
    through 12 stages) +76.9 %; the topology search's eight iteration-2 snapshots at TP 8 +18.4 to +48.6 % (micro-batch 2
    ran 10 to 11 % slower than 4 there, which the estimate does not show). MLPerf's GPT-3 175B in FP8 on 512 H100
    (PP 8 × VP 4) −21.7 %, on 10,752 and 11,616 (PP 6 × VP 8) +11.2 % and +11.3 %; torchtitan's Llama 3.1 8B in float8
    on 32 and 64 H200 −21.7 % and −20.4 %.
    Before those: median 11.5 % over twenty-eight (15.5 % over
    the nineteen before Megatron-LM's 2024 H100 table and tensor-parallel communication overlap were added,
    2026-12-07; 19.3 % before FP8 training's linear layers were timed at the FP8 peak; 20.8 % over the eleven before
    Korthikanti et al.'s four).
    Megatron-LM's H100 weak-scaling table (README of 2024-07-15, Megatron-Core r0.8.0: GPT 1.7B to 462B, TP up to 8,
    PP up to 16, 48 data-parallel ranks, --tp-comm-overlap): the overlap (tp_overlap) was written after seeing these
    nine rows' errors grow with the TP size (+10.2 % at TP 1, −6.1 % at TP 2, −15.2 % at TP 4, −18.4 % at TP 8: the
    TP communication counted on the critical path); it reads no coefficient. With it the unpipelined rows are
    +10.2, +0.0, −4.2, +3.5 % (the 1.7B's small matrices run below the fitted efficiency), and the pipelined ones
    fall with the 1F1B bubble of their unpublished schedule, mapped without interleaving: PP 2 +0.3 %, PP 4 −7.2 %,
    PP 6 −12.5 %, PP 8 −21.4 %, PP 16 −22.3 %.
    The DGX Cloud recipes (NeMo 24.09 on H100, each table's smallest full-model scale): 8B on 8 GPUs (CP 2) −15.5 % and
    70B on 64 (TP 4, PP 4 × VP 5, CP 2, ub_tp_comm_overlap, mapped as tp_overlap on since 2026-12-07: −19.3 % before)
    −12.0 % in BF16; in FP8 −15.0 % and −3.8 % (−15.1 % before the overlap; −36.7 % and −39.7 % when FP8 was timed at
    the BF16 peak). A gist's LLaMA-7B under DeepSpeed with a Hugging Face model on 8 A800 (2026-12-05) runs 52 % and
    62 % below the estimate: the efficiencies were fitted to llm-foundry's fused MPT code, and reportgen has no
    efficiency per framework. The three Llama 3 405B rows carry their published layout (PP 16, and CP 16 at 128K;
    until 2026-12-04 they were mapped without it, at ±4 %): with their micro-batches (32 and 16, one sequence each)
    the plain 1F1B bubble of 16 stages, and the busiest stage's 8 layers and LM head (since 2026-12-06; Meta balanced
    them by a layer fewer on the first and last stage, which the estimate does not take), make them −39.3 %, −50.5 %
    and −48.9 % (Meta's interleaving depth is not published). Megatron-LM's 2022 runs with sequence parallelism and
    selective recompute (Korthikanti et al., data-parallel size one, no TP overlap then): GPT-3 175B +4.5 %, MT-NLG
    530B −4.7 %, 1T −5.5 %, and the 22B on one node +34.2 % (its smaller matrix multiplications ran at HFU 43.7 %
    where the others ran at 52.8–57.0 %: one efficiency per GPU type). The other six are within ±21.6 %:
    llm-foundry's FP8 MPT-1B at 8k +21.6 % and the 2021 Megatron-LM GPT-3 175B run (tensor 8 × pipeline 16 × data 8)
    at +20.8 % (+25.0 % before its last stage's LM head was counted)."""
    errors = dict(zip((c.id for c in TRAINING if c.use == "holdout"), _training_errors("holdout")))
    assert len(errors) == 110
    assert statistics.median(abs(e) for e in errors.values()) <= 0.139
    lora = {k: e for k, e in errors.items() if "llama2_70b_lora" in _case(k).name.model}
    assert len(lora) == 44
    by_kind: dict[str, list[float]] = {"hf": [], "b200": [], "tp4cp2": [], "rest": []}
    for k, e in lora.items():
        s = _case(k).scenario
        by_kind["hf" if s.framework != "megatron" else "b200" if s.gpu == "B200"
                else "tp4cp2" if (s.tp_size, s.cp_size) == (4, 2) else "rest"].append(e)
    assert len(by_kind["rest"]) == 21 and all(-0.148 <= e <= 0.080 for e in by_kind["rest"]), by_kind["rest"]
    assert statistics.median(abs(e) for e in by_kind["rest"]) <= 0.080
    assert len(by_kind["tp4cp2"]) == 13 and all(0.166 <= e <= 0.773 for e in by_kind["tp4cp2"]), by_kind["tp4cp2"]
    assert len(by_kind["b200"]) == 8 and all(-0.344 <= e <= 0.034 for e in by_kind["b200"]), by_kind["b200"]
    assert sorted(round(e, 3) for e in by_kind["hf"]) == [0.119, 0.435]
    errors = {k: e for k, e in errors.items() if k not in lora}
    torchtitan_a100 = {k: e for k, e in errors.items() if k in ("pub-tr-097", "pub-tr-099", "pub-tr-100", "pub-tr-101")}
    assert len(torchtitan_a100) == 4 and all(0.02 <= e <= 0.218 for e in torchtitan_a100.values()), torchtitan_a100
    bloom = {k: e for k, e in errors.items() if "bigscience-workshop/bigscience" in _case(k).source}
    assert len(bloom) == 10 and 0.05 <= bloom["pub-tr-066"] <= 0.051 and 0.769 <= bloom["pub-tr-067"] <= 0.77
    assert all(0.18 <= e <= 0.486 for k, e in bloom.items() if k not in ("pub-tr-066", "pub-tr-067")), bloom
    mlperf = {k: e for k, e in errors.items() if "mlcommons/training_results" in _case(k).source}
    assert len(mlperf) == 22 and -0.218 <= mlperf["pub-tr-093"] <= -0.217
    assert all(0.111 <= mlperf[k] <= 0.114 for k in ("pub-tr-094", "pub-tr-095"))
    assert all(-0.265 <= e <= 0.21 for e in mlperf.values()), mlperf
    h200 = {k: e for k, e in errors.items() if _case(k).scenario.gpu == "H200-141GB"}
    assert sorted(h200) == ["pub-tr-091", "pub-tr-092"] and all(-0.218 <= e <= -0.203 for e in h200.values())
    errors = {k: e for k, e in errors.items() if k not in bloom | mlperf | h200 | torchtitan_a100}
    assert len(errors) == 28 and statistics.median(abs(e) for e in errors.values()) <= 0.116
    megatron_2024 = {k: e for k, e in errors.items() if "f2e5db402c" in _case(k).source}
    assert len(megatron_2024) == 9
    unpipelined = [e for k, e in megatron_2024.items() if _case(k).scenario.pp_size == 1]
    assert len(unpipelined) == 4 and max(abs(e) for e in unpipelined) <= 0.103
    assert all(-0.224 <= e <= 0.004 for k, e in megatron_2024.items() if _case(k).scenario.pp_size > 1)
    dgx_cloud = {k: e for k, e in errors.items() if k in ("pub-tr-050", "pub-tr-051", "pub-tr-052", "pub-tr-053")}
    assert len(dgx_cloud) == 4 and -0.16 <= dgx_cloud["pub-tr-050"] < -0.15 and -0.121 <= dgx_cloud["pub-tr-051"] < 0
    assert -0.151 <= dgx_cloud["pub-tr-052"] < -0.14 and -0.039 <= dgx_cloud["pub-tr-053"] < 0
    hf_deepspeed = {k: e for k, e in errors.items() if k in ("pub-tr-038", "pub-tr-039")}
    assert len(hf_deepspeed) == 2 and all(0.52 <= e <= 0.62 for e in hf_deepspeed.values()), hf_deepspeed
    llama3 = {k: e for k, e in errors.items() if k in ("pub-tr-024", "pub-tr-025", "pub-tr-026")}
    assert len(llama3) == 3 and all(-0.506 <= e <= -0.392 for e in llama3.values()), llama3
    korthikanti = {k: e for k, e in errors.items() if k in ("pub-tr-046", "pub-tr-047", "pub-tr-048")}
    assert len(korthikanti) == 3 and all(abs(e) <= 0.056 for e in korthikanti.values()), korthikanti
    assert 0 < errors["pub-tr-045"] <= 0.343
    others = [e for k, e in errors.items()
              if k not in llama3 | hf_deepspeed | korthikanti | dgx_cloud | megatron_2024 and k != "pub-tr-045"]
    assert len(others) == 6
    assert statistics.median(abs(e) for e in others) <= 0.118 and max(abs(e) for e in others) <= 0.217


def test_each_published_training_run_fits_in_the_estimate_or_says_why():
    """Every compared training run ran on its GPUs, so the estimate should fit it (device total within the
    GPU's memory); one that does not carries its reason ("memory_miss"), and one that fits carries none. The
    level reached: 118 of 137 fit (MLPerf's Llama 2 70B LoRA, 44 configurations added 2026-12-07: the 27 at TP 4, the
    B200 runs at CP 2 to 8, four H200 runs at TP 2 and Hugging Face's two under ZeRO-3 fit, NeMo's counted as its
    adapters on Megatron-Core layers keep them, an FP8 weight on Blackwell without its transpose, v5.1's runs with
    the FP8 primary weights their implementation builds, and the activations their configurations keep in FP8
    (114 before those; 110 before the transposes; 21 when LoRA under megatron was counted as PEFT's layers on
    transformers' Llama: the TP 4 runs on 4 to 32 H100 over by 27 to 28 GiB); the 9 at TP 1 or 2 on H200, or at
    CP 1 on B200, do not (a Hopper FP8 weight's transpose kept whole; on B200 the allocated peak within 3 % of the
    logged one and the allocator's reserve over); 83 of 93 before
    (MLPerf's other rounds, nineteen GPT-3 175B runs added 2026-12-07, fit at 54 to 78 GiB
    but v4.1's 256-GPU run, 71.7 GiB allocated, by the allocator's reserve and CUDA context; 65 of 74 before: torchtitan's Llama 2 13B on 64 A100 without checkpointing does not: 88.4 GiB
    against 80, the estimate counting transformers' Llama layers, the run torchtitan's own; its three others fit;
    62 of 70 before: BigScience's ten BLOOM runs at 43 to 57 GiB of their 80 GB A100s and torchtitan's
    two float8 runs on H200, added 2026-12-07, fit; MLPerf's GPT-3 175B runs in FP8 on 10,752 and 11,616 H100 fit at
    65.9 GiB with their FP8 primary weights (fp8-te-params, 2026-12-07; 80.8 GiB as fp8-te), on 512 not by the
    allocator's reserve and CUDA context over a 69.8 GiB allocated peak (91.2 GiB as fp8-te), as NeMo's Llama 3.1 8B
    in FP8 (75.8 GiB allocated; 88.8 as fp8-te); 48 of 55 before; Megatron-LM's nine H100 weak-scaling runs, added 2026-12-07, fit at 27.5 to 65.9 GiB,
    the TP overlap's userbuffers included;
    39 of 46 before; torchao's Llama 3 8B pair, added 2026-12-07 to read the FP8 efficiency from, do
    not: torchtitan's per-op selective checkpointing is not modelled, 86.7 and 81.4 GiB against its 47.65 GB; DGX Cloud's Llama 3.1 8B on 8 H100, BF16 and FP8, added 2026-12-07, do not: the
    BF16 one's allocated peak fits and the allocator's reserve does not, FP8's primary weights are not modelled;
    37 of 40 before; DeepSeek-V3's pre-training since its MLA up-projections are recomputed and MLA is
    counted as Megatron-Core saves it, 2026-12-07: 71.9 GiB, 113.3 before; 36 of 40 before that; Korthikanti et al.'s
    four Megatron-LM runs with sequence parallelism and selective
    recompute, added on 2026-12-07, fit at 59 to 71 GiB on their 80 GB A100s; 24 of 35 before Megatron-Core's runs
    were estimated as its layers save and with their --recompute-modules, 2026-12-07; 10 of 30 before llm-foundry's
    17 runs were counted as its own MPT code under Composer's FSDP mixed precision; 6 of 28 before the autocast cache
    under FSDP FULL_SHARD was mended). The misses: the Llama 3 405B runs (3: Meta's memory optimisations are not
    published)."""
    figures = [f for c in TRAINING + MOE_TRAINING for f in c.figures(EST)]
    assert len(figures) == 137
    for f in figures:
        assert f.fits == (not f.memory_miss), f.id
        assert f.memory[1] == EST.estimate(replace(Scenario(model="Llama-3-8B"), gpu=_case(f.id).scenario.gpu))[
            "gpu_memory_bytes"]
    lora = [f.id for f in figures if not f.fits and "llama2_70b_lora" in f.name.model]
    assert len(lora) == 9 and all(_case(k).scenario.tp_size <= 2 for k in lora)
    assert all(_case(k).scenario.cp_size == 1 for k in lora if _case(k).scenario.gpu == "B200")
    assert sorted(f.id for f in figures if not f.fits and f.id not in lora) == [
        "pub-tr-024", "pub-tr-025", "pub-tr-026", "pub-tr-050", "pub-tr-052", "pub-tr-055", "pub-tr-056", "pub-tr-093",
        "pub-tr-097", "pub-tr-117"]


def test_compared_runs_are_scenarios_the_command_line_accepts():
    """A compared run is a scenario `reportgen estimate` would take: no skip rule refuses it. Until 2026-12-07
    Megatron-LM's 1.7B on TP 1 was mapped with tp_overlap on (nothing to overlap), and llm-foundry's fifteen BF16 runs
    under Composer's FSDP as FSDP's mixed-precision policy (fsdp-bf16) under framework hf, which the precision_fsdp
    rule gives to fsdp2 alone (mapped as fsdp2 since: the same time, so the efficiencies fitted to them stand). The one
    exception, left: Llama 3 405B's 128K run has CP 16 under Meta's own framework, mapped as hf (cp_framework), its
    two 8K runs too without CP; which framework of the estimator's Meta's is nearest is not settled."""
    refused = {}
    for c in TRAINING + MOE_TRAINING:
        reason = (EST.with_model(c.spec) if c.spec else EST).skip_check(c.scenario)
        if reason is not None:
            refused[c.id] = reason.code
    assert refused == {"pub-tr-026": "cp_framework"}


def test_no_two_compared_runs_read_alike():
    """The appendix names a run by its model, GPUs, parallel layout (as mapped: TP, PP × VP, CP, EP, the all-to-all
    overlap, the TP communication overlap, ZeRO past stage 1) and length: two compared runs never read alike. Until
    2026-12-06 the name left the layout out, and the Megatron-MoE-ModelZoo's four runs at 4K on 256 H100 (then five)
    read the same."""
    names = [(c.name.model, c.name.setup, c.name.seq_len) for c in TRAINING + MOE_TRAINING]
    assert len(set(names)) == len(names) == 137
    assert _case("pub-tr-051").name.setup.endswith(" · TP 4 · PP 4 × VP 5 · CP 2 · TP overlapped")
    by_id = {c.id: c.name.setup for c in MOE_TRAINING}
    assert by_id["pub-tr-034"].endswith(" · TP 2 · PP 8 × VP 4 · EP 32")
    assert by_id["pub-tr-035"].endswith(" · TP 2 · PP 8 × VP 4 · EP 32 · all-to-all overlapped")
    assert by_id["pub-tr-040"].endswith(" · TP 2 · EP 8 · ZeRO-3")
    assert by_id["pub-tr-044"].endswith(" · TP 4 · PP 8 × VP 4 · CP 8 · EP 8")


def _case(record_id: str):
    return next(c for c in TRAINING + MOE_TRAINING if c.id == record_id)


def test_fp8_training_gains_on_four_held_out_runs_as_published():
    """FP8 training's linear layers at the FP8 peak, at the H100's fp8_train_efficiency (0.394, read from torchao's
    Llama 3 8B float8-over-bfloat16 pair, 1.2503x: rows pub-tr-055/056, marked fit), plus their casts' memory
    traffic; attention, norms and the LM head in 16-bit. Held out on four Transformer Engine runs no coefficient was
    read from: llm-foundry's MPT-3B at 2k +9.7 % and MPT-1B at 8k +21.6 % (−16.7 % and +4.7 % when FP8 was timed at
    the BF16 peak, until 2026-12-07; the 1B's casts weigh most: FP8 gained it 1.10x in llm-foundry's tables),
    NVIDIA's DGX Cloud recipes (NeMo 24.09, Llama 3.1 8B and 70B) −15.0 % and −3.8 % (were −36.7 % and −39.7 %; the
    70B −15.1 % until its TP communication overlap was modelled, 2026-12-07). Those recipes ran FP8 at 1.34x their
    BF16 tokens per GPU on the same layouts; the estimate gains 1.34x and 1.46x (1.41x with the TP communication on
    the critical path: FP8 shortens the compute it hides behind, not the communication), so the FP8 rows are near
    their BF16 twins' error (−15.5 %, −12.0 %)."""
    errors = {c.id: c.estimated(EST) / c.published - 1 for c in TRAINING
              if c.use == "holdout" and c.scenario.precision.startswith("fp8-te") and c.scenario.gpu == "H100-80GB-SXM"
              and "mlcommons/training_results" not in c.source}  # MLPerf's: test_training_held_out_rows_at_the_level_reached
    assert sorted(errors) == ["pub-tr-010", "pub-tr-011", "pub-tr-052", "pub-tr-053"]
    assert 0.09 <= errors["pub-tr-010"] <= 0.10 and 0.21 <= errors["pub-tr-011"] <= 0.22
    for fp8, bf16, gain, error in (("pub-tr-052", "pub-tr-050", (1.33, 1.35), (-0.151, -0.149)),
                                   ("pub-tr-053", "pub-tr-051", (1.46, 1.48), (-0.039, -0.037))):
        assert _case(fp8).published / _case(bf16).published == pytest.approx(1.34, abs=0.005)
        assert gain[0] <= _case(fp8).estimated(EST) / _case(bf16).estimated(EST) <= gain[1]
        assert error[0] <= errors[fp8] <= error[1]
    fit, twin = _case("pub-tr-056"), _case("pub-tr-055")
    assert fit.use == twin.use == "fit" and fit.scenario == replace(twin.scenario, precision="fp8-te")
    assert fit.estimated(EST) / twin.estimated(EST) == pytest.approx(fit.published / twin.published, abs=0.001)


def test_moe_training_held_out_rows_are_as_accurate_as_recorded():
    """#32 item 7: Qwen3-235B-A22B under Megatron-Core on 256 H100 (Megatron-MoE-ModelZoo: layouts with EP 8 in a
    node and EP 32 over four, ETP 1, uneven interleaved pipelines, Megatron-FSDP, and contexts to 128K), none
    fitted, their attention Transformer Engine's fused kernel (attention fused, whose efficiency was read from the
    FlashAttention-3 paper's H100 benchmarks, not from these runs), their recompute Megatron's modules (layernorm+moe_act
    for 'norm, act', layernorm+moe for the long-context table: the attention core not recomputed). The level
    reached: EP32 across nodes with DeepEP −3.1 %, and +23.3 % where the run also overlapped its all-to-all with 1F1B
    (ep_overlap on; +33.4 % until 2026-12-07, when the overlapped all-to-all's kernels began to hold 20 of the SMs,
    a2a_overlap_sm_share: the run gained 11.9 % from the overlap, the estimate still gains 42 %); EP 8 inside a node +11.1 % (A2A, PP 32) and +82.1 % (DeepEP, TP 4 at 4K: the MoE layers' small
    grouped GEMMs, 512 tokens per expert, the token permutations and the router are not modelled; the same layout at
    16K is −5.4 %). Megatron-FSDP (EP 8, no pipeline, full recompute) within 0.1 %. The long-context table (TP 4,
    PP 8 × VP 4, EP 8, CP 1 to 8 for 16K to 128K tokens, forced balance) −5.4 %, −5.7 %, −3.5 %, +0.2 %. Mapped
    with selective recompute (the attention core recomputed) until 2026-12-07 they were −5.3, +28.9, +8.7, +82.1,
    0.0, −0.1, −7.7, −13.0, −15.8 %; at llm-foundry's fitted FlashAttention efficiency (attention flash) −33 % to
    −61 % and the median 33.0 %. A change that widens any of them fails; each run is a layout the estimator
    accepts."""
    errors = {c.id: c.estimated(EST) / c.published - 1 for c in MODELZOO}
    assert len(errors) == 9 and all(EST.skip_check(c.scenario) is None for c in MODELZOO)
    assert all(c.scenario.attention == "fused" for c in MODELZOO)
    assert -0.032 <= errors["pub-tr-034"] < 0 and 0 < errors["pub-tr-035"] <= 0.234
    assert 0 < errors["pub-tr-036"] <= 0.111 and 0 < errors["pub-tr-037"] <= 0.821
    assert abs(errors["pub-tr-040"]) <= 0.001
    long_context = [errors[f"pub-tr-04{n}"] for n in range(1, 5)]
    assert all(abs(e) <= 0.057 for e in long_context)
    assert statistics.median(abs(e) for e in errors.values()) <= 0.054
    flash = {c.id: EST.estimate(replace(c.scenario, attention="flash"))
             for c in MODELZOO if c.id >= "pub-tr-041"}
    assert all(flash[k]["train_tokens_per_s_per_gpu"] < EST.estimate(_case(k).scenario)["train_tokens_per_s_per_gpu"]
               for k in flash)


def test_deepseek_v3_pretraining_is_short_by_the_dualpipe_overlap_it_does_not_model():
    """DeepSeek-V3's report (held out): 180K H800 GPU hours per trillion tokens, 1,543 tokens/s per GPU, on PP 16,
    EP 64 and ZeRO-1 with DualPipe hiding the all-to-all its report puts at about the computation's time (1:1). The
    estimate runs a plain 1F1B pipeline with the all-to-all on the critical path: −50.1 %, about half, as that ratio
    says (−55.8 % before FP8 training's linear layers, its experts' included, were timed at the FP8 peak, and −55.3 %
    before its MLA up-projections were recomputed, 2026-12-07). It fits the run's memory: 71.9 GiB of the H800's 79.6
    with the report's recompute (RMSNorm, MLA up-projections, SwiGLU output). The level reached: within −51 %, short."""
    case = _case("pub-tr-049")
    e = case.estimate(EST)
    assert -0.51 <= e["train_tokens_per_s_per_gpu"] / case.published - 1 < -0.50
    assert 0.25 <= e["moe_a2a_seconds"] / e["slot_seconds"] <= 0.4 and case.miss and not case.memory_miss
    assert case.scenario.checkpointing == "layernorm+mla_up_proj+moe_act"
    assert 71 * GiB <= e["device_total"] <= 72 * GiB < e["gpu_memory_bytes"]


def test_experts_whole_on_their_gpus_skip_the_mlps_tensor_parallel_collectives():
    """Megatron at ETP 1: an MoE layer's tokens reach their experts by the all-to-all, so of a layer's four TP
    collectives per micro-batch (attention's and the MLP's, forward and backward) it keeps attention's two; a
    shared expert (TP-split like a dense MLP) keeps the MLP's."""
    base = Scenario(model="Qwen3-30B-A3B", workload="full", framework="megatron", zero_stage=1, num_gpus=16, tp_size=2,
                    ep_size=8, seq_len=4096, prompt_len=0, gen_len=0, gpu="H100-80GB-SXM", checkpointing="selective")
    split, whole = EST.estimate(base), EST.estimate(replace(base, etp_size=1))
    row = EST.tables["Models"]["Qwen3-30B-A3B"]
    assert row["num_moe_layers"] == row["num_hidden_layers"] and row["shared_expert_intermediate_size"] == 0
    assert whole["tp_comm_seconds"] == pytest.approx(split["tp_comm_seconds"] / 2, rel=1e-12)
    shared = Scenario(**{**base.__dict__, "model": "Qwen1.5-MoE-A2.7B", "ep_size": 4})
    assert EST.estimate(replace(shared, etp_size=1))["tp_comm_seconds"] == EST.estimate(shared)["tp_comm_seconds"]


def test_decode_figures_meet_the_median_target():
    """Time per output token, output tokens/s and end-to-end latency of 11 published serving runs
    (none fitted): median |error| 11.2 % today (target 25 %)."""
    errors = []
    for c in DECODE:
        estimated = c.estimated(EST)
        errors += [estimated[m] / v - 1 for m, v in c.published.items() if m != "ttft_s"]
    assert len(errors) >= 15
    assert statistics.median(abs(e) for e in errors) <= 0.12


def test_figures_beyond_the_target_and_only_those_carry_what_is_known_about_the_miss():
    """The report marks a figure beyond its target (training 30 %, decode 25 % per figure) and prints the
    record's "miss" beside it: a new miss needs its reason in the data, a fixed one loses it."""
    for c in TRAINING:
        beyond = abs(c.estimated(EST) / c.published - 1) > TARGETS["training"]
        assert beyond == bool(c.miss), c.id
    for c in DECODE:
        estimated = c.estimated(EST)
        beyond = any(abs(estimated[m] / v - 1) > TARGETS["decode"] for m, v in c.published.items())
        assert beyond == bool(c.miss), c.id


def test_time_to_first_token_of_single_requests():
    """Prefill at concurrency 1 (three runs): within 25 % each today (8B-70B, 500-5,000 prompt tokens)."""
    for c in DECODE:
        if "ttft_s" in c.published:
            assert abs(c.estimated(EST)["ttft_s"] / c.published["ttft_s"] - 1) <= 0.26, c.id


# ---- physical limits: no estimate beats the hardware ------------------------------------------------

MODELS = ["Llama-3.2-1B", "Llama-2-7B", "Llama-3-8B", "Qwen2.5-7B", "Mixtral-8x7B", "Gemma-2-9B", "Llama-3.1-70B"]
GPUS = sorted(load_gpus())


@st.composite
def scenarios(draw):
    workload = draw(st.sampled_from(["inference", "full", "lora", "qlora"]))
    gpus = draw(st.sampled_from([1, 2, 4, 8, 16, 64]))
    tp = draw(st.sampled_from([t for t in (1, 2, 4, 8) if gpus % t == 0]))
    train = workload != "inference"
    return Scenario(model=draw(st.sampled_from(MODELS)), workload=workload, gpu=draw(st.sampled_from(GPUS)),
                    num_gpus=gpus, tp_size=tp, zero_stage=draw(st.sampled_from([0, 3])) if train and gpus > tp else 0,
                    batch_size=draw(st.integers(1, 256)), seq_len=draw(st.sampled_from([512, 4096, 32768])),
                    prompt_len=0 if train else draw(st.sampled_from([1, 512, 8192])),
                    gen_len=0 if train else draw(st.sampled_from([1, 256, 4096])),
                    checkpointing=draw(st.sampled_from(["none", "full", "selective"])),
                    weight_dtype=draw(st.sampled_from(["bf16", "fp8", "int4"])) if not train else "bf16",
                    grad_accum_steps=draw(st.sampled_from([1, 4])))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_no_estimate_exceeds_peak_flops_or_bandwidth(s):
    if EST.skip_check(s):
        return
    v = EST.estimate(s).values
    gpu = load_gpus()[s.gpu]
    peak = max(gpu.bf16_dense_tflops, gpu.fp8_dense_tflops, gpu.fp32_tflops) * 1e12
    if v["is_train"]:
        # every token costs at least its model FLOPs, spread over every GPU at no more than peak
        assert v["train_tokens_per_s"] * v["train_flops_per_token"] <= s.num_gpus * peak * (1 + 1e-9)
    else:
        # a decode step reads every weight this GPU holds at no more than its memory bandwidth, and
        # computes 2 FLOPs per active parameter per sequence at no more than peak
        assert v["seconds_per_output_token"] * gpu.memory_bandwidth_gbps * 1e9 >= v["weights"] * (1 - 1e-9)
        assert (v["seconds_per_output_token"] * peak * s.tp_size
                >= 2 * v["active_params"] * s.batch_size * (1 - 1e-9))
        assert v["prefill_seconds"] * peak * s.tp_size >= 2 * v["active_params"] * s.prompt_len * s.batch_size * (1 - 1e-9)


# ---- what a buyer asks ---------------------------------------------------------------------------

def test_fine_tuning_time_and_cost_scale_with_tokens_gpus_and_price():
    """8B full fine-tuning on 8 × A100: twice the tokens take twice as long and cost twice as much;
    the bill is GPU-hours × the hourly price; the answer is about half a day per 10^9 tokens."""
    s = Scenario(model="Llama-3-8B", workload="full", gpu="A100-80GB", num_gpus=8, zero_stage=3, seq_len=4096,
                 prompt_len=0, gen_len=0, train_tokens=10**9)
    one, two = EST.estimate(s), EST.estimate(replace(s, train_tokens=2 * 10**9))
    assert two["time_to_train_seconds"] == pytest.approx(2 * one["time_to_train_seconds"])
    assert two["cost_usd"] == pytest.approx(2 * one["cost_usd"])
    price = load_gpus()["A100-80GB"].price_per_hour_usd
    assert one["cost_usd"] == pytest.approx(one["time_to_train_seconds"] / 3600 * 8 * price)
    # by hand: 6 × 8.03e9 FLOPs per token (Kaplan) on 8 GPUs of 312 TFLOP/s at 40-70 % takes 5-11 hours
    assert 5 * 3600 < one["time_to_train_seconds"] < 11 * 3600


def test_more_gpus_train_faster_until_communication_binds():
    s = Scenario(model="Llama-3-8B", workload="full", gpu="H100-80GB-SXM", num_gpus=8, zero_stage=3, seq_len=4096,
                 prompt_len=0, gen_len=0)
    eight, sixteen = EST.estimate(s), EST.estimate(replace(s, num_gpus=16))
    assert sixteen["time_to_train_seconds"] < eight["time_to_train_seconds"]
    assert sixteen["train_tokens_per_s_per_gpu"] <= eight["train_tokens_per_s_per_gpu"] * (1 + 1e-9)


def test_larger_batch_raises_throughput_and_latency():
    """The articles: "a larger batch raises throughput but may raise latency" — both, computed."""
    s = Scenario(model="Llama-3-8B", workload="inference", gpu="H100-80GB-SXM", prompt_len=2048, gen_len=512)
    small, large = EST.estimate(replace(s, batch_size=1)), EST.estimate(replace(s, batch_size=64))
    assert large["tokens_per_s_per_gpu"] > 10 * small["tokens_per_s_per_gpu"]
    assert large["seconds_per_output_token"] > small["seconds_per_output_token"]
    assert large["usd_per_million_tokens"] < small["usd_per_million_tokens"]


def test_checkpointing_costs_one_more_forward():
    """Full checkpointing recomputes the forward: 2N of the 6N FLOPs per token, about a third more."""
    s = Scenario(model="Llama-2-7B", workload="full", gpu="A100-80GB", seq_len=2048, prompt_len=0, gen_len=0)
    none, full = EST.estimate(s), EST.estimate(replace(s, checkpointing="full"))
    assert full["recompute_flops_per_token"] / none["train_flops_per_token"] == pytest.approx(1 / 3, rel=0.02)
    assert 1.25 < full["step_seconds"] / none["step_seconds"] < 1.40


def test_fp8_lora_on_blackwell_allocates_what_its_runs_logged():
    """MLPerf Training v5.0's Llama 2 70B LoRA on B200 logs rank 0's torch.cuda.max_memory_allocated() (mlperf-common's
    max_memory_usage, GiB; pub-tr-142 and -143, held out: no coefficient read from them), beside the estimate's
    allocated peak. Their FP8 primary weights are 1 byte a decoder parameter on Blackwell, whose FP8 GEMMs take
    either layout, so Transformer Engine keeps no transpose (the GPUs sheet's fp8_any_layout, from Transformer
    Engine's code); their FP8 attention (FP8_DPA) and, on 8 B200, FP8 activation store (FP8_ACT) keep Q, K, V, the
    attention's output and the MLP activation's input in FP8 (fp8_activations, as their configurations export them).
    Both rules were written after seeing these two rows 62 % and 78 % over (with the transposes and 16-bit
    activations), then +24.8 % and +1.0 % (without the transposes). Now: at CP 8 (1,024 tokens a GPU) −0.7 %, at CP 1
    (8,192 tokens a GPU) −2.6 %."""
    rows = {r["id"]: r for r in DATA["training"]}
    errors = {}
    for record_id in ("pub-tr-142", "pub-tr-143"):
        case = _case(record_id)
        assert case.use == "holdout" and case.scenario.gpu == "B200" and case.scenario.precision == "fp8-te-params"
        errors[record_id] = case.estimate(EST)["allocated_peak"] / GiB / rows[record_id]["peak_memory_gib"] - 1
    assert -0.008 <= errors["pub-tr-143"] <= -0.006 and -0.027 <= errors["pub-tr-142"] <= -0.025, errors
    assert (_case("pub-tr-142").scenario.fp8_activations, _case("pub-tr-143").scenario.fp8_activations) == (
        "mlp+attention", "attention")
    # the same run's weights on a Hopper GPU keep the transpose: a decoder parameter 2 bytes, not 1
    b200 = _case("pub-tr-143").estimate(EST)
    h200 = EST.estimate(replace(_case("pub-tr-143").scenario, gpu="H200-141GB"))
    decoder = b200["weight_params"] - b200["embedding_params"] - b200["lm_head_params"]
    assert h200["weights"] - b200["weights"] == pytest.approx(decoder, abs=1)
