#!/usr/bin/env python3
"""Build ReportSansSC-{Regular,Bold}.otf: a GB2312 subset of Noto Sans CJK SC.

Maintainer tool, not used at runtime. Reproduce the shipped files with:

    mkdir -p /tmp/noto && cd /tmp/noto
    apt-get download fonts-noto-cjk          # Debian 12: 1:20220127+repack1-1
    dpkg -x fonts-noto-cjk_*.deb x
    pip install 'fonttools>=4.40' brotli
    python3 templates/fonts/make_report_sans_sc.py \
        --src /tmp/noto/x/usr/share/fonts/opentype/noto --out templates/fonts

The .ttc files hold ten faces each (JP, KR, SC, TC, HK, mono ...); face 0 is
Japanese. The Simplified Chinese face is selected by its family name, never by
index, because CJK unified ideographs have region-specific glyph shapes baked
into each face's cmap.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from fontTools import subset
from fontTools.merge import Merger
from fontTools.ttLib import TTCollection, TTFont

SOURCE_FAMILY = "Noto Sans CJK SC"
NEW_FAMILY = "Report Sans SC"
NEW_PS_FAMILY = "ReportSansSC"
SUPP_FAMILY = "Report Sans Supplement"
SUPP_PS_FAMILY = "ReportSansSupplement"

# Non-hanzi blocks kept in full (only code points the source font has are kept).
RANGES = [
    (0x0020, 0x007E),  # Basic Latin
    (0x00A0, 0x00FF),  # Latin-1 Supplement (incl. ¹ ² ³ × ÷ ± ° µ ·)
    (0x0100, 0x024F),  # Latin Extended-A/B
    (0x0250, 0x02FF),  # IPA extensions, spacing modifier letters
    (0x0300, 0x036F),  # Combining diacritical marks
    (0x0370, 0x03FF),  # Greek and Coptic (Ψ σ μ λ Δ ...)
    (0x0400, 0x04FF),  # Cyrillic (GB2312 has it anyway)
    (0x1E00, 0x1EFF),  # Latin Extended Additional
    (0x2000, 0x206F),  # General Punctuation (– — ‘ ’ “ ” … ‰ ′ ″ ‧)
    (0x2070, 0x209F),  # Superscripts and Subscripts
    (0x20A0, 0x20CF),  # Currency symbols (€ ₹ ...)
    (0x2100, 0x214F),  # Letterlike symbols (℃ № ™ ℉)
    (0x2150, 0x218F),  # Number forms (½ ⅓ Ⅰ Ⅱ)
    (0x2190, 0x21FF),  # Arrows
    (0x2200, 0x22FF),  # Mathematical operators (− √ ∑ ≈ ≤ ≥ ∞)
    (0x2300, 0x23FF),  # Miscellaneous technical (⌀ ⌘)
    (0x2460, 0x24FF),  # Enclosed alphanumerics (① ⑴ ⒈)
    (0x2500, 0x257F),  # Box drawing
    (0x2580, 0x259F),  # Block elements
    (0x25A0, 0x25FF),  # Geometric shapes (■ □ ▲ △ ● ○ ◆)
    (0x2600, 0x26FF),  # Miscellaneous symbols (★ ☆ ☐ ☑ ☒)
    (0x2700, 0x27BF),  # Dingbats (✓ ✔ ✗ ✘)
    (0x3000, 0x303F),  # CJK symbols and punctuation (、。《》「」【】〜)
    (0x3040, 0x30FF),  # Hiragana, Katakana (GB2312 rows 4-5)
    (0x3100, 0x312F),  # Bopomofo (GB2312 row 8)
    (0x3200, 0x32FF),  # Enclosed CJK letters and months (㈠ ㊣)
    (0x3300, 0x33FF),  # CJK compatibility (㎡ ㎏ ㎜)
    (0xFE10, 0xFE1F),  # Vertical forms
    (0xFE30, 0xFE4F),  # CJK compatibility forms
    (0xFE50, 0xFE6F),  # Small form variants
    (0xFF00, 0xFFEF),  # Halfwidth and fullwidth forms
    (0xFFFD, 0xFFFD),  # Replacement character
]


DROP_FEATURES = {"locl", "vert", "vrt2", "vkna", "vkrn", "vpal", "vhal", "vchw"}


def gb2312_chars() -> list[str]:
    """Every character the GB2312 codec decodes (rows 0xA1-0xF7, cells 0xA1-0xFE)."""
    out = []
    for hi in range(0xA1, 0xF8):
        for lo in range(0xA1, 0xFF):
            try:
                out.append(bytes([hi, lo]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return out


def gb2312_codepoints() -> set[int]:
    return {ord(c) for c in gb2312_chars()}


def is_hanzi(ch: str) -> bool:
    return 0x4E00 <= ord(ch) <= 0x9FFF


def wanted_codepoints() -> set[int]:
    cps = {ord(c) for c in gb2312_chars()}
    for a, b in RANGES:
        cps.update(range(a, b + 1))
    return cps


def pick_face(ttc: Path, family: str) -> TTFont:
    coll = TTCollection(str(ttc))
    for font in coll.fonts:
        if font["name"].getDebugName(1) == family:
            return font
    names = [f["name"].getDebugName(1) for f in coll.fonts]
    raise SystemExit(f"{ttc}: no face named {family!r} (faces: {names})")


def rename(font: TTFont, style: str, src_version: str, family: str = NEW_FAMILY,
           ps_family: str = NEW_PS_FAMILY, source: str = "Noto Sans CJK SC",
           tag: str = "subset-gb2312") -> None:
    ps_name = f"{ps_family}-{style}"
    full = family if style == "Regular" else f"{family} {style}"
    name = font["name"]
    copyright_ = name.getDebugName(0) or ""
    new = {
        0: f"{copyright_} Modified (subset, renamed) for reportgen.",
        1: family,
        2: style,
        3: f"{src_version};{ps_name};{tag}",
        4: full,
        5: f"{src_version}; subset of {source}",
        6: ps_name,
    }
    # Drop every record for the ids we rewrite (all platforms and languages),
    # plus typographic / WWS family names that would still say "Noto".
    name.names = [n for n in name.names if n.nameID not in set(new) | {16, 17, 18, 21, 22}]
    for nid, text in new.items():
        name.setName(text, nid, 3, 1, 0x409)  # Windows, Unicode BMP, en-US
        name.setName(text, nid, 1, 0, 0)      # Mac, Roman, English
    # The CFF table carries its own names (in the .ttc all faces share one CFF
    # table, named after the Japanese face); keep them consistent.
    if "CFF " in font:
        cff = font["CFF "].cff
        old_ps = cff.fontNames[0]
        cff.fontNames = [ps_name]
        top = cff.topDictIndex[0]
        top.FullName = full
        top.FamilyName = family
        for fd in getattr(top, "FDArray", None) or []:
            if getattr(fd, "FontName", None):
                fd.FontName = fd.FontName.replace(old_ps, ps_name)

def build(src_dir: Path, out_dir: Path) -> None:
    unicodes = wanted_codepoints()
    hanzi = [c for c in gb2312_chars() if is_hanzi(c)]
    assert len(hanzi) == 6763, len(hanzi)
    out_dir.mkdir(parents=True, exist_ok=True)
    for style in ("Regular", "Bold"):
        font = pick_face(src_dir / f"NotoSansCJK-{style}.ttc", SOURCE_FAMILY)
        src_version = font["name"].getDebugName(5).split(";")[0]
        cmap = font.getBestCmap()
        missing = [c for c in hanzi if ord(c) not in cmap]
        if missing:
            raise SystemExit(f"{style}: source lacks {len(missing)} GB2312 hanzi")

        opts = subset.Options()
        # fontTools' default feature set minus those that would pull in
        # thousands of unused glyphs: 'locl' (JP/KR/TC glyph variants for
        # every hanzi) and the vertical-writing features.
        opts.layout_features = [
            f for f in opts.layout_features if f not in DROP_FEATURES
        ] + ["palt", "halt", "pwid", "fwid", "hwid"]
        opts.name_IDs = [0, 1, 2, 3, 4, 5, 6, 13, 14]
        opts.name_languages = ["*"]
        opts.notdef_outline = True
        opts.glyph_names = False
        opts.drop_tables += ["vhea", "vmtx", "VORG"]  # vertical writing unused
        sub = subset.Subsetter(opts)
        sub.populate(unicodes=unicodes & set(cmap))
        sub.subset(font)
        rename(font, style, src_version)

        # Plain OpenType, not WOFF2: WeasyPrint would decompress WOFF2 for every PDF (a quarter second).
        dest = out_dir / f"{NEW_PS_FAMILY}-{style}.otf"
        font.recalcTimestamp = False  # keep the source's head.modified:
        font.save(str(dest))          # byte-reproducible output
        kept = set(font.getBestCmap())
        print(
            f"{dest}: {dest.stat().st_size / 1024 / 1024:.2f} MiB, "
            f"{len(font.getGlyphOrder())} glyphs, {len(kept)} code points, "
            f"{sum(1 for c in hanzi if ord(c) in kept)} GB2312 hanzi"
        )


def build_supplement(cjk_dir: Path, core_dir: Path, out_dir: Path) -> None:
    """'Report Sans Supplement': Noto Sans (Regular/Bold) for all of RANGES
    it covers, plus Noto Sans Math (Regular only; also used in Bold) for what
    neither it nor Noto Sans CJK SC has. It covers what the CJK face lacks
    (superscript/subscript digits, most of Greek and Latin Extended, most
    math operators and arrows, ceiling/floor ...). List it after "Report Sans
    SC" for Chinese text, or before it for English text (proportional Latin
    punctuation); Pango falls back between them per character.
    """
    wanted = wanted_codepoints()
    for style in ("Regular", "Bold"):
        # Noto Sans gives everything it has in RANGES (full Latin with
        # proportional x ÷ ± ° quotes and dashes, so the face also works as
        # the primary font of English text, and spaces, so that a fallback
        # run such as "x₁ ⋅ x₂" has no missing space glyphs); Noto Sans Math
        # then fills what neither Noto Sans nor the CJK face has.
        cjk = pick_face(cjk_dir / f"NotoSansCJK-{style}.ttc", SOURCE_FAMILY)
        cjk_cps = set(cjk.getBestCmap())
        gap = set(wanted) - {c for c in gb2312_codepoints() if is_hanzi(chr(c))}
        parts = []
        with tempfile.TemporaryDirectory() as tmp:
            for i, src in enumerate((core_dir / f"NotoSans-{style}.ttf",
                                     core_dir / "NotoSansMath-Regular.ttf")):
                font = TTFont(str(src))
                opts = subset.Options()
                opts.hinting = False          # hint programs cannot be merged
                opts.drop_tables += ["MATH"]
                opts.notdef_outline = True
                opts.glyph_names = False
                sub = subset.Subsetter(opts)
                if i == 1:  # math: only what the other two faces lack
                    gap -= cjk_cps
                sub.populate(unicodes=gap & set(font.getBestCmap()))
                sub.subset(font)
                gap -= set(font.getBestCmap())
                path = Path(tmp) / f"part{i}.ttf"
                font.recalcTimestamp = False
                font.save(str(path))
                parts.append(str(path))
            first = TTFont(parts[0])
            version = first["name"].getDebugName(5).split(";")[0]
            src_head_modified = first["head"].modified
            merged = Merger().merge(parts)
        rename(merged, style, version, SUPP_FAMILY, SUPP_PS_FAMILY,
               "Noto Sans and Noto Sans Math", "supplement")
        dest = out_dir / f"{SUPP_PS_FAMILY}-{style}.ttf"
        merged.flavor = None
        merged.recalcTimestamp = False
        merged["head"].created = merged["head"].modified = src_head_modified
        merged.save(str(dest))
        print(f"{dest}: {dest.stat().st_size / 1024:.0f} KiB, "
              f"{len(merged.getBestCmap())} code points; "
              f"{len(gap - cjk_cps)} wanted code points in no source font")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=Path("/usr/share/fonts/opentype/noto"),
                    help="directory holding NotoSansCJK-Regular.ttc and -Bold.ttc")
    ap.add_argument("--core-src", type=Path,
                    default=Path("/usr/share/fonts/truetype/noto"),
                    help="directory holding NotoSans-{Regular,Bold}.ttf and "
                         "NotoSansMath-Regular.ttf (Debian fonts-noto-core)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args(argv)
    build(args.src, args.out)
    build_supplement(args.src, args.core_src, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
