"""Model specs from configs and exact parameter accounting, against independent counts."""
import json

import pytest

from refdata import REPO, facts_of, measured, router_bias_buffers
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.inputs import LORA_TARGET_SETS
from reportgen.model.shape import lora_trainable, model_row, params_by_component
from reportgen.errors import InputError
from reportgen.model.spec import SUPPORTED_MODEL_TYPES, spec_from_config

CATALOG = load_models()
EST = Estimator(CATALOG, load_gpus())

# facts.json records that count something other than Hugging Face's instantiated model
# (reference/README.md "gotchas"): Keras double-counts tied heads of Llama 3.2; Keras'
# qwen2.5_7b preset differs from HF's Qwen2.5-7B (whose model card says 7.61B, = derived-0120);
# OPT-6.7B's Keras figure is rounded to 6.7e9 (PEFT's implied base is 6,658,473,984).
NOT_HF_COUNTS = {"param_count-0063", "param_count-0064", "param_count-0076", "param_count-0087"}


def _exact_reference_counts():
    """(record id, model, exact integer total) from facts.json param_count and derived records."""
    out = []
    for kind in ("param_count", "derived"):
        for r in facts_of(kind):
            if r["id"] in NOT_HF_COUNTS or r["unit"] != "parameters":
                continue
            value = r["value"]
            total = value.get("total") if isinstance(value, dict) else value
            if isinstance(total, int) or (isinstance(total, float) and total.is_integer() and total % 1_000_000):
                out.append((r["id"], r["model"], int(total), value.get("active") if isinstance(value, dict) else None))
    return out


def _catalog_name(model: str):
    for name in CATALOG:
        if name.lower() == model.lower() or name.lower() == model.lower().replace(" (124m)", "").replace(" ", "-"):
            return name
    aliases = {"Qwen2.5-32B-Instruct": "Qwen2.5-32B", "Qwen2.5-72B-Instruct": "Qwen2.5-72B",
               "Phi-3-mini-4k": "Phi-3-mini-4k-instruct", "GPT-2 (124M)": "GPT-2"}
    return aliases.get(model) if aliases.get(model) in CATALOG else None


REFERENCE_COUNTS = [c for c in _exact_reference_counts() if _catalog_name(c[1])]


def test_catalog_spans_the_required_range():
    assert len(CATALOG) >= 25
    totals = [model_row(m.spec)["total_params"] for m in CATALOG.values()]
    assert min(totals) < 1e9 and max(totals) > 600e9
    families = {m.spec.model_type for m in CATALOG.values()}
    assert {"llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "deepseek_v3", "gemma2", "phi3",
            "gpt2", "falcon"} <= families


def test_enough_reference_counts_are_checked():
    assert len({name for _, name, _, _ in REFERENCE_COUNTS}) >= 20


@pytest.mark.parametrize("record_id,model,total,active", REFERENCE_COUNTS, ids=[c[0] for c in REFERENCE_COUNTS])
def test_catalog_count_equals_reference(record_id, model, total, active):
    spec = CATALOG[_catalog_name(model)].spec
    assert model_row(spec)["total_params"] == total
    if active is not None:
        assert model_row(spec)["active_params"] == active


def _transformers_counts():
    path = REPO / "tests" / "data" / "transformers_counts.json"
    if not path.exists():
        return []
    data = json.loads(path.read_text())
    return [(name, rec) for name, rec in data["models"].items() if isinstance(rec.get("total"), int)]


@pytest.mark.parametrize("name,record", _transformers_counts(), ids=[n for n, _ in _transformers_counts()])
def test_catalog_count_equals_transformers_meta_device_count(name, record):
    """Every supported model_type, built by transformers on the meta device (tests/data/README.md)."""
    spec = CATALOG[name].spec
    assert model_row(spec)["total_params"] == record["total"] + router_bias_buffers(spec)
    assert sum(params_by_component(model_row(spec)).values()) == model_row(spec)["total_params"]


def _transformers_lora_cases():
    """PEFT counts on dense models, plain MLPs and fused qkv layers included, and on GPT-OSS, whose experts and
    router no target reaches (bare parameters); MoE expert wrapping differs between transformers/PEFT versions (see
    tests/data/README.md). Where the architecture names its layers otherwise, PEFT was given the layers the set
    means (targets_used: GPT-NeoX's query_key_value for q_proj,v_proj); a record where PEFT found fewer modules
    than the set means ("note": OPT has out_proj, not o_proj) counts something else and is left out. Hybrid
    Mamba-2 models get no LoRA here (their training is not modelled: the skip rule hybrid_inference)."""
    cases = []
    for name, record in _transformers_counts():
        spec = CATALOG[name].spec
        if (spec.num_experts > 0 and not spec.experts_as_parameters) or spec.kv_lora_rank or spec.num_mamba_layers:
            continue
        for lora in record.get("lora", []):
            if isinstance(lora.get("trainable"), int) and "note" not in lora:
                cases.append((name, lora["r"], lora["targets"], lora["trainable"]))
    return cases


@pytest.mark.parametrize("name,rank,targets,trainable", _transformers_lora_cases())
def test_lora_count_equals_peft_on_transformers(name, rank, targets, trainable):
    spec = CATALOG[name].spec
    assert lora_trainable(model_row(spec), rank, model=spec.name, targets=tuple(targets.split(","))) == trainable


def test_enough_peft_cases_are_checked():
    """Every named set on every layout: the fused qkv layers and plain MLPs (GPT-2, GPT-NeoX, Falcon, BLOOM, OPT)
    and Phi-3's fused projections beside the Llama-style split ones."""
    cases = _transformers_lora_cases()
    assert len(cases) >= 92
    checked = {(name, targets) for name, _, targets, _ in cases}
    for name in ("GPT-2", "GPT-NeoX-20B", "Falcon-7B", "BLOOM-560M", "Phi-3-mini-4k-instruct"):
        assert {(name, t) for t in LORA_TARGET_SETS} <= checked, name
    assert {("OPT-6.7B", "q_proj,v_proj"), ("OPT-6.7B", "all-linear")} <= checked


# Model types whose builder follows code other than transformers', checked against that code's published counts.
COUNTED_ELSEWHERE = {"mpt": "test_mpt_counts_equal_llm_foundry_numparams"}


def test_every_supported_model_type_is_in_the_catalog():
    catalog_types = {m.spec.model_type for m in CATALOG.values()}
    assert set(SUPPORTED_MODEL_TYPES) <= catalog_types | set(COUNTED_ELSEWHERE)
    assert all(test in globals() for test in COUNTED_ELSEWHERE.values())


def _llm_foundry_runs():
    data = json.loads((REPO / "presets/validation/published_throughput.json").read_text(encoding="utf-8"))
    return [r for r in data["training"] if r["reportgen"].get("config", {}).get("model_type") == "mpt"]


def test_mpt_counts_equal_llm_foundry_numparams():
    """llm-foundry's benchmark tables publish each run's NumParams (11 counts of 6 sizes: the learned position table grows with
    the sequence length: 2k to 32k): the mpt builder gives each exactly."""
    runs = _llm_foundry_runs()
    assert len(runs) == 17 and len({r["params"] for r in runs}) == 11
    for r in runs:
        config = {k: v for k, v in r["reportgen"]["config"].items() if not k.startswith("_")}
        assert config["max_seq_len"] == r["seq_len"]
        assert model_row(spec_from_config(config, name="m", source=r["id"]))["total_params"] == r["params"], r["id"]


def test_mpt_with_alibi_keeps_no_position_table():
    """The Hub's MPT-7B config (ALiBi, no_bias), where llm-foundry's code and transformers' port agree:
    transformers 5.24's MptForCausalLM built from it on the meta device counts 6,649,286,656 parameters
    (2026-12-05, tools/oracle's environment), which is 50,432 × 4,096 tied + 32 × (12 × 4,096² + 2 × 4,096) + 4,096."""
    hub = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32, "expansion_ratio": 4,
           "max_seq_len": 2048, "vocab_size": 50432, "no_bias": True, "learned_pos_emb": True,
           "attn_config": {"alibi": True, "attn_impl": "torch"}}
    h = 4096
    assert model_row(spec_from_config(hub, name="m", source="t"))["total_params"] == 6_649_286_656
    assert 6_649_286_656 == 50432 * h + 32 * (12 * h * h + 2 * h) + h


@pytest.mark.parametrize("field,value,message", [
    ("attn_config", {"attn_type": "sliding"}, "attn_config.attn_type"),
    ("attn_config", {"attn_type": "grouped_query_attention"}, "attn_config.kv_n_heads"),
    ("attn_config", "triton", "attn_config"),
    ("ffn_config", {"ffn_type": "te_ln_mlp"}, "ffn_config.ffn_type"),
    ("norm_type", "batchnorm", "norm_type"),
    ("n_heads", 30, "n_heads"),
])
def test_mpt_config_errors_name_the_field(field, value, message):
    config = {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 2, field: value}
    with pytest.raises(InputError) as e:
        spec_from_config(config, name="m", source="mpt.json")
    assert e.value.key_path == message and e.value.source == "mpt.json"


def test_measured_cases_count_their_parameters_exactly():
    for case in measured()["cases"]:
        spec = spec_from_config(case["config"], name="m", source="measured.json")
        if case["workload"] == "lora":
            lora = case["setting"]["lora"]
            assert lora_trainable(model_row(spec), lora["r"], model=spec.name, targets=(lora["targets"],)) == case["trainable_params"]
            assert model_row(spec)["total_params"] + case["trainable_params"] == case["params"]
        else:
            assert model_row(spec)["total_params"] == case["params"]


LORA_FACTS = [r for r in facts_of("lora") if r["model"] in ("Llama-2-7B", "Llama-3.2-1B", "Qwen2.5-3B-Instruct",
                                                             "Mixtral-8x7B-Instruct-v0.1 (4-bit)")]


@pytest.mark.parametrize("record", LORA_FACTS, ids=[r["id"] for r in LORA_FACTS])
def test_lora_counts_equal_peft(record):
    name = {"Qwen2.5-3B-Instruct": "Qwen2.5-3B", "Mixtral-8x7B-Instruct-v0.1 (4-bit)": "Mixtral-8x7B"}.get(
        record["model"], record["model"])
    spec = CATALOG[name].spec
    targets = record["setting"]["targets"]
    targets = ("q_proj", "v_proj") if isinstance(targets, str) else tuple(targets)
    assert lora_trainable(model_row(spec), record["setting"]["rank"], model=spec.name, targets=targets) == record["value"]["trainable"]
    assert model_row(spec)["total_params"] == record["value"]["implied_base"]


def test_tied_embeddings_are_counted_once():
    spec = CATALOG["Llama-3.2-1B"].spec
    parts = params_by_component(model_row(spec))
    assert parts["lm_head"] == 0 and spec.tie_word_embeddings
    untied = spec_from_config({**_config("llama-3.2-1b"), "tie_word_embeddings": False}, name="u", source="t")
    assert model_row(untied)["total_params"] - model_row(spec)["total_params"] == spec.vocab_size * spec.hidden_size


def test_breakdown_sums_to_total_and_moe_active_is_smaller():
    for m in CATALOG.values():
        parts = params_by_component(model_row(m.spec))
        assert sum(parts.values()) == model_row(m.spec)["total_params"]
        assert all(v >= 0 for v in parts.values())
        if (m.spec.num_experts > 0):
            assert model_row(m.spec)["active_params"] < model_row(m.spec)["total_params"]
        else:
            assert model_row(m.spec)["active_params"] == model_row(m.spec)["total_params"]


def test_kv_cache_elements_per_token_for_gqa_mha_and_mla():
    # bf16 bytes per token: Llama-2-7B (MHA) 524,288; Llama-3-8B (GQA, 8 KV heads) 131,072.
    assert model_row(CATALOG["Llama-2-7B"].spec)["kv_elements_per_token"] * 2 == 524_288
    assert model_row(CATALOG["Llama-3-8B"].spec)["kv_elements_per_token"] * 2 == 131_072
    v3 = CATALOG["DeepSeek-V3"].spec
    assert model_row(v3)["kv_elements_per_token"] == v3.num_hidden_layers * (512 + 64)


def _config(slug):
    return json.loads((REPO / "presets" / "models" / f"{slug}.json").read_text())["config"]


@pytest.mark.parametrize("mutate,path,message", [
    (lambda c: c.pop("hidden_size"), "hidden_size", "missing required field"),
    (lambda c: c.update(hidden_size="4096"), "hidden_size", "expected an integer, got '4096'"),
    (lambda c: c.update(num_hidden_layers=-2), "num_hidden_layers", "must be at least 1, got -2"),
    (lambda c: c.update(model_type="llama9"), "model_type", "unknown model_type 'llama9'"),
    (lambda c: c.update(tie_word_embeddings="yes"), "tie_word_embeddings", "expected true or false"),
    (lambda c: c.update(num_key_value_heads=5), "num_key_value_heads", "does not divide"),
])
def test_bad_configs_name_the_field(mutate, path, message):
    config = _config("llama-2-7b")
    mutate(config)
    with pytest.raises(InputError) as err:
        spec_from_config(config, name="x", source="cfg.json")
    assert err.value.key_path == path and err.value.source == "cfg.json"
    assert message in err.value.message


@pytest.mark.parametrize("model_type,why", [("falcon_h1", "Mamba-2"), ("qwen3_next", "Gated DeltaNet"),
                                            ("mamba", "state-space")])
def test_architectures_it_cannot_build_are_named_with_why(model_type, why):
    """#32: a Falcon-H1 config says what is missing, not 'unknown' (nor 'did you mean gpt_neox')."""
    config = {**_config("llama-2-7b"), "model_type": model_type}
    with pytest.raises(InputError) as err:
        spec_from_config(config, name="x", source="cfg.json")
    assert err.value.key_path == "model_type"
    assert f"'{model_type}' cannot be built yet: " in err.value.message and why in err.value.message
    assert "did you mean" not in err.value.message


@pytest.mark.parametrize("name,record", _transformers_counts(), ids=[n for n, _ in _transformers_counts()])
def test_sliding_window_layers_are_those_transformers_caches(name, record):
    """Which layers keep a sliding window (Mistral-7B-v0.1 and Phi-3 every layer, Gemma-2 and GPT-OSS every other
    one), as transformers 5.24's DynamicCache builds them from the config (tests/data/transformers_counts.json)."""
    spec, cache = CATALOG[name].spec, record["cache_layers"]
    assert cache["layers"] == spec.num_hidden_layers
    assert (spec.num_sliding_layers, spec.sliding_window) == (cache["sliding_layers"], cache["sliding_window"] or 0)



@pytest.mark.parametrize("name", [n for n, m in CATALOG.items()
                                  if not m.spec.kv_lora_rank and not m.spec.num_mamba_layers])
def test_lora_reaches_every_dense_catalog_model_with_pefts_count(name):
    """Every named set on every model but multi-head latent attention and hybrid Mamba-2 ones runs (until 2026-12-07
    GPT-2, GPT-NeoX, Falcon, BLOOM, OPT, MPT and Phi-3's q/v were refused: LoRA was modelled for gated MLPs and split
    q, k, v only), its trainable parameters those `reportgen params` counts for the set (PEFT's, test above)."""
    spec = CATALOG[name].spec
    for targets in LORA_TARGET_SETS:
        scenario = Scenario(model=name, workload="lora", lora_rank=8, lora_targets=targets, seq_len=512, prompt_len=0,
                            gen_len=0)
        reason = EST.skip_check(scenario)
        assert reason is None, (name, targets, reason)
        trainable = EST.estimate(scenario)["trainable_params"]
        assert trainable == lora_trainable(model_row(spec), 8, tuple(targets.split(",")), model=name) > 0


def test_a_fused_qkv_layer_stands_for_q_k_and_v():
    """On GPT-NeoX q_proj,v_proj is its query_key_value (r × (h + 3h) per layer), q_proj,k_proj,v_proj,o_proj adds its
    output projection (r × 2h); a module name the layout lacks is refused with the names it has."""
    row = model_row(CATALOG["GPT-NeoX-20B"].spec)
    h, layers = 6144, 44
    assert lora_trainable(row, 8, ("q_proj", "v_proj"), model="GPT-NeoX-20B") == 8 * layers * 4 * h
    assert lora_trainable(row, 8, ("q_proj", "k_proj", "v_proj", "o_proj"), model="GPT-NeoX-20B") == 8 * layers * 6 * h
    assert lora_trainable(row, 8, ("qkv_proj", "o_proj"), model="GPT-NeoX-20B") == 8 * layers * 6 * h
    with pytest.raises(InputError, match="no module named 'gate_proj'.*qkv_proj, o_proj, or all-linear"):
        lora_trainable(row, 8, ("gate_proj",), model="GPT-NeoX-20B")


def test_falcons_multi_query_layers_under_sdpa_are_refused_with_the_reason():
    """transformers' Falcon hands SDPA 71 query heads and one key-value head without enable_gqa: PyTorch's math
    kernel runs, which no term describes (the oracle measured 16.9 GiB for Falcon-7B's 4 layers with q/v adapters at
    2 × 2,048 tokens, 10.8 GiB with eager attention); flash and eager are estimated, and a model whose heads are equal
    is not refused."""
    falcon = Scenario(model="Falcon-7B", workload="lora", seq_len=2048, prompt_len=0, gen_len=0, attention="sdpa")
    reason = EST.skip_check(falcon)
    assert reason is not None and reason.code == "sdpa_math" and reason.values["heads"] == 71
    for attention in ("flash", "eager"):
        assert EST.skip_check(falcon.with_inputs(attention=attention)) is None
    assert EST.skip_check(falcon.with_inputs(model="GPT-NeoX-20B")) is None
