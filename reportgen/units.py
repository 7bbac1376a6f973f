"""The one place where units are defined and converted.

Bytes are integers everywhere inside the program; conversion happens only at the edge
(report text, workbook number formats). GB = 10**9 bytes, GiB = 2**30 bytes: the two
are always labelled and never mixed.
"""

KiB = 2**10
MiB = 2**20
GiB = 2**30
KB = 10**3
MB = 10**6
GB = 10**9
TB = 10**12

BITS_PER_BYTE = 8


def bytes_from_bits(num_elements: int, bits: float) -> float:
    """Bytes taken by num_elements values of `bits` bits each (true division: int4 is 0.5 byte)."""
    return num_elements * bits / BITS_PER_BYTE


def gib(num_bytes: float) -> float:
    return num_bytes / GiB


def gb(num_bytes: float) -> float:
    return num_bytes / GB


def format_gib(num_bytes: float, digits: int = 2) -> str:
    """'13.04 GiB' — the report's default memory unit."""
    return f"{num_bytes / GiB:,.{digits}f} GiB"


def format_gb(num_bytes: float, digits: int = 2) -> str:
    """'14.00 GB' (10^9 bytes), for comparing with figures quoted in decimal gigabytes."""
    return f"{num_bytes / GB:,.{digits}f} GB"


def format_count(n: float) -> str:
    """A parameter or token count with thousands separators: '6,738,415,616'."""
    return f"{int(n):,}"


def format_billions(n: float, digits: int = 2) -> str:
    """'6.74B' — for parameter counts in prose."""
    return f"{n / 1e9:,.{digits}f}B"
