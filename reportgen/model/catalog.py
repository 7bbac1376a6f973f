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
from yaml.constructor import SafeConstructor

from ..errors import InputError, unknown_name
from ..limits import NESTING, YAML_EVENTS, YAML_VALUES, check_document, number_literal
from .spec import ModelSpec, load_config_file, read_json, read_text, spec_from_config
from .units import MiB

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the reportgen package


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
    bf16: int  # 1: runs bfloat16; 0: not (Volta)
    datacenter: int  # 1: licensed for data-centre use; 0: GeForce (its driver licence forbids it)
    link_gbps: float  # GPU to GPU inside a node, per direction
    nvls: int  # 1: NVSwitch with NVLink SHARP (Hopper and later HGX), where NCCL allocates NVLS buffers
    pcie_gbps: float  # host link, per direction
    gpus_per_node: int
    inter_node_gbps: float  # network per GPU between nodes (a typical deployment, not a spec)
    tdp_watts: float
    train_efficiency: float  # fraction of the dense peak training matmuls achieve (see gpus.yaml)
    attention_efficiency: float  # the same for the attention kernels (FlashAttention)
    fused_attention_efficiency: float  # the same for a Hopper-native fused attention kernel (cuDNN, FlashAttention-3)
    fp8_train_efficiency: float  # fraction of the FP8 dense peak FP8 training's linear layers achieve (0: no FP8)
    fp8_any_layout: int  # 1: FP8 GEMMs take either operand layout (Blackwell): no transposed FP8 weight kept
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
                     "gpus_per_node", "inter_node_gbps", "train_efficiency", "attention_efficiency",
                     "fused_attention_efficiency"):
            if fields[name] <= 0:
                raise InputError(f"expected a positive number, got {fields[name]!r}", source=source,
                                 key_path=f"{key_path}.{name}")
        for name in ("train_efficiency", "attention_efficiency", "fused_attention_efficiency", "fp8_train_efficiency"):
            if fields[name] > 1:
                raise InputError(f"a fraction of the peak is at most 1, got {fields[name]!r}", source=source,
                                 key_path=f"{key_path}.{name}")
        if (fields["fp8_dense_tflops"] > 0) != (fields["fp8_train_efficiency"] > 0):
            raise InputError("expected a positive fp8_train_efficiency where fp8_dense_tflops is positive, and 0 where it "
                             f"is 0, got {fields['fp8_train_efficiency']!r}", source=source,
                             key_path=f"{key_path}.fp8_train_efficiency")
        for name in ("nvls", "bf16", "datacenter", "fp8_any_layout"):
            if fields[name] not in (0, 1):
                raise InputError(f"expected 0 or 1, got {fields[name]!r}", source=source, key_path=f"{key_path}.{name}")
        if fields["fp8_any_layout"] and not fields["fp8_dense_tflops"]:
            raise InputError("expected 0 without FP8 tensor cores (fp8_dense_tflops 0), got 1", source=source,
                             key_path=f"{key_path}.fp8_any_layout")
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


class _Bounds:
    """A safe loader's part that refuses, while parsing, a document of more than YAML_EVENTS events (the
    parser's time); while composing, one nested deeper than NESTING, one with more than YAML_VALUES
    values once its aliases are expanded (a few aliases of aliases expand to billions: every later
    walk, error message or product would), and recursive aliases; and, while constructing, a mapping
    that sets a key twice (PyYAML keeps the last value without a word). A number literal too long to
    convert is read as a limits.LongNumber, which check_document refuses with its key path."""

    def __init__(self, stream, source: str):
        super().__init__(stream)
        self.source = source
        self.depth = 0
        self.events = 0
        self.max_depth, self.max_values, self.max_events = NESTING.value(), YAML_VALUES.value(), YAML_EVENTS.value()
        self.expanded: dict[int, int] = {}  # id(node) -> values under it, aliases expanded

    @staticmethod
    def _where(mark) -> str:
        return f"at line {mark.line + 1} column {mark.column + 1}"

    def get_event(self):
        if self.events >= self.max_events:
            raise YAML_EVENTS.refuse(f"too many parser events {self._where(self.peek_event().start_mark)}",
                                     source=self.source)
        self.events += 1
        return super().get_event()

    def construct_yaml_int(self, node):
        return number_literal(node.value, lambda _: SafeConstructor.construct_yaml_int(self, node))

    def construct_yaml_float(self, node):
        return number_literal(node.value, lambda _: SafeConstructor.construct_yaml_float(self, node))

    def compose_node(self, parent, index):
        is_alias = self.check_event(yaml.AliasEvent)
        mark = self.peek_event().start_mark  # formatted only for an error, not for each of ~100,000 nodes
        if self.depth >= self.max_depth:
            raise NESTING.refuse(f"nested too deeply {self._where(mark)}", source=self.source)
        self.depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if is_alias:
            if id(node) not in self.expanded:
                raise InputError(f"recursive alias {self._where(mark)}: a value cannot contain itself",
                                 source=self.source)
            size = self.expanded[id(node)]
        else:
            children = (node.value if isinstance(node, yaml.SequenceNode) else
                        [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else ())
            size = 1 + sum(self.expanded[id(child)] for child in children)
            self.expanded[id(node)] = size
        if size > self.max_values:
            raise YAML_VALUES.refuse(f"too many values {self._where(mark)}", source=self.source)
        return node

    def construct_document(self, node):
        self.root = node  # a duplicate key's error names its key path, found from here
        return super().construct_document(node)

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):  # before merge keys (<<) are flattened: they may be overridden
            self._check_unique_keys(node)
        return super().construct_mapping(node, deep=deep)

    def _check_unique_keys(self, node: yaml.MappingNode) -> None:
        first: dict = {}  # key -> its key node
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)  # cached: constructing the mapping reuses it
            try:
                earlier = first.setdefault(key, key_node)
            except TypeError:
                continue  # unhashable: the mapping's construction refuses it
            if earlier is not key_node:
                path = _node_path(self.root, node)
                raise InputError(f"set twice, {_two_places(earlier.start_mark, key_node.start_mark)}: remove one",
                                 source=self.source, key_path=f"{path}.{key}" if path else str(key))


class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's own parser (pure Python)."""


if yaml.__with_libyaml__:
    from yaml.composer import Composer
    from yaml.cyaml import CParser
    from yaml.resolver import Resolver

    class _LibyamlSafeLoader(Composer, CParser, SafeConstructor, Resolver):
        """yaml.CSafeLoader, but composed by PyYAML's composer over libyaml's events, so that _Bounds
        checks the nodes as they are made. libyaml scans and parses a preset 3-4 times as fast."""

        def __init__(self, stream):
            CParser.__init__(self, stream)
            Composer.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

    class _LibyamlBoundedLoader(_Bounds, _LibyamlSafeLoader):
        """libyaml's parser."""

    # libyaml first; what it refuses is parsed again by PyYAML's parser, which decides as it always did
    # (its errors; the surrogate escapes it reads and check_document refuses with their key path).
    _LOADERS: tuple[type, ...] = (_LibyamlBoundedLoader, _BoundedLoader)
else:
    _LOADERS = (_BoundedLoader,)
for _loader in _LOADERS:
    _loader.add_constructor("tag:yaml.org,2002:int", _Bounds.construct_yaml_int)
    _loader.add_constructor("tag:yaml.org,2002:float", _Bounds.construct_yaml_float)


def _load_yaml(text: str, source: str) -> Any:
    for n, loader_class in enumerate(_LOADERS, start=1):
        loader = loader_class(text, source)
        try:
            return loader.get_single_data()
        except yaml.YAMLError:
            if n == len(_LOADERS):
                raise
        finally:
            loader.dispose()


def _two_places(a, b) -> str:
    """'at lines 1 and 2', or 'on line 6 (columns 18 and 35)' (marks count from 0)."""
    if a.line == b.line:
        return f"on line {a.line + 1} (columns {a.column + 1} and {b.column + 1})"
    return f"at lines {a.line + 1} and {b.line + 1}"


def _node_path(root: yaml.Node, target: yaml.Node) -> str:
    """The key path of `target` in the document under `root`, as error messages write it."""
    stack, seen = [(root, "")], set()
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        if id(node) in seen:  # an alias: its node was reached before
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node.value))
        elif isinstance(node, yaml.MappingNode):
            stack.extend((value, f"{path}.{key.value}" if path else str(key.value)) for key, value in node.value)
    return ""


def read_yaml(path: Path) -> Any:
    """Parse a YAML file (see read_text) within the nesting and size limits and check its text
    (limits.check_document); every failure is one InputError naming the file."""
    source = str(path)
    text = read_text(path, "a YAML file")
    try:
        data = _load_yaml(text, source)  # the reader refuses control characters already
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source=source) from None
    except ValueError as exc:  # an integer of more than 4,300 digits, a date such as 2025-02-30
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


GPU_COLUMNS = ("memory_mib", "bf16_dense_tflops", "fp32_tflops", "fp8_dense_tflops", "bf16", "datacenter",
               "memory_bandwidth_gbps",
               "link_gbps", "nvls", "pcie_gbps", "gpus_per_node", "inter_node_gbps", "tdp_watts", "train_efficiency",
               "attention_efficiency", "fused_attention_efficiency", "fp8_train_efficiency", "fp8_any_layout",
               "price_purchase_usd", "price_per_hour_usd")


def gpu_row(gpu: GpuSpec) -> dict[str, float]:
    return {c: getattr(gpu, c) for c in GPU_COLUMNS}
