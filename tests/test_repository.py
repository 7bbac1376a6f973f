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


def _module(path: Path) -> str:
    """A file's dotted module name (reportgen.model.terms; a package's __init__ is the package)."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Top-level names of absolute imports, and the package's own modules by their full dotted names."""
    package = _module(path) if path.stem == "__init__" else _module(path).rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
                names = [f"{target}.{a.name}" for a in node.names]
                out |= {n for n in names if _is_module(n)} or {target}
            else:
                out.add(node.module.split(".")[0])
    return out


def _is_module(name: str) -> bool:
    path = REPO.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


# The house layers, lowest first: a module imports only from its own layer and those before it.
LAYERS = ("reportgen.errors", "reportgen.limits", "reportgen.model", "reportgen.planning", "reportgen.scenarios",
          "reportgen.report", "reportgen.writers", "reportgen.pipeline", "reportgen.cli", "reportgen.entry")
CORE_LAYERS = LAYERS[:6]  # no rendering library, no Click
MODULES = sorted(_module(p) for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts
                 and _module(p) not in ("reportgen", "reportgen.__main__"))
RENDERING = {"jinja2", "markupsafe", "weasyprint", "cssselect2", "xlsxwriter", "cffi", "fontTools",
             "isal"}  # isal: the workbook stream's deflate


def _layer(module: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + "."))


def _file(module: str) -> Path:
    path = REPO.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _third_party(names: set[str]) -> set[str]:
    return {n for n in names if not n.startswith("reportgen") and n not in sys.stdlib_module_names}


def test_every_module_is_assigned_a_layer():
    for module in MODULES:
        assert _layer(module) is not None, module


@pytest.mark.parametrize("module", MODULES)
def test_each_module_imports_only_its_layer_and_those_before_it(module):
    own = {n for n in _imports(_file(module)) if n.startswith("reportgen.")}
    above = {n for n in own if _layer(n) > _layer(module)}
    assert not above, f"{module} imports {sorted(above)}"


@pytest.mark.parametrize("module", [m for m in MODULES if _layer(m) < len(CORE_LAYERS)])
def test_core_imports_only_the_standard_library_yaml_and_numpy(module):
    names = _imports(_file(module))
    assert _third_party(names) <= {"yaml", "numpy"}, names


def test_numpy_is_imported_only_through_arrays():
    """arrays.py imports NumPy with the interrupt signals blocked (its BLAS thread must keep them
    blocked); any other module importing it first would start that thread unblocked."""
    users = {_module(p) for p in PACKAGE.rglob("*.py") if "numpy" in _imports(p)}
    assert users == {"reportgen.model.arrays"}


def test_the_entry_point_loads_the_cli_and_nothing_else():
    """entry.py exists to catch Ctrl-C while the CLI loads: it imports only the CLI and errors."""
    assert {n for n in _imports(PACKAGE / "entry.py") if n.startswith("reportgen")} == {"reportgen.cli",
                                                                                        "reportgen.errors"}


@pytest.mark.parametrize("path", sorted((PACKAGE / "writers").rglob("*.py")), ids=lambda p: p.name)
def test_writers_import_rendering_libraries_but_not_click(path):
    assert _third_party(_imports(path)) <= RENDERING


def test_only_the_cli_imports_click():
    users = {p.name for p in PACKAGE.rglob("*.py") if "click" in _imports(p)}
    assert users == {"cli.py"}
