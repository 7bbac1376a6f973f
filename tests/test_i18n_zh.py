"""The Chinese edition is complete: every source line, value word and preset text has a translation,
and each translation carries the same numbers and placeholders as the English text it translates,
so a changed English source (a new figure, a corrected citation) shows up here as a failure.

Keys of zh.json "sources" (read by i18n.Catalogue.source): a term's name, "group.<name>" for the
RLHF group terms, "<Table>.<row>" for the lookup tables' row notes, and the English text itself for
the validation data's reasons (why a published figure is excluded, why an estimate misses it).
"""
import functools
import json
import re

import pytest
import yaml

from reportgen.model import lookups
from reportgen.model.estimate import group_terms
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator
from reportgen.report.i18n import catalogue_path, load_catalogue, load_workbook_catalogue
from reportgen.pipeline import validation_figures, validation_rows
from reportgen.scenarios.presets import bundled_presets, load_preset
from reportgen.model.terms import ASSUMPTIONS, ROLE_TERMS
from conftest import bundled_report

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
PLACEHOLDER = re.compile(r"{[^{}]*}")
CJK = re.compile(r"[\u4e00-\u9fff]")
# ASCII punctuation touching a Chinese character: Chinese sentences take full-width , ; : ( ) ! ?
ASCII_PUNCTUATION = re.compile(r"[\u4e00-\u9fff][,;:!?()]|[,;:!?()][\u4e00-\u9fff]")
GROUPS = ((("actor", "critic", "reference", "reward"), "colocated"),
          (("actor", "critic", "reference", "reward"), "separate"),
          (("actor", "critic", "reference", "reward", "rollout"), "colocated"),  # trainers beside engines apart
          (("policy", "reference"), "colocated"))
# Value words the views insert into labels from scenario data (`value.<input>.<value>`).
VALUE_WORDS = {"checkpointing": lookups.CHECKPOINTING, "offload": lookups.OFFLOAD, "head": lookups.HEADS,
               "logits": lookups.LOGITS, "dropout": lookups.DROPOUT, "lora_dropout": lookups.LORA_DROPOUT,
               "adapter_dtype": ("model",)}  # fp32 stays a code value
# Retired wording, replaced everywhere by 显存总占用, 已预留峰值, 条件, 原始材料 and 采购总价, and by the value
# words of zh.json (完整重计算, 选择性重计算; 批量 as in the axes and charts).
RETIRED = ("设备总量", "保留峰值", "设定", "原材料", "采购成本", "完全重算", "完全检查点", "选择性重算", "批大小")


def english_sources() -> dict[str, str]:
    """Every English source/explanation text the report prints, by its zh.json "sources" key."""
    out = {t.name: t.source for t in ROLE_TERMS if t.source}
    for roles, placement in GROUPS:
        for t in group_terms(roles, placement):
            if t.source:
                assert out.setdefault("group." + t.name, t.source) == t.source, t.name
    for table in lookups.LOOKUP_TABLES:
        out.update({f"{table.name}.{row}": note for row, note in table.notes.items() if note})
    return out | validation_texts()


@functools.lru_cache(maxsize=None)
def validation_texts() -> dict[str, str]:
    """The reasons the validation appendix prints from the data, keyed by themselves."""
    estimator = Estimator(load_models(), load_gpus())
    figures, excluded = validation_figures(estimator)
    texts = ([r.miss for r in validation_rows(estimator)] + [f.miss for f in figures]
             + [f.memory_miss for f in figures] + [x.why for x in excluded])
    return {text: text for text in texts if text}


def numbers(text: str) -> set[str]:
    return set(NUMBER.findall(text))


def raw(lang: str) -> dict:
    return json.loads(catalogue_path(lang).read_text(encoding="utf-8"))


def zh_texts() -> dict[str, str]:
    """Every Chinese text of the catalogues (the report's and the workbook's) and of the bundled presets,
    by a readable key."""
    data = raw("zh")
    out = {f"{section}:{k}": v for section in ("messages", "terms", "sources") for k, v in data[section].items()}
    workbook = json.loads((catalogue_path("zh").parent / "xlsx.zh.json").read_text(encoding="utf-8"))
    out |= {f"xlsx.{section}:{k}": v for section in ("messages", "terms") for k, v in workbook[section].items()}
    for name in bundled_presets():
        p = load_preset(name)
        out[f"{name}:title_zh"], out[f"{name}:description_zh"] = p.title_zh, p.description_zh
        out.update({f"{name}:{m}": z for m, z in p.matrix_names_zh.items()})
    return out | notes_zh_texts()


def notes_zh_texts() -> dict[str, str]:
    """The Chinese texts of the error-correction notes (templates/notes.yaml) the report prints; the quoted
    claims stay verbatim, whatever their punctuation."""
    from reportgen.report.notes import load_catalogue as load_notes
    notes = load_notes()
    out = {f"notes.yaml:articles.{a}.{sec}": names["zh"] for a, meta in notes["articles"].items()
           for sec, names in meta["sections"].items()}
    for n in notes["notes"]:
        out.update({f"notes.yaml:{n['id']}.{k}": n[k] for k in ("setting_zh", "explanation_zh", "source_zh")})
        out.update({f"notes.yaml:{n['id']}.figures.{k}": f["zh"] for k, f in n["figures"].items()})
    return out


def test_every_source_line_has_a_chinese_translation():
    zh = load_catalogue("zh").sources
    missing = sorted(set(english_sources()) - set(zh))
    assert not missing, missing


def test_no_translation_is_left_over_from_a_removed_source():
    stale = sorted(set(load_catalogue("zh").sources) - set(english_sources()))
    assert not stale, stale


@pytest.mark.parametrize("key", sorted(english_sources()))
def test_translation_keeps_the_numbers_and_placeholders(key):
    en, zh = english_sources()[key], load_catalogue("zh").sources[key]
    assert numbers(zh) == numbers(en), (key, sorted(numbers(zh) ^ numbers(en)))
    assert set(PLACEHOLDER.findall(zh)) == set(PLACEHOLDER.findall(en)), key
    assert CJK.search(zh), f"{key}: not translated"


def test_citations_are_kept_verbatim():
    """arXiv ids, issue numbers and URLs of the English sources appear unchanged in the Chinese text."""
    zh = load_catalogue("zh").sources
    pattern = re.compile(r"arXiv:\d+\.\d+|#\d+|https?://\S+|[\w.-]+/[\w.-]+#\d+")
    for key, en in english_sources().items():
        for citation in pattern.findall(en):
            assert citation in zh[key], (key, citation)


def test_the_catalogues_sources_are_translated_each_keeping_its_numbers_and_links():
    """zh.json "texts" translates the GPU catalogue's memory and price sources, every catalogue or model-shape
    source with an English phrase, and nothing else (no translation of a source since edited)."""
    from reportgen.model.catalog import load_gpus
    from reportgen.model.shape import MODEL_TERMS
    gpus = load_gpus().values()
    every = ({t for g in gpus for t in (g.memory_source, g.price_source, g.spec_source, g.marketed_memory)}
             | {m.source for m in bundled_report("default").models.values()} | {s.source for s in MODEL_TERMS})
    prose = {t for t in every if re.search(r"[A-Za-z]{3,}(?:[ ,;:]+[A-Za-z]{3,}){2,}", re.sub(r"https?://\S+", "", t))}
    texts = load_catalogue("zh").texts
    assert {t for g in gpus for t in (g.memory_source, g.price_source)} <= set(texts)
    assert prose - set(load_catalogue("zh").sources.values()) - set(texts) <= {
        s.source for s in MODEL_TERMS if s.name in load_catalogue("zh").sources}  # translated by name instead
    assert set(texts) <= every
    for en, zh in texts.items():
        assert CJK.search(zh) and numbers(zh) == numbers(en), (en, sorted(numbers(zh) ^ numbers(en)))
        for link in re.findall(r"https?://[^\s()（）]+", en):
            assert link.rstrip(".") in zh, (en, link)


def test_an_edited_catalogue_source_shows_as_written():
    assert load_catalogue("zh").text("measured on our own H100 node") == "measured on our own H100 node"


def test_value_words_are_translated_and_leave_english_unchanged():
    en, zh = raw("en")["messages"], raw("zh")["messages"]
    for axis, values in VALUE_WORDS.items():
        for v in values:
            key = f"value.{axis}.{v}"
            assert en[key] == v, key  # the English report shows the raw value, as before
            assert CJK.search(zh[key]), key


def test_assumption_notes_keep_their_numbers():
    zh = load_catalogue("zh").terms
    for a in ASSUMPTIONS:
        assert numbers(zh[a.name + ".help"]) == numbers(a.help), a.name


@pytest.mark.parametrize("name", sorted(bundled_presets()))
def test_bundled_presets_have_chinese_texts(name):
    p = load_preset(name)
    assert CJK.search(p.title_zh) and CJK.search(p.description_zh), name
    raw = yaml.safe_load(bundled_presets()[name].read_text(encoding="utf-8"))
    matrices = [m["name"] for m in raw.get("matrices", [])]
    assert sorted(p.matrix_names_zh) == sorted(matrices), name
    for job in raw.get("purchase", {}).get("jobs", []):  # a purchase's jobs are named on the decision page
        assert CJK.search(job.get("name_zh", "")), (name, job["name"])
    for text in (p.title_zh, *p.matrix_names_zh.values()):
        assert CJK.search(text), (name, text)


def test_chinese_text_uses_full_width_punctuation_and_current_terms():
    for key, text in zh_texts().items():
        assert not ASCII_PUNCTUATION.search(text), (key, ASCII_PUNCTUATION.search(text).group())
        for word in RETIRED:
            assert word not in text, (key, word)


def test_every_chinese_character_is_in_the_bundled_font():
    """The PDF's CJK font is a GB2312 subset of Noto Sans CJK SC (templates/fonts/README.md)."""
    for key, text in zh_texts().items():
        for ch in set(CJK.findall(text)):
            try:
                ch.encode("gb2312")
            except UnicodeEncodeError:
                pytest.fail(f"{key}: {ch!r} is not in GB2312")


def test_every_workbook_input_column_is_labelled_and_explained_in_chinese():
    """The zh workbook's input headers and their cell prompts (data validation) are Chinese: the
    header from the workbook's or the report's catalogue, the prompt from the workbook's."""
    from types import SimpleNamespace

    from reportgen.report.i18n import load_workbook_catalogue
    from reportgen.model.inputs import INPUTS
    from reportgen.writers.xlsx.layout import column_label

    t = load_workbook_catalogue("zh")
    for i in INPUTS:
        header = column_label(t, "Scenarios", SimpleNamespace(name=i.name, label=i.label))
        assert CJK.search(header) or i.name in ("dropout", "lora_dropout"), (i.name, header)  # written so in Chinese
        assert f"{i.name}.help" in t.terms, f"{i.name}.help has no Chinese text in xlsx.zh.json"


def test_sensitivity_titles_name_the_workload_in_chinese():
    """The sensitivity section titles a scenario in the report's language (the workload word), not by its
    English default label."""
    from reportgen.report.views import build_view
    report = bundled_report("default")
    zh = load_catalogue("zh")
    words = {w: zh(f"workload.{w}") for w in ("inference", "full", "lora", "qlora")}
    titles = [s.title for s in build_view(report, "zh").sensitivity]
    assert titles and all(any(f" · {word} · " in title for word in words.values()) for title in titles), titles
    assert not any(f" · {w} · " in title for title in titles for w in ("inference", "full")), titles
    assert {s.title for s in build_view(report, "en").sensitivity} != set(titles)


def test_skipped_combinations_are_named_in_chinese():
    """The appendix's skipped combinations name their workload (and an RLHF group its placement) in the
    report's language, as the English edition does in its words."""
    from reportgen.report.views import build_view
    report = bundled_report("default")
    assert report.skipped
    zh, en = build_view(report, "zh").skipped, build_view(report, "en").skipped
    zh_labels, en_labels = [r[1].text for r in zh.rows], [r[1].text for r in en.rows]
    english = ("inference", "full", "colocated", "separate")
    assert not any(f" · {w}" in label for label in zh_labels for w in english), zh_labels
    assert any(" · full fine-tuning · " in label for label in en_labels), en_labels
    assert len(zh_labels) == len(en_labels) and zh_labels != en_labels


# What the zh management edition may spell in Latin letters besides ZH_LATIN_ALLOWED and the catalogue's names:
# acronyms and identifiers (upper case, digits, _ . or inner capitals: FP32, NCCL, N5, head_dim, RMSNorm), single
# letters (the notes' variables: r, q, v, in × out), units, and the terms of art and command words below.
ZH_TERMS_OF_ART = {
    "ms", "bit", "FLOPs",  # units
    "rollout", "softmax", "logit", "logits", "autocast", "log-sum-exp", "beam", "search", "top-2",  # terms of art
    # KV Cache, LM head, token id, a layer's name, as the Chinese literature writes them
    "Cache", "head", "id", "RMSNorm",
    "adamw-8bit",  # an optimizer's code value (as adamw)
    "generate", "main", "ref", "inf",  # code the notes quote (generate(), def main, ref model, inf/NaN)
    "gate", "up", "down",  # the MLP projections LoRA adapts (gate_proj, up_proj, down_proj)
    "in", "out",  # a matrix's dimensions, in × out
    "column", "key", "if", "else",  # the formulas' notation column(key) and (a if c else b), explained in the method
    "build", "pdf-appendix",  # the command `reportgen build --pdf-appendix`
    "Llama", "Mixtral", "Hugging", "Face", "FlashAttention", "PyTorch", "PEFT", "InstructGPT", "DeepSpeed-Chat",
    "OpenRLHF", "Plan", "Charts",  # model families, libraries, products, workbook sheets
}


# The full edition (HTML, --pdf-appendix) also cites: the libraries, projects, datasets and products its sources
# name, the titles of the works it cites (below, each exactly), their authors ("Rajbhandari 等 2020"), what it
# quotes ('…', “…”, 《…》: log lines, config values, section titles), record ids (pub-srv-013), and the validation
# runs named as their sources name them (cells marked "as-published"); source links, paths and repository
# references (a/b, a/b#123) are citations too. Its method tables add terms of art the Chinese literature writes
# in English (all-reduce, top-k, roofline…) and the formulas' variables (tp, dp, pp, ep, cp, vp).
ZH_CITED_NAMES = {
    "transformers", "torchtune", "torchtitan", "litgpt", "lit-gpt", "llm-foundry", "mosaicml", "ms-swift", "swift",
    "peft", "deepspeed", "pytorch", "torch", "bitsandbytes", "nccl-tests", "llm-d", "Megatron", "Megatron-Core",
    "Megatron-FSDP",
    "Megatron-LM", "Megatron-Bridge", "SGLang", "Lightning", "Fabric", "Trainer", "Gemini", "fms-hf-tuning", "liger",
    "Ulysses", "youpingfang", "Databricks", "Uptime", "Institute", "Mistral", "Grand", "Teton", "Hopper", "NVLink",
    "NVSwitch", "PCIe", "HBM2e",
    "Tensor", "Core", "Python", "autograd", "alpaca", "alpaca-cleaned", "Alpaca", "cls-fudan-news-zh", "Qwen",
    "Gemma", "Gemma-2", "Phi", "Phi-2", "Phi-3", "Phi-4", "phi", "Falcon", "gpt-oss-20b", "gpt-oss-120b", "Instruct",
    "Mamba-2", "Nemotron-H",  # the state-space layer of hybrid models and their family, as their papers name them
    "base", "oracle",
    # the workbook's sheet names (formulas name them), as Plan above; keys; the check's value
    "GPUs", "Precisions", "Dtypes", "Optimizers", "Scenarios", "Terms", "Notes", "Assumptions", "Models", "Choices",
    "Decision", "Ctrl", "Shift", "ok", "currency",
    # products, PyTorch's meta device
    "Volta", "Ada", "Blackwell", "Generation", "Instinct", "Tesla", "HBM3e", "Linux", "meta",
}
ZH_CITED_TITLES = (
    "Reducing Activation Recomputation in Large Transformer Models", "Reducing Activation Recomputation",
    "Attention Is All You Need", "Efficiently Scaling Transformer Inference",
    "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
    "Training Deep Nets with Sublinear Memory Cost", "Sublinear Memory Cost", "Scaling Laws for Neural Language Models",
    "Efficient Memory Management for Large Language Model Serving with PagedAttention",
    "Mastering LLM Techniques: Inference Optimization", "Mixed Precision Training", "Mixtral of Experts",
    "Mixtral of experts", "Ring Attention", "Distributed Optimizer", "Performance considerations",
    "Handling transposes",
    "FP8 weight caching", "Transformer Engine",
)
ZH_FULL_TERMS_OF_ART = {
    "tp", "dp", "pp", "ep", "cp", "vp",  # the formulas' parallel degrees
    "all-reduce", "all-gather", "all-to-all", "alltoall", "deepep", "reduce-scatter", "ring", "top-k", "roofline", "matmul",
    "tanh", "tanh-GELU", "fc1", "act", "proj", "qkv", "query", "Query", "Key", "hidden", "one-hot", "log-softmax",
    "absmax", "int64", "bfloat16", "bf16-true", "float8", "compile", "chunk", "shell", "pull", "request", "ipg", "nvls",
    "fused", "foreach", "auto", "None", "True", "bs", "grad", "loss", "scale", "unscale", "recompute", "rank",
    # code the tables quote: options, flags, buffer and module names
    "weight", "sequence-parallel", "query-gpu", "total", "free", "dropout", "rocm-smi", "showmeminfo", "vram",
    "conv1d", "dt",  # Mamba-2's modules and projections (conv1d, z, x, B, C, dt)
}


def _zh_text(html: str, cited: bool) -> str:
    """A zh edition's text less what it quotes or codes (and, `cited`: the full edition's citations)."""
    from html.parser import HTMLParser

    class Text(HTMLParser):
        def __init__(self):
            super().__init__()
            self.skip, self.parts = [], []

        def handle_starttag(self, tag, attrs):
            a = dict(attrs)
            css = (a.get("class") or "").split()
            skipped = (tag in ("style", "script", "svg", "title") or (tag == "dd" and a.get("lang") == "zh-Hans")
                       or any(c in css for c in ("code", "formula"))
                       or (cited and ("as-published" in css or (tag == "a" and a.get("href")))))
            if tag not in ("br", "img", "meta", "link", "col", "wbr"):
                self.skip.append(skipped or (self.skip[-1] if self.skip else False))

        def handle_endtag(self, tag):
            if tag not in ("br", "img", "meta", "link", "col", "wbr") and self.skip:
                self.skip.pop()

        def handle_data(self, data):
            if not (self.skip and self.skip[-1]):
                self.parts.append(data)

    parser = Text()
    parser.feed(html)
    text = " ".join(parser.parts)
    if cited:
        return _cited_text(text)
    # links and `code` the notes quote; zero-width spaces are where code may break, not word boundaries
    text = re.sub(r"https?://\S+|`[^`]*`", "", text).replace("\u200b", "")
    return text


def _zh_stray_words(html: str, report, cited: bool) -> tuple[int, list[str]]:
    """The Latin words of a zh edition's text and those not of an allowed kind (see ZH_TERMS_OF_ART; `cited`:
    the full edition's citations too)."""
    return _stray(_zh_text(html, cited), report, cited)


def _stray(text: str, report, cited: bool) -> tuple[int, list[str]]:
    from test_report_pdf import ZH_LATIN_ALLOWED
    names = set()
    for n in list(report.gpus) + [g.vendor for g in report.gpus.values()] + list(report.models) + list(bundled_presets()):
        names |= set(re.findall(r"[A-Za-z][A-Za-z0-9_.\-]*", n))
    words = re.findall(r"(?<![0-9A-Za-z])(?:[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z])", text)

    def allowed(w: str) -> bool:
        return (w in ZH_LATIN_ALLOWED or w in names or w in ZH_TERMS_OF_ART or len(w) == 1
                or (cited and (w in ZH_CITED_NAMES or w in ZH_FULL_TERMS_OF_ART
                               or re.fullmatch(r"[a-z]+(?:-[a-z]+)*-\d+|[rv]\d+|zero\d", w) is not None))
                or re.fullmatch(r"[A-Z0-9][A-Z0-9\-]+", w) is not None  # acronyms, note ids
                or re.search(r"[_.]|[a-z][A-Z]|\(", w) is not None  # identifiers
                or re.fullmatch(r"(ZeRO|TP|EP)-?\d+", w) is not None)
    return len(words), sorted({w for w in words if not allowed(w)})


def _cited_text(text: str) -> str:
    """Text less what it cites and quotes (the full edition's rules above)."""
    text = re.sub(r"https?://\S+|`[^`]*`", "", text).replace("\u200b", "")
    text = re.sub(r"'[^'\n]*'|“[^”]*”|《[^》]*》", " ", text)
    for title in ZH_CITED_TITLES:
        text = text.replace(title, " ")
    text = re.sub(r"[\w.\-]+(?:/[\w.\-]+)+(?:#\d+)?|#\d+", " ", text)  # paths, repositories, issues
    return re.sub(r"[A-Z][a-z]+(?:\s*(?:和|与)\s*[A-Z][a-z]+)?\s*等?\s*\d{4}", " ", text)  # Author (等) year


@pytest.mark.parametrize("preset", ["default", "procurement"])
def test_the_chinese_management_edition_has_no_english_prose(preset):
    """Every text of the zh management report (the PDF's HTML: summary, decision, capacity, method, notes,
    validation) outside the citations (the articles' quoted claims), code cells (term names, formulas) and the
    allowed kinds above is Chinese: any other English word is an untranslated string (#34)."""
    from reportgen.writers.pdf import pdf_html
    report = bundled_report(preset)
    n, stray = _zh_stray_words(pdf_html(report, "zh", appendix=False), report, cited=False)
    assert n > 1000 and not stray, " ".join(stray)  # the edition's Latin words were read, and all are allowed


@pytest.mark.parametrize("preset", ["default", "procurement"])
def test_the_chinese_full_edition_has_no_english_prose_outside_its_citations(preset):
    """The zh HTML (and --pdf-appendix) adds the method's tables, the GPU and assumption sources and the
    validation records: their prose is Chinese too; what stays in Latin letters is what they cite (#34)."""
    from reportgen.writers.html import render_html
    report = bundled_report(preset)
    n, stray = _zh_stray_words(render_html(report, "zh"), report, cited=True)
    assert n > 3000 and not stray, " ".join(stray)


@pytest.mark.parametrize("preset", ["default", "procurement"])
@pytest.mark.slow  # several seconds: the full run has it
def test_the_chinese_workbook_has_no_english_prose(preset, tmp_path):
    """The zh workbook's texts (sheet texts, column explanations and comments, notes, catalogue sources) are
    Chinese outside what they cite, as the full edition's. Not read: formulas, the formula-name rows and the
    Terms sheet's formula column (code), and cells without a sentence (names, input values, units: data)."""
    import openpyxl
    from reportgen.writers import xlsx
    report = bundled_report(preset)
    path = tmp_path / f"{preset}.zh.xlsx"
    xlsx.write(report, path, "zh")
    wb = openpyxl.load_workbook(path)
    claim = load_workbook_catalogue("zh")("notes.claim")
    texts = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                v = cell.value
                if cell.comment is not None:
                    texts.append(cell.comment.text)
                if not isinstance(v, str) or v.startswith("=") or (ws.title == "Terms" and cell.column == 4):
                    continue
                if ws.title == "Notes" and ws.cell(cell.row, 1).value == claim:
                    continue  # the article's own words (quoted as the HTML's claims are)
                if CJK.search(v) or re.search(r"[A-Za-z]{2,}(?:[ ,;:]+[A-Za-z]{2,}){3,}", v):  # a sentence
                    texts.append(v)
    for dv in (dv for ws in wb.worksheets for dv in ws.data_validations.dataValidation):
        texts += [dv.prompt or "", dv.error or ""]
    # a note's figures are written [key] and its scenarios "key：NoteScenarios 第 n 行" (code)
    text = re.sub(r"\[\w+\]|[\w.]+：NoteScenarios", " ", _cited_text("\n".join(texts)))
    text = re.sub(r"--[\w-]+|\w+=\w+", " ", text)  # command-line options and name=value settings
    # the inputs' values and the RLHF roles are code the formulas compare (listed in the input messages)
    from reportgen.model.inputs import INPUTS, RLHF_ROLES
    from reportgen.model.terms import ASSUMPTIONS
    values = ({str(v) for i in INPUTS for v in (i.choices or ())} | {r for roles in RLHF_ROLES.values() for r in roles}
              | {a.name for a in ASSUMPTIONS})
    n, stray = _stray(text, report, cited=True)
    stray = [w for w in stray if w not in values]
    assert n > 1000 and not stray, " ".join(stray)
