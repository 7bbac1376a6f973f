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
# PEFT target lists that name every linear layer but the LM head are what "all-linear" adapts.
_ALL_LINEAR = {"qkv_proj,o_proj,gate_up_proj,down_proj", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"}


@dataclass(frozen=True)
class ValidationRow:
    case_id: str
    measured_bytes: int  # a published row: the published figure, converted to bytes
    estimated_bytes: int
    measured_phase: str
    kind: str = "measured"  # "measured" (an oracle or measured peak) or "published" (a published figure)
    level: str = "allocated_peak"  # the estimator term compared: allocated_peak, reserved_peak or device_total
    source: str = ""  # the validation file, or a published figure's URL
    title: str = ""  # a published figure: model, workload, GPUs as a reader names the run

    @property
    def error(self) -> float:
        return (self.estimated_bytes - self.measured_bytes) / self.measured_bytes


# The file's setting keys for the scenario inputs they give (error messages name the file's key).
_FILE_KEYS = {"framework": "engine", "batch_size": "batch", "prompt_len": "seq", "seq_len": "seq", "gen_len": "new_tokens",
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
        targets = lora.get("targets", "q_proj,v_proj")
        # The oracle trains with the config's dropout probabilities (model.train()).
        values.update(workload="lora" if lora else "full", seq_len=get("seq"), prompt_len=0, gen_len=0,
                      dropout="config", loss=get("loss", default="fp32"), framework=get("engine", default="hf"),
                      lora_dropout="on" if lora and lora.get("dropout", 0) > 0 else "off",
                      checkpointing="full" if checkpointing else "none", optimizer="adamw",
                      optimizer_impl=get("optim", default="fused"), lora_rank=lora.get("r", 16),
                      lora_targets="all-linear" if targets in _ALL_LINEAR else targets,
                      adapter_dtype=lora.get("adapter_dtype", "fp32") if lora else "fp32",
                      lora_modules_to_save="embed-head" if lora.get("modules_to_save") else "none")
    return Scenario.from_mapping(values, models=(model_name,), gpus=(values["gpu"],), source=source,
                                 key_path=lambda name: f"{where}.setting.{_FILE_KEYS.get(name, name)}")


def superseded(case: Mapping[str, Any]) -> bool:
    """A dropout record measured with the oracle's CPU dispatch (bf16 noise masks, SDPA's math kernel), which
    no GPU runs; its CUDA-dispatch re-measurement is in the same file (oracle_arch.json's protocol)."""
    setting = case.get("setting")
    return isinstance(setting, Mapping) and setting.get("dropout_dispatch") == "cpu"


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
        if superseded(case):
            continue
        name = f"measured:{case['config_name']}"
        spec = spec_from_config(case["config"], name=name, source=source)
        scenario = scenario_for_case(case, name, source=source, where=where)
        est = estimator.with_model(spec).estimate(scenario)
        rows.append(ValidationRow(case["id"], peak, int(est["allocated_peak"]),
                                  case.get("steady_peak_phase") or case.get("peak_phase") or "",
                                  source=Path(measured_path).name))
    return rows


def summary(rows: list[ValidationRow]) -> dict[str, float] | None:
    """Median and largest |error| of the measured peaks (published figures: published_summary)."""
    errors = [abs(r.error) for r in rows if r.kind == "measured"]
    if not errors:
        return None
    return {"cases": len(errors), "median_abs_error": statistics.median(errors), "max_abs_error": max(errors),
            "within_10_percent": sum(e <= 0.10 for e in errors)}


# ---------------------------------------------------------------------------------------------
# Published fine-tuning figures (presets/validation/published_finetune.json): each record's
# "reportgen" block (scripts/annotate_finetune.py) gives the estimator inputs of the run, the level the
# figure reports ("compare": allocated_peak, reserved_peak or device_total) and whether it is compared
# ("holdout": nothing was fitted to these figures) or excluded, with why.

@dataclass(frozen=True)
class FinetuneCase:
    id: str
    use: str  # "holdout" or "excluded"
    why: str  # for excluded records
    title: str
    level: str  # the estimator term the figure is compared with
    spec: ModelSpec | None  # a model given by its config (not in the catalog)
    scenario: Scenario | None
    published_bytes: int
    source: str

    def estimated(self, estimator: Estimator) -> int:
        est = estimator.with_model(self.spec) if self.spec else estimator
        return int(est.estimate(self.scenario)[self.level])


def finetune_cases(data: Mapping[str, Any]) -> list[FinetuneCase]:
    out = []
    for r in data["records"]:
        block = r["reportgen"]
        gpus = r.get("num_gpus") or 1
        title = f"{r['model']} · {r['workload']} · {gpus} × {r['gpu']} · {r.get('framework') or ''}".rstrip(" ·")
        if block["use"] == "excluded":
            out.append(FinetuneCase(r["id"], "excluded", block["why"], title, "", None, None, int(r["value_bytes"]),
                                    r["source"]))
            continue
        spec = None
        if "config" in block:
            config = {k: v for k, v in block["config"].items() if not k.startswith("_")}
            spec = spec_from_config(config, name=block["config"].get("_name", r["id"]), source=r["id"])
        model = spec.name if spec else block["model"]
        out.append(FinetuneCase(r["id"], block["use"], "", title, block["compare"], spec,
                                Scenario(model=model, **block["scenario"]), int(r["value_bytes"]), r["source"]))
    return out


def published_rows(path: Path, estimator: Estimator) -> list[ValidationRow]:
    """The compared published figures as validation rows (kind "published", at the level each reports)."""
    return [ValidationRow(c.id, c.published_bytes, c.estimated(estimator), c.level, kind="published", level=c.level,
                          source=c.source, title=c.title)
            for c in finetune_cases(read_json(path)) if c.use != "excluded"]


def published_summary(rows: list[ValidationRow]) -> dict[str, dict[str, float]]:
    """Per level compared (and "all"): figures, median and largest |error|."""
    published = [r for r in rows if r.kind == "published"]
    out = {}
    for level in ("all",) + tuple(dict.fromkeys(r.level for r in published)):
        errors = [abs(r.error) for r in published if level in ("all", r.level)]
        if errors:
            out[level] = {"figures": len(errors), "median_abs_error": statistics.median(errors),
                          "max_abs_error": max(errors)}
    return out


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
