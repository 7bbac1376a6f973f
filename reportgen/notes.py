"""Error-correction notes: claims from the source articles checked with the estimator's own numbers.

Each note states a claim (original Chinese and an English translation), the setting it assumes,
a verdict, and figures. A figure is an expression over terms of named scenarios
(`Var("s1.allocated_peak")`), so the same definition gives the number here (compiled like the
term table), a live formula in the workbook (cells of the note's scenario rows) and the text in
the report. No corrected figure is typed in as prose.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from .estimate import Estimator, Scenario, rlhf_scenario
from .formulas import compile_terms
from .formulas import Expr, Var
from .terms import Term
from .units import MiB

VERDICTS = ("correct", "wrong", "imprecise", "depends")


@dataclass(frozen=True)
class NoteFigure:
    key: str  # unique within the note
    label_en: str
    label_zh: str
    unit: str  # "bytes", "count", "ratio", "percent" (a fraction: 0.875 reads 87.5 %), "gpus"
    expr: Expr  # over Vars named "<scenario key>.<term name>"
    value: float


@dataclass(frozen=True)
class Note:
    id: str  # "N1" …
    article: str  # seed file name the claim comes from (", "-separated when it quotes both articles)
    claim_zh: str
    claim_en: str
    setting_en: str
    setting_zh: str
    verdict: str  # one of VERDICTS
    explanation_en: str  # may reference figures as {key} (formatted by the writer)
    explanation_zh: str
    source: str
    scenarios: Mapping[str, Scenario]  # key -> scenario whose terms the figures read
    figures: tuple[NoteFigure, ...]
    scenario_values: Mapping[str, Mapping[str, float]]  # key -> every term of that scenario


def evaluate_figures(results: Mapping[str, Mapping[str, float]], estimator: Estimator,
                     figures: Mapping[str, tuple[str, str, str, Expr]]) -> tuple[NoteFigure, ...]:
    """Compute each figure's value from its expression over the scenarios' terms (`results`)."""
    terms = tuple(Term(k, label_en, unit, expr) for k, (label_en, _, unit, expr) in figures.items())

    def var(n: str) -> str:
        key, term = n.split(".", 1)
        return f"R[{key!r}][{term!r}]"

    fn = compile_terms(terms, var, "_note")
    values = fn({}, estimator.assumptions, estimator.tables, results)
    return tuple(NoteFigure(k, f[0], f[1], f[2], f[3], v) for (k, f), v in zip(figures.items(), values))


def build_notes(estimator: Estimator) -> tuple[Note, ...]:
    """The catalogue of notes, computed with this estimator (its catalogs and assumptions)."""
    return tuple(make(estimator) for make in NOTE_BUILDERS)


def claim_fragments(notes=None) -> list[tuple[tuple[str, ...], str]]:
    """(cited articles, fragment) for every verbatim fragment the notes quote; a claim joins its
    fragments with " … ", and a note citing two articles quotes each fragment from one of them."""
    if notes is None:
        from .catalog import load_gpus, load_models
        notes = build_notes(Estimator(load_models(), load_gpus()))
    return [(tuple(n.article.split(", ")), fragment) for n in notes for fragment in n.claim_zh.split(" … ")]


# ---------------------------------------------------------------------------------------------
# The catalogue. Claims are quoted verbatim from the seed articles (fragments joined by " … ");
# settings and explanations name inputs, never results: every result is a {figure}.

VIDEO = "002_90b3f5a371e4fa41.txt"  # notes on a video about LLM GPU memory, with its own list of corrections
PPO_ARTICLE = "000_5f22f56e010e69aa.txt"  # "PPO训练LLM四模型显存占用分析"
# The two source articles: how the report cites them (their text is not shipped; the quoted lines are
# in tests/data/seed_passages.json).
ARTICLES = {
    VIDEO: {"file": VIDEO, "title_zh": "大模型显存计算（视频笔记，作者 youpingfang）",
            "title_en": "LLM GPU memory, notes on a video (by youpingfang)"},
    PPO_ARTICLE: {"file": PPO_ARTICLE, "title_zh": "PPO训练LLM四模型显存占用分析",
                  "title_en": "GPU memory of the four models in PPO training of LLMs"},
}
GENERIC_7B = "Generic-7B"  # the articles' "7B": exactly 7 × 10^9 parameters with Llama-2-7B's shape

Figures = dict[str, tuple[str, str, str, Expr]]


def _v(key: str, term: str) -> Var:
    return Var(f"{key}.{term}")


def _sum(keys, term: str) -> Expr:
    keys = list(keys)
    out: Expr = _v(keys[0], term)
    for key in keys[1:]:
        out = out + _v(key, term)
    return out


def _states(key: str) -> Expr:
    """Model states (the articles' "static memory"): weights, gradients, optimizer states, master weights."""
    return _v(key, "weights") + _v(key, "gradients") + _v(key, "optimizer_states") + _v(key, "master_weights")


def _train(model: str = GENERIC_7B, **inputs) -> Scenario:
    """Full fine-tuning with bf16 mixed-precision AdamW, one sequence of 4,096 tokens, no generation."""
    return replace(Scenario(model=model, workload="full", precision="bf16-mixed", batch_size=1, seq_len=4096,
                            prompt_len=0, gen_len=0, gpu="A100-80GB"), **inputs)


def _ppo_roles(actor: Scenario, **models: str) -> dict[str, Scenario]:
    """PPO's four role scenarios around an actor, laid out by the estimator's own rlhf_scenario."""
    return dict(rlhf_scenario(name="", algorithm="ppo", placement="colocated", actor=actor, **models).roles)


def _note(estimator: Estimator, *, id: str, article: str, claim_zh: str, claim_en: str, setting_en: str,
          setting_zh: str, verdict: str, explanation_en: str, explanation_zh: str, source: str,
          scenarios: Mapping[str, Scenario], figures: Figures) -> Note:
    assert verdict in VERDICTS, verdict
    named = {k: replace(s, name=f"{id} · {k}") for k, s in scenarios.items()}
    results = {k: estimator.estimate(s).values for k, s in named.items()}
    return Note(id=id, article=article, claim_zh=claim_zh, claim_en=claim_en, setting_en=setting_en,
                setting_zh=setting_zh, verdict=verdict, explanation_en=explanation_en,
                explanation_zh=explanation_zh, source=source, scenarios=named,
                figures=evaluate_figures(results, estimator, figures), scenario_values=results)


# ---- 1. two A100s for 7B full fine-tuning -------------------------------------------------------

_ZERO_LAYOUTS = (("dp", 0), ("z1", 1), ("z2", 2), ("z3", 3))


def note_two_gpus_do_not_pool(estimator: Estimator, *, gpu: str = "A100-80GB") -> Note:
    scenarios = {}
    for key, stage in _ZERO_LAYOUTS:
        scenarios[key] = _train(num_gpus=2, zero_stage=stage, gpu=gpu)
        scenarios[f"{key}_ckpt"] = _train(num_gpus=2, zero_stage=stage, checkpointing="full", gpu=gpu)
    names = {"dp": ("no ZeRO", "不用 ZeRO"), "z1": ("ZeRO-1", "ZeRO-1"), "z2": ("ZeRO-2", "ZeRO-2"),
             "z3": ("ZeRO-3", "ZeRO-3")}
    figures: Figures = {
        "static": ("Model states (weights, gradients, Adam moments, master weights)",
                   "模型状态（权重、梯度、Adam 动量、主权重）", "bytes", _states("dp")),
        "act": ("Activations, 4,096 tokens, FlashAttention", "激活值（4096 token，FlashAttention）", "bytes",
                _v("dp", "training_activations")),
        "need": ("Model states + activations", "模型状态 + 激活值", "bytes",
                 _states("dp") + _v("dp", "training_activations")),
        "gpu_mem": ("Memory of one GPU (nvidia-smi total)", "单卡显存（nvidia-smi 总量）", "bytes",
                    _v("dp", "gpu_memory_bytes")),
        "pooled": ("Both GPUs added up (not usable as one)", "两卡相加（不能当作一块用）", "bytes",
                   _v("dp", "gpu_memory_bytes") * _v("dp", "dp_size")),
    }
    for key, _ in _ZERO_LAYOUTS:
        en, zh = names[key]
        figures[f"t_{key}"] = (f"Per GPU, {en}, no checkpointing", f"每卡，{zh}，无检查点", "bytes",
                               _v(key, "device_total"))
        figures[f"t_{key}_ckpt"] = (f"Per GPU, {en}, full checkpointing", f"每卡，{zh}，完全检查点", "bytes",
                                    _v(f"{key}_ckpt", "device_total"))
    figures["fitting"] = ("Layouts of these eight that fit", "八种配置中放得下的个数", "count",
                          _sum(scenarios, "fits"))
    return _note(
        estimator, id="N1", article=VIDEO,
        claim_zh="正确应为 112 + 40 = 152 GB。不过这不影响整体结论（2 张 A 100 足够，但很紧张）"
                 " … 至少需要 2 张 A 100（160 GB）",
        claim_en="The correct total is 112 + 40 = 152 GB. This does not change the overall conclusion "
                 "(2 × A100 is enough, though tight) … at least 2 × A100 (160 GB) are needed.",
        setting_en=f"Generic-7B (7 × 10^9 parameters), full fine-tuning with bf16 mixed-precision AdamW, batch 1 × "
                   f"4,096 tokens, FlashAttention, 2 × {gpu} in data parallelism, ZeRO stage 0–3, without and "
                   f"with full activation checkpointing. Per-GPU device totals include allocator fragmentation, "
                   f"the CUDA context and NCCL buffers.",
        setting_zh=f"Generic-7B（7 × 10^9 参数），BF16 混合精度 AdamW 全参微调，batch 1 × 4096 token，"
                   f"FlashAttention，2 × {gpu} 数据并行，ZeRO 0–3 级，分别不开/开完全激活检查点。"
                   f"每卡设备总量含分配器碎片、CUDA context 与 NCCL 缓冲。",
        verdict="wrong",
        explanation_en="The corrected sum is right arithmetic: model states {static} plus activations ({act} with "
                       "FlashAttention, so the 40 GB is itself high, see N4) make {need}. The conclusion is wrong: "
                       "data-parallel GPUs do not pool memory. Whatever is not sharded is replicated on every GPU, "
                       "so two cards give {gpu_mem} each, not {pooled} for one model. Per GPU without ZeRO: {t_dp} "
                       "({t_dp_ckpt} with checkpointing). ZeRO-1 shards the Adam moments and master weights: "
                       "{t_z1} / {t_z1_ckpt}. ZeRO-2 also shards the gradients: {t_z2} / {t_z2_ckpt}. ZeRO-3 also "
                       "shards the weights: {t_z3} / {t_z3_ckpt}. {fitting} of these eight layouts fit.",
        explanation_zh="更正后的加法本身没错：模型状态 {static} 加激活值（FlashAttention 下为 {act}，可见 40 GB "
                       "本身就偏高，见 N4）共 {need}。但结论是错的：数据并行的各张 GPU 不会合并显存，凡是没有切分的"
                       "部分每张卡都要完整保存一份，所以两张卡是每张 {gpu_mem}，而不是一个模型可用 {pooled}。"
                       "每卡需求：不用 ZeRO 为 {t_dp}（开检查点 {t_dp_ckpt}）；ZeRO-1 切分 Adam 动量和主权重："
                       "{t_z1} / {t_z1_ckpt}；ZeRO-2 再切分梯度：{t_z2} / {t_z2_ckpt}；ZeRO-3 再切分权重："
                       "{t_z3} / {t_z3_ckpt}。这八种配置中放得下的有 {fitting} 种。",
        source="Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) §3 and Fig. 1; PyTorch DistributedDataParallel "
               "keeps a full model replica on every rank.",
        scenarios=scenarios, figures=figures)


# ---- 2. LoRA's share of the parameters -----------------------------------------------------------

_LORA_RANKS = (8, 16, 64)
_LORA_TARGETS = (("qv", "q_proj,v_proj", "q,v", "q、v"), ("all", "all-linear", "all linear layers", "全部线性层"))


def note_lora_share(estimator: Estimator, *, model: str = "Llama-2-7B") -> Note:
    scenarios = {f"r{r}_{short}": _train(model, workload="lora", lora_rank=r, lora_targets=targets)
                 for short, targets, _, _ in _LORA_TARGETS for r in _LORA_RANKS}
    first = next(iter(scenarios))
    figures: Figures = {"total": (f"{model} parameters", f"{model} 参数量", "count", _v(first, "total_params"))}
    for short, _, en, zh in _LORA_TARGETS:
        for r in _LORA_RANKS:
            key = f"r{r}_{short}"
            figures[f"n_{key}"] = (f"r = {r}, {en}: trainable parameters", f"r = {r}，{zh}：可训练参数",
                                   "count", _v(key, "trainable_params"))
            figures[f"s_{key}"] = (f"r = {r}, {en}: share of all parameters", f"r = {r}，{zh}：占全部参数比例",
                                   "percent", _v(key, "trainable_params")
                                   / (_v(key, "total_params") + _v(key, "trainable_params")))
            figures[f"one_in_{key}"] = (f"r = {r}, {en}: one trainable parameter in",
                                        f"r = {r}，{zh}：每多少个参数中有一个可训练", "count",
                                        (_v(key, "total_params") + _v(key, "trainable_params"))
                                        / _v(key, "trainable_params"))
    return _note(
        estimator, id="N2", article=VIDEO,
        claim_zh="视频称 1/7000（约万分之 1.4），实际 LoRA 一般在 0.1%~1%（千分之一到百分之一）量级"
                 " … 参数量级：仅为原模型的 0.01% ~ 0.1%（7 B 模型约 7 M 参数）",
        claim_en="The video says 1/7000 (about 1.4 in 10,000); in practice LoRA is on the order of 0.1%–1% … "
                 "parameter scale: only 0.01%–0.1% of the original model (about 7 M parameters for a 7B model).",
        setting_en=f"{model}, PEFT LoRA at ranks r = 8, 16, 64 on q_proj,v_proj and on all linear layers of the "
                   f"decoder (q, k, v, o, gate, up, down; not the LM head). Share = trainable ÷ (base + trainable), "
                   f"as PEFT's print_trainable_parameters reports it.",
        setting_zh=f"{model}，PEFT LoRA，秩 r = 8、16、64，分别加在 q_proj,v_proj 与解码器全部线性层（q、k、v、o、"
                   f"gate、up、down，不含 LM head）。比例 = 可训练参数 ÷（基座 + 可训练参数），与 PEFT 的 "
                   f"print_trainable_parameters 一致。",
        verdict="depends",
        explanation_en="Neither range is a property of LoRA. Each adapted matrix of shape in × out adds r × (in + out) "
                       "parameters, so the share grows linearly with the rank and with the number of adapted "
                       "matrices. On {total} parameters, adapters on q and v give {n_r8_qv} trainable parameters at "
                       "r = 8 (one in {one_in_r8_qv}), {n_r16_qv} at r = 16 (one in {one_in_r16_qv}) and "
                       "{n_r64_qv} at r = 64 (one in {one_in_r64_qv}); on all linear layers {n_r8_all} (one in "
                       "{one_in_r8_all}), {n_r16_all} (one in {one_in_r16_all}) and {n_r64_all} (one in "
                       "{one_in_r64_all}). "
                       "The video's 1/7000 lies below the whole table, the correction's 0.1%–1% and the article's "
                       "0.01%–0.1% each cover only part of it, and 7 M is not the count of any common setting: "
                       "state the rank and the target modules instead.",
        explanation_zh="这两个区间都不是 LoRA 的固有属性。每个形状为 in × out 的被适配矩阵增加 r × (in + out) 个参数，"
                       "所以比例随秩和被适配矩阵的个数线性增长。在 {total} 个参数上，只加 q、v 时：r = 8 为 {n_r8_qv}"
                       "（每 {one_in_r8_qv} 个参数中一个），r = 16 为 {n_r16_qv}（每 {one_in_r16_qv} 个中一个），r = 64 为 "
                       "{n_r64_qv}（每 {one_in_r64_qv} 个中一个）；加在全部线性层时分别为 {n_r8_all}（每 {one_in_r8_all} "
                       "个中一个）、{n_r16_all}（每 {one_in_r16_all} 个中一个）和 {n_r64_all}（每 {one_in_r64_all} 个中"
                       "一个）。视频的 1/7000 低于整张表，更正中的 0.1%~1% 和文中的 0.01% ~ 0.1% 都只覆盖"
                       "其中一部分，7 M 也不对应任何常见设置：应当写明秩和目标模块。",
        source="Hu et al. 2021, LoRA (arXiv:2106.09685); PEFT print_trainable_parameters; torchtune LoRA tutorial "
               "(Llama-2-7B, r = 8 on q and v: 4,194,304 trainable parameters).",
        scenarios=scenarios, figures=figures)


# ---- 3. GQA and the KV cache --------------------------------------------------------------------

def note_kv_cache_gqa(estimator: Estimator) -> Note:
    mha, gqa = "Llama-2-7B", "Llama-3-8B"
    infer = Scenario(model=mha, workload="inference", prompt_len=2048, gen_len=2048, gpu="H100-80GB-SXM")
    scenarios = {"l2_b1": infer, "l2_b2": replace(infer, batch_size=2),
                 "l3_b1": replace(infer, model=gqa), "l3_b2": replace(infer, model=gqa, batch_size=2)}

    def per_token(key: str) -> Expr:
        return _v(key, "kv_cache") / _v(key, "context_tokens")

    figures: Figures = {
        "l2_tok": (f"{mha} KV-cache bytes per token (MHA)", f"{mha} 每 token KV Cache 字节数（MHA）", "count",
                   per_token("l2_b1")),
        "l3_tok": (f"{gqa} KV-cache bytes per token (GQA)", f"{gqa} 每 token KV Cache 字节数（GQA）", "count",
                   per_token("l3_b1")),
        "gqa_ratio": ("MHA ÷ GQA per token", "MHA ÷ GQA（每 token）", "ratio", per_token("l2_b1") / per_token("l3_b1")),
        "l2_kv1": (f"{mha}, batch 1", f"{mha}，batch 1", "bytes", _v("l2_b1", "kv_cache")),
        "l2_kv2": (f"{mha}, batch 2", f"{mha}，batch 2", "bytes", _v("l2_b2", "kv_cache")),
        "l3_kv1": (f"{gqa}, batch 1", f"{gqa}，batch 1", "bytes", _v("l3_b1", "kv_cache")),
        "l3_kv2": (f"{gqa}, batch 2", f"{gqa}，batch 2", "bytes", _v("l3_b2", "kv_cache")),
        "l2_growth": (f"{mha}: batch 2 ÷ batch 1", f"{mha}：batch 2 ÷ batch 1", "ratio",
                      _v("l2_b2", "kv_cache") / _v("l2_b1", "kv_cache")),
        "l3_growth": (f"{gqa}: batch 2 ÷ batch 1", f"{gqa}：batch 2 ÷ batch 1", "ratio",
                      _v("l3_b2", "kv_cache") / _v("l3_b1", "kv_cache")),
    }
    return _note(
        estimator, id="N3", article=VIDEO,
        claim_zh="视频假设 batch size 为 2 时 KV Cache 线性翻倍（2 → 4 GB），但实际中还受分组查询注意力（GQA） 等因素影响，"
                 "KV Cache 增长略小于线性 … 单 token 所需：2 × 32 × 4096 × 2 = 0.5 MB",
        claim_en="The video assumes the KV cache doubles linearly at batch size 2 (2 → 4 GB), but in practice "
                 "grouped-query attention (GQA) and other factors make it grow slightly less than linearly … "
                 "per token: 2 × 32 × 4096 × 2 = 0.5 MB.",
        setting_en=f"bf16 KV cache, 2,048 prompt + 2,048 generated tokens per sequence, batch 1 and 2; {mha} "
                   f"(multi-head attention, 32 KV heads) and {gqa} (grouped-query attention, 8 KV heads).",
        setting_zh=f"BF16 KV Cache，每条序列 2048 提示 + 2048 生成 token，batch 1 与 2；{mha}（多头注意力，32 个 KV 头）"
                   f"与 {gqa}（分组查询注意力，8 个 KV 头）。",
        verdict="wrong",
        explanation_en="The formula 2 × L × H × 2 assumes every layer caches one K and one V vector of the full "
                       "hidden width H, which holds only for multi-head attention. Under GQA the cached width is "
                       "KV heads × head_dim: {l2_tok} bytes per token for the MHA model, {l3_tok} for the GQA model, "
                       "{gqa_ratio} smaller. GQA shrinks each token's entry; it does not let sequences share "
                       "entries. Every sequence caches its own tokens, so doubling the batch multiplies the cache "
                       "by {l2_growth} for the MHA model ({l2_kv1} → {l2_kv2}) and by {l3_growth} for the GQA model "
                       "({l3_kv1} → {l3_kv2}). Growth is linear in batch and in context length; only prefix "
                       "sharing (several samples of one prompt, beam search, prefix caching) makes it sublinear.",
        explanation_zh="公式 2 × L × H × 2 假设每层为每个 token 缓存一个完整隐藏宽度 H 的 K 向量和 V 向量，这只对多头注意力"
                       "成立。GQA 下缓存宽度是 KV 头数 × head_dim：MHA 模型每 token {l2_tok} 字节，GQA 模型 {l3_tok} 字节，"
                       "前者是后者的 {gqa_ratio}。GQA 缩小的是每个 token 的条目，并不让不同序列共享条目。每条序列都缓存自己的"
                       " token，所以 batch 加倍时缓存乘以 {l2_growth}（MHA：{l2_kv1} → {l2_kv2}），GQA 模型同样乘以 "
                       "{l3_growth}（{l3_kv1} → {l3_kv2}）。KV Cache 随 batch 和上下文长度线性增长；只有序列之间共享"
                       "前缀（同一提示多次采样、beam search、前缀缓存）才会低于线性。",
        source="Ainslie et al. 2023, GQA (arXiv:2305.13245); Kwon et al. 2023, vLLM/PagedAttention (arXiv:2309.06180) "
               "§3; config.json of both models (num_key_value_heads).",
        scenarios=scenarios, figures=figures)


# ---- 4. the unexplained 40 GB of activations ------------------------------------------------------

def note_activations_40gb(estimator: Estimator, *, model: str = "Llama-2-7B") -> Note:
    scenarios = {f"{attn}_{ck}": _train(model, attention=attn, checkpointing=ck)
                 for attn in ("flash", "eager") for ck in ("none", "full")}
    figures: Figures = {
        "layer_flash": ("Saved per token per layer, FlashAttention (bytes)", "每 token 每层保存，FlashAttention（字节）",
                        "count", _v("flash_none", "layer_saved_per_token")),
        "layer_eager": ("Saved per token per layer, eager (bytes)", "每 token 每层保存，eager（字节）", "count",
                        _v("eager_none", "layer_saved_per_token")),
        "a_flash": ("Activations, FlashAttention", "激活值，FlashAttention", "bytes",
                    _v("flash_none", "training_activations")),
        "a_eager": ("Activations, eager attention", "激活值，eager 注意力", "bytes",
                    _v("eager_none", "training_activations")),
        "a_flash_ckpt": ("Activations, FlashAttention, full checkpointing", "激活值，FlashAttention，完全检查点",
                         "bytes", _v("flash_full", "training_activations")),
        "a_eager_ckpt": ("Activations, eager, full checkpointing", "激活值，eager，完全检查点", "bytes",
                         _v("eager_full", "training_activations")),
        "re_flash_ckpt": ("One layer recomputed in backward, FlashAttention", "反向时重算的一层，FlashAttention",
                          "bytes", _v("flash_full", "recompute_bytes")),
        "re_eager_ckpt": ("One layer recomputed in backward, eager", "反向时重算的一层，eager", "bytes",
                          _v("eager_full", "recompute_bytes")),
    }
    return _note(
        estimator, id="N4", article=VIDEO,
        claim_zh="4096 token 输入时约需 40 GB … 推导较复杂，直接记量级即可",
        claim_en="With a 4096-token input [activations] need about 40 GB … the derivation is complicated; just "
                 "remember the order of magnitude.",
        setting_en=f"{model}, full fine-tuning in bf16 mixed precision, batch 1 × 4,096 tokens; FlashAttention "
                   f"(PyTorch SDPA) versus eager attention, without and with full activation checkpointing. Saved "
                   f"activations only (model states excluded).",
        setting_zh=f"{model}，BF16 混合精度全参微调，batch 1 × 4096 token；FlashAttention（PyTorch SDPA）与 eager 注意力，"
                   f"分别不开/开完全激活检查点。只计保存的激活值（不含模型状态）。",
        verdict="depends",
        explanation_en="Activation memory follows a short formula: layers × tokens × bytes saved per token per layer, "
                       "plus the loss's fp32 log-probabilities (vocabulary × tokens). Per token, each Llama layer "
                       "saves the inputs of its two RMSNorms, Q, K, V, the attention output with its log-sum-exp, "
                       "and the gated MLP's intermediates: {layer_flash} bytes with FlashAttention. Eager attention "
                       "also keeps every head's S × S softmax probabilities (fp32 plus a bf16 copy): {layer_eager} "
                       "bytes per token per layer at this length, growing with S. At 4096 tokens that is {a_flash} "
                       "with FlashAttention and {a_eager} eager. Full checkpointing keeps only each layer's input, "
                       "{a_flash_ckpt} ({a_eager_ckpt} eager), plus one layer rebuilt during backward "
                       "({re_flash_ckpt}; {re_eager_ckpt} eager). The 40 GB is one point of this range, quoted "
                       "without the setting that produces it.",
        explanation_zh="激活显存可以用一个短公式算出：层数 × token 数 × 每 token 每层保存的字节数，再加上损失函数的 FP32 "
                       "对数概率（词表 × token 数）。每个 token 在每个 Llama 层保存两个 RMSNorm 的输入、Q、K、V、注意力"
                       "输出及其 log-sum-exp，以及门控 MLP 的中间结果：FlashAttention 下为 {layer_flash} 字节。eager "
                       "注意力还要保存每个头 S × S 的 softmax 概率（FP32 加一份 BF16 副本）：此长度下每 token 每层 "
                       "{layer_eager} 字节，并随 S 增长。4096 token 时 FlashAttention 为 {a_flash}，eager 为 {a_eager}。"
                       "完全检查点只保留每层输入：{a_flash_ckpt}（eager {a_eager_ckpt}），反向时再加上重算的一层"
                       "（{re_flash_ckpt}；eager {re_eager_ckpt}）。40 GB 只是这个范围中的一个点，而且没有给出对应设置。",
        source="Korthikanti et al. 2022 (arXiv:2205.05198): s·b·h·(34 + 5·a·s/h) bytes per GPT layer with dropout; "
               "reportgen's activation terms re-derive it for Llama (gated MLP, RMSNorm, no dropout, fp32 softmax in "
               "eager attention) and are checked against measured peaks (Validation).",
        scenarios=scenarios, figures=figures)


# ---- 5. mixed precision does not shrink model states --------------------------------------------

def note_mixed_precision(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    scenarios = {"fp32": _train(model, precision="fp32"), "mixed": _train(model, precision="bf16-mixed"),
                 "bf16": _train(model, precision="bf16")}

    def per_param(key: str) -> Expr:
        return _states(key) / _v(key, "model_params")

    figures: Figures = {
        "st_fp32": ("Model states, fp32", "模型状态，FP32", "bytes", _states("fp32")),
        "st_mixed": ("Model states, bf16 mixed precision", "模型状态，BF16 混合精度", "bytes", _states("mixed")),
        "ms_mixed": ("fp32 master weights + Adam moments (mixed)", "FP32 主权重 + Adam 动量（混合精度）", "bytes",
                     _v("mixed", "master_weights") + _v("mixed", "optimizer_states")),
        "bpp_fp32": ("Bytes per parameter, fp32", "每参数字节，FP32", "count", per_param("fp32")),
        "bpp_mixed": ("Bytes per parameter, bf16 mixed precision", "每参数字节，BF16 混合精度", "count",
                      per_param("mixed")),
        "bpp_bf16": ("Bytes per parameter, pure bf16 (bf16 Adam states)", "每参数字节，纯 BF16（BF16 Adam 状态）",
                     "count", per_param("bf16")),
        "act_fp32": ("Activations, fp32", "激活值，FP32", "bytes", _v("fp32", "training_activations")),
        "act_mixed": ("Activations, bf16 mixed precision", "激活值，BF16 混合精度", "bytes",
                      _v("mixed", "training_activations")),
    }
    return _note(
        estimator, id="N5", article=PPO_ARTICLE,
        claim_zh="把权重和梯度各减半到 2N，这样模型状态就降到 14+14+42=70GB，勉强挤进 80GB 的舞台"
                 " … 为了把“16N“压缩成”10N“ … 混合精度相当于把“16 系行李”减少到“10~12 系”",
        claim_en="[With BF16 mixed precision] weights and gradients are each halved to 2N, so the model states drop "
                 "to 14 + 14 + 42 = 70 GB, just squeezing into 80 GB … to compress 16N into 10N … mixed precision "
                 "reduces the 16-series luggage to the 10–12 series.",
        setting_en=f"{model} (7 × 10^9 parameters), full fine-tuning with AdamW, batch 1 × 4,096 tokens, "
                   f"FlashAttention: fp32; bf16 mixed precision (bf16 weights and gradients, fp32 master weights "
                   f"and moments); pure bf16 (weights, gradients and AdamW states in bf16, no master copy).",
        setting_zh=f"{model}（7 × 10^9 参数），AdamW 全参微调，batch 1 × 4096 token，FlashAttention：FP32；BF16 混合精度"
                   f"（BF16 权重与梯度，FP32 主权重与动量）；纯 BF16（权重、梯度、AdamW 状态均为 BF16，无主权重）。",
        verdict="wrong",
        explanation_en="With Adam, mixed precision halves the weights and gradients but adds an fp32 master copy next "
                       "to the two fp32 moments; those three alone take {ms_mixed}. In all that is {bpp_mixed} bytes "
                       "per parameter, the same as fp32 training ({bpp_fp32}): for this model {st_mixed} with "
                       "mixed precision and {st_fp32} in fp32, not 70 GB, which does not fit the 80 GB card either. "
                       "The article's 42 GB cannot hold the moments and the master copy. Mixed precision saves "
                       "activation memory ({act_fp32} in fp32, {act_mixed} mixed) and time, not model-state memory; "
                       "going lower takes low-precision optimizer states, e.g. pure bf16 AdamW at {bpp_bf16} bytes "
                       "per parameter, at some risk to convergence.",
        explanation_zh="使用 Adam 时，混合精度把权重和梯度减半，但在两份 FP32 动量之外还要一份 FP32 主权重，仅这三项就占 "
                       "{ms_mixed}。合计每参数 {bpp_mixed} 字节，与纯 FP32 训练（{bpp_fp32}）相同：该模型混合精度下模型"
                       "状态为 {st_mixed}，FP32 下为 {st_fp32}，不是 70GB，也放不进 80GB 的卡。文中给 Adam 的 42GB 装不下"
                       "动量和主权重。混合精度省的是激活显存（FP32 {act_fp32}，混合精度 {act_mixed}）和时间，而不是模型"
                       "状态；要更低只能用低精度优化器状态，例如纯 BF16 AdamW 每参数 {bpp_bf16} 字节，但有收敛风险。",
        source="Micikevicius et al. 2018, Mixed Precision Training (arXiv:1710.03740); Rajbhandari et al. 2020, ZeRO "
               "§3.1: 2Ψ + 2Ψ + KΨ = 16Ψ bytes with K = 12 for mixed-precision Adam.",
        scenarios=scenarios, figures=figures)


# ---- 6. the ZeRO formula ------------------------------------------------------------------------

def note_zero_formula(estimator: Estimator, *, model: str = GENERIC_7B, num_gpus: int = 8) -> Note:
    scenarios = {f"z{stage}": _train(model, num_gpus=num_gpus, zero_stage=stage) for stage in range(4)}

    def per_param(expr: Expr, key: str) -> Expr:
        return expr / _v(key, "model_params")

    def sharded(expr: Expr, key: str) -> Expr:  # bytes per parameter before division by P
        return expr * _v(key, "dp_size") / _v(key, "model_params")

    figures: Figures = {f"m_{k}": (f"Model states per GPU, {label}", f"每卡模型状态，{label_zh}", "bytes", _states(k))
                        for k, label, label_zh in (("z0", "no ZeRO", "不用 ZeRO"), ("z1", "ZeRO-1", "ZeRO-1"),
                                                   ("z2", "ZeRO-2", "ZeRO-2"), ("z3", "ZeRO-3", "ZeRO-3"))}
    figures.update({
        "z1_rep": ("ZeRO-1: replicated bytes per parameter", "ZeRO-1：每参数不切分字节", "count",
                   per_param(_v("z1", "weights") + _v("z1", "gradients"), "z1")),
        "z1_sh": ("ZeRO-1: sharded bytes per parameter (× P)", "ZeRO-1：每参数切分字节（× P）", "count",
                  sharded(_v("z1", "optimizer_states") + _v("z1", "master_weights"), "z1")),
        "z2_rep": ("ZeRO-2: replicated bytes per parameter", "ZeRO-2：每参数不切分字节", "count",
                   per_param(_v("z2", "weights"), "z2")),
        "z2_sh": ("ZeRO-2: sharded bytes per parameter (× P)", "ZeRO-2：每参数切分字节（× P）", "count",
                  sharded(_v("z2", "gradients") + _v("z2", "optimizer_states") + _v("z2", "master_weights"), "z2")),
        "z3_sh": ("ZeRO-3: sharded bytes per parameter (× P)", "ZeRO-3：每参数切分字节（× P）", "count",
                  sharded(_states("z3"), "z3")),
    })
    return _note(
        estimator, id="N6", article=PPO_ARTICLE,
        claim_zh=r"M_{\text{ZeRO}} = 2N + \frac{12N}{P} \quad(\text{Adam + BF16混合精度})"
                 " … 梯度 + 优化器状态共 12N 字节被切成 P 片，每卡只拿 1/P … 单卡显存趋于 2N 下限",
        claim_en="M_ZeRO = 2N + 12N/P (Adam + BF16 mixed precision) … gradients and optimizer states, 12N bytes in "
                 "all, are cut into P shards, each GPU keeping 1/P … per-GPU memory tends to a floor of 2N.",
        setting_en=f"{model}, bf16 mixed-precision AdamW (K = 12 in the ZeRO paper), P = {num_gpus} data-parallel "
                   f"GPUs; model states per GPU (weights, gradients, Adam moments, fp32 master weights), ZeRO "
                   f"stages 0–3.",
        setting_zh=f"{model}，BF16 混合精度 AdamW（ZeRO 论文中 K = 12），P = {num_gpus} 张数据并行 GPU；每卡模型状态"
                   f"（权重、梯度、Adam 动量、FP32 主权重），ZeRO 0–3 级。",
        verdict="wrong",
        explanation_en="The formula matches no ZeRO stage: its 12N is the master copy and moments alone, yet it "
                       "also puts the gradients among the shards. Per GPU, for N parameters (coefficients computed "
                       "here from the estimator's sharded terms): ZeRO-1 shards the optimizer states, "
                       "{z1_rep}·N + {z1_sh}·N/P; ZeRO-2 also the gradients, {z2_rep}·N + {z2_sh}·N/P; ZeRO-3 "
                       "also the weights, {z3_sh}·N/P. At P = {p} that is {m_z1}, {m_z2} and {m_z3} per GPU, "
                       "against {m_z0} without ZeRO. A 2N floor exists only for ZeRO-2 (the bf16 weights stay "
                       "replicated); ZeRO-3 has none and tends to zero as P grows, at the price of gathering "
                       "each layer's weights in every forward and backward pass.",
        explanation_zh="这个公式与 ZeRO 的任何一级都不符：它的 12N 只是主权重加动量，却又把梯度算进被切分的部分。对 N 个"
                       "参数，每卡（系数由估算器的切分项算出）：ZeRO-1 切分优化器状态，{z1_rep}·N + {z1_sh}·N/P；ZeRO-2 "
                       "再切梯度，{z2_rep}·N + {z2_sh}·N/P；ZeRO-3 再切权重，{z3_sh}·N/P。P = {p} 时每卡分别为 "
                       "{m_z1}、{m_z2}、{m_z3}，不用 ZeRO 为 {m_z0}。2N 下限只对 ZeRO-2 成立（BF16 权重仍每卡一份）；"
                       "ZeRO-3 没有下限，随 P 增大趋于零，代价是每次前向和反向都要聚合每层权重。",
        source="Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) Fig. 1: P_os 4Ψ + KΨ/N_d, P_os+g 2Ψ + (2+K)Ψ/N_d, "
               "P_os+g+p (4+K)Ψ/N_d, K = 12 (7.5B at N_d = 64: 31.4 / 16.6 / 1.9 GB).",
        scenarios=scenarios,
        figures={**figures, "p": ("Data-parallel GPUs P", "数据并行卡数 P", "gpus", _v("z1", "dp_size"))})


# ---- 7. what gradient checkpointing keeps -------------------------------------------------------

def note_checkpointing(estimator: Estimator, *, model: str = "Llama-2-7B") -> Note:
    scenarios = {"none": _train(model), "full": _train(model, checkpointing="full")}
    figures: Figures = {
        "act_none": ("Activations, no checkpointing", "激活值，无检查点", "bytes", _v("none", "training_activations")),
        "act_ckpt": ("Activations, full checkpointing", "激活值，完全检查点", "bytes",
                     _v("full", "training_activations")),
        "act_ratio": ("Checkpointed ÷ not checkpointed", "检查点 ÷ 无检查点", "percent",
                      _v("full", "training_activations") / _v("none", "training_activations")),
        "kept_tok": ("Kept per token over all layers, checkpointed (bytes)", "检查点下每 token 全部层保存（字节）",
                     "count", _v("full", "saved_per_token")),
        "hidden": ("Hidden size D", "隐藏维度 D", "count", _v("full", "hidden_size")),
        "recompute": ("One layer recomputed during backward", "反向时重算的一层", "bytes",
                      _v("full", "recompute_bytes")),
    }
    return _note(
        estimator, id="N7", article=PPO_ARTICLE,
        claim_zh="这样激活显存能从 O(L × S × B × D) 降到 O(L × S × B)，非常适合长序列任务",
        claim_en="This reduces activation memory from O(L × S × B × D) to O(L × S × B), ideal for long sequences.",
        setting_en=f"{model}, full fine-tuning in bf16 mixed precision, batch 1 × 4,096 tokens, FlashAttention; "
                   f"no checkpointing versus full activation checkpointing (PyTorch, non-reentrant).",
        setting_zh=f"{model}，BF16 混合精度全参微调，batch 1 × 4096 token，FlashAttention；无检查点与完全激活检查点"
                   f"（PyTorch 非重入式）对比。",
        verdict="wrong",
        explanation_en="Full checkpointing keeps each layer's input, a hidden-state vector of D values per token, and "
                       "drops the rest, so saved activations stay O(L × S × B × D); only the constant shrinks. Here "
                       "{act_none} without and {act_ckpt} with checkpointing ({act_ratio} of it): {kept_tok} bytes "
                       "per token with D = {hidden}. During backward each layer is recomputed in turn, adding one "
                       "layer's working set ({recompute}) to the peak. The price is one extra forward pass per "
                       "training step (see the source for its share of the compute).",
        explanation_zh="完全检查点保留每一层的输入（每个 token 一个 D 维隐藏状态向量），丢弃其余部分，所以保存的激活仍是 "
                       "O(L × S × B × D)，只是常数变小。这里不开检查点为 {act_none}，开启后为 {act_ckpt}（为前者的 "
                       "{act_ratio}）：D = {hidden} 时每 token {kept_tok} 字节。反向传播时逐层重算，峰值还要加上一层的"
                       "工作集（{recompute}）。代价是每个训练步多一次前向计算（所占算力比例见出处）。",
        source="Chen et al. 2016, Sublinear Memory Cost (arXiv:1604.06174); Korthikanti et al. 2022: full recompute "
               "keeps 2·s·b·h bytes per layer; compute: forward ≈ 2PD, backward ≈ 4PD FLOPs (Kaplan et al. 2020), so "
               "recomputing the forward adds about 2/6 ≈ 33%.",
        scenarios=scenarios, figures=figures)


# ---- 8. Mixtral 8x7B ----------------------------------------------------------------------------

def note_mixtral(estimator: Estimator, *, model: str = "Mixtral-8x7B", gpu: str = "H100-80GB-SXM") -> Note:
    infer = Scenario(model=model, workload="inference", prompt_len=2048, gen_len=2048, gpu=gpu)
    scenarios = {"serve": infer, "serve_tp2": replace(infer, num_gpus=2, tp_size=2),
                 "train": _train(model, gpu=gpu)}
    active = _v("serve", "active_params")
    figures: Figures = {
        "total": ("Total parameters", "总参数量", "count", _v("serve", "total_params")),
        "active": ("Parameters used per token", "每 token 激活参数量", "count", active),
        "active_share": ("Active ÷ total", "激活 ÷ 总量", "percent", active / _v("serve", "total_params")),
        "weights": ("bf16 weights", "BF16 权重", "bytes", _v("serve", "weights")),
        "gpu_mem": ("Memory of one GPU", "单卡显存", "bytes", _v("serve", "gpu_memory_bytes")),
        "t_1gpu": ("Inference, one GPU, device total", "推理，单卡设备总量", "bytes", _v("serve", "device_total")),
        "t_tp2": ("Inference, two GPUs (tensor parallel), per GPU", "推理，两卡张量并行，每卡", "bytes",
                  _v("serve_tp2", "device_total")),
        "train_states": ("Full fine-tuning model states", "全参微调模型状态", "bytes", _states("train")),
        "train_bpp": ("Full fine-tuning bytes per parameter", "全参微调每参数字节", "count",
                      _states("train") / _v("train", "model_params")),
    }
    return _note(
        estimator, id="N8", article=VIDEO,
        claim_zh="总参数量 32 B，但每次只激活 3 B（每个 token 走部分专家） … 因此，32 B 模型需要的显存与相同总参数量的 "
                 "Dense 模型一致（约 64 GB 权重 + KV Cache） … 训练时更耗显存：需要额外的负载均衡损失防止专家坍缩",
        claim_en="32B parameters in total, but only 3B active at a time (each token goes through some of the "
                 "experts) … so a 32B model needs the same memory as a dense model of the same total size (about "
                 "64 GB of weights + KV cache) … training needs even more memory: an extra load-balancing loss "
                 "keeps the experts from collapsing.",
        setting_en=f"{model} (8 experts per layer, top-2 routing), bf16 weights and KV cache; inference at batch 1 "
                   f"with 2,048 + 2,048 tokens on one {gpu} and on two with tensor parallelism; full fine-tuning "
                   f"with bf16 mixed-precision AdamW for the model states.",
        setting_zh=f"{model}（每层 8 个专家，top-2 路由），BF16 权重与 KV Cache；batch 1、2048 + 2048 token 的推理，分别在"
                   f"一张 {gpu} 和两张（张量并行）上；全参微调用 BF16 混合精度 AdamW 计算模型状态。",
        verdict="wrong",
        explanation_en="The principle is right: every expert must be resident, so memory follows the total, not the "
                       "active, parameter count. The numbers are not Mixtral's. Only the feed-forward blocks are "
                       "replicated per expert (attention, embeddings and norms are shared), so the model has "
                       "{total} parameters and uses {active} per token ({active_share}), not 32B and 3B. Its bf16 "
                       "weights alone take {weights}, more than one {gpu_mem} card holds: one GPU would need "
                       "{t_1gpu}, two with tensor parallelism {t_tp2} each. Training costs more because every "
                       "expert is trained at {train_bpp} bytes per parameter ({train_states} of model states); the "
                       "load-balancing loss itself is a negligible scalar.",
        explanation_zh="原理没错：所有专家都必须常驻显存，所以显存取决于总参数量而不是激活参数量。但数字不是 Mixtral 的。"
                       "只有前馈层按专家复制（注意力、嵌入和归一化层共享），所以模型共有 {total} 个参数，每 token 使用 "
                       "{active} 个（{active_share}），不是 32B 和 3B。仅 BF16 权重就要 {weights}，超过单卡 {gpu_mem}："
                       "单卡需要 {t_1gpu}，两卡张量并行每卡 {t_tp2}。训练更耗显存是因为每个专家都以每参数 {train_bpp} "
                       "字节训练（模型状态 {train_states}）；负载均衡损失本身只是一个可忽略的标量。",
        source="Mistral AI, Mixtral of experts (2023-12-11): 46.7B total, 12.9B used per token; Jiang et al. 2024 "
               "(arXiv:2401.04088); config.json (num_local_experts 8, num_experts_per_tok 2).",
        scenarios=scenarios, figures=figures)


# ---- 9. RLHF: who builds a KV cache -------------------------------------------------------------

def _ppo_rollout(model: str = GENERIC_7B) -> Scenario:
    return _train(model, batch_size=8, prompt_len=1024, gen_len=1024)


_PPO_SETTING_EN = ("PPO with {model} actor, critic, reference and reward models (critic and reward with a scalar "
                   "value head), rollout batch 8 sequences × (1,024 prompt + 1,024 generated tokens), bf16 KV "
                   "cache and weights, FlashAttention; roles laid out as the estimator's PPO preset does.")
_PPO_SETTING_ZH = ("PPO，actor、critic、reference、reward 均为 {model}（critic 与 reward 用标量价值头），rollout batch 8 "
                   "条序列 ×（1024 提示 + 1024 生成 token），BF16 KV Cache 与权重，FlashAttention；各角色按估算器 PPO "
                   "预设的方式配置。")


def note_rlhf_kv_cache(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    actor = _ppo_rollout(model)
    roles = _ppo_roles(actor)
    serve = Scenario(model=model, workload="inference", batch_size=actor.batch_size, prompt_len=actor.prompt_len,
                     gen_len=actor.gen_len, gpu=actor.gpu)
    scenarios = {**roles, "serve": serve}
    figures: Figures = {f"kv_{r}": (f"KV cache, {r}", f"KV Cache，{r}", "bytes", _v(r, "kv_cache")) for r in roles}
    figures.update({
        "kv_ratio": ("All roles' KV cache ÷ serving the same batch", "全部角色 KV Cache ÷ 同 batch 普通推理", "ratio",
                     _sum(roles, "kv_cache") / _v("serve", "kv_cache")),
        "fwd_reference": ("Reference scoring pass, working set", "reference 打分前向的工作集", "bytes",
                          _v("reference", "forward_transient_bytes")),
    })
    return _note(
        estimator, id="N9", article=VIDEO,
        claim_zh="其中 Actor 和 Reference 都需要推理，产生的 KV Cache 数量是常规推理的 2-3 倍 … PPO 需要同时保存大量"
                 "采样数据的 KV Cache 用于后续训练更新",
        claim_en="Actor and Reference both run inference, so the KV cache is 2–3 times that of ordinary inference … "
                 "PPO also has to keep the KV cache of many samples for the later training update.",
        setting_en=_PPO_SETTING_EN.format(model=model) + " Compared with serving the same batch.",
        setting_zh=_PPO_SETTING_ZH.format(model=model) + "与同 batch 的普通推理对比。",
        verdict="wrong",
        explanation_en="Only the actor generates during rollout, so only the actor builds a KV cache ({kv_actor}). "
                       "The reference, reward and critic each score the finished sequences in one forward pass over "
                       "all tokens at once, which needs no cache ({kv_reference}, {kv_reward}, {kv_critic}); their "
                       "cost is the forward working set, e.g. {fwd_reference} for the reference's log-probabilities. "
                       "Summed over all four roles the cache is {kv_ratio} that of serving the same batch. "
                       "Nor is it kept for the update: after generation the cache is freed, and training recomputes "
                       "everything from the token ids, log-probabilities and values.",
        explanation_zh="rollout 阶段只有 actor 在生成，所以只有 actor 产生 KV Cache（{kv_actor}）。reference、reward 和 "
                       "critic 都是对生成完的序列做一次覆盖全部 token 的前向打分，不需要缓存（{kv_reference}、"
                       "{kv_reward}、{kv_critic}）；它们的开销是前向工作集，例如 reference 计算对数概率需要 "
                       "{fwd_reference}。四个角色的 KV Cache 合计是同 batch 普通推理的 {kv_ratio}。KV Cache 也不会"
                       "留到训练更新：生成结束即释放，训练时由 token id、对数概率和价值重新计算。",
        source="Ouyang et al. 2022, InstructGPT (arXiv:2203.02155); OpenRLHF / TRL PPO trainers: generation with the "
               "actor, then make_experience scores reference, reward and critic in single forward passes.",
        scenarios=scenarios, figures=figures)


# ---- 10. frozen models save 87.5 %, not 70 % ----------------------------------------------------

def note_frozen_saving(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    scenarios = {"trained": _train(model),
                 "frozen": _train(model, workload="frozen", weight_dtype="bf16")}
    figures: Figures = {
        "bpp_trained": ("Trained: bytes per parameter", "训练：每参数字节", "count",
                        _states("trained") / _v("trained", "model_params")),
        "bpp_frozen": ("Frozen: bytes per parameter", "冻结：每参数字节", "count",
                       _states("frozen") / _v("frozen", "model_params")),
        "saving": ("Model-state memory saved by freezing", "冻结节省的模型状态显存", "percent",
                   (_states("trained") - _states("frozen")) / _states("trained")),
        "st_trained": ("Model states, trained", "模型状态，训练", "bytes", _states("trained")),
        "st_frozen": ("Model states, frozen", "模型状态，冻结", "bytes", _states("frozen")),
    }
    return _note(
        estimator, id="N10", article=PPO_ARTICLE,
        claim_zh="相比之下，它们只需要权重和前向过程中的激活缓存，不需要梯度，更不需要优化器状态。这一下子就省掉了约 70% 的"
                 "训练显存开销",
        claim_en="By comparison they only need weights and the forward pass's activation cache, no gradients and "
                 "certainly no optimizer states. That saves about 70% of the training memory at a stroke.",
        setting_en=f"{model}: a trained copy (bf16 mixed-precision AdamW) versus a frozen copy (bf16 weights, no "
                   f"gradients or optimizer states); model states only.",
        setting_zh=f"{model}：训练副本（BF16 混合精度 AdamW）与冻结副本（BF16 权重，无梯度和优化器状态）；只计模型状态。",
        verdict="wrong",
        explanation_en="A model trained with mixed-precision Adam holds {bpp_trained} bytes per parameter (bf16 "
                       "weights and gradients, an fp32 master copy and two fp32 moments); a frozen bf16 model holds "
                       "only its weights, {bpp_frozen} bytes per parameter. Freezing saves {saving} of the "
                       "model-state memory ({st_trained} → {st_frozen} for Generic-7B), not 70%. The frozen roles "
                       "also keep no activations for backward (see N19).",
        explanation_zh="用混合精度 Adam 训练的模型每参数占 {bpp_trained} 字节（BF16 权重和梯度、FP32 主权重和两份 FP32 "
                       "动量）；冻结的 BF16 模型只有权重，每参数 {bpp_frozen} 字节。冻结节省的是 {saving} 的模型状态显存"
                       "（Generic-7B：{st_trained} → {st_frozen}），而不是 70%。冻结的角色也不为反向保存激活（见 N19）。",
        source="Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) §3.1: mixed-precision Adam holds 2Ψ + 2Ψ + KΨ "
               "bytes with K = 12; a frozen model keeps only its working weights.",
        scenarios=scenarios, figures=figures)


# ---- 11. the two PPO sizings --------------------------------------------------------------------

def note_ppo_two_sizings(estimator: Estimator, *, model: str = GENERIC_7B, small: str = "Qwen2.5-0.5B") -> Note:
    actor = _ppo_rollout(model)
    big = _ppo_roles(actor)
    mini = _ppo_roles(actor, critic_model=small, reward_model=small)
    scenarios = {**{f"a_{r}": s for r, s in big.items()}, "b_critic": mini["critic"], "b_reward": mini["reward"]}
    b_roles = ("a_actor", "b_critic", "a_reference", "b_reward")
    figures: Figures = {f"a_{r}": (f"(a) {r}", f"(a) {r}", "bytes", _states(f"a_{r}")) for r in big}
    figures["a_total"] = ("(a) four 7B models, total", "(a) 四个 7B 模型合计", "bytes",
                          sum((_states(f"a_{r}") for r in list(big)[1:]), _states("a_actor")))
    figures["b_critic"] = (f"(b) critic, {small}", f"(b) critic，{small}", "bytes", _states("b_critic"))
    figures["b_reward"] = (f"(b) reward, {small}", f"(b) reward，{small}", "bytes", _states("b_reward"))
    figures["b_total"] = ("(b) 7B actor and reference, small critic and reward, total",
                          "(b) 7B actor 与 reference、小 critic 与 reward 合计", "bytes",
                          sum((_states(k) for k in b_roles[1:]), _states(b_roles[0])))
    figures["a_actor_opt"] = ("Actor: Adam moments + master weights", "actor：Adam 动量 + 主权重", "bytes",
                              _v("a_actor", "optimizer_states") + _v("a_actor", "master_weights"))
    return _note(
        estimator, id="N11", article=f"{VIDEO}, {PPO_ARTICLE}",
        claim_zh="| Critic 模型 | 需要训练 | 112 GB | … | 合计 | 252 GB | … Critic 是较小的价值网络（如 0.4B），Reward 则是"
                 "更小的奖励模型（如 0.3B） … Ref 约占 14GB（按 BF16），Reward 只有不到 1GB，而同时刻的 Actor 光是优化器"
                 "状态就扛着 42GB",
        claim_en="[Video] Critic model: trained, 112 GB … total 252 GB (Actor 112, Critic 112, Reference 14, Reward "
                 "14) … [PPO article] the Critic is a smaller value network (e.g. 0.4B), the Reward model smaller "
                 "still (e.g. 0.3B) … Ref takes about 14 GB (BF16), Reward under 1 GB, while the Actor's optimizer "
                 "states alone carry 42 GB.",
        setting_en=f"PPO model states (weights, gradients, Adam moments, master weights): trained actor and critic "
                   f"with bf16 mixed-precision AdamW, frozen bf16 reference and reward; critic and reward with a "
                   f"scalar value head. (a) the video: four {model} models. (b) the article: {model} actor and "
                   f"reference, {small} as critic and as reward model ({small} is the catalog model closest to "
                   f"the article's 0.4B and 0.3B).",
        setting_zh=f"PPO 模型状态（权重、梯度、Adam 动量、主权重）：actor 与 critic 用 BF16 混合精度 AdamW 训练，reference "
                   f"与 reward 冻结为 BF16；critic 与 reward 用标量价值头。(a) 视频：四个 {model}。(b) 文章：actor 与 "
                   f"reference 为 {model}，critic 与 reward 都用 {small}（目录中最接近文中 0.4B、0.3B 的模型）。",
        verdict="depends",
        explanation_en="The two articles size different systems, and both static totals are easy to compute. With "
                       "four models of the actor's size: {a_total} (actor {a_actor}, critic {a_critic}, reference "
                       "{a_reference}, reward {a_reward}; critic and reward replace the LM head with a scalar value "
                       "head, hence slightly less than the video's 112 and 14). With a small critic and reward: "
                       "{b_total} (critic {b_critic}, reward {b_reward}). The article's 42 GB for the actor's optimizer states "
                       "should be {a_actor_opt}, and its actor total is the mixed-precision error of N5. Neither "
                       "total is a per-GPU requirement: the trained roles add activations, the actor a KV cache "
                       "during rollout, and the roles can be sharded with ZeRO or placed on separate GPUs.",
        explanation_zh="两篇文章算的是不同的系统，两种静态显存合计都容易算出。四个与 actor 同尺寸的模型时为 {a_total}（actor {a_actor}，"
                       "critic {a_critic}，reference {a_reference}，reward {a_reward}；critic 和 reward 用标量价值头替换"
                       " LM head，所以略小于视频中的 112 和 14）。小 critic 与 reward 时为 {b_total}（critic {b_critic}，"
                       "reward {b_reward}）。文中 actor 优化器状态的 42GB 应为 {a_actor_opt}，其 actor 合计就是 N5 所说"
                       "的混合精度错误。两个合计都不是每卡需求：训练角色还有激活值，actor 在 rollout 时还有 KV Cache，"
                       "各角色也可以用 ZeRO 切分或放在不同 GPU 上。",
        source="Ouyang et al. 2022, InstructGPT (arXiv:2203.02155): 175B policy with a 6B reward model and value "
               "function; DeepSpeed-Chat and OpenRLHF PPO role layouts; ZeRO §3.1 for the per-parameter bytes.",
        scenarios=scenarios, figures=figures)


# ---- 12. units ----------------------------------------------------------------------------------

def note_units(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    infer = Scenario(model=model, workload="inference", prompt_len=2048, gen_len=2048, gpu="H100-80GB-SXM")
    scenarios = {"h100": infer, "a100": replace(infer, gpu="A100-80GB")}
    figures: Figures = {
        "weights": (f"{model} bf16 weights", f"{model} BF16 权重", "bytes", _v("h100", "weights")),
        "h100_mib": ("H100-80GB-SXM total in nvidia-smi (MiB)", "H100-80GB-SXM 在 nvidia-smi 中的总量（MiB）", "count",
                     _v("h100", "gpu_memory_bytes") / MiB),
        "h100_total": ("H100-80GB-SXM total", "H100-80GB-SXM 总量", "bytes", _v("h100", "gpu_memory_bytes")),
        "a100_total": ("A100-80GB total", "A100-80GB 总量", "bytes", _v("a100", "gpu_memory_bytes")),
        "h100_usable": ("H100-80GB-SXM less the CUDA context", "H100-80GB-SXM 减去 CUDA context", "bytes",
                        _v("h100", "gpu_memory_bytes") - (_v("h100", "device_total") - _v("h100", "reserved_peak"))),
    }
    return _note(
        estimator, id="N12", article=VIDEO,
        claim_zh="| 1 GB | 1024 MB ≈ 10 亿字节 | … 例：7 B 模型，BF 16（2 字节） → 7 × 10⁹ × 2 = 14 GB",
        claim_en="1 GB = 1024 MB ≈ 1 billion (10 亿) bytes … example: a 7B model in BF16 (2 bytes) → 7 × 10⁹ × 2 = "
                 "14 GB.",
        setting_en=f"{model} bf16 weights; H100-80GB-SXM and A100-80GB memory as nvidia-smi reports it (catalog "
                   f"values); the estimator's CUDA-context assumption.",
        setting_zh=f"{model} BF16 权重；H100-80GB-SXM 与 A100-80GB 在 nvidia-smi 中报告的显存（目录值）；估算器的 "
                   f"CUDA context 假设。",
        verdict="imprecise",
        explanation_en="The table equates two different units: 1024 MB is one GiB (binary, a power of two), while "
                       "about 10 亿 bytes is one GB (decimal), and the GiB is the larger. The weights 7 × 10⁹ × 2 "
                       "bytes are {weights}, visibly different numbers in the two units, so every size should name "
                       "its unit. GPUs are sold with round, decimal-looking sizes, but programs see what nvidia-smi "
                       "reports: an H100-80GB-SXM shows {h100_mib} MiB ({h100_total}), an A100-80GB {a100_total}. "
                       "The CUDA context takes its share before any tensor, leaving about {h100_usable} on the H100.",
        explanation_zh="表中把两种单位等同了：1024 MB 是 1 GiB（二进制，2 的幂），而约 10 亿字节是 1 GB（十进制），GiB 更大。"
                       "7 × 10⁹ × 2 字节的权重是 {weights}，两种单位下的数字明显不同，所以每个数值都应写明单位。GPU 以看似"
                       "整数的十进制容量出售，但程序看到的是 nvidia-smi 报告的总量：H100-80GB-SXM 为 {h100_mib} MiB"
                       "（{h100_total}），A100-80GB 为 {a100_total}。CUDA context 在任何张量之前先占一部分，H100 上剩下"
                       "约 {h100_usable}。",
        source="IEC 80000-13 (binary prefixes); nvidia-smi totals in presets/gpus.yaml (measured, with links); "
               "pytorch/pytorch#107667 on the CUDA context size.",
        scenarios=scenarios, figures=figures)


# ---- 13. the demo code --------------------------------------------------------------------------

def note_demo_code(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    scenarios = {"actor": _train(model)}
    figures: Figures = {
        "bpp": ("Bytes per trained parameter", "每个训练参数的字节数", "count",
                _states("actor") / _v("actor", "model_params")),
        "omitted_bpp": ("Left out by estimate_gb: gradients + master weights, per parameter",
                        "estimate_gb 漏掉的梯度 + 主权重（每参数）", "count",
                        (_v("actor", "gradients") + _v("actor", "master_weights")) / _v("actor", "model_params")),
        "omitted": ("Left out for the 7B actor", "7B actor 被漏掉的显存", "bytes",
                    _v("actor", "gradients") + _v("actor", "master_weights")),
    }
    return _note(
        estimator, id="N13", article=PPO_ARTICLE,
        claim_zh="adv = rewards + beta * kl … loss = -torch.mean(torch.clamp(ratio, 0.8, 1.2) * adv.detach()) … "
                 "opt = optim.Adam(actor.parameters(), lr=3e-4) … \"optimizer_gb\": total * 8 / 1e9 … "
                 "def estimate_gb按 BF16 权重（2 字节）+ Adam 优化器（8 字节）估算显存",
        claim_en="The demo code: adv = rewards + beta * kl … loss = -mean(clamp(ratio, 0.8, 1.2) * adv) … "
                 "opt = Adam(actor.parameters()) … optimizer_gb = total * 8 / 1e9 … estimate_gb estimates memory as "
                 "BF16 weights (2 bytes) + Adam optimizer (8 bytes).",
        setting_en=f"The article's PPO demo (ppo_step, main, estimate_gb); memory figures for a {model} actor "
                   f"trained with bf16 mixed-precision AdamW.",
        setting_zh=f"文中 PPO 演示代码（ppo_step、main、estimate_gb）；显存数字按 BF16 混合精度 AdamW 训练的 {model} actor 计算。",
        verdict="wrong",
        explanation_en="The text is right that the shaped reward is r − β·KL(π‖π_ref), but the code adds the penalty "
                       "(`+ beta * kl`), which rewards drifting away from the reference; it must subtract it. The "
                       "loss also uses only the clipped ratio, whereas PPO takes the minimum of the clipped and the "
                       "unclipped surrogate, and the critic's parameters are not in the optimizer, so the value loss "
                       "never trains it. The memory estimate counts bf16 weights and Adam's two fp32 moments but "
                       "leaves out the gradients and the fp32 master copy: {omitted_bpp} of the {bpp} bytes per "
                       "trained parameter, {omitted} for this actor.",
        explanation_zh="正文中奖励 r − β·KL(π‖π_ref) 是对的，但代码把惩罚项加了上去（`+ beta * kl`），等于奖励偏离 reference，"
                       "应当减去。损失也只用了截断后的比率，而 PPO 取截断与未截断替代目标的较小值；critic 的参数也不在"
                       "优化器里，价值损失永远不会训练它。显存估算只算了 BF16 权重和 Adam 的两份 FP32 动量，漏掉了梯度和 "
                       "FP32 主权重：每个训练参数 {bpp} 字节中漏了 {omitted_bpp} 字节，这个 actor 共漏掉 {omitted}。",
        source="Schulman et al. 2017, PPO (arXiv:1707.06347) Eq. 7 (clipped surrogate takes the minimum); Ouyang et "
               "al. 2022 Eq. 2 (reward minus β·KL); ZeRO §3.1 for the per-parameter bytes.",
        scenarios=scenarios, figures=figures)


# ---- 14. a 4090 for 7B inference ----------------------------------------------------------------

def note_4090_inference(estimator: Estimator, *, model: str = GENERIC_7B, gpu: str = "RTX-4090") -> Note:
    infer = Scenario(model=model, workload="inference", prompt_len=2048, gen_len=2048, gpu=gpu)
    scenarios = {"b1": infer, "b2": replace(infer, batch_size=2), "b4": replace(infer, batch_size=4),
                 "c8k": replace(infer, prompt_len=6144), "c16k": replace(infer, prompt_len=14336)}
    figures: Figures = {
        "weights": ("bf16 weights", "BF16 权重", "bytes", _v("b1", "weights")),
        "kv_b1": ("KV cache, batch 1 × 4,096 tokens", "KV Cache，batch 1 × 4096 token", "bytes", _v("b1", "kv_cache")),
        "gpu_mem": (f"{gpu} memory", f"{gpu} 显存", "bytes", _v("b1", "gpu_memory_bytes")),
        "t_b1": ("Device total, batch 1 × 4,096 tokens", "设备总量，batch 1 × 4096 token", "bytes",
                 _v("b1", "device_total")),
        "t_b2": ("Device total, batch 2 × 4,096 tokens", "设备总量，batch 2 × 4096 token", "bytes",
                 _v("b2", "device_total")),
        "t_b4": ("Device total, batch 4 × 4,096 tokens", "设备总量，batch 4 × 4096 token", "bytes",
                 _v("b4", "device_total")),
        "t_c8k": ("Device total, batch 1 × 8,192 tokens", "设备总量，batch 1 × 8192 token", "bytes",
                  _v("c8k", "device_total")),
        "t_c16k": ("Device total, batch 1 × 16,384 tokens", "设备总量，batch 1 × 16384 token", "bytes",
                   _v("c16k", "device_total")),
    }
    return _note(
        estimator, id="N14", article=VIDEO,
        claim_zh="权重 14 GB + KV Cache 约 2-4 GB ≈ 16-18 GB … 单张 RTX 4090（24 GB）可轻松容纳",
        claim_en="Weights 14 GB + KV cache about 2–4 GB ≈ 16–18 GB … a single RTX 4090 (24 GB) holds it easily.",
        setting_en=f"{model}, bf16 weights and KV cache, FlashAttention prefill, one {gpu}; 4,096 tokens per "
                   f"sequence (2,048 prompt + 2,048 generated) at batch 1, 2 and 4; batch 1 with 6,144 and 14,336 "
                   f"prompt tokens + 2,048 generated. Device totals include allocator fragmentation and the CUDA "
                   f"context.",
        setting_zh=f"{model}，BF16 权重与 KV Cache，FlashAttention 预填充，一张 {gpu}；每条序列 4096 token（2048 提示 + "
                   f"2048 生成），batch 1、2、4；以及 batch 1、6144 与 14336 提示 token + 2048 生成。设备总量含分配器碎片"
                   f"与 CUDA context。",
        verdict="depends",
        explanation_en="At the stated setting the claim holds: weights {weights}, KV cache {kv_b1}, and {t_b1} on the "
                       "device with the prefill working set, allocator and CUDA context, against {gpu_mem}. The "
                       "margin belongs to the KV cache, which grows linearly with batch and context: {t_b2} for two "
                       "sequences and {t_b4} for four; {t_c8k} and {t_c16k} for one sequence with the longer "
                       "prompts. A model of this size with full multi-head attention on a 24 GB card is a setup for "
                       "one or two sequences of a few thousand tokens, not for serving.",
        explanation_zh="在文中设定下结论成立：权重 {weights}，KV Cache {kv_b1}，加上预填充工作集、分配器和 CUDA context 后"
                       "设备上共 {t_b1}，显卡为 {gpu_mem}。余量取决于 KV Cache，它随 batch 和上下文线性增长：两条序列为 "
                       "{t_b2}，四条为 {t_b4}；单条序列用更长提示时为 {t_c8k} 和 {t_c16k}。这种尺寸的多头注意力模型放在 24 GB "
                       "的卡上，只适合一两条几千 token 的序列，不适合做服务。",
        source="Kwon et al. 2023, vLLM (arXiv:2309.06180) §3; NVIDIA, Mastering LLM Techniques: Inference "
               "Optimization (Llama 2 7B KV cache at 4,096 tokens); RTX 4090 total from nvidia-smi "
               "(presets/gpus.yaml).",
        scenarios=scenarios, figures=figures)


# ---- 15. LoRA in 20-40 GB -----------------------------------------------------------------------

def note_lora_memory(estimator: Estimator, *, model: str = "Llama-2-7B", gpu: str = "A100-80GB") -> Note:
    lora = _train(model, workload="lora", lora_rank=16, lora_targets="q_proj,v_proj", gpu=gpu)
    scenarios = {"b1": lora, "b1_ckpt": replace(lora, checkpointing="full"),
                 "b4": replace(lora, batch_size=4), "b4_ckpt": replace(lora, batch_size=4, checkpointing="full")}
    figures: Figures = {
        "states": ("Model states (frozen weights, adapters, their gradients and Adam states)",
                   "模型状态（冻结权重、适配器及其梯度与 Adam 状态）", "bytes", _states("b1")),
        "gpu_mem": (f"{gpu} memory", f"{gpu} 显存", "bytes", _v("b1", "gpu_memory_bytes")),
    }
    for key, en, zh in (("b1", "batch 1", "batch 1"), ("b1_ckpt", "batch 1, checkpointing", "batch 1，检查点"),
                        ("b4", "batch 4", "batch 4"), ("b4_ckpt", "batch 4, checkpointing", "batch 4，检查点")):
        figures[f"t_{key}"] = (f"Device total, {en}", f"设备总量，{zh}", "bytes", _v(key, "device_total"))
    return _note(
        estimator, id="N15", article=VIDEO,
        claim_zh="训练显存：即使 7 B 模型 + BF 16 + LoRA，训练总显存可降至 20-40 GB … 结论：单张 A 100（80 GB）足矣",
        claim_en="Training memory: even a 7B model + BF16 + LoRA brings total training memory down to 20–40 GB … "
                 "conclusion: a single A100 (80 GB) is enough.",
        setting_en=f"{model}, bf16 frozen weights, LoRA r = 16 on q_proj,v_proj (fp32 adapters, AdamW), "
                   f"FlashAttention, one {gpu}; 4,096-token sequences at batch 1 and 4, without and with full "
                   f"checkpointing.",
        setting_zh=f"{model}，BF16 冻结权重，LoRA r = 16 加在 q_proj,v_proj（FP32 适配器，AdamW），FlashAttention，一张 "
                   f"{gpu}；4096 token 序列，batch 1 与 4，分别不开/开完全检查点。",
        verdict="depends",
        explanation_en="LoRA removes nearly all model-state memory beyond the frozen weights: {states} in all. What "
                       "remains is activations, which LoRA does not shrink, because backward still runs through every "
                       "layer. At batch 1 × 4096 tokens the device total is {t_b1} without and {t_b1_ckpt} with "
                       "checkpointing; at batch 4 it is {t_b4} and {t_b4_ckpt}. So 20–40 GB is a statement about "
                       "short sequences or checkpointing, and whether one A100 ({gpu_mem}) is enough depends on "
                       "batch × length.",
        explanation_zh="LoRA 去掉了冻结权重之外几乎全部的模型状态：合计 {states}。剩下的是激活值，LoRA 并不减少激活，因为反向"
                       "传播仍要经过每一层。batch 1 × 4096 token 时设备总量不开检查点为 {t_b1}，开启为 {t_b1_ckpt}；batch 4 "
                       "时为 {t_b4} 和 {t_b4_ckpt}。所以 20-40 GB 只对短序列或开检查点成立，一张 A100（{gpu_mem}）是否足够"
                       "取决于 batch × 长度。",
        source="Hu et al. 2021, LoRA (arXiv:2106.09685); PEFT keeps adapters and their inputs in fp32; torchtune LoRA "
               "memory tables (Llama-2-7B, batch 2, activation checkpointing on).",
        scenarios=scenarios, figures=figures)


# ---- 16. activations at 1,024 tokens and the 88 GB total ----------------------------------------

def note_total_88gb(estimator: Estimator, *, model: str = GENERIC_7B, gpu: str = "A100-80GB") -> Note:
    scenarios = {"flash": _train(model, seq_len=1024, gpu=gpu), "eager": _train(model, seq_len=1024, attention="eager",
                                                                               gpu=gpu)}
    figures: Figures = {
        "states": ("Model states", "模型状态", "bytes", _states("flash")),
        "act_flash": ("Activations, FlashAttention", "激活值，FlashAttention", "bytes",
                      _v("flash", "training_activations")),
        "act_eager": ("Activations, eager attention", "激活值，eager 注意力", "bytes",
                      _v("eager", "training_activations")),
        "peak": ("Allocated peak", "已分配峰值", "bytes", _v("flash", "allocated_peak")),
        "device": ("Device total", "设备总量", "bytes", _v("flash", "device_total")),
        "recommended": ("Recommended budget (safety factor k)", "推荐预算（安全系数 k）", "bytes",
                        _v("flash", "recommended")),
    }
    return _note(
        estimator, id="N16", article=PPO_ARTICLE,
        claim_zh="模型状态 = 14 + 14 + 42 = 70GB；激活值按常见 batch=1、seq=1024 大约 5~15GB；再加上通信缓冲约 10%。"
                 "总显存 = 70 + 10 + 8 ≈ 88GB，已经超过单卡 80GB",
        claim_en="Model states = 14 + 14 + 42 = 70 GB; activations at the usual batch = 1, seq = 1024 about 5–15 GB; "
                 "plus about 10% of communication buffers. Total = 70 + 10 + 8 ≈ 88 GB, already more than one "
                 "80 GB card.",
        setting_en=f"{model}, full fine-tuning with bf16 mixed-precision AdamW, batch 1 × 1,024 tokens, one {gpu}; "
                   f"FlashAttention and eager attention. Device total adds the estimator's allocator-fragmentation "
                   f"and CUDA-context assumptions; recommended = safety factor k × device total.",
        setting_zh=f"{model}，BF16 混合精度 AdamW 全参微调，batch 1 × 1024 token，一张 {gpu}；FlashAttention 与 eager 注意力。"
                   f"设备总量加上估算器的分配器碎片与 CUDA context 假设；推荐预算 = 安全系数 k × 设备总量。",
        verdict="wrong",
        explanation_en="The activation range is plausible: {act_flash} with FlashAttention, {act_eager} with eager "
                       "attention. The total is not, because the model states are {states}, not 70 GB (see N5). "
                       "The allocated peak is {peak}: at this length it comes at the end of backward, when all "
                       "gradients exist and the activations are already freed, so activations and states do not "
                       "simply add up. On the device that is {device}, and {recommended} with the safety factor. "
                       "More than one 80 GB card, yes, by far more than the article says.",
        explanation_zh="激活值的范围是合理的：FlashAttention 下 {act_flash}，eager 注意力下 {act_eager}。总量不对，因为模型"
                       "状态是 {states}，不是 70GB（见 N5）。已分配峰值为 {peak}：这个长度下峰值出现在反向结束时，此时梯度"
                       "已全部生成而激活值已经释放，所以激活值与模型状态并不是简单相加。设备上共 {device}，乘安全系数后为 "
                       "{recommended}。确实超过单卡 80GB，而且超出的远比文中说的多。",
        source="Rajbhandari et al. 2020, ZeRO §3.1; PyTorch caching allocator (max_memory_reserved vs "
               "max_memory_allocated); reportgen's phase model of the training step (Method section).",
        scenarios=scenarios, figures=figures)


# ---- 17. ZeRO-3 + checkpointing on eight A100s --------------------------------------------------

def note_zero3_eight_gpus(estimator: Estimator, *, model: str = GENERIC_7B, gpu: str = "A100-80GB",
                          num_gpus: int = 8) -> Note:
    z3 = _train(model, num_gpus=num_gpus, zero_stage=3, checkpointing="full", seq_len=1024, gpu=gpu)
    scenarios = {"s1k": z3, "s4k": replace(z3, seq_len=4096)}
    figures: Figures = {
        "states_total": ("Model states of the whole model", "整个模型的模型状态", "bytes",
                         _states("s1k") * _v("s1k", "dp_size")),
        "states": ("Model states per GPU", "每卡模型状态", "bytes", _states("s1k")),
        "t_1k": ("Device total per GPU, 1,024 tokens", "每卡设备总量，1024 token", "bytes", _v("s1k", "device_total")),
        "t_4k": ("Device total per GPU, 4,096 tokens", "每卡设备总量，4096 token", "bytes", _v("s4k", "device_total")),
        "rec_1k": ("Recommended per GPU, 1,024 tokens", "每卡推荐预算，1024 token", "bytes", _v("s1k", "recommended")),
        "gpu_mem": (f"{gpu} memory", f"{gpu} 显存", "bytes", _v("s1k", "gpu_memory_bytes")),
    }
    return _note(
        estimator, id="N17", article=PPO_ARTICLE,
        claim_zh="假设你计划用 8×A100-80GB 训练 7B 模型 … 但 ZeRO-3 + 梯度检查点能把它压到 20GB 以下，8 卡绰绰有余",
        claim_en="Suppose you plan to train a 7B model on 8 × A100-80GB … ZeRO-3 + gradient checkpointing bring it "
                 "below 20 GB, and 8 cards are more than enough.",
        setting_en=f"{model}, bf16 mixed-precision AdamW, {num_gpus} × {gpu} with ZeRO-3 and full activation "
                   f"checkpointing, batch 1 per GPU at 1,024 and 4,096 tokens, FlashAttention; device totals "
                   f"include the gathered-layer buffers, allocator, CUDA context and NCCL buffers.",
        setting_zh=f"{model}，BF16 混合精度 AdamW，{num_gpus} × {gpu}，ZeRO-3 加完全激活检查点，每卡 batch 1，1024 与 4096 "
                   f"token，FlashAttention；设备总量含层聚合缓冲、分配器、CUDA context 与 NCCL 缓冲。",
        verdict="depends",
        explanation_en="The conclusion survives the article's too-small starting point (see N5): ZeRO-3 shards all "
                       "{states_total} of model states over the GPUs, {states} each. With the gathered-layer buffers, "
                       "activations, allocator, CUDA context and NCCL buffers the device total is {t_1k} per GPU at "
                       "1024 tokens and {t_4k} at 4096 tokens; the recommended budget with the safety factor is "
                       "{rec_1k}. Whether it is below 20 GB depends on sequence length and margin; the 8 cards of "
                       "{gpu_mem} are ample either way.",
        explanation_zh="即使文中起点偏小（见 N5），结论依然成立：ZeRO-3 把全部 {states_total} 的模型状态切分到各卡，每卡 "
                       "{states}。加上层聚合缓冲、激活值、分配器、CUDA context 与 NCCL 缓冲，每卡设备总量在 1024 token 时为 "
                       "{t_1k}，4096 token 时为 {t_4k}；乘安全系数后的推荐预算为 {rec_1k}。是否低于 20GB 取决于序列长度和"
                       "余量；无论如何 8 张 {gpu_mem} 的卡都绰绰有余。",
        source="Rajbhandari et al. 2020, ZeRO Fig. 1 (P_os+g+p: (4+K)Ψ/N_d); DeepSpeed stage-3 parameter gathering "
               "and prefetch buffers.",
        scenarios=scenarios, figures=figures)


# ---- 18. one A100 with checkpointing -----------------------------------------------------------

def note_single_a100_checkpointing(estimator: Estimator, *, model: str = GENERIC_7B, gpu: str = "A100-80GB") -> Note:
    scenarios = {"ckpt": _train(model, checkpointing="full", gpu=gpu)}
    figures: Figures = {
        "states": ("Model states", "模型状态", "bytes", _states("ckpt")),
        "act": ("Activations with full checkpointing", "完全检查点下的激活值", "bytes",
                _v("ckpt", "training_activations")),
        "device": ("Device total", "设备总量", "bytes", _v("ckpt", "device_total")),
        "gpu_mem": (f"{gpu} memory", f"{gpu} 显存", "bytes", _v("ckpt", "gpu_memory_bytes")),
    }
    return _note(
        estimator, id="N18", article=VIDEO,
        claim_zh="如果使用梯度检查点（Gradient Checkpointing），可将激活值显存压缩至 5-10 GB，此时单卡勉强可用但训练速度大幅下降",
        claim_en="With gradient checkpointing the activation memory can be compressed to 5–10 GB, and a single card "
                 "[A100 80 GB] becomes barely usable, though training slows down a lot.",
        setting_en=f"{model}, full fine-tuning with bf16 mixed-precision AdamW, batch 1 × 4,096 tokens, "
                   f"FlashAttention, full activation checkpointing, one {gpu}.",
        setting_zh=f"{model}，BF16 混合精度 AdamW 全参微调，batch 1 × 4096 token，FlashAttention，完全激活检查点，一张 {gpu}。",
        verdict="wrong",
        explanation_en="Checkpointing does shrink the activations ({act}), but the model states alone are {states}, "
                       "more than the card's {gpu_mem}, so the device total is {device}: one A100 cannot fully "
                       "fine-tune this model with Adam, with or without checkpointing. That takes sharding across "
                       "GPUs (ZeRO, see N1), offloading the optimizer states to CPU memory, or low-precision "
                       "optimizer states.",
        explanation_zh="检查点确实压缩了激活值（{act}），但仅模型状态就有 {states}，超过显卡的 {gpu_mem}，设备总量为 {device}："
                       "无论是否使用检查点，一张 A100 都无法用 Adam 对这个模型做全参微调。需要跨卡切分（ZeRO，见 N1）、把"
                       "优化器状态卸载到 CPU 内存，或使用低精度优化器状态。",
        source="Rajbhandari et al. 2020, ZeRO §3.1; Ren et al. 2021, ZeRO-Offload (arXiv:2101.06840).",
        scenarios=scenarios, figures=figures)


# ---- 19. frozen models keep no activations -------------------------------------------------------

def note_frozen_activations(estimator: Estimator, *, model: str = GENERIC_7B) -> Note:
    roles = _ppo_roles(_ppo_rollout(model))
    figures: Figures = {
        "fwd_reference": ("Reference: forward working set (freed layer by layer)", "reference：前向工作集（逐层释放）",
                          "bytes", _v("reference", "forward_transient_bytes")),
        "fwd_reward": ("Reward: forward working set", "reward：前向工作集", "bytes", _v("reward", "forward_transient_bytes")),
        "saved_frozen": ("Saved for backward, reference + reward", "为反向保存的激活，reference + reward", "bytes",
                         _v("reference", "training_activations") + _v("reward", "training_activations")),
        "act_actor": ("Saved for backward, actor", "为反向保存的激活，actor", "bytes",
                      _v("actor", "training_activations")),
        "act_critic": ("Saved for backward, critic", "为反向保存的激活，critic", "bytes",
                       _v("critic", "training_activations")),
    }
    return _note(
        estimator, id="N19", article=PPO_ARTICLE,
        claim_zh="唯一要注意的是：它们的前向激活仍然需要保留，用于计算 Reward 和 KL 信号",
        claim_en="The one thing to watch: their forward activations must still be kept, to compute the reward and "
                 "KL signals.",
        setting_en=_PPO_SETTING_EN.format(model=model),
        setting_zh=_PPO_SETTING_ZH.format(model=model),
        verdict="wrong",
        explanation_en="Reference and reward models run under no_grad: nothing is kept for a backward pass, only "
                       "their outputs (per-token log-probabilities, or one score per sequence). Their activation cost "
                       "is a working set freed layer by layer, {fwd_reference} for the reference and {fwd_reward} "
                       "for the reward model, and they save {saved_frozen} for backward, against {act_actor} of "
                       "saved activations for the trained actor over the same tokens ({act_critic} for the critic).",
        explanation_zh="reference 和 reward 模型在 no_grad 下运行：不为反向保存任何东西，只保留输出（每 token 的对数概率，或"
                       "每条序列一个分数）。它们的激活开销是逐层释放的工作集：reference 为 {fwd_reference}，reward 为 "
                       "{fwd_reward}，为反向保存的激活为 {saved_frozen}；而训练中的 actor 对同样的 token 要保存 {act_actor}"
                       "（critic 为 {act_critic}）。",
        source="PyTorch autograd: tensors are saved for backward only when gradients are required (torch.no_grad / "
               "inference_mode); TRL and OpenRLHF compute reference log-probabilities under no_grad.",
        scenarios=roles, figures=figures)


# ---- 20. INT4 is more than half a byte ---------------------------------------------------------

def note_int4_bytes(estimator: Estimator, *, model: str = "Llama-2-7B") -> Note:
    infer = Scenario(model=model, workload="inference", prompt_len=2048, gen_len=2048, gpu="RTX-4090")
    scenarios = {"int4": replace(infer, weight_dtype="int4"), "bf16": infer}
    figures: Figures = {
        "int4": ("INT4 weights", "INT4 权重", "bytes", _v("int4", "weights")),
        "int4_bpp": ("INT4: bytes per parameter", "INT4：每参数字节", "ratio",
                     _v("int4", "weights") / _v("int4", "total_params")),
        "bf16": ("bf16 weights", "BF16 权重", "bytes", _v("bf16", "weights")),
        "ratio": ("INT4 ÷ bf16", "INT4 ÷ BF16", "percent", _v("int4", "weights") / _v("bf16", "weights")),
    }
    return _note(
        estimator, id="N20", article=VIDEO,
        claim_zh="| INT 4 | 4 | 0.5 |",
        claim_en="INT4: 4 bits, 0.5 bytes per parameter.",
        setting_en=f"{model}, 4-bit weights in the GPTQ/AWQ layout (group size 128, an fp16 scale and a 4-bit zero "
                   f"point per group), embeddings and LM head kept in 16 bits; versus bf16.",
        setting_zh=f"{model}，GPTQ/AWQ 格式的 4 bit 权重（每组 128 个，每组一个 FP16 缩放与一个 4 bit 零点），嵌入与 "
                   f"LM head 保持 16 bit；与 BF16 对比。",
        verdict="imprecise",
        explanation_en="Four bits per weight is only the payload. Quantised formats add a scale (and a zero point) "
                       "per group of weights, and serving stacks keep the embedding table and the LM head in 16 bits, "
                       "so the model takes {int4} in INT4 against {bf16} in bf16 ({ratio} of it), more than the "
                       "0.5 bytes per parameter of the table.",
        explanation_zh="每个权重 4 bit 只是有效载荷。量化格式每组权重还要存一个缩放（和零点），推理框架也把嵌入表和 LM head "
                       "保持在 16 bit，所以模型在 INT4 下占 {int4}，BF16 下为 {bf16}（INT4 为其 {ratio}），"
                       "多于表中每参数 0.5 字节。",
        source="Frantar et al. 2022, GPTQ (arXiv:2210.17323); Lin et al. 2023, AWQ (arXiv:2306.00978); vLLM and "
               "AutoGPTQ keep embeddings and lm_head unquantised.",
        scenarios=scenarios, figures=figures)


# Each builder takes the estimator and returns one Note, in catalogue order.
NOTE_BUILDERS: tuple[Callable[[Estimator], Note], ...] = (
    note_two_gpus_do_not_pool, note_lora_share, note_kv_cache_gqa, note_activations_40gb, note_mixed_precision,
    note_zero_formula, note_checkpointing, note_mixtral, note_rlhf_kv_cache, note_frozen_saving,
    note_ppo_two_sizings, note_units, note_demo_code, note_4090_inference, note_lora_memory, note_total_88gb,
    note_zero3_eight_gpus, note_single_a100_checkpointing, note_frozen_activations, note_int4_bytes,
)
