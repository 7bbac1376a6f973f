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
