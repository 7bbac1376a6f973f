"""The estimator against published fine-tuning memory figures (presets/validation/published_finetune.json).

Each record carries a "reportgen" block (scripts/annotate_finetune.py): the estimator inputs of the run,
the level the figure reports (allocated_peak for torch.cuda.max_memory_allocated and torchtune's active
bytes, reserved_peak for max_memory_reserved, device_total for nvidia-smi) and whether it is compared
("holdout") or excluded, with the reason. Nothing in the estimator was fitted to these figures: the
LitGPT engine's terms were checked against LitGPT's own code run on the oracle (oracle_arch.json), the
DeepSpeed defaults come from its config. Issue #18's target: median |error| within 5 %, largest within 15 %.
Both are met (a record beyond 15 % would say in its "miss" what is known about it). Each
LitGPT run is compared with its yaml's gradient accumulation (the record's grad_accum): the gradients of
the earlier micro-batches stay resident, which TinyLlama's and Gemma-2B's full fine-tunes (pub-ft-011,
-016) show and the oracle confirms (oracle_arch.json, the accumulation records).
"""
import json
import statistics
from dataclasses import replace

import pytest

from refdata import VALIDATION
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator
from reportgen.report.validation import TARGETS, finetune_cases, published_rows, published_summary

DATA = json.loads((VALIDATION / "published_finetune.json").read_text(encoding="utf-8"))
CASES = finetune_cases(DATA)
EST = Estimator(load_models(), load_gpus())
COMPARED = [c for c in CASES if c.use != "excluded"]
LEVEL_TERM = {"allocated": "allocated_peak", "reserved": "reserved_peak", "nvidia-smi": "device_total"}

# Figures beyond the target, with what is known about each: stored with the data (the report prints it).
KNOWN_MISSES = {c.id: c.miss for c in COMPARED if c.miss}


def test_every_record_is_annotated():
    assert len(DATA["records"]) == len(CASES) == 137
    for record, case in zip(DATA["records"], CASES):
        assert case.use in ("holdout", "excluded"), case.id
        if case.use == "excluded":
            assert case.why, case.id
        else:
            assert record["complete"], f"{case.id}: an incomplete record is compared"
            assert case.level == LEVEL_TERM[record["level"]], case.id
    # three LitGPT LoRA runs on a gpt_neox model were excluded on 2026-12-07 while LoRA on its fused query_key_value was
    # not modelled, and compared again the same day once it was, with LitGPT's Falcon-7B LoRA run (-1.80 %)
    assert len(COMPARED) == 21
    assert not KNOWN_MISSES


def _param(case):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[case.id])] if case.id in KNOWN_MISSES else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in COMPARED])
def test_published_figure_within_15_percent(case):
    """Not fitted to: each figure at the level it reports."""
    error = case.estimated(EST) / case.published_bytes - 1
    assert abs(error) <= TARGETS["finetune"] == 0.15, f"{case.id}: {100 * error:+.1f} %"


def test_median_and_largest_error_at_the_level_each_reports():
    rows = published_rows(VALIDATION / "published_finetune.json", EST)
    errors = [abs(r.error) for r in rows]
    assert len(errors) == 21
    assert statistics.median(errors) <= 0.05  # issue #18's target
    assert statistics.median(errors) <= 0.025  # the level reached: 2.2 %
    # the level reached: 12.9 % (pub-ft-014, Gemma-2B LoRA under LitGPT; 12.3 % until 2026-12-07, mapped at rank 16
    # where its config sets 8)
    assert max(errors) <= 0.129
    by_level = published_summary(rows)
    assert set(by_level) == {"all", "allocated_peak", "device_total", "reserved_peak"}
    assert by_level["allocated_peak"]["figures"] == 18 and by_level["allocated_peak"]["median_abs_error"] <= 0.025


def test_every_compared_run_is_a_scenario_the_command_line_accepts():
    """No skip rule refuses a compared run: until 2026-12-07 three LitGPT LoRA runs of StableLM-Alpha 3B (gpt_neox,
    whose fused query_key_value no target set named) were compared with no adapter in their estimate; since LoRA is
    modelled on fused qkv layers they are compared with their adapters (-1.15 %, -1.93 %, -2.83 %)."""
    refused = {c.id: reason.code for c in COMPARED
               if (reason := (EST.with_model(c.spec) if c.spec else EST).skip_check(c.scenario)) is not None}
    assert refused == {}


def test_torchtitans_per_op_checkpointing_runs_reserve_what_they_published():
    """torchtitan's Llama 3.1 8B benchmark (Dec 2024, FSDP2 over 8 and 128 H100, two sequences of 8,192 tokens, its
    8B config's per-op selective checkpointing; reserved memory, GiB): excluded until 2026-12-07, when per-op
    checkpointing was modelled (the estimator's selective is the attention core's), held out since: -8.4 % and
    -4.6 %. Under 'selective' they would be far over (the attention core alone recomputed keeps every other tensor)."""
    by_id = {c.id: c for c in COMPARED}
    for record_id, low, high in (("pub-ft-066", -0.09, -0.08), ("pub-ft-067", -0.05, -0.04)):
        case = by_id[record_id]
        assert case.scenario.checkpointing == "op" and case.level == "reserved_peak"
        assert low <= case.estimated(EST) / case.published_bytes - 1 <= high, record_id
        selective = EST.estimate(replace(case.scenario, checkpointing="selective"))["reserved_peak"]
        assert selective / case.published_bytes - 1 > 0.15


def test_each_run_is_compared_with_the_accumulation_its_record_states():
    """The record's grad_accum (from the source's config) is the scenario's grad_accum_steps; the LitGPT
    full fine-tunes accumulate gradients over 8 (TinyLlama) and 4 (Gemma-2B, FSDP: unsharded) micro-batches."""
    by_id = {r["id"]: r for r in DATA["records"]}
    for case in COMPARED:
        assert case.scenario.grad_accum_steps == (by_id[case.id].get("grad_accum") or 1), case.id
    tiny, gemma = (next(c for c in COMPARED if c.id == i) for i in ("pub-ft-011", "pub-ft-016"))
    assert (tiny.scenario.grad_accum_steps, gemma.scenario.grad_accum_steps) == (8, 4)
    for case in (tiny, gemma):
        assert abs(case.estimated(EST) / case.published_bytes - 1) <= 0.035, case.id  # -1.4 % and +3.0 % today
