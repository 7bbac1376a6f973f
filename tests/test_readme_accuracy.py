"""The README's accuracy table states what the report's validation summary computes: its held-out counts, how many
fall within each comparison's target, and the median and largest |error|, at the README's precision. (Its RLHF
memory row said 6.33 % / 12.89 % for a month after the estimate moved to 7.19 % / 10.50 %.)"""
import re
from pathlib import Path

import pytest

from conftest import bundled_report
from reportgen.report.views import build_view

README = Path(__file__).resolve().parents[1] / "README.md"
# The README's comparison (how its first cell starts) -> the report's validation summary row.
ROWS = {"peaks measured on real transformers models": "Measured peaks",
        "published fine-tuning peaks": "Published fine-tuning peaks",
        "training throughput (published runs": "Training throughput",
        "training throughput, MoE": "Training throughput, mixture of experts",
        "serving speed: time per output token": "Serving speed: Time per output token, output tokens/s and latency",
        "serving speed: time to first token": "Serving speed: Time to first token",
        "vLLM/SGLang KV-cache pool": "Serving engines' KV-cache pool",
        "CPU-offloaded optimizer's step": "Offloaded optimizer's time",
        "RLHF step time": "RLHF step time",
        "RLHF colocated allocated peak per GPU": "RLHF memory per GPU"}


def _readme_rows() -> dict[str, list[str]]:
    text = README.read_text(encoding="utf-8").split("## Accuracy", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| ")]
    return {cells[0]: cells for cells in rows[1:]}


@pytest.fixture(scope="module")
def summary() -> dict[str, list[str]]:
    view = build_view(bundled_report("default"), "en", pdf=False, appendix=True)
    return {row[0].text: [c.text for c in row] for row in view.accuracy.rows}


def test_every_comparison_of_the_readme_is_a_row_of_the_validation_summary(summary):
    readme = _readme_rows()
    assert len(readme) == len(ROWS) == len(summary)
    assert sorted(next(k for k in ROWS if cell.startswith(k)) for cell in readme) == sorted(ROWS)
    assert sorted(ROWS.values()) == sorted(summary)


@pytest.mark.parametrize("start", ROWS)
def test_the_readme_states_the_computed_accuracy(start, summary):
    cells = next(c for cell, c in _readme_rows().items() if cell.startswith(start))
    _, figures, target, within, median, largest = summary[ROWS[start]]
    assert cells[1] == figures
    stated = re.match(r"(\d+) within (±\d+ %)", cells[2])
    assert stated and (stated[1], stated[2]) == (within, target)
    errors = re.fullmatch(r"([\d.]+) % / ([\d.]+) %", cells[3])
    assert errors, cells[3]
    for written, computed in zip(errors.groups(), (median, largest)):
        decimals = len(written.split(".")[1]) if "." in written else 0
        assert written == f"{float(computed.rstrip(' %')):.{decimals}f}", (start, written, computed)
