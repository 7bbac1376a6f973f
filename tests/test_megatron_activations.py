"""What Megatron-Core's layers save for backward (framework megatron, full training), and its selective recompute
modules (--recompute-modules layernorm moe_act, layernorm moe, and MLA's mla_up_proj and the dense layers' mlp).

Independent references:
- Korthikanti et al. 2022 (arXiv:2205.05198), Table 2: a GPT layer with tensor and sequence parallelism and
  selective recompute saves s·b·h·34 ÷ t bytes (16-bit activations, LayerNorm, dropout, a 4h GELU MLP); with a
  fused attention kernel the S × S part is never saved and its fp32 log-sum-exp is (4 bytes per head).
- The Megatron-MoE team's list of what a Megatron-Core MoE layer caches, per token and layer
  (github.com/yanring/Megatron-MoE-ModelZoo at e8650517, misc/tools/deepseek_mem_estimate.py, `cached`; written
  out below for a grouped-query model and, apart, for DeepSeek-V3's MLA), and what its recompute options save
  ("By norm recompute, can save input_norm_out + mlp_norm_out", "By act_func recompute, can save
  expert_act_out", "By up_proj+rope recompute, can save q_apply_rope_out + k_apply_rope_out + v_apply_rope_out").
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.pipeline import validation_figures

EST = Estimator(load_models(), load_gpus())
H100 = "H100-80GB-SXM"
QWEN = Scenario(model="Qwen3-235B-A22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=256,
                tp_size=2, pp_size=8, vp_size=4, ep_size=32, etp_size=1, grad_accum_steps=128, gpu=H100,
                framework="megatron", zero_stage=1, attention="fused", checkpointing="none")


@pytest.mark.parametrize("checkpointing", ["none", "selective"])
def test_a_gpt_layer_saves_korthikantis_34_sbh(checkpointing):
    """GPT-2 (LayerNorm, dropout as configured, GELU MLP of 4h, one key head per query head) under megatron with
    flash attention: 34 bytes per hidden element per token, and the log-sum-exp (4 bytes per head)."""
    e = EST.estimate(Scenario(model="GPT-2", workload="full", seq_len=1024, prompt_len=0, gen_len=0, dropout="config",
                              num_gpus=4, tp_size=4, framework="megatron", checkpointing=checkpointing))
    assert e["layer_saved_per_token"] == 34 * e["hidden_size"] + 4 * e["num_heads"]
    assert e["mlp_saved_per_token"] == 16 * e["hidden_size"]  # GELU's input and output, 4h wide, 16-bit


def megatron_moe_team_cached(e) -> dict[str, float]:
    """deepseek_mem_estimate.py's `cached` tensors of one layer, per token (tp 1, bf16), for a grouped-query model:
    q, k, v after RoPE at their own widths."""
    h, q, kv, heads = e["hidden_size"], e["q_dim"], e["kv_dim"], e["num_heads"]
    experts, k, f = e["num_experts"], 8, 1536  # Qwen3-235B-A22B: top 8 of 128, moe_intermediate_size 1536
    return {"input": 2 * h, "input_norm_out": 2 * h, "q_apply_rope_out": 2 * q, "k_apply_rope_out": 2 * kv,
            "v_apply_rope_out": 2 * kv, "attn_out": 2 * q, "attn_ctx_tensor": 4 * heads, "attn_bda_out": 2 * h,
            "router_probs": 2 * experts, "permute_row_id_map": 8 * experts, "permute_out": 2 * k * h,
            "expert_linear_1_out": 2 * k * 2 * f, "expert_act_out": 2 * k * f, "unpermute_alltoall_out": 2 * k * h}


def test_a_moe_layer_saves_the_megatron_moe_teams_list_and_what_the_code_adds_or_drops():
    """Qwen3-235B-A22B (every layer MoE, q/k norms): the estimate is the team's list, plus the pre-MLP norm's output
    (RouterGatingLinearFunction saves its input), the q/k norms' 16-bit inputs (a model their script does not
    cover) and each routed pair's fp32 probability, less the expert output the unpermute kept before the
    probabilities moved into the experts' activation (their 'probs2swiglu': Megatron-Core's TEGroupedMLP now)."""
    e = EST.estimate(QWEN)
    cached = megatron_moe_team_cached(e)
    h, q, kv, k = e["hidden_size"], e["q_dim"], e["kv_dim"], 8
    expected = (sum(cached.values()) + 2 * h + 2 * (q + kv) + 4 * k - cached["unpermute_alltoall_out"])
    assert e["layer_saved_per_token"] == expected


@pytest.mark.parametrize("checkpointing, saved", [
    ("layernorm+moe_act", ("input_norm_out", "mlp_norm_out", "expert_act_out")),
    ("layernorm+moe", None),
])
def test_recompute_modules_drop_what_megatron_discards(checkpointing, saved):
    """'layernorm' discards both norms' outputs (2h each) and 'moe_act' the experts' activation output: the team's
    figures of what they save. 'moe' keeps nothing of the MoE layer: its input is the pre-MLP norm's output, which
    'layernorm' discards too; the layer keeps its norms' inputs and its attention."""
    none = EST.estimate(QWEN)
    e = EST.estimate(replace(QWEN, checkpointing=checkpointing))
    cached = megatron_moe_team_cached(none) | {"mlp_norm_out": 2 * none["hidden_size"]}
    if saved:
        assert none["layer_saved_per_token"] - e["layer_saved_per_token"] == sum(cached[n] for n in saved)
    else:
        assert e["layer_saved_per_token"] == 2 * 2 * e["hidden_size"] + e["attention_saved_per_token"]
        assert e["attention_saved_per_token"] == none["attention_saved_per_token"]
    assert e["activations"] < none["activations"]


def test_only_megatron_full_training_takes_the_module_lists():
    for framework in ("hf", "deepspeed", "fsdp2"):
        reason = EST.skip_reason(replace(QWEN, framework=framework, pp_size=1, vp_size=1, tp_size=1, etp_size=0,
                                         zero_stage=3, checkpointing="layernorm+moe"))
        assert reason and "--recompute-modules" in reason and framework in reason
    lora = replace(QWEN, workload="lora", checkpointing="layernorm+moe_act")
    assert "--recompute-modules" in EST.skip_reason(lora)
    assert EST.skip_reason(replace(QWEN, checkpointing="layernorm+moe")) is None


def test_the_moe_module_recomputes_the_moe_layers_forward_and_the_lists_leave_the_attention():
    """Megatron's lists without core_attn do not recompute the attention scores; 'moe' runs every MoE layer's
    forward again (router and experts: Qwen3 has no shared expert) and its dispatch and combine."""
    by = {c: EST.estimate(replace(QWEN, checkpointing=c))
          for c in ("none", "selective", "layernorm+moe_act", "layernorm+moe")}
    attention = by["none"]["attention_flops_per_token"]
    assert by["selective"]["train_attention_flops_per_token"] == 4 * attention
    for c in ("none", "layernorm+moe_act", "layernorm+moe"):
        assert by[c]["train_attention_flops_per_token"] == 3 * attention
    assert by["layernorm+moe_act"]["recompute_flops_per_token"] == 0
    moe = by["layernorm+moe"]
    assert moe["recompute_flops_per_token"] == 2 * (moe["routed_active_params"]
                                                    + 94 * moe["hidden_size"] * moe["num_experts"])
    assert moe["moe_a2a_calls"] == pytest.approx(6 / 4 * by["layernorm+moe_act"]["moe_a2a_calls"])
    assert moe["step_seconds"] > by["layernorm+moe_act"]["step_seconds"] == pytest.approx(by["none"]["step_seconds"])


def test_published_megatron_core_runs_fit_and_any_run_that_does_not_says_why():
    """A published training run ran on its GPUs. The Megatron-Core runs (Qwen3-235B-A22B on 256 H100, mapped with
    their --recompute-modules) are estimated within their GPUs' memory; a run that is not carries its reason."""
    figures, _ = validation_figures(EST)
    training = [f for f in figures if f.dataset.startswith("training")]
    megatron_core = [f for f in training if "Megatron-MoE-ModelZoo" in f.source]
    assert len(megatron_core) == 9 and all(f.fits for f in megatron_core), [
        (f.id, f.memory) for f in megatron_core if not f.fits]
    assert all(f.memory_miss for f in training if not f.fits)


# DeepSeek-V3 on one pipeline stage of its own report's layout (PP 16, EP 64, ZeRO-1), bf16
DEEPSEEK = Scenario(model="DeepSeek-V3", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=2048,
                    pp_size=16, ep_size=64, grad_accum_steps=120, gpu=H100, framework="megatron", zero_stage=1,
                    checkpointing="none")


def megatron_moe_team_mla_cached() -> dict[str, int]:
    """deepseek_mem_estimate.py's `cached` attention tensors of one DeepSeek-V3 layer, per token (tp 1, bf16), from its
    config (q_lora_rank 1536, kv_lora_rank 512, 128 heads, qk_nope 128 + qk_rope 64, v_head_dim 128): the compressed
    query and its norm's output, the compressed key-value and its norm's output, q, k and v after RoPE, the
    attention output and the fp32 softmax statistics."""
    heads, qk_head, v_head = 128, 128 + 64, 128
    return {"q_down_out": 2 * 1536, "q_norm_out": 2 * 1536, "kv_compressed": 2 * 512, "kv_norm_out": 2 * 512,
            "q_apply_rope_out": 2 * heads * qk_head, "k_apply_rope_out": 2 * heads * qk_head,
            "v_apply_rope_out": 2 * heads * v_head, "attn_out": 2 * heads * v_head, "attn_ctx_tensor": 4 * heads}


@pytest.mark.parametrize("checkpointing", ["none", "layernorm+moe_act", "mla_up_proj+mlp",
                                           "layernorm+mla_up_proj+moe_act", "layernorm+mla_up_proj+mlp+moe",
                                           "layernorm+mla_up_proj+mlp+moe_act"])
def test_mla_saves_the_teams_list_and_mla_up_proj_drops_the_queries_keys_and_values(checkpointing):
    """Multi-head latent attention under megatron saves what the team counts (values and output at v_head_dim, not
    the query head width; the latents and their norms' outputs); 'mla_up_proj' saves q, k and v after RoPE: the
    team's 'By up_proj+rope recompute, can save q_apply_rope_out + k_apply_rope_out + v_apply_rope_out'."""
    e = EST.estimate(replace(DEEPSEEK, checkpointing=checkpointing))
    assert EST.skip_reason(replace(DEEPSEEK, checkpointing=checkpointing)) is None
    cached = megatron_moe_team_mla_cached()
    dropped = (("q_apply_rope_out", "k_apply_rope_out", "v_apply_rope_out") if "mla_up_proj" in checkpointing else ())
    assert e["attention_saved_per_token"] == sum(v for k, v in cached.items() if k not in dropped)


def test_the_mla_and_mlp_modules_recompute_their_forward_and_mlp_drops_the_dense_layers_mlp():
    """'mla_up_proj' runs the query and key-value up-projections again (DeepSeek-V3: 1536 → 128 × 192 and
    512 → 128 × (128 + 128), 61 layers); 'mlp' the dense layers' gated MLPs (3 layers of 7168 → 18432), whose three
    saved widths (fc1's gate and up, the activation's output) it drops; neither recomputes the attention scores."""
    none = EST.estimate(DEEPSEEK)
    up = EST.estimate(replace(DEEPSEEK, checkpointing="layernorm+mla_up_proj+moe_act"))
    both = EST.estimate(replace(DEEPSEEK, checkpointing="mla_up_proj+mlp"))
    up_flops = 2 * 61 * (1536 * 128 * 192 + 512 * 128 * (128 + 128))
    dense_mlp_flops = 2 * 3 * 3 * 7168 * 18432
    assert up["recompute_flops_per_token"] == up_flops
    assert both["recompute_flops_per_token"] == up_flops + dense_mlp_flops
    assert both["train_attention_flops_per_token"] == 3 * none["attention_flops_per_token"]
    assert none["mlp_saved_per_token"] - both["mlp_saved_per_token"] == pytest.approx(2 * 3 * 3 * 18432 / 61, rel=1e-12)


def test_the_modelzoo_deepseek_v3_h100_recipe_fits_with_its_recompute_modules():
    """The Megatron-MoE team's DeepSeek-V3 recipe, 'best config on 1024 H100 GPUs with 4096 sequence lengths'
    (ModelZoo best_practice/deepseek-v3/run_deepseek_v3_h100.sh at e8650517: TP 2, PP 8, VPP 4, EP 64, global batch
    8192, FP8, the distributed optimizer with BF16 moments, --recompute-modules mla_up_proj mlp), ran: the estimate
    fits it on the H100's memory (its MTP layer and uneven pipeline layout are not modelled)."""
    recipe = replace(DEEPSEEK, num_gpus=1024, tp_size=2, pp_size=8, vp_size=4, grad_accum_steps=8192 // 64,
                     precision="fp8-te", optimizer="adamw-bf16", attention="fused", checkpointing="mla_up_proj+mlp")
    assert EST.skip_reason(recipe) is None
    e = EST.estimate(recipe)
    assert e["device_total"] < e["gpu_memory_bytes"]


def test_mla_up_proj_needs_multi_head_latent_attention():
    """Megatron-Core refuses 'mla_up_proj' without MLA (transformer_config.py); so does the estimate, naming it."""
    reason = EST.skip_reason(replace(QWEN, checkpointing="layernorm+mla_up_proj+moe_act"))
    assert reason and "mla_up_proj" in reason and "Qwen3-235B-A22B" in reason
    hf = replace(DEEPSEEK, framework="hf", pp_size=1, ep_size=1, num_gpus=8, zero_stage=3, grad_accum_steps=1,
                 checkpointing="mla_up_proj+mlp")
    assert "--recompute-modules" in EST.skip_reason(hf)


@pytest.mark.parametrize("checkpointing, fp8_inputs", [
    ("none", lambda h, q, k, f: 2 * h + q + k * f + k * h),
    ("layernorm+moe_act", lambda h, q, k, f: q + k * h),
    ("layernorm+moe", lambda h, q, k, f: q),
])
def test_fp8_keeps_one_byte_of_each_linear_input_megatron_still_saves(checkpointing, fp8_inputs):
    """fp8-te under megatron (Transformer Engine): the linear layers' saved inputs take 1 byte where bf16 takes 2:
    the two normed inputs, the attention output, the experts' permuted inputs and their activation output
    (Qwen3-30B-A3B: every layer MoE, top 8 of width 768). What a recompute module discards is not saved in any
    precision, so it is no FP8 saving: the norms' outputs under 'layernorm', the activation under 'moe_act', every
    expert input under 'moe' (Megatron-Core 'set_save_original_input' keeps the bf16 input for recomputation)."""
    base = Scenario(model="Qwen3-30B-A3B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=16,
                    tp_size=2, ep_size=8, gpu=H100, framework="megatron", zero_stage=1, checkpointing=checkpointing)
    bf16, fp8 = EST.estimate(base), EST.estimate(replace(base, precision="fp8-te"))
    assert EST.skip_reason(replace(base, precision="fp8-te")) is None
    saved = fp8_inputs(fp8["hidden_size"], fp8["q_dim"], 8, 768)
    assert bf16["layer_saved_per_token"] - fp8["layer_saved_per_token"] == saved


def test_megatrons_precision_aware_optimizer_halves_adams_moments_and_needs_its_distributed_optimizer():
    """optimizer adamw-bf16: Megatron-Core's --use-precision-aware-optimizer with both moments in bf16, 2 bytes per
    state element where AdamW keeps 4; the fp32 master weights stay. Megatron raises '--use-precision-aware-optimizer
    only supported with distributed optimizer' (megatron/core/optimizer/__init__.py), so ZeRO-0 is refused, as is any
    other framework."""
    dense = Scenario(model="Llama-3.1-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                     tp_size=2, gpu=H100, framework="megatron", zero_stage=1)
    fp32, bf16 = EST.estimate(dense), EST.estimate(replace(dense, optimizer="adamw-bf16"))
    assert EST.skip_reason(replace(dense, optimizer="adamw-bf16")) is None
    assert bf16["optimizer_states"] * 2 == pytest.approx(fp32["optimizer_states"], abs=2)
    assert bf16["master_weights"] == fp32["master_weights"] > 0
    assert "ZeRO-0" in EST.skip_reason(replace(dense, optimizer="adamw-bf16", zero_stage=0))
    assert "fsdp2" in EST.skip_reason(replace(dense, optimizer="adamw-bf16", framework="fsdp2", zero_stage=3))


def test_lora_under_megatron_keeps_what_frozen_transformer_engine_layers_keep():
    """NeMo's LoRA on Megatron-Core (MLPerf's Llama 2 70B recipe: adapters on linear_qkv and linear_proj, rank 16,
    dropout 0.1, bf16 under megatron_amp_O2). Transformer Engine's Linear and LayerNormLinear save their input only
    for a weight gradient (backward_needs_input = is_grad_enabled and weight.requires_grad), so a frozen layer
    keeps: each norm's input (16-bit), the attention's Q, K, V, output and log-sum-exp, the MLP's first-layer output
    (gate and up: the fused SwiGLU's backward reads it) but not the activation's output (the frozen down
    projection's input); the adapters keep their inputs, read once by the fused qkv layer (h) and by the output
    projection (q_dim), each with a 1-byte dropout mask and a dropped 16-bit copy. Llama-2-7B: h = q_dim = 4096,
    32 heads, MLP 11008."""
    lora = Scenario(model="Llama-2-7B", workload="lora", seq_len=4096, prompt_len=0, gen_len=0, gpu=H100,
                    framework="megatron", attention="fused", adapter_dtype="model", lora_dropout="on",
                    lora_targets="q_proj,k_proj,v_proj,o_proj")
    e, full = EST.estimate(lora), EST.estimate(replace(lora, workload="full"))
    h, heads, ffn = 4096, 32, 11008
    assert e["megatron_layers"] == 1 and e["lora_input_features"] == h + h
    # one adapter on linear_qkv (A: r × h, B: (q + k + v) × r) and one on linear_proj, where PEFT has four
    assert e["adapter_params"] == 16 * ((h + 3 * h) + (h + h)) * 32
    # all-linear adds linear_fc1 (gate and up fused: one input, h, one adapter) and linear_fc2 (the MLP's width)
    every = EST.estimate(replace(lora, lora_targets="all-linear"))
    assert every["lora_input_features"] == h + h + h + ffn
    assert every["adapter_params"] == e["adapter_params"] + 16 * ((h + 2 * ffn) + (ffn + h)) * 32
    # q_proj,v_proj alone: NeMo's CanonicalLoRA, linear_q and linear_v each with its own adapter, as PEFT's
    qv = EST.estimate(replace(lora, lora_targets="q_proj,v_proj"))
    assert qv["lora_input_features"] == 2 * h and qv["adapter_params"] == 16 * 2 * (h + h) * 32
    assert e["mlp_saved_per_token"] == 2 * 2 * ffn and full["mlp_saved_per_token"] == 3 * 2 * ffn
    adapters = (1 + 2) * 2 * h + e["adapter_bytes"] * 16 * 2  # mask and dropped copy per input; r-wide outputs
    assert e["layer_saved_per_token"] == 2 * 2 * h + 2 * 2 * (h + h) + 4 * heads + 2 * 2 * ffn + adapters
    hf = EST.estimate(replace(lora, framework="deepspeed"))
    assert hf["megatron_layers"] == 0 and hf["layer_saved_per_token"] > e["layer_saved_per_token"]
    assert EST.estimate(replace(lora, model="Mixtral-8x7B"))["megatron_layers"] == 0  # frozen experts: not modelled


def test_fp8_activations_keep_the_mlp_input_and_the_attention_in_one_byte():
    """fp8_activations (Megatron-Core under an FP8 precision): mlp keeps the MLP activation's input, gate and up
    (--activation-func-fp8-input-store, NeMo's FP8_ACT), in 1 byte; attention keeps FP8 attention's Q, K, V and
    output (--fp8-dot-product-attention, FP8_DPA) in 1 byte, the output only where FP8 training does not already
    count it as the output projection's saved input (LoRA: the frozen projection saves none). Llama-2-7B: h = q_dim
    = kv_dim = 4096, MLP 11008; refused without megatron or an FP8 precision."""
    h, ffn = 4096, 11008
    lora = Scenario(model="Llama-2-7B", workload="lora", seq_len=4096, prompt_len=0, gen_len=0, gpu=H100,
                    framework="megatron", attention="fused", adapter_dtype="model", lora_dropout="on",
                    lora_targets="q_proj,k_proj,v_proj,o_proj", precision="fp8-te")
    for workload, attention_widths in (("lora", 2 * h + 2 * h), ("full", h + 2 * h)):
        base = replace(lora, workload=workload)
        off = EST.estimate(base)
        mlp, attention, both = (EST.estimate(replace(base, fp8_activations=v)) for v in
                                ("mlp", "attention", "mlp+attention"))
        assert off["mlp_saved_per_token"] - mlp["mlp_saved_per_token"] == (2 - 1) * 2 * ffn
        assert off["attention_saved_per_token"] - attention["attention_saved_per_token"] == (2 - 1) * attention_widths
        assert off["layer_saved_per_token"] - both["layer_saved_per_token"] == 2 * ffn + attention_widths
    for refused in (replace(lora, framework="deepspeed"), replace(lora, precision="bf16-mixed")):
        assert "fp8_activations mlp" in EST.skip_reason(replace(refused, fp8_activations="mlp"))
    assert EST.skip_reason(replace(lora, fp8_activations="mlp+attention")) is None
