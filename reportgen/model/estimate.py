"""Scenarios in, per-GPU bytes out.

A Scenario is one model instance with its workload and parallel layout (the inputs of the term
table). An RLHF scenario groups several role scenarios (actor, critic, reference, reward) with a
placement. The term table (terms.py) is compiled once into a plain Python function (one scenario)
and once into array operations (vector.py: a sweep, given as input columns); the formulas stay
defined in one place.
"""
from __future__ import annotations

import copy
import functools
import operator
from collections import ChainMap
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence


from .arrays import np
from . import lookups as tb
from .catalog import CatalogModel, GpuSpec, gpu_row
from ..errors import InputError, unknown_name
from .formulas import (AND, CEIL, FLOOR, IF, ISNUMBER, MAX, MIN, MOD, OR, Expr, Num, Var, compile_terms, specialise,
                       substituted)
from .inputs import (FROZEN, ROLLOUT, INPUT_BY_NAME, INPUT_NAMES, INPUTS, RLHF_ALGORITHMS, SINGLE_WORKLOADS,
                     SLEEP_APART, Scenario, check_inputs, check_rlhf)
from .spec import ModelSpec
from .shape import model_row, params_by_component
from .terms import (ASSUMPTION_DEFAULTS, BAR_PARTS, GROUP_BAR, INFERENCE_TIME_KEYS, OVERHEAD_PARTS, PEAK_PARTS,
                    PER_GPU_KEYS, RLHF_TIME_KEYS, ROLE_TERMS, SERVING_KEYS, SINGLE_BAR, SKIP_RULES, TERM_BY_NAME,
                    TOTAL_TERMS, TRAIN_TIME_KEYS, SkipRule, Term, inlined)
from .vector import CHUNK_ROWS, Chunk, TermColumns, Text, VectorTerms, column_of, to_list


@dataclass(frozen=True)
class RlhfScenario:
    """PPO / DPO / GRPO: several role scenarios placed together or apart, made by rlhf_scenario from
    an actor scenario and the group's settings (kept, so a planner can lay the group out anew)."""

    name: str
    algorithm: str
    placement: str
    roles: tuple[tuple[str, Scenario], ...]
    actor: Scenario
    settings: tuple[tuple[str, Any], ...] = ()

    @property
    def lead(self) -> Scenario:
        """The role that names the group and whose GPUs are its own: the actor (DPO's policy), as laid out."""
        return self.roles[0][1]

    def role(self, name: str) -> Scenario:
        return dict(self.roles)[name]

    def label(self, word: Callable[[str, str], str] = lambda axis, value: value) -> str:
        """'PPO · Llama-2-7B · colocated' ('… · separate · engines apart'); word(axis, value) as for a Scenario's."""
        return self.name or " · ".join([self.algorithm.upper(), self.lead.model, *self.placement_words(word)])

    @property
    def job_roles(self) -> tuple[tuple[str, Scenario], ...]:
        """The roles whose models are the job's: all but a rollout engine on GPUs of its own, which serves the
        actor's (how the job runs, not what it is)."""
        return tuple((name, s) for name, s in self.roles if name != ROLLOUT)

    def placement_words(self, word: Callable[[str, str], str] = lambda axis, value: value, ahead: bool = True
                        ) -> list[str]:
        """Where the roles run, the rollout engine where it has GPUs of its own, and (`ahead`) whether it generates
        the next iteration while the trainers train."""
        ahead = ahead and self.generates_ahead
        return ([word("placement", self.placement)]
                + ([word("rollout_placement", "engines apart")] if self.engine_apart else [])
                + ([word("rollout_mode", "async")] if ahead else []))

    @property
    def engine_apart(self) -> bool:
        """Whether its rollout engine has GPUs of its own (rollout_placement separate), where it never sleeps."""
        return dict(self.settings).get("rollout_placement", "actor") != "actor"

    @property
    def generates_ahead(self) -> bool:
        """Whether its engines apart generate the next iteration while the trainers train (rollout_mode async)."""
        return dict(self.settings).get("rollout_mode") == "async"

    @property
    def pooled_roles(self) -> tuple[tuple[str, Scenario], ...]:
        """The roles on GPUs of their own, not the actor's: every other role of separate pools, or a rollout engine
        apart from colocated trainers."""
        return tuple((name, s) for name, s in self.roles[1:] if own_pool(self.placement, name))

    @property
    def rank_sequences(self) -> int:
        """Sequences each of the actor's data-parallel ranks generates and trains on per iteration."""
        return rank_sequences(self.algorithm, self.actor, dict(self.settings))

    def role_on(self, name: str, num_gpus: int, gpu: str | None = None) -> Scenario:
        """A separate pool's role on num_gpus GPUs of its type (or of type `gpu`), the other pools as they are:
        relayout's role with role_gpus (and role_gpu_types) giving it them, made alone (a pool's size is searched one
        count at a time, on each GPU type it might go on)."""
        settings, role = dict(self.settings), self.role(name)
        return _pooled(role.with_inputs(num_gpus=num_gpus, gpu=gpu or role.gpu, zero_stage=self.actor.zero_stage),
                       iteration_sequences_of(self.algorithm, self.actor, settings["group_size"]),
                       settings["micro_batch_size"], self.actor.grad_accum_steps)

    def with_pools(self, role_gpus: Mapping[str, int]) -> "RlhfScenario":
        """relayout({"role_gpus": role_gpus}) for counts that name every pool the group's own role_gpus names, without
        making the other roles anew: each pool counted is role_on its count (tests/test_rlhf_phases.py holds the two
        equal)."""
        return replace(self, roles=tuple((n, self.role_on(n, role_gpus[n]) if n in role_gpus and own_pool(
            self.placement, n) else s) for n, s in self.roles),
            settings=tuple({**dict(self.settings), "role_gpus": dict(role_gpus)}.items()))

    def relayout(self, settings: Mapping[str, Any] = {}, **inputs: Any) -> "RlhfScenario":
        """The same group with the actor's layout inputs and these settings changed (every role follows)."""
        return rlhf_scenario(name=self.name, algorithm=self.algorithm, placement=self.placement,
                             actor=self.actor.with_inputs(**inputs), **{**dict(self.settings), **settings})

    def with_engine_share(self, share: float) -> "RlhfScenario":
        """relayout(gpu_memory_utilization=share) without making the roles anew: every role carries the actor's share
        of each GPU for its rollout engine, and no role sets its own or is made from it (tests/test_group_columns.py
        holds the two equal)."""
        return replace(self, actor=self.actor.with_inputs(gpu_memory_utilization=share),
                       roles=tuple((n, s.with_inputs(gpu_memory_utilization=share)) for n, s in self.roles))


# ---------------------------------------------------------------------------------------------
# Why a well-formed combination cannot run: the rules and their English words are terms.SKIP_RULES; the
# report's message catalogues translate the same codes (keys "skip.<code>", with the same {placeholders}).

SKIP_REASONS = {r.code: r.text for r in SKIP_RULES}


@dataclass(frozen=True)
class SkipReason:
    code: str
    values: Mapping[str, Any]

    def text(self) -> str:
        return SKIP_REASONS[self.code].format(**self.values)


def _plain(value: Any) -> Any:
    """A whole float as an int, for messages ('4 GPUs', not '4.0 GPUs')."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def needed_terms(terms: Sequence[Term], names: Iterable[str]) -> tuple[Term, ...]:
    """The terms that `names` read, directly or through earlier terms, in table order."""
    by_name = {t.name: t for t in terms}
    wanted, stack = set(), [n for n in names if n in by_name]
    while stack:
        n = stack.pop()
        if n not in wanted:
            wanted.add(n)
            stack += [m for m in by_name[n].expr.names() if m in by_name]
    return tuple(t for t in terms if t.name in wanted)


def first_skip_codes(flags: np.ndarray) -> np.ndarray:
    """Per scenario (a column of Estimator.skip_flags): 0 where it can run, else 1 + the index in
    terms.SKIP_RULES of the first rule that holds."""
    return np.where(flags.any(axis=0), flags.argmax(axis=0) + 1, 0)


def _skip_terms() -> tuple[Term, ...]:
    """The skip rules as terms after the role terms they read: a flag per rule, then its values."""
    out = []
    for rule in SKIP_RULES:
        out.append(Term(f"skip.{rule.code}", rule.code, "flag", IF(rule.when, 1, 0)))
        out += [Term(f"skip.{rule.code}.{k}", k, "", e) for k, e in rule.values]
    names = {n for t in out for n in t.expr.names()}
    return needed_terms(ROLE_TERMS, names) + tuple(out)


def _role_var(n: str) -> str:
    if n in INPUT_NAMES:
        return f"I[{n!r}]"
    if n in ASSUMPTION_DEFAULTS:
        return f"A[{n!r}]"
    raise KeyError(n)


_ROLE_FN = compile_terms(ROLE_TERMS, _role_var, cache=True)
# A sweep's innermost dimensions: the terms that do not read them (weights, states, sharding: most
# of the table) are computed once per model × layout and reused across batch sizes and lengths.
SWEEP_ROW_INPUTS = ("batch_size", "seq_len", "prompt_len", "gen_len")
_INPUT_VALUES = operator.attrgetter(*INPUT_NAMES)  # a Scenario's inputs as a tuple, in table order
_ROLE_INDEX = {t.name: i for i, t in enumerate(ROLE_TERMS)}
_SKIP_TERMS = _skip_terms()
_SKIP_FN = compile_terms(_SKIP_TERMS, _role_var, "_skip", cache=True)
_SKIP_INDEX = {t.name: i for i, t in enumerate(_SKIP_TERMS)}


def _rule_inputs(rule: SkipRule) -> frozenset[str]:
    """The inputs a skip rule's condition reads, directly or through the role terms."""
    read = rule.when.names()
    return frozenset((read | {n for t in needed_terms(ROLE_TERMS, read) for n in t.expr.names()}) & set(INPUT_NAMES))


_SKIP_RULE_INPUTS = {rule.code: _rule_inputs(rule) for rule in SKIP_RULES}
# Per rule, in order: its code, where _SKIP_FN puts its flag and its values, and the inputs it reads.
_SKIP_RULE_INDEX = tuple((rule.code, _SKIP_INDEX[f"skip.{rule.code}"],
                          tuple((k, _SKIP_INDEX[f"skip.{rule.code}.{k}"]) for k, _ in rule.values),
                          _SKIP_RULE_INPUTS[rule.code]) for rule in SKIP_RULES)


# The tables' column forms, made at first use: a command that computes one scenario never needs them (#35).
@functools.cache
def _role_vector() -> VectorTerms:
    return VectorTerms(ROLE_TERMS, SWEEP_ROW_INPUTS, _ROLE_FN)


@functools.cache
def _skip_vector() -> VectorTerms:
    return VectorTerms(_SKIP_TERMS, SWEEP_ROW_INPUTS, _SKIP_FN)


# ---------------------------------------------------------------------------------------------
# Results

# An estimate's JSON object, defined once: Estimate.to_json fills it from one scenario's values, the
# JSON writer renders a sweep's rows from term columns by it. A leaf says where a value comes from.
@dataclass(frozen=True)
class JsonField:
    kind: str  # int, bool or raw (a term's value as int(), bool() or as it is), phase (a term naming
    # PHASE_NAMES), label, inputs or components (the scenario's name, its inputs, the model's parameters)
    term: str = ""


def _ints(names) -> dict[str, JsonField]:
    return {k: JsonField("int", k) for k in names}


PARAMS_JSON = {"total": JsonField("int", "total_params"), "active_per_token": JsonField("int", "active_params"),
               "trainable": JsonField("int", "trainable_params"), "by_component": JsonField("components")}
FIT_JSON = {**_ints(("gpu_memory_bytes", "headroom_bytes")), "fits": JsonField("bool", "fits"),
            "fits_recommended": JsonField("bool", "fits_recommended"),
            "cost": {"purchase_usd": JsonField("raw", "purchase_usd"), "per_hour_usd": JsonField("raw", "hourly_usd")}}


def time_keys(workload: str, is_train) -> tuple[str, ...]:
    """Throughput, time and cost: a training run's, or a served model's (a frozen role has none)."""
    return TRAIN_TIME_KEYS if is_train else INFERENCE_TIME_KEYS if workload == "inference" else ()


def estimate_json_layout(workload: str, is_train, engine_mode) -> dict[str, Any]:
    """The JSON object of a single model's estimate, by its workload and two of its terms."""
    time = time_keys(workload, is_train)
    return {"name": JsonField("label"), "inputs": JsonField("inputs"), "params": PARAMS_JSON,
            "per_gpu_bytes": _ints(PER_GPU_KEYS), "peak_breakdown_bytes": _ints(PEAK_PARTS),
            "peak_phase": JsonField("phase", "peak_phase"), "host_offload_bytes": JsonField("int", "host_offload_bytes"),
            **FIT_JSON,
            **({"time": {k: JsonField("raw", k) for k in time}} if time else {}),
            **({"serving": {k: JsonField("raw", k) for k in SERVING_KEYS}} if engine_mode else {})}


def fill_json(layout: Mapping[str, Any], estimate) -> dict[str, Any]:
    """A layout's values for one estimate (an Estimate, or a GroupEstimate for the terms it has)."""
    out = {}
    for key, leaf in layout.items():
        if isinstance(leaf, Mapping):
            out[key] = fill_json(leaf, estimate)
        elif leaf.kind == "label":
            out[key] = estimate.scenario.label()
        elif leaf.kind == "inputs":
            out[key] = estimate.scenario.inputs()
        elif leaf.kind == "components":
            out[key] = dict(estimate.params_by_component)
        else:
            value = estimate.values[leaf.term]
            out[key] = (int(value) if leaf.kind == "int" else bool(value) if leaf.kind == "bool" else
                        PHASE_NAMES[int(value)] if leaf.kind == "phase" else value)
    return out


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

    @property
    def rent_usd(self) -> float:
        """What renting costs, the plans' second measure (term rent_usd): a training run's whole cost
        at the hourly price, otherwise (serving, RLHF groups) an hour."""
        return self.values["rent_usd"]


@dataclass(frozen=True)
class Estimate(_Totals):
    scenario: Scenario
    values: Mapping[str, float]  # every term, by name
    params_by_component: Mapping[str, int]

    @property
    def params_total(self) -> int:
        return int(self.values["total_params"])

    @property
    def params_active(self) -> int:
        return int(self.values["active_params"])

    @property
    def peak_parts(self) -> dict[str, int]:
        return {k: int(self.values[k]) for k in PEAK_PARTS}

    def params_json(self) -> dict[str, Any]:
        return fill_json(PARAMS_JSON, self)

    def gpus_by_type(self) -> dict[str, int]:
        """The GPUs it runs on, by type (one type)."""
        return {self.scenario.gpu: self.scenario.num_gpus}

    def to_json(self) -> dict[str, Any]:
        return fill_json(estimate_json_layout(self.scenario.workload, self.values["is_train"],
                                              self.values["engine_mode"]), self)

    def time_json(self) -> dict[str, float]:
        """Throughput, time and cost: a training run's, or a served model's (a frozen role has none)."""
        return {k: self.values[k] for k in time_keys(self.scenario.workload, self.values["is_train"])}


PHASE_NAMES = {1: "backward_start", 2: "backward_end", 3: "optimizer_step", 4: "forward", 5: "forward_end",
               6: "recompute_start", 7: "pipeline_first_stage", 8: "pipeline_middle_stage", 9: "fsdp_layer_backward"}


@dataclass(frozen=True)
class GroupEstimate(_Totals):
    scenario: RlhfScenario
    roles: tuple[tuple[str, Estimate], ...]
    values: Mapping[str, float]

    def rollout_settings(self) -> dict[str, str]:
        """Where a PPO/GRPO group's rollout engine runs and whether it generates ahead (DPO has no rollouts)."""
        settings = dict(self.scenario.settings)
        return {} if self.scenario.algorithm == "dpo" else {n: settings[n] for n in ("rollout_placement", "rollout_mode")}

    def pools(self) -> list[tuple[tuple[str, ...], "Estimate | GroupEstimate", Mapping[str, float]]]:
        """The group's GPU pools: (their roles, what answers for them, its values). Roles that share the actor's GPUs
        are one pool the group's values answer for (colocated trainers beside engines apart: its trainers_… values);
        a role on GPUs of its own is a pool its estimate answers for."""
        placement, out = self.scenario.placement, []
        shared = tuple(name for name, _ in self.roles if not own_pool(placement, name))
        if shared:
            apart = len(shared) < len(self.roles)
            out.append((shared, self, {**self.values, **{k.removeprefix(TRAINERS): v for k, v in self.values.items()
                                                          if k.startswith(TRAINERS)}} if apart else self.values))
        out += [((name,), e, e.values) for name, e in self.roles if own_pool(placement, name)]
        return out

    def gpus_by_type(self) -> dict[str, int]:
        """Its GPUs by type, the actor's first: each pool's (separate pools may be on other types than the actor's)."""
        roles, out = dict(self.scenario.roles), {}
        for names, _, _ in self.pools():
            s = roles[names[0]]
            out[s.gpu] = out.get(s.gpu, 0) + s.num_gpus
        return out

    def pools_json(self) -> list[dict[str, Any]]:
        """Each pool's roles, GPUs and fit (the group's per-GPU bytes are the tightest pool's, key by key)."""
        return [{"roles": list(roles), "gpu": dict(self.scenario.roles)[roles[0]].gpu,
                 "num_gpus": dict(self.scenario.roles)[roles[0]].num_gpus,
                 **{k: int(values[k]) for k in ("device_total", "recommended", "gpu_memory_bytes", "headroom_bytes")},
                 "fits": bool(values["fits"]), "fits_recommended": bool(values["fits_recommended"]),
                 "purchase_usd": values["purchase_usd"]} for roles, _, values in self.pools()]

    def to_json(self) -> dict[str, Any]:
        s = self.scenario
        actor = self.roles[0][1]
        return {
            "name": s.label(),
            "inputs": {"workload": s.algorithm, "placement": s.placement, **self.rollout_settings(),
                       "roles": {r: e.scenario.inputs() for r, e in self.roles}},
            "params": actor.params_json(),
            "per_gpu_bytes": self.per_gpu_bytes,
            "total_gpus": int(self.values["total_gpus"]),
            "gpus_per_role": {r: e.scenario.num_gpus for r, e in self.roles},
            "gpu_type_per_role": {r: e.scenario.gpu for r, e in self.roles},
            "pools": self.pools_json(),
            **fill_json(FIT_JSON, self),
            "time": {k: self.values[k] for k in RLHF_TIME_KEYS},
            "roles": {r: e.to_json() for r, e in self.roles},
        }


# ---------------------------------------------------------------------------------------------
# RLHF group terms: built from the roles present, so the same expressions feed the workbook

def _of(role: str, term: str) -> Var:
    """A role's term, as a group's terms read it ("actor.weights")."""
    return Var(f"{role}.{term}")


def _sum(exprs: Iterable[Expr]) -> Expr:
    """The expressions added left to right (the order the Python and the workbook add them in)."""
    exprs = iter(exprs)
    out = next(exprs)
    for e in exprs:
        out = out + e
    return out


# The prefix of the terms of colocated trainers' pool beside a rollout engine apart (group_terms, GroupEstimate.pools).
TRAINERS = "trainers_"


def group_terms(role_names: Sequence[str], placement: str) -> tuple[Term, ...]:
    r = _of

    def total(term: str, roles: Sequence[str] = role_names):
        return _sum(r(role, term) for role in roles)

    # One iteration runs its phases one after another: the actor's rollouts, the log-probabilities and
    # values of the trained roles, the frozen models' scoring, then every trained role's optimizer step
    # (colocated or not: the phases depend on each other). DPO's policy has no pass before its step.
    before_training = [role for role in role_names if role in ("actor", "critic")]
    sync = Var("rollout_phase_seconds") + Var("log_prob_seconds") + Var("scoring_seconds") + Var("training_seconds")
    time = (
        Term("generation_seconds", "Rollout generation per iteration", "seconds", total("rollout_seconds"), "", "time"),
        Term("refit_seconds", "Weights into the rollout engine per iteration", "seconds", total("refit_seconds"),
             "the actor's trained weights gathered into its rollout engine, which sleeps through training and wakes "
             "for the rollouts, or broadcast to an engine on GPUs of its own", "time"),
        Term("rollout_phase_seconds", "Rollout phase per iteration: the engine refitted, then generation", "seconds",
             Var("refit_seconds") + Var("generation_seconds"),
             "what a framework's rollout timer spans: veRL's gen times its worker's generate_sequences, whose sharding "
             "manager wakes the engine and loads the trained weights into it before the rollouts", "time"),
        Term("log_prob_seconds", "Log-probabilities and values per iteration", "seconds",
             total("forward_pass_seconds", before_training) if before_training else Num(0),
             "the actor's log-probabilities of its own rollouts (PPO's and GRPO's ratio) and the critic's "
             "values: a forward pass each before they train", "time"),
        Term("scoring_seconds", "Scoring per iteration", "seconds", total("scoring_seconds"), "", "time"),
        Term("training_seconds", "Training steps per iteration", "seconds", total("step_seconds"), "", "time"),
        Term("iteration_seconds", "Time per RLHF iteration", "seconds",
             IF(Var("rollout_mode").eq("async"),
                Var("refit_seconds") + MAX(Var("generation_seconds"),
                                           Var("log_prob_seconds") + Var("scoring_seconds") + Var("training_seconds")),
                sync) if ROLLOUT in role_names else sync,
             "the engine woken and refitted, rollouts, then the log-probabilities, values and scores, then the "
             "trained roles' steps; with rollout_mode async, engines apart generate the next iteration's rollouts "
             "while the trainers take this one's, after the refit", "time"),
        Term("rent_usd", "Cost to rent for an hour", "usd", Var("hourly_usd"),
             "what the plan's cheapest to rent compares: an hour of every role's GPUs", "time"),
        Term("plan_seconds", "Time the plan ranks equals by", "seconds", Var("iteration_seconds"),
             "among groups of a requirement at the same price and GPU count the plan takes the fastest iteration",
             "time"),
    )
    if placement == "separate":  # each role sized on its own GPUs; the group reports the tightest pool
        return (pools_answer([{k: r(x, k) for k in POOL_ANSWERS} for x in role_names])
                + bar_terms([_own_bar(x) for x in role_names]) + time)
    if ROLLOUT not in role_names:
        return colocated_pool(role_names) + bar_terms([_colocated_bar(Var)]) + time
    # Trainers colocated beside a rollout engine on GPUs of its own: the trainers' pool (its answers named
    # trainers_…, on the actor's GPUs), and the group's answer over it and the engine's pool.
    trainers = [t for t in colocated_pool(tuple(r for r in role_names if r != ROLLOUT)) if t.name != "total_gpus"]
    renamed = {t.name: TRAINERS + t.name for t in trainers if t.name in POOL_ANSWERS}

    def trainers_term(t: Term) -> Term:
        if t.name in renamed:  # a per-GPU term's label is its name: the role term's is read
            label = (TERM_BY_NAME[t.name].label if t.label == t.name else t.label) + " (the trainers' GPUs)"
            t = replace(t, name=renamed[t.name], label=label)
        return replace(t, expr=substituted(t.expr, lambda n: Var(renamed[n]) if n in renamed else None))

    trainers = tuple(map(trainers_term, trainers))
    pool = {k: Var(renamed.get(k, k)) for k in POOL_ANSWERS}
    return (trainers + pools_answer((pool, {k: r(ROLLOUT, k) for k in POOL_ANSWERS}))
            + bar_terms([_colocated_bar(lambda n: Var(renamed.get(n, n))), _own_bar(ROLLOUT)]) + time)


TRANSIENT_PEAK_LABEL = "Largest phase's transient memory"


def colocated_pool(role_names: Sequence[str]) -> tuple[Term, ...]:
    """Roles that share the actor's GPUs: every role's resident states, the largest phase's transient memory, and the
    pool's fit and price on those GPUs."""
    r = _of

    def total(term: str) -> Expr:
        return _sum(r(role, term) for role in role_names)

    core = [Term(k, k, "bytes", MAX(*(r(x, k) for x in role_names)) if k in ("activations", "kv_cache") else total(k))
            for k in ("weights", "gradients", "optimizer_states", "master_weights", "activations", "kv_cache")]
    core += [
        Term("model_states", "Resident model states of every role", "bytes", total("model_states"),
             "every role's weights (and the trained roles' optimizer states) stay on the GPUs", "phase"),
        Term("resident_gradients", "Gradient buffers kept by every trained role", "bytes",
             total("persistent_gradients") + total("ddp_bucket_bytes"),
             "part of the resident model states: a gradient buffer that is never freed (Megatron's, ZeRO-3's "
             "partition) and DDP's all-reduce buckets", "phase"),
        Term("zero3_buffer", "ZeRO-3 gathered-layer buffers of every role", "bytes", total("zero3_buffer"),
             "part of the resident model states: each sharded role's gathered layer and the prefetched next one",
             "phase"),
        Term("pp_recv_buffer_bytes", "Pipeline receive buffers of every role", "bytes",
             total("pp_recv_buffer_bytes"), "part of the resident model states: a role trained by a torch pipeline "
             "keeps a receive buffer per micro-batch", "phase"),
        Term("transient_peak", TRANSIENT_PEAK_LABEL, "bytes",
             MAX(*(r(role, "allocated_peak") - r(role, "model_states") for role in role_names)),
             "rollout (actor KV cache), scoring forwards, and each trained role's step run one after another",
             "phase"),
        Term("allocated_peak", "Allocated peak", "bytes", Var("model_states") + Var("transient_peak"),
             "persistent states of every role + the largest phase", "total"),
        Term("total_gpus", "GPUs in all", "count", Var("num_gpus"), "", "fit"),
        Term("kv_pool_bytes", "Rollout engine's KV pool", "bytes", r(role_names[0], "kv_pool_bytes"),
             "the actor's engine's, where it generates with one", "phase"),
        Term("kv_fits", "The rollout engine's pool holds a sequence (1/0)", "flag", r(role_names[0], "kv_fits"),
             "", "phase"),
        Term("node_host_bytes", "A node's host RAM in use by every role", "bytes", total("node_host_bytes"),
             "the roles share the actor's nodes: each one's offloaded states (and a sleeping engine's weights) add up",
             "fit"),
    ]
    return tuple(core) + GROUP_TOTAL_TERMS


def pools_answer(pools: Sequence[Mapping[str, Expr]]) -> tuple[Term, ...]:
    """A group's answer over GPU pools, each a mapping of POOL_ANSWERS to its expressions: the tightest pool's
    memory and fit, every pool's GPUs and prices."""
    def tightest(fn, term: str) -> Expr:
        return fn(*(p[term] for p in pools))

    def every(term: str) -> Expr:
        return _sum(p[term] for p in pools)

    return tuple([Term(k, k, "bytes", tightest(MAX, k)) for k in PER_GPU_KEYS] + [
        Term("gpu_memory_bytes", "GPU memory (smallest pool)", "bytes", tightest(MIN, "gpu_memory_bytes")),
        Term("fits", "Every pool fits (1/0)", "flag", tightest(MIN, "fits")),
        Term("headroom_bytes", "Headroom (tightest pool)", "bytes", tightest(MIN, "headroom_bytes")),
        Term("fits_recommended", "Every pool fits with k (1/0)", "flag", tightest(MIN, "fits_recommended")),
        Term("fit_limit", "What keeps the tightest pool from fitting with k", "count", tightest(MAX, "fit_limit")),
        Term("purchase_usd", "Purchase cost (USD)", "usd", every("purchase_usd")),
        Term("hourly_usd", "Cloud cost per hour (USD)", "usd", every("hourly_usd")),
        Term("total_gpus", "GPUs in all", "count", every("num_gpus")),
    ])


def _colocated_bar(var: Callable[[str], Expr]) -> dict[str, Expr]:
    """The bar parts of the roles sharing the actor's GPUs (colocated_pool's terms, read through `var`): their
    resident states, the largest phase's transient memory, the overheads, and the pool's device total."""
    return {"resident_weights": var("weights"), "resident_master_weights": var("master_weights"),
            "resident_optimizer_states": var("optimizer_states"), "resident_gradients": var("resident_gradients"),
            "temporaries": var("zero3_buffer") + var("pp_recv_buffer_bytes"), "transient_peak": var("transient_peak"),
            **{p: var(p) for p in OVERHEAD_PARTS}, "device_total": var("device_total")}


def _own_bar(role: str) -> dict[str, Expr]:
    """The bar parts of a role on GPUs of its own: its single-model bar, and its device total."""
    return {**{p: _of(role, name) for p, name in SINGLE_BAR.items() if name}, "device_total": _of(role, "device_total")}


def bar_terms(pools: Sequence[Mapping[str, Expr]]) -> tuple[Term, ...]:
    """A group's bar (the report's breakdowns, the workbook's Charts): the parts of its tightest pool, the first
    (GroupEstimate.pools' order) of those with the largest device total. A part a pool lacks is 0."""
    if len(pools) == 1:
        head: tuple[Term, ...] = ()

        def part(p: str) -> Expr:
            return pools[0].get(p, Num(0))
    else:
        top = MAX(*(pool["device_total"] for pool in pools))
        which: Expr = Num(len(pools))
        for k in range(len(pools) - 1, 0, -1):
            which = IF(pools[k - 1]["device_total"].ge(top), k, which)
        head = (Term("bar_pool", "Pool the bar shows (1: the actor's)", "count", which,
                     "the tightest pool: the first, in role order, with the largest device total", "phase"),)

        def part(p: str) -> Expr:
            if not any(p in pool for pool in pools):
                return Num(0)
            out = pools[-1].get(p, Num(0))
            for k in range(len(pools) - 1, 0, -1):
                out = IF(Var("bar_pool").eq(k), pools[k - 1].get(p, Num(0)), out)
            return out
    return head + tuple(Term(GROUP_BAR[p], f"{bar_part_label(p)} (the bar)", "bytes", part(p), BAR_SOURCE, "phase")
                        for p in BAR_PARTS)


BAR_SOURCE = ("a part of the group's bar in the report's breakdowns and the workbook's Charts: its tightest pool's (where "
              "the roles share the actor's GPUs, their states and largest phase; a role on GPUs of its own, its bar)")


def bar_part_label(part: str) -> str:
    """A bar part's label: its term's (a pool's largest phase: the group term's)."""
    return TRANSIENT_PEAK_LABEL if part == "transient_peak" else TERM_BY_NAME[part].label


# What each pool of a group answers (pools_answer): its per-GPU bytes, fit, GPUs and prices.
POOL_ANSWERS = PER_GPU_KEYS + ("gpu_memory_bytes", "fits", "headroom_bytes", "fits_recommended", "fit_limit",
                               "purchase_usd", "hourly_usd", "num_gpus")


# RLHF roles train or score with a training framework, never a serving engine's pool: the shared
# totals read, for a group, without the engine's branches.
# An RLHF group adds no userbuffers of a TP overlap to its device total (its trainers' processes are its roles').
GROUP_CONSTANTS = {"engine_mode": 0, "engine_reserves": 0, "engine_device_total": 0, "tp_overlap_buffer_bytes": 0}
GROUP_TOTAL_TERMS = tuple(replace(t, expr=specialise(t.expr, GROUP_CONSTANTS)) for t in TOTAL_TERMS)

# The group's settings its terms read (beside its first role's GPUs): on the RLHF sheet, cells of the group's row.
GROUP_INPUTS = ("rollout_mode",)
_GROUP_FNS: dict[tuple[tuple[str, ...], str], tuple[Callable, tuple[Term, ...]]] = {}


def _group_fn(role_names: tuple[str, ...], placement: str):
    key = (role_names, placement)
    if key not in _GROUP_FNS:
        terms = group_terms(role_names, placement)

        def var(n: str) -> str:
            if "." in n:
                role, term = n.split(".", 1)
                return f"R[{role!r}][{term!r}]"
            return _group_var(n)

        _GROUP_FNS[key] = (compile_terms(terms, var, "_group"), terms)
    return _GROUP_FNS[key]


def _group_var(n: str) -> str:
    """Where a group's term reads a name: its settings and a role's values ("actor.weights") are inputs."""
    return f"I[{n!r}]" if "." in n or n in GROUP_INPUTS else _role_var(n)


@functools.cache
def _group_vector(role_names: tuple[str, ...], placement: str) -> VectorTerms:
    """The group terms for columns: a role's values are inputs named "role.term" (the rows the columns cannot hold
    exactly go through the same terms compiled over those names)."""
    _, terms = _group_fn(role_names, placement)
    return VectorTerms(terms, (), compile_terms(terms, _group_var, "_group_row"))


def _group_inputs(g: RlhfScenario) -> dict[str, Any]:
    """A group's own inputs: its first role's GPUs and its settings its terms read."""
    first = g.lead
    settings = dict(g.settings)
    return {"num_gpus": first.num_gpus, "gpu": first.gpu, **{n: settings[n] for n in GROUP_INPUTS}}


@dataclass(frozen=True)
class _GroupKind:
    """The groups of one shape (the same roles, the same placement) among a run of groups: where they stand in it,
    each role's rows among the run's role scenarios, and the group terms over those rows' columns."""
    positions: np.ndarray  # the groups' places in the run, ascending
    role_rows: tuple[np.ndarray, ...]  # per role, in the groups' order
    terms: Chunk


class GroupColumns:
    """Estimator.estimate_groups: every term of a run of RLHF groups and of their roles, as columns; a group is
    read back as the GroupEstimate estimate_group makes (tests/test_group_columns.py)."""

    def __init__(self, groups: Sequence[RlhfScenario], roles: Chunk, kinds: Sequence[_GroupKind],
                 estimator: "Estimator"):
        self.groups, self.roles, self.kinds, self.estimator = tuple(groups), roles, tuple(kinds), estimator
        self._kind = np.empty(len(self.groups), dtype=np.int64)  # each group's kind, and its row there
        self._row = np.empty(len(self.groups), dtype=np.int64)
        for k, kind in enumerate(self.kinds):
            self._kind[kind.positions] = k
            self._row[kind.positions] = np.arange(len(kind.positions))

    def __len__(self) -> int:
        return len(self.groups)

    def numbers(self, name: str, absent: float = 0) -> np.ndarray:
        """A group term of every group, in order (`absent` where a group's shape has no such term)."""
        out = np.full(len(self.groups), absent, dtype=float)
        for kind in self.kinds:
            if name in kind.terms.names:
                out[kind.positions] = kind.terms.numbers(name)
        return out

    @functools.cached_property
    def _role_values(self) -> list[tuple]:
        return list(self.roles.rows())

    @functools.cached_property
    def _group_values(self) -> list[list[tuple]]:
        return [list(kind.terms.rows()) for kind in self.kinds]

    def estimate(self, k: int) -> GroupEstimate:
        g, kind, row = self.groups[k], int(self._kind[k]), int(self._row[k])
        role_rows = [int(rows[row]) for rows in self.kinds[kind].role_rows]
        return GroupEstimate(g, tuple((name, self.estimator.estimate_row(s, self._role_values[at]))
                                      for (name, s), at in zip(g.roles, role_rows)),
                             dict(zip(self.kinds[kind].terms.names, self._group_values[kind][row])))


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
        models_table = {n: model_row(s) for n, s in self.specs.items()}
        self.tables = {
            "Models": models_table,
            "GPUs": {n: gpu_row(g) for n, g in self.gpus.items()},
            **{t.name: t.rows for t in tb.LOOKUP_TABLES},
        }
        self.components = {n: params_by_component(row) for n, row in models_table.items()}

    def with_model(self, spec: ModelSpec) -> "Estimator":
        """The same estimator knowing one more model (e.g. a config path given on the command line). The
        other models' rows are shared, not computed again: validation makes one such estimator per
        measured case (about 300 in a build)."""
        other = copy.copy(self)
        other.specs = {**self.specs, spec.name: spec}
        row = model_row(spec)
        other.tables = {**self.tables, "Models": {**self.tables["Models"], spec.name: row}}
        other.components = {**self.components, spec.name: params_by_component(row)}
        return other

    def spec(self, name: str) -> ModelSpec:
        if name not in self.specs:
            raise unknown_name("model", name, self.specs, key_path="model")
        return self.specs[name]

    def estimate(self, s: Scenario) -> Estimate:
        self.spec(s.model)
        return self.estimate_row(s, _ROLE_FN(s.input_view(), self.assumptions, self.tables, None))

    def skip_reasons(self, s: Scenario, undecided: Iterable[str] = (), among: Iterable[str] | None = None
                     ) -> list[SkipReason]:
        """Why a well-formed combination cannot run (a sweep skips it): every rule of terms.SKIP_RULES that
        holds, in order (of those whose codes are `among`). undecided: inputs whose values are still to be
        chosen (a plan's layout); the rules that read them are not checked."""
        self.spec(s.model)
        values = _SKIP_FN(s.input_view(), self.assumptions, self.tables, None)
        undecided, among = set(undecided), None if among is None else set(among)
        return [SkipReason(code, {k: _plain(values[i]) for k, i in value_index})
                for code, flag, value_index, read in _SKIP_RULE_INDEX if values[flag]
                and (among is None or code in among) and not read & undecided]

    def skip_check(self, s: Scenario, undecided: Iterable[str] = (), among: Iterable[str] | None = None
                   ) -> SkipReason | None:
        """The first of skip_reasons, or None: the reason a sweep gives for skipping the scenario."""
        return next(iter(self.skip_reasons(s, undecided, among)), None)

    def skip_reason(self, s: Scenario) -> str | None:
        """skip_check's reason as English text, or None."""
        reason = self.skip_check(s)
        return reason.text() if reason else None

    def estimate_all(self, scenarios: Sequence[Scenario]) -> list[Estimate]:
        """estimate() for each scenario, computed as columns (what a build uses); each chunk of term
        columns is dropped once its rows are Estimates."""
        out: list[Estimate] = []
        for chunk in self.estimate_chunks(scenario_columns(scenarios), len(scenarios)):
            out += map(self.estimate_row, scenarios[chunk.start:chunk.start + chunk.size], chunk.rows())
        return out

    def estimate_row(self, s: Scenario, row: tuple) -> Estimate:
        """The Estimate of s from its terms' values in table order (a row of a Chunk)."""
        return Estimate(s, dict(zip(_ROLE_INDEX, row)), self.components[s.model])

    def estimate_many(self, scenarios: Sequence[Scenario]) -> TermColumns:
        """Every term of each scenario (iterating gives each row's values in table order, as estimate()
        computes them), computed as columns: for sweeps."""
        return self.estimate_columns(scenario_columns(scenarios), len(scenarios))

    def estimate_columns(self, columns: Mapping[str, Any], size: int) -> TermColumns:
        """Every term of `size` scenarios given as input columns (name -> a constant, a NumPy array,
        vector.Text or a list; an input left out takes its default)."""
        return TermColumns(_role_vector().names, tuple(self.estimate_chunks(columns, size)))

    def estimate_chunks(self, columns: Mapping[str, Any], size: int, chunk_rows: int = CHUNK_ROWS,
                        vector: VectorTerms | None = None) -> Iterator[Chunk]:
        """estimate_columns chunk by chunk (of `vector`, by default the role terms): a writer streams rows while
        memory stays flat."""
        return (vector or _role_vector()).chunks(self.input_columns(columns), size, self.assumptions, self.tables, chunk_rows)

    def skip_flags(self, columns: Mapping[str, Any], size: int) -> np.ndarray:
        """Which of terms.SKIP_RULES hold for `size` scenarios given as columns: a row per rule, a column
        per scenario."""
        out = np.zeros((len(SKIP_RULES), size), dtype=bool)
        for chunk in self.estimate_chunks(columns, size, vector=_skip_vector()):
            for k, rule in enumerate(SKIP_RULES):
                out[k, chunk.start:chunk.start + chunk.size] = chunk.numbers(f"skip.{rule.code}").astype(bool)
        return out

    def skip_codes(self, columns: Mapping[str, Any], size: int) -> np.ndarray:
        """skip_check's answer for `size` scenarios given as columns, as numbers: 0 where a scenario
        can run, else 1 + the index in terms.SKIP_RULES of the first rule that holds."""
        return first_skip_codes(self.skip_flags(columns, size))

    def input_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        """Every input's column (an input left out: its default); an unknown model is an input
        error, not a KeyError in the arrays."""
        out = {i.name: column_of(columns[i.name]) if i.name in columns else i.default for i in INPUTS}
        models = out["model"]
        for name in models.vocab if isinstance(models, Text) else dict.fromkeys(to_list(models, 1)):
            self.spec(name)
        return out

    def estimate_group(self, g: RlhfScenario, known: dict[Scenario, Estimate] | None = None) -> GroupEstimate:
        """known: role estimates already made, filled as it goes (a search meets the same frozen roles many times)."""
        roles = tuple((name, self.estimate(s) if known is None else self.estimate_known(s, known)) for name, s in g.roles)
        fn, terms = _group_fn(tuple(n for n, _ in g.roles), g.placement)
        values = dict(zip((t.name for t in terms), fn(_group_inputs(g), self.assumptions, self.tables,
                                                      {n: ChainMap(e.values, e.scenario.input_view()) for n, e in roles})))
        return GroupEstimate(g, roles, values)

    def estimate_groups(self, groups: Sequence[RlhfScenario]) -> GroupColumns:
        """estimate_group of each group, computed as columns: every role of every group as one sweep, then, for the
        groups of each shape (roles and placement), the group terms over their roles' columns ("actor.weights")."""
        scenarios = [s for g in groups for _, s in g.roles]
        given = scenario_columns(scenarios)
        chunks = tuple(self.estimate_chunks(given, len(scenarios), chunk_rows=max(1, len(scenarios))))
        roles = chunks[0] if chunks else Chunk(_role_vector().names, 0, 0, {}, {})
        first = np.cumsum([0] + [len(g.roles) for g in groups])  # each group's first role among the scenarios
        shapes: dict[tuple[tuple[str, ...], str], list[int]] = {}
        for k, g in enumerate(groups):
            shapes.setdefault((tuple(n for n, _ in g.roles), g.placement), []).append(k)
        kinds = []
        for (names, placement), where in shapes.items():
            vector = _group_vector(names, placement)
            own = [_group_inputs(groups[k]) for k in where]
            columns = {n: column_of([i[n] for i in own]) for n in own[0]}
            role_rows = tuple(first[where] + r for r in range(len(names)))
            taken = [roles.take(rows) for rows in role_rows]
            for read in {n for t in vector.terms for n in t.expr.names() if "." in n}:
                role, _, term = read.partition(".")  # a role's term, else its input (estimate_group's ChainMap)
                r = names.index(role)
                columns[read] = (column_of([given[term][i] for i in role_rows[r].tolist()]) if term not in roles.names
                                 else taken[r].column(term) if not taken[r].overrides
                                 else column_of(taken[r].tolist(term)))
            (terms,) = vector.chunks(columns, len(where), self.assumptions, self.tables, chunk_rows=len(where))
            kinds.append(_GroupKind(np.array(where, dtype=np.int64), role_rows, terms))
        return GroupColumns(groups, roles, kinds, self)

    def estimate_known(self, s: Scenario, known: dict[Scenario, Estimate]) -> Estimate:
        """A role's estimate from `known` (a search's made estimates), made once. A role that generates nothing reads
        no term of its rollout engine's share of the GPU (tests/test_rlhf_phases.py holds its values equal at every
        share), so the plan's search over shares makes it once: its key leaves the share out, and the estimate is
        given its own scenario."""
        key = share_free(s)
        made = known.get(key)
        if made is None:
            made = known[key] = self.estimate(s)
        return made if key is s else replace(made, scenario=s)


def share_free(s: Scenario) -> Scenario:
    """A role as a cache key for what does not depend on its rollout engine's share of each GPU: a role that
    generates nothing reads no term of the share (tests/test_rlhf_phases.py), so its share is left out."""
    return s if s.gen_len else s.with_inputs(gpu_memory_utilization=0.0)


# ---------------------------------------------------------------------------------------------
# RLHF role layouts

def scenario_columns(scenarios: Sequence[Scenario]) -> dict[str, list]:
    """Scenarios as input columns (name -> each scenario's value)."""
    if not scenarios:
        return {n: [] for n in INPUT_NAMES}
    return dict(zip(INPUT_NAMES, map(list, zip(*map(_INPUT_VALUES, scenarios)))))


# A role's lengths, defined once as expressions over its group's (the Python here and the workbook's role rows, which
# read the group's row, compute the same). Trained sequences are the prompt and the mean response (DPO: the pairs'
# given length); padded roles (veRL without padding removal) pass over every sequence padded to padded_len (default:
# the prompt and the longest response). The rollouts' lengths stay with what generates them: the actor, or a rollout
# engine on GPUs of its own (the actor then only trains).
_PADDED = AND(Var("workload").ne("dpo"),
              OR(Var("padded_roles").eq("all"), AND(Var("padded_roles").eq("critic"), Var("role").eq("critic"))))
_GENERATES = OR(Var("role").eq(ROLLOUT), AND(Var("role").eq("actor"), Var("rollout_placement").ne("separate")))
ROLE_LENGTHS = (
    Term("seq_len", "Sequence length", "tokens",
         IF(_PADDED, IF(ISNUMBER(Var("padded_len")), Var("padded_len"),
                        Var("given_prompt_len") + MAX(Var("given_gen_len"), Var("given_max_gen_len"))),
            IF(Var("workload").eq("dpo"), Var("given_seq_len"), Var("given_prompt_len") + Var("given_gen_len")))),
    Term("prompt_len", "Prompt length", "tokens", IF(_GENERATES, Var("given_prompt_len"), 0)),
    Term("gen_len", "Generated tokens", "tokens", IF(_GENERATES, Var("given_gen_len"), 0)),
    Term("max_gen_len", "Longest response", "tokens", Var("given_max_gen_len")),
)
ROLE_LENGTH_NAMES = tuple(t.name for t in ROLE_LENGTHS)


def _plain_var(n: str) -> str:
    return f"I[{n!r}]"


_ROLE_LENGTHS_FN = compile_terms(ROLE_LENGTHS, _plain_var, "_role_lengths", cache=True)
# What a role sets itself beyond its lengths, its pool and its split (the rest it takes from the actor; Var(n): the
# actor's input n). A frozen model is served (its weight dtype the actor's: a QLoRA group's reference is its
# quantised base); a rollout engine on GPUs of its own serves the actor's model whole on each of its engines, with no
# training layout, states or passes; critic and reward models carry a value head.
_FROZEN = dict(workload=FROZEN, offload="none")
ROLE_INPUTS = {"critic": dict(head="value"), "reference": _FROZEN, "reward": dict(_FROZEN, head="value"),
               ROLLOUT: dict(workload=ROLLOUT, tp_size=Var("rollout_tp_size"), pp_size=1, vp_size=1, cp_size=1,
                             ep_size=1, etp_size=0, zero_stage=0, checkpointing="none", offload="none")}
ROLE_MODELS = {"critic": "critic_model", "reference": "reference_model", "reward": "reward_model"}


def role_own_inputs(role: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The inputs a role sets itself (ROLE_INPUTS, and its model where the group names one), beyond its lengths."""
    model = settings.get(ROLE_MODELS.get(role, ""))
    return {**ROLE_INPUTS.get(role, {}), **({"model": model} if model else {})}


def _own_inputs(role: str, actor: Scenario, settings: Mapping[str, Any]) -> dict[str, Any]:
    """role_own_inputs with the actor's inputs they name read."""
    return {n: getattr(actor, v.name) if isinstance(v, Var) else v for n, v in role_own_inputs(role, settings).items()}


def group_lengths(algorithm: str, actor: Scenario, settings: Mapping[str, Any]) -> dict[str, Any]:
    """The values ROLE_LENGTHS reads from a group: the actor's lengths given and the group's settings."""
    return {"workload": algorithm, "given_seq_len": actor.seq_len, "given_prompt_len": actor.prompt_len,
            "given_gen_len": actor.gen_len, "given_max_gen_len": actor.max_gen_len,
            "padded_roles": settings.get("padded_roles", "none"), "padded_len": settings.get("padded_len"),
            "rollout_placement": settings.get("rollout_placement", "actor")}


def own_pool(placement: str, role: str) -> bool:
    """Whether a role of a group so placed has a pool of its own (its GPU count and type, role_gpus and
    role_gpu_types): every role of separate pools; of colocated ones only a rollout engine, whose GPUs are apart."""
    return placement == "separate" or role == ROLLOUT


def role_scenario(role: str, actor: Scenario, lengths: Mapping[str, Any], settings: Mapping[str, Any]) -> Scenario:
    """A role before its pool and split: the actor with the role's own inputs and lengths."""
    values = _ROLE_LENGTHS_FN({**lengths, "role": role}, None, None, None)
    return actor.with_inputs(**_own_inputs(role, actor, settings), **dict(zip(ROLE_LENGTH_NAMES, map(int, values))))


def rlhf_scenario(*, name: str, algorithm: str, placement: str, actor: Scenario,
                  critic_model: str | None = None, reward_model: str | None = None,
                  reference_model: str | None = None, reference: str = "model", reward: str = "model",
                  group_size: int = 1,
                  prompts_per_iteration: int | None = None,
                  micro_batch_size: int | None = None, role_gpus: Mapping[str, int] | None = None,
                  role_gpu_types: Mapping[str, str] | None = None, padded_roles: str = "none",
                  padded_len: int | None = None, rollout_placement: str = "actor", rollout_mode: str = "sync"
                  ) -> RlhfScenario:
    """The roles of PPO, DPO or GRPO around an actor scenario (full or LoRA, with prompt/gen lengths).

    PPO: actor (trained, generates), critic (trained, value head), reference (frozen), reward (frozen,
    value head). DPO: policy and frozen reference over chosen + rejected sequences. GRPO: no critic; G
    samples per prompt. The iteration's prompts (prompts_per_iteration, or the actor's batch on each of its
    data-parallel ranks) are shared by every pool's ranks; each role takes its rank's sequences in
    micro-batches of micro_batch_size (default: all at once): its batch is the micro-batch, its gradient
    accumulation the actor's times the micro-batches. Padded roles (veRL without padding removal) pass over
    every sequence padded to padded_len tokens (default: the prompt and the longest response), their memory
    and their time; the others over the mean prompt + response. A rollout engine on GPUs of its own
    (rollout_placement separate, OpenRLHF's default) is the role "rollout": the actor's model served at the
    engine's TP, generating the iteration's sequences over its engines, while the actor only trains; beside the
    other roles' pools (placement separate) or beside the trainers colocated on the actor's GPUs. rollout_mode async:
    the engines apart generate the next iteration while the trainers train (one step off-policy).
    """
    actor = rank_actor(actor, prompts_per_iteration)
    iteration_sequences = iteration_sequences_of(algorithm, actor, group_size)
    settings = dict(critic_model=critic_model, reward_model=reward_model, reference_model=reference_model,
                    reference=reference, reward=reward, group_size=group_size, prompts_per_iteration=prompts_per_iteration,
                    micro_batch_size=micro_batch_size, role_gpus=role_gpus, role_gpu_types=role_gpu_types,
                    padded_roles=padded_roles, padded_len=padded_len, rollout_placement=rollout_placement,
                    rollout_mode=rollout_mode)
    if algorithm == "dpo":
        names = ["policy", "reference"]
    else:  # without a KL term there is no reference; a rule (a verifier) rewarding runs on the CPU
        names = ["actor", *["critic"] * (algorithm == "ppo"), *["reference"] * (reference == "model"),
                 *["reward"] * (reward == "model"), *[ROLLOUT] * (rollout_placement == "separate")]
    lengths = group_lengths(algorithm, actor, settings)
    roles = [(r, role_scenario(r, actor, lengths, settings)) for r in names]
    roles = [(r, s.with_inputs(num_gpus=(role_gpus or {}).get(r, s.num_gpus), gpu=(role_gpu_types or {}).get(r, s.gpu))
              if own_pool(placement, r) else s) for r, s in roles]  # its count and GPU type, default the actor's
    roles = [(r, _pooled(s, iteration_sequences, micro_batch_size, actor.grad_accum_steps)) for r, s in roles]
    return RlhfScenario(name=name, algorithm=algorithm, placement=placement, roles=tuple(roles), actor=actor,
                        settings=tuple(settings.items()))


# An iteration split over an RLHF group's pools, defined once as expressions: the Python here and the workbook's
# group and role rows (formulas over the RLHF sheet's group settings and the Scenarios role rows) compute the same.
# A role's data-parallel ranks are the term dp_size over its inputs (at least one): a role row's input cell that is a
# formula may not read the row's terms, which read its check, which reads the cell.
RANKS = MAX(1, FLOOR(inlined(Var("dp_size"))))
# The group: the actor's ranks' prompts (the iteration's prompts over them, or the batch given) and the sequences
# they generate (GRPO: the group of each prompt; DPO: each pair's two) and train on. A blank setting is not a number.
GROUP_SPLIT = (
    Term("sequences_per_prompt", "Sequences per prompt", "count",
         IF(Var("workload").eq("grpo"), Var("group_size"), IF(Var("workload").eq("dpo"), 2, 1)),
         "GRPO: the group size; DPO: a pair's two sequences; PPO: one"),
    Term("rank_prompts", "Prompts per actor rank", "count",
         IF(ISNUMBER(Var("prompts_per_iteration")), MAX(1, FLOOR(Var("prompts_per_iteration") / Var("actor_ranks"))),
            Var("given_batch_size")),
         "the prompts per iteration over the actor's data-parallel ranks, or (blank) the batch given"),
    Term("rank_sequences", "Sequences per actor rank", "count", Var("rank_prompts") * Var("sequences_per_prompt"),
         "what each of the actor's data-parallel ranks generates and trains on per iteration"),
    Term("iteration_sequences", "Sequences per iteration", "count", Var("rank_sequences") * Var("actor_ranks"),
         "what every pool's ranks share: each role's rank takes its part in micro-batches"),
    # What veRL and OpenRLHF refuse: prompts that do not split evenly over the actor's ranks, a micro-batch that
    # does not divide a rank's sequences (rlhf_batch_check's words).
    Term("prompts_uneven", "Prompts per iteration do not split over the actor's ranks (1/0)", "flag",
         IF(ISNUMBER(Var("prompts_per_iteration")),
            IF(MOD(Var("prompts_per_iteration"), Var("actor_ranks")).ne(0), 1, 0), 0)),
    Term("micro_uneven", "The micro-batch does not divide a rank's sequences (1/0)", "flag",
         IF(ISNUMBER(Var("micro_batch_size")),
            IF(MOD(Var("rank_sequences"), Var("micro_batch_size")).ne(0), 1, 0), 0)),
)
# A role: its rank's part of the iteration's sequences (a pool with fewer ranks takes more each), in micro-batches
# of at most the micro-batch (blank: all at once), accumulated into one step; its ZeRO stage on its pool.
ROLE_SPLIT = (
    Term("role_sequences", "Sequences per rank", "count", CEIL(Var("iteration_sequences") / Var("ranks"))),
    Term("batch_size", "Micro-batch", "count",
         MIN(IF(ISNUMBER(Var("micro_batch_size")), Var("micro_batch_size"), Var("role_sequences")),
             Var("role_sequences"))),
    Term("grad_accum_steps", "Accumulation", "count",
         Var("given_grad_accum_steps") * CEIL(Var("role_sequences") / Var("batch_size"))),
    Term("zero_stage", "ZeRO stage", "count",
         IF(OR(AND(Var("workload").eq(FROZEN), Var("given_zero_stage").ne(3)), Var("workload").eq(ROLLOUT)), 0,
            IF(FLOOR(Var("num_gpus") / Var("tp_size")).gt(1), Var("given_zero_stage"), 0))),
)
ROLE_SPLIT_INPUTS = ("batch_size", "grad_accum_steps", "zero_stage")  # the role inputs ROLE_SPLIT sets
_ROLE_SPLIT_NAMES = tuple(t.name for t in ROLE_SPLIT)


_RANKS_FN = compile_terms((Term("ranks", "", "count", RANKS),), _plain_var, "_ranks", cache=True)
_GROUP_SPLIT_FN = compile_terms(GROUP_SPLIT, _plain_var, "_group_split", cache=True)
_ROLE_SPLIT_FN = compile_terms(ROLE_SPLIT, _plain_var, "_role_split", cache=True)


def _group_split(actor: Scenario, algorithm: str, group_size: int, prompts_per_iteration: int | None,
                 micro_batch_size: int | None = None) -> dict[str, int]:
    """GROUP_SPLIT for this actor (its batch given, its layout) and the group's settings."""
    values = _GROUP_SPLIT_FN({"workload": algorithm, "group_size": group_size, "given_batch_size": actor.batch_size,
                              "prompts_per_iteration": prompts_per_iteration, "micro_batch_size": micro_batch_size,
                              "actor_ranks": data_parallel_ranks(actor)}, None, None, None)
    return {t.name: int(v) for t, v in zip(GROUP_SPLIT, values)}


def rank_actor(actor: Scenario, prompts_per_iteration: int | None) -> Scenario:
    """The actor with its data-parallel rank's prompts as its batch: the iteration's prompts over its ranks (at least
    one), or the batch it has."""
    if prompts_per_iteration:  # (the prompts per rank, whatever the algorithm's sequences per prompt)
        return actor.with_inputs(batch_size=_group_split(actor, "ppo", 1, prompts_per_iteration)["rank_prompts"])
    return actor


def rank_sequences(algorithm: str, actor: Scenario, settings: Mapping[str, Any]) -> int:
    """Sequences each of the actor's data-parallel ranks generates and trains on per iteration, for this actor's
    layout and the group's settings (its prompts per iteration, GRPO's group)."""
    split = _group_split(actor, algorithm, settings["group_size"], settings.get("prompts_per_iteration"))
    return split["rank_sequences"]


def iteration_sequences_of(algorithm: str, actor: Scenario, group_size: int) -> int:
    """The sequences of an iteration, shared by every pool's ranks: the rank actor's (rank_actor) over its
    data-parallel ranks."""
    return _group_split(actor, algorithm, group_size, None)["iteration_sequences"]


def rlhf_batch_check(algorithm: str, actor: Scenario, settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """(setting, what is wrong) where the iteration's prompts do not split evenly over the actor's data-parallel
    ranks, or its micro-batch does not divide a rank's sequences (as veRL and OpenRLHF require); else None."""
    if settings.get("rollout_placement") == "separate" and actor.serving_engine == "hf-generate":
        return "rollout_placement", ("separate needs a rollout engine (serving_engine vllm or sglang): generate() "
                                     "runs on the actor's GPUs")
    for role, count in (settings.get("role_gpus") or {}).items():
        unit = pool_unit(actor.with_inputs(**_own_inputs(role, actor, settings)))
        if count % unit:
            parallelism = "the engine's tensor parallelism" if role == ROLLOUT else "its tensor × pipeline parallelism"
            return "role_gpus", (f"{role}: {count:,} GPUs do not make whole {'engines' if role == ROLLOUT else 'replicas'} "
                                 f"of {unit:,} GPUs ({parallelism})")
    ranks, prompts, micro = data_parallel_ranks(actor), settings.get("prompts_per_iteration"), settings.get("micro_batch_size")
    split = _group_split(actor, algorithm, settings["group_size"], prompts, micro)
    if split["prompts_uneven"]:
        return "prompts_per_iteration", (f"must split evenly over the actor's {ranks:,} data-parallel ranks (num_gpus "
                                         f"{actor.num_gpus} ÷ tp × pp × cp), got {prompts:,}")
    if settings.get("padded_len") and settings["padded_len"] < actor.prompt_len + actor.gen_len:
        return "padded_len", (f"is the length every sequence is padded to: at least the prompt and the mean response "
                              f"({actor.prompt_len + actor.gen_len:,} tokens), got {settings['padded_len']:,}")
    if split["micro_uneven"]:
        sequences = split["rank_sequences"]
        return "micro_batch_size", (f"must divide the {sequences:,} sequences each of the actor's data-parallel ranks "
                                    f"takes per iteration, got {micro:,}")
    return None


def role_trains(s: Scenario) -> bool:
    """Whether a role is trained (its layout is the actor's), not served whole on each tensor-parallel group as a
    frozen model or a rollout engine is."""
    return s.workload not in (FROZEN, ROLLOUT)


def pool_unit(s: Scenario) -> int:
    """The GPUs a pool's role takes in whole: its tensor-parallel group, and a trained role's whole pipeline."""
    return s.tp_size * (s.pp_size if role_trains(s) else 1)


def data_parallel_ranks(s: Scenario) -> int:
    """The term dp_size of a role (at least one): its GPUs over tensor × pipeline × context parallelism (a frozen
    model is served whole on each tensor-parallel group, as a rollout engine is)."""
    return int(_RANKS_FN(s.input_view(), None, None, None)[0])


def _role_inputs(s: Scenario, iteration_sequences: int, micro_batch_size: int | None, grad_accum_steps: int) -> dict:
    """A role's batch, accumulation and ZeRO stage on its pool (ROLE_SPLIT), its zero_stage the one given."""
    values = _ROLE_SPLIT_FN({**s.input_view(), "ranks": data_parallel_ranks(s), "iteration_sequences": iteration_sequences,
                             "micro_batch_size": micro_batch_size, "given_grad_accum_steps": grad_accum_steps,
                             "given_zero_stage": s.zero_stage}, None, None, None)
    return {name: int(value) for name, value in zip(_ROLE_SPLIT_NAMES, values) if name in ROLE_SPLIT_INPUTS}


def _pooled(s: Scenario, iteration_sequences: int, micro_batch_size: int | None, grad_accum_steps: int) -> Scenario:
    """A role on its pool (its GPUs set): the ZeRO stage it runs there and its rank's batch and accumulation."""
    return s.with_inputs(**_role_inputs(s, iteration_sequences, micro_batch_size, grad_accum_steps))



def make_scenario(values: Mapping[str, Any], *, workload: str, rlhf: Mapping[str, Any], estimator: "Estimator",
                  source: str | None = None, key_path=lambda name: name, name: str = "",
                  checked: dict | None = None, undecided: Iterable[str] = (), skips: bool = True
                  ) -> tuple[Scenario | RlhfScenario, SkipReason | None]:
    """A scenario (or RLHF group) from input values, as a preset or the command line gives them:
    validated by the input tables, then checked against the skip rules (but those reading `undecided`
    inputs, see skip_check; none without `skips`: a caller that checks many together). Returns (scenario,
    None), or (the scenario or RLHF actor that cannot run, reason). checked: see check_inputs."""
    if workload not in SINGLE_WORKLOADS + RLHF_ALGORITHMS:
        raise unknown_name("workload", workload, SINGLE_WORKLOADS + RLHF_ALGORITHMS, source=source,
                           key_path=key_path("workload"))
    if "model" not in values:
        raise InputError("missing required key", source=source, key_path=key_path("model"))
    settings = {}
    if workload in RLHF_ALGORITHMS:
        settings = check_rlhf(rlhf, algorithm=workload, models=estimator.specs, gpus=estimator.gpus, source=source,
                              key_path=key_path)
    values = dict(values)
    if values.get("tp_size") == "num_gpus":  # tensor parallel across all of the scenario's GPUs
        values["tp_size"] = values.get("num_gpus", 1)
    inputs = check_inputs(values, workload=workload, models=estimator.specs, gpus=estimator.gpus, source=source,
                          key_path=key_path, checked=checked)
    scenario = Scenario(workload=settings.pop("actor_workload", workload), name=name, **inputs)
    sleep_given = scenario.engine_sleep != INPUT_BY_NAME["engine_sleep"].default
    if settings.get("rollout_placement") == "separate" and sleep_given:  # an engine apart stays awake
        raise InputError(SLEEP_APART, source=source, key_path=key_path("engine_sleep"))
    reason = estimator.skip_check(scenario, undecided) if skips else None
    if reason or workload not in RLHF_ALGORITHMS:
        return scenario, reason
    reason = rlhf_batch_check(workload, scenario, settings)
    if reason:
        name, text = reason
        raise InputError(text, source=source, key_path=key_path(name))
    return rlhf_scenario(name=name, algorithm=workload, actor=scenario, **settings), None
