"""The PDF writer: the HTML report through WeasyPrint, A4, with the print rules of report.css.

WeasyPrint fetches nothing from the network and nothing outside the package's templates folder:
every URL goes through TemplatesOnlyFetcher, which serves files under data_dir("templates") and
refuses everything else, whatever a preset contains. Fonts are the bundled OFL families (Report
Sans SC for Chinese, Report Sans Supplement for Latin and symbols), loaded with @font-face from
that folder, so the PDF never depends on the machine's fonts. PDF dates follow SOURCE_DATE_EPOCH
(WeasyPrint honours it).
"""
from __future__ import annotations

import contextlib
import ctypes.util
import functools
import gc
import importlib
import io
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from xml.etree import ElementTree
from urllib.parse import unquote, urlsplit
from urllib.request import url2pathname

from ..model.catalog import data_dir
from ..report.build import Report
from .fonts import FONT_FILES, FONT_FORMATS, FONT_STACKS, face_rule, font_path
from .html import render_html

MARGIN_BOXES = ("top-left", "top-center", "top-right", "bottom-left", "bottom-center", "bottom-right")


class RefusedURL(ValueError):
    """A URL the report may not fetch."""


@functools.cache
def import_weasyprint() -> None:
    """Import WeasyPrint without searching for libraries by name where it need not (Linux).

    WeasyPrint loads Pango, HarfBuzz, fontconfig and GObject by trying several names for each, the
    Windows and macOS ones first; for every name that is not a loadable file, cffi asks
    ctypes.util.find_library, which on Linux runs ldconfig, gcc and ld: about 50 processes and
    0.1-0.15 s of CPU per PDF. Every list also holds the Linux soname (libpango-1.0.so.0), which loads
    directly, so the search is skipped while WeasyPrint imports; where a library is only found by the
    search, WeasyPrint imports again with it."""
    if sys.platform.startswith("linux") and "weasyprint" not in sys.modules:
        search, ctypes.util.find_library = ctypes.util.find_library, lambda name: None
        try:
            # WeasyPrint prints installation advice before it gives up on a library: not for this try
            with contextlib.redirect_stdout(io.StringIO()):
                importlib.import_module("weasyprint")
        except OSError:
            pass
        finally:
            ctypes.util.find_library = search
    importlib.import_module("weasyprint")


def _fetcher_class():
    from weasyprint.urls import URLFetcher, URLFetcherResponse

    class TemplatesOnlyFetcher(URLFetcher):
        """Serves file: URLs under the templates folder; refuses every other URL (http, https, data,
        files elsewhere, symlinks leading out)."""

        def __init__(self, root: Path):
            super().__init__(allowed_protocols=("file",))
            self.root = root.resolve()

        def fetch(self, url, headers=None):
            parts = urlsplit(url)
            if parts.scheme.lower() != "file" or parts.netloc not in ("", "localhost"):
                raise RefusedURL(f"refused (only files under {self.root} are served): {url[:200]}")
            path = Path(url2pathname(unquote(parts.path))).resolve()
            if not path.is_relative_to(self.root) or not path.is_file():
                raise RefusedURL(f"refused (not a file under {self.root}): {url[:200]}")
            return URLFetcherResponse(path.as_uri(), body=path.read_bytes())

    return TemplatesOnlyFetcher


def url_fetcher():
    """A fetcher confined to data_dir("templates")."""
    return _fetcher_class()(data_dir("templates"))


def font_css(lang: str) -> str:
    """@font-face rules for the bundled fonts and the font list of the page-margin boxes (which do
    not inherit the body's font)."""
    rules = [face_rule(family, weight, font_path(name).resolve().as_uri(), FONT_FORMATS[Path(name).suffix])
             for family, weight, name in FONT_FILES]
    stack = FONT_STACKS[lang]
    boxes = " ".join(f"@{box} {{ font-family: {stack}; }}" for box in MARGIN_BOXES)
    rules.append(f"@page {{ {boxes} }}")
    rules.append(f"html, body {{ font-family: {stack}; }}")
    rules.append(f'code, .code, .formula {{ font-family: {stack}; }}')
    return "\n".join(rules) + "\n"


# WeasyPrint's user-agent stylesheet gives every element these pseudo-elements (a universal
# `::marker` rule and the footnote/note rules), and WeasyPrint computes a style for each: six extra
# style computations per element, about an eighth of the report's render time. The report has no
# footnotes or notes (float: footnote, float: note) and markers only on list items.
UNIVERSAL_PSEUDO_RULE = re.compile(r"^::(marker|footnote-call|footnote-marker|note-call|note-marker|note-callback) \{",
                                   re.MULTILINE)
# SVG text attributes that position or stretch single glyphs (WeasyPrint lays such text out letter by letter).
PER_GLYPH_ATTRIBUTES = frozenset({"dx", "dy", "rotate", "letter-spacing", "textLength"})


@functools.cache
def report_html_class():
    """weasyprint.HTML with the user-agent stylesheet scoped to what the report uses (see
    UNIVERSAL_PSEUDO_RULE). Overriding _ua_stylesheets is how WeasyPrint's own tests swap that sheet."""
    from weasyprint import CSS, HTML
    from weasyprint import html as weasy_html

    def scoped(match: re.Match) -> str:
        return "li::marker {" if match.group(1) == "marker" else f"html:not(html)::{match.group(1)} {{"

    text, count = UNIVERSAL_PSEUDO_RULE.subn(scoped, weasy_html.UA)
    ua = [CSS(string=text, counter_style=weasy_html.UA_COUNTER_STYLE)] if count == 6 else None

    class ReportHTML(HTML):
        def _ua_stylesheets(self, forms=False):
            # A WeasyPrint whose stylesheet reads differently keeps its own sheet.
            return ua or super()._ua_stylesheets(forms)

    return ReportHTML


# What weasyprint.HTML.__init__ leaves on the instance after parsing (see report_document).
PARSED_HTML_ATTRIBUTES = frozenset({"base_url", "url_fetcher", "media_type", "wrapper_element", "etree_element"})


@functools.cache
def _parsed_html_attributes() -> frozenset:
    from weasyprint import HTML
    return frozenset(vars(HTML(string="<p></p>")))


def report_document(html: str, base_url: str, fetcher):
    """The report's HTML as a WeasyPrint document for print.

    The template writes well-formed XML, so expat (C) parses it in milliseconds where WeasyPrint's
    pure-Python HTML5 parser takes half a second; both give the same element tree (tested). The
    document is then set up as weasyprint.HTML.__init__ sets it up after parsing. HTML5 parsing
    remains for text XML forbids (control characters in a preset's strings) and for a WeasyPrint
    whose HTML objects carry other attributes."""
    import cssselect2

    html_class = report_html_class()
    try:
        root = ElementTree.fromstring(html)
    except ElementTree.ParseError:
        root = None
    if root is None or _parsed_html_attributes() != PARSED_HTML_ATTRIBUTES:
        return html_class(string=html, base_url=base_url, url_fetcher=fetcher, media_type="print")
    document = html_class.__new__(html_class)
    document.base_url, document.url_fetcher, document.media_type = base_url, fetcher, "print"
    document.wrapper_element = cssselect2.ElementWrapper.from_html_root(root, content_language=None)
    document.etree_element = document.wrapper_element.etree_element
    return document


class _WholeRun(str):
    """A text run that WeasyPrint's letter-by-letter loop sees as a single letter."""

    def __iter__(self):
        yield str(self)


@contextmanager
def svg_text_in_runs():
    """While active, WeasyPrint draws each plain SVG <text> (one x, one y, no per-glyph attributes) as
    one run instead of one layout per letter: the charts' labels cost about a third as much, and
    keep their kerning. Text with per-glyph positions keeps WeasyPrint's own path."""
    from weasyprint import svg

    original = svg.text

    def text(svg_drawing, node, font_size):
        element = node._etree_node
        if (element.text and len(element.text) > 1 and not PER_GLYPH_ATTRIBUTES.intersection(node.attrib)
                and len((node.get("x") or "").split()) < 2 and len((node.get("y") or "").split()) < 2):
            element.text = _WholeRun(element.text)
        return original(svg_drawing, node, font_size)

    tags = {tag for tag, draw in svg.TAGS.items() if draw is original}
    svg.text = text
    svg.TAGS.update(dict.fromkeys(tags, text))
    try:
        yield
    finally:
        svg.text = original
        svg.TAGS.update(dict.fromkeys(tags, original))


def pdf_html(report: Report, lang: str = "en", *, appendix: bool = False) -> str:
    """The HTML WeasyPrint reads: the print variant, without the line breaks between tags (they only
    make WeasyPrint build and skip white-space boxes; the template never breaks a line between
    inline elements). appendix: the full appendices and reference tables, as the HTML has them (else
    the management PDF, what a meeting reads: see views.build_view; each shortened part says where the
    rest is)."""
    return re.sub(r">\n\s*<", "><", render_html(report, lang, pdf=True, appendix=appendix)).strip()


def templates_url() -> str:
    """Base URL of the documents and stylesheets WeasyPrint reads (the fetcher serves only below it)."""
    return data_dir("templates").resolve().as_uri() + "/"


def render_pdf(report: Report, lang: str = "en", *, appendix: bool = False) -> bytes:
    with gc_paused():
        import_weasyprint()
        from weasyprint import CSS
        from weasyprint.text.fonts import FontConfiguration

        fetcher = url_fetcher()
        fonts = FontConfiguration()
        base_url = templates_url()
        document = report_document(pdf_html(report, lang, appendix=appendix), base_url, fetcher)
        extra = CSS(string=font_css(lang), base_url=base_url, url_fetcher=fetcher, font_config=fonts)
        with svg_text_in_runs():
            return document.write_pdf(stylesheets=[extra], font_config=fonts, uncompressed_pdf=False)


@contextmanager
def gc_paused():
    """The cycle collector off while the PDF is made: WeasyPrint allocates millions of long-lived boxes,
    and each full collection walks all of them (about a tenth of the render); importing WeasyPrint
    (cffi parses its C declarations) and rendering the HTML set off some 150 young-generation
    collections more (0.25 s of CPU in the forked PDF child, whose young objects sit on pages shared
    with the parent). Reference counting still frees the garbage: the default report peaks at the
    same resident size either way."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def write(report: Report, path: Path, lang: str = "en", *, appendix: bool = False) -> None:
    Path(path).write_bytes(render_pdf(report, lang, appendix=appendix))
