"""Hostile strings in a preset stay inert in every output (issue 8), and builds are reproducible."""
import json
import subprocess
import zipfile

import openpyxl
import yaml
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.writers import pdf as pdf_writer

FORMULA = "=cmd|' /C calc'!A0"
SCRIPT = "<script>alert('x')</script>"
URL = "url(http://attacker.invalid/x.png)"
HOSTILE = f"{FORMULA} {SCRIPT} {URL}"
PRESET = {
    "title": HOSTILE,
    "description": f"@SUM(A1) {SCRIPT} <img src='http://attacker.invalid/i.png'> {URL}",
    "matrices": [{"name": HOSTILE, "model": "Qwen2.5-0.5B", "workload": {"type": "inference", "prompt_len": 256},
                  "gpu": ["L4"]}],
    "scenarios": [{"name": FORMULA, "model": "Qwen2.5-0.5B", "workload": "lora", "seq_len": 256, "gpu": "L4"}],
}
EPOCH = {"SOURCE_DATE_EPOCH": "1767225600"}


def _build(tmp_path, out="out", formats="json,xlsx,html,pdf"):
    preset = tmp_path / "hostile.yaml"
    preset.write_text(yaml.safe_dump(PRESET, allow_unicode=True))
    result = CliRunner().invoke(main, ["build", str(preset), "--format", formats, "-o", str(tmp_path / out), "-q"],
                                env=EPOCH, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return tmp_path / out


def test_hostile_strings_are_inert_everywhere(tmp_path, monkeypatch):
    fetched = []
    real_fetcher = pdf_writer.url_fetcher

    def recording_fetcher():
        inner = real_fetcher()

        def fetch(url, *args, **kwargs):
            fetched.append(url)
            return inner(url, *args, **kwargs)
        return fetch

    monkeypatch.setattr(pdf_writer, "url_fetcher", recording_fetcher)
    out = _build(tmp_path, formats="json,xlsx,html")
    pdf_path = tmp_path / "hostile.pdf"
    from reportgen.pipeline import load, make_report
    report = make_report(load(str(tmp_path / "hostile.yaml")), "2026-01-01T00:00:00+00:00")
    pdf_path.write_bytes(pdf_writer.render_pdf(report, "en"))

    # JSON: the strings are data, verbatim.
    data = json.loads((out / "hostile.json").read_text())
    assert data["preset"]["title"] == HOSTILE
    assert any(s["name"] == FORMULA for s in data["scenarios"])

    # Workbook: every cell holding a hostile string is a text cell, never a formula.
    book = openpyxl.load_workbook(out / "hostile.xlsx")
    hostile_cells = [c for ws in book for row in ws.iter_rows() for c in row
                     if isinstance(c.value, str) and ("cmd|" in c.value or "@SUM" in c.value)]
    assert hostile_cells and all(c.data_type == "s" for c in hostile_cells)
    with zipfile.ZipFile(out / "hostile.xlsx") as z:
        sheets = "".join(z.read(n).decode() for n in z.namelist() if n.startswith("xl/worksheets/"))
    assert "<f>cmd" not in sheets and "<f>=cmd" not in sheets and "<f>@SUM" not in sheets

    # HTML: escaped, no live script beyond the bundled sorter, no external resource.
    html = (out / "hostile.html").read_text()
    assert SCRIPT not in html and "&lt;script&gt;alert(" in html
    assert html.count("<script") == 1
    assert "<img src='http" not in html and '<img src="http' not in html

    # PDF: WeasyPrint asked for nothing outside the bundled templates (fonts only), and the text is there.
    assert fetched and all(u.startswith("file://") and "/templates/" in u for u in fetched), fetched
    text = subprocess.run(["pdftotext", str(pdf_path), "-"], capture_output=True, text=True, check=True).stdout
    assert "cmd|" in text


def test_workbook_cell_contents_are_reproducible(tmp_path):
    cells = []
    for run in ("a", "b"):
        out = _build(tmp_path, out=run, formats="xlsx")
        book = openpyxl.load_workbook(out / "hostile.xlsx")
        cells.append([(ws.title, c.coordinate, c.value) for ws in book for row in ws.iter_rows() for c in row])
    assert cells[0] == cells[1] and len(cells[0]) > 1000
