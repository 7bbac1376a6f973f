"""The HTML report in a real browser: Debian's chromium driven by playwright (no download).

Clicks every sortable header of the scenario table and checks the order; fails on any script error.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reportgen.pipeline import write_outputs
from conftest import bundled_report

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("chromium is not installed (scripts/install-system-deps.sh installs it)", pytrace=False)
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    report = bundled_report("default")
    (en,) = write_outputs(report, out / "en", ["html"], "en")
    (zh,) = write_outputs(report, out / "zh", ["html"], "zh")
    return {"en": en, "zh": zh}


def _open(browser, path: Path, width: int = 1280):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(path.as_uri())
    return page, errors


def _number(text: str):
    cleaned = re.sub(r"[,$ ★⚠✓✗]|GiB|/h", "", text).strip()
    try:
        return float(cleaned)
    except ValueError:
        return None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_header_sorts_the_scenario_table(browser, pages, lang):
    page, errors = _open(browser, pages[lang])
    table = page.locator("table.sortable").first
    buttons = table.locator("thead button.sort")
    count = buttons.count()
    assert count >= 8
    for col in range(count):
        for direction in ("ascending", "descending"):
            buttons.nth(col).click()
            assert table.locator("thead th").nth(col).get_attribute("aria-sort") == direction
            cells = page.evaluate(
                """([col]) => Array.from(document.querySelector('table.sortable').tBodies[0].rows)
                     .filter(r => !r.hidden && r.cells.length > col)
                     .map(r => { const c = r.cells[col]; return c.getAttribute('data-sort') ?? c.textContent.trim(); })""",
                [col])
            keys = [_number(c) if _number(c) is not None else c for c in cells]
            numeric = all(isinstance(k, float) for k in keys)
            expected = sorted(keys, key=(lambda k: k) if numeric else (lambda k: str(k)),
                              reverse=direction == "descending")
            if numeric:
                assert keys == expected, (lang, col, direction)
            else:  # localeCompare orders text: check it is sorted by the browser's own comparison
                ok = page.evaluate("""(xs) => xs.every((x, i) => i === 0 || (%s * String(xs[i-1]).localeCompare(String(x))) <= 0)"""
                                   % ("1" if direction == "ascending" else "-1"), [str(k) for k in keys])
                assert ok, (lang, col, direction)
    assert not errors, errors
    page.close()


def _embedded_cmaps(document: str) -> dict[str, set[int]]:
    import base64
    import io
    from fontTools.ttLib import TTFont
    out: dict[str, set[int]] = {}
    for family, data in re.findall(r'font-family: "([^"]+)"; font-weight: \d+; font-style: normal; '
                                   r'src: url\("data:font/\w+;base64,([^"]+)"\)', document):
        out.setdefault(family, set()).update(TTFont(io.BytesIO(base64.b64decode(data)))["cmap"].getBestCmap())
    return out


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_carries_a_glyph_for_every_character_it_shows(browser, pages, lang):
    document = pages[lang].read_text(encoding="utf-8")
    cmaps = _embedded_cmaps(document)
    assert set(cmaps) == {"Report Sans SC", "Report Sans Supplement"}
    page, errors = _open(browser, pages[lang], width=390)  # a phone: the scroll hints are shown too
    shown = page.evaluate("""() => document.body.innerText +
        Array.from(document.querySelectorAll('svg text')).map(t => t.textContent).join('')""")
    covered = set().union(*cmaps.values())
    missing = sorted({c for c in shown if not c.isspace() and ord(c) not in covered})
    assert not missing, missing
    faces = page.evaluate("""async () => { await document.fonts.ready;
        return Array.from(document.fonts).map(f => [f.family.replace(/"/g, ''), f.weight, f.status]); }""")
    assert sorted(faces) == sorted([[f, w, "loaded"] for f in ("Report Sans SC", "Report Sans Supplement")
                                    for w in ("400", "700")])
    assert not errors, errors
    page.close()


def test_chinese_renders_without_system_cjk_fonts(browser, pages, tmp_path):
    """On this machine (no CJK system font) a Chinese string in a family nobody has falls back to
    boxes; in the page's own font it must look different, i.e. real glyphs."""
    page, _ = _open(browser, pages["zh"])
    text = "显存容量规划：推荐配置与误差校正"
    shots = []
    for family in ('"Report Sans SC"', '"No Such Font Anywhere"'):
        page.evaluate("""([text, family]) => { const s = document.createElement('span'); s.id = 'probe';
            s.textContent = text; s.style.fontFamily = family; s.style.fontSize = '40px';
            s.style.position = 'fixed'; s.style.top = '0'; s.style.left = '0'; s.style.background = '#fff';
            s.style.zIndex = '99'; document.getElementById('probe')?.remove(); document.body.appendChild(s); }""",
                      [text, family])
        shots.append(page.locator("#probe").screenshot(path=str(tmp_path / f"{len(shots)}.png")))
    assert shots[0] != shots[1]
    page.screenshot(path=str(tmp_path / "zh-first-screen.png"))
    page.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_wide_blocks_say_they_scroll_on_a_phone(browser, pages, lang):
    phone, errors = _open(browser, pages[lang], width=390)
    hints = phone.locator(".scroll-hint")
    assert hints.count() >= 3  # the plan table, the capacity matrix, the breakdown charts at least
    for i in range(hints.count()):
        hint = hints.nth(i)
        assert hint.is_visible()
        wide = hint.evaluate("h => { const b = h.nextElementSibling; return b.scrollWidth > b.clientWidth; }")
        assert wide
    desktop, _ = _open(browser, pages[lang], width=1400)
    narrow_blocks = desktop.evaluate("""() => Array.from(document.querySelectorAll('.scroll, figure'))
        .filter(b => b.scrollWidth <= b.clientWidth + 1).length""")
    hinted = desktop.locator(".scroll-hint:visible").count()
    assert narrow_blocks > 0 and hinted == 0
    assert not errors, errors
    phone.close()
    desktop.close()
