#!/usr/bin/env python
"""PEFT LoRA on the layouts Llama's names do not describe: a fused query-key-value layer (GPT-2's Conv1D c_attn,
GPT-NeoX's, Falcon's and BLOOM's query_key_value, Phi-3's qkv_proj) and plain two-layer MLPs (GPT-2, GPT-NeoX,
Falcon, BLOOM, OPT), each named set given to PEFT as the modules it means there (setting.lora.modules): q_proj,v_proj
as the fused layer, q_proj,k_proj,v_proj,o_proj as it and the attention's output projection (OPT: q, k, v and
out_proj), all-linear as PEFT's own. PEFT's defaults otherwise (fp32 adapters, fp32 input casts, no dropout on the
adapters); the models train with their configs' dropout (GPT-2's 0.1), dispatched as on a CUDA GPU
(measure_cuda_dropout.patch: a bool mask, FlashAttention-2 with dropout; setting.dropout_dispatch "cuda").

Falcon-7B is measured with eager attention: its SDPA call hands 71 query heads one key-value head without
enable_gqa, which PyTorch's dispatcher sends to the math kernel (neither FlashAttention nor the memory-efficient
kernel takes unequal heads), and on the fake CPU device that kernel computes bf16 in fp32, as CUDA's does not:
what a GPU saves there is not what the oracle would measure.

Shapes: the catalog's configs (presets/models/*.json), the large ones cut to a few layers (the rest unchanged).
Fit (they informed a term): GPT-NeoX's q/v record (its +12.4 % showed the first layer's MLP saving nothing under a
parallel residual: first_mlp_spared_per_token), its all-linear one (its -9.3 % showed FastGELU keeping seven
MLP-wide tensors, where the count had GPT-2's five) and Falcon's two (their +87 % and +38 % showed its eager softmax
in the activation dtype). The others are held out.

    /work/tmp/ovenv/bin/python tools/oracle/measure_lora_layouts.py OUT.json [full]
"""
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import measure_cuda_dropout  # noqa: E402
import memoracle as M  # noqa: E402
import records as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))


def catalog_config(file, layers=None):
    config = dict(json.load(open(os.path.join(ROOT, "presets", "models", file)))["config"])
    config.pop("architectures", None)
    if layers:
        config["n_layer" if "n_layer" in config else "num_hidden_layers"] = layers
    return config


# name -> (config, the PEFT modules each named set means on it)
MODELS = {
    "GPT-2": (catalog_config("gpt-2.json"), {"q_proj,v_proj": ["c_attn"],
                                              "q_proj,k_proj,v_proj,o_proj": ["c_attn", "attn.c_proj"]}),
    "GPT-NeoX-20B-2L": (catalog_config("gpt-neox-20b.json", 2),
                        {"q_proj,v_proj": ["query_key_value"],
                         "q_proj,k_proj,v_proj,o_proj": ["query_key_value", "attention.dense"]}),
    "Falcon-7B-4L": (catalog_config("falcon-7b.json", 4),
                     {"q_proj,v_proj": ["query_key_value"],
                      "q_proj,k_proj,v_proj,o_proj": ["query_key_value", "self_attention.dense"]}),
    "BLOOM-560M": (catalog_config("bloom-560m.json"),
                   {"q_proj,v_proj": ["query_key_value"],
                    "q_proj,k_proj,v_proj,o_proj": ["query_key_value", "self_attention.dense"]}),
    "OPT-6.7B-4L": (catalog_config("opt-6.7b.json", 4),
                    {"q_proj,v_proj": ["q_proj", "v_proj"],
                     "q_proj,k_proj,v_proj,o_proj": ["q_proj", "k_proj", "v_proj", "out_proj"]}),
    "Phi-3-mini-4k-4L": (catalog_config("phi-3-mini-4k-instruct.json", 4),
                         {"q_proj,v_proj": ["qkv_proj"], "q_proj,k_proj,v_proj,o_proj": ["qkv_proj", "o_proj"]}),
}

FIT = {("GPT-NeoX-20B-2L", "q_proj,v_proj"), ("GPT-NeoX-20B-2L", "all-linear"), ("Falcon-7B-4L", "q_proj,v_proj"),
       ("Falcon-7B-4L", "all-linear")}

CASES = [  # (model, attention, batch, seq, checkpointing, rank, named set)
    ("GPT-2", "sdpa", 4, 1024, False, 16, "q_proj,v_proj"),
    ("GPT-2", "sdpa", 2, 1024, False, 16, "all-linear"),
    ("GPT-2", "eager", 2, 512, False, 8, "q_proj,k_proj,v_proj,o_proj"),
    ("GPT-NeoX-20B-2L", "sdpa", 1, 2048, False, 16, "q_proj,v_proj"),
    ("GPT-NeoX-20B-2L", "sdpa", 2, 1024, False, 16, "all-linear"),
    ("GPT-NeoX-20B-2L", "sdpa", 2, 2048, True, 32, "q_proj,k_proj,v_proj,o_proj"),
    ("Falcon-7B-4L", "eager", 2, 2048, False, 16, "q_proj,v_proj"),
    ("Falcon-7B-4L", "eager", 2, 1024, False, 16, "all-linear"),
    ("BLOOM-560M", "eager", 2, 1024, False, 16, "q_proj,v_proj"),
    ("BLOOM-560M", "eager", 1, 1024, False, 16, "all-linear"),
    ("OPT-6.7B-4L", "sdpa", 2, 2048, False, 16, "q_proj,k_proj,v_proj,o_proj"),
    ("OPT-6.7B-4L", "sdpa", 2, 1024, False, 64, "all-linear"),
    ("Phi-3-mini-4k-4L", "sdpa", 2, 2048, False, 16, "q_proj,v_proj"),
    ("Phi-3-mini-4k-4L", "sdpa", 1, 4096, True, 16, "q_proj,k_proj,v_proj,o_proj"),
]


# Full fine-tuning of the same shapes (argument `full`), held out: the terms these layouts' LoRA records set
# (FastGELU's tensors, Falcon's softmax and one norm) and the rest, in bf16 and in autocast (precision amp).
FULL_CASES = [  # (model, precision, attention, batch, seq, checkpointing)
    ("OPT-6.7B-4L", "bf16", "sdpa", 1, 2048, False),
    ("OPT-6.7B-4L", "bf16", "sdpa", 2, 2048, True),
    ("GPT-NeoX-20B-2L", "bf16", "sdpa", 1, 2048, False),
    ("GPT-NeoX-20B-2L", "bf16", "sdpa", 2, 2048, True),
    ("BLOOM-560M", "bf16", "eager", 1, 1024, False),
    ("Falcon-7B-4L", "bf16", "eager", 1, 2048, False),
    ("GPT-2", "amp", "sdpa", 2, 1024, False),
    ("OPT-6.7B-4L", "amp", "sdpa", 1, 2048, False),
    ("GPT-NeoX-20B-2L", "amp", "sdpa", 1, 2048, False),
    ("BLOOM-560M", "amp", "eager", 1, 1024, False),
    ("Falcon-7B-4L", "amp", "eager", 1, 2048, False),
]


def case_id(name, attn, batch, seq, ckpt, rank, targets):
    return f"{name}/train/bf16/{attn}/b{batch}/s{seq}/{'gc' if ckpt else 'nogc'}/fused/lora{rank}-{targets}"


def measure_full(out_path):
    measure_cuda_dropout.patch()
    recs, t0 = [], time.time()
    for name, precision, attn, batch, seq, ckpt in FULL_CASES:
        config = MODELS[name][0]
        setting = dict(mode="train", precision=precision, attn=attn, batch=batch, seq=seq, grad_ckpt=ckpt,
                       optim="fused")
        r = M.run_case(config, use_memtracker=False, **setting)
        rec = R.record(f"{name}/train/{precision}/{attn}/b{batch}/s{seq}/{'gc' if ckpt else 'nogc'}/fused/layouts",
                       name, "holdout", config, dict(setting, dropout_dispatch="cuda"), r,
                       "measure_lora_layouts.py full: full fine-tuning of the LoRA layouts' shapes; SDPA kernels: "
                       f"{r.get('sdpa_kernels') or ['none (eager)']}", workload="full")
        R.keep(out_path, recs, rec, r, t0)


def main(out_path):
    measure_cuda_dropout.patch()
    recs, t0 = [], time.time()
    for name, attn, batch, seq, ckpt, rank, targets in CASES:
        config, modules = MODELS[name]
        peft_targets = "all-linear" if targets == "all-linear" else modules[targets]
        setting = dict(mode="train", precision="bf16", attn=attn, batch=batch, seq=seq, grad_ckpt=ckpt, optim="fused",
                       lora=dict(r=rank, alpha=2 * rank, targets=targets, modules=peft_targets))
        run = dict(setting, lora=dict(r=rank, alpha=2 * rank, targets=peft_targets))
        setting["dropout_dispatch"] = "cuda"
        r = M.run_case(config, use_memtracker=False, **run)
        split = "fit" if (name, targets) in FIT else "holdout"
        rec = R.record(case_id(name, attn, batch, seq, ckpt, rank, targets), name, split, config, setting, r,
                       "measure_lora_layouts.py: PEFT LoRA with the named set's modules on this layout "
                       f"(setting.lora.modules); SDPA kernels: {r.get('sdpa_kernels') or ['none (eager)']}")
        R.keep(out_path, recs, rec, r, t0)


if __name__ == "__main__":
    measure_full(sys.argv[1]) if sys.argv[2:] == ["full"] else main(sys.argv[1])
