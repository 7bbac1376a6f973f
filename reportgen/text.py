"""Plain-text tables for the terminal (the CLI's human-readable output)."""
from __future__ import annotations

from typing import Any, Sequence

from .terms import PEAK_PARTS, PER_GPU_KEYS, TERM_BY_NAME
from .units import GB, GiB, format_count


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


def estimate_table(est) -> str:
    s = est.scenario
    rows = [(TERM_BY_NAME[k].label, format_count(est[k]), _gib(est[k]), _gb(est[k])) for k in PER_GPU_KEYS]
    head = (f"{s.label()}\n"
            f"params: {format_count(est.params_total)} total, {format_count(est.params_active)} active per token, "
            f"{format_count(est['trainable_params'])} trainable\n")
    parts = _table(("at the peak (" + _phase(est) + ")", "bytes", "GiB", "GB"),
                   [(TERM_BY_NAME[k].label, format_count(est[k]), _gib(est[k]), _gb(est[k])) for k in PEAK_PARTS])
    fit = (f"\n{s.gpu}: {_gib(est['gpu_memory_bytes'])} GiB per GPU; device total {_gib(est['device_total'])} GiB "
           f"-> {'FITS' if est.fits else 'DOES NOT FIT'}; headroom {_gib(est['headroom_bytes'])} GiB; "
           f"recommended (k) {_gib(est['recommended'])} GiB {'fits' if est['fits_recommended'] else 'does not fit'}")
    if est["host_offload_bytes"]:
        fit += f"\nhost RAM for offloaded states: {_gib(est['host_offload_bytes'])} GiB per GPU"
    if est["engine_mode"]:
        fit += (f"\n{s.serving_engine}: KV pool {_gib(est['kv_pool_bytes'])} GiB per GPU = "
                f"{format_count(est['kv_pool_tokens'])} tokens ({format_count(est['kv_blocks'])} blocks); "
                f"maximum concurrency {est['max_concurrency']:,.2f}x at {format_count(est['context_tokens'])} "
                f"tokens per sequence; {format_count(est['max_context_tokens'])} tokens each for "
                f"{s.batch_size} sequences")
    time = est.time_json()
    timing = "\n\n" + _table(("time and cost", "value"), [(TERM_BY_NAME[k].label, _time_value(TERM_BY_NAME[k].unit, v))
                                                        for k, v in time.items()]) if time else ""
    return head + "\n" + _table(("per GPU", "bytes", "GiB", "GB"), rows) + "\n\n" + parts + "\n" + fit + timing


def _time_value(unit: str, value: float) -> str:
    if unit == "seconds":
        return f"{value:,.3f} s" + (f" ({value / 3600:,.1f} h)" if value >= 3600 else "")
    if unit == "usd":
        return f"{value:,.2f} USD"
    if unit == "tokens_per_s":
        return f"{value:,.1f} tokens/s"
    return f"{value:,.1f}"


def _phase(est) -> str:
    from .estimate import PHASE_NAMES
    return PHASE_NAMES[int(est["peak_phase"])].replace("_", " ")


def group_table(g) -> str:
    s = g.scenario
    rows = [(role, e.scenario.model, e.scenario.workload, f"{e.scenario.num_gpus} × {e.scenario.gpu}",
             _gib(e["model_states"]), _gib(e["allocated_peak"] - e["model_states"]), _gib(e["allocated_peak"]),
             f"{e['purchase_usd']:,.0f}") for role, e in g.roles]
    out = [s.label(), _table(("role", "model", "workload", "GPUs", "states GiB", "transient GiB", "alone GiB",
                              "purchase USD"), rows), ""]
    out.append(_table(("per GPU (" + s.placement + ")", "bytes", "GiB", "GB"),
                      [(TERM_BY_NAME[k].label, format_count(g[k]), _gib(g[k]), _gb(g[k])) for k in PER_GPU_KEYS]))
    out.append(f"\nGPUs in all: {int(g['total_gpus'])}; {'FITS' if g.fits else 'DOES NOT FIT'}; "
               f"headroom {_gib(g['headroom_bytes'])} GiB")
    return "\n".join(out)


def models_table(rows: list[dict]) -> str:
    return _table(("model", "type", "total params", "active/token", "layers", "hidden", "heads", "KV heads", "experts"),
                  [(r["name"], r["model_type"], format_count(r["total_params"]),
                    format_count(r["active_params_per_token"]), r["num_hidden_layers"], r["hidden_size"],
                    r["num_attention_heads"], r["num_key_value_heads"],
                    f"{r['num_experts_per_tok']}/{r['num_experts']}" if r["num_experts"] else "-") for r in rows],
                  [False, False] + [True] * 7)


def gpus_table(rows: list[dict]) -> str:
    return _table(("GPU", "MiB (nvidia-smi)", "GiB", "GB", "bf16 TFLOPS", "GB/s", "USD", "USD/h"),
                  [(r["name"], format_count(r["memory_mib"]), _gib(r["memory_bytes"]), _gb(r["memory_bytes"]),
                    r["bf16_dense_tflops"], r["memory_bandwidth_gbps"], f"{r['price_purchase_usd']:,.0f}",
                    f"{r['price_per_hour_usd']:,.2f}") for r in rows])


def plan_table(plan) -> str:
    if not plan.options:
        return f"No GPU type meets the goal ({plan.goal.describe()}) within 512 GPUs."
    cheapest = {m: plan.cheapest(m) for m in ("purchase", "hourly")}
    rows = []
    for o in plan.options:
        time = o.estimate.time_json() if hasattr(o.estimate, "time_json") else {}
        speed = (f"{time['time_to_train_seconds'] / 3600:,.1f} h" if "time_to_train_seconds" in time else
                 f"{time['tokens_per_s_per_user']:,.1f} tok/s/user" if "tokens_per_s_per_user" in time else "")
        marks = " ".join(m for m, c in cheapest.items() if c is o)
        layout = o.layout
        extra = " ".join(x for x in (f"PP{layout['pp_size']}" if layout["pp_size"] > 1 else "",
                                     f"EP{layout['ep_size']}" if layout["ep_size"] > 1 else "",
                                     f"ckpt {layout['checkpointing']}" if layout["checkpointing"] != "none" else "",
                                     f"offload {layout['offload']}" if layout["offload"] != "none" else "",
                                     layout["optimizer"] if layout["optimizer"] != "adamw" else "") if x)
        rows.append((o.gpu, o.total_gpus, o.zero_stage, o.tp_size, extra, _gib(o.estimate["device_total"]),
                     _gib(o.estimate["recommended"]), speed, f"{o.purchase_usd:,.0f}",
                     f"{o.run_cost_usd:,.0f}" if o.run_cost_usd is not None else f"{o.hourly_usd:,.2f}/h", marks))
    head = ("GPU", "GPUs in all", "ZeRO", "TP", "also", "device total GiB", "recommended GiB", "speed",
            "purchase USD", "cloud USD", "cheapest by")
    return f"goal: {plan.goal.describe()}\n" + _table(head, rows, right=[False, True, True, True, False] + [True] * 5
                                                       + [False])


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
