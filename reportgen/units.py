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
