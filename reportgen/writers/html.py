"""The HTML writer: one self-contained file (CSS and SVG charts inline, no network, no external files).

render_html(report, lang) -> str is also the PDF writer's input (WeasyPrint reads the same HTML with
its print rules). Jinja2 runs with autoescape and StrictUndefined; the template receives a
views.ReportView and the static stylesheet, which is inserted verbatim (never escaped: quotes in
CSS must stay quotes). The screen variant embeds the bundled fonts, cut to the page's characters
(fonts.py).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from ..model.catalog import data_dir
from ..report.build import Report
from ..report.views import build_view
from .fonts import embedded_font_css

TEMPLATE = "report.html.j2"
FONT_SLOT = "/* bundled fonts */"  # replaced by the @font-face rules once the page's characters are known
STYLESHEET = "report.css"


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(loader=FileSystemLoader(str(data_dir("templates"))),
                       autoescape=select_autoescape(enabled_extensions=("html", "j2"), default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)


def stylesheet() -> Markup:
    css = (data_dir("templates") / STYLESHEET).read_text(encoding="utf-8")
    if "</" in css:  # cannot happen with our file; would end the <style> element early
        raise AssertionError(f"{STYLESHEET} must not contain '</'")
    return Markup(css)


def render_html(report: Report, lang: str = "en", *, pdf: bool = False, appendix: bool = True) -> str:
    """The report as one HTML document (str). Same report and generated_at: same text.

    pdf=True: the variant WeasyPrint reads (same template; a leaner scenario table, see views; no script).
    appendix=False: the scenario appendix says where the scenarios are instead of listing them."""
    view = build_view(report, lang, pdf=pdf, appendix=appendix)
    document = environment().get_template(TEMPLATE).render(v=view, css=stylesheet(), pdf=pdf, fonts=FONT_SLOT)
    # The screen variant carries its fonts, cut to the characters the finished page uses.
    return document if pdf else document.replace(FONT_SLOT, embedded_font_css(document), 1)


def write(report: Report, path: Path, lang: str = "en") -> None:
    Path(path).write_text(render_html(report, lang), encoding="utf-8")
