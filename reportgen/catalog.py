"""The model and GPU catalogs: bundled data files read into frozen specs, and the lookup-table
rows (Models, GPUs) that the formulas and the workbook share."""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import InputError, unknown_name
from .limits import NESTING, YAML_EVENTS, YAML_VALUES, check_document, number_literal
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
    nvls: int  # 1: NVSwitch with NVLink SHARP (Hopper and later HGX), where NCCL allocates NVLS buffers
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
        if fields["nvls"] not in (0, 1):
            raise InputError(f"expected 0 or 1, got {fields['nvls']!r}", source=source, key_path=f"{key_path}.nvls")
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


class _BoundedLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses, while parsing, a document of more than YAML_EVENTS events (the
    parser's time), nested deeper than NESTING, one with more than YAML_VALUES values once its aliases
    are expanded (a few aliases of aliases expand to billions: every later walk, error message or
    product would), and recursive aliases. A number literal too long to convert is read as a
    limits.LongNumber, which check_document refuses with its key path."""

    def __init__(self, stream, source: str):
        super().__init__(stream)
        self.source = source
        self.depth = 0
        self.events = 0
        self.max_depth, self.max_values, self.max_events = NESTING.value(), YAML_VALUES.value(), YAML_EVENTS.value()
        self.expanded: dict[int, int] = {}  # id(node) -> values under it, aliases expanded

    def _where(self) -> str:
        mark = self.peek_event().start_mark
        return f"at line {mark.line + 1} column {mark.column + 1}"

    def get_event(self):
        if self.events >= self.max_events:
            raise YAML_EVENTS.refuse(f"too many parser events {self._where()}", source=self.source)
        self.events += 1
        return super().get_event()

    def construct_yaml_int(self, node):
        return number_literal(node.value, lambda _: yaml.SafeLoader.construct_yaml_int(self, node))

    def construct_yaml_float(self, node):
        return number_literal(node.value, lambda _: yaml.SafeLoader.construct_yaml_float(self, node))

    def compose_node(self, parent, index):
        is_alias = self.check_event(yaml.AliasEvent)
        where = self._where()
        if self.depth >= self.max_depth:
            raise NESTING.refuse(f"nested too deeply {where}", source=self.source)
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if is_alias:
            if id(node) not in self.expanded:
                raise InputError(f"recursive alias {where}: a value cannot contain itself", source=self.source)
            size = self.expanded[id(node)]
        else:
            children = (node.value if isinstance(node, yaml.SequenceNode) else
                        [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else ())
            size = 1 + sum(self.expanded[id(child)] for child in children)
            self.expanded[id(node)] = size
        if size > self.max_values:
            raise YAML_VALUES.refuse(f"too many values {where}", source=self.source)
        return node


_BoundedLoader.add_constructor("tag:yaml.org,2002:int", _BoundedLoader.construct_yaml_int)
_BoundedLoader.add_constructor("tag:yaml.org,2002:float", _BoundedLoader.construct_yaml_float)


def read_yaml(path: Path) -> Any:
    """Parse a YAML file (see read_text) within the nesting and size limits and check its text
    (limits.check_document); every failure is one InputError naming the file."""
    source = str(path)
    text = read_text(path, "a YAML file")
    try:
        loader = _BoundedLoader(text, source)  # its reader refuses control characters already here
        try:
            data = loader.get_single_data()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source=source) from None
    except ValueError as exc:  # a date such as 2025-02-30
        raise InputError(f"malformed YAML: {exc}", source=source) from None
    except RecursionError:  # REPORTGEN_MAX_NESTING raised past what the parser's recursion allows
        raise InputError("nested too deeply for the parser (Python's recursion limit)", source=source) from None
    return check_document(data, source=source)


# ---------------------------------------------------------------------------------------------
# Models

@dataclass(frozen=True)
class CatalogModel:
    spec: ModelSpec
    hf_id: str
    family: str
    path: Path | None = None  # the catalog file


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9.]+", "-", name.lower()).strip("-")


def load_models(folder: Path | None = None) -> dict[str, CatalogModel]:
    folder = folder or data_dir("presets") / "models"
    models: dict[str, CatalogModel] = {}
    lowered: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")):
        entry = read_json(path)
        if not isinstance(entry, dict) or "config" not in entry or "name" not in entry:
            raise InputError("a catalog entry needs 'name' and 'config'", source=str(path))
        for key in ("hf_id", "family", "source"):
            if not isinstance(entry.get(key, ""), str):
                raise InputError(f"expected text, got {entry[key]!r}", source=str(path), key_path=key)
        spec = spec_from_config(entry["config"], name=entry["name"], source=entry.get("source") or str(path))
        # Names are matched case-insensitively (resolve_model), so they must differ in more than case.
        if spec.name.lower() in lowered:
            raise InputError(f"duplicate model name {spec.name!r} (also in {lowered[spec.name.lower()]})",
                             source=str(path), key_path="name")
        lowered[spec.name.lower()] = path
        models[spec.name] = CatalogModel(spec, entry.get("hf_id", ""), entry.get("family", ""), path)
    return models


def catalog_entry(config: Mapping[str, Any], name: str, source: str) -> dict[str, Any]:
    """The JSON written by `reportgen import-config` (same schema as the bundled entries)."""
    return {"name": name, "hf_id": "", "family": "", "source": source, "config": dict(config)}


def import_target(spec: ModelSpec, output: Path | None, *, force: bool, folder: Path | None = None) -> Path:
    """Where `import-config` writes the catalog entry of `spec`: `output`, or a file in the catalog
    folder named after the model. An existing file (a bundled entry too) is replaced only with
    `force`; a name that another catalog entry has (ignoring case) is refused, since two would make
    the catalog unreadable. What is not a regular file is refused when written (writers.atomic)."""
    folder = folder or data_dir("presets") / "models"
    stem = slug(spec.name)
    if not re.search("[a-z0-9]", stem):  # '' or '..'; the name would make no file name or a hidden one
        raise InputError(f"{spec.name!r} has no letter or digit to name its file after", key_path="--name")
    target = output or folder / f"{stem}.json"
    if target.parent.resolve() == folder.resolve():
        for other in load_models(folder).values():
            if other.spec.name.lower() == spec.name.lower() and other.path.resolve() != target.resolve():
                raise InputError(f"the catalog already has a model named {other.spec.name!r} ({other.path}); "
                                 "choose another --name", key_path="--name")
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return target
    except OSError as exc:  # a name past NAME_MAX, a folder that cannot be searched
        raise InputError(f"cannot check the file: {exc.strerror}", source=str(target)) from None
    if stat.S_ISREG(mode) and not force:
        raise InputError("already exists: add --force to replace it", source=str(target))
    return target


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
               "link_gbps", "nvls", "pcie_gbps", "gpus_per_node", "inter_node_gbps", "tdp_watts", "train_efficiency",
               "attention_efficiency",
               "price_purchase_usd", "price_per_hour_usd")


def gpu_row(gpu: GpuSpec) -> dict[str, float]:
    return {c: getattr(gpu, c) for c in GPU_COLUMNS}
