"""Issue #37: a value is read as written or refused, and a refusal names the value as the user gave it."""
import pytest
from click.testing import CliRunner

from reportgen.cli import main


def run(*args):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("args,message", [
    (["plan", "--model", "Llama-2-7B", "--workload", "full", "--within", "7"],
     "Error: Invalid value for '--within': a duration needs a unit (w, d, h, m, s or ms, as in 7d or 36h), got '7'\n"),
    (["plan", "--model", "Llama-2-7B", "--workload", "full", "--within", "7x"],
     "Error: Invalid value for '--within': expected a duration such as 7d, 36h or 90m, got '7x'\n"),
    (["plan", "--model", "Llama-2-7B", "--workload", "full", "--within", "0d"],
     "Error: Invalid value for '--within': expected a positive duration, got '0d'\n"),
    (["estimate", "--model", "Llama-2-7B", "--batch", "99999999999999999999999"],
     "Error: Invalid value for '--batch': 99999999999999999999999 is not in the range 1<=x<=1000000.\n"),
    (["estimate", "--model", "Llama-2-7B", "--batch", "1e30"],
     "Error: Invalid value for '--batch': 1e30 is not in the range 1<=x<=1000000.\n"),
    (["estimate", "--model", "Llama-2-7B", "--engine", "vllm", "--gpu-memory-utilization", "1e999"],
     "Error: Invalid value for '--gpu-memory-utilization': 1e999 is not in the range 0.05<=x<=1.0.\n"),
    (["estimate", "--model", "Llama-2-7B", "--safety-factor", "1e999"],
     "Error: Invalid value for '--safety-factor': must be between 1 and 10, got 1e999\n"),
    (["plan", "--model", "Llama-2-7B", "--users", "2", "--min-tokens-per-s", "1e999"],
     "Error: Invalid value for '--min-tokens-per-s': 1e999 is not in the range 0<x<=1000000.0.\n"),
], ids=["within without unit", "within unknown unit", "within zero", "batch of 23 digits", "batch 1e30",
        "utilization 1e999", "safety factor 1e999", "speed 1e999"])
def test_command_line_values_are_refused_as_typed(args, message):
    result = run(*args)
    assert result.exit_code == 2 and result.output.endswith(message), result.output


def test_a_whole_number_of_many_digits_is_read_exactly():
    from reportgen.model.units import parse_count
    assert parse_count("99999999999999999999999") == 99999999999999999999999
    assert parse_count("32k") == 32768 and parse_count("1e9") == 10**9


@pytest.mark.parametrize("within,message", [
    ("0.5", "a duration needs a unit (w, d, h, m, s or ms, as in 7d or 36h), got 0.5"),
    ("7", "a duration needs a unit (w, d, h, m, s or ms, as in 7d or 36h), got 7"),
    ("'7'", "a duration needs a unit (w, d, h, m, s or ms, as in 7d or 36h), got '7'"),
])
def test_a_goal_deadline_needs_a_unit(tmp_path, within, message):
    path = tmp_path / "p.yaml"
    path.write_text(f"title: t\nmatrices:\n  - {{name: m, model: Llama-2-7B, workload: full, goal: {{within: {within}}}}}\n")
    result = run("check", str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: matrices[0].goal.within: {message}\n")


def test_a_deadline_with_its_unit_is_read_in_that_unit():
    from reportgen.model.units import parse_duration
    assert [parse_duration(t) for t in ("7d", "36h", "90m", "600s", "2w", "1.5D")] == [
        7 * 86400, 36 * 3600, 90 * 60, 600, 14 * 86400, 1.5 * 86400]
