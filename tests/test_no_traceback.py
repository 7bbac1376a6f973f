"""Issue #36: each input that still ended in a traceback, a hang or mixed outputs, reproduced, with the
one line it gives now.

Commands run as a user's would (tests/guarded.py): forked, or in a new interpreter where its start-up
or exit matters (an encoding from the environment, `ulimit -v`, the flush of stdout at exit).
"""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import guarded
from click.testing import CliRunner
from reportgen.cli import main
from reportgen.errors import shown
from reportgen.limits import NUMBER_CHARS

REPO = Path(__file__).resolve().parent.parent
GEMMA = json.loads((REPO / "presets/models/gemma-2-9b.json").read_text())["config"]
TINY = "title: tiny\nscenarios: [{model: Qwen2.5-0.5B, workload: inference, gpu: L4}]\n"
LIMIT_ENVS = ("REPORTGEN_MAX_FILE_BYTES", "REPORTGEN_MAX_NESTING", "REPORTGEN_MAX_YAML_VALUES",
              "REPORTGEN_MAX_YAML_EVENTS", "REPORTGEN_MAX_SCENARIOS", "REPORTGEN_MAX_EXCLUDE_CHECKS")


def _one_line(outcome, expected: str, status: int = 1) -> None:
    assert outcome.problem() is None, outcome.problem()
    assert (outcome.status, outcome.stderr) == (status, expected + "\n")


def _preset(tmp_path, text: str, name: str = "p") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------------
# Numbers too long or too large for any field: refused with their key path

TOO_LARGE = "is too large for any field (numbers go up to about 1.8e+308)"


@pytest.mark.parametrize("literal, size", [
    ("1" + ":00" * 2500, "written with 7,501 characters"),  # base 60: 60**2500 has 4,446 digits
    ("9" * 5000, "written with 5,000 characters"),
    ("0x" + "f" * 5000, "written with 5,002 characters"),
    ("0b" + "1" * 1030, f"of {len(str(2**1030 - 1))} digits"),
    ("-0x" + "f" * 300, f"of {len(str(16**300 - 1))} digits"),
    ("1" + ":00" * 200, f"of {len(str(60**200))} digits"),
    ("1" + ":00" * 300 + ".5", "written with 903 characters"),  # a base-60 float past a float
    ("1_000" * 300, "written with 1,500 characters"),
    ("1e400", None),  # a float: infinity, which the field refuses as it always did
], ids=["base 60", "decimal", "hex", "binary", "negative hex", "base 60 past a float", "base-60 float", "underscores",
        "1e400"])
def test_a_huge_yaml_number_is_refused_with_its_key_path(tmp_path, literal, size):
    preset = _preset(tmp_path, f"title: t\nscenarios: [{{model: Qwen2.5-0.5B, gpu: L4, batch_size: {literal}}}]\n")
    outcome = guarded.run(["check", preset])
    if size is None:
        assert outcome.problem() is None and outcome.status == 1
        assert outcome.stderr.startswith(f"Error: {preset}: scenarios[0].batch_size: ")
    else:
        _one_line(outcome, f"Error: {preset}: scenarios[0].batch_size: a number {size} {TOO_LARGE}")


def test_a_huge_number_where_text_belongs_is_refused_too(tmp_path):
    """The title: a mistyped field's message would print the number (Python refuses to, past 4,300 digits)."""
    preset = _preset(tmp_path, "title: 1" + ":00" * 2000 + "\n" + TINY.split("\n", 1)[1])
    _one_line(guarded.run(["check", preset]), f"Error: {preset}: title: a number written with 6,001 characters {TOO_LARGE}")


def test_the_longest_number_literal_that_can_be_converted_still_reaches_its_field(tmp_path):
    preset = _preset(tmp_path, f"title: t\nscenarios: [{{model: Qwen2.5-0.5B, gpu: L4, batch_size: {'0' * (NUMBER_CHARS - 1)}1}}]\n")
    assert guarded.run(["check", preset]).status == 0


@pytest.mark.parametrize("literal, size", [("1" + "0" * 400, "of 401 digits"), ("9" * 4301, "written with 4,301 characters"),
                                           ("1" + "0" * 1200 + ".5", "written with 1,203 characters")],
                         ids=["401 digits", "4,301 digits", "a float of 1,203 characters"])
@pytest.mark.parametrize("field", ["final_logit_softcapping", "attn_logit_softcapping", "rms_norm_eps"])
def test_a_huge_config_number_is_refused_with_its_key_path(tmp_path, field, literal, size):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**GEMMA, field: "N"}).replace('"N"', literal))
    for command in (["params"], ["estimate", "--workload", "full"]):
        _one_line(guarded.run([*command, "--config", path]), f"Error: {path}: {field}: a number {size} {TOO_LARGE}")


@pytest.mark.parametrize("env", LIMIT_ENVS)
@pytest.mark.parametrize("value", ["9" * 30, "9" * 5000, "1000000000000000001", "٣", "²", "0", "-1", "1e9", " "],
                         ids=["30 digits", "5,000 digits", "10**18 + 1", "arabic-indic 3", "superscript 2", "0", "-1",
                              "1e9", "space"])
def test_a_limit_variable_out_of_range_is_one_line(tmp_path, env, value):
    """30 digits used to pass as a read size (OverflowError), 5,000 failed to convert (ValueError), and
    '²' passed str.isdigit() and failed int()."""
    preset = _preset(tmp_path, "title: t\nmatrices: [{name: m, model: Qwen2.5-0.5B, gpu: L4, batch_size: [1, 2], "
                               "exclude: [{batch_size: 1}]}]\n")  # one that reads every limit
    assert guarded.run(["check", preset]).status == 0
    outcome = guarded.run(["check", preset], env={env: value})
    _one_line(outcome, f"Error: {env}: expected a whole number from 1 to 1,000,000,000,000,000,000, got {shown(value)}")


def test_a_limit_raised_far_past_the_memory_allocates_nothing_for_it(tmp_path):
    """10 GB as the file cap: the reader used to ask for the cap's size at once (MemoryError)."""
    preset = _preset(tmp_path, TINY)
    outcome = guarded.run(["check", preset], env={"REPORTGEN_MAX_FILE_BYTES": str(10**10)})
    assert (outcome.problem(), outcome.status) == (None, 0)
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_FILE_BYTES": str(10**18)}).status == 0


# ---------------------------------------------------------------------------------------------
# Parse time: bounded by the parser's events, not only the file's size

def test_a_long_flow_style_line_is_refused_in_bounded_time(tmp_path):
    items = ", ".join(f"{{batch_size: {i % 64 + 1}}}" for i in range(90_000))
    preset = _preset(tmp_path, "{title: t, scenarios: [" + items + "]}\n")
    assert 1.5e6 < preset.stat().st_size < 2 * 2**20
    outcome = guarded.run(["check", preset], timeout=60)
    assert outcome.problem() is None, outcome.problem()
    assert outcome.stderr.startswith(f"Error: {preset}: too many parser events at line 1 column ")
    assert outcome.stderr.endswith(": the limit is 250,000 parser events (raise it with REPORTGEN_MAX_YAML_EVENTS=N)\n")
    assert outcome.cpu_s < 15


def test_an_exclude_list_of_aliases_is_refused_in_bounded_time(tmp_path):
    preset = _preset(tmp_path, "title: t\nmatrices:\n  - name: m\n    model: [Llama-3.2-1B, Qwen2.5-0.5B]\n"
                               "    zero_stage: [0, 2]\n    gpu: [A100-80GB, L4]\n    workload: full\n"
                               "    exclude: [&a {zero_stage: 2}, " + ", ".join(["*a"] * 300_000) + "]\n")
    outcome = guarded.run(["check", preset], timeout=60)
    assert outcome.problem() is None, outcome.problem()
    assert outcome.stderr.startswith(f"Error: {preset}: too many parser events at line 8 column ")
    assert outcome.cpu_s < 15


def test_many_exclude_rules_over_many_combinations_are_refused_before_they_are_compared(tmp_path):
    """40,000 rules over 45,000 batch sizes: 1.1 MB and 205,000 parser events, within both limits, and
    1.8 billion comparisons (minutes)."""
    batch = ", ".join(str(i) for i in range(1, 45_001))
    rules = ", ".join(f"{{batch_size: {i}}}" for i in range(1, 40_001))
    preset = _preset(tmp_path, f"title: t\nmatrices:\n  - name: m\n    model: Qwen2.5-0.5B\n    gpu: L4\n"
                               f"    workload: inference\n    batch_size: [{batch}]\n    exclude: [{rules}]\n")
    outcome = guarded.run(["check", preset], timeout=60)
    _one_line(outcome, f"Error: {preset}: matrices[0].exclude: 40,000 rules × 45,000 combinations: the limit is "
                       "10,000,000 exclude rules × combinations per matrix (raise it with REPORTGEN_MAX_EXCLUDE_CHECKS=N)")
    assert outcome.cpu_s < 15


def test_the_event_limit_can_be_raised_and_lowered(tmp_path):
    preset = _preset(tmp_path, TINY)
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_YAML_EVENTS": "10"}).status == 1
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_YAML_EVENTS": "1000000"}).status == 0


# ---------------------------------------------------------------------------------------------
# Standard streams: full, a closed pipe, closed

STDOUT_COMMANDS = [["models"], ["models", "--json"], ["gpus"], ["estimate", "--model", "Llama-2-7B", "--json"],
                   ["validate"], ["params", "--model", "Llama-2-7B"], ["presets"], ["--help"], ["--version"]]


@pytest.mark.parametrize("command", STDOUT_COMMANDS, ids=" ".join)
def test_a_full_stdout_is_one_line(command):
    _one_line(guarded.run(command, stdout="full"), "Error: cannot write to standard output: No space left on device")


@pytest.mark.parametrize("command", STDOUT_COMMANDS[:4], ids=" ".join)
def test_a_closed_pipe_ends_quietly(command):
    outcome = guarded.run(command, stdout="pipe")
    assert (outcome.problem(), outcome.status, outcome.stderr) == (None, 1, "")


def test_a_closed_stdout_is_one_line():
    _one_line(guarded.run(["models"], stdout="closed"),
              "Error: cannot write to standard output: it was closed when the command started")


def test_a_command_that_prints_nothing_does_not_mind_a_closed_stdout(tmp_path):
    outcome = guarded.run(["build", _preset(tmp_path, TINY), "--format", "json", "-o", tmp_path / "out", "-q"],
                          stdout="closed")
    assert (outcome.problem(), outcome.status) == (None, 0)
    assert json.loads((tmp_path / "out" / "p.json").read_text())["preset"]["title"] == "tiny"


@pytest.mark.parametrize("stderr", ["full", "pipe", "closed"])
def test_an_error_that_cannot_be_written_still_exits_1(stderr):
    outcome = guarded.run(["check", "missing.yaml"], stderr=stderr)
    assert (outcome.problem(), outcome.status) == (None, 1)


@pytest.mark.parametrize("stdout", ["full", "pipe", "closed"])
def test_the_interpreter_exits_without_a_complaint(stdout):
    """In a new interpreter: nothing left in stdout's buffer fails again at exit (status 120)."""
    outcome = guarded.spawn(["models", "--json"], stdout=stdout)
    assert outcome.problem() is None, outcome.problem()
    assert outcome.status == 1
    assert outcome.stderr in ("", "Error: cannot write to standard output: No space left on device\n",
                              "Error: cannot write to standard output: it was closed when the command started\n")


def test_a_build_whose_paths_cannot_be_printed_has_written_every_output(tmp_path):
    """The outputs are committed before the paths are printed: all new, and the line says so and that stdout
    failed; the command succeeded (#37), so it exits 0."""
    out = tmp_path / "out"
    outcome = guarded.run(["build", _preset(tmp_path, TINY), "--format", "json,html", "-o", out], stdout="full",
                          env={"SOURCE_DATE_EPOCH": "86400"})
    _one_line(outcome, "outputs written; could not print the summary: No space left on device", status=0)
    assert json.loads((out / "p.json").read_text())["generated_at"].startswith("1970-01-02")
    assert sorted(p.name for p in out.iterdir()) == ["p.html", "p.json"]


# ---------------------------------------------------------------------------------------------
# Encodings: what a stream cannot encode is written in ASCII

@pytest.mark.parametrize("encoding, dash, times", [("latin-1", "-", "×"), ("ascii", "-", "x"), ("cp1252", "—", "×")])
def test_messages_fall_back_to_ascii_where_the_encoding_lacks_a_character(tmp_path, encoding, dash, times):
    env = {"PYTHONIOENCODING": encoding}
    outcome = guarded.run(["check", "default"], env=env)  # guarded checks that both streams decode as `encoding`
    assert (outcome.problem(), outcome.status) == (None, 0)
    assert outcome.stdout.startswith(f"{REPO / 'presets/default.yaml'}: OK {dash} 310 scenarios, 84 skipped\n")
    assert f"  skipped   33 {times} tp_size 2 does not divide num_gpus 1\n" in outcome.stdout
    preset = _preset(tmp_path, "title: t\nscenarios: [{model: Модель-7B}]\n")
    outcome = guarded.run(["check", preset], env=env)
    assert (outcome.problem(), outcome.status) == (None, 1)
    assert outcome.stderr.startswith(f"Error: {preset}: scenarios[0].model: unknown model "
                                     "'\\u041c\\u043e\\u0434\\u0435\\u043b\\u044c-7B' (known: ")


@pytest.mark.parametrize("env", [{"LC_ALL": "C"}, {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
                                 {"PYTHONIOENCODING": "latin-1"}, {"PYTHONIOENCODING": "ascii"}],
                         ids=["C", "C, no coercion", "latin-1", "ascii"])
def test_a_new_interpreter_under_another_locale_writes_what_it_can(env):
    outcome = guarded.spawn(["check", "default"], env=env)
    assert (outcome.problem(), outcome.status) == (None, 0)
    assert outcome.stdout.count("\n") > 3


# ---------------------------------------------------------------------------------------------
# Names: temporaries never pass NAME_MAX where the target's name fits

@pytest.mark.parametrize("stem", ["p" * 250, "é" * 125, "p" * 240 + "é" * 5], ids=["250 ascii", "125 é", "mixed"])
def test_a_target_whose_name_fits_is_written_whatever_its_length(tmp_path, stem):
    assert len(os.fsencode(stem + ".json")) == 255
    preset = _preset(tmp_path, TINY, name=stem)
    out = tmp_path / "out"
    for epoch in ("86400", "172800"):  # the second replaces: its kept copies have such names too
        outcome = guarded.run(["build", preset, "--format", "json,html,xlsx", "-o", out, "-q"],
                              env={"SOURCE_DATE_EPOCH": epoch})
        assert (outcome.problem(), outcome.status) == (None, 0)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{stem}.{f}" for f in ("html", "json", "xlsx"))
    assert json.loads((out / f"{stem}.json").read_text())["generated_at"].startswith("1970-01-03")


def test_a_target_path_past_path_max_is_one_line(tmp_path):
    out = tmp_path.joinpath(*["d" * 200] * 21)
    outcome = guarded.run(["build", _preset(tmp_path, TINY), "--format", "json", "-o", out, "-q"])
    assert outcome.problem() is None and outcome.status == 1
    assert "File name too long" in outcome.stderr


def test_an_import_target_whose_name_is_too_long_is_one_line(tmp_path):
    target = tmp_path / ("m" * 251 + ".json")
    _one_line(guarded.run(["import-config", REPO / "presets/models/gpt-2.json", "--name", "Long-1", "-o", target]),
              f"Error: {target}: cannot check the file: File name too long")


# ---------------------------------------------------------------------------------------------
# Read-only and immutable output folders

def _chattr(flag: str, path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(["chattr", flag, str(path)],
                                                                 capture_output=True).returncode == 0


@pytest.fixture
def immutable(tmp_path):
    """Sets the immutable attribute (chattr +i) and clears it after the test; skips where not allowed."""
    marked = []

    def mark(path: Path) -> Path:
        if not _chattr("+i", path):
            pytest.skip("chattr +i is not allowed here (it needs CAP_LINUX_IMMUTABLE and ext4, xfs or btrfs)")
        marked.append(path)
        return path
    yield mark
    for path in reversed(marked):
        _chattr("-i", path)


def _built(tmp_path, out: Path) -> tuple[Path, dict[str, bytes]]:
    preset = _preset(tmp_path, TINY)
    assert guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"]).status == 0
    return preset, {p.name: p.read_bytes() for p in out.iterdir()}


def test_an_immutable_output_folder_is_one_line(tmp_path, immutable):
    out = tmp_path / "out"
    preset, before = _built(tmp_path, out)
    immutable(out)
    _one_line(guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"], env={"SOURCE_DATE_EPOCH": "9"}),
              f"Error: {out}: cannot write to the output folder: Operation not permitted")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_what_a_dead_build_left_in_a_folder_made_immutable_is_one_line(tmp_path, immutable):
    out = tmp_path / "out"
    preset, before = _built(tmp_path, out)
    dead = f"{1:016x}-12345"
    (out / f".reportgen.{dead}.commit").write_text(json.dumps({"renames": []}))
    immutable(out)
    _one_line(guarded.run(["build", preset, "--format", "json", "-o", out, "-q"]),
              f"Error: {out}: cannot finish or clean up after an earlier build that died "
              f"(.reportgen.{dead}.commit): Operation not permitted")


def test_an_immutable_output_is_one_line_and_nothing_changes(tmp_path, immutable):
    out = tmp_path / "out"
    preset, before = _built(tmp_path, out)
    immutable(out / "p.html")
    _one_line(guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"], env={"SOURCE_DATE_EPOCH": "9"}),
              f"Error: {out / 'p.html'}: cannot keep a copy before replacing it: Operation not permitted")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_commit_rolled_back_in_an_append_only_folder_is_not_finished_by_the_next_build(tmp_path, immutable):
    """chattr +a: files can be made but not renamed or removed. The renames fail and are rolled back;
    the journal left behind is empty, so the next build removes what is left and installs nothing."""
    out = tmp_path / "out"
    preset, before = _built(tmp_path, out)
    if not _chattr("+a", out):
        pytest.skip("chattr +a is not allowed here")
    try:
        outcome = guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"], env={"SOURCE_DATE_EPOCH": "9"})
    finally:
        _chattr("-a", out)
    _one_line(outcome, f"Error: {out / 'p.json'}: cannot replace the file: Operation not permitted; "
                       "every output is as before")
    assert {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")} == before
    assert any(p.name.startswith(".reportgen.") for p in out.iterdir())  # could not be removed
    other = _preset(tmp_path, TINY, name="other")
    assert guarded.run(["build", other, "--format", "json", "-o", out, "-q"]).status == 0
    assert sorted(p.name for p in out.iterdir()) == ["other.json", "p.html", "p.json"]
    assert {n: (out / n).read_bytes() for n in before} == before


def test_a_read_only_output_folder_is_one_line(tmp_path):
    """As a user without write permission (root writes anyway): the folder and the files stay as they were."""
    if os.geteuid() != 0:
        pytest.skip("needs root to run the command as another user")
    if not guarded.others_can_read_the_package():
        pytest.skip(f"another user cannot reach {REPO}: a folder above it is closed to others")
    base = Path(os.environ.get("TMPDIR", "/tmp")) / f"reportgen-ro-{os.getpid()}"
    base.mkdir(mode=0o755)
    try:
        out = base / "out"
        preset = _preset(base, TINY)
        # in this process: the child, another user, cannot read the site-packages to import the writers
        assert CliRunner().invoke(main, ["build", str(preset), "--format", "json,html", "-o", str(out), "-q"]).exit_code == 0
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        os.chmod(preset, 0o644)
        os.chmod(out, 0o555)
        _one_line(guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"], user=65534,
                              env={"SOURCE_DATE_EPOCH": "9", "HOME": str(base)}),
                  f"Error: {out}: cannot write to the output folder: Permission denied")
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    finally:
        os.chmod(base / "out", 0o755)
        shutil.rmtree(base)


# ---------------------------------------------------------------------------------------------
# No setting in the environment can make a build mix its outputs

@pytest.mark.parametrize("value", ["abc", "nan", "-1", "inf", "1e308", "0.5"])
def test_the_old_test_only_delay_variable_changes_nothing(tmp_path, value):
    out = tmp_path / "out"
    preset, before = _built(tmp_path, out)
    outcome = guarded.run(["build", preset, "--format", "json,html", "-o", out, "-q"],
                          env={"REPORTGEN_TEST_COMMIT_DELAY": value, "SOURCE_DATE_EPOCH": "86400"}, timeout=30)
    assert (outcome.problem(), outcome.status) == (None, 0)
    assert outcome.seconds < 20  # no sleep either
    after = {p.name: p.read_bytes() for p in out.iterdir()}
    assert sorted(after) == ["p.html", "p.json"] and all(after[n] != before[n] for n in after)


def test_nothing_in_the_package_reads_a_test_setting():
    package = REPO / "reportgen"
    assert not [p for p in package.rglob("*.py") if "REPORTGEN_TEST" in p.read_text(encoding="utf-8")]


# ---------------------------------------------------------------------------------------------
# Memory: `ulimit -v` as low as 150 MB

@pytest.mark.parametrize("megabytes", [150, 170, 200])
@pytest.mark.parametrize("preset", [TINY, TINY.replace("scenarios: [{", "matrices: [{name: m, ")])
def test_too_little_memory_is_one_line(tmp_path, megabytes, preset):
    """(At 150 MB OpenBLAS could not start its worker thread and raised SIGINT: 'Interrupted', status 130.)"""
    outcome = guarded.spawn(["check", _preset(tmp_path, preset)], address_space=megabytes * 2**20)
    assert outcome.problem() is None, outcome.problem()
    assert outcome.status == 0 or outcome.stderr == "Error: out of memory\n", outcome.stderr


def test_a_writer_out_of_memory_in_the_background_is_the_same_line(tmp_path, monkeypatch):
    """The PDF is rendered in a forked child: its MemoryError reaches the parent as one."""
    from reportgen.writers import atomic
    staging = atomic.Staging()

    def produce(path):
        raise MemoryError

    target = tmp_path / "x.pdf"
    with staging, pytest.raises(MemoryError):
        staging.stage([(target, produce)], background=[target])
    assert list(tmp_path.iterdir()) == []
