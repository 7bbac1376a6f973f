"""The command line, in-process: help on every command, JSON contracts, one-line errors and exit codes."""
import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.model.catalog import load_gpus, load_models
from reportgen.cli import main
from reportgen.model.estimate import Estimator, Scenario


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help_with_an_example(command):
    result = run(command, "-h")
    assert result.exit_code == 0
    assert "Example:" in result.output and f"reportgen {command}" in result.output


def help_examples(command: str) -> list[list[str]]:
    """The example lines of a command's -h, as arguments after `reportgen`."""
    text = run(command, "-h").output
    lines = text.split("Example:", 1)[1].split("\n\n", 1)[0].splitlines()
    return [shlex.split(line)[1:] for line in map(str.strip, lines) if line.startswith("reportgen ")]


# What an example names that a clone does not have: the reader's own files. import-config's one example is such (the
# import tests run the command), and build's write outputs (the build tests run them).
READER_FILES = ("config.json", "my-measured-peaks.json")


@pytest.mark.parametrize("command", sorted(set(main.commands) - {"build", "import-config"}))
def test_every_help_example_runs(command, monkeypatch):
    """A planner copies an example from -h: each runs as printed (one did not: a 32k context on Llama-3-8B, whose
    config stops at 8k)."""
    monkeypatch.chdir(Path(__file__).parent.parent)  # examples name files relative to the repository
    ran = 0
    for args in help_examples(command):
        if any(a in READER_FILES for a in args) or "|" in args:
            continue
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        ran += 1
    assert ran, command


def test_version():
    assert run("--version").output.startswith("reportgen, version ")


def test_params_json_contract():
    result = run("params", "--model", "Llama-2-7B", "--lora-rank", "8", "--lora-targets", "q_proj,v_proj", "--json")
    p = json.loads(result.output)["params"]
    assert p["total"] == 6_738_415_616 and p["trainable"] == 4_194_304 and p["active_per_token"] == p["total"]
    assert sum(p["by_component"].values()) == p["total"]
    assert all(isinstance(v, int) for v in p["by_component"].values())


def test_params_from_a_config_file(tmp_path):
    config = json.loads(open("presets/models/mixtral-8x7b.json").read())["config"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    p = json.loads(run("params", "--config", str(path), "--json").output)["params"]
    assert p["total"] == 46_702_792_704 and p["active_per_token"] < p["total"]


def test_estimate_json_equals_the_library():
    result = run("estimate", "--model", "Llama-2-7B", "--workload", "full", "--gpus", "8", "--zero", "3",
                 "--checkpointing", "full", "--seq", "4096", "--gpu", "A100-80GB", "--json")
    data = json.loads(result.output)
    expected = Estimator(load_models(), load_gpus()).estimate(Scenario(
        model="Llama-2-7B", workload="full", num_gpus=8, zero_stage=3, checkpointing="full", seq_len=4096,
        prompt_len=0, gen_len=0, gpu="A100-80GB"))
    assert data["per_gpu_bytes"] == expected.per_gpu_bytes
    assert set(data["per_gpu_bytes"]) == {"weights", "gradients", "optimizer_states", "master_weights", "activations",
                                          "kv_cache", "allocated_peak", "reserved_peak", "device_total", "recommended"}
    assert all(isinstance(v, int) for v in data["per_gpu_bytes"].values())
    assert data["fits"] is True


def test_estimate_rlhf_json_has_roles():
    data = json.loads(run("estimate", "--model", "Llama-2-7B", "--workload", "ppo", "--gpus", "8", "--zero", "3",
                          "--critic-model", "Qwen2.5-0.5B", "--json").output)
    assert set(data["roles"]) == {"actor", "critic", "reference", "reward"}
    assert all("per_gpu_bytes" in r for r in data["roles"].values())


def test_estimate_table_labels_units():
    out = run("estimate", "--model", "Llama-3-8B").output
    assert "GiB" in out and "GB" in out and "FITS" in out


def test_a_prompt_alone_has_no_cost_per_token():
    """Serving without generated tokens (--gen-len 0, the default): the cost per million output tokens is undefined
    and says why, where it printed 0.00 USD; with tokens it is a price."""
    prompt_only = CliRunner().invoke(main, ["estimate", "--model", "Llama-3-8B", "--engine", "vllm"])
    generating = CliRunner().invoke(main, ["estimate", "--model", "Llama-3-8B", "--engine", "vllm", "--gen-len", "256"])
    cost = "Cost per million output tokens (hourly price)"
    line = next(x for x in prompt_only.output.splitlines() if x.startswith(cost))
    assert "no tokens generated (--gen-len 0)" in line and "USD" not in line
    line = next(x for x in generating.output.splitlines() if x.startswith(cost))
    assert line.endswith(" USD") and float(line.split()[-2]) > 0


def test_plan_finds_a_fitting_layout():
    out = json.loads(run("plan", "--model", "Llama-2-7B", "--workload", "full", "--gpu-type", "A100-80GB",
                         "--json").output)["options"]
    # 7B full fine-tuning (~112 GB of states) fits one A100-80GB only with the optimizer in host RAM.
    assert out and out[0]["gpu"] == "A100-80GB" and out[0]["num_gpus"] == 1
    assert out[0]["layout"]["offload"] != "none" and out[0]["host_offload_bytes"] > 0
    kept = json.loads(run("plan", "--model", "Llama-2-7B", "--workload", "full", "--gpu-type", "A100-80GB",
                          "--offload", "none", "--json").output)["options"]
    assert kept[0]["layout"]["offload"] == "none" and kept[0]["num_gpus"] >= 2


def test_models_and_gpus_list_the_catalogs():
    models = json.loads(run("models", "--json").output)
    assert len(models) >= 25
    gpus = json.loads(run("gpus", "--json").output)
    h100 = next(g for g in gpus if g["name"] == "H100-80GB-SXM")
    assert h100["memory_mib"] == 81559 and h100["memory_bytes"] == 81559 * 2**20


def test_import_config_writes_a_catalog_entry(tmp_path):
    src = tmp_path / "config.json"
    src.write_text(json.dumps(json.loads(open("presets/models/qwen2.5-0.5b.json").read())["config"]))
    out = tmp_path / "entry.json"
    result = run("import-config", str(src), "--name", "My-Qwen", "-o", str(out))
    assert result.exit_code == 0 and "494,032,768 parameters" in result.output
    assert json.loads(out.read_text())["name"] == "My-Qwen"


@pytest.mark.parametrize("args,code,message", [
    (["estimate", "--model", "Llama-2-7B", "--batch", "0"], 2, "Invalid value for '--batch': 0 is not in the range"),
    (["estimate", "--model", "Llama-2-7B", "--seq", "-5", "--workload", "full"], 2, "Invalid value for '--seq'"),
    (["estimate", "--model", "Llama-2-7B", "--zero", "4"], 2, "Invalid value for '--zero'"),
    (["estimate", "--model", "Llama-2-7B", "--tp", "3", "--gpus", "3"], 1,
     "Error: tp_size 3 does not divide 32 attention heads"),
    (["estimate", "--model", "Llama-2-7B", "--gpu", "H100"], 1, "Error: --gpu: unknown GPU 'H100' (did you mean"),
    (["estimate", "--model", "Lama-2-7B"], 1, "Error: --model: unknown model 'Lama-2-7B' (did you mean 'Llama-2-7B'?)"),
    (["estimate", "--model", "Llama-2-7B", "--precision", "fp6"], 2, "Invalid value for '--precision'"),
    (["estimate"], 2, "give exactly one of --model or --config"),
    (["params", "--config", "/nonexistent/config.json"], 1, "Error: /nonexistent/config.json: file not found"),
])
def test_bad_values_give_one_line_errors(args, code, message):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == code, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    if code == 1:
        assert result.output.count("\n") == 1


@pytest.mark.parametrize("content,message", [
    ("{", "malformed JSON at line 1"),
    ('{"model_type": "llama"}', "hidden_size: missing required field"),
    ('{"model_type": "llama", "vocab_size": 32000, "hidden_size": "big"}', "hidden_size: expected an integer, got 'big'"),
    ('{"model_type": "llama", "hidden_size": -1}', "hidden_size: must be at least 1, got -1"),
    ('{"model_type": "transformer9"}', "model_type: unknown model_type 'transformer9'"),
    ('[1, 2]', "expected a JSON object of config fields"),
])
def test_bad_config_files(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_text(content)
    result = CliRunner().invoke(main, ["params", "--config", str(path)])
    assert result.exit_code == 1 and f"Error: {path}: " in result.output and message in result.output


def test_non_utf8_and_directory_configs(tmp_path):
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"model_type": "llama", "name": "caf\xe9"}')
    result = CliRunner().invoke(main, ["params", "--config", str(bad)])
    assert result.exit_code == 1 and "not UTF-8" in result.output
    result = CliRunner().invoke(main, ["params", "--config", str(tmp_path)])
    assert result.exit_code == 1 and "is a directory" in result.output


# ---- bugs a new user hit (each failed before its fix) --------------------------------------------

def test_params_accepts_the_all_linear_target_set():
    """PEFT's all-linear on Qwen3-8B: every q/k/v/o/gate/up/down projection of 36 layers, r = 32.
    Per layer r × Σ(in + out): q 4096+4096, k 4096+1024, v 4096+1024, o 4096+4096, gate and up
    4096+12288 each, down 12288+4096 (Qwen3-8B config: hidden 4096, 32 heads × 128, 8 KV heads, MLP 12288)."""
    result = run("params", "--model", "Qwen3-8B", "--lora-rank", "32", "--lora-targets", "all-linear", "--json")
    assert result.exit_code == 0, result.output
    per_layer = (8192 + 5120 + 5120 + 8192 + 3 * 16384) * 32
    assert json.loads(result.output)["params"]["trainable"] == 36 * per_layer


@pytest.mark.parametrize("workload,trainable", [("inference", 0), ("full", 6_738_415_616), ("lora", 8_388_608)])
def test_estimate_json_trainable_parameters(workload, trainable):
    """Inference trains nothing; full trains every parameter; LoRA r = 16 on q,v of Llama-2-7B trains
    2 × (4096 + 4096) × 16 × 32 layers (twice PEFT's r = 8 count of 4,194,304)."""
    data = json.loads(run("estimate", "--model", "Llama-2-7B", "--workload", workload, "--json").output)
    assert data["params"]["trainable"] == trainable


def test_plan_lists_a_gpu_type_once_when_given_twice():
    result = run("plan", "--model", "Llama-2-7B", "--gpu", "A100-80GB", "--gpu-type", "A100-80GB", "--json")
    rows = json.loads(result.output)["options"]
    assert [r["gpu"] for r in rows] == ["A100-80GB"]


def test_plan_with_separate_pools_counts_and_prices_every_gpu():
    result = run("plan", "--model", "Llama-2-7B", "--workload", "ppo", "--placement", "separate",
                 "--gpu-type", "A100-80GB", "--json")
    row = json.loads(result.output)["options"][0]
    price = load_gpus()["A100-80GB"].price_purchase_usd
    assert row["total_gpus"] == sum(row["gpus_per_role"].values()) == 4 * row["num_gpus"]
    assert row["purchase_usd"] == pytest.approx(row["total_gpus"] * price)
    text = run("plan", "--model", "Llama-2-7B", "--workload", "ppo", "--placement", "separate",
               "--gpu-type", "A100-80GB").output
    assert f"{row['total_gpus']}" in text.splitlines()[3].split()


def test_build_lang_help_says_what_it_translates():
    line = next(l for l in run("build", "-h").output.splitlines() if "--lang" in l)
    assert "report" in line and "workbook" not in line


# ---- planning against a goal ----------------------------------------------------------------------

def _plan(*args):
    result = run("plan", "--json", *args)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_training_deadline_buys_enough_gpus_and_no_more():
    """1e9 tokens of Llama-3-8B full fine-tuning: a 1-day deadline needs more A100s than memory alone
    would, the plan meets the deadline, and the next smaller count (half) would miss it."""
    base = ["--model", "Llama-3-8B", "--workload", "full", "--train-tokens", "1e9", "--gpu-type", "A100-80GB"]
    free = _plan(*base)["options"][0]
    day = _plan(*base, "--within", "1h")["options"][0]
    assert day["num_gpus"] > free["num_gpus"]
    assert day["time"]["time_to_train_seconds"] <= 3600
    half = json.loads(run("estimate", "--json", "--model", "Llama-3-8B", "--workload", "full", "--train-tokens", "1e9",
                          "--gpu", "A100-80GB", "--gpus", str(day["num_gpus"] // 2),
                          "--zero", str(max(day["zero_stage"], 1))).output)
    assert half["time"]["time_to_train_seconds"] > 3600


def test_a_serving_goal_sets_users_context_and_speed():
    goal = ["--model", "Llama-3.1-8B", "--users", "50", "--context", "32k", "--gen-len", "512",
            "--min-tokens-per-s", "20", "--gpu-type", "H100-80GB-SXM"]
    found = _plan(*goal)
    option = found["options"][0]
    assert found["goal"] == "50 users at once, 32,768 tokens of context (32,256 prompt + 512 generated), ≥ 20 tokens/s per user"
    assert option["time"]["tokens_per_s_per_user"] >= 20
    replicas = option["num_gpus"] // option["tp_size"]
    # every user is served: the replicas' batches cover the 50 users
    assert replicas * -(-50 // replicas) >= 50
    faster = _plan(*goal[:-4], "--min-tokens-per-s", "60", "--gpu-type", "H100-80GB-SXM")["options"][0]
    assert faster["time"]["tokens_per_s_per_user"] >= 60 and faster["num_gpus"] >= option["num_gpus"]


def test_cheapest_says_by_which_measure():
    found = _plan("--model", "Llama-3-8B", "--workload", "full", "--train-tokens", "1e9",
                  "--gpu-type", "A100-80GB", "--gpu-type", "H100-80GB-SXM")
    by_gpu = {o["gpu"]: o for o in found["options"]}
    assert by_gpu[found["cheapest"]["purchase"]]["purchase_usd"] == min(o["purchase_usd"] for o in by_gpu.values())
    runs = {g: o["time"]["cost_usd"] for g, o in by_gpu.items()}
    assert runs[found["cheapest"]["hourly"]] == min(runs.values())


@pytest.mark.parametrize("workload,option,text,expected", [
    ("inference", "--prompt-len", "4096", 4096), ("inference", "--prompt-len", "7.5k", 7680),
    ("full", "--train-tokens", "1e9", 10**9)])
def test_counts_are_written_as_people_write_them(workload, option, text, expected):
    data = json.loads(run("estimate", "--json", "--model", "Llama-3-8B", "--workload", workload, option, text).output)
    assert data["inputs"][option[2:].replace("-", "_")] == expected


@pytest.mark.parametrize("args,message", [
    (["--workload", "full", "--weight-dtype", "fp8"], "--weight-dtype does not apply to full fine-tuning"),
    (["--workload", "inference", "--zero", "2"], "--zero does not apply to inference"),
    (["--workload", "full", "--prompt-len", "512"], "--prompt-len does not apply to full fine-tuning"),
    (["--workload", "ppo", "--seq", "2048"], "--seq does not apply to PPO with a full fine-tuning actor"),
    (["--workload", "dpo", "--gen-len", "64"], "--gen-len does not apply to DPO"),
    (["--workload", "ppo", "--engine", "vllm", "--max-num-batched-tokens", "4096"],
     "--max-num-batched-tokens does not apply to PPO"),
    (["--workload", "ppo", "--engine", "vllm", "--engine-sampler", "sort"], "--engine-sampler does not apply to PPO"),
])
def test_an_option_that_would_change_nothing_is_refused(args, message):
    """Every option the CLI accepts changes the result or is refused (#17: never silently ignored)."""
    result = run("estimate", "--model", "Llama-2-7B", *args)
    assert result.exit_code == 2 and message in result.output


def test_an_input_applies_exactly_when_it_changes_a_term():
    """inputs.applies (what the CLI refuses by) agrees with the terms: an input that applies changes
    some term for some value in one of two settings; one that does not apply changes none, for any
    value (so a refused option would indeed have changed nothing, and an accepted one is never ignored)."""
    from dataclasses import replace

    from reportgen.model.catalog import load_gpus, load_models
    from reportgen.model.estimate import Estimator, make_scenario
    from reportgen.model.inputs import INPUTS, applies
    from reportgen.model.terms import ROLE_TERMS

    est = Estimator(load_models(), load_gpus())

    def others(i):  # values other than the default: every choice, or a step inside the range
        if i.choices:
            return [c for c in i.user_choices if c != i.default]
        if i.decimal:
            return [0.5]
        # and one far inside: a length past the 512 tokens of the bases' rollouts (max_gen_len is read above them)
        return [i.limits[0] + 1, i.limits[0] + 3, min(i.limits[1], i.limits[0] + 4096)] if i.limits else []

    PHASES = ("total", "fit", "phase")

    def terms(s, groups=("total", "fit")):
        """The figures a user reads (the peak and its parts, fit, cost, time); with "phase" also each
        phase, which an input may change below the peak (the foreach temporary of a LoRA step)."""
        names = {t.name for t in ROLE_TERMS if t.group in groups}
        if hasattr(s, "roles"):
            g = est.estimate_group(s)
            return {**g.values, **{f"{r}.{k}": v for r, e in g.roles for k, v in e.values.items() if k in names}}
        e = est.estimate(s)
        return {**{k: v for k, v in e.values.items() if k in names}, **e.time_json()}

    for workload in ("inference", "full", "lora", "qlora", "ppo", "dpo"):
        bases = []
        engines = ("hf-generate", "vllm") if workload in ("inference", "ppo") else ("hf-generate",)
        for engine in engines:  # the engines' own inputs apply only with one (its sampler shows at 1,024 sequences)
            for batch in (1, 16) if engine == "hf-generate" else (16, 1024):
                s, reason = make_scenario({"model": "Llama-3-8B", "num_gpus": 2, "batch_size": batch,
                                           **({"serving_engine": engine} if engine != "hf-generate" else {})},
                                          workload=workload, rlhf={}, estimator=est)
                bases.append(s)
        if workload == "inference":  # and adapter slots (their rank is read only with some)
            bases.append(make_scenario({"model": "Llama-3-8B", "num_gpus": 2, "batch_size": 16, "max_loras": 4,
                                        "serving_engine": "vllm"}, workload=workload, rlhf={}, estimator=est)[0])
        # and tensor parallel (sequence parallelism splits what TP alone leaves whole)
        bases.append(make_scenario({"model": "Llama-3-8B", "num_gpus": 2, "tp_size": 2, "batch_size": 1},
                                   workload=workload, rlhf={}, estimator=est)[0])
        for i in INPUTS:
            if not i.option or i.name in ("gpu", "num_gpus", "batch_size", "model"):
                continue
            changed = computed = False
            for base in bases:
                lead = base.actor if hasattr(base, "actor") else base
                for value in others(i):
                    candidate = (base.relayout(**{i.name: value}) if hasattr(base, "actor")
                                 else replace(base, **{i.name: value}))
                    if est.skip_check(candidate.actor if hasattr(candidate, "actor") else candidate):
                        continue  # refused with its reason: not ignored
                    computed = True
                    if not applies(i, workload, lead.workload, lead.inputs()):
                        assert terms(candidate) == terms(base), (workload, i.name, value, "does not apply, yet "
                                                                 "changes a figure")
                    changed |= terms(candidate, PHASES) != terms(base, PHASES)
            if any(applies(i, workload, b.actor.workload if hasattr(b, "actor") else workload,
                           (b.actor if hasattr(b, "actor") else b).inputs()) for b in bases):
                # (Llama-3-8B's config sets every dropout probability to 0: dropout=config changes nothing for it;
                # it has no experts: experts_implementation and moe_load_imbalance are tested on an MoE model below,
                # moe_dispatcher, ep_overlap and tp_overlap in test_cluster_time.py)
                assert changed or not computed or i.name in ("dropout", "experts_implementation",
                                                             "moe_load_imbalance", "moe_dispatcher", "ep_overlap",
                                                             "tp_overlap"), (
                    workload, i.name, "applies, yet changes no term")


def test_experts_implementation_changes_an_moe_prefill_only():
    """The MoE experts implementation changes the prefill working set of an MoE model (the eager loop holds one
    expert's tokens at a time: less than grouped_mm here), never a training estimate or a dense model's."""
    from dataclasses import replace

    from reportgen.model.catalog import load_gpus, load_models
    from reportgen.model.estimate import Estimator, make_scenario

    est = Estimator(load_models(), load_gpus())
    for workload, model, differs in (("inference", "Mixtral-8x7B", True), ("full", "Mixtral-8x7B", False),
                                     ("inference", "Llama-3-8B", False)):
        s, _ = make_scenario({"model": model, "num_gpus": 8, "prompt_len": 4096, "seq_len": 4096}, workload=workload,
                             rlhf={}, estimator=est)
        grouped, eager = est.estimate(s), est.estimate(replace(s, experts_implementation="eager"))
        assert (eager["allocated_peak"] < grouped["allocated_peak"]) is differs, (workload, model)
        assert (eager["allocated_peak"] == grouped["allocated_peak"]) is not differs, (workload, model)


@pytest.mark.slow
def test_a_workbook_past_excels_row_limit_is_refused_by_name(tmp_path, monkeypatch):
    """Past 1,048,576 rows Excel cannot open a sheet (XlsxWriter drops the rows): one line naming the
    limit, exit status 1, and no workbook (nor any other output of the build)."""
    from reportgen.writers.xlsx import layout, scenario_sheet_rows
    from reportgen.pipeline import load, make_report
    assert layout.EXCEL_MAX_ROWS == 1_048_576
    preset = "tests/fixtures/xlsx-small.yaml"
    rows = scenario_sheet_rows(make_report(load(preset), "2026-01-01T00:00:00+00:00"))
    monkeypatch.setattr(layout, "EXCEL_MAX_ROWS", rows - 1)
    result = run("build", preset, "--format", "json,xlsx", "-o", str(tmp_path), "-q")
    assert result.exit_code == 1
    assert result.output == (f"Error: xlsx-small: the workbook's Scenarios sheet would need {rows:,} rows, past "
                             f"Excel's limit of {rows - 1:,} rows per sheet: build json, html or pdf for this "
                             f"preset, or split its matrix\n")
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(layout, "EXCEL_MAX_ROWS", rows)
    assert run("build", preset, "--format", "xlsx", "-o", str(tmp_path), "-q").exit_code == 0


@pytest.mark.parametrize("flag, options", [((), {}), (("--pdf-appendix",), {"appendix": True})])
def test_pdf_appendix_option_reaches_the_pdf_writer(tmp_path, monkeypatch, flag, options):
    """The management PDF leaves the full appendices out unless --pdf-appendix asks for them (what each
    variant holds: test_report_pdf)."""
    from pathlib import Path
    from reportgen.writers import pdf as pdf_writer

    def record(report, path, lang, **kwargs):  # in the forked PDF child: what it was called with goes in the file
        Path(path).write_text(json.dumps(kwargs))

    monkeypatch.setattr(pdf_writer, "write", record)
    result = run("build", "tests/fixtures/xlsx-small.yaml", "--format", "pdf", "-o", str(tmp_path), "-q", *flag)
    assert result.exit_code == 0 and json.loads((tmp_path / "xlsx-small.pdf").read_text()) == options


@pytest.mark.parametrize("args, message", [
    (["plan", "--model", "Llama-3-8B", "--gpu", "A100-80GB", "--gpu=H100-80GB-SXM"],
     "Error: --gpu is given twice (A100-80GB, then H100-80GB-SXM): it takes one value; compare GPU types with "
     "--gpu-type, once each"),
    (["estimate", "--model", "Llama-3-8B", "--batch", "2", "--batch", "4"],
     "Error: --batch is given twice (2, then 4): it takes one value"),
])
def test_an_option_of_one_value_given_twice_is_refused(args, message, tmp_path):
    """Click keeps the last value silently: `plan --gpu A --gpu B` planned for B alone. A flag twice (-q -q) and a
    repeatable option (--gpu-type) pass."""
    out = CliRunner().invoke(main, args)
    assert out.exit_code == 2 and message in out.output, out.output
    both = CliRunner().invoke(main, ["plan", "--model", "Llama-3-8B", "--gpu-type", "A100-80GB", "--gpu-type", "L4",
                                     "--json"])
    assert both.exit_code == 0 and {o["gpu"] for o in json.loads(both.output)["options"]} == {"A100-80GB", "L4"}
    quiet = CliRunner().invoke(main, ["build", "default", "--format", "json", "-o", str(tmp_path), "-q", "-q"])
    assert quiet.exit_code == 0 and (tmp_path / "default.json").exists()



@pytest.mark.parametrize("settings", [
    dict(placement="separate", critic_model="Qwen2.5-0.5B", reward_model="Qwen2.5-0.5B",
         role_gpus={"critic": 1, "reward": 1, "reference": 2}),
    dict(placement="colocated", rollout_placement="separate"),
    dict(placement="separate", rollout_placement="separate"),
])
def test_a_group_of_several_pools_prints_its_tightest_pools_figures(settings):
    """`estimate` of an RLHF group on several pools printed each term's largest over the pools (the reference's
    weights beside the critic's activations and the actor's peak), rows that add up to no GPU's; it prints the
    tightest pool's own figures (the first, in role order, with the largest device total) and names the pool."""
    from reportgen.model.estimate import rlhf_scenario
    from reportgen.model.terms import PER_GPU_KEYS, TERM_BY_NAME
    from reportgen.report.terminal import group_table
    est = Estimator(load_models(), load_gpus())
    actor = Scenario(model="Llama-2-7B", workload="full", prompt_len=512, gen_len=512, batch_size=4, num_gpus=8,
                     zero_stage=3, gpu="H100-80GB-SXM", serving_engine="vllm")
    group = est.estimate_group(rlhf_scenario(name="", algorithm="ppo", actor=actor, **settings))
    pools = group.pools()
    assert len(pools) > 1
    names, _, tightest = max(pools, key=lambda pool: pool[2]["device_total"])  # the first of the largest
    text = group_table(group, est.assumptions)
    assert f"per GPU, tightest pool ({', '.join(names)}: " in text
    for key in PER_GPU_KEYS:
        (line,) = [l for l in text.splitlines() if l.startswith(TERM_BY_NAME[key].label + "  ")]
        assert int(line.split()[-3].replace(",", "")) == int(tightest[key]), key
    # one GPU's figures: its states are within its own allocated peak
    assert tightest["weights"] + tightest["optimizer_states"] <= tightest["allocated_peak"]


def test_an_engines_fit_lines_take_no_k_and_say_what_binds():
    """#31's example: Llama-3.1-70B on 4 × H100 under vLLM, 64 sequences of 9,216 tokens. The lines said 'DOES NOT
    FIT; headroom 5.32 GiB; recommended (k) … does not fit' for an engine that takes no k; they say its budget is its
    margin, and what binds (its KV pool against the sequences' cache), with the figures the estimate has."""
    result = run("estimate", "--model", "Llama-3.1-70B", "--engine", "vllm", "--gpus", "4", "--tp", "4", "--batch", "64",
                 "--prompt-len", "8192", "--gen-len", "1024")
    e = Estimator(load_models(), load_gpus()).estimate(Scenario(
        model="Llama-3.1-70B", workload="inference", serving_engine="vllm", num_gpus=4, tp_size=4, batch_size=64,
        prompt_len=8192, gen_len=1024))
    assert not e["kv_fits"] and e["recommended"] == e["device_total"] < e["gpu_memory_bytes"]
    assert "as an engine (its budget is its margin: no k) does not fit" in result.output
    assert "recommended (k)" not in result.output
    assert (f"what keeps it from fitting: the KV pool holds {e['kv_pool_bytes'] / 2**30:,.2f} GiB per GPU, the "
            f"sequences need {e['kv_cache'] / 2**30:,.2f} GiB") in result.output
