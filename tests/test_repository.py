"""The repository stands alone and keeps the house layering.

A clone of the project, with nothing beside it, must pass its tests: no file may point at the
reference folder that sat next to the checkout while the project was being built. And the core
(preset → scenarios → estimates → report) imports only the standard library, the YAML parser and
NumPy (the term table's array rendering, vector.py, for sweeps); only writers import rendering libraries, only the CLI imports Click.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "reportgen"
# Spelled in pieces so that this file does not match itself.
OUTSIDE = re.compile("|".join((re.escape("..") + "/" + "shared", "/work" + "/" + "shared")))
SKIPPED_DIRS = {".git", "out", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist", "fonts"}


def _repository_text_files():
    for path in REPO.rglob("*"):
        rel = path.relative_to(REPO)
        if path.is_file() and not SKIPPED_DIRS & set(rel.parts) and not rel.parts[0].endswith(".egg-info"):
            try:
                yield rel, path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue


def test_no_file_points_outside_the_repository():
    offenders = [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"
                 for rel, text in _repository_text_files() for m in OUTSIDE.finditer(text)]
    assert not offenders, offenders


def _imports(path: Path) -> set[str]:
    """Top-level names of absolute imports, and '.name' for the package's own modules."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = (node.module or "").split(".")[0]
                out |= {f".{base}"} if base else {f".{a.name}" for a in node.names}
            else:
                out.add(node.module.split(".")[0])
    return out


CORE = {"units", "errors", "limits", "formulas", "tables", "inputs", "terms", "models", "shape", "catalog", "estimate",
        "presets", "sweep", "goals", "plan", "ranking", "fleet",
        "report", "notes", "validation", "charts", "views", "text", "i18n", "vector", "arrays"}
RENDERING = {"jinja2", "markupsafe", "weasyprint", "cssselect2", "xlsxwriter", "cffi", "fontTools"}


def _third_party(names: set[str]) -> set[str]:
    return {n for n in names if not n.startswith(".") and n not in sys.stdlib_module_names}


@pytest.mark.parametrize("module", sorted(CORE))
def test_core_imports_only_the_standard_library_yaml_and_numpy(module):
    names = _imports(PACKAGE / f"{module}.py")
    assert _third_party(names) <= {"yaml", "numpy"}, names
    own = {n[1:] for n in names if n.startswith(".")}
    assert own <= CORE | {""}, f"{module} imports {own - CORE} (writers, pipeline or CLI)"


def test_every_module_is_assigned_a_layer():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__", "__main__"}
    assert modules == CORE | {"pipeline", "cli", "entry"}


def test_numpy_is_imported_only_through_arrays():
    """arrays.py imports NumPy with the interrupt signals blocked (its BLAS thread must keep them
    blocked); any other module importing it first would start that thread unblocked."""
    users = {p.name for p in PACKAGE.rglob("*.py") if "numpy" in _imports(p)}
    assert users == {"arrays.py"}


def test_the_entry_point_loads_the_cli_and_nothing_else():
    """entry.py exists to catch Ctrl-C while the CLI loads: it imports only the CLI and errors."""
    assert {n for n in _imports(PACKAGE / "entry.py") if n.startswith(".")} == {".cli", ".errors"}


@pytest.mark.parametrize("path", sorted((PACKAGE / "writers").glob("*.py")), ids=lambda p: p.name)
def test_writers_import_rendering_libraries_but_not_click(path):
    assert _third_party(_imports(path)) <= RENDERING


def test_only_the_cli_imports_click():
    users = {p.name for p in PACKAGE.rglob("*.py") if "click" in _imports(p)}
    assert users == {"cli.py"}
