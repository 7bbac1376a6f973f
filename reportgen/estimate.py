"""Scenarios in, per-GPU bytes out.

A Scenario is one model instance with its workload and parallel layout (the inputs of the term
table). An RLHF scenario groups several role scenarios (actor, critic, reference, reward) with a
placement. The term table (terms.py) is compiled once into a plain Python function, so a sweep of
many scenarios costs one function call each and the formulas stay defined in one place.
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Mapping, Sequence

from . import tables as tb
from .catalog import CatalogModel, GpuSpec, gpu_row, model_row
from .errors import InputError, unknown_name
from .formulas import MAX, MIN, Lookup, Var, spreadsheet_ceil, to_python
from .models import LORA_TARGET_SETS, ModelSpec
from .terms import (ASSUMPTION_DEFAULTS, INPUT_NAMES, PEAK_PARTS, PER_GPU_KEYS, ROLE_TERMS, TOTAL_TERMS, Term)

PLACEMENTS = ("colocated", "separate")


@dataclass(frozen=True)
class Scenario:
    """One model instance: the inputs of the term table, plus a name."""

    model: str
    workload: str = "inference"
    head: str = "lm"
    precision: str = "bf16-mixed"
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    optimizer: str = "adamw"
    optimizer_impl: str = "fused"
    batch_size: int = 1
    seq_len: int = 4096
    prompt_len: int = 4096
    gen_len: int = 0
    logits: str = "last"
    checkpointing: str = "none"
    attention: str = "flash"
    num_gpus: int = 1
    zero_stage: int = 0
    tp_size: int = 1
    ep_size: int = 1
    offload: str = "none"
    lora_rank: int = 16
    lora_targets: str = "q_proj,v_proj"
    gpu: str = "H100-80GB-SXM"
    name: str = ""

    def inputs(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in INPUT_NAMES}

    def label(self) -> str:
        return self.name or default_label(self)


# What each workload changes from the Scenario defaults (presets and the CLI both start here).
WORKLOAD_DEFAULTS: dict[str, dict[str, Any]] = {
    "inference": {},
    "full": {"prompt_len": 0, "gen_len": 0},
    "lora": {"prompt_len": 0, "gen_len": 0},
    "qlora": {"prompt_len": 0, "gen_len": 0, "weight_dtype": "nf4"},
    "ppo": {"prompt_len": 512, "gen_len": 512},
    "grpo": {"prompt_len": 512, "gen_len": 512},
    "dpo": {"prompt_len": 0, "gen_len": 0},
}


def default_label(s: Scenario) -> str:
    parts = [s.model, s.workload]
    if s.workload != "inference":
        parts.append(s.precision if s.workload == "full" else f"r{s.lora_rank}")
    else:
        parts.append(s.weight_dtype)
    parts.append(f"{s.num_gpus}×{s.gpu}")
    if s.zero_stage:
        parts.append(f"ZeRO-{s.zero_stage}")
    if s.tp_size > 1:
        parts.append(f"TP{s.tp_size}")
    if s.ep_size > 1:
        parts.append(f"EP{s.ep_size}")
    return " · ".join(parts)


@dataclass(frozen=True)
class RlhfScenario:
    """PPO / DPO / GRPO: several role scenarios placed together or apart."""

    name: str
    algorithm: str
    placement: str
    roles: tuple[tuple[str, Scenario], ...]

    def role(self, name: str) -> Scenario:
        return dict(self.roles)[name]

    def label(self) -> str:
        return self.name or f"{self.algorithm.upper()} · {self.roles[0][1].model} · {self.placement}"


# ---------------------------------------------------------------------------------------------
# Validation

TEXT_CHOICES: dict[str, tuple[str, ...]] = {
    "workload": tb.WORKLOADS + ("frozen",),
    "head": tb.HEADS,
    "precision": tuple(tb.PRECISIONS.rows),
    "weight_dtype": tuple(tb.DTYPES.rows),
    "kv_dtype": tuple(tb.DTYPES.rows),
    "optimizer": tuple(tb.OPTIMIZERS.rows),
    "optimizer_impl": tb.OPTIMIZER_IMPLS,
    "logits": tb.LOGITS,
    "checkpointing": tb.CHECKPOINTING,
    "attention": tb.ATTENTION,
    "offload": tb.OFFLOAD,
    "lora_targets": tuple(LORA_TARGET_SETS),
}
# Upper bounds keep every product far inside float precision (and catch typos like 10**9 tokens).
INT_LIMITS: dict[str, tuple[int, int]] = {
    "batch_size": (1, 1_000_000), "seq_len": (1, 10_000_000), "prompt_len": (0, 10_000_000),
    "gen_len": (0, 10_000_000), "num_gpus": (1, 1_000_000), "zero_stage": (0, 3), "tp_size": (1, 1024), "ep_size": (1, 1024),
    "lora_rank": (1, 65536),
}


def check_value(name: str, value: Any, *, gpus: Iterable[str], source: str | None, key_path: str) -> Any:
    """One input value checked against its allowed set or range; returns it normalised."""
    if name in INT_LIMITS:
        lo, hi = INT_LIMITS[name]
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InputError(f"expected a whole number, got {value!r}", source=source, key_path=key_path)
        if not lo <= value <= hi:
            raise InputError(f"must be between {lo} and {hi:,}, got {value}", source=source, key_path=key_path)
        return value
    if not isinstance(value, str):
        raise InputError(f"expected text, got {value!r}", source=source, key_path=key_path)
    if name == "gpu":
        if value not in gpus:
            raise unknown_name("GPU", value, gpus, source=source, key_path=key_path)
        return value
    if name == "model":
        return value
    choices = TEXT_CHOICES[name]
    if value not in choices:
        raise unknown_name(name.replace("_", " "), value, choices, source=source, key_path=key_path)
    return value


# Why a well-formed combination cannot run: code -> English text. The report's message catalogues
# translate the same codes (keys "skip.<code>", with the same {placeholders}).
SKIP_REASONS = {
    "tp_gpus": "tp_size {tp} does not divide num_gpus {gpus}",
    "tp_heads": "tp_size {tp} does not divide {heads} attention heads",
    "tp_kv": "tp_size {tp} and {kv} KV heads do not divide each other",
    "ep_dense": "ep_size {ep} needs a mixture-of-experts model",
    "ep_divide": "ep_size {ep} must divide the {experts} experts and num_gpus {gpus}",
    "zero_inference": "ZeRO-{zero} applies to training; workload is {workload}",
    "zero_one_rank": "ZeRO-{zero} on one data-parallel rank shards nothing",
    "offload_inference": "CPU offload applies to training",
    "lora_arch": "LoRA is not modelled for {model_type} models",
    "empty_context": "inference needs prompt_len + gen_len > 0",
}


@dataclass(frozen=True)
class SkipReason:
    code: str
    values: Mapping[str, Any]

    def text(self) -> str:
        return SKIP_REASONS[self.code].format(**self.values)


def skip_check(s: Scenario, spec: ModelSpec) -> SkipReason | None:
    """Why a well-formed combination cannot run (a sweep skips it), or None."""
    tp, gpus = s.tp_size, s.num_gpus
    if gpus % tp:
        return SkipReason("tp_gpus", {"tp": tp, "gpus": gpus})
    if spec.num_attention_heads % tp:
        return SkipReason("tp_heads", {"tp": tp, "heads": spec.num_attention_heads})
    if spec.num_key_value_heads % tp and tp % spec.num_key_value_heads:
        return SkipReason("tp_kv", {"tp": tp, "kv": spec.num_key_value_heads})
    if s.ep_size > 1:
        if not spec.is_moe:
            return SkipReason("ep_dense", {"ep": s.ep_size})
        if spec.num_experts % s.ep_size or gpus % s.ep_size:
            return SkipReason("ep_divide", {"ep": s.ep_size, "experts": spec.num_experts, "gpus": gpus})
    trains = s.workload in ("full", "lora", "qlora")
    if s.zero_stage and not trains:
        return SkipReason("zero_inference", {"zero": s.zero_stage, "workload": s.workload})
    if s.zero_stage and gpus // tp == 1:
        return SkipReason("zero_one_rank", {"zero": s.zero_stage})
    if s.offload != "none" and not trains:
        return SkipReason("offload_inference", {})
    if s.workload in ("lora", "qlora") and model_row(spec)["lora_per_rank_qv"] == 0:
        return SkipReason("lora_arch", {"model_type": spec.model_type})
    if s.workload == "inference" and s.prompt_len + s.gen_len == 0:
        return SkipReason("empty_context", {})
    return None


def skip_reason(s: Scenario, spec: ModelSpec) -> str | None:
    """skip_check's reason as English text, or None."""
    reason = skip_check(s, spec)
    return reason.text() if reason else None


# ---------------------------------------------------------------------------------------------
# Compilation of a term table into one Python function

def compile_terms(terms: Sequence[Term], var_code: Callable[[str], str], name: str = "_estimate",
                  batch_inputs: Sequence[str] = (), row_inputs: Sequence[str] = ()) -> Callable:
    """Compile a term table into Python.

    Default: def _estimate(I, A, T, R) -> tuple of every term's value, in table order. Inputs,
    assumptions and looked-up catalog rows are read once into locals at the top.
    With batch_inputs: def _estimate(rows, A, T, R) -> list of such tuples, one per row of input
    values (in batch_inputs order); the loop lives inside the generated code, so a sweep pays no
    per-scenario call or dictionary overhead.
    With row_inputs (a subset of batch_inputs, the ones a sweep varies fastest): terms and catalog
    rows that do not depend on them, directly or through earlier terms, are computed once per
    distinct combination of the other batch inputs and reused for the following rows.
    """
    local = {t.name: f"t_{i}" for i, t in enumerate(terms)}
    hoisted: dict[str, str] = {}  # local name -> how to read it once (outside any loop)
    per_row: dict[str, str] = {}  # catalog rows looked up per scenario
    varying = set(row_inputs)  # names whose value changes from row to row: row inputs, then terms
    inner_rows: set[str] = set()  # catalog rows whose key reads a row input

    def ident(text: str) -> str:
        return "".join(c if c.isalnum() else "_" for c in text)

    def var(n: str) -> str:
        if n in local:
            return local[n]
        name_ = "v_" + ident(n)
        if n not in batch_inputs:
            hoisted.setdefault(name_, var_code(n))
        return name_

    def lookup(e: Lookup) -> str:
        key = to_python(e.key, var, lookup)
        row = "r_" + ident(f"{e.table}_{key}")
        per_row.setdefault(row, f"T[{e.table!r}][{key}]")
        if e.key.names() & varying:
            inner_rows.add(row)
        return f"{row}[{e.column!r}]"

    body = {}
    for t in terms:
        body[t.name] = f"{local[t.name]} = {to_python(t.expr, var, lookup)}"
        if t.expr.names() & varying:
            varying.add(t.name)
    result = "(" + ", ".join(local[t.name] for t in terms) + ",)"
    # Builtins bound as defaults: local lookups are faster than global ones in a hot loop.
    if batch_inputs:
        targets = ", ".join("v_" + ident(n) for n in batch_inputs)
        outer_rows = [k for k in per_row if k not in inner_rows]
        outer_terms = [t.name for t in terms if t.name not in varying]
        reuse = bool(varying & set(batch_inputs) and outer_terms)
        lines = [f"def {name}(rows, A, T, R, _ceil=_ceil, max=max, min=min):"]
        lines += [f"    {k} = {v}" for k, v in hoisted.items()]
        lines += ["    cache = {}", "    cache_get = cache.get"] if reuse else []
        lines += ["    out = []", "    append = out.append", f"    for {targets} in rows:"]
        if reuse:
            saved = ", ".join(outer_rows + [local[n] for n in outer_terms]) + ","
            key = ", ".join("v_" + ident(n) for n in batch_inputs if n not in varying) + ","
            lines += ["        key = (" + key + ")", "        saved = cache_get(key)", "        if saved is None:"]
            lines += [f"            {k} = {per_row[k]}" for k in outer_rows]
            lines += [f"            {body[n]}" for n in outer_terms]
            lines += [f"            cache[key] = ({saved})", "        else:", f"            {saved} = saved"]
            lines += [f"        {k} = {per_row[k]}" for k in per_row if k in inner_rows]
            lines += [f"        {body[t.name]}" for t in terms if t.name in varying]
        else:
            lines += [f"        {k} = {v}" for k, v in per_row.items()] + [f"        {b}" for b in body.values()]
        lines += [f"        append({result})", "    return out"]
    else:
        lines = [f"def {name}(I, A, T, R, _ceil=_ceil, max=max, min=min):"]
        lines += [f"    {k} = {v}" for k, v in {**hoisted, **per_row}.items()] + [f"    {b}" for b in body.values()]
        lines.append(f"    return {result}")
    namespace = {"_ceil": spreadsheet_ceil}
    exec(compile("\n".join(lines), f"<{name}>", "exec"), namespace)  # noqa: S102 - our own table
    return namespace[name]


def _role_var(n: str) -> str:
    if n in INPUT_NAMES:
        return f"I[{n!r}]"
    if n in ASSUMPTION_DEFAULTS:
        return f"A[{n!r}]"
    raise KeyError(n)


_ROLE_FN = compile_terms(ROLE_TERMS, _role_var)
# A sweep's innermost dimensions: the terms that do not read them (weights, states, sharding: most
# of the table) are computed once per model × layout and reused across batch sizes and lengths.
SWEEP_ROW_INPUTS = ("batch_size", "seq_len", "prompt_len", "gen_len")
_ROLE_BATCH_FN = compile_terms(ROLE_TERMS, _role_var, "_estimate_many", batch_inputs=INPUT_NAMES,
                               row_inputs=SWEEP_ROW_INPUTS)
_INPUT_VALUES = operator.attrgetter(*INPUT_NAMES)  # a Scenario's inputs as a tuple, in table order
_ROLE_INDEX = {t.name: i for i, t in enumerate(ROLE_TERMS)}


# ---------------------------------------------------------------------------------------------
# Results

class _Totals:
    """What a single model and an RLHF group both answer: per-GPU bytes, fit, cost."""

    values: Mapping[str, float]

    def __getitem__(self, name: str) -> float:
        return self.values[name]

    @property
    def per_gpu_bytes(self) -> dict[str, int]:
        return {k: int(self.values[k]) for k in PER_GPU_KEYS}

    @property
    def fits(self) -> bool:
        return bool(self.values["fits"])

    def _fit_json(self) -> dict[str, Any]:
        return {
            "gpu_memory_bytes": int(self.values["gpu_memory_bytes"]),
            "headroom_bytes": int(self.values["headroom_bytes"]),
            "fits": self.fits,
            "fits_recommended": bool(self.values["fits_recommended"]),
            "cost": {"purchase_usd": self.values["purchase_usd"], "per_hour_usd": self.values["hourly_usd"]},
        }


@dataclass(frozen=True)
class Estimate(_Totals):
    scenario: Scenario
    values: Mapping[str, float]  # every term, by name
    params_total: int
    params_active: int
    params_by_component: Mapping[str, int]

    @property
    def peak_parts(self) -> dict[str, int]:
        return {k: int(self.values[k]) for k in PEAK_PARTS}

    def params_json(self) -> dict[str, Any]:
        return {
            "total": self.params_total,
            "active_per_token": self.params_active,
            "trainable": int(self.values["trainable_params"]),
            "by_component": dict(self.params_by_component),
        }

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        return {
            "name": s.label(),
            "inputs": s.inputs(),
            "params": self.params_json(),
            "per_gpu_bytes": self.per_gpu_bytes,
            "peak_breakdown_bytes": self.peak_parts,
            "peak_phase": PHASE_NAMES[int(self.values["peak_phase"])],
            "host_offload_bytes": int(self.values["host_offload_bytes"]),
            **self._fit_json(),
        }


PHASE_NAMES = {1: "backward_start", 2: "backward_end", 3: "optimizer_step", 4: "forward"}


@dataclass(frozen=True)
class GroupEstimate(_Totals):
    scenario: RlhfScenario
    roles: tuple[tuple[str, Estimate], ...]
    values: Mapping[str, float]

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        actor = self.roles[0][1]
        return {
            "name": s.label(),
            "inputs": {"workload": s.algorithm, "placement": s.placement,
                       "roles": {r: e.scenario.inputs() for r, e in self.roles}},
            "params": actor.params_json(),
            "per_gpu_bytes": self.per_gpu_bytes,
            "total_gpus": int(self.values["total_gpus"]),
            "gpus_per_role": {r: e.scenario.num_gpus for r, e in self.roles},
            **self._fit_json(),
            "roles": {r: e.to_json() for r, e in self.roles},
        }


# ---------------------------------------------------------------------------------------------
# RLHF group terms: built from the roles present, so the same expressions feed the workbook

def group_terms(role_names: Sequence[str], placement: str) -> tuple[Term, ...]:
    def r(role: str, term: str) -> Var:
        return Var(f"{role}.{term}")

    def total(term: str):
        out = r(role_names[0], term)
        for role in role_names[1:]:
            out = out + r(role, term)
        return out

    def largest(term: str):
        return MAX(*(r(role, term) for role in role_names))

    if placement == "colocated":
        core = [Term(k, k, "bytes", total(k) if k not in ("activations", "kv_cache") else largest(k))
                for k in ("weights", "gradients", "optimizer_states", "master_weights", "activations", "kv_cache")]
        core += [
            Term("model_states", "Resident model states of every role", "bytes", total("model_states"),
                 "every role's weights (and the trained roles' optimizer states) stay on the GPUs", "phase"),
            Term("transient_peak", "Largest phase's transient memory", "bytes",
                 MAX(*(r(role, "allocated_peak") - r(role, "model_states") for role in role_names)),
                 "rollout (actor KV cache), scoring forwards, and each trained role's step run one after another",
                 "phase"),
            Term("allocated_peak", "Allocated peak", "bytes", Var("model_states") + Var("transient_peak"),
                 "persistent states of every role + the largest phase", "total"),
            Term("total_gpus", "GPUs in all", "count", Var("num_gpus"), "", "fit"),
        ]
        return tuple(core) + TOTAL_TERMS
    # Separate pools: each role sized on its own GPUs; the group reports the tightest pool.
    core = [Term(k, k, "bytes", largest(k)) for k in PER_GPU_KEYS]
    core += [
        Term("gpu_memory_bytes", "GPU memory (smallest pool)", "bytes", MIN(*(r(x, "gpu_memory_bytes") for x in role_names))),
        Term("fits", "Every pool fits (1/0)", "flag", MIN(*(r(x, "fits") for x in role_names))),
        Term("headroom_bytes", "Headroom (tightest pool)", "bytes", MIN(*(r(x, "headroom_bytes") for x in role_names))),
        Term("fits_recommended", "Every pool fits with k (1/0)", "flag", MIN(*(r(x, "fits_recommended") for x in role_names))),
        Term("purchase_usd", "Purchase cost (USD)", "usd", total("purchase_usd")),
        Term("hourly_usd", "Cloud cost per hour (USD)", "usd", total("hourly_usd")),
        Term("total_gpus", "GPUs in all", "count", total("num_gpus")),
    ]
    return tuple(core)


_GROUP_FNS: dict[tuple[tuple[str, ...], str], tuple[Callable, tuple[Term, ...]]] = {}


def _group_fn(role_names: tuple[str, ...], placement: str):
    key = (role_names, placement)
    if key not in _GROUP_FNS:
        terms = group_terms(role_names, placement)

        def var(n: str) -> str:
            if "." in n:
                role, term = n.split(".", 1)
                return f"R[{role!r}][{term!r}]"
            return _role_var(n)

        _GROUP_FNS[key] = (compile_terms(terms, var, "_group"), terms)
    return _GROUP_FNS[key]


# ---------------------------------------------------------------------------------------------
# The estimator

class Estimator:
    """Holds the catalogs and assumptions; estimates scenarios. Pure: no files, no clock."""

    def __init__(self, models: Mapping[str, CatalogModel] | Mapping[str, ModelSpec],
                 gpus: Mapping[str, GpuSpec], assumptions: Mapping[str, float] | None = None):
        self.specs: dict[str, ModelSpec] = {
            n: (m.spec if isinstance(m, CatalogModel) else m) for n, m in models.items()}
        self.gpus = dict(gpus)
        self.assumptions = {**ASSUMPTION_DEFAULTS, **(assumptions or {})}
        self.tables = {
            "Models": {n: model_row(s) for n, s in self.specs.items()},
            "GPUs": {n: gpu_row(g) for n, g in self.gpus.items()},
            **{t.name: t.rows for t in tb.LOOKUP_TABLES},
        }

    def with_model(self, spec: ModelSpec) -> "Estimator":
        """The same estimator knowing one more model (e.g. a config path given on the command line)."""
        return Estimator({**self.specs, spec.name: spec}, self.gpus, self.assumptions)

    def spec(self, name: str) -> ModelSpec:
        if name not in self.specs:
            raise unknown_name("model", name, self.specs, key_path="model")
        return self.specs[name]

    def estimate(self, s: Scenario) -> Estimate:
        return self._estimate(s, self.spec(s.model), _ROLE_FN(s.inputs(), self.assumptions, self.tables, None))

    def estimate_all(self, scenarios: Sequence[Scenario]) -> list[Estimate]:
        """estimate() for each scenario, computed in estimate_many's loop (what a build uses)."""
        specs = {name: self.spec(name) for name in dict.fromkeys(s.model for s in scenarios)}
        return [self._estimate(s, specs[s.model], row) for s, row in zip(scenarios, self.estimate_many(scenarios))]

    @staticmethod
    def _estimate(s: Scenario, spec: ModelSpec, row: tuple) -> Estimate:
        return Estimate(s, dict(zip(_ROLE_INDEX, row)), spec.total_params, spec.active_params_per_token,
                        spec.params_by_component())

    def estimate_many(self, scenarios: Sequence[Scenario]) -> list[tuple]:
        """Every term's value (table order) for each scenario, in one compiled loop: for sweeps."""
        return _ROLE_BATCH_FN(map(_INPUT_VALUES, scenarios), self.assumptions, self.tables, None)

    def estimate_group(self, g: RlhfScenario) -> GroupEstimate:
        roles = tuple((name, self.estimate(s)) for name, s in g.roles)
        fn, terms = _group_fn(tuple(n for n, _ in g.roles), g.placement)
        first = g.roles[0][1]
        inputs = {"num_gpus": first.num_gpus, "gpu": first.gpu}
        values = dict(zip((t.name for t in terms), fn(inputs, self.assumptions, self.tables,
                                                      {n: {**e.scenario.inputs(), **e.values} for n, e in roles})))
        return GroupEstimate(g, roles, values)


# ---------------------------------------------------------------------------------------------
# RLHF role layouts

def rlhf_scenario(*, name: str, algorithm: str, placement: str, actor: Scenario,
                  critic_model: str | None = None, reward_model: str | None = None,
                  reference_model: str | None = None, group_size: int = 1,
                  role_gpus: Mapping[str, int] | None = None) -> RlhfScenario:
    """The roles of PPO, DPO or GRPO around an actor scenario (full or LoRA, with prompt/gen lengths).

    PPO: actor (trained, generates), critic (trained, value head), reference (frozen), reward (frozen,
    value head). DPO: policy and frozen reference over chosen + rejected sequences. GRPO: no critic; G
    samples per prompt.
    """
    # DPO trains on given (chosen, rejected) sequences; PPO/GRPO train on the generated rollouts.
    seq = actor.seq_len if algorithm == "dpo" else actor.prompt_len + actor.gen_len
    frozen = dict(workload="frozen", seq_len=seq, prompt_len=0, gen_len=0, zero_stage=0 if actor.zero_stage < 3 else 3,
                  offload="none", weight_dtype="bf16")
    roles: list[tuple[str, Scenario]]
    if algorithm == "dpo":
        pair = dict(batch_size=actor.batch_size * 2, seq_len=seq, prompt_len=0, gen_len=0)
        roles = [("policy", replace(actor, **pair)),
                 ("reference", replace(actor, model=reference_model or actor.model, **{**frozen, **pair}))]
    else:
        batch = actor.batch_size * (group_size if algorithm == "grpo" else 1)
        roles = [("actor", replace(actor, batch_size=batch, seq_len=seq))]
        if algorithm == "ppo":
            roles.append(("critic", replace(actor, model=critic_model or actor.model, head="value", batch_size=batch,
                                            seq_len=seq, prompt_len=0, gen_len=0)))
        roles.append(("reference", replace(actor, model=reference_model or actor.model, batch_size=batch, **frozen)))
        roles.append(("reward", replace(actor, model=reward_model or actor.model, head="value", batch_size=batch,
                                        **frozen)))
    if placement == "separate" and role_gpus:
        roles = [(r, replace(s, num_gpus=role_gpus.get(r, s.num_gpus),
                             zero_stage=s.zero_stage if role_gpus.get(r, s.num_gpus) // s.tp_size > 1 else 0))
                 for r, s in roles]
    roles = [(r, replace(s, zero_stage=0) if s.workload == "frozen" and s.zero_stage != 3 else s) for r, s in roles]
    return RlhfScenario(name=name, algorithm=algorithm, placement=placement, roles=tuple(roles))
