"""The report's bundled fonts: which faces, in which order, and how each writer loads them.

The PDF loads the files themselves (WeasyPrint subsets them into the PDF). The HTML carries its own:
every face cut down to the characters the page uses and embedded as a data: URL, so Chinese (and
every symbol) renders on a machine without CJK fonts, and the page still needs no other file.

Subsetting uses HarfBuzz (libharfbuzz-subset, the library WeasyPrint uses for the PDF; ~5 ms a face)
through cffi, with fontTools as the fallback where the library is missing. The subsets are embedded
as OpenType/TrueType, not WOFF2: compressing them to WOFF2 costs ~0.65 s of Brotli per CJK face, for
a file about a quarter smaller.
"""
from __future__ import annotations

import base64
import functools
import io
from html import unescape
from pathlib import Path
from typing import Iterable

from ..model.catalog import data_dir

# (family, weight, file): plain OpenType (CFF for SC, TrueType for the supplement).
FONT_FILES = (("Report Sans SC", 400, "ReportSansSC-Regular.otf"), ("Report Sans SC", 700, "ReportSansSC-Bold.otf"),
              ("Report Sans Supplement", 400, "ReportSansSupplement-Regular.ttf"),
              ("Report Sans Supplement", 700, "ReportSansSupplement-Bold.ttf"))
FONT_FORMATS = {".otf": "opentype", ".ttf": "truetype"}
FONT_MIME = {".otf": "font/otf", ".ttf": "font/ttf"}
# Chinese first for zh (its Latin is full-width-friendly); the proportional Latin face first for en.
FONT_STACKS = {"zh": '"Report Sans SC", "Report Sans Supplement"', "en": '"Report Sans Supplement", "Report Sans SC"'}


def font_path(name: str) -> Path:
    return data_dir("templates") / "fonts" / name


def face_rule(family: str, weight: int, url: str, fmt: str) -> str:
    return (f'@font-face {{ font-family: "{family}"; font-weight: {weight}; font-style: normal; '
            f'src: url("{url}") format("{fmt}"); }}')


def used_codepoints(document: str) -> set[int]:
    """Every character of an HTML document, entities resolved: a superset of what the page shows
    (text the script shows from attributes included)."""
    return {ord(c) for c in set(unescape(document)) if not c.isspace()}  # (each character once: 4× faster)


def embedded_font_css(document: str) -> str:
    """@font-face rules with each bundled face cut to the document's characters, as data: URLs."""
    codepoints = used_codepoints(document)
    rules = []
    for family, weight, name in FONT_FILES:
        subset = subset_font(font_path(name).read_bytes(), codepoints)
        suffix = Path(name).suffix
        url = f"data:{FONT_MIME[suffix]};base64," + base64.b64encode(subset).decode("ascii")
        rules.append(face_rule(family, weight, url, FONT_FORMATS[suffix]))
    return "\n".join(rules)


def subset_font(data: bytes, codepoints: Iterable[int]) -> bytes:
    """The font with only the glyphs for these code points (and what they need)."""
    hb = _harfbuzz()
    return _harfbuzz_subset(hb, data, codepoints) if hb else _fonttools_subset(data, codepoints)


_CDEF = """
typedef struct hb_blob_t hb_blob_t; typedef struct hb_face_t hb_face_t; typedef struct hb_set_t hb_set_t;
typedef struct hb_subset_input_t hb_subset_input_t; typedef uint32_t hb_codepoint_t;
hb_blob_t *hb_blob_create(const char *data, unsigned int length, int mode, void *user_data, void *destroy);
void hb_blob_destroy(hb_blob_t *blob);
const char *hb_blob_get_data(hb_blob_t *blob, unsigned int *length);
hb_face_t *hb_face_create(hb_blob_t *blob, unsigned int index);
void hb_face_destroy(hb_face_t *face);
hb_blob_t *hb_face_reference_blob(hb_face_t *face);
void hb_set_add(hb_set_t *set, hb_codepoint_t codepoint);
hb_subset_input_t *hb_subset_input_create_or_fail(void);
void hb_subset_input_destroy(hb_subset_input_t *input);
hb_set_t *hb_subset_input_unicode_set(hb_subset_input_t *input);
void hb_subset_input_set_flags(hb_subset_input_t *input, unsigned int value);
hb_face_t *hb_subset_or_fail(hb_face_t *source, const hb_subset_input_t *input);
"""
_MEMORY_MODE_READONLY = 1
_FLAGS = 0x1 | 0x4  # no hinting (screens scale), desubroutinise (smaller CFF subsets)


@functools.cache
def _harfbuzz():
    """(ffi, harfbuzz, harfbuzz-subset) or None where the libraries are not installed."""
    try:
        from cffi import FFI
        ffi = FFI()
        ffi.cdef(_CDEF)
        return ffi, ffi.dlopen("libharfbuzz.so.0"), ffi.dlopen("libharfbuzz-subset.so.0")
    except (ImportError, OSError):
        return None


def _harfbuzz_subset(hb, data: bytes, codepoints: Iterable[int]) -> bytes:
    ffi, lib, sub = hb
    blob = ffi.gc(lib.hb_blob_create(data, len(data), _MEMORY_MODE_READONLY, ffi.NULL, ffi.NULL), lib.hb_blob_destroy)
    face = ffi.gc(lib.hb_face_create(blob, 0), lib.hb_face_destroy)
    request = ffi.gc(sub.hb_subset_input_create_or_fail(), sub.hb_subset_input_destroy)
    unicodes = sub.hb_subset_input_unicode_set(request)
    for cp in codepoints:
        lib.hb_set_add(unicodes, cp)
    sub.hb_subset_input_set_flags(request, _FLAGS)
    result = sub.hb_subset_or_fail(face, request)
    if result == ffi.NULL:
        raise RuntimeError("HarfBuzz could not subset a bundled font")
    result = ffi.gc(result, lib.hb_face_destroy)
    out = ffi.gc(lib.hb_face_reference_blob(result), lib.hb_blob_destroy)
    length = ffi.new("unsigned int *")
    pointer = lib.hb_blob_get_data(out, length)
    return bytes(ffi.buffer(pointer, length[0]))


def _fonttools_subset(data: bytes, codepoints: Iterable[int]) -> bytes:
    from fontTools import subset
    from fontTools.ttLib import TTFont
    options = subset.Options()
    options.hinting = False
    options.desubroutinize = True
    font = TTFont(io.BytesIO(data))
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=list(codepoints))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()
