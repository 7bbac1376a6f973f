"""The PDF report, read back through poppler (pdftotext, pdfinfo, pdffonts), in English and Chinese.

The default preset is rendered once per language (about 10 s each). The summary's numbers are
compared with the JSON writer's plan entries, formatted here independently of the view code.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from reportgen.model.catalog import data_dir
from reportgen.report.i18n import load_catalogue
from conftest import WHEN, bundled_report
from reportgen.pipeline import write_outputs
from reportgen.report.views import SECTIONS, build_view
from reportgen.writers.json_writer import report_json
from reportgen.writers.pdf import (RefusedURL, font_css, gc_paused, pdf_html, report_document, report_html_class,
                                   svg_text_in_runs, templates_url, url_fetcher)

TOOLS = ("pdftotext", "pdfinfo", "pdffonts")
if not all(shutil.which(t) for t in TOOLS):  # scripts/install-system-deps.sh installs poppler-utils
    pytest.skip("poppler-utils (pdftotext, pdfinfo, pdffonts) not installed", allow_module_level=True)

EPOCH = "1767225600"  # 2026-01-01T00:00:00Z


def run(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def report():
    return bundled_report("default")


@pytest.fixture(scope="module")
def pdfs(report, tmp_path_factory):
    out = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SOURCE_DATE_EPOCH", EPOCH)
        for lang in ("en", "zh"):
            folder = tmp_path_factory.mktemp(lang)
            (path,) = write_outputs(report, folder, ["pdf"], lang)
            out[lang] = path
        folder = tmp_path_factory.mktemp("appendix")  # the PDF with every scenario (--pdf-appendix)
        (out["en-appendix"],) = write_outputs(report, folder, ["pdf"], "en", options={"pdf": {"appendix": True}})
    return out


def pages(path: Path) -> list[str]:
    text = run("pdftotext", "-layout", "-enc", "UTF-8", str(path), "-")
    return text.split("\f")[:-1]  # pdftotext ends every page with a form feed


def fonts(path: Path) -> list[dict[str, str]]:
    lines = run("pdffonts", str(path)).splitlines()[2:]
    out = []
    for line in lines:
        # name type encoding emb sub uni object ID: the flags are the three yes/no columns before the id
        m = re.match(r"(\S+)\s+.*?\s+(yes|no)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$", line)
        assert m, line
        out.append({"name": m.group(1), "emb": m.group(2), "sub": m.group(3), "uni": m.group(4)})
    return out


def outline_titles(path: Path) -> list[str]:
    """Bookmark titles, read from the (compressed) object streams."""
    data = path.read_bytes()
    titles = []
    for m in re.finditer(rb"stream\r?\n", data):
        end = data.find(b"endstream", m.end())
        try:
            body = zlib.decompress(data[m.end():end])
        except zlib.error:
            continue
        for t in re.findall(rb"/Title\s*(<[0-9a-fA-F]+>|\((?:[^()\\]|\\.)*\))", body):
            if t.startswith(b"<"):
                titles.append(bytes.fromhex(t[1:-1].decode()).decode("utf-16"))
            else:
                titles.append(re.sub(rb"\\(.)", rb"\1", t[1:-1]).decode("latin-1"))
    return titles


def gib(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:,.2f}"


# ---------------------------------------------------------------------------------------------

def test_summary_numbers_equal_the_json_plan(report, pdfs):
    text = pages(pdfs["en"])
    toc_page = next(i for i, p in enumerate(text) if re.search(r"^\s*Contents\s*$", p, re.M))
    summary = "\n".join(text[:toc_page])
    flat = " ".join(summary.split())
    data = report_json(report)
    plan = data["plan"]
    assert plan
    pos = 0
    for cell in plan:
        best = cell["recommended"]
        if best:
            sentence = f"at least {best['num_gpus']} × {best['gpu']}"
            price = f"${best['purchase_usd']:,.0f} to buy ({best['num_gpus']} × " \
                    f"${data['gpus'][best['gpu']]['price_purchase_usd']:,.0f})"
            assert sentence in flat and price in flat, (sentence, price)
        for e in cell["per_gpu_type"]:
            if e["fits"]:
                numbers = [gib(e["device_total_bytes"]), gib(e["recommended_bytes"]),
                           gib(data["gpus"][e["gpu"]]["memory_bytes"]), f"${e['purchase_usd']:,.0f}",
                           f"{e['num_gpus']} × ${data['gpus'][e['gpu']]['price_purchase_usd']:,.0f}",
                           f"${e['per_hour_usd']:,.2f}/h"]
                pattern = (rf"{re.escape(e['gpu'])}\s+{e['num_gpus']}\s.*?"
                           + r"\s+".join(re.escape(x) for x in numbers[:4]) + r".*?"
                           + re.escape(numbers[5]) + r".*?" + re.escape(numbers[4]))
            else:
                pattern = rf"{re.escape(e['gpu'])}\s+⊘ does not fit"
            m = re.compile(pattern, re.S).search(summary, pos)
            assert m, f"{cell['model']} {cell['workload']} {e['gpu']}: {pattern}"
            pos = m.end()


def test_summary_lines_name_the_settings_that_differ(report, pdfs):
    """Each summary line names the weight dtype, precision, batch, tokens and checkpointing wherever
    they differ across the requirements the summary lists, in the PDF's own words."""
    from reportgen.report.i18n import load_catalogue
    from reportgen.report.views import setting_text
    headline = ("weight_dtype", "precision", "batch_size", "seq_len", "prompt_len", "gen_len", "checkpointing",
                "train_tokens")
    plan = report_json(report)["plan"]
    for lang in ("en", "zh"):
        t = load_catalogue(lang)
        text = pages(pdfs[lang])
        toc_page = next(i for i, p in enumerate(text) if re.search(rf"^\s*{t('toc.title')}\s*$", p, re.M))
        lines = re.split(r"\s(?=\d+\.\s)", " ".join(" ".join(text[:toc_page]).split()))
        for name in headline:
            values = {repr(c["requirement"].get(name)) for c in plan if name in c["requirement"]}
            if len(values) < 2:
                continue
            for c in plan:
                if name not in c["requirement"]:
                    continue
                words = setting_text(name, c["requirement"][name], t)
                title = t("subject.single", model=c["model"], workload=t("workload." + c["workload"]))
                assert any(words in line for line in lines if title in line), (lang, c["model"], c["workload"], words)


def test_page_count_footer_and_a4(pdfs):
    for lang, path in pdfs.items():
        info = run("pdfinfo", str(path))
        n = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
        # the management PDF is what a meeting reads, at most 16 pages (#34); the appendix has everything
        assert n <= 16 if lang in ("en", "zh") else n >= 60, (lang, n)
        assert re.search(r"^Page size:\s+595\.\d+ x 841\.\d+ pts \(A4\)", info, re.M)
        assert "Producer:        WeasyPrint" in info and "reportgen" in info
        assert re.search(r"^CreationDate:.*2026", info, re.M), info  # the report's generated_at
        text = pages(path)
        assert len(text) == n
        footer = "Page {i} of {n}" if lang.startswith("en") else "第 {i} 页，共 {n} 页"
        for i, page in enumerate(text, start=1):
            assert footer.format(i=i, n=n) in page, (lang, i)


@pytest.mark.parametrize("lang", ["en", "zh", "en-appendix"])
def test_table_of_contents_page_numbers_are_right(pdfs, lang):
    t = load_catalogue(lang[:2])
    text = pages(pdfs[lang])
    toc_page = next(i for i, p in enumerate(text) if re.search(rf"^\s*{t('toc.title')}\s*$", p, re.M))
    toc = text[toc_page]
    for number, section in enumerate(SECTIONS, start=1):
        title = t(f"section.{section}")
        m = re.search(rf"^\s*{number}\s+{re.escape(title)}[\s.]*?(\d+)\s*$", toc, re.M)
        assert m, (lang, title)
        page = int(m.group(1))
        heading = re.compile(rf"^\s*{number}\s+{re.escape(title)}\s*$", re.M)
        assert heading.search(text[page - 1]), (lang, title, page)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_capacity_matrix_is_on_one_page(report, pdfs, lang):
    """The matrix a meeting reads first is not split: its heading, every requirement's row (the last
    one) and the legend share one page."""
    t = load_catalogue(lang)
    text = pages(pdfs[lang])
    page = next(p for p in text if re.search(rf"^\s*2\s+{re.escape(t('section.capacity'))}\s*$", p, re.M))
    assert t("capacity.legend_best") in page and t("capacity.legend_na") in page


def test_long_tables_repeat_their_header_rows(pdfs):
    text = pages(pdfs["en-appendix"])
    first = next(i for i, p in enumerate(text) if re.search(r"^\s*All scenarios\s*$", p, re.M))
    later = text[first + 1]
    assert re.search(r"#\s+Configuration\s+GPUs", later)
    assert "Skipped combinations" not in later


def flat(path: Path) -> str:
    """The PDF's text with every run of white space one space (lines joined; long words may break)."""
    return " ".join(" ".join(pages(path)).split())


def headed(path: Path, title: str) -> bool:
    """Whether some line of the PDF is exactly `title` (a heading)."""
    return any(re.search(rf"^\s*{re.escape(title)}\s*$", p, re.M) for p in pages(path))


def test_the_management_pdf_is_what_a_meeting_reads(report, pdfs):
    """By default the PDF carries the summary, matrix, the method on a page, the notes and the validation
    summary, and says where each part it leaves out is (the breakdowns and the sensitivity curves among them);
    --pdf-appendix adds them."""
    short, full = flat(pdfs["en"]), flat(pdfs["en-appendix"])
    en = load_catalogue("en")
    assert len(pages(pdfs["en"])) <= 16 < 60 <= len(pages(pdfs["en-appendix"]))
    for heading in ("appendix.scenarios", "appendix.skipped", "appendix.accuracy", "method.terms", "method.gpus"):
        assert headed(pdfs["en"], en(heading)) and headed(pdfs["en-appendix"], en(heading)), heading
    pointers = (en("appendix.elsewhere", total=len(report.results)),
                en("appendix.skipped_elsewhere", n=len(report.skipped), rules=""), en("method.elsewhere"),
                en("notes.figures_elsewhere"), en("validation.elsewhere"), en("sens.elsewhere"),
                en("breakdown.elsewhere"))
    for pointer in pointers:
        words = " ".join(pointer.split()[:12])  # a line may break inside the option's name further on
        assert words in short and words not in full, pointer
    # the skipped combinations counted by rule, each rule by its first combination's reason
    for code in dict.fromkeys(s.reason.code for s in report.skipped):
        first = next(s for s in report.skipped if s.reason.code == code)
        # (its first words: poppler joins a word hyphenated at a line's end, 'data-parallel' read 'dataparallel')
        assert " ".join(en(f"skip.{code}", **first.reason.values).split()[:3]) in short, code
    for heading in ("method.inputs", "method.lookups", "method.assumptions", "validation.measured_title",
                    "validation.serving_title"):
        assert not headed(pdfs["en"], en(heading)) and headed(pdfs["en-appendix"], en(heading)), heading
    # the sensitivity section keeps its number and heading (test_table_of_contents_page_numbers_are_right);
    # its curves and tables are in the full PDF only
    largest = " ".join(en("sens.largest", axis="").split())  # its tables' columns ('Largest that fits:')
    assert largest not in short and largest in full
    header = re.compile(r"#\s+Configuration\s+GPUs")
    assert not any(header.search(p) for p in pages(pdfs["en"]))
    assert any(header.search(p) for p in pages(pdfs["en-appendix"]))


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_font_is_embedded_and_bundled(pdfs, lang):
    listed = fonts(pdfs[lang])
    assert listed
    for f in listed:
        assert f["emb"] == "yes" and f["uni"] == "yes", f
        assert re.fullmatch(r"[A-Z]{6}\+Report-Sans-(SC|Supplement)(-Bold)?", f["name"]), f
    names = {f["name"].split("+", 1)[1] for f in listed}
    assert ("Report-Sans-SC" if lang == "zh" else "Report-Sans-Supplement") in names


def test_chinese_pdf_has_chinese_text_and_the_cjk_font(pdfs):
    t = load_catalogue("zh")
    text = "\n".join(pages(pdfs["zh"]))
    for section in SECTIONS:
        assert t(f"section.{section}") in text, section
    assert t("toc.title") in text and "每卡" in text
    assert "Report-Sans-SC" in {f["name"].split("+", 1)[1] for f in fonts(pdfs["zh"])}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sections_are_bookmarked(pdfs, lang):
    t = load_catalogue(lang)
    titles = outline_titles(pdfs[lang])
    for number, section in enumerate(SECTIONS, start=1):
        assert f"{number} {t(f'section.{section}')}" in titles, (lang, section)


def raw_text(path: Path) -> str:
    """The PDF's text in content order, without white space: each cell's lines stay together (long
    ids wrap inside their cells)."""
    return "".join(run("pdftotext", "-raw", "-enc", "UTF-8", str(path), "-").split())


def test_notes_are_in_the_pdf_and_validation_rows_only_with_the_appendix(report, pdfs):
    """Every note, with every figure of its explanation, is in both PDFs; the notes' figure tables and
    the validation rows (measured cases, published figures, the reasons for misses) only with
    --pdf-appendix."""
    short, full = raw_text(pdfs["en"]), raw_text(pdfs["en-appendix"])
    for text in (short, full):
        for note in report.notes:
            assert note.id in text
        for card in build_view(report, "en", pdf=True, appendix=False).notes:
            for part in card.explanation:
                if part.strong:
                    assert "".join(part.text.split()) in text, (card.id, part.text)
    en = load_catalogue("en")
    figure_table = "".join((en("notes.figure") + en("notes.value")).split())  # its header row
    assert full.count(figure_table) == len(report.notes) and figure_table not in short
    for row in report.validation:  # measured cases by id, published figures by the run's model
        assert "".join((row.name.model if row.name else row.case_id).split()) in full
        if not row.name:
            assert row.case_id not in short
    for figure in report.validation_figures:
        assert "".join(figure.name.model.split()) in full
    # every reason for a miss the appendix prints (red errors only) is in the full PDF only
    for miss in {f.miss for f in report.validation_figures if f.miss} | {r.miss for r in report.validation if r.miss}:
        assert "".join(miss.split())[:40] in full and "".join(miss.split())[:40] not in short


# ---------------------------------------------------------------------------------------------
# The URL fetcher: nothing from the network or from outside the templates folder

def test_url_fetcher_serves_only_files_in_the_templates_folder(tmp_path):
    fetch = url_fetcher()
    root = data_dir("templates").resolve()
    font = root / "fonts" / "ReportSansSC-Regular.otf"
    response = fetch.fetch(font.as_uri())
    assert response.read(4) == b"OTTO"
    response.close()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    link = root / "fonts"  # a traversal out of the folder
    refused = ["http://example.com/x.png", "https://example.com/font.woff2", "ftp://example.com/x",
               "data:text/plain,hello", outside.as_uri(), "file:///etc/passwd",
               (link.as_uri() + "/../../pyproject.toml"), "file://example.com" + str(font),
               (root / "fonts" / "missing.otf").as_uri(), root.as_uri()]
    for url in refused:
        with pytest.raises(RefusedURL):
            fetch.fetch(url)


# ---------------------------------------------------------------------------------------------
# Render-time shortcuts: they must not change what is drawn

def render(html: str, html_class=None) -> bytes:
    from weasyprint import CSS, HTML
    root = templates_url()
    document = (html_class or HTML)(string=html, base_url=root, url_fetcher=url_fetcher())
    return document.write_pdf(stylesheets=[CSS(string=font_css("en"), base_url=root, url_fetcher=url_fetcher())])


def words(pdf: bytes, tmp_path: Path) -> list[tuple[str, float, float, float, float]]:
    path = tmp_path / "words.pdf"
    path.write_bytes(pdf)
    out = run("pdftotext", "-bbox", "-enc", "UTF-8", str(path), "-")
    return [(m.group(5), *map(float, m.group(1, 2, 3, 4))) for m in re.finditer(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)</word>', out)]


def shown_strings(pdf: bytes) -> int:
    """How many text-showing operators (Tj/TJ) the page content streams hold."""
    count = 0
    for m in re.finditer(rb"stream\r?\n", pdf):
        try:
            body = zlib.decompress(pdf[m.end():pdf.find(b"endstream", m.end())])
        except zlib.error:
            continue
        count += len(re.findall(rb"(?:\]|\))\s*T[jJ]\b", body))
    return count


LISTS_AND_TABLES = """<!DOCTYPE html><html lang="en"><head><style>
ol li.no::marker { color: #b2182b } .after::after { content: " (after)" } .before::before { content: "before: " }
h2 { counter-increment: h } h2::before { content: counter(h) ". " }
</style></head><body><h2>Heading</h2><ol><li>first item</li><li class="no">second item</li></ol>
<ul><li>bullet one</li><li>bullet two</li></ul><p class="before after">paragraph</p>
<table><thead><tr><th>Name</th><th>GiB</th></tr></thead><tbody><tr><td>weights</td><td>12.55</td></tr></tbody></table>
<h2>Second</h2></body></html>"""


def test_scoped_user_agent_sheet_draws_what_weasyprints_own_sheet_draws(tmp_path):
    from weasyprint import html as weasy_html
    report_html = report_html_class()
    ours = report_html(string="<p>x</p>")._ua_stylesheets()
    assert ours and ours[0] is not weasy_html.UA_STYLESHEET  # the shortcut is in force with this WeasyPrint
    plain, scoped = words(render(LISTS_AND_TABLES), tmp_path), words(render(LISTS_AND_TABLES, report_html), tmp_path)
    assert [w[0] for w in plain][:6] == ["1.", "Heading", "1.", "first", "item", "2."]  # markers and counters drawn
    assert scoped == plain


CHART = """<!DOCTYPE html><html><body><svg xmlns="http://www.w3.org/2000/svg" width="320" height="200"
font-family="'Report Sans Supplement', 'Report Sans SC', sans-serif"><g font-size="8">
<text x="10" y="20">Weights 12.55 GiB</text><text x="300" y="40" text-anchor="end">H100-80GB-SXM / A100-80GB</text>
<text x="160" y="60" text-anchor="middle">Memory per GPU, GiB (2^30 bytes)</text>
<text transform="translate(12 150) rotate(-90)" font-size="9" text-anchor="middle">GiB per GPU</text>
<text x="10" y="90">显存 每卡</text><text x="10 40 70" y="120">ABC</text><text x="10" y="140" dx="3">Shifted</text>
</g></svg></body></html>"""


def test_svg_text_drawn_as_runs_lands_where_weasyprint_draws_it_letter_by_letter(tmp_path):
    from weasyprint import svg
    original = svg.text
    letters = render(CHART)
    with svg_text_in_runs():
        runs = render(CHART)
    assert svg.text is original and svg.TAGS["text"] is original  # restored on leaving
    by_letter, by_run = words(letters, tmp_path), words(runs, tmp_path)
    assert [w[0] for w in by_run] == [w[0] for w in by_letter]
    assert "Weights" in [w[0] for w in by_run] and "ABC" not in [w[0] for w in by_run]  # per-glyph x kept
    for a, b in zip(by_letter, by_run):
        assert max(abs(x - y) for x, y in zip(a[1:], b[1:])) < 1.0, (a, b)  # points; kerning may move ends
    assert shown_strings(runs) < shown_strings(letters) / 3  # one string per label, not one per letter


def element_tree(root) -> list[tuple]:
    # expat does not report xmlns declarations as attributes; the HTML5 parser keeps them
    return [(e.tag, {k: v for k, v in e.attrib.items() if "xmlns" not in k}, e.text, e.tail) for e in root.iter()]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_expat_reads_the_report_as_weasyprints_html5_parser_does(report, lang):
    from weasyprint import HTML
    html = pdf_html(report, lang, appendix=True)  # every kind of element the PDF can hold
    fast = report_document(html, templates_url(), url_fetcher())
    slow = HTML(string=html, base_url=templates_url(), url_fetcher=url_fetcher(), media_type="print")
    assert type(fast) is report_html_class() and vars(fast).keys() == vars(slow).keys()
    assert (fast.base_url, fast.media_type) == (slow.base_url, slow.media_type)
    fast_tree, slow_tree = element_tree(fast.etree_element), element_tree(slow.etree_element)
    assert len(fast_tree) > 5000 and fast_tree == slow_tree


def test_html_that_is_not_xml_goes_through_weasyprints_parser():
    # an unclosed void element, and a control character XML 1.0 forbids (a preset string could hold one)
    for html in ("<html><body><p>one<br>two</p></body></html>", "<html><body><p>bell \x07</p></body></html>"):
        document = report_document(html, templates_url(), url_fetcher())
        assert [e.tag for e in document.etree_element.iter()][:2] == ["html", "head"]  # HTML5 adds the head
        assert render(html)[:5] == b"%PDF-"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the search is skipped on Linux only")
def test_weasyprint_imports_without_searching_for_libraries_and_the_search_comes_back():
    """import_weasyprint (a fresh interpreter: this one may have WeasyPrint already) loads every library
    WeasyPrint needs by its own names, asks ctypes to search for none, and leaves ctypes as it was."""
    code = """
import ctypes.util, sys
search, asked = ctypes.util.find_library, []
ctypes.util.find_library = lambda name: asked.append(name)
wrapped = ctypes.util.find_library
from reportgen.writers.pdf import import_weasyprint
import_weasyprint()
from weasyprint.text import ffi
assert ctypes.util.find_library is wrapped, "the search is not restored"
assert ffi.pango and ffi.harfbuzz and ffi.fontconfig and ffi.pangoft2, "a library is missing"
print(len(asked))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parent.parent)
    assert out.stdout.split() == ["0"], out.stdout + out.stderr


def test_cycle_collector_is_paused_only_while_rendering():
    import gc
    was = gc.isenabled()
    try:
        for before in (True, False):
            (gc.enable if before else gc.disable)()
            with gc_paused():
                assert not gc.isenabled()
            assert gc.isenabled() == before
        gc.enable()
        with pytest.raises(RuntimeError), gc_paused():
            raise RuntimeError("a failed render")
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


# What the zh summary may spell in Latin letters: names (models, GPUs, presets, the tool), units, and
# code values a Chinese engineer reads as written (dtypes, precisions, methods, libraries, roles as
# the Chinese literature writes them). Any other English word is an untranslated string.
ZH_LATIN_ALLOWED = {
    "GPU", "GiB", "GB", "MiB", "token", "tokens", "k", "h", "s", "UTC", "nvidia-smi", "CUDA", "reportgen",
    "ZeRO", "TP", "EP", "KV", "MoE", "RLHF", "LoRA", "QLoRA", "PPO", "DPO", "GRPO", "Adam", "AdamW", "Actor",
    "Critic", "all-linear", "q_proj", "v_proj", "k_proj", "o_proj", "bf16", "fp16", "fp32", "fp8", "int8", "int4",
    "nf4", "bf16-mixed", "fp16-mixed", "vllm", "sglang", "hf-generate", "adamw", "sgd", "flash", "eager",
    "GeForce",  # a product line, named as the GPU names are (the data-centre licence note)
}


def test_zh_summary_page_has_no_english_outside_names_units_and_code(report, pdfs):
    from reportgen.report.i18n import load_catalogue
    t = load_catalogue("zh")
    text = pages(pdfs["zh"])
    toc_page = next(i for i, p in enumerate(text) if re.search(rf"^\s*{t('toc.title')}\s*$", p, re.M))
    summary = re.sub(r"-\s+", "-", " ".join(text[:toc_page]))  # words hyphenated across lines
    names = set()
    for n in list(report.gpus) + [g.vendor for g in report.gpus.values()] + list(report.models) + [report.preset.name]:
        names |= set(re.findall(r"[A-Za-z][A-Za-z0-9_.\-]*", n))
    words = re.findall(r"(?<![0-9A-Za-z])(?:[A-Za-z][A-Za-z0-9_.\-]*[A-Za-z0-9]|[A-Za-z])", summary)
    stray = sorted({w for w in words if w not in ZH_LATIN_ALLOWED and w not in names
                    and not re.fullmatch(r"(ZeRO|TP|EP)-?\d+", w)})
    assert not stray, stray


def test_a_model_name_keeps_its_case(tmp_path):
    """A requirement's heading starts with the model's name, which is printed as the catalogue spells it (the
    plan table's group rows once upper-cased their first letter: 'Gpt-oss-20b')."""
    from reportgen.pipeline import load, make_report
    preset = tmp_path / "oss.yaml"
    preset.write_text("title: gpt-oss\nmatrices:\n  - name: serving\n    model: gpt-oss-20b\n"
                      "    workload: {type: inference, prompt_len: 8192, gen_len: 512, batch_size: 16}\n"
                      "    weight_dtype: mxfp4\n    serving_engine: vllm\n    gpu: [H100-80GB-SXM, L40S]\n")
    (path,) = write_outputs(make_report(load(str(preset)), WHEN), tmp_path, ["pdf"], "en")
    text = "".join(pages(path))
    assert "gpt-oss-20b inference" in text and "Gpt-oss" not in text
