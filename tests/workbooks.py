"""Workbooks the tests load many times, parsed once per test process.

openpyxl's parse is the slowest step of the workbook tests after LibreOffice itself: the small fixture's
book takes about 4 s with its formulas and 2 s with its values, nearly all of it XML, and one module's
tests load the same book a dozen times. `load` parses a file once and hands out copies: a pickled
workbook loads in a quarter of the time, and each copy is a new object a test may edit and save
(tests/test_lo_harness.py checks that a copy saves to what a fresh parse saves). Pickling costs about
1 s, so it is for files loaded more than once (the module fixtures' books); a file a test reads once,
such as LibreOffice's output, is parsed with openpyxl directly.
"""
from __future__ import annotations

import pickle
from functools import lru_cache
from pathlib import Path

import openpyxl
from openpyxl.workbook.workbook import Workbook


def load(path: Path | str, *, data_only: bool = False) -> Workbook:
    """A fresh copy of openpyxl.load_workbook(path, data_only=data_only); the file is parsed again
    when it changes."""
    resolved = Path(path).resolve()
    stat = resolved.stat()
    return pickle.loads(_parsed(resolved, data_only, stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=6)  # a module's books (formulas and values): about 40 MB each pickled
def _parsed(path: Path, data_only: bool, mtime_ns: int, size: int) -> bytes:
    return pickle.dumps(openpyxl.load_workbook(path, data_only=data_only), protocol=pickle.HIGHEST_PROTOCOL)
