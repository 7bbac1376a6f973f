"""Input limits: how much reportgen reads, nests, expands and writes for one input.

A hostile or careless input must get one line, never gigabytes of memory or a hang. Each limit is
far above any real preset or config; one that is hit refuses the input with a line that names the
environment variable raising it (README, "Limits"). Text limits are not raisable: they keep every
string encodable and every workbook cell under Excel's 32,767 characters.
"""
from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any

from .errors import InputError, shown

# A limit may be raised this far and no further: a larger value is no limit (and no longer an index
# size, as Python's reads and allocations need).
LIMIT_MAXIMUM = 10**18
_WHOLE_NUMBER = re.compile(r"[0-9]{1,19}")  # ASCII digits only: int() also reads '٣' and '１２'


@dataclass(frozen=True)
class Limit:
    env: str  # the environment variable that raises (or lowers) it
    default: int
    unit: str

    def value(self) -> int:
        text = os.environ.get(self.env)
        if text is None:
            return self.default
        if not _WHOLE_NUMBER.fullmatch(text.strip()) or not 1 <= int(text) <= LIMIT_MAXIMUM:
            raise InputError(f"expected a whole number from 1 to {LIMIT_MAXIMUM:,}, got {shown(text)}",
                             key_path=self.env)
        return int(text)

    def refuse(self, found: str, *, source: str | None = None, key_path: str | None = None) -> InputError:
        """'<found>: the limit is N <unit> (raise it with ENV=N)'."""
        return InputError(f"{found}: the limit is {self.value():,} {self.unit} (raise it with {self.env}=N)",
                          source=source, key_path=key_path)


# PyYAML parses about 0.25 MB/s and holds ~100 bytes per byte read: 2 MiB is ~8 s and ~200 MiB at
# worst, and some 20,000 explicit scenarios; the bundled files are below 130 KB.
FILE_BYTES = Limit("REPORTGEN_MAX_FILE_BYTES", 2 * 2**20, "bytes per input file")
NESTING = Limit("REPORTGEN_MAX_NESTING", 64, "levels of nesting")
# Values of a YAML document once its aliases are expanded (a 651-byte alias bomb expands to billions).
YAML_VALUES = Limit("REPORTGEN_MAX_YAML_VALUES", 1_000_000, "values after expanding aliases")
# The parser's time: it makes 35,000-80,000 events a second (scalars, aliases, starts and ends of
# lists and mappings), each bounded by the file's size, so 250,000 are 3-7 s; a file at FILE_BYTES has
# up to 1,000,000. The bundled files have at most 5,306; an explicit scenario is about 12.
YAML_EVENTS = Limit("REPORTGEN_MAX_YAML_EVENTS", 250_000, "parser events")
# Combinations of one preset, counted before any is made (100,000 take ~10 s and ~400 MiB as JSON).
SCENARIOS = Limit("REPORTGEN_MAX_SCENARIOS", 200_000, "combinations per preset")
# A build's peak memory, estimated per format before anything is estimated (pipeline.BUILD_COSTS).
BUILD_MEMORY = Limit("REPORTGEN_MAX_BUILD_MIB", 2048, "MiB of memory per format")
# An exclude rule is compared with every combination of its matrix (in Python where a workload is RLHF,
# about 1 µs each): 45,000 rules over 45,000 batch sizes fit in 1.2 MB and took minutes.
EXCLUDE_CHECKS = Limit("REPORTGEN_MAX_EXCLUDE_CHECKS", 10_000_000, "exclude rules × combinations per matrix")

EXCEL_CELL_CHARS = 32_767
# Every number is computed with as a float at some point, and a float stops at about 1.8e308. A longer
# literal is not even converted: Python refuses integers of more than 4,300 digits, and base 60
# (YAML 1.1's 1:30:00) costs quadratic time. 1,100 characters hold any number below the bound in
# every radix YAML has (binary: 1,024 digits).
NUMBER_MAXIMUM = sys.float_info.max
NUMBER_CHARS = 1_100
NAME_CHARS = 200  # a model name: a catalog file is named after it, and file names stop at 255 bytes
# Text values end up in workbook cells, some behind a label reportgen adds ("<name> · reference").
TEXT_CHARS = 32_000


def check_text(value: str, *, source: str | None, key_path: str | None) -> str:
    """The text, if every character can be written as UTF-8 and it fits a workbook cell."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(f"text with an unpaired surrogate {value[exc.start]!r} at character {exc.start} "
                         "(not encodable as UTF-8)", source=source, key_path=key_path) from None
    if len(value) > TEXT_CHARS:
        raise InputError(f"text of {len(value):,} characters: at most {TEXT_CHARS:,} fit a workbook cell "
                         f"(Excel's limit is {EXCEL_CELL_CHARS:,})", source=source, key_path=key_path)
    return value


def check_name(value: Any, what: str, *, source: str | None, key_path: str | None) -> str:
    """A name (of a model, a matrix): non-empty text of at most NAME_CHARS characters."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"expected {what} (non-empty text), got {value!r}", source=source, key_path=key_path)
    check_text(value, source=source, key_path=key_path)
    if len(value) > NAME_CHARS:
        raise InputError(f"{what} of {len(value):,} characters: at most {NAME_CHARS} are allowed", source=source,
                         key_path=key_path)
    return value


@dataclass(frozen=True)
class LongNumber:
    """What a parser reads for a number literal of more than NUMBER_CHARS characters, unconverted:
    check_document refuses it with its key path."""
    text: str


def number_literal(text: str, convert) -> Any:
    """convert(text), or a LongNumber for a literal too long to convert (or too large: OverflowError)."""
    if len(text) > NUMBER_CHARS:
        return LongNumber(text)
    try:
        return convert(text)
    except OverflowError:
        return LongNumber(text)


def _check_number(value: Any, *, source: str | None, key_path: str | None) -> None:
    """Refuses a number that no field can hold: a LongNumber, or an integer beyond NUMBER_MAXIMUM."""
    if isinstance(value, LongNumber):
        size = f"written with {len(value.text):,} characters"
    elif isinstance(value, int) and abs(value) > NUMBER_MAXIMUM:
        size = f"of {len(str(abs(value))):,} digits"
    else:
        return
    raise InputError(f"a number {size} is too large for any field (numbers go up to about {NUMBER_MAXIMUM:.1e})",
                     source=source, key_path=key_path)


def check_document(data: Any, *, source: str, nesting: int | None = None) -> Any:
    """A parsed file, if every string in it (keys and values) passes check_text, every number fits a
    float (LongNumber) and it is nested no deeper than NESTING. Iterative: a document may be as deep
    as the parser allowed."""
    nesting = NESTING.value() if nesting is None else nesting
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            check_text(node, source=source, key_path=path or None)
            continue
        _check_number(node, source=source, key_path=path or None)
        if not isinstance(node, (dict, list)):
            continue
        if depth >= nesting:
            raise NESTING.refuse("nested too deeply", source=source, key_path=path or None)
        if isinstance(node, list):
            stack.extend((value, f"{path}[{i}]", depth + 1) for i, value in enumerate(node))
            continue
        for key, value in node.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                check_text(key, source=source, key_path=where)
            _check_number(key, source=source, key_path=where)
            stack.append((value, where, depth + 1))
    return data
