"""Issue #37: every documented limit is reachable. A preset whose build would need more than the stated
memory (estimated from its plan's requirement × GPU type pairs and its scenarios, by costs that
benchmarks/limits.py measured) is refused by `check` and by `build` before anything is estimated, the
bound named."""
import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.model.estimate import RlhfScenario
from reportgen.pipeline import load, make_report, plan_entries


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def sweep(tmp_path, batch_sizes: int, prompt_lens: int, gpus=("L4",), name="sweep.yaml"):
    path = tmp_path / name
    path.write_text("title: sweep\nmatrices:\n  - name: m\n    model: Llama-3.2-1B\n    workload: inference\n"
                    f"    gpu: [{', '.join(gpus)}]\n    batch_size: {list(range(1, batch_sizes + 1))}\n"
                    f"    prompt_len: {list(range(1, prompt_lens + 1))}\n")
    return path


def test_the_issues_200000_requirements_are_refused_by_check_with_the_bound_named(tmp_path):
    path = sweep(tmp_path, 2000, 100)
    result = run("check", path)
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: matrices: the PDF of 200,000 requirement × GPU type pairs and 200,000 scenarios would "
           "take about 78.7 GiB to build: the limit is 2,048 MiB of memory per format (raise it with "
           "REPORTGEN_MAX_BUILD_MIB=N)\n")
    result = run("build", path, "--format", "json", "-o", tmp_path / "out")  # JSON alone: 6.8 GiB when measured before #31
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: matrices: the JSON of 200,000 requirement × GPU type pairs and 200,000 scenarios would "
           "take about 3.9 GiB to build: the limit is 2,048 MiB of memory per format (raise it with "
           "REPORTGEN_MAX_BUILD_MIB=N)\n")
    assert not (tmp_path / "out").exists()


def test_a_plan_too_large_for_the_pdf_is_refused_by_check_and_a_pdf_build_not_by_other_builds(tmp_path):
    path = sweep(tmp_path, 31, 100, gpus=("L4", "A10"))  # 3,100 requirements × 2 GPU types
    message = (f"Error: {path}: matrices: the PDF of 6,200 requirement × GPU type pairs and 6,200 scenarios would "
               "take about 2.6 GiB to build (--format {fit} would fit): the limit is 2,048 MiB of memory per format "
               "(raise it with REPORTGEN_MAX_BUILD_MIB=N)\n")
    result = run("check", path)
    assert (result.exit_code, result.output) == (1, message.format(fit="json,xlsx,html"))
    out = tmp_path / "out"
    result = run("build", path, "--format", "json,pdf", "-o", out, "-q")
    assert (result.exit_code, result.output, out.exists()) == (1, message.format(fit="json"), False)
    result = run("build", path, "--format", "json", "-o", out, "-q", env={"SOURCE_DATE_EPOCH": "0"})
    assert result.exit_code == 0 and [p.name for p in out.iterdir()] == ["sweep.json"]


def test_the_limit_can_be_raised(tmp_path):
    path = sweep(tmp_path, 50, 100)
    assert run("check", path).exit_code == 1
    result = run("check", path, env={"REPORTGEN_MAX_BUILD_MIB": "3000"})
    assert (result.exit_code, result.output) == (0, f"{path}: OK — 5000 scenarios, 0 skipped\n")


@pytest.mark.parametrize("preset", ["default", "ppo-rlhf", "inference-serving", "finetune", "moe"])
@pytest.mark.parametrize("exact", [False, True], ids=["summed", "told apart"])
def test_the_count_is_the_plans(preset, exact):
    """Counted on the expansion, the pairs are the plan's entries (an RLHF group counts as a requirement
    of its own, so with groups it may count more), summed over the parts or told apart across them."""
    loaded = load(preset)
    entries = sum(len(r.entries) for r in make_report(loaded, "2026-01-01T00:00:00+00:00").recommendations)
    groups = any(isinstance(s, RlhfScenario) for _, s in loaded.expansion.scenarios)
    counted = plan_entries(loaded.expansion, exact)
    assert counted >= entries if groups else counted == entries, (counted, entries)


def test_pairs_that_matrices_share_are_told_apart(tmp_path):
    """Two matrices asking the same jobs on one GPU type (in other layouts) plan them once: the sum counts
    them twice, which check_build_memory corrects when the sum would refuse the preset."""
    path = tmp_path / "shared.yaml"
    path.write_text("title: shared\nmatrices:\n"
                    "  - {name: a, model: Llama-3.2-1B, gpu: L4, num_gpus: 1, batch_size: [1, 2, 3]}\n"
                    "  - {name: b, model: Llama-3.2-1B, gpu: L4, num_gpus: 2, batch_size: [1, 2, 3]}\n")
    loaded = load(str(path))
    entries = sum(len(r.entries) for r in make_report(loaded, "2026-01-01T00:00:00+00:00").recommendations)
    assert (entries, plan_entries(loaded.expansion), plan_entries(loaded.expansion, exact=True)) == (3, 6, 3)
