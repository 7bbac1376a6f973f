"""The error-correction notes: every figure is the estimator's, every claim a verbatim quote.

Independent numbers come from tests/data/facts.json (public facts with sources, never edited to match
the code) and tests/data/transformers_counts.json; the claims are checked against the articles' own
lines in tests/data/seed_passages.json.
"""
from __future__ import annotations

import copy
import json
import math
import re
from dataclasses import replace
from types import SimpleNamespace
from pathlib import Path

import pytest
import refdata
import yaml
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator
from reportgen.model.inputs import INPUT_BY_NAME
from reportgen.model.formulas import Expr, Lookup, Num, Str, Var
from reportgen.errors import InputError
from reportgen.report.i18n import load_catalogue as load_messages
from reportgen.report.notes import ARTICLES, VERDICTS, build_note, build_notes, load_catalogue
from reportgen.model.terms import TERM_BY_NAME
from reportgen.model.units import GB, GiB, KiB, MB, MiB
from reportgen.report.views import _notes, format_figure

REPO = Path(__file__).resolve().parents[1]
COUNTS = REPO / "tests" / "data" / "transformers_counts.json"

UNITS = {"bytes", "count", "number", "ratio", "percent", "gpus", "seconds"}
CONVERSIONS = {KiB, MiB, GiB, MB, GB}  # the only constants a figure may contain


@pytest.fixture(scope="module")
def facts() -> dict[str, dict]:
    return {r["id"]: r for r in refdata.facts()}


@pytest.fixture(scope="module")
def estimator() -> Estimator:
    return Estimator(load_models(), load_gpus())


@pytest.fixture(scope="module")
def notes(estimator):
    return {n.id: n for n in build_notes(estimator)}


def fig(note, key: str) -> float:
    return {f.key: f.value for f in note.figures}[key]


def spec(note_id: str, **inputs) -> dict:
    """A copy of a note's entry in the catalogue, with `inputs` set in every one of its scenarios."""
    entry = copy.deepcopy(next(n for n in load_catalogue()["notes"] if n["id"] == note_id))
    for scenario in entry["scenarios"].values():
        scenario.update(inputs)
    return entry


def rebuild(note_id: str, estimator: Estimator, **inputs):
    """The note built again with `inputs` changed in all its scenarios."""
    return build_note(spec(note_id, **inputs), estimator)


def nodes(expr: Expr):
    yield expr
    for child in expr.children():
        yield from nodes(child)


# ---- the catalogue's shape -----------------------------------------------------------------------

def test_catalogue_ids_verdicts_and_articles(notes):
    assert list(notes) == [f"N{i}" for i in range(1, len(notes) + 1)]
    assert len(notes) >= 14
    for n in notes.values():
        assert n.verdict in VERDICTS, n.id
        assert n.quotes and {q.article for q in n.quotes} <= set(ARTICLES), n.id
        assert n.claim_zh == " … ".join(q.text for q in n.quotes)
        for text in (n.claim_zh, n.claim_en, n.setting_en, n.setting_zh, n.explanation_en, n.explanation_zh,
                     n.source, n.article, n.article_zh):
            assert text.strip(), n.id
        keys = [f.key for f in n.figures]
        assert len(keys) == len(set(keys)), n.id
        assert n.error in keys, n.id
        for f in n.figures:
            assert f.unit in UNITS, (n.id, f.key)
            assert f.label_en and f.label_zh, (n.id, f.key)
            assert math.isfinite(f.value), (n.id, f.key)
    assert {n.verdict for n in notes.values()} == set(VERDICTS)


def test_the_seven_b_of_the_notes(notes, estimator):
    """'7B' is the model of the report's summary (the default preset's 7B matrices), or the setting says how
    the articles' round 7B differs from it."""
    generic = load_catalogue()["generic_model"]
    default = yaml.safe_load((REPO / "presets" / "default.yaml").read_text(encoding="utf-8"))
    assert {m["model"] for m in default["matrices"] if m["name"].startswith("7B")} == {generic["summary_model"]}
    models = estimator.tables["Models"]
    exact = f"{int(models[generic['name']]['total_params']):,}"
    summary = f"{int(models[generic['summary_model']]['total_params']):,}"
    sevens = {name for name in models if re.search(r"\b7B\b", name) and "x7B" not in name}
    for n in notes.values():
        used = {s.model for s in n.scenarios.values()} & sevens
        assert used <= {generic["name"], generic["summary_model"]}, (n.id, used)
        if generic["name"] in used:
            for text in (n.setting_en, n.setting_zh):
                assert exact in text and summary in text and generic["summary_model"] in text, n.id
    assert sum(generic["name"] in {s.model for s in n.scenarios.values()} for n in notes.values()) <= 3


def test_claims_are_verbatim_quotes_from_their_articles_and_sections(notes):
    passages = refdata.seed_passages()
    assert set(passages) == set(ARTICLES)
    for article, meta in passages.items():
        assert (meta["title_zh"], meta["title_en"]) == (ARTICLES[article]["title_zh"], ARTICLES[article]["title_en"])
    for n in notes.values():
        for q in n.quotes:
            lines = [p for p in passages[q.article]["passages"] if q.text in p["text"]]
            assert len(lines) == 1, (n.id, q.text)
            assert lines[0]["section"] == q.section, (n.id, q.text)


def test_articles_are_cited_by_title_and_section(notes):
    """Readers see titles and section names, never the articles' file names."""
    for n in notes.values():
        for q in n.quotes:
            article = ARTICLES[q.article]
            assert article["title_en"] in n.article and article["title_zh"] in n.article_zh, n.id
            assert article["sections"][q.section]["en"] in n.article, n.id
            assert article["sections"][q.section]["zh"] in n.article_zh, n.id
        for text in (n.article, n.article_zh):
            assert not re.search(r"\.txt|[0-9a-f]{16}", text), (n.id, text)


def test_stored_passages_are_the_notes_quotes(notes):
    """seed_passages.json holds each quoted line once, and only lines some note quotes (a stale file
    would let a removed claim's context linger)."""
    fragments = [q.text for n in notes.values() for q in n.quotes]
    for article in refdata.seed_passages().values():
        texts = [p["text"] for p in article["passages"]]
        assert len(texts) == len(set(texts))
        for text in texts:
            assert any(f in text for f in fragments), text


def test_scenarios_are_valid_combinations(notes, estimator):
    for n in notes.values():
        for key, s in n.scenarios.items():
            for name, value in s.inputs().items():
                INPUT_BY_NAME[name].check(value, gpus=estimator.gpus, source=None, key_path=f"{n.id}.{key}.{name}",
                                          allow_internal=True)
            assert estimator.skip_reason(s) is None, (n.id, key)
            assert s.name.startswith(n.id), (n.id, key)


# ---- figures come from the estimator -------------------------------------------------------------

def test_figures_read_scenario_terms_and_only_unit_and_quoted_constants(notes, estimator):
    """A figure computes from the scenarios' terms; its only numbers are unit sizes and numbers the claim
    itself states (the article's 70 GB, to measure the error against)."""
    for n in notes.values():
        quoted = {float(x) for x in NUMBER.findall(n.claim_zh.replace(",", ""))}
        for f in n.figures:
            reads = 0
            for node in nodes(f.expr):
                if isinstance(node, Var):
                    key, _, term = node.name.partition(".")
                    assert key in n.scenarios and term in TERM_BY_NAME, (n.id, f.key, node.name)
                    reads += 1
                elif isinstance(node, Lookup):
                    assert isinstance(node.key, Str) and node.key.value in estimator.tables[node.table], (n.id, f.key)
                    assert node.column in next(iter(estimator.tables[node.table].values())), (n.id, f.key)
                    reads += 1
                elif isinstance(node, Num):
                    assert node.value in CONVERSIONS or node.value in quoted, (n.id, f.key, node.value)
            assert reads, f"{n.id}.{f.key} reads nothing from the estimator"


def _perturbed(estimator: Estimator) -> Estimator:
    """The same catalog with every model one layer deeper and a larger vocabulary (generic models 10% larger),
    every GPU 1 GiB smaller and different allocator and CUDA-context assumptions."""
    specs = {}
    for name, s in estimator.specs.items():
        deeper = s.num_hidden_layers + 1
        specs[name] = replace(s, num_hidden_layers=deeper, vocab_size=s.vocab_size + 512,
                              num_moe_layers=deeper if s.num_moe_layers == s.num_hidden_layers else s.num_moe_layers,
                              generic_total_params=int(s.generic_total_params * 1.1))
    gpus = {n: replace(g, memory_mib=g.memory_mib - 1024) for n, g in estimator.gpus.items()}
    return Estimator(specs, gpus, {"cuda_context_mib": 1024, "fragmentation_fraction": 0.2})


# One figure per note that must move when the catalog or the assumptions move.
KEY_FIGURES = {
    "N1": "r_z3_ckpt", "N2": "n_r8_qv", "N3": "l2_tok", "N4": "a_eager", "N5": "st_mixed", "N6": "m_z1",
    "N7": "act_ckpt", "N8": "active", "N9": "kv_actor", "N10": "st_trained", "N11": "b_total", "N12": "h100_usable",
    "N13": "omitted", "N14": "r_b1", "N15": "t_b1", "N16": "device", "N17": "t_1k", "N18": "device",
    "N19": "fwd_reference", "N20": "int4", "N21": "mixed_opt", "N22": "grads", "N23": "critic_train",
    "N24": "mha_tok", "N25": "r_short", "N26": "qv_state", "N27": "b_z3", "N28": "same_states", "N29": "a_flash_s",
    "N30": "t_full", "N31": "read_moe", "N32": "tpot8",
}


def test_every_note_follows_the_estimator(notes, estimator):
    assert set(KEY_FIGURES) == set(notes)
    moved = {n.id: n for n in build_notes(_perturbed(estimator))}
    for note_id, key in KEY_FIGURES.items():
        assert fig(moved[note_id], key) != pytest.approx(fig(notes[note_id], key), rel=1e-9), (note_id, key)


def test_assumptions_alone_move_the_usable_memory(notes, estimator):
    bigger_context = Estimator(load_models(), load_gpus(), {"cuda_context_mib": 2048})
    before, after = notes["N12"], build_note(spec("N12"), bigger_context)
    extra = 2 * GiB - estimator.assumptions["cuda_context_mib"] * MiB
    assert fig(after, "h100_usable") == fig(before, "h100_usable") - extra
    assert fig(after, "h100_total") == fig(before, "h100_total")


def test_note_rebuilt_for_another_gpu(notes, estimator):
    h100 = rebuild("N1", estimator, gpu="H100-80GB-SXM")
    assert fig(h100, "gpu_mem") == 81559 * MiB != fig(notes["N1"], "gpu_mem")
    assert fig(h100, "pooled") != fig(notes["N1"], "pooled")
    # What a layout needs does not depend on the GPU type, only whether it fits.
    assert fig(h100, "r_z3") == fig(notes["N1"], "r_z3") and fig(h100, "static") == fig(notes["N1"], "static")
    assert all(s.gpu == "H100-80GB-SXM" for s in h100.scenarios.values())
    assert "H100-80GB-SXM" in h100.setting_en and "A100" not in h100.setting_en + h100.setting_zh


# ---- explanations carry no typed results ---------------------------------------------------------

PLACEHOLDER = re.compile(r"\{([a-z0-9_]+)\}")
# Names that contain digits (ZeRO-3, fp32, A100-80GB, Llama-2-7B, N4) are not figures.
IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> set[str]:
    return {m.replace(",", "") for m in NUMBER.findall(text)}


def _setting_numbers(note) -> set[str]:
    """Input values of the note's scenarios: a setting, not a result."""
    out = set()
    for s in note.scenarios.values():
        out |= {str(v) for v in s.inputs().values() if isinstance(v, int)}
        out.add(str(s.prompt_len + s.gen_len))
    return out


def stray_numbers(note, text: str) -> set[str]:
    bare = IDENTIFIER.sub(" ", PLACEHOLDER.sub(" ", text))
    return _numbers(bare) - _numbers(note.claim_zh + " " + note.claim_en) - _setting_numbers(note)


def test_explanations_type_no_numbers(notes):
    problems = {(n.id, lang, num) for n in notes.values()
                for lang, text in (("en", n.explanation_en), ("zh", n.explanation_zh))
                for num in stray_numbers(n, text)}
    assert not problems


def test_the_digit_scan_catches_a_typed_result(notes):
    n = notes["N10"]
    assert stray_numbers(n, "Freezing saves 87.5% ({saving})") == {"87.5"}
    assert stray_numbers(n, "as ZeRO-3 and fp32 on an A100-80GB, {saving}, see N5; the article's 70%") == set()


def test_explanations_reference_existing_figures_in_both_languages(notes):
    for n in notes.values():
        keys = {f.key for f in n.figures}
        en = set(PLACEHOLDER.findall(n.explanation_en))
        zh = set(PLACEHOLDER.findall(n.explanation_zh))
        assert en and en <= keys, (n.id, en - keys)
        assert zh == en, (n.id, en ^ zh)
        for text in (n.explanation_en, n.explanation_zh):
            assert "{" not in PLACEHOLDER.sub("", text) and "}" not in PLACEHOLDER.sub("", text), n.id


# ---- figures against independent facts ------------------------------------------------------------

def test_n1_two_a100s_suffice_only_sharded_and_checkpointed(notes, estimator, facts):
    n, bpp = notes["N1"], facts["formula-0172"]["value"]["bytes_per_param"]
    assert fig(n, "static") == bpp * facts["param_count-0060"]["value"]  # Llama-2-7B, the summary's 7B
    assert fig(n, "pooled") == 2 * fig(n, "gpu_mem")
    budgets = {f.key: f.value for f in n.figures if f.key.startswith("r_")}
    fitting = {k for k, v in budgets.items() if v <= fig(n, "gpu_mem")}
    assert fig(n, "fitting") == len(fitting)
    # What the explanation says: the answer holds with ZeRO-2 or ZeRO-3 and checkpointing, and only then.
    assert fitting == {"r_z2_ckpt", "r_z3_ckpt"}
    k = estimator.assumptions["safety_factor"]
    assert fig(n, "dp_over") == pytest.approx(k * n.scenario_values["dp"]["device_total"] / fig(n, "gpu_mem"))
    # The budget applies k, as the report's plan does: without it two more layouts would seem to fit.
    assert sum(v["fits"] for v in n.scenario_values.values()) > fig(n, "fitting")


def test_n2_lora_counts_match_peft(notes, facts):
    n = notes["N2"]
    peft = facts["lora-0581"]["value"]  # Llama-2-7B, r = 8 on q_proj and v_proj
    assert fig(n, "total") == facts["param_count-0060"]["value"] == peft["implied_base"]
    assert fig(n, "n_r8_qv") == peft["trainable"]
    assert fig(n, "s_r8_qv") == pytest.approx(peft["trainable"] / peft["all"], rel=1e-12)
    counts = json.loads(COUNTS.read_text(encoding="utf-8"))["models"]["Llama-2-7B"]["lora"]
    all_linear = next(c for c in counts if c["targets"] == "all-linear" and c["r"] == 16)
    assert fig(n, "n_r16_all") == all_linear["trainable"]
    assert fig(n, "s_r16_all") == pytest.approx(all_linear["trainable"] / all_linear["all_params"], rel=1e-12)
    # The share is linear in the rank.
    assert fig(n, "n_r64_qv") == 8 * fig(n, "n_r8_qv")


def test_n3_kv_bytes_per_token_and_linear_growth(notes, facts):
    n = notes["N3"]
    assert fig(n, "l2_tok") == facts["derived-0142"]["value"] == 524_288
    assert fig(n, "l3_tok") == facts["derived-0145"]["value"] == 131_072
    assert fig(n, "gqa_ratio") == 4
    assert fig(n, "l2_kv1") / GB == pytest.approx(facts["kv_cache-0137"]["value"], rel=0.1)  # "about 2 GB"
    assert fig(n, "l2_growth") == fig(n, "l3_growth") == 2


def test_n4_eager_attention_adds_the_s_squared_term(notes, facts):
    """Korthikanti et al.: the attention scores cost 5·a·s bytes per token per layer (with dropout, 16-bit
    softmax); without dropout but with an fp32 softmax the estimator should be in the same range."""
    n = notes["N4"]
    assert "5as/h" in facts["formula-0174"]["value"]["no_parallelism"]
    heads, seq = 32, 4096  # Llama-2-7B, the note's setting
    per_token_layer = fig(n, "layer_eager") - fig(n, "layer_flash")
    assert per_token_layer == pytest.approx(5 * heads * seq, rel=0.25)
    assert fig(n, "a_eager") > fig(n, "a_flash") > fig(n, "a_flash_ckpt")
    assert fig(n, "a_flash_ckpt") == fig(n, "a_eager_ckpt")


def test_n5_mixed_precision_is_sixteen_bytes_like_fp32(notes, facts):
    n = notes["N5"]
    paper = facts["formula-0172"]["value"]
    assert fig(n, "bpp_mixed") == fig(n, "bpp_fp32") == paper["bytes_per_param"]
    assert fig(n, "ms_mixed") == paper["K"] * 7 * 10**9  # fp32 master + two moments = K·Ψ
    assert fig(n, "st_mixed") / GB == 112
    assert fig(n, "act_mixed") < fig(n, "act_fp32")


def test_n6_zero_stages_follow_the_paper(notes, facts):
    n, K, P, N = notes["N6"], facts["formula-0172"]["value"]["K"], 8, 7 * 10**9
    assert fig(n, "m_z0") == (2 + 2 + K) * N
    assert fig(n, "m_z1") == 2 * N + 2 * N + K * N / P
    assert fig(n, "m_z2") == 2 * N + (2 + K) * N / P
    assert fig(n, "m_z3") == (2 + 2 + K) * N / P
    assert (fig(n, "z1_rep"), fig(n, "z1_sh"), fig(n, "z2_rep"), fig(n, "z2_sh"), fig(n, "z3_sh")) == \
        (4, K, 2, 2 + K, 4 + K)
    # The article's 2N + 12N/P is ZeRO-2 short of its gradient shard 2N/P: about 7 % low at P = 8.
    assert fig(n, "formula") == 2 * N + K * N / P
    assert fig(n, "shortfall") == pytest.approx((2 / P) / (2 + (2 + K) / P), rel=1e-12)


def test_n6_rebuilt_for_the_papers_example(estimator, facts):
    """ZeRO Fig. 1: Ψ = 7.5B on N_d = 64 GPUs."""
    paper = replace(estimator.spec("Generic-7B"), name="ZeRO-7.5B", generic_total_params=7_500_000_000)
    n = build_note(spec("N6", model="ZeRO-7.5B", num_gpus=64), estimator.with_model(paper))
    derived, drawn = facts["derived-0186"]["value"], facts["memory-0185"]["value"]
    assert fig(n, "m_z0") / GB == derived["baseline"] == drawn["baseline_DP"]
    for key, stage in (("m_z1", "P_os"), ("m_z2", "P_os+g"), ("m_z3", "P_os+g+p")):
        assert fig(n, key) / GB == pytest.approx(derived[stage], rel=1e-12)
        assert round(fig(n, key) / GB, 1) == drawn[stage]


def test_n7_checkpointing_keeps_the_layer_inputs(notes, facts):
    """Korthikanti et al.: full recompute keeps 2·s·b·h bytes per layer — still proportional to h."""
    n = notes["N7"]
    assert "2sbh" in facts["formula-0174"]["value"]["full_recompute"]
    layers, seq, hidden = 32, 4096, fig(n, "hidden")
    assert hidden == 4096
    assert fig(n, "act_ckpt") >= 2 * seq * hidden * layers
    assert fig(n, "kept_tok") >= 2 * hidden * layers
    # Checkpointing saves a constant factor, far from the factor D = hidden the claim implies.
    assert 4 < fig(n, "saving") < hidden / 100
    assert fig(n, "saving") == fig(n, "act_none") / fig(n, "act_ckpt")


def test_n8_mixtral_counts(notes, facts):
    n = notes["N8"]
    stated = facts["param_count-0096"]["value"]
    assert fig(n, "total") == facts["param_count-0067"]["value"] == facts["derived-0115"]["value"]["total"]
    assert fig(n, "active") == facts["derived-0115"]["value"]["active"]
    assert fig(n, "total") == pytest.approx(stated["total"], abs=0.05e9)
    assert fig(n, "active") == pytest.approx(stated["active_per_token"], abs=0.05e9)
    assert fig(n, "weights") == 2 * fig(n, "total") and round(fig(n, "weights") / GB, 1) == 93.4
    assert fig(n, "t_1gpu") > fig(n, "gpu_mem") > fig(n, "t_tp2")


def test_n9_only_the_actor_caches(notes, facts):
    n = notes["N9"]
    assert fig(n, "kv_reference") == fig(n, "kv_reward") == fig(n, "kv_critic") == 0
    assert fig(n, "kv_ratio") == 1
    # 8 sequences × 2,048 tokens × the MHA 7B model's bytes per token.
    assert fig(n, "kv_actor") == 8 * 2048 * facts["derived-0142"]["value"]


def test_n10_frozen_saving(notes, facts):
    n = notes["N10"]
    trained = facts["formula-0172"]["value"]["bytes_per_param"]
    frozen = int(re.match(r"(\d+) \* X GB", facts["formula-0179"]["value"]["bf16/fp16"]).group(1))
    assert (fig(n, "bpp_trained"), fig(n, "bpp_frozen")) == (trained, frozen)
    assert fig(n, "saving") == pytest.approx(1 - frozen / trained, rel=1e-12)
    assert fig(n, "saving") > 0.70  # the article's "about 70 %" understates it


def test_n11_both_sizings(notes, facts):
    n, bpp = notes["N11"], facts["formula-0172"]["value"]["bytes_per_param"]
    qwen = facts["param_count-0074"]["value"] + facts["config-0030"]["value"]["embed_dim"]  # + scalar value head
    llama = facts["param_count-0060"]["value"]
    assert fig(n, "params") == llama
    assert fig(n, "a_actor") == bpp * llama
    assert fig(n, "a_reference") == 2 * llama
    assert fig(n, "opt_vs_claim") == pytest.approx(fig(n, "a_actor_opt") / (42 * GB))
    assert fig(n, "b_critic") == bpp * qwen
    assert fig(n, "b_reward") == 2 * qwen
    assert fig(n, "a_total") == sum(fig(n, k) for k in ("a_actor", "a_critic", "a_reference", "a_reward"))
    assert fig(n, "b_total") == fig(n, "a_actor") + fig(n, "a_reference") + fig(n, "b_critic") + fig(n, "b_reward")


def test_n12_units(notes, estimator, facts):
    n = notes["N12"]
    assert "2 * X GB" == facts["formula-0179"]["value"]["bf16/fp16"]
    assert fig(n, "weights") == 14 * GB and round(fig(n, "weights") / GiB, 2) == 13.04
    assert fig(n, "h100_mib") == 81559 and round(fig(n, "h100_total") / GiB, 1) == 79.6
    assert fig(n, "a100_total") == 80 * GiB
    assert fig(n, "gap") == pytest.approx(GiB / GB, rel=1e-12)
    assert fig(n, "h100_usable") == fig(n, "h100_total") - estimator.assumptions["cuda_context_mib"] * MiB


def test_n13_demo_estimate_omits_gradients_and_master_weights(notes, facts):
    n = notes["N13"]
    paper = facts["formula-0172"]["value"]  # fp16 grads 2 + fp32 params 4 are what estimate_gb leaves out
    assert fig(n, "bpp") == paper["bytes_per_param"]
    assert fig(n, "omitted_bpp") == 2 + 4
    assert fig(n, "omitted") == 6 * facts["param_count-0060"]["value"]
    assert fig(n, "omitted_share") == 6 / paper["bytes_per_param"]


def test_n14_n15_inference_and_lora_margins(notes, facts):
    n14 = notes["N14"]
    assert fig(n14, "kv_b1") == 4096 * facts["derived-0142"]["value"]
    # What the explanation says: one or two sequences fit with the safety factor, four do not.
    assert fig(n14, "r_b1") < fig(n14, "r_b2") < fig(n14, "gpu_mem") < fig(n14, "r_b4")
    assert fig(n14, "b4_over") > 1
    n15 = notes["N15"]
    assert fig(n15, "t_b1_ckpt") < fig(n15, "t_b1") < fig(n15, "t_b4")


def test_n16_to_n18_full_fine_tuning_totals(notes, facts):
    bpp, K = facts["formula-0172"]["value"]["bytes_per_param"], facts["formula-0172"]["value"]["K"]
    llama = facts["param_count-0060"]["value"]
    assert fig(notes["N16"], "states") == bpp * llama
    assert fig(notes["N16"], "device") > fig(notes["N16"], "peak") >= fig(notes["N16"], "states")
    assert fig(notes["N16"], "device_vs_claim") > 1
    n17 = notes["N17"]
    assert fig(n17, "states") == (2 + 2 + K) * llama / 8  # ZeRO-3, P = 8
    assert fig(n17, "t_1k") < fig(n17, "t_4k") < fig(n17, "gpu_mem")
    assert n17.verdict == "right" and fig(n17, "t_1k") < 20 * GB  # "below 20 GB" holds
    n18 = notes["N18"]
    assert fig(n18, "states") > fig(n18, "gpu_mem")


def test_n19_n20(notes):
    n19 = notes["N19"]
    assert fig(n19, "saved_frozen") == 0 < fig(n19, "fwd_reference") < fig(n19, "act_actor")
    n20 = notes["N20"]
    assert 0.5 < fig(n20, "int4_bpp") < 0.6  # the payload alone would be 0.5
    assert fig(n20, "vs_table") == pytest.approx(fig(n20, "int4_bpp") / 0.5)


# ---- the claims added for #14: each figure moves when the note's inputs change ----------------------

def test_n21_adam_states_are_six_times_the_weights_under_mixed_precision(notes, estimator, facts):
    n, K = notes["N21"], facts["formula-0172"]["value"]["K"]
    assert fig(n, "fp32_ratio") == 2  # two fp32 moments against fp32 weights: the article's reading
    assert fig(n, "mixed_moments") == 8 / 2  # two fp32 moments against bf16 weights
    assert fig(n, "mixed_ratio") == K / 2  # ZeRO: K = 12 bytes of fp32 states against 2 bytes of weights
    # SGD with momentum keeps one state per parameter: the ratios halve (the master copy stays).
    sgd = rebuild("N21", estimator, optimizer="sgd-momentum")
    assert (fig(sgd, "fp32_ratio"), fig(sgd, "mixed_moments"), fig(sgd, "mixed_ratio")) == (1, 2, 4)
    assert "sgd-momentum" in sgd.setting_en


def test_n22_loss_scaling_costs_no_memory(notes, estimator, facts):
    n = notes["N22"]
    assert fig(n, "mem_effect") == 0 and fig(n, "fp16_peak") == fig(n, "bf16_peak")
    assert fig(n, "grads") == 2 * facts["param_count-0060"]["value"]  # fp16: two bytes per gradient
    bigger = rebuild("N22", estimator, model="Llama-3-8B")
    assert fig(bigger, "grads") == 2 * facts["param_count-0061"]["value"] and fig(bigger, "mem_effect") == 0


def test_n23_the_critic_trains_too(notes, estimator, facts):
    n, K = notes["N23"], facts["formula-0172"]["value"]["K"]
    llama = facts["config-0001"]["value"]
    critic = facts["param_count-0060"]["value"] - llama["vocab_size"] * llama["hidden_size"] + llama["hidden_size"]
    assert fig(n, "critic_train") == (2 + K) * critic  # bf16 gradients + K bytes of fp32 states per parameter
    qwen = facts["param_count-0074"]["value"] + facts["config-0030"]["value"]["embed_dim"]  # + value head
    small = rebuild("N23", estimator, critic_model="Qwen2.5-0.5B")
    assert fig(small, "critic_train") == (2 + K) * qwen
    assert fig(small, "actor_train") == fig(n, "actor_train")


def test_n24_the_cache_holds_k_and_v_only(notes, estimator, facts):
    n = notes["N24"]
    layers = facts["config-0001"]["value"]["num_hidden_layers"]
    per_layer = facts["derived-0142"]["value"] // 2 // layers  # bytes per token, bf16, all layers
    assert fig(n, "mha_per_layer") == per_layer == fig(n, "mha_2h")
    assert fig(n, "mha_tok") == facts["derived-0142"]["value"]
    assert fig(n, "gqa_per_layer") == facts["derived-0145"]["value"] // 2 // layers < fig(n, "gqa_2h")
    assert fig(n, "with_q") == 1.5  # multi-head: Q is as wide as K, so caching it adds half again
    gqa = rebuild("N24", estimator, model="Llama-3-8B")  # both scenarios grouped-query
    assert fig(gqa, "with_q") == fig(n, "gqa_with_q") == 3


def test_n25_no_batch_of_full_fine_tuning_fits_an_80gb_card(notes, estimator, facts):
    n = notes["N25"]
    assert fig(n, "full_over") > 1 and fig(n, "r_short") < fig(n, "r_full")
    # What the explanation says: LoRA at batch 4 fits with checkpointing, not without.
    assert fig(n, "r_lora_ckpt") < fig(n, "gpu_mem") < fig(n, "r_lora")
    # The model states alone (16 bytes per parameter) exceed the card, whatever the batch.
    assert facts["formula-0172"]["value"]["bytes_per_param"] * facts["param_count-0060"]["value"] > fig(n, "gpu_mem")
    h200 = rebuild("N25", estimator, gpu="H200-141GB")
    assert fig(h200, "full_over") < 1 < fig(n, "full_over")


def test_n26_adapter_states_are_hundreds_of_mib(notes, estimator, facts):
    n = notes["N26"]
    qv = 2 * facts["lora-0581"]["value"]["trainable"]  # r = 16 is twice r = 8's count
    counts = json.loads(COUNTS.read_text(encoding="utf-8"))["models"]["Llama-2-7B"]["lora"]
    all_linear = next(c for c in counts if c["targets"] == "all-linear" and c["r"] == 16)["trainable"]
    # fp32 gradient (4 bytes) + AdamW's two fp32 moments (8 bytes per parameter, facts formula-0182)
    per_param = 4 + int(facts["formula-0182"]["value"]["AdamW"].split()[0])
    assert fig(n, "qv_state") == per_param * qv == 96 * MiB
    assert fig(n, "all_state") == per_param * all_linear and round(fig(n, "all_state") / MiB) == 458
    r64 = rebuild("N26", estimator, lora_rank=64)
    assert fig(r64, "qv_state") == 4 * fig(n, "qv_state")


def test_n27_buffers_are_no_fixed_share(notes, estimator):
    n = notes["N27"]
    assert fig(n, "share_serve") < fig(n, "share_z3") and fig(n, "share_z3") > 0.2
    # Without the fixed parts (context, NCCL) only the allocator's reserve is left: f / (1 + f) everywhere.
    f = estimator.assumptions["fragmentation_fraction"]
    bare = build_note(spec("N27"), Estimator(load_models(), load_gpus(), {"cuda_context_mib": 0, "comm_buffer_mib": 0}))
    for key in ("share_serve", "share_z2", "share_z3"):
        assert fig(bare, key) == pytest.approx(f / (1 + f), rel=1e-6), key


def test_n28_the_catalogs_critics(notes, estimator, facts):
    """The default preset's PPO critic is the actor's model; the ppo-rlhf preset also has the note's small one."""
    n = notes["N28"]
    presets = {name: yaml.safe_load((REPO / "presets" / f"{name}.yaml").read_text(encoding="utf-8"))
               for name in ("default", "ppo-rlhf")}

    def critics(preset):
        workloads = [w for m in preset["matrices"] for w in (m["workload"] if isinstance(m["workload"], list)
                                                             else [m["workload"]]) if w["type"] == "ppo"]
        return {w.get("critic_model") for w in workloads}
    assert critics(presets["default"]) == {None}
    assert n.scenarios["small_critic"].model in critics(presets["ppo-rlhf"])
    qwen = facts["param_count-0074"]["value"] + facts["config-0030"]["value"]["embed_dim"]
    llama = facts["param_count-0060"]["value"]
    assert fig(n, "small_ratio") == pytest.approx(llama / qwen) and 10 <= fig(n, "small_ratio") <= 20
    assert fig(n, "same_ratio") == pytest.approx(1, abs=0.05)
    bigger = rebuild("N28", estimator, critic_model="Qwen2.5-1.5B")
    assert fig(bigger, "small_ratio") < fig(n, "small_ratio") and fig(bigger, "same_extra") < fig(n, "same_extra")


def test_n29_only_eager_attention_grows_with_s_squared(notes, estimator, facts):
    n = notes["N29"]
    assert fig(n, "flash_growth") == pytest.approx(2, rel=1e-3)  # linear (the fp32 log-probs are linear too)
    assert 2 < fig(n, "eager_growth") < 4
    # The scores part of a layer's saved bytes per token grows with S (Korthikanti: 5·a·s/h per h), so S².
    v = n.scenario_values
    scores = {k: v[f"eager_{k}"]["layer_saved_per_token"] - v[f"flash_{k}"]["layer_saved_per_token"] for k in ("s", "2s")}
    assert "5as/h" in facts["formula-0174"]["value"]["no_parallelism"]
    assert scores["2s"] == pytest.approx(2 * scores["s"], rel=1e-3)
    small = rebuild("N29", estimator, model="Llama-3.2-1B")
    assert fig(small, "flash_growth") == pytest.approx(2, rel=1e-3)
    assert fig(small, "eager_growth") != pytest.approx(fig(n, "eager_growth"), rel=1e-3)


# ---- the cards readers see ----------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "zh"])
def test_cards_state_the_error_and_cite_title_and_section(notes, lang):
    cards = {c.id: c for c in _notes(SimpleNamespace(notes=tuple(notes.values())), load_messages(lang))}
    for n in notes.values():
        card, error = cards[n.id], next(f for f in n.figures if f.key == n.error)
        assert card.error.value == format_figure(error.value, error.unit)
        assert card.error.label == (error.label_zh if lang == "zh" else error.label_en)
        assert len(card.figures) == len(n.figures) - 1 and card.error not in card.figures
        assert card.article == (n.article_zh if lang == "zh" else n.article)
        assert card.source == (n.source_zh if lang == "zh" else n.source)
        assert "{" not in "".join(p.text for p in card.explanation) + card.setting, n.id


# ---- the notes reach the JSON output ---------------------------------------------------------------

def test_notes_in_json_build(tmp_path, notes):
    result = CliRunner().invoke(main, ["build", "--format", "json", "-o", str(tmp_path), "--quiet"],
                                env={"SOURCE_DATE_EPOCH": "0"})
    assert result.exit_code == 0, result.output
    out = json.loads((tmp_path / "default.json").read_text(encoding="utf-8"))
    assert [n["id"] for n in out["notes"]] == list(notes)
    first = out["notes"][0]
    assert first["verdict"] == notes["N1"].verdict and first["article"] == notes["N1"].article
    assert {f["key"]: f["value"] for f in first["figures"]}["static"] == fig(notes["N1"], "static")
    assert set(first["scenarios"]) == set(notes["N1"].scenarios)


# ---- the data file: mistakes are reported with the file and key path ------------------------------

def _broken(mutate) -> str:
    entry = spec("N3")
    mutate(entry)
    with pytest.raises(InputError) as err:
        build_note(entry, Estimator(load_models(), load_gpus()), key_path="notes[2]")
    return err.value.one_line()


@pytest.mark.parametrize("mutate, message", [
    (lambda e: e.update(verdit="wrong"), "notes.yaml: notes[2].verdit: unknown key 'verdit' (did you mean 'verdict'?)"),
    (lambda e: e.pop("error"), "notes.yaml: notes[2]: missing key 'error'"),
    (lambda e: e.update(verdict="false"), "notes.yaml: notes[2].verdict: unknown verdict 'false'"),
    (lambda e: e.update(error="l2_kv9"), "notes.yaml: notes[2].error: unknown figure 'l2_kv9'"),
    (lambda e: e["figures"]["l2_tok"].update(expr="l2_b1.kv_cache ÷"),
     "notes.yaml: notes[2].figures.l2_tok.expr: expected a number, a name, a string or '(', found the end at "
     "character 17 of 'l2_b1.kv_cache ÷'"),
    (lambda e: e["figures"]["l2_tok"].update(expr="l2_b1.kv_cash"),
     "notes.yaml: notes[2].figures.l2_tok.expr: unknown term 'kv_cash' (did you mean 'kv_cache'?)"),
    (lambda e: e["figures"]["l2_tok"].update(expr="l2_b3.kv_cache"),
     "notes.yaml: notes[2].figures.l2_tok.expr: 'l2_b3.kv_cache': no scenario 'l2_b3'"),
    (lambda e: e["figures"]["l2_tok"].update(unit="GB"), "notes.yaml: notes[2].figures.l2_tok.unit: unknown unit 'GB'"),
    (lambda e: e.update(explanation_zh=e["explanation_zh"] + "{l2_kv3}"),
     "notes.yaml: notes[2].explanation_zh: unknown figure 'l2_kv3'"),
    (lambda e: e["quotes"][0].update(section="2. KV Cache"),
     "notes.yaml: notes[2].quotes[0].section: unknown section '2. KV Cache'"),
    (lambda e: e["quotes"][0].update(article="blog"), "notes.yaml: notes[2].quotes[0].article: unknown article 'blog'"),
    (lambda e: e["scenarios"]["l2_b1"].update(batch_sise=2),
     "notes.yaml: notes[2].scenarios.l2_b1.batch_sise: unknown key 'batch_sise' (did you mean 'batch_size'?)"),
    (lambda e: e["scenarios"]["l2_b1"].update(kv_dtype="fp6"),
     "notes.yaml: notes[2].scenarios.l2_b1.kv_dtype: unknown kv dtype 'fp6'"),
    (lambda e: e["scenarios"]["l2_b1"].update(num_gpus=3, tp_size=2),
     "notes.yaml: notes[2].scenarios.l2_b1: cannot run: tp_size 2 does not divide num_gpus 3"),
])
def test_mistakes_in_the_data_name_file_and_key(mutate, message):
    assert _broken(mutate).startswith(message)


def test_the_data_file_top_level_is_checked(tmp_path):
    text = (REPO / "templates" / "notes.yaml").read_text(encoding="utf-8").replace("\nbases:", "\nbasis:", 1)
    path = tmp_path / "notes.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_catalogue(path)
    assert err.value.one_line() == ("notes.yaml: basis: unknown key 'basis' (did you mean 'bases'?) "
                                    "(known: articles, bases, derived, generic_model, notes)")


def test_n30_full_checkpointing_costs_a_third_more_time_at_any_shape(notes, estimator):
    """One more forward on top of forward and backward (2N on 6N FLOPs per token, attention alike): a third,
    above the article's 20-30 %; selective recomputation (attention scores only) costs far less and, with
    FlashAttention, saves nothing."""
    n = notes["N30"]
    assert fig(n, "full_cost") == pytest.approx(1 / 3, rel=1e-6) and fig(n, "flops_extra") == pytest.approx(1 / 3)
    assert fig(n, "full_cost") > 0.30 and 0 < fig(n, "sel_cost") < 0.10
    assert fig(n, "act_sel") == fig(n, "act_none") > 10 * fig(n, "act_full")
    for changes in ({"batch_size": 8}, {"model": "Llama-3.1-8B", "seq_len": 16384}, {"gpu": "H100-80GB-SXM"}):
        other = rebuild("N30", estimator, **changes)
        assert fig(other, "full_cost") == pytest.approx(1 / 3, rel=1e-6), changes


def test_n31_moe_saves_training_time_but_not_batched_decode_time(notes, facts):
    """Training FLOPs follow the active parameters (about 6 per active parameter and token, as Kaplan's rule
    with N = active), so Mixtral trains about as fast as the 13B dense model; a batched decode step reads
    every expert, so it takes as long as the weights take to read."""
    n = notes["N31"]
    assert 6 < fig(n, "fpp_active") < 6.5 and fig(n, "fpp_total") < 2
    assert 0.8 < fig(n, "train_ratio") < 1.25
    assert fig(n, "decode_ratio") == pytest.approx(fig(n, "w_moe") / fig(n, "w_dense"), rel=1e-6)
    assert fig(n, "decode_ratio") > 3
    assert abs(fig(n, "active") / fig(n, "dense_params") - 1) < 0.02


def test_n32_a_bigger_batch_buys_throughput_with_latency_and_kv_memory(notes):
    """Batch 1 -> 8 -> 32 of Llama-2-7B at 2,048 + 2,048 tokens: throughput grows, less than the batch (each
    decode step reads the weights once but every sequence's cache); each user's speed falls; the prefill
    (first token) grows with the batch; the cache is linear in it (2 × 32 layers × 4,096 × 2 bytes per
    token, the article's 0.5 MB) and at 32 no longer fits with k."""
    n = notes["N32"]
    assert 1 < fig(n, "gain8") < 8 and fig(n, "gain8") < fig(n, "gain32") < 32
    assert fig(n, "tpot_ratio") > 1.5 and fig(n, "user8") < fig(n, "user1") / 1.5
    assert fig(n, "user8") == pytest.approx(fig(n, "tps8") / 8)
    assert fig(n, "ttft8") == pytest.approx(8 * fig(n, "ttft1"), rel=0.01)
    assert fig(n, "kv1") == 2 * 32 * 4096 * 2 * (2048 + 2048)
    assert (fig(n, "kv8"), fig(n, "kv32")) == (8 * fig(n, "kv1"), 32 * fig(n, "kv1"))
    assert n.scenario_values["b8"]["fits_recommended"] == 1 and fig(n, "budget32") > fig(n, "gpu_mem")

