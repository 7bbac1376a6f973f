"""Issue #35: what a command pays before it starts — NumPy only where arrays are read, the package's term
tables compiled once and their bytecode kept (reportgen/model/formulas.py cached_compile)."""
import builtins
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reportgen.model import formulas
from reportgen.model.formulas import Var, compile_terms
from reportgen.model.terms import Term

REPO = Path(__file__).resolve().parent.parent
TERMS = (Term("a", "a", "count", Var("x") * 2), Term("b", "b", "count", Var("a") + 1))


def _table():
    return compile_terms(TERMS, lambda n: f"I[{n!r}]", "_cached_test", cache=True)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(formulas, "CODE_CACHE", tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path


def test_a_cached_table_is_compiled_once_and_read_back(cache, monkeypatch):
    assert _table()({"x": 3}, {}, {}, None) == (6, 7)
    [kept] = cache.glob("terms-*.marshal")

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled again")
    monkeypatch.setattr(builtins, "compile", no_compile)
    assert _table()({"x": 5}, {}, {}, None) == (10, 11)
    assert list(cache.glob("terms-*")) == [kept]  # nothing else left behind (no temporary)


def test_an_unreadable_cache_file_is_compiled_again_and_replaced(cache):
    _table()
    [kept] = cache.glob("terms-*.marshal")
    kept.write_bytes(b"\x00garbage")
    assert _table()({"x": 1}, {}, {}, None) == (2, 3)
    assert kept.read_bytes() != b"\x00garbage"


def test_a_tables_earlier_cache_is_removed_and_other_tables_kept(cache):
    """An edited term table (or an upgrade) leaves no stale bytecode behind; another table's cache stays."""
    other = compile_terms(TERMS[:1], lambda n: f"I[{n!r}]", "_other_table", cache=True)
    _table()
    old = {p.name for p in cache.glob("terms-_cached_test-*.marshal")}
    edited = compile_terms((TERMS[0], Term("b", "b", "count", Var("a") + 2)), lambda n: f"I[{n!r}]", "_cached_test",
                           cache=True)
    assert edited({"x": 3}, {}, {}, None) == (6, 8) and other({"x": 1}, {}, {}, None) == (2,)
    [kept] = cache.glob("terms-_cached_test-*.marshal")
    assert len(old) == 1 and kept.name not in old
    assert len(list(cache.glob("terms-_other_table-*.marshal"))) == 1


def test_nothing_is_written_where_python_writes_no_bytecode(cache, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert _table()({"x": 1}, {}, {}, None) == (2, 3)
    assert list(cache.iterdir()) == []


def test_a_table_a_preset_makes_is_not_cached(cache):
    compile_terms(TERMS, lambda n: f"I[{n!r}]", "_preset_made")
    assert list(cache.iterdir()) == []


def _modules_after(argv: list[str], names: tuple[str, ...]) -> str:
    """Run reportgen with argv in a fresh interpreter; which of `names` it imported, space-separated."""
    code = ("import sys\n"
            f"sys.argv = ['reportgen', *{argv!r}]\n"
            "from reportgen.cli import main\n"
            "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
            f"sys.stderr.write('|' + ' '.join(m for m in {names!r} if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-500:]
    return proc.stderr.rsplit("|", 1)[-1]


@pytest.mark.parametrize("argv", [["--help"], ["models"], ["estimate", "--model", "Llama-3-8B", "--workload", "inference"]])
def test_a_command_that_reads_no_arrays_does_not_import_numpy(argv):
    assert _modules_after(argv, ("numpy",)) == ""


@pytest.mark.parametrize("argv, loaded", [
    (["plan", "--model", "Llama-3-8B", "--workload", "lora", "--gpu-type", "L40S"], False),
    (["plan", "--model", "Qwen2.5-0.5B", "--workload", "grpo", "--gpu-type", "H100-80GB-SXM"], True)])
def test_a_plan_loads_the_validation_cases_only_to_state_rlhf_accuracy_and_never_the_pipeline(argv, loaded):
    """The pipeline (presets, notes, the report's views) is a build's: a plan never imports it. An RLHF plan imports
    the validation cases, whose step times it compares with the published ones (#35: the pipeline was 89 ms of an
    RLHF plan's imports, the validation cases are 14)."""
    modules = _modules_after(argv, ("reportgen.pipeline", "reportgen.report.notes", "reportgen.report.validation"))
    assert modules == ("reportgen.report.validation" if loaded else "")
