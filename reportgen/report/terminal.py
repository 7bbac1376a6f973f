"""Plain-text tables for the terminal (the CLI's human-readable output)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from ..model.inputs import ROLLOUT, layout_tags
from ..model.terms import PEAK_PARTS, PER_GPU_KEYS, RLHF_TIME_KEYS, TERM_BY_NAME
from ..model.units import GB, GiB, duration_words, format_count


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[bool] | None = None) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    right = right or [False] + [True] * (len(headers) - 1)
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _gib(n: float) -> str:
    return f"{n / GiB:,.2f}"


def _gb(n: float) -> str:
    return f"{n / GB:,.2f}"


def _why_not(values, assumptions) -> str:
    """The line that names what keeps a configuration from fitting with k ('' when it fits)."""
    from .i18n import fit_limit_text, load_catalogue
    why = fit_limit_text(values, assumptions["host_ram_per_node_gib"], load_catalogue("en"))
    return f"\nwhat keeps it from fitting: {why}" if why else ""


def estimate_table(est, assumptions) -> str:
    s = est.scenario
    rows = [(TERM_BY_NAME[k].label, format_count(est[k]), _gib(est[k]), _gb(est[k])) for k in PER_GPU_KEYS]
    head = (f"{s.label()}\n"
            f"params: {format_count(est.params_total)} total, {format_count(est.params_active)} active per token, "
            f"{format_count(est['trainable_params'])} trainable\n")
    parts = _table(("at the peak (" + _phase(est) + ")", "bytes", "GiB", "GB"),
                   [(TERM_BY_NAME[k].label, format_count(est[k]), _gib(est[k]), _gb(est[k])) for k in PEAK_PARTS])
    # an engine's budget is its own margin: no k on top (its recommended is its device total)
    budget = ("as an engine (its budget is its margin: no k)" if est["recommended"] == est["device_total"]
              and est["engine_mode"] else f"recommended (k) {_gib(est['recommended'])} GiB")
    fit = (f"\n{s.gpu}: {_gib(est['gpu_memory_bytes'])} GiB per GPU; device total {_gib(est['device_total'])} GiB "
           f"-> {'FITS' if est.fits else 'DOES NOT FIT'}; headroom {_gib(est['headroom_bytes'])} GiB; "
           f"{budget} {'fits' if est['fits_recommended'] else 'does not fit'}")
    fit += _why_not(est.values, assumptions)
    if est["host_offload_bytes"]:
        fit += f"\nhost RAM for offloaded states: {_gib(est['host_offload_bytes'])} GiB per GPU"
    fit += _host_ram(est.values, assumptions, [est.values])
    if est["engine_mode"]:
        fit += (f"\n{s.serving_engine}: KV pool {_gib(est['kv_pool_bytes'])} GiB per GPU = "
                f"{format_count(est['kv_logged_tokens'])} tokens ({format_count(est['kv_blocks'])} blocks); "
                f"maximum concurrency {est['max_concurrency']:,.2f}x at {format_count(est['context_tokens'])} "
                f"tokens per sequence; {format_count(est['max_context_tokens'])} tokens each for "
                f"{s.batch_size} sequences")
    time = est.time_json()
    # without generated tokens the cost per token is undefined (the term is 0): say why instead of "0.00 USD"
    undefined = {"usd_per_million_tokens": "none: no tokens generated (--gen-len 0)"} if not s.gen_len else {}
    timing = "\n\n" + _table(("time and cost", "value"),
                             [(TERM_BY_NAME[k].label, undefined.get(k) or _time_value(TERM_BY_NAME[k].unit, v))
                              for k, v in time.items()]) if time else ""
    return head + "\n" + _table(("per GPU", "bytes", "GiB", "GB"), rows) + "\n\n" + parts + "\n" + fit + timing


def _host_ram(values, assumptions, roles) -> str:
    """What a node keeps in host RAM against what it has, where it keeps any (separate pools: each its own), and
    whose: the roles' (or the model's) offloaded states, a rollout engine's weights asleep at level 1."""
    used = values.get("node_host_bytes", 0)
    what = [w for w, kept in (("offloaded states", any(r["node_offload_bytes"] for r in roles)),
                              ("the sleeping rollout engine's weights",
                               any(r["node_host_bytes"] > r["node_offload_bytes"] for r in roles))) if kept]
    return (f"\nhost RAM per node: {_gib(used)} GiB of its {assumptions['host_ram_per_node_gib']:,.0f} GiB "
            f"({' and '.join(what)})" if used else "")


def _time_value(unit: str, value: float) -> str:
    if unit == "seconds":
        return f"{value:,.3f} s" + (f" ({value / 3600:,.1f} h)" if value >= 3600 else "")
    if unit == "usd":
        return f"{value:,.2f} USD"
    if unit == "tokens_per_s":
        return f"{value:,.1f} tokens/s"
    return f"{value:,.1f}"


def _phase(est) -> str:
    from ..model.estimate import PHASE_NAMES
    return PHASE_NAMES[int(est["peak_phase"])].replace("_", " ")


def group_table(g, assumptions) -> str:
    s = g.scenario
    rows = [(role, e.scenario.model, e.scenario.workload, f"{e.scenario.num_gpus} × {e.scenario.gpu}",
             _gib(e["model_states"]), _gib(e["allocated_peak"] - e["model_states"]), _gib(e["allocated_peak"]),
             f"{e['purchase_usd']:,.0f}") for role, e in g.roles]
    out = [s.label(), _table(("role", "model", "workload", "GPUs", "states GiB", "transient GiB", "alone GiB",
                              "purchase USD"), rows), ""]
    # groups of several pools: the tightest pool's own figures (bar_pool, the bar's), which add up, not each term's
    # largest over the pools
    pools = g.pools()
    names, _, v = pools[int(g.values.get("bar_pool", 1)) - 1]
    lead = dict(s.roles)[names[0]]
    title = (f"per GPU ({' · '.join(s.placement_words())})" if len(pools) == 1 else
             f"per GPU, tightest pool ({', '.join(names)}: {lead.num_gpus} × {lead.gpu})")
    out.append(_table((title, "bytes", "GiB", "GB"),
                      [(TERM_BY_NAME[k].label, format_count(v[k]), _gib(v[k]), _gb(v[k])) for k in PER_GPU_KEYS]))
    out.append(f"\nGPUs in all: {int(g['total_gpus'])}; {'FITS' if g.fits else 'DOES NOT FIT'}; "
               f"headroom {_gib(g['headroom_bytes'])} GiB" + _why_not(g.values, assumptions)
               + _host_ram(g.values, assumptions, [e.values for _, e in g.roles]))
    from ..model.estimate import group_terms  # the estimator's module is loaded by then (as _phase reads it)
    terms = {t.name: t for t in group_terms(tuple(role for role, _ in g.roles), s.placement)}
    if s.generates_ahead:  # the phases do not add up: say how they combine
        terms["iteration_seconds"] = replace(terms["iteration_seconds"], label="Time per RLHF iteration (async: the "
                                             "refit, then the longer of the generation and the rest)")
    out.append("\n" + _table(("time per iteration", "value"),
                              [(terms[k].label, _time_value("seconds", g[k])) for k in RLHF_TIME_KEYS
                               if g[k] or k == "iteration_seconds"]))  # a phase the group has not (DPO's rollouts)
    return "\n".join(out)


def models_table(rows: list[dict]) -> str:
    return _table(("model", "type", "total params", "active/token", "layers", "hidden", "heads", "KV heads", "experts",
                   "context (tokens)"),
                  [(r["name"], r["model_type"], format_count(r["total_params"]),
                    format_count(r["active_params_per_token"]),
                    r["num_hidden_layers"] if r["num_attention_layers"] == r["num_hidden_layers"] else
                    f"{r['num_hidden_layers']} ({r['num_attention_layers']} attention)", r["hidden_size"],
                    r["num_attention_heads"], r["num_key_value_heads"],
                    f"{r['num_experts_per_tok']}/{r['num_experts']}" if r["num_experts"] else "-",
                    format_count(r["max_positions"]) if r["max_positions"] else "-") for r in rows],
                  [False, False] + [True] * 8)


def gpus_table(rows: list[dict]) -> str:
    return _table(("GPU", "MiB (nvidia-smi)", "GiB", "GB", "bf16 TFLOPS", "GB/s", "USD", "USD/h"),
                  [(r["name"], format_count(r["memory_mib"]), _gib(r["memory_bytes"]), _gb(r["memory_bytes"]),
                    r["bf16_dense_tflops"], r["memory_bandwidth_gbps"], f"{r['price_purchase_usd']:,.0f}",
                    f"{r['price_per_hour_usd']:,.2f}") for r in rows])


# What a rollout engine beside the actor does while the actor trains, where it is not the default (offloading its
# weights to the host)
SLEEP_WORDS = {"discard": ", its weights discarded while the actor trains", "none": ", awake while the actor trains"}


def _layout_words(layout: dict) -> str:
    """'ZeRO-3 TP2 PP2 EP4 · ckpt full · offload optimizer · adamw-8bit · megatron': what the plan chose."""
    parts = [" ".join(layout_tags(layout))
             or ("single GPU" if layout["num_gpus"] == 1 else "data parallel")]
    parts += [f"ckpt {layout['checkpointing']}" if layout["checkpointing"] != "none" else "",
              f"offload {layout['offload']}" if layout["offload"] != "none" else "",
              layout["optimizer"] if layout["optimizer"] != "adamw" else "",
              layout["framework"] if layout["framework"] != "hf" else "",
              f"{layout['grad_accum_steps']} micro-batches" if layout.get("grad_accum_steps", 1) > 1 else "",
              f"{layout['sequences_per_gpu']:,} sequence{'s' if layout['sequences_per_gpu'] > 1 else ''} per GPU in "
              f"micro-batches of {layout['micro_batch_size']:,}" if "micro_batch_size" in layout else "",
              f"rollout engine TP{layout['rollout_tp_size']} on {layout['gpu_memory_utilization']:.0%} of each GPU"
              + (", generating ahead (async)" if layout["rollout_mode"] == "async" else "")
              + SLEEP_WORDS.get(layout.get("engine_sleep"), "")
              if "rollout_tp_size" in layout else "",
              _pools_words(layout) if "role_gpus" in layout else ""]
    return " · ".join(x for x in parts if x)


def _pools_words(layout: dict) -> str:
    """'pools: actor 2, critic 1, reference 1 × L40S': each pool's GPUs, and their type where it is not the first
    role's (the plan row's); colocated roles share one ('actor+reference 2, rollout 1')."""
    counts, types = layout["role_gpus"], layout["role_gpu_types"]
    shared = [role for role in counts if role != ROLLOUT] if layout["placement"] == "colocated" else []
    pools = [("+".join(shared), shared[0])] if shared else []
    pools += [(role, role) for role in counts if role not in shared]
    lead = next(iter(types.values()))
    return "pools: " + ", ".join(f"{name} {counts[role]}" + (f" × {types[role]}" if types[role] != lead else "")
                                 for name, role in pools)


def miss_text(miss, plan, host_ram_per_node_gib: float) -> str:
    """Why a GPU type has no answer in `plan`, in English: every layout was skipped, nothing fits (what binds),
    or nothing that fits meets the goal (the nearest figure)."""
    from .i18n import fit_limit_text, load_catalogue
    from ..planning.plan import run_seconds
    goal = plan.goal
    if miss.nearest is None:
        return "no layout can run: " + "; ".join(r.text() for r in miss.skipped) if miss.skipped else "no layout to try"
    e = miss.nearest
    n = int(e["total_gpus"]) if "iteration_seconds" in e.values else e.scenario.num_gpus
    if not e["fits_recommended"]:
        return (f"nothing fits up to {miss.most_gpus} GPUs; at {n} GPUs "
                + fit_limit_text(e.values, host_ram_per_node_gib, load_catalogue("en")))
    if plan.steps is not None:  # an RLHF run: the answer at the most GPUs that fit is still too slow
        # without a fixed iteration size, each iteration takes the batch on every data-parallel rank of the actor
        weak = "" if dict(e.scenario.settings).get("prompts_per_iteration") else (
            "; an iteration takes the batch on each of the actor's data-parallel ranks: more ranks make it larger, "
            "not shorter (--prompts-per-iteration fixes its size)")
        return (f"fits, but at {n} GPUs, the most tried that fit, its {plan.steps:,} iterations take "
                f"{duration_words(run_seconds(e, plan.steps))} (goal: {duration_words(plan.within_seconds)})" + weak)
    if e["is_train"]:
        return (f"fits, but the fastest layout up to {miss.most_gpus} GPUs trains in "
                f"{e['time_to_train_seconds'] / 3600:,.1f} h (goal: {goal.within_seconds / 3600:,.1f} h)")
    missed = []  # what the nearest layout misses of a serving goal
    if goal.min_tokens_per_s is not None and e["tokens_per_s_per_user"] < goal.min_tokens_per_s:
        missed.append(f"{e['tokens_per_s_per_user']:,.1f} output tokens/s per user (goal: {goal.min_tokens_per_s:g})")
    if goal.max_ttft_seconds is not None and e["prefill_seconds"] > goal.max_ttft_seconds:
        missed.append(f"its first token in {e['prefill_seconds']:,.2f} s (goal: {goal.max_ttft_seconds:g} s)")
    return f"fits, but the fastest layout up to {miss.most_gpus} GPUs gives " + "; ".join(missed)


def plan_table(plan, assumptions, step_accuracy: dict | None = None) -> str:
    """The options by the plan's order, each column with its unit, then the GPU types without an answer
    and why; for RLHF, how its step times compare with published runs."""
    from ..planning.plan import run_seconds, run_usd
    cheapest = {m: plan.cheapest(m) for m in ("purchase", "hourly")}
    words = {"purchase": "to buy", "hourly": "to rent"}
    train = any(o.is_train for o in plan.options) or plan.goal.within_seconds is not None
    group = any("iteration_seconds" in o.estimate.values for o in plan.options)
    first_token = plan.goal.max_ttft_seconds is not None
    rows = []
    for o in plan.options:
        e = o.estimate
        time = (f"{e['iteration_seconds']:,.1f}" if group else f"{e['time_to_train_seconds'] / 3600:,.1f}" if train
                else f"{e['tokens_per_s_per_user']:,.1f}")
        others = dict.fromkeys(t for t in o.layout.get("role_gpu_types", {}).values() if t != o.gpu)
        row = [" + ".join((o.gpu, *others)), o.total_gpus, _layout_words(o.layout), _gib(e["device_total"]),
               _gib(e["recommended"]), time,
               *([f"{e['prefill_seconds']:,.2f}"] if first_token else []), f"{e['purchase_usd']:,.0f}",
               f"{e['hourly_usd']:,.2f}"]
        if train and not group:
            row.append(f"{e['cost_usd']:,.0f}")
        if plan.steps is not None:
            row += [f"{run_seconds(e, plan.steps) / 3600:,.1f}", f"{run_usd(e, plan.steps):,.0f}"]
        rows.append(row + [", ".join(words[m] for m, c in cheapest.items() if c is o)])
    speed = ("s per iteration" if group else "time to train, h" if train else "output tokens/s per user")
    head = (["GPU", "GPUs in all", "layout", "device total GiB/GPU", "recommended GiB/GPU", speed]
            + (["first token, s"] if first_token else []) + ["purchase USD", "rent USD/h"]
            + (["run cost USD"] if train and not group else []) + (["run, h", "run rented, USD"] if plan.steps is not None else [])
            + ["cheapest"])
    out = [f"goal: {plan.describe_goal()}; {plan.tried:,} candidate layouts estimated"]
    if rows:
        out.append(_table(head, rows, right=[False, True, False] + [True] * (len(head) - 4) + [False]))
    else:
        out.append("No GPU type meets the goal.")
    if step_accuracy:
        out.append(f"RLHF step times against {step_accuracy['figures']} held-out published figures: median error "
                   f"{step_accuracy['median_abs_error'] * 100:.0f} %, largest {step_accuracy['max_abs_error'] * 100:.0f} %, "
                   f"{step_accuracy['short']} of them estimated short: read the iteration times as lower bounds")
    if any(o.layout["offload"] != "none" for o in plan.options):
        out.append(f"CPU offload: the host's optimizer step is timed at {assumptions['host_optimizer_ns_per_param']:g} ns "
                   "per parameter a node updates, a figure its CPUs set: --host-optimizer-ns sets your servers'")
    if plan.misses:
        out.append("\nno answer on:\n" + "\n".join(
            f"  {m.gpu}: {miss_text(m, plan, assumptions['host_ram_per_node_gib'])}" for m in plan.misses))
    return "\n".join(out)


# How the validate command names a comparison and a split.
_DATASET_WORDS = {"measured": "measured peaks", "finetune": "published fine-tuning figures"}
_SPLIT_WORDS = {"holdout": "held out", "fit": "fit (a coefficient was read from these)", "": "split not stated"}


def validation_table(rows, groups) -> str:
    """Every row, then one line per comparison and split that counts exactly the rows shown."""
    body = _table(("case", "compared", "split", "measured GiB", "estimated GiB", "error"),
                  [(r.case_id, r.level, r.split or "-", _gib(r.measured_bytes), _gib(r.estimated_bytes),
                    f"{r.error * 100:+.1f}%") for r in rows])
    lines = [f"{_DATASET_WORDS[g['dataset']]}, {_SPLIT_WORDS[g['split']]}: {g['figures']} rows; median |error| "
             f"{g['median_abs_error'] * 100:.2f}%; max |error| {g['max_abs_error'] * 100:.2f}%; within "
             f"±{g['target'] * 100:g}%: {g['within_target']}" for g in groups]
    return "\n\n".join([body, "\n".join(lines + [f"{len(rows)} rows in all; accuracy is claimed on the held-out rows only."])])
