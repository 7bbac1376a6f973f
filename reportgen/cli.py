"""The command line: each command parses options, calls the library once, prints the result.

Expected problems (bad files, bad values) become one line `Error: …` and exit status 1; Click's
own usage errors exit with 2. Anything else is a bug and keeps its traceback.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sys
from dataclasses import asdict, replace
from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from . import __version__
from .model.catalog import catalog_entry, import_target, load_gpus, load_models, resolve_model, slug
from .errors import EXIT_BAD_INPUT, InputError, Interrupted, handled_interrupts, unknown_name
from .model.inputs import (INPUT_BY_NAME, applies, INPUTS, RLHF_ALGORITHMS, RLHF_INPUT_BY_NAME, RLHF_INPUTS,
                           ROLLOUT_PLACEMENTS, WORKLOAD_DEFAULTS, WORKLOAD_TYPES, Input, rlhf_setting_unused)
from .limits import check_name
from .writers import LIVE_ROWS
from .model.spec import load_config_file, read_config_file
from .model.shape import LORA_MODULES, lora_trainable, model_row, params_by_component
from .model.terms import ASSUMPTIONS, Assumption
from .report.terminal import estimate_table, group_table, models_table, gpus_table, plan_table, validation_table
from .model.units import format_count, parse_count, parse_duration

if TYPE_CHECKING:  # the estimator (and NumPy under it) loads with the commands that estimate: --help need not
    from .model.estimate import Estimator, RlhfScenario, Scenario

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def handle_input_errors(fn):
    """Turn InputError into `Error: …` on stderr and exit status 1, and SIGINT, SIGTERM and SIGHUP
    into one line saying what was written and exit status 128 + the signal's number."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        previous = {signum: signal.signal(signum, _raise_interrupted) for signum in handled_interrupts()}
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            click.echo(f"Error: {exc.one_line()}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt as exc:
            # A writer stopped mid-save can abandon objects whose finalisers fail at exit (a zip
            # archive over a buffer already closed): the line below is all the user should see.
            sys.unraisablehook = lambda _unraisable: None
            interrupt = exc if isinstance(exc, Interrupted) else Interrupted()
            click.echo(interrupt.message(", ".join(click.format_filename(p) for p in interrupt.written)), err=True)
            sys.exit(interrupt.exit_status)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    return wrapper


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


@contextlib.contextmanager
def _committing():
    """A Staging whose interruption reports what its commit had already written."""
    from .writers.atomic import Staging
    staging = Staging()
    try:
        with staging:
            yield staging
    except KeyboardInterrupt as exc:
        raise Interrupted(getattr(exc, "signum", signal.SIGINT), staging.written) from None


class _OneValueCommand(click.Command):
    """A command whose options that take one value refuse a second: Click would keep the last one silently
    (`plan --gpu A --gpu B` planned for B alone). A flag given twice means the same and passes."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        single = {name: p for p in self.params if isinstance(p, click.Option) and not p.multiple and not p.is_flag
                  for name in p.opts}
        seen: dict[str, str] = {}
        for k, arg in enumerate(args):
            if arg == "--":
                break
            typed, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
            option = single.get(typed)
            if option is None:
                continue
            value = value if eq else (args[k + 1] if k + 1 < len(args) else "")
            if option.name in seen:
                raise click.UsageError(f"{typed} is given twice ({seen[option.name]}, then {value}): it takes one value"
                                       + ("; compare GPU types with --gpu-type, once each" if option.name == "gpu"
                                          else ""), ctx=ctx)
            seen[option.name] = value
        return super().parse_args(ctx, args)


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="reportgen")
def main():
    """reportgen: GPU memory capacity planning for LLM inference, fine-tuning, LoRA/QLoRA, RLHF and MoE.

    \b
    Example:
      reportgen build                 # the bundled default preset -> out/default.{json,xlsx,html,pdf}
      reportgen estimate --model Llama-2-7B --workload full --gpus 8 --zero 3
    """


main.command_class = _OneValueCommand  # every command below refuses a second value of a one-value option


# ---------------------------------------------------------------------------------------------
# Catalogs

@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_input_errors
def models(as_json):
    """List the model catalog: parameters (total and active), layers, widths, heads, experts.

    \b
    Example:
      reportgen models
      reportgen models --json | jq '.[0]'
    """
    catalog = load_models()
    rows = [_model_json(m.spec, model_row(m.spec)) for m in catalog.values()]
    click.echo(json.dumps(rows, indent=2) if as_json else models_table(rows))


def _model_json(spec, row):
    return {"name": spec.name, "model_type": spec.model_type, "total_params": int(row["total_params"]),
            "active_params_per_token": int(row["active_params"]), "num_hidden_layers": spec.num_hidden_layers,
            "num_attention_layers": int(row["num_attention_layers"]), "num_mamba_layers": spec.num_mamba_layers,
            "hidden_size": spec.hidden_size, "num_attention_heads": spec.num_attention_heads,
            "num_key_value_heads": spec.num_key_value_heads, "num_experts": spec.num_experts,
            "num_experts_per_tok": spec.num_experts_per_tok, "vocab_size": spec.vocab_size,
            "max_positions": spec.max_positions, "source": spec.source}


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@handle_input_errors
def gpus(as_json):
    """List the GPU catalog: memory (nvidia-smi MiB and bytes), bf16 TFLOPS, bandwidth, prices.

    \b
    Example:
      reportgen gpus
    """
    catalog = load_gpus()
    rows = [{**g.__dict__, "memory_bytes": g.memory_bytes} for g in catalog.values()]
    click.echo(json.dumps(rows, indent=2) if as_json else gpus_table(rows))


@main.command("import-config")
@click.argument("config", type=click.Path(path_type=Path))
@click.option("--name", help="Catalog name (default: from the config or the file name).")
@click.option("-o", "--output", type=click.Path(),
              help="The file to write the catalog entry to (default: presets/models/<slug>.json).")
@click.option("--force", is_flag=True, help="Replace an existing file (a bundled catalog entry too).")
@handle_input_errors
def import_config(config, name, output, force):
    """Add a Hugging Face config.json to the model catalog and print its parameter count.

    \b
    Example:
      reportgen import-config ~/models/my-llama/config.json --name My-Llama-8B
    """
    if name is not None:
        check_name(name, "a model name", source=None, key_path="--name")
    spec, config_fields = read_config_file(config, name)
    if output is not None and output.endswith(("/", os.sep)):  # Path() would drop the slash and write a file DIR
        raise InputError("names a folder (it ends in /): give the file to write, such as "
                         f"{output}{slug(spec.name)}.json", source=output)
    output = import_target(spec, output and Path(output), force=force)
    entry = catalog_entry(config_fields, spec.name, str(config))
    with _committing() as staging:
        staging.stage([(output, lambda tmp: tmp.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8"))])
        staging.commit()
        click.echo(f"{spec.name}: {format_count(model_row(spec)['total_params'])} parameters -> "
                   f"{click.format_filename(output)}")


# ---------------------------------------------------------------------------------------------
# Scenario options, declared once

def _model_options(fn):
    fn = click.option("--config", "config_path", type=click.Path(path_type=Path),
                      help="A Hugging Face config.json instead of a catalog model.")(fn)
    fn = click.option("--model", help="Catalog model name (see `reportgen models`).")(fn)
    return fn


def _default_text(i: Input) -> str:
    """'default 4096; full, lora, qlora, dpo: 0; ppo, grpo: 512' — the input's default, then the workloads
    that set another."""
    others: dict[Any, list[str]] = {}
    for workload, values in WORKLOAD_DEFAULTS.items():
        if i.name in values:
            others.setdefault(values[i.name], []).append(workload)
    text = f"default {i.default}" if i.default is not None else "default: the actor's model"
    return "; ".join([text] + [f"{', '.join(ws)}: {v}" for v, ws in others.items()])


class WholeNumber(click.ParamType):
    """A whole number as people write counts of tokens: 4096, 1e9 or 32k (k = 1,024), within a range."""
    name = "integer"

    def __init__(self, lo: int, hi: int):
        self.lo, self.hi = lo, hi

    def convert(self, value, param, ctx):
        try:
            number = value if isinstance(value, int) else parse_count(value)
        except (ValueError, OverflowError):
            self.fail(f"{value!r} is not a whole number (e.g. 4096, 1e9, 32k)", param, ctx)
        if not self.lo <= number <= self.hi:
            self.fail(f"{value} is not in the range {self.lo}<=x<={self.hi}.", param, ctx)  # as given: 32k, 1e9
        return number


class Duration(click.ParamType):
    """A duration with its unit (7d, 36h, 90m), checked as a preset's goal checks it; the text is kept."""
    name = "duration"

    def convert(self, value, param, ctx):
        try:
            parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return value


class Decimal(click.FloatRange):
    """A number within a range; a refusal names it as typed (1e999, not inf)."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        try:
            return super().convert(number, param, ctx)
        except click.BadParameter:
            self.fail(f"{value} is not in the range {self._describe_range()}.", param, ctx)


def _input_option(i: Input, *, rlhf: bool = False):
    kind = (click.Choice(i.user_choices) if i.choices else Decimal(*i.limits) if i.decimal
            else WholeNumber(*i.limits) if i.is_int else None)
    help_text = f"{'RLHF: ' if rlhf else ''}{i.help} ({_default_text(i)})."
    return click.option(i.option, i.name, type=kind, default=None, help=help_text)


class _AssumptionValue(click.FloatRange):
    """A number checked by its assumption exactly as a preset's (Assumption.check refuses NaN, which
    passes FloatRange's comparisons); FloatRange only shows the range in the help."""

    def __init__(self, assumption: Assumption):
        super().__init__(*assumption.limits)
        self.assumption = assumption

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        try:
            return self.assumption.check(number, source=None, key_path=None)
        except InputError as exc:  # it names the number read; the user typed `value` (1e999, not inf)
            self.fail(exc.message.replace(f"got {number}", f"got {value}"), param, ctx)


def _assumption_option(a: Assumption):
    return click.option(a.option, a.name, type=_AssumptionValue(a), default=None,
                        help=f"{a.label}: {a.help} (default {a.default:g}).")


def _role_pairs(text: str | None, option: str, count: bool) -> dict[str, int | str] | None:
    """'reference=1,reward=1' -> {'reference': 1, 'reward': 1}; with count=False the values stay text
    (GPU types). Checked by the RLHF input table."""
    if not text:
        return None
    out: dict[str, int | str] = {}
    for part in text.split(","):
        role, sep, value = (x.strip() for x in part.partition("="))
        if not sep or not value or (count and not value.lstrip("-").isdigit()):
            raise click.BadParameter(f"expected role={'count' if count else 'GPU'} pairs separated by commas, "
                                     f"got {part!r}", param_hint=option)
        out[role] = int(value) if count else value
    return out


def _scenario_options(fn):
    """The options of `estimate` and `plan`: generated from the input tables (inputs.py, terms.ASSUMPTIONS)."""
    opts = [click.option("--workload", type=click.Choice(WORKLOAD_TYPES), default="inference", show_default=True)]
    opts += [_input_option(i) for i in INPUTS if i.option]
    opts += [_input_option(i, rlhf=True) for i in RLHF_INPUTS if i.option]
    opts += [click.option("--role-gpus", "role_gpus", metavar="ROLE=N,...",
                          help="RLHF, separate pools: GPUs of each role, e.g. reference=1,reward=1; colocated "
                               "trainers: the engines' apart, rollout=N."),
             click.option("--role-gpu-types", "role_gpu_types", metavar="ROLE=GPU,...",
                          help="RLHF, separate pools: GPU type of each role, e.g. reward=L40S,reference=L40S "
                               "(default: the actor's --gpu; plan: the searched type where the pool costs least); "
                               "colocated trainers: the engines' apart, rollout=L40S.")]
    opts += [_assumption_option(a) for a in ASSUMPTIONS if a.option]
    for opt in reversed(opts):
        fn = opt(fn)
    return _model_options(fn)


def _option_name(name: str) -> str:
    spec = INPUT_BY_NAME.get(name) or RLHF_INPUT_BY_NAME.get(name)
    return (spec.option if spec and spec.option else f"--{name.replace('_', '-')}")


def _given_options() -> set[str]:
    """The parameters the user typed (not defaults): options that do not apply are refused."""
    context = click.get_current_context()
    return {p.name for p in context.command.params
            if context.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE}


def _workload_words(workload: str, actor: str) -> str:
    words = {"inference": "inference", "full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}
    if workload in words:
        return words[workload]
    return f"{workload.upper()} with a {words[actor]} actor"


def _estimator_for(model, config_path, options):
    """The estimator and the model name to use; a --config model joins the catalog for this run."""
    if bool(model) == bool(config_path):
        raise click.UsageError("give exactly one of --model or --config")
    from .model.estimate import Estimator
    catalog = load_models()
    assumptions = {a.name: options.pop(a.name) for a in ASSUMPTIONS if a.option and options.get(a.name) is not None}
    estimator = Estimator(catalog, load_gpus(), assumptions)
    if config_path:
        spec = load_config_file(config_path)
        return estimator.with_model(spec), spec.name
    return estimator, resolve_model(model, catalog, key_path="--model").name


def _check_placements_compared(o: dict, given: Iterable[str]) -> None:
    """--compare-placements needs the two placements it compares: PPO or GRPO with a rollout engine, no placement
    given."""
    workload = o["workload"]
    why = ("applies to PPO and GRPO (an RLHF group's rollout engine)" if workload not in ("ppo", "grpo") else
           "needs a rollout engine to place (--engine vllm or sglang)" if o.get("serving_engine") in (None, "hf-generate")
           else "and --rollout-placement both choose the placement: give one" if "rollout_placement" in given
           else "places the engine apart too, where --engine-sleep does not apply (an engine on GPUs of its own stays "
           "awake): give --rollout-placement actor instead" if "engine_sleep" in given
           else None)
    if why:
        raise click.UsageError(f"--compare-placements {why}")


def _scenario_from_options(estimator: Estimator, model: str, o: dict, layout_free: bool = False
                           ) -> Scenario | RlhfScenario:
    """The scenario the options describe. layout_free: without its layout inputs (plan.LAYOUT_INPUTS), which
    are then not checked as a layout: the plan lays the job out, keeping those given in every candidate."""
    from .model.estimate import make_scenario
    given = _given_options()
    actor = o.get("actor_workload") or RLHF_INPUT_BY_NAME["actor_workload"].default
    for i in INPUTS:
        if i.name in given and not applies(i, o["workload"], actor, {k: v for k, v in o.items() if v is not None}):
            raise click.UsageError(f"{i.option} does not apply to {_workload_words(o['workload'], actor)}: "
                                   "it would change nothing")
    for i in RLHF_INPUTS:
        if i.name in given and (unused := rlhf_setting_unused(i.name, o["workload"])):
            raise click.UsageError(f"{i.option} {unused}")
    values = {i.name: o[i.name] for i in INPUTS if i.option and o.get(i.name) is not None}
    values["model"] = model
    undecided = ()
    if layout_free:  # their values were checked by their options' types
        from .planning.plan import LAYOUT_INPUTS as undecided
        values = {k: v for k, v in values.items() if k not in undecided}
    rlhf = {i.name: o.get(i.name) for i in RLHF_INPUTS if i.option}
    rlhf["role_gpus"] = _role_pairs(o.get("role_gpus"), "--role-gpus", count=True)
    rlhf["role_gpu_types"] = _role_pairs(o.get("role_gpu_types"), "--role-gpu-types", count=False)
    scenario, reason = make_scenario(values, workload=o["workload"], rlhf=rlhf, estimator=estimator,
                                     key_path=_option_name, undecided=undecided)
    if reason:
        raise InputError(reason.text())
    return scenario


@main.command()
@_scenario_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the estimator's contract).")
@handle_input_errors
def estimate(model, config_path, as_json, **options):
    """Estimate per-GPU memory for one scenario: each term, the peak, and whether it fits.

    \b
    Example:
      reportgen estimate --model Llama-2-7B --workload full --gpus 8 --zero 3 --checkpointing full
      reportgen estimate --model Llama-3-8B --workload inference --batch 16 --prompt-len 8192 --json
      reportgen estimate --model Llama-2-7B --workload ppo --critic-model Qwen2.5-0.5B --gpus 8 --zero 3
    """
    from .model.estimate import RlhfScenario
    estimator, name = _estimator_for(model, config_path, options)
    scenario = _scenario_from_options(estimator, name, options)
    if isinstance(scenario, RlhfScenario):
        result = estimator.estimate_group(scenario)
        click.echo(json.dumps(result.to_json(), indent=2) if as_json else group_table(result, estimator.assumptions))
    else:
        result = estimator.estimate(scenario)
        click.echo(json.dumps(result.to_json(), indent=2) if as_json else estimate_table(result, estimator.assumptions))


@main.command()
@_scenario_options
@click.option("--gpu-type", "gpu_types", multiple=True,
              help="More GPU types to consider (repeatable; with --gpu, both count; default: every GPU type).")
@click.option("--within", type=Duration(), metavar="DURATION",
              help="Goal, training: finish --train-tokens (RLHF: --steps iterations) within this time (7d, 36h).")
@click.option("--steps", type=WholeNumber(1, 10**9), help="RLHF: iterations the run takes (with --within).")
@click.option("--prompts", type=WholeNumber(1, 10**12),
              help="RLHF: prompts the run trains on, instead of --steps (with --within and --prompts-per-iteration: "
                   "⌈prompts ÷ prompts per iteration⌉ iterations).")
@click.option("--users", type=WholeNumber(1, 1_000_000), help="Goal, serving: concurrent users (sequences at once).")
@click.option("--context", type=WholeNumber(1, 10_000_000),
              help="Goal, serving: tokens per user, prompt + generated (e.g. 32k = 32,768).")
@click.option("--min-tokens-per-s", type=Decimal(0, 1e6, min_open=True),
              help="Goal, serving: output tokens per second each user needs.")
@click.option("--max-ttft", type=Duration(), metavar="DURATION",
              help="Goal, serving: most time to a request's first token (500ms, 2s): its own prefill on the "
                   "layout, not waiting behind other prompts.")
@click.option("--datacenter-only", is_flag=True,
              help="Leave out GPU types not licensed for data-centre use (GeForce: its driver licence, §2.1.3).")
@click.option("--compare-placements", is_flag=True,
              help="RLHF with a rollout engine: plan the engine beside the actor and on GPUs of its own (with "
                   "--rollout-mode async, those generate ahead; beside the actor it cannot), and answer each GPU type "
                   "with the cheaper (the search twice).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@handle_input_errors
def plan(model, config_path, gpu_types, within, steps, prompts, users, context, min_tokens_per_s, max_ttft,
         datacenter_only, compare_placements, as_json, **options):
    """Per GPU type, the fewest GPUs and their layout that fit with the safety factor and meet a goal;
    ranked by purchase price and by hourly cost.

    The search tries tensor parallelism inside a node, ZeRO stages, expert parallelism (MoE) and, for
    training, pipeline parallelism, gradient checkpointing and CPU offload (host RAM checked per node);
    an option given on the command line (--tp, --pp, --zero, --ep, --checkpointing, --offload) is kept
    as given.

    \b
    Example:
      reportgen plan --model Llama-2-70B --workload full --checkpointing full
      reportgen plan --model Llama-3-8B --workload full --train-tokens 1e9 --within 7d
      reportgen plan --model Llama-3.1-8B --users 50 --context 32k --gen-len 512 --min-tokens-per-s 20
      reportgen plan --model Llama-3.1-70B --engine vllm --users 32 --context 8k --max-ttft 1s
    """
    from .model.estimate import RlhfScenario
    from .planning.goals import Goal
    from .planning.plan import plan as make_plan
    from .planning.plan import best_of, plan_run
    from .planning.plan import LAYOUT_INPUTS
    given = _given_options()
    if "gpu" in given:
        gpu_types = (options["gpu"],) + tuple(gpu_types)
    serving = options["workload"] == "inference"
    for option, name, for_this_kind in (("--within", "within", not serving), ("--users", "users", serving),
                                        ("--context", "context", serving),
                                        ("--min-tokens-per-s", "min_tokens_per_s", serving),
                                        ("--max-ttft", "max_ttft", serving)):
        if name in given and not for_this_kind:
            raise click.UsageError(f"{option} is a goal of {'training' if serving else 'serving (inference)'}; "
                                   f"it does not apply to {_workload_words(options['workload'], options.get('actor_workload') or 'full')}")
    rlhf = options["workload"] in RLHF_ALGORITHMS
    if "steps" in given and "prompts" in given:
        raise click.UsageError("--steps and --prompts both give the run's length: give one")
    if ("steps" in given or "prompts" in given) != (rlhf and "within" in given):
        raise click.UsageError("--steps or --prompts (an RLHF run's length) and --within go together, for RLHF only")
    if prompts:
        if "prompts_per_iteration" not in given:
            raise click.UsageError("--prompts needs --prompts-per-iteration: the run's iterations are the prompts "
                                   "divided by it")
        steps = -(-prompts // options["prompts_per_iteration"])
    goal = Goal.from_mapping({"within": None if rlhf else within, "users": users, "context": context,
                              "min_tokens_per_s": min_tokens_per_s, "max_ttft": max_ttft}, source=None,
                             key_path="goal")
    if compare_placements:
        _check_placements_compared(options, given)
    estimator, name = _estimator_for(model, config_path, options)
    layout = {k: options[k] for k in LAYOUT_INPUTS if k in given}
    scenarios = []
    for placement in (ROLLOUT_PLACEMENTS if compare_placements else (None,)):
        # beside the actor the engine sleeps while the actor trains: an async rollout is compared with it in turn
        placed = {"rollout_placement": placement} | ({"rollout_mode": "sync"} if placement == "actor" else {})
        scenario = _scenario_from_options(estimator, name, options if placement is None else options | placed,
                                          layout_free=True)
        if layout:
            scenario = (scenario.relayout(**layout) if isinstance(scenario, RlhfScenario)
                        else scenario.with_inputs(**layout))
        scenarios.append(scenario)
    for g in gpu_types:
        INPUT_BY_NAME["gpu"].check(g, gpus=estimator.gpus, source=None, key_path="--gpu-type")
    candidates = gpu_types or list(estimator.gpus)
    if datacenter_only:
        candidates = [g for g in candidates if estimator.gpus[g].datacenter]
        if not candidates:
            raise click.UsageError("--datacenter-only leaves no GPU type: every one given is a GeForce card")
    if steps:  # an RLHF run of steps iterations within a time: the fewest GPUs that end it in time
        found = best_of([replace(plan_run(estimator, scenario, candidates, steps, parse_duration(within), goal,
                                          fixed=tuple(given)), prompts=prompts) for scenario in scenarios])
    else:
        plans = []
        for scenario in scenarios:  # a placement compared searches, per GPU type, what could cost less than the first
            bound = {o.gpu: float(o.estimate["purchase_usd"]) for o in plans[0].options} if plans else None
            plans.append(make_plan(estimator, scenario, candidates, goal, fixed=tuple(given), cheaper_than=bound))
        found = best_of(plans)
    if not found.options and found.misses and all(m.nearest is None and m.skipped for m in found.misses):
        # the options given rule out every layout on every GPU type: an input error, as estimate's
        texts = list(dict.fromkeys(r.text() for m in found.misses for r in m.skipped))
        shared = [t for t in texts if all(t in {r.text() for r in m.skipped} for m in found.misses)]
        raise InputError("no layout can run on " + ("any GPU type" if len(found.misses) > 1 else found.misses[0].gpu)
                         + ": " + "; ".join(shared or texts))
    # an RLHF plan states how its step times compare with published runs (they set no coefficient)
    accuracy = None
    if isinstance(scenario, RlhfScenario):  # the validation cases are imported only for it
        from .report.validation import rlhf_step_accuracy
        accuracy = rlhf_step_accuracy(estimator)
    click.echo(json.dumps(found.to_json() | ({"step_time_accuracy": accuracy} if accuracy else {}), indent=2)
               if as_json else plan_table(found, estimator.assumptions, accuracy))


@main.command()
@_model_options
@click.option("--lora-rank", type=click.IntRange(1, 65536), help="LoRA rank r (counts trainable adapters).")
@click.option("--lora-targets", default="q_proj,v_proj", show_default=True,
              help="PEFT target modules, comma-separated, or all-linear; qkv_proj is a fused query-key-value layer and "
                   "o_proj the attention's output projection, whatever the architecture calls them (q_proj,v_proj on "
                   "GPT-NeoX: its query_key_value).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: params.total, active_per_token, trainable, by_component.")
@handle_input_errors
def params(model, config_path, lora_rank, lora_targets, as_json):
    """Exact parameter counts of a model: total, per component, active per token, LoRA trainable.

    \b
    Example:
      reportgen params --model Llama-2-7B --lora-rank 8 --lora-targets q_proj,v_proj
      reportgen params --config config.json --json
    """
    if bool(model) == bool(config_path):
        raise click.UsageError("give exactly one of --model or --config")
    if "lora_targets" in _given_options() and not lora_rank:
        raise click.UsageError("--lora-targets changes nothing without --lora-rank")
    targets = _lora_targets(lora_targets)
    spec = load_config_file(config_path) if config_path else resolve_model(model, load_models(), key_path="--model")
    row = model_row(spec)
    trainable = int(row["total_params"])
    if lora_rank:
        try:
            trainable = lora_trainable(row, lora_rank, targets, model=spec.name)
        except InputError as exc:
            raise InputError(exc.message, key_path="--lora-targets") from None
    result = {"model": spec.name, "params": {"total": int(row["total_params"]),
                                             "active_per_token": int(row["active_params"]),
                                             "trainable": trainable, "by_component": params_by_component(row)}}
    if as_json:
        click.echo(json.dumps(result, indent=2))
        return
    p = result["params"]
    click.echo(f"{spec.name} ({spec.model_type})")
    click.echo(f"  total parameters      {format_count(p['total']):>20}")
    click.echo(f"  active per token      {format_count(p['active_per_token']):>20}")
    if lora_rank:
        click.echo(f"  LoRA trainable (r={lora_rank}) {format_count(trainable):>17}  "
                   f"({trainable / p['total'] * 100:.4f}% of total)")
    for k, v in p["by_component"].items():
        click.echo(f"    {k:<19} {format_count(v):>20}")


def _lora_targets(text: str) -> tuple[str, ...]:
    """'q_proj,v_proj' -> ('q_proj', 'v_proj'): known module names, each once, at least one."""
    targets = [t.strip() for t in text.split(",")]
    known = LORA_MODULES + ("all-linear",)
    for i, t in enumerate(targets):
        if not t:
            raise InputError(f"expected module names separated by commas (such as q_proj,v_proj or all-linear), "
                             f"got {text!r}", key_path="--lora-targets")
        if t not in known:
            raise unknown_name("LoRA target", t, known, key_path="--lora-targets")
        if targets.index(t) != i:
            raise InputError(f"{t!r} is listed twice", key_path="--lora-targets")
    if "all-linear" in targets and len(targets) > 1:
        raise InputError("all-linear already names every linear layer: give it alone", key_path="--lora-targets")
    return tuple(targets)


@main.command()
@click.option("--measured", type=click.Path(path_type=Path), default=None,
              help="A measured.json-style file (default: the validation sets bundled in presets/validation/).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON rows and the summary.")
@handle_input_errors
def validate(measured, as_json):
    """Compare the estimator's allocated peak with peaks measured on real transformers models.

    \b
    Example:
      reportgen validate
      reportgen validate --measured my-measured-peaks.json
    """
    from .pipeline import validation_rows
    from .model.estimate import Estimator
    from .report.validation import summary, validate as run_validation
    estimator = Estimator(load_models(), load_gpus())
    rows = run_validation(measured, estimator) if measured else validation_rows(estimator)
    groups = summary(rows)
    if as_json:
        click.echo(json.dumps({"rows": [asdict(r) | {"error": r.error} for r in rows], "summary": groups}, indent=2))
    else:
        click.echo(validation_table(rows, groups))


# ---------------------------------------------------------------------------------------------
# Presets and the build

@main.command()
@click.argument("presets", nargs=-1)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=Path("out"),
              show_default=True, help="Output folder.")
@click.option("--format", "formats", default=",".join(("json", "xlsx", "html", "pdf")), show_default=True,
              help="Comma-separated formats: json, xlsx, html, pdf.")
@click.option("--lang", type=click.Choice(["en", "zh"]), default="en", show_default=True,
              help="Language of the HTML/PDF report.")
@click.option("--pdf-appendix", is_flag=True,
              help="Put the full appendices in the PDF too: the sensitivity curves, every scenario and "
                   "skipped combination, the inputs, every term's formula and the lookup tables, the notes' "
                   "figure tables and every validation row (by default the PDF is what a meeting reads and "
                   "says where these are: the HTML, the workbook and the JSON have them).")
@click.option("--live-rows", default=str(LIVE_ROWS), show_default=True, metavar="N|all",
              help="Workbook: Scenarios rows with live formulas (the Plan's picks, then the first rows); a bigger "
                   "sweep's other rows hold their values (grey italics; the Guide sheet says so). all: every row "
                   "(LibreOffice then takes about a minute to open a 10,000-row book).")
@click.option("-q", "--quiet", is_flag=True, help="No progress or summary output.")
@handle_input_errors
def build(presets, out_dir, formats, lang, pdf_appendix, live_rows, quiet):
    """Build every output of one or more presets (default: the bundled `default`).

    PRESET is a bundled preset's name (see `reportgen presets`) or a YAML file. Each writes
    DIR/<preset-name>.<format>. The files of all presets replace the earlier ones together, once
    every preset has rendered: a failed or interrupted build changes no output.

    \b
    Example:
      reportgen build
      reportgen build inference-serving ppo-rlhf --format json,xlsx -o plans/
      SOURCE_DATE_EPOCH=0 reportgen build my-sweep.yaml --lang zh
      reportgen build --format pdf --pdf-appendix
    """
    from .pipeline import WRITERS, load, make_report, timestamp, write_outputs
    chosen = [f.strip() for f in formats.split(",") if f.strip()]
    for f in chosen:
        if f not in WRITERS:
            raise click.BadParameter(f"unknown format {f!r} (known: {', '.join(WRITERS)})", param_hint="--format")
    if not chosen:
        raise click.BadParameter("give at least one format", param_hint="--format")
    options = {"xlsx": {"live_rows": _live_rows(live_rows)}, **({"pdf": {"appendix": True}} if pdf_appendix else {})}
    generated_at = timestamp()
    progress = _progress(quiet)
    # One commit for all presets, after every one has rendered: a bad preset changes nothing.
    notices = []  # said once the files are written
    with _committing() as staging:
        for name in presets or ("default",):
            loaded = load(name, chosen)
            progress(f"{loaded.preset.name}: {len(loaded.expansion.scenarios)} scenarios, "
                     f"{len(loaded.expansion.skipped)} skipped")
            report = make_report(loaded, generated_at)
            paths = write_outputs(report, out_dir, chosen, lang, progress, staging, options)
            notices += _value_rows_notice(report, paths, options["xlsx"]["live_rows"]) if "xlsx" in chosen else []
        written = staging.commit()
    if not quiet:
        _print_written(written)
        for line in notices:
            click.echo(line, err=True)


def _value_rows_notice(report, paths, live_rows: int | None) -> list[str]:
    """A line for a workbook whose later Scenarios rows hold values (a sweep past its live rows)."""
    from .writers.xlsx import layout, scenario_count
    rows = scenario_count(report)
    values = layout.value_row_count(rows, live_rows)
    if not values:
        return []
    (book,) = [p for p in paths if p.suffix == ".xlsx"]
    return [f"{click.format_filename(book)}: {values:,} of its {rows:,} Scenarios rows hold values, not formulas (the "
            f"Plan's picks and the first rows are live; --live-rows all: every row live, and LibreOffice slower to open "
            f"it)"]


def _live_rows(text: str) -> int | None:
    """--live-rows: a whole number of rows (0 or more), or all (None)."""
    if text.strip().lower() == "all":
        return None
    if not text.strip().isascii() or not text.strip().isdigit():
        raise click.BadParameter(f"expected a whole number of rows or all, got {text!r}", param_hint="--live-rows")
    return int(text)


def _print_written(paths) -> None:
    """The outputs a build wrote, one a line. They are committed: a stdout that cannot take the lines
    (a full disk, a closed pipe) is said on stderr, and the build still succeeds (exit status 0)."""
    try:
        for path in paths:
            click.echo(click.format_filename(path))
    except OSError as exc:
        with contextlib.suppress(OSError, ValueError):  # else the lines still buffered fail again at exit
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        click.echo(f"outputs written; could not print the summary: {exc.strerror}", err=True)


def _progress(quiet: bool):
    """Progress lines on stderr when it is a terminal (and not --quiet)."""
    if quiet or not sys.stderr.isatty():
        return lambda _msg: None
    return lambda msg: click.echo(f"  {msg}", err=True)


@main.command()
@click.argument("preset")
@handle_input_errors
def check(preset):
    """Validate a preset: print its scenario count and the skipped combinations with reasons.

    \b
    Example:
      reportgen check presets/default.yaml
      reportgen check inference-serving
    """
    from collections import Counter
    from .pipeline import load
    loaded = load(preset)
    exp = loaded.expansion
    jobs = f", {len(exp.purchase.jobs)} purchase jobs (planned by build)" if exp.purchase else ""
    click.echo(f"{loaded.preset.source}: OK — {len(exp.scenarios)} scenarios, {len(exp.skipped)} skipped{jobs}")
    for reason, count in Counter(s.reason_text for s in exp.skipped).most_common():
        click.echo(f"  skipped {count:>4} × {reason}")
    for where, gpus, count in exp.left_out:
        what = f"{count:,} combinations of {where}" if count else where
        click.echo(f"  left out by datacenter_only (not licensed for data-centre use): {', '.join(gpus)} ({what})")


@main.command("presets")
@handle_input_errors
def list_presets():
    """List the bundled presets with their titles.

    \b
    Example:
      reportgen presets
    """
    from .scenarios.presets import bundled_presets, load_preset
    for name, path in bundled_presets().items():
        click.echo(f"{name:<20} {load_preset(name).title}")


if __name__ == "__main__":
    main()
