"""Preset files: expansion, skipped combinations, validation errors, and the build pipeline (JSON)."""
import json
import random

import pytest

from reportgen.model.inputs import INPUT_BY_NAME, applies
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.scenarios.presets import bundled_presets

EPOCH = {"SOURCE_DATE_EPOCH": "1767225600"}


def run(*args, env=None):
    return CliRunner().invoke(main, list(args), env=env)


def write(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


MINIMAL = """
title: t
matrices:
  - name: m
    model: Llama-2-7B
    workload: {type: full, seq_len: 1024}
    zero_stage: [0, 3]
    num_gpus: [1, 4]
    gpu: [A100-80GB]
"""


def test_bundled_presets_are_listed():
    assert {"default", "ppo-rlhf", "inference-serving", "finetune", "moe"} <= set(bundled_presets())
    out = run("presets").output
    assert "default" in out and "inference-serving" in out


@pytest.mark.parametrize("name", ["default", "ppo-rlhf", "inference-serving", "finetune", "moe"])
def test_each_bundled_preset_builds_json(tmp_path, name):
    result = run("build", name, "--format", "json", "-o", str(tmp_path), "-q", env=EPOCH)
    assert result.exit_code == 0, result.output
    data = json.loads((tmp_path / f"{name}.json").read_text())
    assert data["scenarios"] and data["plan"]
    for s in data["scenarios"]:
        pg = s["per_gpu_bytes"]
        assert pg["allocated_peak"] <= pg["reserved_peak"] <= pg["device_total"] <= pg["recommended"]


def test_check_counts_scenarios_and_skips(tmp_path):
    result = run("check", str(write(tmp_path, MINIMAL)))
    assert result.exit_code == 0
    # 2 stages × 2 counts = 4; ZeRO-3 on one GPU is skipped
    assert "OK — 3 scenarios, 1 skipped" in result.output
    assert "ZeRO-3 on one data-parallel rank shards nothing" in result.output


def test_exclude_rules_and_explicit_scenarios(tmp_path):
    text = MINIMAL + """    exclude:
      - {num_gpus: 4, zero_stage: 0}
scenarios:
  - {name: extra, model: Llama-3-8B, workload: inference, gpu: L4}
"""
    result = run("check", str(write(tmp_path, text)))
    assert "OK — 3 scenarios, 1 skipped" in result.output


@pytest.mark.parametrize("text,message", [
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    precison: bf16\n",
     "matrices[0].precison: unknown key 'precison' (did you mean 'precision'?)"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    precision: fp6\n",
     "matrices[0].precision: unknown precision 'fp6'"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7b-chat\n",
     "matrices[0].model: unknown model 'Llama-2-7b-chat' (did you mean"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    gpu: H100\n",
     "matrices[0].gpu: unknown GPU 'H100' (did you mean"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    batch_size: 0\n",
     "matrices[0].batch_size: must be between 1 and 1,000,000, got 0"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    seq_len: 1000000000\n",
     "matrices[0].seq_len: must be between 1 and 10,000,000, got 1000000000"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    num_gpus: two\n",
     "matrices[0].num_gpus: expected a whole number, got 'two'"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    zero_stage: 4\n",
     "matrices[0].zero_stage: must be between 0 and 3, got 4"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    num_gpus: []\n",
     "matrices[0].num_gpus: empty list: give at least one value"),
    ("title: t\nmatrices:\n  - name: m\n    workload: full\n", "matrices[0].model: missing required key"),
    ("title: t\nmatrices: []\n", "matrices: a preset needs at least one matrix, scenario or purchase"),
    ("title: t\nmatrices:\n  - {name: a, model: Llama-2-7B}\n  - {name: a, model: Llama-2-7B}\n",
     "matrices[1].name: duplicate matrix name 'a'"),
    ("title: t\ncolour: blue\nmatrices:\n  - {name: a, model: Llama-2-7B}\n", "colour: unknown key 'colour'"),
    ("title: t\nassumptions: {safety_factor: 0.5}\nmatrices:\n  - {name: a, model: Llama-2-7B}\n",
     "assumptions.safety_factor: must be between 1 and 10, got 0.5"),
    ("title: t\nmatrices:\n  - {name: a, model: Llama-2-7B, workload: {type: rlhf}}\n",
     "matrices[0].workload.type: unknown workload 'rlhf'"),
    ("title: [unclosed\n", "malformed YAML at line 2"),
    ("- just\n- a list\n", "expected a mapping at the top level, got list"),
    ("title: t\nmatrices:\n  - {name: a, model: Llama-2-7B, workload: full, num_gpus: 1, tp_size: 2}\n",
     "matrices: every combination was skipped: nothing to estimate (first reason: tp_size 2 does not divide"),
])
def test_validation_errors_name_file_key_and_value(tmp_path, text, message):
    path = write(tmp_path, text)
    result = run("check", str(path))
    assert result.exit_code == 1, result.output
    assert result.output == f"Error: {path}: {message}" + result.output.split(message, 1)[1]
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


def test_unknown_preset_name_and_bad_files(tmp_path):
    result = run("check", "defualt")
    assert result.exit_code == 1 and "unknown preset 'defualt' (did you mean 'default'?)" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"title: caf\xe9\n")
    assert "not UTF-8" in run("check", str(bad)).output
    assert "is a directory, expected a YAML file" in run("check", str(tmp_path)).output


def test_json_scenario_equals_estimate_json(tmp_path):
    assert run("build", "default", "--format", "json", "-o", str(tmp_path), "-q", env=EPOCH).exit_code == 0
    data = json.loads((tmp_path / "default.json").read_text())
    singles = [s for s in data["scenarios"] if "roles" not in s]
    for s in random.Random(7).sample(singles, 8):
        i = s["inputs"]
        args = ["estimate", "--json", "--model", i["model"], "--workload", i["workload"]]
        for key, value in i.items():  # the options that apply: the others are refused as changing nothing
            if INPUT_BY_NAME[key].option and applies(INPUT_BY_NAME[key], i["workload"], values=i):
                args += [INPUT_BY_NAME[key].option, str(value)]
        out = run(*args)
        assert out.exit_code == 0, out.output
        single = json.loads(out.output)
        assert single["per_gpu_bytes"] == s["per_gpu_bytes"]
        assert single["params"] == s["params"]


def test_build_is_deterministic(tmp_path):
    for d in ("a", "b"):
        assert run("build", "ppo-rlhf", "--format", "json", "-o", str(tmp_path / d), "-q", env=EPOCH).exit_code == 0
    a = (tmp_path / "a" / "ppo-rlhf.json").read_bytes()
    assert a == (tmp_path / "b" / "ppo-rlhf.json").read_bytes()
    assert json.loads(a)["generated_at"] == "2026-01-01T00:00:00+00:00"


def test_usage_errors_exit_2(tmp_path):
    result = run("build", "--format", "docx", "-o", str(tmp_path))
    assert result.exit_code == 2 and "unknown format 'docx'" in result.output


@pytest.mark.slow
def test_both_languages_share_an_output_folder(tmp_path):
    """zh outputs carry the language in their name; the JSON (figures, no prose) is the same."""
    for lang in ("en", "zh"):
        assert run("build", "default", "--format", "json,html", "--lang", lang, "-o", str(tmp_path), "-q",
                   env=EPOCH).exit_code == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["default.html", "default.json", "default.zh.html"]
    assert 'lang="zh-Hans"' in (tmp_path / "default.zh.html").read_text(encoding="utf-8")
    assert 'lang="en"' in (tmp_path / "default.html").read_text(encoding="utf-8")


def test_chinese_preset_texts_are_checked(tmp_path):
    bad = tmp_path / "zh.yaml"
    bad.write_text("title: T\ntitle_zh: [1]\nmatrices:\n  - {name: m, model: Llama-2-7B}\n", encoding="utf-8")
    result = run("check", str(bad))
    assert result.exit_code == 1 and f"Error: {bad}: title_zh: expected text, got [1]" in result.output


def test_an_unquoted_on_or_off_reads_as_the_choice_yaml_would_have_made_a_boolean(tmp_path):
    """YAML 1.1 reads an unquoted on/off (yes/no) as true/false: for an input whose choices are on and off they
    mean those choices (lora_dropout: on, ep_overlap: [off, on]); elsewhere a boolean is named as such, with the
    fix (quote it), not only 'expected text'."""
    good = tmp_path / "onoff.yaml"
    good.write_text("title: T\nmatrices:\n  - name: m\n    model: Llama-2-7B\n"
                    "    workload: {type: lora, seq_len: 2048, batch_size: 1}\n    lora_dropout: on\n"
                    "    sequence_parallel: [off, on]\n    tp_size: 2\n    num_gpus: 2\n", encoding="utf-8")
    result = run("build", str(good), "--format", "json", "-o", str(tmp_path / "out"), "-q")
    assert result.exit_code == 0, result.output
    inputs = [s["inputs"] for s in json.loads((tmp_path / "out" / "onoff.json").read_text())["scenarios"]]
    assert {i["lora_dropout"] for i in inputs} == {"on"} and sorted(i["sequence_parallel"] for i in inputs) == ["off",
                                                                                                              "on"]
    bad = tmp_path / "bool.yaml"
    bad.write_text("title: T\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    attention: no\n", encoding="utf-8")
    result = run("check", str(bad))
    assert result.exit_code == 1 and result.output == (
        f"Error: {bad}: matrices[0].attention: expected text, got False (YAML reads an unquoted yes, no, on or off "
        "as true or false: quote it)\n")


# Issue #37: nothing in a preset is silently misread. Each case is accepted by the reading before it.
MATRIX = "matrices:\n  - {name: m, model: Llama-2-7B}\n"


@pytest.mark.parametrize("text,message", [
    ("title: a\ntitle: b\n" + MATRIX, "title: set twice, at lines 1 and 2: remove one"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    num_gpus: 1\n    model: Llama-3-8B\n",
     "matrices[0].model: set twice, at lines 4 and 6: remove one"),
    ("title: t\nmatrices:\n  - name: m\n    model: Llama-2-7B\n    workload: {type: inference, type: full}\n",
     "matrices[0].workload.type: set twice, on line 5 (columns 16 and 33): remove one"),
    ("title: t\nassumptions: 0\n" + MATRIX, "assumptions: expected a mapping, got 0"),
    ("title: t\nassumptions: []\n" + MATRIX, "assumptions: expected a mapping, got []"),
    ("title: t\nassumptions: null\n" + MATRIX, "assumptions: expected a mapping, got None"),
    ("title: t\nassumptions: {}\n" + MATRIX,
     "assumptions: empty mapping: give at least one assumption, or leave the key out"),
    ("title: t\nprices: 0\n" + MATRIX, "prices: expected a mapping, got 0"),
    ("title: t\nprices: []\n" + MATRIX, "prices: expected a mapping, got []"),
    ("title: t\nprices: {L4: {}}\n" + MATRIX,
     "prices.L4: expected a mapping of price_purchase_usd and/or price_per_hour_usd, got {}"),
    ("title: t\nmatrices: {}\nscenarios: [{model: Llama-2-7B}]\n", "matrices: expected a list, got {}"),
    ("title: t\nmatrices: []\nscenarios: [{model: Llama-2-7B}]\n",
     "matrices: empty list: give at least one matrix, or leave the key out"),
    ("title: t\nmatrices: null\nscenarios: [{model: Llama-2-7B}]\n", "matrices: expected a list, got None"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, exclude: 0}\n",
     "matrices[0].exclude: expected a list, got 0"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, exclude: {}}\n",
     "matrices[0].exclude: expected a list, got {}"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, exclude: null}\n",
     "matrices[0].exclude: expected a list, got None"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, exclude: []}\n",
     "matrices[0].exclude: empty list: give at least one rule, or leave the key out"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, interchangeable: 0}\n",
     "matrices[0].interchangeable: unknown job input 0"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, interchangeable: []}\n",
     "matrices[0].interchangeable: empty list: give at least one job input, or leave the key out"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, goal: {}}\n",
     "matrices[0].goal: empty mapping: give at least one of within, users, context, min_tokens_per_s, max_ttft, or leave the "
     "key out"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, workload: full, goal: {within: null}}\n",
     "matrices[0].goal.within: expected a value, got null: give one, or leave the key out"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, gpu: H100-80GB-SXM, num_gpus: 8,\n"
     "       workload: {type: ppo, critic_model: null}}\n",
     "matrices[0].workload.critic_model: expected a value, got null: give one, or leave the key out"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, batch_size: [1, 1, 1]}\n",
     "matrices[0].batch_size[1]: value 1 is listed twice (first at [0])"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, workload: full, zero_stage: [0, 0]}\n",
     "matrices[0].zero_stage[1]: value 0 is listed twice (first at [0])"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, workload: {type: full, seq_len: [512, 512.0]}}\n",
     "matrices[0].workload.seq_len[1]: value 512.0 is listed twice (first at [0])"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, workload: [full, {type: full}]}\n",
     "matrices[0].workload[1]: workload {'type': 'full'} is listed twice (first at [0])"),
    ("title: t\nmatrices:\n  - {name: m, model: Llama-2-7B, batch_size: [1, 2],\n"
     "       exclude: [{batch_size: 1}, {batch_size: 1}]}\n",
     "matrices[0].exclude[1]: rule {'batch_size': 1} is listed twice (first at [0])"),
], ids=["title twice", "model twice", "workload type twice", "assumptions 0", "assumptions []",
        "assumptions null", "assumptions {}", "prices 0", "prices []", "a GPU's prices {}", "matrices {}",
        "matrices []", "matrices null", "exclude 0", "exclude {}", "exclude null", "exclude []",
        "interchangeable 0", "interchangeable []", "goal {}", "goal within null", "critic null",
        "batch_size repeated", "zero_stage repeated", "seq_len 512 and 512.0", "workload repeated",
        "rule repeated"])
def test_nothing_is_silently_misread(tmp_path, text, message):
    path = write(tmp_path, text)
    result = run("check", str(path))
    assert (result.exit_code, result.output) == (1, f"Error: {path}: {message}" + result.output.split(message, 1)[1])
    assert result.output.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.slow
def test_300000_identical_exclude_rules_are_refused_at_the_second(tmp_path, monkeypatch):
    monkeypatch.setenv("REPORTGEN_MAX_YAML_EVENTS", "1000000")  # by default the parser's budget refuses it first
    rules = "exclude: [&r {batch_size: 1}" + ", *r" * 299_999 + "]"
    path = write(tmp_path, f"title: t\nmatrices:\n  - {{name: m, model: Llama-2-7B, batch_size: [1, 2], {rules}}}\n")
    result = run("check", str(path))
    assert (result.exit_code, result.output) == (
        1, f"Error: {path}: matrices[0].exclude[1]: rule {{'batch_size': 1}} is listed twice (first at [0])\n")


def test_merge_keys_may_override_what_they_merge(tmp_path):
    """A YAML merge (<<) is not a duplicate key: the mapping's own keys override the merged ones."""
    path = write(tmp_path, "title: t\nmatrices:\n  - &b {name: m, model: Llama-2-7B, gpu: L4}\n"
                           "  - {<<: *b, name: n, gpu: A100-80GB}\n")
    result = run("check", str(path))
    assert (result.exit_code, result.output) == (0, f"{path}: OK — 2 scenarios, 0 skipped\n")


DATACENTER = """
title: t
datacenter_only: true
matrices:
  - name: m
    model: Llama-2-7B
    workload: {type: inference, prompt_len: 512, gen_len: 128}
    gpu: [RTX-4090, L40S, RTX-3090]
    batch_size: [1, 2]
"""


def test_datacenter_only_leaves_out_geforce_cards_and_says_so(tmp_path):
    from reportgen.pipeline import load, make_report
    from reportgen.report.views import build_view
    path = write(tmp_path, DATACENTER)
    result = run("check", str(path))
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        f"{path}: OK — 2 scenarios, 0 skipped",
        "  left out by datacenter_only (not licensed for data-centre use): RTX-4090, RTX-3090 (4 combinations of "
        "matrices[0])"]
    report = make_report(load(str(path)), "2026-01-01T00:00:00+00:00")
    assert {r.gpu for r in report.results} == {"L40S"}
    for lang, words in (("en", "RTX-4090, RTX-3090, 4 combinations"), ("zh", "RTX-4090、RTX-3090，共 4 个组合")):
        assert words in build_view(report, lang).summary_intro, lang
    without = write(tmp_path, DATACENTER.replace("datacenter_only: true\n", ""), "p2.yaml")
    assert "left out" not in run("check", str(without)).output  # the default keeps every listed GPU type


@pytest.mark.parametrize("change, message", [
    (("[RTX-4090, L40S, RTX-3090]", "[RTX-4090, RTX-3090]"),
     "matrices[0].gpu: datacenter_only leaves no GPU type: RTX-4090, RTX-3090 are not licensed for data-centre use"),
    (("datacenter_only: true", "datacenter_only: 1"), "datacenter_only: expected true or false, got 1"),
    (("batch_size: [1, 2]\n", "batch_size: [1, 2]\nscenarios:\n  - {name: s, model: Llama-2-7B, gpu: RTX-4090}\n"),
     "scenarios[0].gpu: RTX-4090 is not licensed for data-centre use (GeForce) and the preset sets datacenter_only"),
])
def test_datacenter_only_refuses_what_it_would_empty_or_an_explicit_geforce_scenario(tmp_path, change, message):
    path = write(tmp_path, DATACENTER.replace(*change))
    result = run("check", str(path))
    assert result.exit_code == 1 and result.output.startswith(f"Error: {path}: {message}"), result.output


def test_datacenter_only_leaves_geforce_out_of_a_purchase(tmp_path):
    from reportgen.pipeline import load
    text = """title: t
datacenter_only: true
purchase:
  horizon: 4w
  gpus: [RTX-4090, A100-80GB]
  jobs:
    - {name: ft, model: Llama-3.2-1B, workload: {type: full, seq_len: 2048}, train_tokens: 100000000}
"""
    loaded = load(str(write(tmp_path, text)))
    assert loaded.expansion.purchase.gpu_types == ("A100-80GB",)
    assert loaded.expansion.left_out == (("purchase.gpus", ("RTX-4090",), 0),)
    result = run("check", str(write(tmp_path, text.replace("RTX-4090, A100-80GB", "RTX-4090"), "p2.yaml")))
    assert "purchase.gpus: datacenter_only leaves no GPU type: RTX-4090" in result.output and result.exit_code == 1


@pytest.mark.parametrize("gpu", ["{a: 1}", "[[L4]]", "[{a: 1}, L4]"])
def test_datacenter_only_meets_a_malformed_gpu_value_with_the_usual_error(tmp_path, gpu):
    """A mapping or list where a GPU name goes is refused with its key path, as without the option (the fuzz
    suite found a TypeError: the filter ran before the values were checked)."""
    for text in (DATACENTER, DATACENTER.replace("datacenter_only: true\n", "")):
        path = write(tmp_path, text.replace("[RTX-4090, L40S, RTX-3090]", gpu))
        result = run("check", str(path))
        assert result.exit_code == 1 and result.output.startswith(f"Error: {path}: matrices[0].gpu"), result.output
        assert "Traceback" not in result.output
