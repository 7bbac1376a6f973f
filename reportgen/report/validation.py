"""The estimator against figures it did not produce: peaks measured by running real transformers models,
and figures projects published (fine-tuning peaks, training throughput, serving speed, engines' KV pools).

The measured cases are the validation sets bundled in presets/validation/ (or a file of the same
format given by path): each states a config, a workload and its settings, and whether a term was
derived from it ("split": fit or holdout); the estimator sees the same settings. The published sets
carry their estimator inputs in each record's "reportgen" block (scripts/annotate_*.py).
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from ..errors import InputError, unknown_name
from ..model.catalog import data_dir
from ..model.estimate import Estimator, RlhfScenario, Scenario, rlhf_scenario
from ..model.spec import ModelSpec, read_json, spec_from_config
from ..model.lookups import EXPERTS_IMPLEMENTATIONS
from ..model.units import GiB

_PRECISION = {"bf16": "bf16", "amp": "amp-bf16", "fsdp-mixed": "fsdp-bf16"}
_ATTENTION = {"sdpa": "sdpa", "eager": "eager"}
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
    split: str = ""  # "fit" (a term was derived from it) or "holdout" (none was)
    miss: str = ""  # why the estimate misses the figure's target (stored with the data), '' for none
    name: RunName | None = None  # a published figure's run, as the source names it

    @property
    def error(self) -> float:
        return (self.estimated_bytes - self.measured_bytes) / self.measured_bytes


# Largest |error| each comparison aims at (issues #16, #17, #18): a figure beyond it carries its
# reason in the data ("miss"), and the report marks it. Measured peaks: the report's ±10 % band.
TARGETS = {"measured": 0.10, "finetune": 0.15, "training": 0.30, "training_moe": 0.30, "decode": 0.25, "serving": 0.10,
           "rlhf": 0.25, "rlhf_memory": 0.15, "offload": 0.50}


def error_stats(errors: Sequence[float]) -> dict[str, float]:
    """How many, median and largest |error|."""
    magnitudes = [abs(e) for e in errors]
    return {"figures": len(magnitudes), "median_abs_error": statistics.median(magnitudes),
            "max_abs_error": max(magnitudes)}


# The file's setting keys for the scenario inputs they give (error messages name the file's key).
_FILE_KEYS = {"framework": "engine", "batch_size": "batch", "prompt_len": "seq", "seq_len": "seq", "gen_len": "new_tokens",
              "optimizer_impl": "optim", "lora_rank": "lora.r", "lora_targets": "lora.targets",
              "grad_accum_steps": "grad_accum", "num_gpus": "fsdp_world", "pp_size": "pp_world"}
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
                  attention=_ATTENTION[get("attn", _ATTENTION)], batch_size=get("batch"), gpu="H100-80GB-SXM",
                  experts_implementation=get("experts_implementation", EXPERTS_IMPLEMENTATIONS, default="grouped_mm"))
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
        if not (isinstance(checkpointing, bool) or checkpointing == "op"):  # op: torchtitan's per-op checkpointing
            raise InputError(f"expected true, false or 'op', got {checkpointing!r}", source=source,
                             key_path=f"{where}.setting.grad_ckpt")
        targets = lora.get("targets", "q_proj,v_proj")
        # The oracle trains with the config's dropout probabilities (model.train()).
        values.update(workload="lora" if lora else "full", seq_len=get("seq"), prompt_len=0, gen_len=0,
                      dropout="config", loss=get("loss", default="fp32"), framework=get("engine", default="hf"),
                      lora_dropout="on" if lora and lora.get("dropout", 0) > 0 else "off",
                      checkpointing="op" if checkpointing == "op" else "full" if checkpointing else "none",
                      optimizer="adamw",
                      optimizer_impl=get("optim", default="fused"), grad_accum_steps=get("grad_accum", default=1),
                      lora_rank=lora.get("r", 16),
                      lora_targets="all-linear" if targets in _ALL_LINEAR else targets,
                      adapter_dtype=lora.get("adapter_dtype", "fp32") if lora else "fp32",
                      lora_modules_to_save="embed-head" if lora.get("modules_to_save") else "none")
        world, tp, cp = get("fsdp_world", default=0), get("tp_world", default=1), get("cp_world", default=1)
        if world or tp > 1 or cp > 1:  # one rank of PyTorch FSDP2 (fully_shard per decoder layer) over `world` GPUs,
            # each a torchtitan tensor-parallel group of tp GPUs (sequence parallel), or over cp context-parallel GPUs
            values.update(framework="fsdp2", zero_stage=3, num_gpus=max(world, 1) * tp * cp, tp_size=tp, cp_size=cp)
        pp = get("pp_world", default=1)
        if pp > 1:  # the busiest stage of torch's pipeline (framework hf: plain PyTorch; fsdp2 over fsdp_world GPUs)
            values.update(pp_size=pp, num_gpus=values.get("num_gpus", 1) * pp)
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
        if case.get("split", "") not in SPLITS:  # summary() counts each row under its split
            raise InputError(f"expected 'holdout' or 'fit' (or no split), got {case['split']!r}", source=source,
                             key_path=f"{where}.split")
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
                                  source=Path(measured_path).name, split=case.get("split", ""),
                                  miss=case.get("miss", "")))
    return rows


# What a peak row's comparison is called and the band it aims at (TARGETS' key), per ValidationRow.kind.
ROW_DATASETS = {"measured": "measured", "published": "finetune"}
# "": a measured file that does not say (reportgen validate --measured of a user's own peaks)
SPLITS = ("holdout", "fit", "")


def summary(rows: Sequence[ValidationRow]) -> list[dict[str, Any]]:
    """Every row counted once: per comparison (measured peaks, then published fine-tuning figures) and
    split (held out first: the rows accuracy is claimed on; then fit: those a coefficient was read from;
    then any whose file does not say), how many, median and largest |error|, and how many are within the comparison's target band."""
    out = []
    for kind, dataset in ROW_DATASETS.items():
        for split in SPLITS:
            errors = [r.error for r in rows if r.kind == kind and r.split == split]
            if errors:
                out.append({"dataset": dataset, "split": split, **error_stats(errors), "target": TARGETS[dataset],
                            "within_target": sum(abs(e) <= TARGETS[dataset] for e in errors)})
    assert sum(g["figures"] for g in out) == len(rows), "every validation row has a kind and a split"
    return out


# ---------------------------------------------------------------------------------------------
# Published figures (presets/validation/published_*.json). Each record's "reportgen" block (written by
# scripts/annotate_*.py) gives the estimator inputs of the run, whether it is compared ("fit": an
# efficiency or assumption was read off it; "holdout": nothing was) or excluded (with "why"), and for
# a compared figure that misses its target, what is known about the miss ("miss").

@dataclass(frozen=True)
class RunName:
    """A published run as the source names it; the view translates the workload and the tokens."""
    model: str
    setup: str  # GPUs and software, as published ('1 × NVIDIA A10G (24 GB) · lit-gpt')
    workload: str = ""  # a workload key (lora, full, ...) or ''
    seq_len: int = 0  # tokens per sequence, 0 where the name does not give it


@dataclass(frozen=True)
class Excluded:
    id: str
    dataset: str  # "finetune", "training", "training_moe", "offload", "decode", "serving", "rlhf" or "rlhf_memory"
    name: RunName
    source: str
    why: str


def _spec(block: Mapping[str, Any], record_id: str) -> ModelSpec | None:
    """A model given by its config in the block (not in the catalog), or None."""
    if "config" not in block:
        return None
    config = {k: v for k, v in block["config"].items() if not k.startswith("_")}
    return spec_from_config(config, name=block["config"].get("_name", record_id), source=record_id)


def _setup(gpus: object, gpu: str, *software: object) -> str:
    """'4 × NVIDIA A10G (24 GB) · lit-gpt'; a GPU field that already counts the GPUs ('4x NVIDIA A10G') as is."""
    counted = re.match(r"\d+\s*[x×]\s", gpu)
    return " · ".join([gpu if counted else f"{gpus or 1} × {gpu}"] + [str(x) for x in software if x])


@dataclass(frozen=True)
class FinetuneCase:
    id: str
    use: str  # "holdout" or "excluded"
    why: str  # for excluded records
    name: RunName
    level: str  # the estimator term the figure is compared with
    spec: ModelSpec | None  # a model given by its config (not in the catalog)
    scenario: Scenario | None
    published_bytes: int
    source: str
    miss: str = ""

    def estimated(self, estimator: Estimator) -> int:
        est = estimator.with_model(self.spec) if self.spec else estimator
        return int(est.estimate(self.scenario)[self.level])


def finetune_cases(data: Mapping[str, Any]) -> list[FinetuneCase]:
    out = []
    for r in data["records"]:
        block = r["reportgen"]
        name = RunName(r["model"], _setup(r.get("num_gpus"), r["gpu"], r.get("framework")), r["workload"])
        if block["use"] == "excluded":
            out.append(FinetuneCase(r["id"], "excluded", block["why"], name, "", None, None, int(r["value_bytes"]),
                                    r["source"]))
            continue
        spec = _spec(block, r["id"])
        model = spec.name if spec else block["model"]
        out.append(FinetuneCase(r["id"], block["use"], "", name, block["compare"], spec,
                                Scenario(model=model, **block["scenario"]), int(r["value_bytes"]), r["source"],
                                block.get("miss", "")))
    return out


def published_rows(path: Path, estimator: Estimator) -> list[ValidationRow]:
    """The compared published figures as validation rows (kind "published", at the level each reports)."""
    return [ValidationRow(c.id, c.published_bytes, c.estimated(estimator), c.level, kind="published", level=c.level,
                          source=c.source, split=c.use, miss=c.miss, name=c.name)
            for c in finetune_cases(read_json(path)) if c.use != "excluded"]


def published_summary(rows: list[ValidationRow]) -> dict[str, dict[str, float]]:
    """Per level compared (and "all"): figures, median and largest |error|."""
    published = [r for r in rows if r.kind == "published"]
    levels = ("all",) + tuple(dict.fromkeys(r.level for r in published))
    return {level: error_stats([r.error for r in published if level in ("all", r.level)])
            for level in levels if published}


# ---------------------------------------------------------------------------------------------
# Time and serving figures: one row per published number (a decode run publishes several).

@dataclass(frozen=True)
class PublishedFigure:
    id: str
    dataset: str  # "training", "training_moe", "offload", "decode", "serving", "rlhf" or "rlhf_memory"
    name: RunName
    source: str
    use: str  # "fit" or "holdout"
    metric: str  # what was published: train_tokens_per_s_per_gpu, tpot_s, ttft_s, output_tokens_per_s,
    # latency_s (seconds), kv_tokens, kv_gib, gpu_blocks, an RLHF time term or allocated_peak_gib
    published: float
    estimated: float
    miss: str = ""
    # a published training run ran: does the estimate fit it? (device total, the GPU's memory, why not)
    memory: tuple[int, int] | None = None
    memory_miss: str = ""

    @property
    def error(self) -> float:
        return self.estimated / self.published - 1

    @property
    def fits(self) -> bool:
        return self.memory is not None and self.memory[0] <= self.memory[1]


@dataclass(frozen=True)
class ThroughputCase:
    id: str
    use: str  # "fit", "holdout" or "excluded"
    why: str  # for excluded records
    name: RunName
    spec: ModelSpec | None  # a model given by its config (not in the catalog)
    scenario: Scenario | None
    published: float  # tokens per second per GPU
    published_from: str
    source: str
    miss: str = ""
    dataset: str = "training"  # or "training_moe": mixture-of-experts runs, stated apart
    memory_miss: str = ""  # why the estimate does not fit the run's memory on its GPUs

    def estimate(self, estimator: Estimator):
        return (estimator.with_model(self.spec) if self.spec else estimator).estimate(self.scenario)

    def estimated(self, estimator: Estimator) -> float:
        return self.estimate(estimator)["train_tokens_per_s_per_gpu"]

    def error(self, gpus, models) -> float:
        """(estimated − published) ÷ published with these catalogs."""
        return self.estimated(Estimator(models, gpus)) / self.published - 1

    def compared(self, estimator: Estimator) -> dict[str, tuple[float, float]]:
        """metric -> (published, estimated)"""
        return {"train_tokens_per_s_per_gpu": (self.published, self.estimated(estimator))}

    def figures(self, estimator: Estimator) -> list[PublishedFigure]:
        """Its throughput against the estimate, with the estimate's memory per GPU beside the GPU's: a published
        run ran, so an estimate over the GPU is a miss of the memory model, and says why."""
        e = self.estimate(estimator)
        return [PublishedFigure(self.id, self.dataset, self.name, self.source, self.use, "train_tokens_per_s_per_gpu",
                                self.published, e["train_tokens_per_s_per_gpu"], self.miss,
                                (int(e["device_total"]), int(e["gpu_memory_bytes"])), self.memory_miss)]


def _parallel_layout(scenario: Mapping[str, Any]) -> str:
    """'TP 2 · PP 8 × VP 4 · EP 32': a training run's parallel degrees above one and its sharding past ZeRO-1 as it is
    mapped, which tell apart the runs of a source on the same GPUs and lengths."""
    degree = {name: int(scenario.get(f"{name.lower()}_size") or 1) for name in ("TP", "PP", "VP", "CP", "EP")}
    parts = [f"{name} {n}" for name, n in degree.items() if n > 1 and name != "VP"]
    if degree["VP"] > 1:
        parts[[p.startswith("PP") for p in parts].index(True)] += f" × VP {degree['VP']}"
    if scenario.get("tp_overlap") == "on":
        parts.append("TP overlapped")
    if scenario.get("ep_overlap") == "on":
        parts.append("all-to-all overlapped")
    if (scenario.get("zero_stage") or 0) >= 2:
        parts.append(f"ZeRO-{scenario['zero_stage']}")
    return " · ".join(parts)


def throughput_cases(data: Mapping[str, Any]) -> list[ThroughputCase]:
    out = []
    for r in data["training"]:
        block = r["reportgen"]
        name = RunName(r["model"], _setup(r["num_gpus"], r["gpu"], _parallel_layout(block.get("scenario") or {})),
                       seq_len=r.get("seq_len") or 0)
        dataset = block.get("dataset", "training")
        if block["use"] == "excluded":
            out.append(ThroughputCase(r["id"], "excluded", block["why"], name, None, None, 0.0, "", r["source"],
                                      dataset=dataset))
            continue
        spec = _spec(block, r["id"])
        model = spec.name if spec else block["model"]
        out.append(ThroughputCase(r["id"], block["use"], "", name, spec, Scenario(model=model, **block["scenario"]),
                                  float(block["published_tokens_per_s_per_gpu"]), block["published_from"], r["source"],
                                  block.get("miss", ""), dataset, block.get("memory_miss", "")))
    return out


def decode_metrics(values: Mapping[str, float], s: Scenario) -> dict[str, float]:
    """The decode figures a serving benchmark publishes, from an inference estimate's terms."""
    latency = values["prefill_seconds"] + s.gen_len * values["seconds_per_output_token"]
    return {"tpot_s": values["seconds_per_output_token"], "ttft_s": values["prefill_seconds"],
            "output_tokens_per_s": s.batch_size * s.gen_len / latency, "latency_s": latency}


class _PerMetric:
    """A compared case whose estimate gives each published metric by its name (estimated(estimator)[metric])."""

    def compared(self, estimator: Estimator) -> dict[str, tuple[float, float]]:
        estimated = self.estimated(estimator)
        return {metric: (value, estimated[metric]) for metric, value in self.published.items()}

    def figures(self, estimator: Estimator) -> list[PublishedFigure]:
        return compared_figures(self, estimator)


@dataclass(frozen=True)
class DecodeCase(_PerMetric):
    id: str
    use: str  # "holdout" or "excluded"
    why: str
    name: RunName
    spec: ModelSpec | None
    scenario: Scenario | None
    published: Mapping[str, float]  # metric -> value
    note: str
    source: str
    miss: str = ""
    dataset: ClassVar[str] = "decode"

    def estimated(self, estimator: Estimator) -> dict[str, float]:
        est = estimator.with_model(self.spec) if self.spec else estimator
        return decode_metrics(est.estimate(self.scenario).values, self.scenario)


def decode_cases(data: Mapping[str, Any]) -> list[DecodeCase]:
    out = []
    for r in data["decode"]:
        block = r["reportgen"]
        name = RunName(r["model"], _setup(r.get("num_gpus"), r["gpu"], r.get("engine")))
        if block["use"] == "excluded":
            out.append(DecodeCase(r["id"], "excluded", block["why"], name, None, None, {}, "", r["source"]))
            continue
        spec = _spec(block, r["id"])
        model = spec.name if spec else block["model"]
        out.append(DecodeCase(r["id"], block["use"], "", name, spec, Scenario(model=model, **block["scenario"]),
                              block["published"], block["note"], r["source"], block.get("miss", "")))
    return out


# Serving engines' start-up logs (presets/validation/published_serving.json): the KV-cache pool.

@dataclass(frozen=True)
class ServingCase(_PerMetric):
    id: str
    use: str  # "fit", "holdout" or "excluded"
    why: str
    name: RunName
    scenario: Scenario | None
    published: Mapping[str, float]  # metric (kv_tokens, kv_gib, gpu_blocks or max_concurrency) -> value
    source: str
    miss: str = ""
    dataset: ClassVar[str] = "serving"

    def estimated(self, estimator: Estimator) -> dict[str, float]:
        return serving_metrics(estimator.estimate(self.scenario).values)


def serving_metrics(values: Mapping[str, float]) -> dict[str, float]:
    """The pool as an engine logs it: tokens, GiB per GPU, blocks of 16 tokens, requests it holds."""
    return {"kv_tokens": values["kv_logged_tokens"], "kv_gib": values["kv_pool_bytes"] / GiB,
            "gpu_blocks": values["kv_pool_tokens"] / 16, "max_concurrency": values["max_concurrency"]}


def serving_cases(data: Mapping[str, Any]) -> list[ServingCase]:
    out = []
    for r in data["records"]:
        block = r["reportgen"]
        name = RunName(r["model"], _setup(r.get("num_gpus"), r["gpu"], f"{r['engine']} {r.get('engine_version') or ''}".strip()))
        if block["use"] == "excluded":
            out.append(ServingCase(r["id"], "excluded", block["why"], name, None, {}, r["source"]))
            continue
        out.append(ServingCase(r["id"], block["use"], "", name, Scenario(model=block["model"], **block["scenario"]),
                               block["published"], r["source"], block.get("miss", "")))
    return out


# An offloaded optimizer's time (presets/validation/published_offload.json): the host's step, or how much a step
# lengthens with the optimizer on the host.

@dataclass(frozen=True)
class OffloadCase(_PerMetric):
    id: str
    use: str  # "fit", "holdout" or "excluded"
    why: str
    name: RunName
    spec: ModelSpec | None
    scenario: Scenario | None
    published: Mapping[str, float]  # host_optimizer_seconds or offload_step_seconds -> seconds
    source: str
    miss: str = ""
    dataset: ClassVar[str] = "offload"

    def estimated(self, estimator: Estimator) -> dict[str, float]:
        """host_optimizer_seconds as the term; offload_step_seconds as the step less the same layout's without offload
        (the framework's compute efficiency, which offloading leaves alone, cancels)."""
        est = estimator.with_model(self.spec) if self.spec else estimator
        offloaded = est.estimate(self.scenario)
        plain = est.estimate(self.scenario.with_inputs(offload="none"))
        return {"host_optimizer_seconds": offloaded["host_optimizer_seconds"],
                "offload_step_seconds": offloaded["step_seconds"] - plain["step_seconds"]}


def offload_cases(data: Mapping[str, Any]) -> list[OffloadCase]:
    out = []
    for r in data["records"]:
        block = r["reportgen"]
        setup = _setup(r["num_gpus"], r["gpu"], r["framework"]) if r["num_gpus"] else f"{r['gpu']} · {r['framework']}"
        name = RunName(r["model"], setup)
        if block["use"] == "excluded":
            out.append(OffloadCase(r["id"], "excluded", block["why"], name, None, None, {}, r["source"]))
            continue
        spec = _spec(block, r["id"])
        out.append(OffloadCase(r["id"], block["use"], "", name, spec,
                               Scenario(model=spec.name if spec else block["model"], **block["scenario"]),
                               block["published"], r["source"], block.get("miss", "")))
    return out


# RLHF frameworks' step times (presets/validation/published_rlhf.json): an iteration and its phases.

@dataclass(frozen=True)
class RlhfCase:
    id: str
    use: str  # "holdout" or "excluded"
    why: str
    name: RunName
    spec: ModelSpec | None
    scenario: RlhfScenario | None
    published: Mapping[str, float]  # group time term (iteration_seconds, generation_seconds, …) -> seconds
    source: str
    miss: str = ""
    # the framework's logged allocator peak per GPU (allocated_peak_gib), its source, and why it is left out
    published_memory: Mapping[str, float] = field(default_factory=dict)
    memory_source: str = ""
    memory_why: str = ""
    fit_miss: str = ""  # why the estimate does not fit the run on its GPUs
    dataset: ClassVar[str] = "rlhf"

    def _group(self, estimator: Estimator):
        return (estimator.with_model(self.spec) if self.spec else estimator).estimate_group(self.scenario)

    def compared(self, estimator: Estimator) -> dict[str, tuple[float, float]]:
        group = self._group(estimator)
        return {metric: (value, group[metric]) for metric, value in self.published.items()}

    def figures(self, estimator: Estimator) -> list[PublishedFigure]:
        """Its step and phase times against the estimate; the first carries the estimate's memory per GPU beside the
        GPU's (the run ran: an estimate over the GPU is a miss of the memory model, and says why)."""
        group = self._group(estimator)
        memory = (int(group["device_total"]), int(group["gpu_memory_bytes"]))
        return [PublishedFigure(self.id, self.dataset, self.name, self.source, self.use, metric, value, group[metric],
                                self.miss, *((memory, self.fit_miss) if i == 0 else ()))
                for i, (metric, value) in enumerate(self.published.items())]

    def compared_memory(self, estimator: Estimator) -> dict[str, tuple[float, float]]:
        """The logged allocator peak against the group's allocated peak, GiB per GPU."""
        if not self.published_memory:
            return {}
        group = self._group(estimator)
        return {metric: (value, group["allocated_peak"] / GiB) for metric, value in self.published_memory.items()}


def rlhf_cases(data: Mapping[str, Any]) -> list[RlhfCase]:
    out = []
    for r in data["records"]:
        block = r["reportgen"]
        algorithm = r["algorithm"].split(" ")[0]  # 'dapo (multi-turn …)': the name alone
        known = algorithm in ("ppo", "grpo", "dpo")  # a workload the report names; others as published
        name = RunName(r["actor_model"], _setup(r.get("num_gpus"), r["gpu"], r["framework"].split(" (")[0],
                                                "" if known else algorithm.upper()), algorithm if known else "")
        if block["use"] == "excluded":
            out.append(RlhfCase(r["id"], "excluded", block["why"], name, None, None, {}, r["source"]))
            continue
        spec = _spec(block, r["id"])
        actor = Scenario(model=spec.name if spec else block["model"], **block["scenario"])
        group = rlhf_scenario(name="", actor=actor, **block["rlhf"])
        out.append(RlhfCase(r["id"], block["use"], "", name, spec, group, block["published"], r["source"],
                            block.get("miss", ""), block.get("published_memory", {}), r.get("memory_source", ""),
                            block.get("memory_excluded", ""), block.get("memory_miss", "")))
    return out


def published_path(name: str = "finetune") -> Path:
    """A bundled set of published figures: finetune (peak memory), throughput (training, decode), offload, serving or
    rlhf."""
    return data_dir("presets") / "validation" / f"published_{name}.json"


def rlhf_step_accuracy(estimator: Estimator) -> dict[str, float]:
    """How the RLHF step times compare with the held-out published ones (validation's 'rlhf' figures): their
    count, median and largest |error|, and how many the estimate puts short, for a plan to state beside its own."""
    errors = [f.error for c in rlhf_cases(read_json(published_path("rlhf"))) if c.use == "holdout"
              for f in c.figures(estimator)]
    return {**error_stats(errors), "short": sum(e < 0 for e in errors)}


def rlhf_memory_figures(cases: Sequence[RlhfCase], estimator: Estimator) -> tuple[list[PublishedFigure], list[Excluded]]:
    """The compared runs' logged allocator peaks against the groups' allocated peaks, and the runs whose
    logged figure is left out, with why."""
    figures, excluded = [], []
    for c in cases:
        if c.use == "excluded":
            continue
        if c.memory_why:
            excluded.append(Excluded(c.id, "rlhf_memory", c.name, c.memory_source, c.memory_why))
        figures += [PublishedFigure(c.id, "rlhf_memory", c.name, c.memory_source, c.use, metric, published, estimated)
                    for metric, (published, estimated) in c.compared_memory(estimator).items()]
    return figures, excluded


def published_figures(throughput: Mapping[str, Any], serving: Mapping[str, Any], rlhf: Mapping[str, Any],
                      offload: Mapping[str, Any], estimator: Estimator) -> tuple[list[PublishedFigure], list[Excluded]]:
    """Every compared time and serving figure against its estimate, and the excluded records with why."""
    figures, excluded = [], []
    rlhf_runs = rlhf_cases(rlhf)
    for c in (*throughput_cases(throughput), *offload_cases(offload), *decode_cases(throughput), *serving_cases(serving),
              *rlhf_runs):
        if c.use == "excluded":
            excluded.append(Excluded(c.id, c.dataset, c.name, c.source, c.why))
        else:
            figures += c.figures(estimator)
    memory_figures, memory_excluded = rlhf_memory_figures(rlhf_runs, estimator)
    return figures + memory_figures, excluded + memory_excluded


def compared_figures(case, estimator: Estimator) -> list[PublishedFigure]:
    """A compared case's published figures, each against its estimate."""
    return [PublishedFigure(case.id, case.dataset, case.name, case.source, case.use, metric, published, estimated,
                            case.miss) for metric, (published, estimated) in case.compared(estimator).items()]


def finetune_excluded(data: Mapping[str, Any]) -> list[Excluded]:
    return [Excluded(c.id, "finetune", c.name, c.source, c.why) for c in finetune_cases(data) if c.use == "excluded"]
