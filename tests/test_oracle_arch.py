"""The estimator against oracle peaks of architectures its Llama-fitted terms did not describe.

presets/validation/oracle_arch.json: Gemma-2 (soft-capping, four norms, fp32 norm scale; eager only),
Phi-3 (fused qkv and gate_up, rotary by torch.cat), dropout (Llama/Qwen attention dropout, GPT-2 and
GPT-2-medium attention/residual/embedding dropout), LoRA with adapters in the model's dtype, the loss
as LitGPT and torchtune compute it (16-bit, chunked), PEFT's lora_dropout, LitGPT's own training code
(engine litgpt: its model, LoRA and loss code run on the oracle), LoRA with PEFT's modules_to_save
(embedding and LM head trained as copies; each measured with and without), MoE (Mixtral-, Qwen3-MoE- and Qwen2-MoE-shaped, real
tensors, grouped_mm and eager experts), gradient accumulation (2 to 8 micro-batches per optimizer step, HF
and LitGPT), generate() with sliding-window layers (Mistral-, Gemma-2- and Phi-3-shaped, prefilling or
generating past the window), multi-head latent attention (DeepSeek-V2/V3- and Kimi-K2-shaped, every layer dense:
tools/oracle/measure_mla.py), and PEFT LoRA on fused query-key-value layers and plain MLPs (GPT-2, GPT-NeoX, Falcon,
BLOOM, OPT, Phi-3's qkv_proj alone: tools/oracle/measure_lora_layouts.py), with those shapes' full fine-tuning, and
Gemma-7B and Qwen3-8B cut to 4 layers (tools/oracle/measure_catalog_shapes.py). Each record has a split:

- "fit": the shapes the new terms were derived from (Gemma2-small, Phi3-small, Llama-tiny with and
  without attention dropout, GPT-2 124M, Llama-tiny LoRA in bf16 and with other losses, Mixtral-tiny, the
  'moe_experts' prefills of Mixtral- and Qwen3-MoE-shaped models, the Llama-3.2-1B amp checkpointed
  accumulation the end-of-forward phase was read from, MLA's small DeepSeek-V3- and V2-Lite-shaped models and
  their own widths on two layers). Checked at the level
  reached, not evidence of generalisation.
- "holdout": shapes that informed no term (Gemma-2-2B, Phi-3-mini-4k, Qwen2.5-0.5B with attention
  dropout, with bf16 LoRA and with other losses, GPT-2-medium, Llama-3.2-1B-untied with modules_to_save
  without checkpointing (its checkpointed records are fit: they set the count under checkpointing), Qwen2-MoE with a shared expert,
  every other accumulation shape, MLA at DeepSeek-V2's and Kimi-K2's widths, in autocast, eager and without a
  query latent, DeepSeek-V3's and V2's MoE layers on real CPU tensors: tools/oracle/measure_deepseek_moe.py). The
  done criterion of
  issue #18 applies to them: within ±5 %, none under-estimated by more than 3 %.

Dropout records measured with the oracle's CPU dispatch (setting.dropout_dispatch "cpu": bf16 noise
masks instead of bool, SDPA's math kernel instead of FlashAttention-2) are what no GPU runs; the
estimator models the CUDA dispatch, which each of them was re-measured with ("/cuda-dropout"
records). The CPU-dispatch records are checked only as upper bounds.
"""
import json
from dataclasses import replace
import statistics
from pathlib import Path

import pytest

from refdata import router_bias_buffers
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator
from reportgen.model.spec import spec_from_config
from reportgen.model.terms import PEAK_PARTS
from reportgen.report.validation import scenario_for_case

DATA = Path(__file__).resolve().parent.parent / "presets" / "validation" / "oracle_arch.json"
CASES = json.loads(DATA.read_text(encoding="utf-8"))["cases"]
EST = Estimator(load_models(), load_gpus())


def _cpu_dispatch(case) -> bool:
    return case["setting"].get("dropout_dispatch") == "cpu"


# Holdout records outside the criterion, with the reason: none since 2026-12-07, when a layer rebuilt with every weight
# trained was counted by its parts (rebuilt_layer_by_parts): DeepSeek-V2's widths on two layers checkpointed, +5.22 %,
# are +2.73 %; Mistral 7B's layers checkpointed at 8,192 tokens, -5.44 %, whose trace it was read from, are fit since.
KNOWN_MISSES: dict[str, str] = {
    "Falcon-7B-4L/train/amp/eager/b1/s2048/nogc/fused/layouts":
        "-3.79 % (2026-12-07): Falcon-7B's step in autocast peaks inside an eager attention's backward, the softmax's "
        "gradient over 71 heads x S x S, a working set the estimate's backward start does not hold (in bf16 -2.01 %)",
}


def _estimate(case, source: Path = DATA):
    name = f"measured:{case['config_name']}"
    return EST.with_model(spec_from_config(case["config"], name=name, source=str(source))).estimate(
        scenario_for_case(case, name))


def _error(case) -> float:
    return (int(_estimate(case)["allocated_peak"]) - case["peak_bytes"]) / case["peak_bytes"]


def _family(case) -> str:
    if "measure_catalog_shapes" in case.get("notes", ""):
        return "catalog_shapes"
    if "measure_lora_layouts" in case.get("notes", ""):
        return "layouts_full" if case["workload"] == "full" else "lora_layouts"
    if "measure_pp" in case.get("notes", ""):
        return "pp"
    if "measure_tp" in case.get("notes", ""):
        return "tp"
    if "measure_cp" in case.get("notes", ""):
        return "cp"
    if "measure_ulysses" in case.get("notes", ""):
        return "ulysses"
    if "measure_sdpa_mask" in case.get("notes", ""):
        return "sdpa_mask"
    if "measure_op_checkpointing" in case.get("notes", ""):
        return "op_checkpointing"
    if "measure_fsdp2" in case.get("notes", ""):
        return "fsdp2"
    if "measure_sliding_window" in case.get("notes", ""):
        return "sliding_window"
    if "measure_recompute" in case.get("notes", ""):
        return "recompute"
    if "measure_lora_long" in case.get("notes", ""):
        return "lora_long"
    if "measure_rebuilt_layer" in case.get("notes", ""):
        return "rebuilt_layer_1gpu"
    if case["setting"].get("grad_accum", 1) > 1:
        return "grad_accum"
    if "measure_modules_to_save" in case.get("notes", ""):
        return "modules_to_save"
    if "eager prefill working set" in case.get("notes", ""):
        return "eager_prefill"
    if case["setting"].get("engine") == "litgpt":
        return "litgpt"
    if case["setting"].get("loss"):
        return "loss"
    if case["setting"].get("lora", {}).get("dropout"):
        return "lora_dropout"
    name = case["config_name"]
    for prefix, family in (("Gemma", "gemma2"), ("Phi", "phi3"), ("Mixtral", "moe"), ("Qwen2MoE", "moe"), ("Qwen3MoE", "moe"),
                           ("DeepSeek", "mla"), ("KimiK2", "mla"), ("MLA-", "mla"),
                           ("GPT-2", "dropout"), ("Llama-tiny-4L-512-attndrop", "dropout"),
                           ("Qwen2.5-0.5B-attndrop", "dropout")):
        if name.startswith(prefix):
            return family
    return "adapter_dtype" if case["setting"].get("lora", {}).get("adapter_dtype") == "model" else "dropout"


HOLDOUT = [c for c in CASES if c["split"] == "holdout" and not _cpu_dispatch(c)]
FIT = [c for c in CASES if c["split"] == "fit" and not _cpu_dispatch(c)]
# Largest |error| of the fit records reached today, per family (Phi-3's small sdpa prefills, -7.65 %, and
# GPT-2's shortest eager prefill, batch 4 × 512 tokens, -5.9 %, are forward_transient_bytes's; the
# training records are within 1.5 %).
FIT_TOLERANCE = {"gemma2": 0.033, "phi3": 0.077, "moe": 0.034, "dropout": 0.016, "adapter_dtype": 0.005,
                 "loss": 0.006, "lora_dropout": 0.007, "litgpt": 0.026, "modules_to_save": 0.004,
                 "eager_prefill": 0.059, "grad_accum": 0.0005, "sliding_window": 0.029,
                 # checkpointed Llama-2-7B layers: LoRA's frozen ratio +1.01 %; every weight trained (+0.90 % by
                 # recompute_ratio_trained, +0.28 % since the rebuilt layer is counted by its parts)
                 "recompute": 0.011,
                 # Mistral 7B's layers checkpointed on one GPU at 8,192 tokens past the window, whose trace the parts
                 # of the rebuilt layer were read from: -0.73 % (-5.44 % by the ratio)
                 "sdpa_mask": 0.0075,
                 # per-op checkpointing on one GPU at 16,384 tokens: its +6.10 % showed the first recomputed layer's
                 # kept tensors counted twice, -0.09 % since; autocast at 8,192 tokens, whose trace showed the rebuilt
                 # layer's weight casts held, +0.82 % (-1.13 % without them)
                 "rebuilt_layer_1gpu": 0.0085,
                 # LoRA with q/v adapters at 8,192 tokens, whose -6.76 % by the frozen ratio made the rebuilt layer's
                 # parts a floor under it: -0.07 %
                 "lora_long": 0.001,
                 # Llama-2-7B's layers under FSDP2 at 8 ranks with checkpointing, +0.93 % (-6.94 % until the late
                 # backward's prefetched layer and unmade shards, +3.14 % until FSDP2's busiest layer,
                 # phase_fsdp_layer_backward, covered the rebuilt layer: read from Phi-3's trace, -0.31 %); without,
                 # +0.76 % (+4.24 % until that phase, read from its trace and Llama 3 8B's, -0.09 %)
                 "fsdp2": 0.0095,
                 # FSDP2's root unit reduced at the end of backward: the untied Llama-3.2-1B at CP 2 whose trace set
                 # fsdp_root_reduce_bytes (-5.43 % before), -0.00 %
                 "cp": 0.0005,
                 # every TP fit rank within 1.6 % (TP 2 x FSDP2 2 with checkpointing was -4.31 % until FSDP2's root unit
                 # was reduced at the end of backward with every unit resharded: fsdp_root_reduce_bytes) but
                 # Llama-2-7B-wide layers at TP 8 without checkpointing, -1.43 % (a held-out miss at -3.00 % until a
                 # decoder layer's backward beside every saved activation became backward_start's third branch; its
                 # weight gradients arriving then are not counted) and at TP 8 with checkpointing, whose trace showed the
                 # down projection's output gradient gathered whole in backward, -1.57 % (-1.23 % by the ratio)
                 "tp": 0.016,
                 # every PP fit record within 0.3 % (under FSDP2 0.73 %) but Llama-2-7B's layers at 2 stages x 2
                 # micro-batches (-2.27 %: the first backward's gradients appear while every micro-batch is in flight)
                 "pp": 0.023,
                 # multi-head latent attention: every record without checkpointing within 0.02 %; checkpointed, the
                 # small shapes within 0.02 % and DeepSeek-V3's widths on two layers +3.21 % (+4.53 % until the rebuilt
                 # layer was counted by its parts)
                 "mla": 0.033,
                 # torchtitan's per-op checkpointing: Llama 3 8B's layers on one GPU, the probe its term was written
                 # against, -0.40 % (-1.03 % until the rebuilt layer was counted by its parts); Phi-3's FSDP2 rank,
                 # whose trace extended phase_fsdp_layer_backward to it, -0.27 % (+5.51 % before)
                 "op_checkpointing": 0.0045,
                 # LoRA on fused qkv layers and plain MLPs: Falcon's two records, which showed its eager softmax in the
                 # activation dtype, +1.60 % and +1.38 % (+2.89 % and +2.49 % until its one LayerNorm was counted once);
                 # GPT-NeoX's, which showed FastGELU's saved tensors and the first layer's MLP spared under a parallel
                 # residual, -0.47 % and -0.37 %
                 "lora_layouts": 0.0161}


def test_file_is_complete():
    ids = [c["id"] for c in CASES]
    assert len(ids) == len(set(ids)) == 490
    assert {c["split"] for c in CASES} == {"fit", "holdout"}
    assert set(KNOWN_MISSES) <= {c["id"] for c in HOLDOUT}
    # every CPU-dispatch dropout record has its CUDA-dispatch re-measurement
    remeasured = {c["remeasures"].split(":", 1)[1] for c in CASES if "remeasures" in c}
    assert {c["id"] for c in CASES if _cpu_dispatch(c)} <= remeasured
    assert len({c["id"] for c in CASES if c["id"].endswith("/cuda-dropout")}) == 21


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES if _family(c) != "litgpt"])
def test_parameter_counts_match_transformers(case):
    """(LitGPT's records count LitGPT's own model: its LM head is never tied, LoRA may adapt it.)"""
    name = f"measured:{case['config_name']}"
    spec = spec_from_config(case["config"], name=name, source=str(DATA))
    est = EST.with_model(spec).estimate(scenario_for_case(case, name))
    assert est.params_total == case["params"] - (case["trainable_params"] if case["workload"] == "lora" else 0) \
        + router_bias_buffers(spec)


def _holdout_param(case):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case["id"]])] if case["id"] in KNOWN_MISSES else []
    return pytest.param(case, id=case["id"], marks=marks)


@pytest.mark.parametrize("case", [_holdout_param(c) for c in HOLDOUT])
def test_holdout_within_5_percent_and_never_3_percent_under(case):
    """Not fitted to: these shapes informed no term (issue #18's done criterion)."""
    error = _error(case)
    assert -0.03 <= error <= 0.05, f"{case['id']}: {100 * error:+.2f} %"


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in FIT])
def test_fit_shapes_at_the_level_reached(case):
    """Fitted to (the shapes the terms were derived from): a regression check, not a generalisation claim."""
    error = _error(case)
    assert abs(error) <= FIT_TOLERANCE[_family(case)], f"{case['id']}: {100 * error:+.2f} %"


def test_every_peak_breakdown_adds_up_to_its_peak():
    """The report's breakdown parts (PEAK_PARTS) are the allocated peak at its phase, whichever arm of the phase
    binds: where FSDP2's root reduce made the end of backward (every unit resharded), 'Temporaries' left out up to
    21 % of the peak (eight records) until the term read that arm too."""
    short = {c["id"]: sum(e[p] for p in PEAK_PARTS) - e["allocated_peak"]
             for c in CASES for e in (_estimate(c),) if sum(e[p] for p in PEAK_PARTS) != e["allocated_peak"]}
    assert not short, short


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES if _cpu_dispatch(c)])
def test_cpu_dispatch_dropout_is_an_upper_bound(case):
    """bf16 noise masks and the math kernel save more than a GPU's bool masks and FlashAttention-2."""
    assert _error(case) <= 0


def test_holdout_summary_per_family():
    """Median and largest |error| of the holdout per family (known misses included), as the report states."""
    by_family: dict[str, list[float]] = {}
    for case in HOLDOUT:
        by_family.setdefault(_family(case), []).append(abs(_error(case)))
    assert set(by_family) == {"gemma2", "phi3", "moe", "dropout", "adapter_dtype", "loss", "lora_dropout", "litgpt",
                              "modules_to_save", "grad_accum", "recompute", "sliding_window", "fsdp2", "tp", "cp", "pp",
                              "mla", "op_checkpointing", "sdpa_mask", "rebuilt_layer_1gpu", "lora_long", "lora_layouts",
                              "layouts_full", "catalog_shapes", "ulysses"}
    for family, errors in by_family.items():
        # 0.30 % at most today (LitGPT); the sliding-window prefills and generations 0.94 % (their three: +0.98 %,
        # +0.15 %, -0.94 %; counting every layer at the whole context they would be +2.78 %, +0.92 %, -0.87 %)
        # torchtitan's per-op checkpointing: 17 held out, median 0.21 %
        # LoRA at long sequences: six held out, -0.52, +3.56 % (all-linear: the frozen ratio) and -0.10, -1.08, -0.06,
        # -0.04 % (attention adapters: the rebuilt layer's parts, a floor under the ratio; -3.68 to -6.29 % without it)
        # LoRA on fused qkv layers and plain MLPs: ten held out, median 0.73 %, largest OPT's q/k/v/o -1.42 %; the same
        # shapes' full fine-tuning, eleven held out: median 0.75 %, GPT-NeoX checkpointed +4.20 %, Falcon-7B's autocast
        # step -3.79 % (a known miss)
        assert statistics.median(errors) <= {"sliding_window": 0.0095, "tp": 0.0015, "cp": 0.0066, "lora_long": 0.0032,
                                             "pp": 0.0021, "op_checkpointing": 0.0061,
                                             "lora_layouts": 0.0075, "layouts_full": 0.0076}.get(family, 0.005), family
        # 1.78 % at most today: Phi-3-mini's batch-4 prefill of 2,048 tokens, past its 2,047-token window, where
        # transformers masks the window and SDPA takes the memory-efficient kernel. Its cache is the oracle's after the
        # prefill (3,221,225,472 B both) since sliding windows are modelled; the kernel's working set is not.
        # FSDP2's held-out ranks are within 0.9 % (Llama-3.2-1B's two checkpointed ranks at 2 were +7.07 % until
        # FSDP2's units were its decoder layers and its root reduced last: -0.01 %; the tied Llama-3.2-1B at 8 ranks
        # over 512 tokens -6.16 % until the tied embedding's end of backward, and Llama-2-7B-wide layers in mixed
        # precision +6.36 % until the late backward's prefetched layer, are fit since)
        # TP's held-out ranks within 2.9 % (the largest, -2.81 %, Llama-2-7B layers at TP 8 with two sequences,
        # measured after the layer-backward phase was written: its forward peaks above the estimate's); CP's within
        # 1.4 % (its miss, -5.43 %, set FSDP2's root reduce and is fit since); Ulysses' within 1.31 % (median 0.39 %)
        # MLA's held-out within 2.8 % (DeepSeek-V2's widths on two layers checkpointed +2.73 %, a known miss at +5.22 %
        # until the rebuilt layer was counted by its parts; autocast on a small shape, +2.64 %)
        # FSDP2's: 0.83 % (its known miss, -4.10 %, set sdpa_mask_saved_per_token and is fit since); per-op
        # checkpointing's: 0.94 % (Mistral 7B's layers on one GPU +1.43 % by the rebuilt layer's ratio, -0.08 % by its
        # parts); past a sliding window under SDPA within 1.34 % (its known miss, -5.44 %, full checkpointing at 8,192
        # tokens, is fit since: the rebuilt layer's parts were read from its trace); one GPU with every weight trained
        # and the layer rebuilt (measure_rebuilt_layer.py, 4,096 to 16,384 tokens, 13): within 1.07 % (per-op at 12,288
        # tokens), -10.33 % at most by the ratio; the four in autocast within +0.92 %
        assert max(errors) <= {"fsdp2": 0.0084, "tp": 0.029, "cp": 0.014, "ulysses": 0.0132, "pp": 0.017, "mla": 0.028,
                               "op_checkpointing": 0.0095, "sdpa_mask": 0.0135,
                               "rebuilt_layer_1gpu": 0.0107, "lora_long": 0.0357,
                               "lora_layouts": 0.0145, "layouts_full": 0.0421}.get(family, 0.018), family
    op = sorted(abs(_error(c)) for c in HOLDOUT if _family(c) == "op_checkpointing" and c["id"] not in KNOWN_MISSES)
    # the FSDP2 ranks within 0.94 % (Llama 3 8B's layers in mixed precision -3.45 % and in bf16 -2.25 % until
    # phase_fsdp_layer_backward covered per-op checkpointing; eight more measured after it); Mistral's layers on one GPU
    # -0.08 % (+1.43 % until the rebuilt layer was counted by its parts)
    assert len(op) == 17 and op[-1] <= 0.0095
    fsdp2 = [abs(_error(c)) for c in HOLDOUT if _family(c) == "fsdp2" and c["id"] not in KNOWN_MISSES]
    # with the ten held out of measure_fsdp2.py's 'root' set (checkpointed shapes whose root reduce or tied embedding
    # may peak: the untied 128k vocabulary at 2 ranks -0.00 %, in mixed precision at 4 ranks -0.00 %; four tied shapes,
    # -2.02 % to -11.12 % before fsdp_tied_embedding_bytes, within 0.02 %) and the six of its 'prefetch' set (7B/8B-wide
    # layers, checkpointed: -3.00 % to +1.56 % before fsdp_backward_unmade_bytes, within 2.54 % with it, within 0.75 %
    # since phase_fsdp_layer_backward covers the rebuilt layer), the three of 2026-12-07's per-op baselines left held
    # out (Llama 3 8B's layers in mixed precision without checkpointing, +4.77 % until phase_fsdp_layer_backward,
    # -0.07 %; checkpointed -1.44 % and -1.92 %, now -0.09 % and -0.12 %), seven of the eight of its 'layer_backward'
    # set (without checkpointing, measured once that phase was written) and the eight of its 'rebuilt_layer' set (full
    # checkpointing, measured once the phase covered it): the largest +0.83 % (Phi-3's layers at 4 ranks)
    # and the six of its 'positions' set (the busiest layer the last, the second from the back or from the front: within
    # 0.19 %)
    assert len(fsdp2) == 59 and max(fsdp2) <= 0.0084 and statistics.median(fsdp2) <= 0.0006
    tp = [abs(_error(c)) for c in HOLDOUT if _family(c) == "tp" and c["id"] not in KNOWN_MISSES]
    # TP 2 and 4 with checkpointing +1.95/+1.26 % by the rebuilt layer's ratio, +0.27/+0.52 % by its parts; FSDP2 x TP
    # ranks -1.64/-1.86 % until the down projection's output gradient gathered whole was counted, -0.80/-0.91 %
    assert len(tp) == 20 and max(tp) <= 0.029 and statistics.median(tp) <= 0.0015
    # context parallelism: no term was read from these (one CP record is fit: its trace set the root's reduce)
    cp = [abs(_error(c)) for c in HOLDOUT if _family(c) == "cp" and c["id"] not in KNOWN_MISSES]
    assert len(cp) == 13 and max(cp) <= 0.014 and statistics.median(cp) <= 0.0034
    # pipeline parallelism: the stages of torch's 1F1B schedule measured after its terms were written (alone, 12,
    # within 1.05 %; under FSDP2 over each stage's GPUs, 7, the largest Qwen2.5-7B's layers on 4 stages at +1.61 %)
    pp = [abs(_error(c)) for c in HOLDOUT if _family(c) == "pp" and c["id"] not in KNOWN_MISSES]
    assert len(pp) == 19 and max(pp) <= 0.0162 and statistics.median(pp) <= 0.0021
    fsdp = [abs(_error(c)) for c in HOLDOUT if _family(c) == "pp" and "fsdp_world" in c["setting"]]
    assert len(fsdp) == 7 and max(fsdp) <= 0.0162


def test_a_middle_pipeline_stage_is_estimated_as_measured():
    """Every stage of a torch pipeline is measured: the estimate's middle-stage phase against the second stage's
    measured peak (whichever stage is the busiest), on the records measured after the middle stage's terms were written.
    Within 0 to +4.9 %: +0.5 % to +1.4 % under checkpointing, where the receive buffers dominate; +3.5 % and +4.9 %
    without (the micro-batch in backward is partly freed at the measured moment)."""
    middle = [c for c in HOLDOUT if "after the middle stage's terms were written" in c["notes"]]
    errors = {c["id"]: _estimate(c)["phase_pipeline_middle_stage"] / c["stage_peak_bytes"][1] - 1 for c in middle}
    assert len(errors) == 8 and all(0 <= e <= 0.049 for e in errors.values()), errors
    checkpointed = [e for i, e in errors.items() if "/gc/" in i]
    assert len(checkpointed) == 6 and max(checkpointed) <= 0.014


def test_modules_to_save_add_what_peft_trains():
    """With and without modules_to_save, the same shape: the estimate's difference is the oracle's (the
    copies' weights and bf16 AdamW states, their inputs kept), within 0.5 % of that difference."""
    saved = [c for c in CASES if _family(c) == "modules_to_save"]
    pairs = {}
    for c in saved:
        pairs.setdefault(c["id"].replace("/modules-to-save-embed-head", ""), []).append(c)
    assert len(pairs) == 6 and all(len(p) == 2 for p in pairs.values())
    for without, with_saved in (sorted(p, key=lambda c: len(c["id"])) for p in pairs.values()):
        measured = with_saved["peak_bytes"] - without["peak_bytes"]
        estimated = (_error(with_saved) + 1) * with_saved["peak_bytes"] - (_error(without) + 1) * without["peak_bytes"]
        assert estimated == pytest.approx(measured, rel=0.005), with_saved["id"]


def _moe_prefills():
    return [c for c in CASES if _family(c) == "moe" and c["setting"]["mode"] == "infer"]


def test_moe_prefill_working_set_per_experts_implementation():
    """moe_forward_transient_bytes against the oracle's MoE prefills (fit and held out, both implementations):
    every peak within -1.5 % and +3.5 % (the eager loop counted at its worst case, every token to one expert:
    over where the busiest expert got fewer), and per shape the eager loop below grouped_mm as measured."""
    cases = _moe_prefills()
    assert len(cases) == 16
    for case in cases:
        assert -0.015 <= _error(case) <= 0.035, case["id"]
    by_shape = {}
    for case in cases:
        by_shape.setdefault(case["id"].replace("/experts_eager", ""), {})[case["setting"]["experts_implementation"]] = case
    assert len(by_shape) == 8
    for pair in by_shape.values():
        grouped, eager = pair["grouped_mm"], pair["eager"]
        assert eager["peak_bytes"] < grouped["peak_bytes"]
        assert (_error(eager) + 1) * eager["peak_bytes"] < (_error(grouped) + 1) * grouped["peak_bytes"]


def test_moe_grouped_mm_working_set_anchor():
    """Qwen3-MoE-shaped, top-8 of 32 experts, 2,048 tokens, grouped_mm: the oracle's prefill peak less the weights
    and the KV cache is 76,846,080 bytes; the term gives 0.9 % less (the causal mask and the rotary tables,
    outside the MLP)."""
    case = next(c for c in CASES if c["id"] == "Qwen3MoE-tiny-4L-512-32x8/infer/bf16/sdpa/b1/s2048/logits_to_keep1")
    measured = case["peak_bytes"] - 2 * case["params"] - case["kv_cache_bytes_after_prefill"]
    assert measured == 76_846_080
    name = f"measured:{case['config_name']}"
    est = EST.with_model(spec_from_config(case["config"], name=name, source=str(DATA))).estimate(
        scenario_for_case(case, name))
    assert est["moe_forward_transient_bytes"] == pytest.approx(measured, rel=0.01)


def _case(path: Path, case_id: str) -> dict:
    return next(c for c in json.loads(path.read_text(encoding="utf-8"))["cases"] if c["id"] == case_id)


@pytest.mark.parametrize("accumulated, single_file, single", [
    ("Llama-3.2-1B/train/bf16/sdpa/b1/s512/nogc/fused/accum2", "measured.json",
     "Llama-3.2-1B/train/bf16/sdpa/b1/s512/nogc/fused"),
    ("Llama-3.2-1B/train/bf16/sdpa/b4/s2048/gc/fused/accum4", "measured.json",
     "Llama-3.2-1B/train/bf16/sdpa/b4/s2048/gc/fused"),
    ("litgpt:tiny-llama-1.1b/train/bf16/sdpa/b4/s512/nogc/foreach/full/accum8", "oracle_arch.json",
     "litgpt:tiny-llama-1.1b/train/bf16/sdpa/b4/s512/nogc/foreach/full"),
])
def test_accumulation_adds_what_the_oracle_adds(accumulated, single_file, single):
    """The same shape with one micro-batch and with several: the oracle's peak grows by the resident
    gradients and the estimate by the same amount, within 2 % of that growth."""
    many = _case(DATA, accumulated)
    one = _case(DATA.parent / single_file, single)
    grown = many["peak_bytes"] - one["peak_bytes"]
    est_many = _estimate(many)
    estimated = int(est_many["allocated_peak"]) - int(_estimate(one, DATA.parent / single_file)["allocated_peak"])
    assert grown > 0 and est_many["accumulated_gradients"] > 0
    assert abs(estimated - grown) <= 0.02 * grown, (estimated, grown)


@pytest.mark.parametrize("path, case_id", [
    ("oracle_extra.json", "Qwen3-0.6B/train/amp/eager/b2/s1024/gc/fused"),
    ("oracle_arch.json", "Llama-3.2-1B-untied/train/amp/sdpa/b2/s1024/gc/fused/accum2"),
    ("oracle_arch.json", "Qwen3-0.6B/train/amp/eager/b2/s1024/gc/fused/accum2"),
])
def test_end_of_forward_peaks_where_the_oracle_peaks(path, case_id):
    """Under autocast with checkpointing the oracle peaks in the loss's forward (nll_loss_forward), with
    autocast's whole weight cache alive: the estimate names that phase (5) and reaches it within 0.5 %."""
    case = _case(DATA.parent / path, case_id)
    assert (case["steady_peak_phase"], case["steady_peak_op"]) == ("fwd", "aten.nll_loss_forward.default")
    est = _estimate(case, DATA.parent / path)
    assert int(est["peak_phase"]) == 5
    assert abs(int(est["allocated_peak"]) / case["peak_bytes"] - 1) <= 0.005


RECOMPUTE = [c for c in CASES if _family(c) == "recompute"]


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in RECOMPUTE])
def test_first_recomputed_layer_peaks_where_the_oracle_peaks(case):
    """Full checkpointing: backward rebuilds the last layer while every layer's input is held. With a frozen
    base (LoRA) the oracle peaks there, its saved activations being exactly those inputs: the estimate names
    that phase (6), holds the same inputs and a working set within 10 % of the oracle's backward temporaries
    (1.35 × the layer's saved bytes against 1.26-1.45 measured). Full fine-tuning peaks at the end of
    backward, beside every gradient (2); Llama-2-7B's 32,000-token vocabulary makes the loss's logit
    gradients peak first (1)."""
    est = _estimate(case)
    breakdown = case["steady_peak_breakdown"]
    if case["steady_peak_op"] == "aten._log_softmax_backward_data.default":
        assert int(est["peak_phase"]) == 1
    elif case["workload"] == "full":
        assert int(est["peak_phase"]) == 2 and breakdown["gradients"] > 0
    else:
        assert int(est["peak_phase"]) == 6
        assert est["resident_activations"] == est["recompute_start_activations"]
        assert est["recompute_start_activations"] == pytest.approx(breakdown["activations_saved"], rel=0.01)
        assert est["recompute_bytes"] == pytest.approx(breakdown["backward_temporaries"], rel=0.10)


def test_sliding_window_cache_is_what_transformers_holds():
    """kv_cache of generate() with sliding-window layers is, per layer, the most that layer's cache storage
    ever holds: the whole prompt after the prefill (a view keeps the full keys and values), the window once
    decoding passes it. The oracle's two snapshots (after the prefill, after the last token) bound it: it equals
    the larger where every layer peaks at the same moment, and holds at most 1 % more where full layers peak at
    the end and sliding ones after the prefill (Gemma-2's alternation with a long prompt)."""
    cases = [c for c in CASES if _family(c) == "sliding_window"]
    assert len(cases) == 6
    exact = 0
    for case in cases:
        measured = max(case["kv_cache_bytes_after_prefill"], case["kv_cache_bytes_end"])
        estimated = int(_estimate(case)["kv_cache"])
        assert measured <= estimated <= 1.01 * measured, case["id"]
        exact += estimated == measured
    assert exact == 5


def test_fsdp2_ranks_keep_the_sharded_states_and_the_unsharded_working_set():
    """One rank of FSDP2 (tools/oracle/measure_fsdp2.py): the sharded parameters and AdamW states shrink with the
    world, the working set does not (the activations, the loss's backward, the root unit and a decoder layer
    gathered); the estimate follows the oracle across 2, 4 and 8 ranks to 0.05 % where the loss's backward peaks."""
    tiny = sorted((c for c in CASES if c["config_name"] == "Llama-tiny-4L-1024" and _family(c) == "fsdp2"
                   and not c["setting"]["grad_ckpt"]
                   and c["setting"]["precision"] == "bf16"), key=lambda c: c["setting"]["fsdp_world"])
    assert [c["setting"]["fsdp_world"] for c in tiny] == [2, 4, 8]
    states = [c["steady_peak_breakdown"]["parameters"] + c["steady_peak_breakdown"]["optimizer_states"] for c in tiny]
    rest = [c["peak_bytes"] - st for c, st in zip(tiny, states)]
    # (to 0.1 %: each shard is rounded up to 512 bytes, as the CUDA caching allocator does)
    assert states[0] == pytest.approx(2 * states[1], rel=1e-3) == pytest.approx(4 * states[2], rel=1e-3)
    assert rest[0] == pytest.approx(rest[1], rel=1e-3) == pytest.approx(rest[2], rel=1e-3)
    for c in tiny:
        assert abs(_error(c)) <= 0.0005, c["id"]


def test_fsdp2_mixed_precision_shards_fp32_states_and_computes_in_bf16():
    """FSDP2's MixedPrecisionPolicy (fp32 parameters, bf16 compute; the estimator's fsdp-bf16): the same shape and
    world as pure bf16 holds twice the sharded parameters and AdamW states and the same working set (gathered in
    bf16, no autocast); counted as amp-bf16 (fp32 gathered, autocast's copies) it would be 26 % over."""
    pair = {c["setting"]["precision"]: c for c in CASES if c["config_name"] == "Llama-tiny-4L-1024"
            and _family(c) == "fsdp2" and c["setting"].get("fsdp_world") == 2 and not c["setting"]["grad_ckpt"]}
    bf16, mixed = pair["bf16"], pair["fsdp-mixed"]
    states = {k: c["steady_peak_breakdown"]["parameters"] + c["steady_peak_breakdown"]["optimizer_states"]
              for k, c in pair.items()}
    assert states["fsdp-mixed"] == pytest.approx(2 * states["bf16"], rel=1e-3)
    assert mixed["peak_bytes"] - states["fsdp-mixed"] == pytest.approx(bf16["peak_bytes"] - states["bf16"], rel=1e-3)
    assert abs(_error(mixed)) <= 0.0005
    as_amp = EST.with_model(spec_from_config(mixed["config"], name="m", source="x")).estimate(
        replace(scenario_for_case(mixed, "m"), precision="amp-bf16"))["allocated_peak"]
    assert as_amp / mixed["peak_bytes"] - 1 > 0.25


def test_tp_ranks_split_the_states_and_run_unwrapped():
    """One rank of torchtitan's TP + SP (tools/oracle/measure_tp.py): the parameters and AdamW states halve from TP 2
    to TP 4, and the estimate follows both to 0.25 %. A tensor-parallel group alone runs without FSDP2 (no gathered
    units, no reduce-scatter buffers): counted with them, as before, the TP 2 peak was 16 % over."""
    tiny = sorted((c for c in CASES if _family(c) == "tp" and c["config_name"] == "Llama-tiny-4L-1024"
                   and "fsdp_world" not in c["setting"] and not c["setting"]["grad_ckpt"]),
                  key=lambda c: c["setting"]["tp_world"])
    assert [c["setting"]["tp_world"] for c in tiny] == [2, 4]
    states = [c["steady_peak_breakdown"]["parameters"] + c["steady_peak_breakdown"]["optimizer_states"] for c in tiny]
    assert states[0] == pytest.approx(2 * states[1], rel=1e-3)
    for c in tiny:
        assert abs(_error(c)) <= 0.0025, c["id"]
    alone = _estimate(tiny[0])
    assert alone["fsdp2_wraps"] == 0 and alone["zero3_buffer"] == 0 and alone["fsdp_reduce_scatter_bytes"] == 0
    wrapped = next(_estimate(c) for c in CASES if _family(c) == "tp" and c["config_name"] == "Llama-tiny-4L-1024"
                   and c["setting"].get("fsdp_world") == 2 and not c["setting"]["grad_ckpt"])
    assert wrapped["fsdp2_wraps"] == 1 and wrapped["zero3_buffer"] > 0
    assert (alone["allocated_peak"] + wrapped["zero3_buffer"]) / tiny[0]["peak_bytes"] - 1 > 0.1


def test_torchtitan_rules_need_its_sequence_parallelism():
    """torchtitan pairs TP with SP always (the oracle's plan cannot run without it: the norms' weights stay plain
    tensors beside DTensors); FSDP2 with TP and sequence_parallel off is not its plan, and the generic rules apply:
    the loss's two logit gradients (loss_parallel's backward makes three), no whole-vocabulary embedding gradient, no
    gathered inputs saved."""
    case = next(c for c in CASES if _family(c) == "tp" and c["setting"]["tp_world"] == 2 and "fsdp_world" not in c["setting"]
                and c["config_name"] == "Llama-tiny-4L-1024" and not c["setting"]["grad_ckpt"])
    name = f"measured:{case['config_name']}"
    est = EST.with_model(spec_from_config(case["config"], name=name, source=str(DATA)))
    titan = est.estimate(scenario_for_case(case, name))
    plain = est.estimate(replace(scenario_for_case(case, name), sequence_parallel="off"))
    assert titan["titan_tp"] == 1 and plain["titan_tp"] == 0
    assert 3 * plain["loss_backward_bytes"] == 2 * titan["loss_backward_bytes"]
    assert titan["embedding_backward_bytes"] > 0 == plain["embedding_backward_bytes"]
    assert titan["sp_gathered_saved_per_token"] > 0 == plain["sp_gathered_saved_per_token"]


def test_every_held_out_multi_rank_peak_within_3_percent():
    """Issue #32's multi-rank criterion, on the ranks no term was read from: one rank of FSDP2 (without, under full and
    under torchtitan's per-op checkpointing, past a sliding window under SDPA), torchtitan's TP (with SP, alone or
    under FSDP2), torch's CP under FSDP2, Ulysses' all-to-alls around SDPA under FSDP2 (DeepSpeed's context
    parallelism, 2026-12-07: ten ranks, -1.31 to -0.00 %) and every stage of torch's PP (alone or under FSDP2), at least
    30 cases, each within ±3 %: all 138, the largest 2.81 % (TP 8 with two sequences). Earlier misses set terms and are fit records
    since: FSDP2's +6.36 % and -6.16 %, CP's -5.43 %, FSDP2's busiest decoder layer in backward
    (phase_fsdp_layer_backward), read from Llama 3 8B's layers without checkpointing (+7.70 %), Phi-3's under full
    (-5.87 %) and under per-op checkpointing (+5.51 %), and Mistral 7B's layers past its sliding window under SDPA
    (-4.10 %: sdpa_mask_saved_per_token)."""
    ranks = [c for c in HOLDOUT if _family(c) in ("fsdp2", "tp", "cp", "ulysses", "pp")
             or (_family(c) in ("op_checkpointing", "sdpa_mask") and "fsdp_world" in c["setting"])]
    errors = {c["id"]: _error(c) for c in ranks}
    assert len(errors) == 138 and {_family(c) for c in ranks} == {"fsdp2", "tp", "cp", "ulysses", "pp",
                                                                  "op_checkpointing", "sdpa_mask"}
    assert max(abs(e) for k, e in errors.items() if "ulysses" in k) <= 0.0132
    assert max(abs(e) for e in errors.values()) <= 0.0281


@pytest.mark.parametrize("case", [pytest.param(c, id=c["id"]) for c in CASES
                                  if _family(c) == "litgpt" and c["workload"] == "lora"])
def test_litgpts_adapters_are_counted_as_its_code_makes_them(case):
    """LitGPT's own LoRA (its records' trainable parameters, counted on LitGPT's model): q, k and v in its fused qkv
    layer each get their own A where PEFT's fused layer has one (Phi-3's fused gate and up too); the LM head's adapter
    that its 'all' configs add (lora_head) is not among the target sets, so it is added here, r × (hidden + vocab)."""
    name = f"measured:{case['config_name']}"
    spec = spec_from_config(case["config"], name=name, source=str(DATA))
    lora = case["setting"]["lora"]
    head = lora["r"] * (spec.hidden_size + spec.vocab_size) if lora.get("litgpt_head_adapter") else 0
    assert int(EST.with_model(spec).estimate(scenario_for_case(case, name))["trainable_params"]) + head \
        == case["trainable_params"]
