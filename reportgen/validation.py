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

from .errors import InputError, unknown_name
from .estimate import Estimator, Scenario
from .models import ModelSpec, read_json, spec_from_config

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


# The file's setting keys for the scenario inputs they give (error messages name the file's key).
_FILE_KEYS = {"batch_size": "batch", "prompt_len": "seq", "seq_len": "seq", "gen_len": "new_tokens",
              "optimizer_impl": "optim", "lora_rank": "lora.r", "lora_targets": "lora.targets"}
_REQUIRED = object()


def scenario_for_case(case: Mapping[str, Any], model_name: str, *, source: str | None = None,
                      where: str = "case") -> Scenario:
    """The scenario a measured case ran, validated by the input table like a preset's."""
    st = case.get("setting")
    if not isinstance(st, Mapping):
        raise InputError(f"expected a mapping, got {st!r}", source=source, key_path=f"{where}.setting")

    def get(key, allowed=None, default=_REQUIRED):
        if key not in st:
            if default is _REQUIRED:
                raise InputError("missing required key", source=source, key_path=f"{where}.setting.{key}")
            return default
        if allowed is not None and not (isinstance(st[key], str) and st[key] in allowed):
            raise unknown_name(key, st[key], allowed, source=source, key_path=f"{where}.setting.{key}")
        return st[key]

    values = dict(model=model_name, precision=_PRECISION[get("precision", _PRECISION)],
                  attention=_ATTENTION[get("attn", _ATTENTION)], batch_size=get("batch"), gpu="H100-80GB-SXM")
    if get("mode", ("infer", "train")) == "infer":
        values.update(workload="inference", weight_dtype="bf16", kv_dtype="bf16", prompt_len=get("seq"),
                      gen_len=get("new_tokens", default=0),
                      logits="all" if get("logits_to_keep", default=None) == 0 else "last")
    else:
        lora = get("lora", default=None) or {}
        if not isinstance(lora, Mapping):
            raise InputError(f"expected a mapping with r and targets, got {lora!r}", source=source,
                             key_path=f"{where}.setting.lora")
        checkpointing = get("grad_ckpt")
        if not isinstance(checkpointing, bool):
            raise InputError(f"expected true or false, got {checkpointing!r}", source=source,
                             key_path=f"{where}.setting.grad_ckpt")
        values.update(workload="lora" if lora else "full", seq_len=get("seq"), prompt_len=0, gen_len=0,
                      checkpointing="full" if checkpointing else "none", optimizer="adamw",
                      optimizer_impl=get("optim", default="fused"), lora_rank=lora.get("r", 16),
                      lora_targets=lora.get("targets", "q_proj,v_proj"))
    return Scenario.from_mapping(values, models=(model_name,), gpus=(values["gpu"],), source=source,
                                 key_path=lambda name: f"{where}.setting.{_FILE_KEYS.get(name, name)}")


def validate(measured_path: Path, estimator: Estimator) -> list[ValidationRow]:
    source = str(measured_path)
    data = read_json(measured_path)
    if not isinstance(data, dict) or not isinstance(data.get("cases"), list) or not data["cases"]:
        raise InputError("expected an object with a non-empty 'cases' list", source=source)
    rows = []
    for i, case in enumerate(data["cases"]):
        where = f"cases[{i}]"
        if not isinstance(case, Mapping):
            raise InputError(f"expected a mapping, got {case!r}", source=source, key_path=where)
        for key in ("id", "config_name", "config", "setting", "peak_bytes"):
            if key not in case:
                raise InputError("missing required key", source=source, key_path=f"{where}.{key}")
        for key in ("id", "config_name", "steady_peak_phase", "peak_phase"):
            if not isinstance(case.get(key, ""), str):
                raise InputError(f"expected text, got {case[key]!r}", source=source, key_path=f"{where}.{key}")
        peak = case["peak_bytes"]
        if isinstance(peak, bool) or not isinstance(peak, int) or peak <= 0:
            raise InputError(f"expected a positive whole number of bytes, got {peak!r}", source=source,
                             key_path=f"{where}.peak_bytes")
        name = f"measured:{case['config_name']}"
        spec = spec_from_config(case["config"], name=name, source=source)
        scenario = scenario_for_case(case, name, source=source, where=where)
        est = estimator.with_model(spec).estimate(scenario)
        rows.append(ValidationRow(case["id"], peak, int(est["allocated_peak"]),
                                  case.get("steady_peak_phase") or case.get("peak_phase") or ""))
    return rows


def summary(rows: list[ValidationRow]) -> dict[str, float]:
    errors = [abs(r.error) for r in rows]
    return {"cases": len(rows), "median_abs_error": statistics.median(errors), "max_abs_error": max(errors),
            "within_10_percent": sum(e <= 0.10 for e in errors)}


# ---------------------------------------------------------------------------------------------
# Published throughput (presets/validation/published_throughput.json): each record's "reportgen"
# block says which estimator inputs describe the run and whether it fits an efficiency, is held out
# or is excluded.

@dataclass(frozen=True)
class ThroughputCase:
    id: str
    use: str  # "fit", "holdout" or "excluded"
    why: str  # for excluded records
    title: str  # model, GPUs, sequence length, as a reader would name the run
    spec: ModelSpec | None  # a model given by its config (not in the catalog)
    scenario: Scenario | None
    published: float  # tokens per second per GPU
    published_from: str
    source: str

    def estimated(self, estimator: Estimator) -> float:
        est = estimator.with_model(self.spec) if self.spec else estimator
        return est.estimate(self.scenario)["train_tokens_per_s_per_gpu"]

    def error(self, gpus, models) -> float:
        """(estimated − published) ÷ published with these catalogs."""
        return self.estimated(Estimator(models, gpus)) / self.published - 1


def throughput_cases(data: Mapping[str, Any]) -> list[ThroughputCase]:
    out = []
    for r in data["training"]:
        block = r["reportgen"]
        title = f"{r['model']} · {r['num_gpus']} × {r['gpu']}" + (f" · {r['seq_len']:,} tokens" if r.get("seq_len") else "")
        if block["use"] == "excluded":
            out.append(ThroughputCase(r["id"], "excluded", block["why"], title, None, None, 0.0, "", r["source"]))
            continue
        spec = None
        if "config" in block:
            config = {k: v for k, v in block["config"].items() if not k.startswith("_")}
            spec = spec_from_config(config, name=block["config"].get("_name", r["id"]), source=r["id"])
        model = spec.name if spec else block["model"]
        out.append(ThroughputCase(r["id"], block["use"], "", title, spec, Scenario(model=model, **block["scenario"]),
                                  float(block["published_tokens_per_s_per_gpu"]), block["published_from"], r["source"]))
    return out


DECODE_METRICS = {
    "tpot_s": "time per output token",
    "ttft_s": "time to first token",
    "output_tokens_per_s": "output tokens per second",
    "latency_s": "end-to-end latency",
}


def decode_metrics(values: Mapping[str, float], s: Scenario) -> dict[str, float]:
    """The decode figures a serving benchmark publishes, from an inference estimate's terms."""
    latency = values["prefill_seconds"] + s.gen_len * values["seconds_per_output_token"]
    return {"tpot_s": values["seconds_per_output_token"], "ttft_s": values["prefill_seconds"],
            "output_tokens_per_s": s.batch_size * s.gen_len / latency, "latency_s": latency}


@dataclass(frozen=True)
class DecodeCase:
    id: str
    use: str  # "holdout" or "excluded"
    why: str
    title: str
    spec: ModelSpec | None
    scenario: Scenario | None
    published: Mapping[str, float]  # metric -> value
    note: str
    source: str

    def estimated(self, estimator: Estimator) -> dict[str, float]:
        est = estimator.with_model(self.spec) if self.spec else estimator
        return decode_metrics(est.estimate(self.scenario).values, self.scenario)


def decode_cases(data: Mapping[str, Any]) -> list[DecodeCase]:
    out = []
    for r in data["decode"]:
        block = r["reportgen"]
        title = f"{r['model']} · {r.get('num_gpus') or 1} × {r['gpu']} · {r.get('engine', '')}"
        if block["use"] == "excluded":
            out.append(DecodeCase(r["id"], "excluded", block["why"], title, None, None, {}, "", r["source"]))
            continue
        spec = None
        if "config" in block:
            config = {k: v for k, v in block["config"].items() if not k.startswith("_")}
            spec = spec_from_config(config, name=block["config"].get("_name", r["id"]), source=r["id"])
        model = spec.name if spec else block["model"]
        out.append(DecodeCase(r["id"], block["use"], "", title, spec, Scenario(model=model, **block["scenario"]),
                              block["published"], block["note"], r["source"]))
    return out
