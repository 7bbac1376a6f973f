"""Bad input never gives a traceback; a failed build never damages earlier outputs."""
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from reportgen import pipeline
from reportgen.cli import main
from reportgen.writers import json_writer

EPOCH = {"SOURCE_DATE_EPOCH": "1767225600"}
BASE = {
    "title": "robustness",
    "assumptions": {"safety_factor": 1.2},
    "matrices": [{"name": "m", "model": ["Llama-3.2-1B", "Llama-3-8B"],
                  "workload": [{"type": "full", "seq_len": 512}, {"type": "inference", "prompt_len": 128}],
                  "zero_stage": [0, 2], "num_gpus": [1, 2], "gpu": ["A100-80GB", "L4"]}],
    "scenarios": [{"name": "extra", "model": "Qwen2.5-0.5B", "workload": "lora", "gpu": "RTX-4090"}],
}
JUNK = st.one_of(st.none(), st.booleans(), st.integers(-10**18, 10**18), st.floats(allow_nan=True),
                 st.text(max_size=12), st.lists(st.integers(-3, 5), max_size=3),
                 st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _mutate(data, path, value):
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        if isinstance(node, dict):
            node.pop(path[-1], None)
    else:
        node[path[-1]] = value
    return data


_DELETE = object()


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


PATHS = [p for p in _paths(BASE) if p]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PATHS), st.one_of(JUNK, st.just(_DELETE)))
def test_mutated_presets_never_give_a_traceback(tmp_path, path, value):
    data = _mutate(json.loads(json.dumps(BASE)), path, value)
    preset = tmp_path / "mutated.yaml"
    preset.write_text(yaml.safe_dump(data, allow_unicode=True))
    result = CliRunner().invoke(main, ["check", str(preset)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 1), result.output
    if result.exit_code == 1:
        assert result.output.startswith(f"Error: {preset}") and result.output.count("\n") == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_random_bytes_never_give_a_traceback(tmp_path, blob):
    preset = tmp_path / "noise.yaml"
    preset.write_bytes(blob)
    result = CliRunner().invoke(main, ["check", str(preset)])
    assert result.exit_code in (0, 1) and (result.exception is None or isinstance(result.exception, SystemExit))


def test_absurd_sizes_are_rejected_or_computed(tmp_path):
    config = {"num_params": 10**15, "vocab_size": 32000, "hidden_size": 4096, "num_hidden_layers": 32,
              "num_attention_heads": 32, "intermediate_size": 11008}
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(config))
    result = CliRunner().invoke(main, ["estimate", "--config", str(path), "--workload", "full", "--json"])
    assert result.exit_code == 0, result.output
    weights = json.loads(result.output)["per_gpu_bytes"]["weights"]
    assert weights == 2 * 10**15  # bf16 working weights: exact, no overflow
    result = CliRunner().invoke(main, ["estimate", "--model", "Llama-2-7B", "--prompt-len", str(10**9)])
    assert result.exit_code == 2 and "Invalid value for '--prompt-len'" in result.output


def _build(out, *extra, env=EPOCH):
    return CliRunner().invoke(main, ["build", "ppo-rlhf", "--format", "json", "-o", str(out), "-q", *extra], env=env)


def test_a_failing_writer_leaves_previous_outputs_intact(tmp_path, monkeypatch):
    assert _build(tmp_path).exit_code == 0
    before = (tmp_path / "ppo-rlhf.json").read_bytes()

    def broken(report, path, lang):
        Path(path).write_text("{ half written")
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(json_writer, "write", broken)
    with pytest.raises(RuntimeError):
        CliRunner().invoke(main, ["build", "ppo-rlhf", "--format", "json", "-o", str(tmp_path), "-q"],
                           env={"SOURCE_DATE_EPOCH": "99"}, catch_exceptions=False)
    assert (tmp_path / "ppo-rlhf.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppo-rlhf.json"]


def test_ctrl_c_mid_write_leaves_previous_outputs_intact(tmp_path, monkeypatch):
    assert _build(tmp_path).exit_code == 0
    before = (tmp_path / "ppo-rlhf.json").read_bytes()

    def interrupted(report, path, lang):
        Path(path).write_text("{ half")
        raise KeyboardInterrupt

    monkeypatch.setattr(json_writer, "write", interrupted)
    result = _build(tmp_path, env={"SOURCE_DATE_EPOCH": "99"})
    assert result.exit_code == 130 and "no output was changed" in result.output
    assert (tmp_path / "ppo-rlhf.json").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ppo-rlhf.json"]


def test_a_later_format_failing_keeps_every_earlier_file(tmp_path, monkeypatch):
    """All formats are renamed into place together: no mix of new JSON and old other files."""
    monkeypatch.setitem(pipeline.WRITERS, "txt", "reportgen.writers.json_writer")
    assert _build(tmp_path).exit_code == 0
    old = (tmp_path / "ppo-rlhf.json").read_bytes()
    calls = []

    def second_fails(report, path, lang):
        calls.append(path)
        if len(calls) == 2:
            raise OSError("no space left")
        Path(path).write_text("new")

    monkeypatch.setattr(json_writer, "write", second_fails)
    with pytest.raises(OSError):
        pipeline.write_outputs(pipeline.make_report(pipeline.load("ppo-rlhf"), "2026-01-01T00:00:00+00:00"),
                               tmp_path, ["json", "txt"], "en")
    assert (tmp_path / "ppo-rlhf.json").read_bytes() == old
    assert not (tmp_path / "ppo-rlhf.txt").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["ppo-rlhf.json"]


def test_unwritable_output_folder(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    result = _build(blocker / "out")
    assert result.exit_code == 1
    assert result.output == f"Error: {blocker / 'out'}: cannot write to the output folder: Not a directory\n"


def test_preset_names_cannot_escape_the_output_folder(tmp_path):
    sub = tmp_path / "presets"
    sub.mkdir()
    preset = sub / "..%2Fevil.yaml"
    preset.write_text(yaml.safe_dump(BASE))
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["build", str(preset), "--format", "json", "-o", str(out), "-q"]).exit_code == 0
    assert [p.name for p in out.iterdir()] == ["..%2Fevil.json"]


def test_a_failing_background_writer_leaves_previous_outputs_intact(tmp_path, monkeypatch):
    """The PDF renders in a forked child while the other formats are written here."""
    from reportgen.writers import pdf as pdf_writer
    assert _build(tmp_path).exit_code == 0
    before = (tmp_path / "ppo-rlhf.json").read_bytes()

    def broken(report, path, lang):
        Path(path).write_bytes(b"%PDF-half")
        raise ValueError("layout exploded")

    monkeypatch.setattr(pdf_writer, "write", broken)
    with pytest.raises(RuntimeError, match="writing ppo-rlhf.pdf failed: ValueError: layout exploded"):
        CliRunner().invoke(main, ["build", "ppo-rlhf", "--format", "json,pdf", "-o", str(tmp_path), "-q"],
                           env={"SOURCE_DATE_EPOCH": "99"}, catch_exceptions=False)
    assert (tmp_path / "ppo-rlhf.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ppo-rlhf.json"]


# ---------------------------------------------------------------------------------------------
# Reading: every file is bounded in size, nesting, aliases and numbers (issue #20, each case reproduced)

import os  # noqa: E402

import guarded  # noqa: E402

LLAMA = json.loads(Path("presets/models/llama-2-7b.json").read_text())["config"]
MIXTRAL = json.loads(Path("presets/models/mixtral-8x7b.json").read_text())["config"]


def _one_error(outcome, *fragments):
    assert outcome.problem() is None, outcome.problem()
    assert outcome.status == 1, (outcome.status, outcome.stderr)
    for fragment in fragments:
        assert fragment in outcome.stderr, outcome.stderr
    return outcome.stderr


def _config(tmp_path, **changes):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA, **changes}))
    return path


def test_a_yaml_alias_bomb_is_refused_quickly(tmp_path):
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"{b}: &{b} [{', '.join(['*' + a] * 9)}]" for a, b in zip("abcdefg", "bcdefgh")]
    preset = tmp_path / "bomb.yaml"
    preset.write_text("\n".join(lines) + "\ntitle: t\ndescription: *h\nscenarios: [{model: Llama-2-7B}]\n")
    assert len(preset.read_bytes()) < 700
    outcome = guarded.run(["check", preset], timeout=10)
    _one_error(outcome, "too many values", "REPORTGEN_MAX_YAML_VALUES")
    assert outcome.seconds < 5


def test_recursive_yaml_aliases_are_refused(tmp_path):
    preset = tmp_path / "loop.yaml"
    preset.write_text("title: &t [*t]\nscenarios: [{model: Llama-2-7B}]\n")
    _one_error(guarded.run(["check", preset]), "recursive alias")


@pytest.mark.parametrize("depth", [80, 500])
def test_deeply_nested_yaml_is_one_error(tmp_path, depth):
    preset = tmp_path / "deep.yaml"
    preset.write_text("title: " + "[" * depth + "]" * depth + "\n")
    _one_error(guarded.run(["check", preset]), "nested too deeply", "REPORTGEN_MAX_NESTING")


@pytest.mark.parametrize("depth", [80, 2000])
def test_deeply_nested_json_is_one_error(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"x": ' * depth + "1" + "}" * depth)
    _one_error(guarded.run(["params", "--config", path]), "nested too deeply")


@pytest.mark.parametrize("args", [["check", "/dev/zero"], ["params", "--config", "/dev/zero"],
                                  ["validate", "--measured", "/dev/zero"], ["estimate", "--config", "/dev/zero"]])
def test_devices_are_not_read(args):
    outcome = guarded.run(args, timeout=10)
    _one_error(outcome, "/dev/zero: is a device, FIFO or socket")


@pytest.mark.parametrize("command", [["check"], ["params", "--config"]])
def test_a_fifo_does_not_block(tmp_path, command):
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    _one_error(guarded.run([*command, fifo], timeout=10), "is a device, FIFO or socket")


def test_files_past_the_size_limit_are_refused_and_the_limit_can_be_raised(tmp_path):
    preset = tmp_path / "big.yaml"
    preset.write_text("title: t\nscenarios: [{model: Llama-2-7B}]\n" + "# padding\n" * 1000)
    env = {"REPORTGEN_MAX_FILE_BYTES": "5000"}
    assert guarded.run(["check", preset], env=env).stderr == (
        f"Error: {preset}: file too large: the limit is 5,000 bytes per input file "
        "(raise it with REPORTGEN_MAX_FILE_BYTES=N)\n")
    # above the bundled catalogs too (gpus.yaml is ~28 kB), which every command reads
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_FILE_BYTES": "100000"}).status == 0
    _one_error(guarded.run(["check", preset], env={"REPORTGEN_MAX_FILE_BYTES": "lots"}),
               "Error: REPORTGEN_MAX_FILE_BYTES: expected a whole number from 1 to 1,000,000,000,000,000,000, got 'lots'")


@pytest.mark.parametrize("command", [["params"], ["estimate", "--workload", "full"], ["plan", "--workload", "full"]])
def test_absurd_config_numbers_are_refused_not_computed(tmp_path, command):
    path = _config(tmp_path, num_hidden_layers=1e30)
    _one_error(guarded.run([*command, "--config", path], timeout=15),
               "num_hidden_layers: must be at most 16,384, got 1000000000000000019884624838656")


@pytest.mark.parametrize("changes, fragment", [
    ({"model_type": ["llama"]}, "model_type: unknown model_type ['llama']"),
    ({"model_type": {"a": 1}}, "model_type: unknown model_type {'a': 1}"),
    ({"hidden_size": 1e308}, "hidden_size: must be at most 1,048,576"),
    ({"vocab_size": 10**30}, "vocab_size: must be at most 16,777,216, got 1000000000000000000000000000000"),
    ({"vocab_size": int("9" * 4300)}, "vocab_size: a number written with 4,300 characters is too large for any field"),
    ({"_name_or_path": "org/Llama\ud83d"}, "_name_or_path: text with an unpaired surrogate '\\ud83d'"),
], ids=["model_type list", "model_type dict", "1e308", "1e30", "4300 digits", "surrogate"])
def test_bad_config_values_are_one_error(tmp_path, changes, fragment):
    stderr = _one_error(guarded.run(["params", "--config", _config(tmp_path, **changes)]), fragment)
    assert len(stderr) < 600  # a 4,300-digit value is shortened


def test_more_experts_per_token_than_experts_is_refused(tmp_path):
    path = tmp_path / "moe.json"
    path.write_text(json.dumps({**MIXTRAL, "num_experts_per_tok": 20}))
    _one_error(guarded.run(["params", "--config", path]),
               "num_experts_per_tok: 20 experts per token, but the model has 8 experts")


@pytest.mark.parametrize("text, fragment", [
    ('title: "\\ud83d\\ude80"\nscenarios: [{model: Llama-2-7B}]\n', "title: text with an unpaired surrogate"),
    ('title: t\nscenarios: [{model: Llama-2-7B, name: "a\\udcff"}]\n', "scenarios[0].name: text with an unpaired"),
    ("title: 2025-02-30\n", "malformed YAML: day is out of range for month"),
    ("title: " + "9" * 4400 + "\n", "title: a number written with 4,400 characters is too large for any field"),
    ("title: t\ndescription: " + "x" * 40_000 + "\nscenarios: [{model: Llama-2-7B}]\n",
     "description: text of 40,000 characters: at most 32,000 fit a workbook cell (Excel's limit is 32,767)"),
], ids=["surrogate pair", "lone surrogate", "bad date", "4400 digits", "40k characters"])
def test_unwritable_text_is_refused_when_the_preset_is_read(tmp_path, text, fragment):
    preset = tmp_path / "text.yaml"
    preset.write_text(text)
    _one_error(guarded.run(["check", preset]), f"Error: {preset}: ", fragment)


def test_a_one_megabyte_bad_value_is_not_repeated_in_full(tmp_path):
    preset = tmp_path / "long.yaml"
    # A 1 MB value from a 31 KB file: 35 aliases of one 30,000-character string.
    preset.write_text("description: &x " + "y" * 30_000 + "\ntitle: [" + ", ".join(["*x"] * 35) + "]\n"
                      "scenarios: [{model: Llama-2-7B}]\n")
    stderr = _one_error(guarded.run(["check", preset]), "title: expected non-empty text, got ['yyy")
    assert len(stderr) < 800 and "characters]" in stderr
    preset.write_text(yaml.safe_dump({"title": "t", "scenarios": [{"model": "M" * 30_000}]}))
    stderr = _one_error(guarded.run(["check", preset]), "scenarios[0].model: unknown model 'MMM")
    assert len(stderr) < 800 and "(known: " in stderr


@pytest.mark.parametrize("name", [["Llama-2-7B"], "llama-2-7b"])
def test_a_bad_or_duplicate_catalog_name_is_one_error(tmp_path, name):
    from reportgen.model.catalog import load_models
    from reportgen.errors import InputError
    for stem, entry_name in (("a", "Llama-2-7B"), ("b", name)):
        (tmp_path / f"{stem}.json").write_text(json.dumps({"name": entry_name, "config": LLAMA}))
    with pytest.raises(InputError, match=r"b\.json: name: (expected a model name|duplicate model name)"):
        load_models(tmp_path)


# ---------------------------------------------------------------------------------------------
# Values: checked where they are read, by the input tables; nothing silently dropped (issue #20)

def _check(tmp_path, data):
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump(data, sort_keys=False))
    return preset, CliRunner().invoke(main, ["check", str(preset)])


def _matrix(**axes):
    return {"title": "t", "matrices": [{"name": "m", "model": "Llama-2-7B", **axes}]}


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-1", "10.5"])
def test_safety_factor_on_the_command_line_obeys_the_preset_limits(value):
    result = CliRunner().invoke(main, ["estimate", "--model", "Llama-2-7B", "--safety-factor", value])
    assert result.exit_code == 2 and "Invalid value for '--safety-factor': must be between 1 and 10" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_a_zero_kv_block_is_refused_when_read(tmp_path):
    preset, result = _check(tmp_path, {**_matrix(), "assumptions": {"kv_block_tokens": 0}})
    assert result.exit_code == 1
    assert result.output == f"Error: {preset}: assumptions.kv_block_tokens: must be between 1 and 1.04858e+06, got 0\n"


def test_a_hundred_million_combinations_are_refused_before_any_is_made(tmp_path):
    preset = tmp_path / "huge.yaml"
    preset.write_text(yaml.safe_dump(_matrix(batch_size=list(range(1, 1001)), seq_len=list(range(1, 1001)),
                                             gen_len=list(range(100)))))
    outcome = guarded.run(["check", preset], timeout=20)
    assert outcome.stderr == (f"Error: {preset}: matrices: 100,000,000 combinations: the limit is 200,000 "
                              "combinations per preset (raise it with REPORTGEN_MAX_SCENARIOS=N)\n")
    assert outcome.seconds < 5
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_SCENARIOS": "99999999"}, timeout=20).status == 1


def test_the_scenario_limit_counts_every_matrix_and_scenario(tmp_path):
    data = _matrix(batch_size=[1, 2, 3])
    data["scenarios"] = [{"model": "Llama-2-7B"}]
    preset = tmp_path / "p.yaml"
    preset.write_text(yaml.safe_dump(data))
    assert guarded.run(["check", preset], env={"REPORTGEN_MAX_SCENARIOS": "4"}).status == 0
    _one_error(guarded.run(["check", preset], env={"REPORTGEN_MAX_SCENARIOS": "3"}), "matrices: 4 combinations")


def test_an_empty_list_in_a_workload_is_an_error_not_a_dropped_workload(tmp_path):
    data = _matrix(workload=[{"type": "full"}, {"type": "lora", "lora_rank": []}])
    preset, result = _check(tmp_path, data)
    assert result.output == f"Error: {preset}: matrices[0].workload[1].lora_rank: empty list: give at least one value\n"


@pytest.mark.parametrize("rule, message", [
    ({"gpu": "A100-80G"}, "matrices[0].exclude[0].gpu: unknown GPU 'A100-80G' (did you mean 'A100-80GB'?)"),
    ({"zero_stage": True}, "matrices[0].exclude[0].zero_stage: expected a whole number, got True"),
    ({"gpu": "L4"}, "matrices[0].exclude[0]: matches no combination of this matrix"),
    ({"workload": "lora", "zero_stage": 3}, "matrices[0].exclude[0]: matches no combination of this matrix"),
])
def test_exclude_rules_are_checked_and_must_remove_something(tmp_path, rule, message):
    data = _matrix(workload=["full", "lora"], gpu=["A100-80GB", "H100-80GB-SXM"], zero_stage=[0, 1], num_gpus=2,
                   exclude=[rule])
    preset, result = _check(tmp_path, data)
    assert result.exit_code == 1 and result.output.startswith(f"Error: {preset}: {message}"), result.output


def test_exclude_still_removes_what_it_names(tmp_path):
    data = _matrix(workload=["full", "lora"], zero_stage=[0, 1], num_gpus=2, exclude=[{"workload": "lora", "zero_stage": 1}])
    assert "3 scenarios" in _check(tmp_path, data)[1].output


@pytest.mark.parametrize("data, message", [
    (_matrix(prompt_len=[512, 1024], workload={"type": "inference", "prompt_len": 2048}),
     "matrices[0].workload.prompt_len: also set at matrices[0].prompt_len: set it in one place"),
    (_matrix(batch_size=2, workload=[{"type": "full"}, {"type": "lora", "batch_size": 4}]),
     "matrices[0].workload[1].batch_size: also set at matrices[0].batch_size: set it in one place"),
    ({"title": "t", "scenarios": [{"model": "Llama-2-7B", "gen_len": 8, "workload": {"type": "inference", "gen_len": 9}}]},
     "scenarios[0].workload.gen_len: also set at scenarios[0].gen_len: set it in one place"),
    ({**_matrix(), "headline": {"anything": True}}, "headline: unknown key 'headline'"),
])
def test_settings_that_would_be_ignored_are_errors(tmp_path, data, message):
    preset, result = _check(tmp_path, data)
    assert result.exit_code == 1 and result.output.startswith(f"Error: {preset}: {message}"), result.output


def test_a_preset_path_that_is_not_utf8_is_one_error(tmp_path):
    preset = tmp_path / "caf\udce9.yaml"
    preset.write_text(yaml.safe_dump(_matrix()))
    _one_error(guarded.run(["check", os.fsencode(preset).decode("utf-8", "surrogateescape")]),
               "Error: PRESET: text with an unpaired surrogate")


@pytest.mark.parametrize("cases, message", [
    ([], ": expected an object with a non-empty 'cases' list"),
    ([{"id": "a"}], ": cases[0].config_name: missing required key"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "setting": {"mode": "train"}, "peak_bytes": 1}],
     ": cases[0].setting.precision: missing required key"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 1,
       "setting": {"mode": "infer", "precision": "bf16", "attn": "sdpa", "batch": "8", "seq": 4}}],
     ": cases[0].setting.batch: expected a whole number, got '8'"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 0, "setting": {}}],
     ": cases[0].peak_bytes: expected a positive whole number of bytes, got 0"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 1, "setting": {"precision": ["bf16"]}}],
     ": cases[0].setting.precision: unknown precision ['bf16']"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 1,
       "setting": {"mode": "train", "precision": "bf16", "attn": "sdpa", "batch": 1, "seq": 4, "grad_ckpt": "yes"}}],
     ": cases[0].setting.grad_ckpt: expected true, false or 'op', got 'yes'"),
    # found by the full fuzz run (#36): validate's summary asserted that every row had a known split
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 1, "setting": {}, "split": "test"}],
     ": cases[0].split: expected 'holdout' or 'fit' (or no split), got 'test'"),
    ([{"id": "a", "config_name": "x", "config": LLAMA, "peak_bytes": 1, "setting": {}, "split": ["fit"]}],
     ": cases[0].split: expected 'holdout' or 'fit' (or no split), got ['fit']"),
])
def test_a_bad_measured_file_is_one_error(tmp_path, cases, message):
    path = tmp_path / "measured.json"
    path.write_text(json.dumps({"cases": cases}))
    result = CliRunner().invoke(main, ["validate", "--measured", str(path)])
    assert result.exit_code == 1 and result.output.startswith(f"Error: {path}{message}"), result.output


# ---------------------------------------------------------------------------------------------
# Writing: only regular files, all of a build or nothing, one line when the machine refuses (issue #20)

import errno  # noqa: E402
import fcntl  # noqa: E402
import stat  # noqa: E402

from reportgen.model import catalog  # noqa: E402
from reportgen.writers import atomic  # noqa: E402


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _build_formats(out, formats, *presets, epoch="1767225600"):
    return CliRunner().invoke(main, ["build", *(presets or ("ppo-rlhf",)), "--format", formats, "-o", str(out), "-q"],
                              env={"SOURCE_DATE_EPOCH": epoch})


@pytest.fixture
def catalog_copy(tmp_path, monkeypatch):
    """A copy of the bundled data whose model catalog import-config may change."""
    import shutil
    presets = tmp_path / "data" / "presets"
    shutil.copytree(catalog.data_dir("presets"), presets)
    monkeypatch.setattr(catalog, "data_dir", lambda name: tmp_path / "data" / name)
    return presets / "models"


def _import(*args):
    return CliRunner().invoke(main, ["import-config", *map(str, args)])


def test_import_config_does_not_replace_a_bundled_entry_without_force(tmp_path, catalog_copy):
    config = _config(tmp_path, hidden_size=8192)
    before = _snapshot(catalog_copy)
    result = _import(config, "--name", "Llama 2 7B!")
    assert result.exit_code == 1
    assert result.output == f"Error: {catalog_copy / 'llama-2-7b.json'}: already exists: add --force to replace it\n"
    assert _snapshot(catalog_copy) == before
    assert CliRunner().invoke(main, ["build", "default", "--format", "json", "-o", str(tmp_path / "o"), "-q"]).exit_code == 0
    assert _import(config, "--name", "Llama-2-7B", "--force").exit_code == 0
    assert json.loads((catalog_copy / "llama-2-7b.json").read_text())["config"]["hidden_size"] == 8192


@pytest.mark.parametrize("name, message", [
    ("LLAMA-2-7b", "Error: --name: the catalog already has a model named 'Llama-2-7B' ("),
    ("!!!", "Error: --name: '!!!' has no letter or digit to name its file after"),
    ("..", "Error: --name: '..' has no letter or digit to name its file after"),
    ("x" * 300, "Error: --name: a model name of 300 characters: at most 200 are allowed"),
    ("caf\udce9", "Error: --name: text with an unpaired surrogate"),
], ids=["same name", "no letters", "dots", "too long", "surrogate"])
def test_import_config_names_are_checked(tmp_path, catalog_copy, name, message):
    before = _snapshot(catalog_copy)
    out = catalog_copy / "other.json"  # a different file, so only the name can clash
    result = _import(_config(tmp_path), "--name", name, "-o", out)
    assert result.exit_code == 1 and result.output.startswith(message), result.output
    assert _snapshot(catalog_copy) == before


def test_a_catalog_entry_with_a_list_for_a_name_is_refused_when_imported(tmp_path, catalog_copy):
    entry = tmp_path / "entry.json"
    entry.write_text(json.dumps({"name": ["Llama"], "config": LLAMA}))
    result = _import(entry)
    assert result.output.startswith(f"Error: {entry}: name: expected a model name (non-empty text), got ['Llama']")
    assert CliRunner().invoke(main, ["models"]).exit_code == 0


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    found = {"FIFO": fifo, "directory": folder, "symbolic link": link}
    try:
        os.mknod(tmp_path / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        found["device"] = tmp_path / "null"
    except PermissionError:
        pass  # not root: the FIFO stands for the other special files
    return found


def test_import_config_writes_only_regular_files(tmp_path):
    config = _config(tmp_path)
    kinds = {"FIFO": "a device, FIFO or socket", "device": "a device, FIFO or socket",
             "directory": "a directory", "symbolic link": "a symbolic link"}
    for kind, target in _special_files(tmp_path).items():
        mode = os.lstat(target).st_mode
        result = _import(config, "-o", target)
        assert result.output == f"Error: {target}: is {kinds[kind]}; reportgen replaces only regular files\n", kind
        assert os.lstat(target).st_mode == mode and not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_import_config_refuses_an_existing_file_without_force(tmp_path):
    target = tmp_path / "mine.json"
    target.write_text("keep me")
    assert _import(_config(tmp_path), "-o", target).output == f"Error: {target}: already exists: add --force to replace it\n"
    assert target.read_text() == "keep me"
    assert _import(_config(tmp_path), "-o", target, "--force").exit_code == 0
    assert json.loads(target.read_text())["name"] == "config"  # the file name: LLAMA has no _name_or_path


@pytest.mark.parametrize("what", ["directory", "FIFO", "symbolic link"])
def test_a_special_file_in_place_of_an_output_fails_before_anything_is_replaced(tmp_path, what):
    out = tmp_path / "out"
    assert _build_formats(out, "json,html,xlsx").exit_code == 0
    before = _snapshot(out)
    (out / "ppo-rlhf.html").unlink()
    del before["ppo-rlhf.html"]
    special = _special_files(tmp_path)[what]
    os.rename(special, out / "ppo-rlhf.html")
    result = _build_formats(out, "json,html,xlsx", epoch="99")
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.exc_info
    assert result.output.startswith(f"Error: {out / 'ppo-rlhf.html'}: is a ")
    assert _snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_multi_preset_build_commits_nothing_when_a_later_preset_fails(tmp_path):
    out = tmp_path / "out"
    assert _build_formats(out, "json").exit_code == 0
    before = _snapshot(out)
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: bad\nscenarios: [{model: Nope}]\n")
    result = _build_formats(out, "json", "ppo-rlhf", str(bad), epoch="99")
    assert result.exit_code == 1 and result.output.startswith(f"Error: {bad}: scenarios[0].model: unknown model")
    assert _snapshot(out) == before


def test_two_presets_with_one_file_name_are_refused(tmp_path):
    for sub in ("a", "b"):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "p.yaml").write_text(yaml.safe_dump(BASE))
    result = _build_formats(tmp_path / "out", "json", str(tmp_path / "a/p.yaml"), str(tmp_path / "b/p.yaml"))
    assert result.output == f"Error: {tmp_path / 'out/p.json'}: written twice by this build (two presets with one file name?)\n"
    assert not (tmp_path / "out" / "p.json").exists()


@pytest.mark.parametrize("formats, failing", [("json,html,xlsx", "tiny.json"), ("json,pdf", "tiny.pdf")])
def test_a_full_disk_is_one_error_and_changes_nothing(tmp_path, formats, failing):
    """RLIMIT_FSIZE makes every write past a size fail with EFBIG, as a full disk fails with ENOSPC: here
    the JSON (400 KB: the validation appendix's figures and reasons) in the builder, then the PDF with its full
    appendices (a little larger; the management PDF is smaller than the JSON) in the forked child. The size
    is a quarter of the JSON, or halfway between the JSON and the PDF, as they are built now."""
    preset = tmp_path / "tiny.yaml"
    preset.write_text("title: tiny\nscenarios: [{model: Llama-3.2-1B, gpu: L4}]\n")
    sizes = tmp_path / "sizes"
    assert guarded.run(["build", preset, "--format", "json,pdf", "-o", sizes, "-q", "--pdf-appendix"],
                       timeout=60).status == 0
    json_bytes, pdf_bytes = ((sizes / f"tiny.{fmt}").stat().st_size for fmt in ("json", "pdf"))
    assert json_bytes < pdf_bytes  # else the PDF case would fail on the JSON first
    size = json_bytes // 4 if failing == "tiny.json" else (json_bytes + pdf_bytes) // 2
    out = tmp_path / "out"
    out.mkdir()
    for fmt in formats.split(","):
        (out / f"tiny.{fmt}").write_text(f"previous {fmt}")
    before = _snapshot(out)
    outcome = guarded.run(["build", preset, "--format", formats, "-o", out, "-q", "--pdf-appendix"], file_size=size,
                          timeout=60)
    _one_error(outcome, f"Error: {out / failing}: cannot write: File too large")
    assert _snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("writer", ["json_writer", "xlsx"])
def test_a_wrapped_no_space_error_is_one_line(tmp_path, monkeypatch, writer):
    import importlib
    module = importlib.import_module(f"reportgen.writers.{writer}")

    def full(report, path, lang, **options):  # a writer takes its options (the CLI passes xlsx its live rows)
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as exc:
            raise RuntimeError("library wrapper") from exc

    monkeypatch.setattr(module, "write", full)
    result = _build_formats(tmp_path, "json,xlsx")
    assert result.output.startswith(f"Error: {tmp_path / 'ppo-rlhf'}.")
    assert result.output.endswith(": cannot write: No space left on device\n")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_rename_puts_back_what_was_replaced(tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert _build_formats(out, "json,html,xlsx").exit_code == 0
    before = _snapshot(out)
    real_replace, calls = os.replace, []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(src, dst)

    monkeypatch.setattr(atomic.os, "replace", second_fails)
    result = _build_formats(out, "json,html,xlsx", epoch="99")
    monkeypatch.undo()
    assert result.output == (f"Error: {calls[1]}: cannot replace the file: Input/output error; "
                             "every output is as before\n")
    assert _snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_later_build_removes_what_dead_builds_left_and_finishes_their_renames(tmp_path):
    out = tmp_path / "out"
    assert _build_formats(out, "json").exit_code == 0
    old = f"{1:016x}-12345"  # a build that started long ago and died
    (out / f".ppo-rlhf.xlsx.{old}.tmp").write_text("half a workbook")
    (out / f".ppo-rlhf.json.{old}.old").write_text("kept copy")
    (out / f".notes.html.{old}.tmp").write_text("finished")
    (out / f".reportgen.{old}.commit").write_text(json.dumps({"renames": [[f".notes.html.{old}.tmp", "notes.html"]]}))
    alive = f"{2:016x}-12346"  # older too, but still running: its file is locked
    (out / f".ppo-rlhf.pdf.{alive}.tmp").write_text("rendering")
    unrelated = out / ".ppo-rlhf.json.tmp"  # not a name reportgen makes
    unrelated.write_text("someone else's")
    with open(out / f".ppo-rlhf.pdf.{alive}.tmp") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert _build_formats(out, "json", epoch="99").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([
        f".ppo-rlhf.pdf.{alive}.tmp", ".ppo-rlhf.json.tmp", "notes.html", "ppo-rlhf.json"])
    assert (out / "notes.html").read_text() == "finished"


def test_the_longest_text_a_preset_may_hold_fits_every_workbook_cell(tmp_path):
    """Text is refused past 32,000 characters; the longest reaches the workbook whole, and no cell that
    adds words to it passes Excel's 32,767."""
    import openpyxl
    longest = "é" * 32_000
    data = {"title": longest, "description": longest,
            "matrices": [{"name": "M" * 32_000, "model": "Llama-3.2-1B", "workload": ["inference", "ppo"],
                          "gpu": "L4", "num_gpus": 2}],
            "scenarios": [{"name": "S" * 32_000, "model": "Qwen2.5-0.5B", "workload": "dpo", "gpu": "L4"}]}
    preset = tmp_path / "long.yaml"
    preset.write_text(yaml.safe_dump(data, allow_unicode=True))
    result = CliRunner().invoke(main, ["build", str(preset), "--format", "xlsx", "-o", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    book = openpyxl.load_workbook(tmp_path / "long.xlsx")
    lengths = [len(c.value) for ws in book.worksheets for row in ws.iter_rows() for c in row if isinstance(c.value, str)]
    assert 32_000 <= max(lengths) <= 32_767


@pytest.mark.parametrize("text", ["title: t\nmatrices:\n  - {name: m, model: Llama-3.2-1B, gpu: L4}\n",
                                  "title: t\nmatrices:\n  - {name: m, model: no-such-model, gpu: L4}\n"])
def test_loading_a_preset_leaves_the_cycle_collector_as_it_found_it(tmp_path, text):
    """load pauses the cycle collector while it parses and expands (#37: 40 % of check's time for 30,000
    matrices); after it, good preset or bad, the collector runs again, and stays off if it was off."""
    import gc
    path = tmp_path / "p.yaml"
    path.write_text(text)
    for was_enabled in (True, False):
        (gc.enable if was_enabled else gc.disable)()
        try:
            pipeline.load(str(path), ("json",))
        except pipeline.InputError:
            pass
        finally:
            now = gc.isenabled()
            gc.enable()
        assert now is was_enabled
