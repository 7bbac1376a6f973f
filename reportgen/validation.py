"""Compare the estimator's allocated peak with peaks measured by running real transformers models.

The measured cases are the validation sets bundled in presets/validation/ (or a file of the same
format given by path): each states a config, a workload and its settings; the estimator sees the same
settings.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError
from .estimate import Estimator, Scenario
from .models import read_json, spec_from_config

_PRECISION = {"bf16": "bf16", "amp": "amp-bf16"}
_ATTENTION = {"sdpa": "flash", "eager": "eager"}


@dataclass(frozen=True)
class ValidationRow:
    case_id: str
    measured_bytes: int
    estimated_bytes: int
    measured_phase: str

    @property
    def error(self) -> float:
        return (self.estimated_bytes - self.measured_bytes) / self.measured_bytes


def scenario_for_case(case: Mapping[str, Any], model_name: str) -> Scenario:
    st = case["setting"]
    common = dict(model=model_name, precision=_PRECISION[st["precision"]], attention=_ATTENTION[st["attn"]],
                  batch_size=st["batch"], gpu="H100-80GB-SXM")
    if st["mode"] == "infer":
        return Scenario(workload="inference", weight_dtype="bf16", kv_dtype="bf16", prompt_len=st["seq"],
                        gen_len=st.get("new_tokens", 0), logits="all" if st.get("logits_to_keep") == 0 else "last",
                        **common)
    lora = st.get("lora")
    return Scenario(workload="lora" if lora else "full", seq_len=st["seq"], prompt_len=0, gen_len=0,
                    checkpointing="full" if st["grad_ckpt"] else "none", optimizer="adamw",
                    optimizer_impl=st.get("optim", "fused"),
                    lora_rank=lora["r"] if lora else 16,
                    lora_targets=lora["targets"] if lora else "q_proj,v_proj", **common)


def validate(measured_path: Path, estimator: Estimator) -> list[ValidationRow]:
    data = read_json(measured_path)
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list):
        raise InputError("expected an object with a 'cases' list", source=str(measured_path))
    rows = []
    for case in data["cases"]:
        name = f"measured:{case['config_name']}"
        spec = spec_from_config(case["config"], name=name, source=str(measured_path))
        est = estimator.with_model(spec).estimate(scenario_for_case(case, name))
        rows.append(ValidationRow(case["id"], case["peak_bytes"], int(est["allocated_peak"]),
                                  case.get("steady_peak_phase") or case.get("peak_phase") or ""))
    return rows


def summary(rows: list[ValidationRow]) -> dict[str, float]:
    errors = [abs(r.error) for r in rows]
    return {"cases": len(rows), "median_abs_error": statistics.median(errors), "max_abs_error": max(errors),
            "within_10_percent": sum(e <= 0.10 for e in errors)}
