"""Input limits: how much reportgen reads, nests, expands and writes for one input.

A hostile or careless input must get one line, never gigabytes of memory or a hang. Each limit is
far above any real preset or config; one that is hit refuses the input with a line that names the
environment variable raising it (README, "Limits"). Text limits are not raisable: they keep every
string encodable and every workbook cell under Excel's 32,767 characters.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from .errors import InputError


@dataclass(frozen=True)
class Limit:
    env: str  # the environment variable that raises (or lowers) it
    default: int
    unit: str

    def value(self) -> int:
        text = os.environ.get(self.env)
        if text is None:
            return self.default
        if not text.strip().isdigit() or int(text) < 1:
            raise InputError(f"expected a positive whole number, got {text!r}", key_path=self.env)
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
# Combinations of one preset, counted before any is made (100,000 take ~10 s and ~400 MiB as JSON).
SCENARIOS = Limit("REPORTGEN_MAX_SCENARIOS", 200_000, "combinations per preset")
# A build's peak memory, estimated per format before anything is estimated (pipeline.BUILD_COSTS).
BUILD_MEMORY = Limit("REPORTGEN_MAX_BUILD_MIB", 2048, "MiB of memory per format")

EXCEL_CELL_CHARS = 32_767
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


def check_document(data: Any, *, source: str, nesting: int | None = None) -> Any:
    """A parsed file, if every string in it (keys and values) passes check_text and it is nested no
    deeper than NESTING. Iterative: a document may be as deep as the parser allowed."""
    nesting = NESTING.value() if nesting is None else nesting
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if isinstance(node, str):
            check_text(node, source=source, key_path=path or None)
            continue
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
            stack.append((value, where, depth + 1))
    return data
