"""The one place where units are defined and converted.

Bytes are integers everywhere inside the program; conversion happens only at the edge
(report text, workbook number formats). GB = 10**9 bytes, GiB = 2**30 bytes: the two
are always labelled and never mixed.
"""

KiB = 2**10
MiB = 2**20
GiB = 2**30
MB = 10**6
GB = 10**9


def format_count(n: float) -> str:
    """A parameter or token count with thousands separators: '6,738,415,616'."""
    return f"{int(n):,}"


SECONDS_PER = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def duration_unit(seconds: float) -> tuple[str, float]:
    """A length in the largest unit that keeps it readable: ("days" | "hours" | "minutes", how many)."""
    for unit, size in (("days", 86400), ("hours", 3600)):
        if seconds >= 2 * size:
            return unit, seconds / size
    return "minutes", max(seconds / 60, 0.1)


def duration_words(seconds: float) -> str:
    """duration_unit in English: '3.5 days', '36.0 hours', '12.0 minutes'."""
    unit, value = duration_unit(seconds)
    return f"{value:,.1f} {unit}"


def parse_duration(text: str, zero: bool = False) -> float:
    """'7d', '36h', '90m', '600s', '2w' or '500ms' -> seconds; ValueError saying what is wrong. A bare
    number is refused: '7' could mean seven days as well as seven seconds. zero: '0d' is allowed (a
    moment at the start of a period rather than a length)."""
    given = str(text).strip()
    unit = "ms" if given[-2:].lower() == "ms" else given[-1:].lower()
    try:
        number = float(given[:-len(unit)] if unit in SECONDS_PER else given)
    except ValueError:
        raise ValueError(f"expected a duration such as 7d, 36h or 90m, got {text!r}") from None
    if unit not in SECONDS_PER:
        raise ValueError(f"a duration needs a unit (w, d, h, m, s or ms, as in 7d or 36h), got {text!r}")
    if not (0 <= number if zero else 0 < number) or number == float("inf"):
        raise ValueError(f"expected a {'non-negative' if zero else 'positive'} duration, got {text!r}")
    return number * SECONDS_PER[unit]


def parse_count(text: str) -> int:
    """A whole count as people write token counts: '4096', '1e9', '32k' (k = 1,024, as in '32k context').
    Digits are read exactly (a float would round 99999999999999999999999)."""
    text = str(text).strip()
    scale = 1024 if text[-1:] in "kK" and text[:-1] else 1
    body = text[:-1] if scale > 1 else text
    try:
        return int(body) * scale
    except ValueError:
        number = float(body) * scale
    if not number.is_integer():
        raise ValueError(f"a whole number, got {text!r}")
    return int(number)
