"""The model and GPU catalogs: bundled data files read into frozen specs, and the lookup-table
rows (Models, GPUs) that the formulas and the workbook share."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import InputError, unknown_name
from .models import ModelSpec, load_config_file, read_json, read_text, spec_from_config
from .units import MiB

PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """A bundled data folder (`presets`, `templates`): inside the installed package, else the checkout."""
    installed = PACKAGE_DIR / name
    return installed if installed.is_dir() else PACKAGE_DIR.parent / name


# ---------------------------------------------------------------------------------------------
# GPUs

@dataclass(frozen=True)
class GpuSpec:
    name: str
    vendor: str
    memory_mib: int
    marketed_memory: str
    bf16_dense_tflops: float
    memory_bandwidth_gbps: float
    fp32_tflops: float
    fp8_dense_tflops: float  # 0: no FP8 tensor cores
    link_gbps: float  # GPU to GPU inside a node, per direction
    pcie_gbps: float  # host link, per direction
    gpus_per_node: int
    inter_node_gbps: float  # network per GPU between nodes (a typical deployment, not a spec)
    tdp_watts: float
    train_efficiency: float  # fraction of the dense peak training matmuls achieve (see gpus.yaml)
    attention_efficiency: float  # the same for the attention kernels (FlashAttention)
    price_purchase_usd: float
    price_per_hour_usd: float
    memory_source: str
    spec_source: str
    perf_source: str
    efficiency_source: str
    price_source: str

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MiB

    @classmethod
    def from_mapping(cls, raw: Any, *, source: str, key_path: str) -> "GpuSpec":
        if not isinstance(raw, Mapping):
            raise InputError(f"expected a mapping, got {raw!r}", source=source, key_path=key_path)
        fields = {f: raw.get(f) for f in cls.__dataclass_fields__}
        unknown = set(raw) - set(fields)
        if unknown:
            raise unknown_name("key", sorted(unknown)[0], fields, source=source, key_path=key_path)
        for name, value in fields.items():
            where = f"{key_path}.{name}"
            if value is None:
                raise InputError("missing required field", source=source, key_path=where)
            numeric = cls.__dataclass_fields__[name].type in ("int", "float")
            if numeric and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise InputError(f"expected a non-negative number, got {value!r}", source=source, key_path=where)
            if not numeric and not isinstance(value, str):
                raise InputError(f"expected text, got {value!r}", source=source, key_path=where)
        for name in ("bf16_dense_tflops", "memory_bandwidth_gbps", "fp32_tflops", "link_gbps", "pcie_gbps",
                     "gpus_per_node", "inter_node_gbps", "train_efficiency", "attention_efficiency"):
            if fields[name] <= 0:
                raise InputError(f"expected a positive number, got {fields[name]!r}", source=source,
                                 key_path=f"{key_path}.{name}")
        for name in ("train_efficiency", "attention_efficiency"):
            if fields[name] > 1:
                raise InputError(f"a fraction of the peak is at most 1, got {fields[name]!r}", source=source,
                                 key_path=f"{key_path}.{name}")
        fields["gpus_per_node"] = int(fields["gpus_per_node"])
        if fields["memory_mib"] <= 0 or not float(fields["memory_mib"]).is_integer():
            raise InputError(f"expected a positive whole number of MiB, got {fields['memory_mib']!r}",
                             source=source, key_path=f"{key_path}.memory_mib")
        fields["memory_mib"] = int(fields["memory_mib"])
        return cls(**fields)


def load_gpus(path: Path | None = None) -> dict[str, GpuSpec]:
    path = path or data_dir("presets") / "gpus.yaml"
    source = str(path)
    raw = read_yaml(path)
    entries = raw.get("gpus") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise InputError("expected a non-empty list under 'gpus'", source=source, key_path="gpus")
    gpus: dict[str, GpuSpec] = {}
    for i, entry in enumerate(entries):
        gpu = GpuSpec.from_mapping(entry, source=source, key_path=f"gpus[{i}]")
        if gpu.name in gpus:
            raise InputError(f"duplicate GPU name {gpu.name!r}", source=source, key_path=f"gpus[{i}].name")
        gpus[gpu.name] = gpu
    return gpus


def read_yaml(path: Path) -> Any:
    """Parse a YAML file; every failure is one InputError naming the file."""
    text = read_text(path, "a YAML file")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source=str(path)) from None


# ---------------------------------------------------------------------------------------------
# Models

@dataclass(frozen=True)
class CatalogModel:
    spec: ModelSpec
    hf_id: str
    family: str


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def load_models(folder: Path | None = None) -> dict[str, CatalogModel]:
    folder = folder or data_dir("presets") / "models"
    models: dict[str, CatalogModel] = {}
    for path in sorted(folder.glob("*.json")):
        entry = read_json(path)
        if not isinstance(entry, dict) or "config" not in entry or "name" not in entry:
            raise InputError("a catalog entry needs 'name' and 'config'", source=str(path))
        spec = spec_from_config(entry["config"], name=entry["name"], source=entry.get("source") or str(path))
        if spec.name in models:
            raise InputError(f"duplicate model name {spec.name!r}", source=str(path), key_path="name")
        models[spec.name] = CatalogModel(spec, entry.get("hf_id", ""), entry.get("family", ""))
    return models


def catalog_entry(spec_source_raw: Mapping[str, Any], name: str, source: str) -> dict[str, Any]:
    """The JSON written by `reportgen import-config` (same schema as the bundled entries)."""
    return {"name": name, "hf_id": "", "family": "", "source": source, "config": dict(spec_source_raw)}


def resolve_model(name_or_path: str, models: Mapping[str, CatalogModel], *, key_path: str = "model",
                  source: str | None = None) -> ModelSpec:
    """A catalog name (case-insensitive) or a path to a config.json."""
    if name_or_path in models:
        return models[name_or_path].spec
    lowered = {k.lower(): k for k in models}
    if name_or_path.lower() in lowered:
        return models[lowered[name_or_path.lower()]].spec
    if name_or_path.endswith(".json") or "/" in name_or_path:
        return load_config_file(Path(name_or_path))
    raise unknown_name("model", name_or_path, models, source=source, key_path=key_path)


GPU_COLUMNS = ("memory_mib", "bf16_dense_tflops", "fp32_tflops", "fp8_dense_tflops", "memory_bandwidth_gbps",
               "link_gbps", "pcie_gbps", "gpus_per_node", "inter_node_gbps", "tdp_watts", "train_efficiency",
               "attention_efficiency",
               "price_purchase_usd", "price_per_hour_usd")


def gpu_row(gpu: GpuSpec) -> dict[str, float]:
    return {c: getattr(gpu, c) for c in GPU_COLUMNS}
