"""The breakdown charts' reference lines: each names a GPU type and stands at that type's memory."""
import pytest

from conftest import bundled_report
from reportgen.report import charts, views
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
