"""What the measure_*.py scripts write: a record per case in the shape of the oracle files
(presets/validation/oracle_arch.json), and the file of records with the versions that made them."""
import json
import time

import torch

MEASURED = ("peak_bytes", "first_step_peak_bytes", "steady_peak_breakdown", "steady_peak_phase", "steady_peak_op",
            "params", "trainable_params")
# what an inference case (prefill, then new_tokens decode steps) measures
INFER_MEASURED = ("peak_bytes", "params", "trainable_params", "kv_cache_bytes_after_prefill", "kv_cache_bytes_end",
                  "logits_bytes", "prefill_peak_bytes", "peak_phase")


def record(case_id, name, split, config, setting, result, notes, workload="lora"):
    """One case: its id and setting, what memoracle.run_case measured, and how it was made."""
    measured = INFER_MEASURED if workload == "inference" else MEASURED
    return dict(id=case_id, config_name=name, split=split, config=config, workload=workload, setting=setting,
                **{k: result[k] for k in measured}, notes=notes)


def measure_rank(name, config, split, precision, batch, seq, grad_ckpt, layout, notes, **parallel):
    """One rank of a multi-GPU training case (measure_fsdp2, measure_tp, measure_cp), run by memoracle.run_case with
    the `parallel` worlds (fsdp_world, tp_world, cp_world): its peak, where it fell and what was live then."""
    import memoracle
    started = time.time()
    result = memoracle.run_case(config, mode="train", precision=precision, attn="sdpa", batch=batch, seq=seq,
                                grad_ckpt=grad_ckpt, use_memtracker=False, optim="fused", **parallel)
    setting = {"mode": "train", "precision": precision, "attn": "sdpa", "batch": batch, "seq": seq,
               "grad_ckpt": grad_ckpt, "optim": "fused", **parallel}
    rec = dict(id=f"{name}/train/{precision}/sdpa/b{batch}/s{seq}/{'op' if grad_ckpt == 'op' else 'gc' if grad_ckpt else 'nogc'}/fused/{layout}",
               config_name=name, split=split, config=config, workload="full", setting=setting,
               peak_bytes=result["peak_bytes"], first_step_peak_bytes=result["first_step_peak_bytes"],
               params=result["params"], trainable_params=result["trainable_params"],
               steady_peak_breakdown=result["steady_peak_breakdown"], peak_phase=result["steps"][-1]["peak_phase"],
               peak_op=result["steps"][-1]["peak_op"], notes=notes)
    print(rec["id"], rec["peak_bytes"], rec["peak_phase"], rec["peak_op"], round(time.time() - started, 1), flush=True)
    return rec


def keep(out_path, records, rec, result, started):
    """A measured record kept: its peak printed, and the file of records so far written."""
    records.append(rec)
    print(f"{rec['id']:95s} {result['peak_bytes'] / 2**30:8.4f} GiB {result['seconds']}s", flush=True)
    save(out_path, records, started)


def save(out_path, records, started):
    """The records so far (written after every case, so an interrupted run keeps what it measured)."""
    with open(out_path, "w") as f:
        json.dump(dict(cases=records, seconds=round(time.time() - started, 1),
                       versions=dict(torch=torch.__version__, transformers=__import__("transformers").__version__,
                                     peft=__import__("peft").__version__)), f, indent=1)
