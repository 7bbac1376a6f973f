"""The breakdown charts: each reference line names a GPU type and stands at that type's memory; a bar's label fits
its column."""
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import bundled_report
from reportgen.report import charts, views
from reportgen.report.charts import fitted, text_width
from reportgen.model.units import GiB


@pytest.mark.parametrize("preset", ["default", "ppo-rlhf", "procurement"])
@pytest.mark.slow  # several seconds: the full run has it
def test_each_reference_line_stands_at_the_memory_of_the_gpu_type_it_names(preset, monkeypatch):
    """An RLHF group on pools of two GPU types ('LoRA actor, judges on an inference card': the actor on A100 or
    H100, the judges on an L40S) is read against its tightest pool: the line was labelled with the actor's GPU
    type at the L40S's 44.99 GiB."""
    report = bundled_report(preset)
    drawn = []
    stacked_bars = charts.stacked_bars

    def spy(bars, series, lines, **kwargs):
        drawn.extend(lines)
        return stacked_bars(bars, series, lines, **kwargs)
    monkeypatch.setattr(charts, "stacked_bars", spy)
    views.build_view(report, "en")
    assert drawn
    for line in drawn:
        assert line.value == pytest.approx(report.gpus[line.label].memory_bytes / GiB), line


@given(st.text(alphabet=st.sampled_from("ab ·×0123456789GPU训练"), max_size=120), st.floats(12, 400))
def test_a_bar_label_too_wide_keeps_its_start_and_end(text, width):
    """A configuration's label wider than the chart's label column keeps its start (what it is) and its end (where
    it runs) around an ellipsis, and fits; one that fits is whole."""
    short = fitted(text, 9, width)
    if text_width(text, 9) <= width:
        assert short == text
        return
    assert text_width(short, 9) <= width and "…" in short
    head, tail = short.split("…", 1)
    assert text.startswith(head.rstrip()) and text.endswith(tail.lstrip())


@pytest.mark.slow  # the ppo-rlhf report: several seconds
def test_the_long_labels_of_a_bundled_chart_are_cut_in_the_middle():
    """ppo-rlhf's GRPO layouts ('16×GPU · grad_accum_steps 32 · colocated, engines apart, async (one step
    off-policy)') are wider than the label column: the chart shows both ends, the whole label as its title."""
    from reportgen.writers.html import render_html
    html = render_html(bundled_report("ppo-rlhf"), "en")
    cut = re.findall(r"<text [^>]*><title>([^<]*)</title>([^<]*)</text>", html)
    assert cut and all("…" in short for _, short in cut)
    assert any(whole.endswith("async (one step off-policy)") and short.endswith("async (one step off-policy)")
               for whole, short in cut)
