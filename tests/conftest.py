"""Shared fixtures and the `slow` marker.

`python3 -m pytest -m "not slow"` is the quick run for daily work (under a minute of CPU in one process; two xdist
workers each collect and build the shared reports, about 65 s of CPU in 35 s): it leaves out
what drives another program or renders a PDF (LibreOffice recalculating workbooks, WeasyPrint, a
browser, forked or killed builds, the fuzz suite, long property runs), the writers over whole presets
and tests of several seconds each. The README's test command runs everything."""
from __future__ import annotations

from functools import lru_cache

import pytest

WHEN = "2026-01-01T00:00:00+00:00"

# Whole modules that drive another program, fork builds or run a process per case; that write every
# bundled preset's workbook or report; and the object-path equivalence suites (presets written twice).
SLOW_MODULES = {"test_lo_harness", "test_xlsx_edits", "test_xlsx_goals", "test_interrupts", "test_report_pdf",
                "test_browser", "test_fuzz", "test_robustness", "test_injection", "test_random_presets",
                "test_no_traceback", "test_signals_ignored", "test_plan_limits", "test_build_ends",
                "test_xlsx", "test_xlsx_requirements", "test_report_html", "test_summary", "test_throughput",
                "test_columnar", "test_columnar_xlsx", "test_xlsx_decision", "test_guarded", "test_startup",
                "test_xlsx_live_rows"}
# Fixtures that start LibreOffice: a test that asks for one is slow wherever it is.
SLOW_FIXTURES = {"soffice", "recalculated"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@lru_cache(maxsize=None)
def bundled_report(name: str):
    """A bundled preset's report, built once per test session (a Report is immutable)."""
    from reportgen.pipeline import load, make_report
    return make_report(load(name), WHEN)


@pytest.fixture(scope="session")
def default_report():
    return bundled_report("default")
