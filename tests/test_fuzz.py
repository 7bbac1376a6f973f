"""Fuzzing every way in: presets, configs, measured files, options, special files, output folders,
numbers, long lines, the terminal, names, read-only targets and memory limits.

A seeded generator (FUZZ_SEED, default 20; FUZZ_SCALE multiplies the case counts) makes the cases
of each category of issues #20 and #36; every case runs as `reportgen …` in a forked child (or, where
the interpreter's start-up matters, a new one) with a timeout, a CPU limit and a memory cap
(tests/guarded.py) and must end with status 0, one `Error:` line and status 1, or a usage error with
status 2: no traceback, no hang, no memory past the cap, no run past a minute of CPU. Cases that
write also check that a failed command left earlier files byte-identical and no temporary behind,
that a build's outputs are all old or all new, and that the catalog still loads after import-config.

CI runs about 900 cases (scale 1). The full run, at least 20,000 cases with a 60 s CPU limit and a
120 s wall-clock limit per case, and a count of what it found by category:

    nice -n 19 python3 scripts/fuzz_full.py           # FUZZ_SCALE=24; writes fuzz-report.jsonl
"""
from __future__ import annotations

import collections
import copy
import errno
import itertools
import json
import math
import os
import random
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml

import guarded
from reportgen.model import catalog

SEED = int(os.environ.get("FUZZ_SEED", "20"))
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
# The full run's longest category can be shared by processes: FUZZ_SHARD="k/n" runs the cases whose number is k
# modulo n, every case still drawn in order, so that the n shards together run exactly the unsharded cases.
SHARD, SHARDS = (int(x) for x in os.environ.get("FUZZ_SHARD", "0/1").split("/"))
# per case; the slowest legitimate case (a workbook build) takes about 2 s. The full run shares the
# machine for an hour: there a case is stopped by its CPU limit (guarded.CPU_LIMIT_S) first.
TIMEOUT_S = 20.0 if SCALE <= 1 else 120.0
REPORT = os.environ.get("FUZZ_REPORT")  # a file to which each category appends its counts (JSON lines)
REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "presets" / "models"
CONFIGS = {name: json.loads((MODELS / f"{name}.json").read_text())["config"]
           for name in ("llama-2-7b", "mixtral-8x7b", "deepseek-v2-lite", "qwen1.5-moe-a2.7b", "gpt-2", "falcon-7b",
                        "opt-6.7b", "bloom-560m", "generic-7b", "qwen3-30b-a3b", "gemma-2-9b", "phi-3-mini-4k-instruct")}
PRESET = {
    "title": "fuzz",
    "description": "base of the mutations",
    "assumptions": {"safety_factor": 1.2, "kv_block_tokens": 16},
    "prices": {"L4": {"price_per_hour_usd": 0.8}},
    "matrices": [
        {"name": "m", "model": ["Llama-3.2-1B", "Qwen2.5-0.5B"],
         "workload": [{"type": "full", "seq_len": 512}, {"type": "inference", "prompt_len": 128, "gen_len": 16}],
         "zero_stage": [0, 2], "num_gpus": [1, 2], "gpu": ["A100-80GB", "L4"],
         "exclude": [{"workload": "inference", "zero_stage": 2}]},
        {"name": "rl", "model": "Qwen2.5-0.5B", "workload": {"type": "ppo", "critic_model": "Qwen2.5-0.5B"},
         "num_gpus": 2, "zero_stage": 3},
    ],
    "scenarios": [{"name": "extra", "model": "Qwen2.5-0.5B", "workload": "lora", "gpu": "L4"}],
}
NAMES = ("model", "workload", "gpu", "zero_stage", "num_gpus", "tp_size", "batch_size", "seq_len", "prompt_len",
         "gen_len", "precision", "weight_dtype", "kv_dtype", "lora_rank", "lora_targets", "exclude", "type",
         "placement", "role_gpus", "group_size", "critic_model", "name", "title", "headline", "assumptions",
         "safety_factor", "kv_block_tokens", "cuda_context_mib", "matrices", "scenarios", "prices", "offload")
STRINGS = ("", " ", "Llama-2-7B", "llama-2-7b", "L4", "A100-80G", "full", "ppo", "num_gpus", "none", "all-linear",
           "bf16", "int4", "\ud800", "a\udcffb", "\ud83d\ude80", "🚀", "\x00", "\x1b[31m", "\u202e", "=1+1", "<b>&amp;",
           "../../etc/passwd", "${HOME}", "%s%n", "NaN", "1e309", "0x10", "٣", "１２")


class Findings:
    """Cases that broke the promise, with what to run to see it again, counted by kind: tracebacks,
    hangs (no answer in time, or past the CPU limit), mixed outputs, and other broken promises."""

    def __init__(self, category: str):
        self.category, self.items, self.cases, self.start = category, [], 0, time.monotonic()
        self.kinds: collections.Counter = collections.Counter()
        self.cpu_s = 0.0  # the most CPU one case took

    def check(self, outcome: guarded.Outcome, note: str = "") -> bool:
        self.cases += 1
        self.cpu_s = max(self.cpu_s, outcome.cpu_s)
        problem = outcome.problem()
        if problem:
            kind = ("hang" if outcome.timed_out or outcome.cpu_s > guarded.CPU_LIMIT_S else
                    "traceback" if outcome.traceback else "other")
            self.fail(f"reportgen {' '.join(a[:80] for a in outcome.args)} {note[:300]}: {problem[-1500:]}", kind)
        return problem is None

    def fail(self, text: str, kind: str = "other") -> None:
        self.kinds[kind] += 1
        self.items.append(text)

    def done(self) -> None:
        seconds = time.monotonic() - self.start
        print(f"\nfuzz {self.category}: {self.cases} cases in {seconds:.1f} s (seed {SEED}, memory cap "
              f"{guarded.MEMORY_CAP // 2**20} MiB above the parent, timeout {TIMEOUT_S:g} s, CPU limit "
              f"{guarded.CPU_LIMIT_S} s, most CPU of a case {self.cpu_s:.1f} s)")
        if REPORT:
            with open(REPORT, "a", encoding="utf-8") as report:
                report.write(json.dumps({"category": self.category, "cases": self.cases, "seconds": round(seconds, 1),
                                         "max_cpu_s": round(self.cpu_s, 2), "seed": SEED, "scale": SCALE,
                                         **{k: self.kinds[k] for k in ("traceback", "hang", "mixed", "other")},
                                         "first": self.items[:3]}, ensure_ascii=False) + "\n")
        assert not self.items, f"{len(self.items)} of {self.cases} cases failed:\n" + "\n\n".join(self.items[:5])


def _n(count: int) -> int:
    return max(1, int(count * SCALE))


def _run(args, **kw) -> guarded.Outcome:
    return guarded.run(args, timeout=TIMEOUT_S, **kw)


# ---------------------------------------------------------------------------------------------
# Generators

def _junk(rng: random.Random, depth: int = 0):
    kind = rng.randrange(14 if depth < 3 else 10)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -1, 1, 2, 3, 7, 2**31, 2**63, 10**18, 10**30, -10**20, int("9" * rng.randrange(20, 4300))])
    if kind == 3:
        return rng.choice([0.5, 1.5, -0.0, 1e308, -1e308, 1e-308, float("inf"), float("-inf"), float("nan"), 2.0])
    if kind in (4, 5, 6):
        return rng.choice(STRINGS)
    if kind == 7:
        return rng.choice(["x", "é", "\ud800", "a b"]) * rng.choice([1, 200, 33_000])
    if kind == 8:
        nested: object = rng.choice(STRINGS)
        for _ in range(rng.choice([5, 40, 70, 120])):  # deeper trees overflow the YAML dumper: test_fuzz_unbounded writes those as text
            nested = [nested]
        return nested
    if kind == 9:
        return rng.choice(NAMES)
    if kind in (10, 11):
        return [_junk(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice([*NAMES, 1, None, True]): _junk(rng, depth + 1) for _ in range(rng.randrange(3))}


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, prefix + (i,))


def _mutate(rng: random.Random, data):
    """One to three edits anywhere in the tree: replace, delete, add a key, empty or wrap a value."""
    data = copy.deepcopy(data)
    for _ in range(rng.randint(1, 3)):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        path = rng.choice(paths)
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        action = rng.randrange(6)
        if action == 0 and isinstance(parent, dict):
            del parent[key]
        elif action == 1 and isinstance(parent, dict):
            parent[rng.choice(NAMES)] = _junk(rng)
        elif action == 2:
            parent[key] = [] if rng.random() < 0.5 else [parent[key]]
        elif action == 3 and isinstance(parent[key], list) and parent[key]:
            parent[key].append(parent[key][0])
        else:
            parent[key] = _junk(rng)
    return data


def _dump_yaml(data) -> str:
    """YAML of any tree (lone surrogates come out as \\u escapes, which the reader turns back)."""
    return yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=10**9)


def _alias_bomb(rng: random.Random) -> str:
    """Anchors defined in a matrix description (a key reportgen does not read), each level `fan`
    aliases of the one before, the last used where reportgen reads a value."""
    fan, levels = rng.randint(2, 12), rng.randint(3, 9)
    anchors = [f"        l0: &l0 [{', '.join(['x'] * fan)}]"]
    anchors += [f"        l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fan)}]" for i in range(1, levels)]
    use = f"*l{levels - 1}"
    where = rng.randrange(4)
    return "\n".join([f"title: {use if where == 0 else 't'}", f"description: {use if where == 1 else 'd'}",
                      "matrices:", "  - name: m", f"    model: {use if where == 2 else 'Llama-3.2-1B'}",
                      f"    gpu: {use if where == 3 else 'L4'}", "    description:", *anchors]) + "\n"


# ---------------------------------------------------------------------------------------------
# Categories of issue #20

def test_fuzz_bad_input_gives_one_line(tmp_path):
    """Category 4 (tracebacks): mutated presets, configs, measured files and option values (this process's
    shard of them: FUZZ_SHARD)."""
    rng = random.Random(SEED)
    found = Findings("bad input" + (f" (shard {SHARD + 1} of {SHARDS})" if SHARDS > 1 else ""))
    cases = itertools.count()
    for i in range(_n(200)):
        preset = tmp_path / f"p{i % 7}.yaml"
        preset.write_text(_dump_yaml(_mutate(rng, PRESET)))
        if next(cases) % SHARDS == SHARD:
            found.check(_run(["check", preset]), preset.read_text()[:300])
    for i in range(_n(120)):
        name, config = rng.choice(list(CONFIGS.items()))
        mutated = _mutate(rng, {"c": config}).get("c")
        path = tmp_path / f"c{i % 7}.json"
        path.write_text(json.dumps(mutated) if isinstance(mutated, dict) or rng.random() < 0.1 else json.dumps(config))
        command = rng.choice([["params"], ["params", "--lora-rank", "8", "--lora-targets", "all-linear"],
                              ["estimate", "--workload", rng.choice(["inference", "full", "lora", "ppo"])],
                              ["plan", "--workload", "inference", "--gpu-type", "L4"]])
        if next(cases) % SHARDS == SHARD:
            found.check(_run([*command, "--config", path]), f"{name}: {path.read_text()[:300]}")
    measured = json.loads((REPO / "presets/validation/measured.json").read_text())
    for i in range(_n(40)):
        path = tmp_path / "measured.json"
        path.write_text(json.dumps(_mutate(rng, {**measured, "cases": measured["cases"][:2]})))
        if next(cases) % SHARDS == SHARD:
            found.check(_run(["validate", "--measured", path]))
    options = ["--batch", "--seq", "--prompt-len", "--gen-len", "--gpus", "--zero", "--tp", "--lora-rank",
               "--safety-factor", "--gpu", "--precision", "--model", "--critic-model", "--role-gpus", "--group-size"]
    for _ in range(_n(90)):
        value = str(rng.choice([*STRINGS, "nan", "inf", "-inf", "-0", "1e400", "9" * 5000, "3.5", "2"]))
        args = ["estimate", "--model", "Llama-2-7B", "--workload", rng.choice(["full", "ppo", "grpo"]),
                rng.choice(options), value]
        if next(cases) % SHARDS == SHARD:
            found.check(_run(args))
    found.done()


def test_fuzz_unbounded_input_is_refused_in_time_and_memory(tmp_path):
    """Category 3: alias bombs, deep nesting, huge sweeps and numbers, endless or blocking files."""
    rng = random.Random(SEED + 3)
    found = Findings("unbounded input")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.yaml"
    loop.symlink_to(loop)
    specials = ["/dev/zero", "/dev/urandom", "/dev/null", fifo, loop, tmp_path, tmp_path / "missing.yaml"]
    for i in range(_n(80)):
        kind = rng.randrange(6)
        path = tmp_path / f"u{i % 5}.yaml"
        if kind == 0:
            path.write_text(_alias_bomb(rng))
            found.check(_run(["check", path]), path.read_text())
        elif kind == 1:
            depth = rng.choice([60, 65, 200, 900, 5000])
            brackets = rng.choice([("[", "]"), ("{a: ", "}"), ("- ", "")])
            text = ("title: " + brackets[0] * depth + "1" + brackets[1] * depth if brackets[0] != "- " else
                    "".join("  " * d + "- \n" for d in range(depth)))
            path.write_text(text)
            found.check(_run(["check", path]))
        elif kind == 2:
            sizes = [rng.choice([1, 10, 100, 1000]) for _ in range(4)]
            data = {"title": "t", "matrices": [{"name": "m", "model": "Llama-3.2-1B", "workload": "full",
                                                "batch_size": list(range(1, sizes[0] + 1)),
                                                "seq_len": list(range(1, sizes[1] + 1)),
                                                "lora_rank": list(range(1, sizes[2] + 1)),
                                                "gen_len": list(range(sizes[3]))}]}
            path.write_text(yaml.safe_dump(data))
            outcome = _run(["check", path], env={"REPORTGEN_MAX_SCENARIOS": str(rng.choice([1, 5000, 200000]))})
            found.check(outcome)
        elif kind == 3:
            name, config = rng.choice(list(CONFIGS.items()))
            keys = [k for k, v in config.items() if isinstance(v, int) and not isinstance(v, bool)]
            config = {**config, rng.choice(keys): rng.choice([1e30, 10**300, 2**64, 1e308, 2**14 + 1, 2**24])}
            cfg = tmp_path / "big.json"
            cfg.write_text(json.dumps(config))
            found.check(_run([rng.choice(["params", "estimate", "plan"]), "--config", cfg]), name)
        elif kind == 4:
            target = rng.choice(specials)
            command = rng.choice([["check"], ["params", "--config"], ["estimate", "--config"],
                                  ["validate", "--measured"], ["import-config"], ["build", "-q", "-o", tmp_path / "o"]])
            found.check(_run([*command, target]))
        else:
            path.write_bytes(rng.randbytes(rng.choice([10, 5000])) if rng.random() < 0.5 else
                             b"\xef\xbb\xbf" + yaml.safe_dump(PRESET).encode() + b"#" * 5000)
            found.check(_run(["check", path], env={"REPORTGEN_MAX_FILE_BYTES": str(rng.choice([100, 10**6]))}))
    found.done()


def test_fuzz_silent_settings_are_refused(tmp_path):
    """Category 6: constructs that used to be dropped or overridden without a word."""
    rng = random.Random(SEED + 6)
    found = Findings("silently accepted")

    def variants(data):
        m = data["matrices"][0]
        w = m["workload"][1]
        axis = rng.choice(["batch_size", "prompt_len", "gen_len", "lora_rank", "gpu", "num_gpus"])
        return [
            lambda: w.__setitem__(rng.choice(["prompt_len", "gen_len", "batch_size"]), []),
            lambda: (m.__setitem__(axis, m.get(axis, [1])), w.__setitem__(axis, m[axis])),
            lambda: m["exclude"].append({"gpu": rng.choice(["A100-80G", "l4", "H100", "L4 "])}),
            lambda: m["exclude"].append({"zero_stage": rng.choice([True, "2", 2.5, None])}),
            lambda: m["exclude"].append({"num_gpus": rng.choice([8, 16])}),
            lambda: data.__setitem__("headline", _junk(rng)),
            lambda: data["scenarios"][0].update(workload={"type": "lora", "gpu": "L4"}),
        ]

    for i in range(_n(70)):
        data = copy.deepcopy(PRESET)
        change = rng.choice(variants(data))
        change()
        preset = tmp_path / f"s{i % 5}.yaml"
        preset.write_text(yaml.safe_dump(data, sort_keys=False))
        outcome = _run(["check", preset])
        if found.check(outcome) and outcome.status != 1:
            found.fail(f"accepted: {preset.read_text()[:600]}")
    found.done()


def _old_outputs(out: Path, name: str, formats) -> dict[str, bytes]:
    out.mkdir(parents=True, exist_ok=True)
    old = {}
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        if path.is_file() or not path.exists():
            path.write_bytes(f"previous {fmt}".encode())
            old[path.name] = path.read_bytes()
    return old


def test_fuzz_builds_replace_all_outputs_or_none(tmp_path):
    """Categories 2 and 5: obstructed targets, failing presets among good ones, temporaries left."""
    rng = random.Random(SEED + 2)
    found = Findings("partial replacement")
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump({"title": "good", "scenarios": [{"model": "Qwen2.5-0.5B", "gpu": "L4"}]}))
    for i in range(_n(36)):
        out = tmp_path / f"out{i}"
        formats = rng.choice([("json",), ("json",), ("json", "html"), ("json", "xlsx")])
        presets = [good]
        if rng.random() < 0.5:
            bad = tmp_path / f"bad{i}.yaml"
            bad.write_text(_dump_yaml(_mutate(rng, PRESET)))
            presets.insert(rng.randrange(2), bad)
        old = {}
        for p in presets:
            old.update(_old_outputs(out, p.stem, formats))
        if rng.random() < 0.4:
            victim = out / f"good.{rng.choice(formats)}"
            victim.unlink()
            del old[victim.name]
            obstruction = rng.randrange(3)
            if obstruction == 0:
                victim.mkdir()
            elif obstruction == 1:
                os.mkfifo(victim)
            else:
                victim.symlink_to(out / "elsewhere")
        outcome = _run(["build", *presets, "--format", ",".join(formats), "-o", out, "-q"],
                       env={"SOURCE_DATE_EPOCH": str(i)})
        if not found.check(outcome):
            continue
        now = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and not p.is_symlink()}
        if outcome.status == 0:
            stale = [n for n in old if now.get(n) == old[n]]
            if stale:
                found.fail(f"build succeeded but kept {stale}: {outcome.args}", "mixed")
        elif any(now.get(n) != old[n] for n in old):
            found.fail(f"failed build changed outputs ({outcome.stderr.strip()}): {outcome.args}", "mixed")
        left = [p.name for p in out.iterdir() if p.name.startswith(".")]
        if left:
            found.fail(f"temporaries left by {outcome.args}: {left}")
    found.done()


@pytest.fixture
def catalog_copy(tmp_path, monkeypatch):
    """The forked children import into a copy of the catalog, never into the checkout's."""
    data = tmp_path / "data"
    shutil.copytree(catalog.data_dir("presets"), data / "presets")
    monkeypatch.setattr(catalog, "data_dir", lambda name: data / name)
    return data / "presets" / "models"


def test_fuzz_import_config_destroys_nothing(tmp_path, catalog_copy):
    """Category 1: import-config with odd names, over special files, existing and bundled entries."""
    rng = random.Random(SEED + 1)
    found = Findings("data destroyed")
    files = tmp_path / "files"
    files.mkdir()
    (files / "existing.json").write_text("keep")
    (files / "folder").mkdir()
    os.mkfifo(files / "fifo")
    (files / "link").symlink_to(files / "existing.json")
    try:
        os.mknod(files / "null", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pass
    special = {p: os.lstat(p) for p in files.iterdir()}
    names = ["Llama 2 7B!", "LLAMA-2-7B", "llama-2-7b", "Qwen2.5-0.5B", "!!!", "", " ", "x" * 250, "a/b", "..",
             "caf\udce9", "New Model", "new-model", "NEW MODEL"]
    for i in range(_n(70)):
        config = tmp_path / "config.json"
        source = rng.choice(list(CONFIGS.values()))
        config.write_text(json.dumps(source if rng.random() < 0.7 else _mutate(rng, {"c": source}).get("c")))
        args = ["import-config", config]
        if rng.random() < 0.8:
            args += ["--name", rng.choice(names)]
        if rng.random() < 0.5:
            args += ["-o", rng.choice([*special, files / "new.json", catalog_copy / "llama-2-7b.json"])]
        force = rng.random() < 0.3
        if force:
            args.append("--force")
        before = {p.name: p.read_bytes() for p in catalog_copy.iterdir()}
        (files / "existing.json").write_text("keep")
        outcome = _run(args)
        if not found.check(outcome):
            continue
        for path, st in special.items():
            now = os.lstat(path)
            if stat.S_IFMT(now.st_mode) != stat.S_IFMT(st.st_mode) or (
                    stat.S_ISREG(st.st_mode) and not force and path.read_bytes() != b"keep"):
                found.fail(f"{path.name} changed by {outcome.args}")
        after = {p.name: p.read_bytes() for p in catalog_copy.iterdir()}
        changed = [n for n in before if after.get(n) != before[n]]
        if changed and not (force and outcome.status == 0):
            found.fail(f"catalog entries {changed} changed by {outcome.args} ({outcome.stderr.strip()})")
        try:
            catalog.load_models(catalog_copy)
        except Exception as exc:  # noqa: BLE001 - the finding
            found.fail(f"catalog unreadable after {outcome.args}: {exc}")
        (files / "new.json").unlink(missing_ok=True)
    found.done()


# ---------------------------------------------------------------------------------------------
# Categories of issue #36

from reportgen.model.inputs import INPUTS, RLHF_INPUTS  # noqa: E402
from reportgen.limits import NUMBER_CHARS  # noqa: E402
from reportgen.model.terms import ASSUMPTIONS  # noqa: E402

LIMIT_ENVS = ("REPORTGEN_MAX_FILE_BYTES", "REPORTGEN_MAX_NESTING", "REPORTGEN_MAX_YAML_VALUES",
              "REPORTGEN_MAX_YAML_EVENTS", "REPORTGEN_MAX_SCENARIOS", "REPORTGEN_MAX_EXCLUDE_CHECKS")
BUNDLED = {p.stem: yaml.safe_load(p.read_text()) for p in sorted((REPO / "presets").glob("*.yaml")) if p.stem != "gpus"}
# A preset that reads every limit (an exclude rule too)
EVERY_LIMIT = "title: t\nmatrices: [{name: m, model: Qwen2.5-0.5B, gpu: L4, batch_size: [1, 2], exclude: [{batch_size: 1}]}]\n"
TINY = "title: tiny\nscenarios: [{model: Qwen2.5-0.5B, workload: inference, gpu: L4}]\n"
DIGIT_COUNTS = (1, 19, 20, 300, 308, 309, 310, 400, 1000, 1099, 1100, 1101, 4300, 4301, 5000, 20_000)
TOO_LARGE = "is too large for any field"
OPTIONS = ([i.option for i in INPUTS + RLHF_INPUTS if i.option and not i.choices and (i.is_int or i.decimal)]
           + [a.option for a in ASSUMPTIONS if a.option])
# Junk for the commit's old test-only variable: no setting may change how a commit runs.
DELAYS = ("abc", "nan", "-1", "inf", "1e308", "0.01", "")


def _number_literal(rng: random.Random, *, yaml_radices: bool = True) -> tuple[str, bool | None]:
    """A number literal (YAML 1.1's radices, or JSON's decimal ones) and whether it is too large for any
    field: True (beyond a float, or over NUMBER_CHARS characters), False, or None (a float that may
    overflow to infinity, which the field refuses as any other value; or too close to tell)."""
    n = rng.choice(DIGIT_COUNTS)
    radices = (["decimal", "hex", "octal", "binary", "base 60", "underscores", "float", "exponent", "base-60 float"]
               if yaml_radices else ["decimal", "float", "exponent"])
    radix = rng.choice(radices)
    sign = rng.choice(["", "", "-", "+" if yaml_radices else ""])

    def digits(alphabet: str, count: int) -> str:
        return rng.choice(alphabet[1:]) + "".join(rng.choice(alphabet) for _ in range(count - 1))

    base, body = {"decimal": (10, lambda: digits("0123456789", n)), "hex": (16, lambda: "0x" + digits("0123456789abcdef", n)),
                  "octal": (8, lambda: "0" + digits("01234567", n)), "binary": (2, lambda: "0b" + digits("01", n)),
                  "underscores": (10, lambda: "_".join(digits("0123456789", 3) for _ in range(max(1, n // 3))))
                  }.get(radix, (None, None))
    if base:
        text = sign + body()
        count = n if radix != "underscores" else 3 * max(1, n // 3)  # digits, the first not 0
        bits_low, bits_high = (count - 1) * math.log2(base), count * math.log2(base)
        too_large = True if bits_low > 1025 else False if bits_high < 1023 else None
    elif radix in ("base 60", "base-60 float"):
        parts = max(1, n // 3)
        text = sign + str(rng.randint(1, 59)) + "".join(f":{rng.randint(0, 59):02d}" for _ in range(parts))
        if radix == "base-60 float":
            text += "." + "5" * rng.choice([1, 3])
        too_large = True if parts >= 174 else (False if parts < 170 and radix == "base 60" else None)
    elif radix == "float":
        text, too_large = sign + digits("0123456789", n) + ".5", None
    else:
        text, too_large = sign + "1.5e" + ("+" if yaml_radices else "") + str(rng.choice([300, 308, 309, 400, 10**6])), None
    if len(text) > NUMBER_CHARS:
        too_large = True
    return text, too_large


def _numeric_paths(node) -> list[tuple]:
    return [p for p in _paths(node) if p and isinstance(_at(node, p), (int, float)) and not isinstance(_at(node, p), bool)]


def _at(node, path):
    for key in path:
        node = node[key]
    return node


def _key_path(path: tuple) -> str:
    """('matrices', 0, 'batch_size', 1) -> 'matrices[0].batch_size[1]', as error lines write it."""
    out = ""
    for key in path:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def _spliced(data, path: tuple, literal: str, dump) -> str:
    """The file `dump` writes of `data` with the number at `path` written as `literal`, unquoted."""
    data = copy.deepcopy(data)
    parent = _at(data, path[:-1])
    parent[path[-1]] = "NUMBER_HERE"
    text = dump(data)
    assert text.count("NUMBER_HERE") == 1
    return text.replace("'NUMBER_HERE'", literal).replace('"NUMBER_HERE"', literal).replace("NUMBER_HERE", literal)


def _expect_refused(found: Findings, outcome: guarded.Outcome, too_large: bool | None, where: str) -> None:
    """A number too large for any field is refused, naming where it is."""
    if too_large and outcome.problem() is None and (outcome.status == 0 or where not in outcome.stderr):
        found.fail(f"{outcome.args}: a number too large for any field at {where!r} gave status {outcome.status}: "
                   f"{outcome.stderr.strip()[:500]}")


def test_fuzz_huge_numbers_in_every_field(tmp_path):
    """Huge integers in every radix for every numeric field of presets, configs, CLI options and limits."""
    rng = random.Random(SEED + 36)
    found = Findings("huge numbers")
    every_assumption = {a.name: a.default for a in ASSUMPTIONS}
    for i in range(_n(50)):  # presets: the bundled ones and PRESET, with every assumption set
        name, data = rng.choice([*BUNDLED.items(), ("fuzz", PRESET)])
        data = {**data, "assumptions": {**every_assumption, **(data.get("assumptions") or {})}}
        path = rng.choice(_numeric_paths(data))
        literal, too_large = _number_literal(rng)
        preset = tmp_path / f"n{i % 5}.yaml"
        preset.write_text(_spliced(data, path, literal, _dump_yaml))
        outcome = _run(["check", preset])
        if found.check(outcome, f"{name}: {_key_path(path)} = {literal[:60]}"):
            _expect_refused(found, outcome, too_large, f"{preset}: {_key_path(path)}: ")
    for i in range(_n(40)):  # configs: every numeric field, as JSON writes numbers
        name, config = rng.choice(list(CONFIGS.items()))
        path = rng.choice(_numeric_paths(config))
        literal, too_large = _number_literal(rng, yaml_radices=False)
        cfg = tmp_path / f"c{i % 5}.json"
        cfg.write_text(_spliced(config, path, literal, json.dumps))
        command = rng.choice([["params"], ["estimate", "--workload", rng.choice(["inference", "full"])],
                              ["plan", "--workload", "inference", "--gpu-type", "L4"]])
        outcome = _run([*command, "--config", cfg])
        if found.check(outcome, f"{name}: {_key_path(path)} = {literal[:60]}"):
            _expect_refused(found, outcome, too_large, f"{cfg}: {_key_path(path)}: ")
    for _ in range(_n(40)):  # options of estimate and plan
        literal, too_large = _number_literal(rng)
        option = rng.choice(OPTIONS)
        command = rng.choice([["estimate", "--workload", rng.choice(["inference", "full", "lora"])],
                              ["plan", "--workload", "inference", "--gpu-type", "L4"]])
        if rng.random() < 0.2:
            command, option = ["plan", "--workload", "inference"], rng.choice(["--users", "--context",
                                                                               "--min-tokens-per-s"])
        outcome = _run([*command, "--model", "Llama-3.2-1B", option, literal + rng.choice(["", "", "k"])])
        if found.check(outcome) and too_large and outcome.status == 0:
            found.fail(f"{outcome.args}: accepted a number too large for any field")
    for i in range(_n(30)):  # the limits' variables
        env = rng.choice(LIMIT_ENVS)
        value = rng.choice([_number_literal(rng)[0], str(10**18), str(10**18 + 1), "0", "-1", "", " 7", "1_000",
                            "１２", "٣", "²", "1e3", "0x10", "\t"])
        valid = (value.strip().isascii() and value.strip().isdigit() and len(value.strip()) <= 19  # int() of more
                 and 1 <= int(value.strip()) <= 10**18)  # than 4,300 digits raises
        preset = tmp_path / "every-limit.yaml"
        preset.write_text(EVERY_LIMIT)
        outcome = _run(["check", preset], env={env: value})
        if found.check(outcome, f"{env}={value[:40]!r}") and not valid and not outcome.stderr.startswith(
                f"Error: {env}: expected a whole number"):
            found.fail(f"{env}={value[:60]!r} was not refused: {outcome.status} {outcome.stderr[:300]}")
    found.done()


def _near_cap_text(rng: random.Random, size: int) -> str:
    """A preset of exactly `size` bytes (padded with a comment) in one of the styles that are slow to
    parse: long single lines, flow style, aliases, escapes, complex keys."""
    style, depth = rng.randrange(12), rng.choice([10, 63, 65, 200])
    head, unit, tail = {
        0: ("{title: t, scenarios: [", "{model: Qwen2.5-0.5B, gpu: L4, batch_size: 1}, ", "]}\n"),
        1: ("{title: t, matrices: [{name: m, model: Qwen2.5-0.5B, gpu: L4, workload: inference, batch_size: [",
            "1, 2, 3, 4, ", "5]}]}\n"),
        2: ("title: ", "ab ", "\nscenarios: [{model: Qwen2.5-0.5B}]\n"),
        3: ('title: "', "\\t\\x41\\u00e9", '"\nscenarios: [{model: Qwen2.5-0.5B}]\n'),
        4: ("title: t\nscenarios: [{model: Qwen2.5-0.5B}]\n#", "comment ", "\n"),
        5: ("title: t\nmatrices: [{name: m, model: Qwen2.5-0.5B, gpu: L4, description: {", "k: 1, ", "z: 2}}]\n"),
        6: ("title: t\nmatrices:\n  - {name: m, model: [Llama-3.2-1B, Qwen2.5-0.5B], zero_stage: [0, 2], gpu: L4, "
            "workload: full, exclude: [&a {zero_stage: 2}, ", "*a, ", "*a]}\n"),
        7: ("title: " + "[" * depth, "1, ", "1" + "]" * depth + "\n"),
        8: ("title: t\nscenarios:\n", "  - {model: Qwen2.5-0.5B, gpu: L4}\n", ""),
        9: ("title: t" + " " * 10, "    ", "\nscenarios: [{model: Qwen2.5-0.5B}]\n"),
        10: ("title: [&x a, ", "*x, &y b, *y, ", "c]\nscenarios: [{model: Qwen2.5-0.5B}]\n"),
        11: ("title: t\nprices: {", "? k, ", "? z}\nscenarios: [{model: Qwen2.5-0.5B}]\n"),
    }[style]
    count = max(0, (size - len(head) - len(tail) - 2) // len(unit))
    text = head + unit * count + tail
    missing = size - len(text.encode())
    return text + ("#" + "p" * (missing - 2) + "\n" if missing >= 2 else "\n" * max(0, missing))


def test_fuzz_long_lines_and_flow_styles_near_the_size_cap(tmp_path):
    """Files at, just under and just over the size cap, written as the parser likes least. CI scales the
    caps down (REPORTGEN_MAX_FILE_BYTES, and the event budget in proportion); the full run uses the
    defaults for a quarter of its cases."""
    rng = random.Random(SEED + 37)
    found = Findings("long lines and flow styles")
    default_cap, default_events = 2 * 2**20, 250_000
    for i in range(_n(16)):
        env, cap = {}, default_cap
        if SCALE <= 1 or rng.random() < 0.75:
            cap = rng.choice([32, 64, 128, 256, 512]) * 2**10 if SCALE > 1 else 48 * 2**10
            env = {"REPORTGEN_MAX_FILE_BYTES": str(cap),
                   "REPORTGEN_MAX_YAML_EVENTS": str(max(1000, default_events * cap // default_cap))}
        size = cap - rng.choice([0, 0, 1, 2, 100, 10_000]) if rng.random() < 0.9 else cap + 1
        preset = tmp_path / f"l{i % 3}.yaml"
        preset.write_text(_near_cap_text(rng, max(100, size)))
        if rng.random() < 0.8:
            found.check(_run(["check", preset], env=env), f"{preset.stat().st_size:,} bytes: {preset.read_text()[:120]}")
        else:
            _build_case(found, _run, tmp_path / f"out{i}", preset, ("json",), env=env)
    found.done()


def _build_case(found: Findings, run, out: Path, preset: Path, formats, flags=("-q",), *, before: dict | None = None,
                leftovers_ok: bool = False, env: dict | None = None, **kw) -> guarded.Outcome | None:
    """Build `preset` into `out` over earlier outputs (`before`, by default written here as 'previous
    <format>'); the verdict: every output is old or every one new (new: a successful build's), and no
    temporary is left."""
    names = [f"{preset.stem}.{f}" for f in formats]
    before = _old_outputs(out, preset.stem, formats) if before is None else before
    epoch = str(random.Random(str(out)).randrange(10**9))
    outcome = run(["build", preset, "--format", ",".join(formats), "-o", out, *flags],
                  env={"SOURCE_DATE_EPOCH": epoch, **(env or {})}, **kw)
    if not found.check(outcome):
        return None
    after = {p.name: p.read_bytes() for p in _listing(out) if p.is_file() and not p.name.startswith(".")}
    changed = [n for n in names if after.get(n) != before.get(n)]
    if changed and len(changed) != len(names):
        found.fail(f"mixed outputs after {outcome.args} (status {outcome.status}: {outcome.stderr.strip()[:300]}): "
                   f"{changed} changed, {sorted(set(names) - set(changed))} not", "mixed")
    elif outcome.status == 0 and not changed:
        found.fail(f"{outcome.args} succeeded but changed no output", "mixed")
    left = [p.name for p in _listing(out) if p.name.startswith(".")] if not leftovers_ok else []
    if left:
        found.fail(f"temporaries left by {outcome.args}: {left}")
    return outcome


def _listing(folder: Path) -> list[Path]:
    """The folder's entries; none where it does not exist or its path passes PATH_MAX."""
    try:
        return list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:
            raise
        return []


def _text_presets(folder: Path) -> list[Path]:
    """Presets and names with what ASCII and Latin-1 lack."""
    folder.mkdir(exist_ok=True)
    texts = {"é-title": "title: Modèle é — “quoted” … ×\nscenarios: [{model: Qwen2.5-0.5B}]\n",
             "модель": "title: Модель\nscenarios: [{model: Модель-7B}]\n",
             "中文": "title: 中文 🚀\nscenarios: [{model: Qwen2.5-0.5B, name: 名字}]\n",
             "bad-ü": "title: t\nscenarios: [{model: Qwen2.5-0.5B, gpu: Ünknown}]\n"}
    out = []
    for stem, text in texts.items():
        (folder / f"{stem}.yaml").write_text(text)
        out.append(folder / f"{stem}.yaml")
    return out


ENCODINGS = ("ascii", "latin-1", "cp1252", "koi8-r", "utf-8", "ascii:strict", "latin-1:replace", "cp437")
LOCALES = ({"LC_ALL": "C"}, {"LC_ALL": "POSIX"}, {"LC_ALL": "C.UTF-8"}, {"LC_ALL": "en_US.ISO-8859-1"},
           {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}, {"LANG": "C", "LC_ALL": ""},
           {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0", "PYTHONIOENCODING": "latin-1"})


def test_fuzz_locales_and_encodings(tmp_path):
    """PYTHONIOENCODING (forked, as Python sets the streams up from it) and LC_ALL (in a new
    interpreter): no traceback, and both streams decode in the encoding they were given."""
    rng = random.Random(SEED + 38)
    found = Findings("locales and encodings")
    presets = _text_presets(tmp_path / "texts")
    for i in range(_n(30)):
        preset = rng.choice(presets)
        command = rng.choice([["check", "default"], ["check", preset], ["check", tmp_path / "nicht-da-ü.yaml"],
                              ["models"], ["gpus"], ["estimate", "--model", "Llama-2-7B"],
                              ["estimate", "--model", "Llama-2-7B", "--gpu", "Ünknown"], ["params", "--model", "Mixtral-8x7B"],
                              ["--help"], ["build", preset, "--format", "json", "-o", tmp_path / f"ö{i}"]])
        if rng.random() < 0.15:
            found.check(guarded.spawn(command, env=rng.choice(LOCALES), timeout=TIMEOUT_S * 3))
        else:
            found.check(_run(command, env={"PYTHONIOENCODING": rng.choice(ENCODINGS)}))
    found.done()


STREAM_COMMANDS = (["models"], ["models", "--json"], ["gpus", "--json"], ["estimate", "--model", "Llama-2-7B", "--json"],
                   ["params", "--model", "Llama-2-7B"], ["presets"], ["check", "default"], ["check", "missing.yaml"],
                   ["--help"], ["--version"], ["estimate", "--bogus"], ["validate", "--json"])


def test_fuzz_standard_streams(tmp_path):
    """stdout and stderr on /dev/full, a pipe whose reader has gone, or closed; builds among them keep
    their outputs all old or all new."""
    rng = random.Random(SEED + 39)
    found = Findings("standard streams")
    preset = tmp_path / "tiny.yaml"
    preset.write_text(TINY)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIGS["gpt-2"]))
    for i in range(_n(40)):
        stdout, stderr = rng.choice([(o, e) for o in guarded.STREAMS for e in guarded.STREAMS if (o, e) != ("file", "file")])
        spawn = rng.random() < 0.1
        run = guarded.spawn if spawn else _run
        streams = {"stdout": stdout, "stderr": stderr}
        kind = rng.random()
        if kind < 0.3:
            flags = rng.choice([(), ("-q",)])
            _build_case(found, run, tmp_path / f"out{i}", preset, rng.choice([("json",), ("json", "html"), ("json", "xlsx")]),
                        flags, env={"REPORTGEN_TEST_COMMIT_DELAY": rng.choice(DELAYS)}, **streams)
        elif kind < 0.4 and not spawn:
            target = tmp_path / f"entry{i}.json"
            outcome = run(["import-config", config, "--name", f"Fuzz-{i}", "-o", target], **streams)
            if found.check(outcome) and outcome.status == 0 and json.loads(target.read_text())["name"] != f"Fuzz-{i}":
                found.fail(f"{outcome.args}: the entry written is not whole")
        else:
            found.check(run(rng.choice(STREAM_COMMANDS), **streams))
    found.done()


def _long_stem(rng: random.Random, size_bytes: int) -> str:
    """A file stem of about `size_bytes` bytes of ASCII, two-byte and three-byte characters."""
    stem = ""
    while len(stem.encode()) < size_bytes:
        stem += rng.choice("abcxyz-_.0123456789" * 3 + "éüß中文")
    while len(stem.encode()) > size_bytes:
        stem = stem[:-1]
    return stem.strip(".") or "p"


def test_fuzz_names_near_name_max_and_path_max(tmp_path):
    """Targets whose names come near NAME_MAX (255 bytes) and folders near PATH_MAX (4,096): a target
    whose own path fits is written (its temporary and kept copy are named to fit); one that does not
    fit is one line."""
    rng = random.Random(SEED + 40)
    found = Findings("long names")
    name_max, path_max = os.pathconf(tmp_path, "PC_NAME_MAX"), os.pathconf(tmp_path, "PC_PATH_MAX")
    for i in range(_n(20)):
        stem = _long_stem(rng, rng.randint(200, name_max - len(".yaml")))
        presets = tmp_path / f"p{i}"
        presets.mkdir()
        preset = presets / f"{stem}.yaml"
        preset.write_text(TINY)
        target_bytes = len(f"/{stem}.json".encode())
        if rng.random() < 0.5:
            out = tmp_path / f"out{i}"
        else:  # a folder whose path leaves the target some bytes short of PATH_MAX, or over it
            room = rng.choice([1, 10, 40, 100, 300]) * rng.choice([1, -1])
            depth_bytes = path_max - 1 - target_bytes - room - len(str(tmp_path / f"out{i}").encode())
            out = tmp_path / f"out{i}"
            while depth_bytes > 0:
                part = "d" * min(name_max, max(1, depth_bytes - 1))
                out, depth_bytes = out / part, depth_bytes - len(part) - 1
        fits = len(str(out).encode()) + target_bytes < path_max - 64  # its temporary's path too
        formats = rng.choice([("json",), ("json", "html"), ("json", "xlsx")])
        writable = len(str(out).encode()) + target_bytes < path_max  # the earlier outputs can be made
        if writable:
            out.mkdir(parents=True, exist_ok=True)
        outcome = _build_case(found, _run, out, preset, formats, before=None if writable else {})
        if outcome and fits and outcome.status != 0:
            found.fail(f"{len(stem.encode())}-byte name in a {len(str(out))}-byte folder fits and was refused: "
                       f"{outcome.stderr.strip()[:300]}")
    for _ in range(_n(6)):  # import-config's own target
        name = _long_stem(rng, rng.randint(240, name_max + 10))
        outcome = _run(["import-config", REPO / "presets/models/gpt-2.json", "--name", name[:200],
                        "-o", tmp_path / f"{name}.json"])
        found.check(outcome, f"{len(name.encode())}-byte name")
    found.done()


def _chattr(flag: str, path: Path) -> bool:
    return shutil.which("chattr") is not None and subprocess.run(
        ["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_fuzz_read_only_and_immutable_targets(tmp_path):
    """Folders and outputs made immutable (chattr +i) or append-only (+a), leftovers of a dead build
    that cannot be removed, and folders or outputs without write permission (as another user: root
    writes regardless)."""
    rng = random.Random(SEED + 41)
    found = Findings("read-only and immutable targets")
    probe = tmp_path / "probe"
    probe.write_text("")
    can_chattr = _chattr("+i", probe) and _chattr("-i", probe)
    as_other_user = os.geteuid() == 0 and guarded.others_can_read_the_package()
    if not can_chattr:
        print("\nfuzz read-only: chattr +i is not allowed here (CAP_LINUX_IMMUTABLE, ext4/xfs/btrfs): "
              "immutable cases skipped")
    modes = [m for m, ok in (("immutable folder", can_chattr), ("append-only folder", can_chattr),
                             ("immutable output", can_chattr), ("append-only output", can_chattr),
                             ("immutable leftover", can_chattr), ("immutable journal", can_chattr),
                             ("read-only folder", as_other_user), ("read-only outputs", as_other_user)) if ok]
    if not modes:
        pytest.skip("neither chattr nor another user is available here")
    # Another user cannot read the site-packages: everything a build imports is imported here first.
    base = Path(tempfile.mkdtemp(prefix="reportgen-fuzz-"))
    os.chmod(base, 0o755)
    preset, other = base / "tiny.yaml", base / "other.yaml"
    preset.write_text(TINY)
    other.write_text(TINY)
    os.chmod(preset, 0o644)
    from click.testing import CliRunner
    from reportgen.cli import main
    assert CliRunner().invoke(main, ["build", str(preset), "--format", "json,html,xlsx", "-o", str(base / "warm"),
                                     "-q"]).exit_code == 0
    try:
        for i in range(_n(16)):
            mode = rng.choice(modes)
            out = base / f"out{i}"
            formats = rng.choice([("json",), ("json", "html"), ("json", "html", "xlsx")])
            before = _old_outputs(out, preset.stem, formats)
            marked, user = [], None
            dead = f"{1:016x}-4242"
            if mode.endswith("leftover"):
                marked.append(out / f".{preset.stem}.json.{dead}.tmp")
                marked[0].write_text("left by a build that died")
            elif mode.endswith("journal"):
                marked.append(out / f".reportgen.{dead}.commit")
                marked[0].write_text(json.dumps({"renames": []}))
            elif mode.endswith("output"):
                marked.append(out / f"{preset.stem}.{rng.choice(formats)}")
            else:
                marked.append(out)
            if mode.startswith(("immutable", "append-only")):
                flag = "+i" if mode.startswith("immutable") else "+a"
                for path in marked:
                    _chattr(flag, path)
            else:
                user = 65534
                os.chmod(out, 0o555 if mode == "read-only folder" else 0o777)
                for path in out.iterdir():
                    os.chmod(path, 0o444)
            try:
                _build_case(found, _run, out, preset, formats, before=before, leftovers_ok=True, user=user,
                            env={"HOME": str(base)})
            finally:
                for path in marked:
                    _chattr("-i", path)
                    _chattr("-a", path)
                os.chmod(out, 0o755)
            # What a folder that could not be cleaned up holds is the next build's to clean up: it
            # finishes no commit that was rolled back, and leaves nothing behind.
            outputs = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}
            found.check(_run(["build", other, "--format", "json", "-o", out, "-q"]), f"after {mode}")
            now = {p.name: p.read_bytes() for p in out.iterdir() if not p.name.startswith(".")}
            if {n: b for n, b in now.items() if n != "other.json"} != outputs:
                found.fail(f"{mode}: the next build changed {sorted(n for n in outputs if now.get(n) != outputs[n])}",
                           "mixed")
            if any(p.name.startswith(".") for p in out.iterdir()):
                found.fail(f"{mode}: left after the next build: {sorted(p.name for p in out.iterdir())}")
    finally:
        shutil.rmtree(base)
    found.done()


def test_fuzz_memory_limits(tmp_path):
    """`ulimit -v` from 150 MB to 1.2 GB, in a new interpreter (the cap is absolute, as the shell sets
    it): a command ends with its answer or `Error: out of memory`, and a build's outputs are all old
    or all new."""
    rng = random.Random(SEED + 42)
    found = Findings("ulimit -v")
    preset = tmp_path / "tiny.yaml"
    preset.write_text(TINY)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump({"title": "sweep", "matrices": [
        {"name": "m", "model": ["Llama-3.2-1B", "Qwen2.5-0.5B"], "workload": "inference", "gpu": ["L4", "A100-80GB"],
         "batch_size": list(range(1, 101)), "prompt_len": [128, 512, 2048, 8192, 32768]}]}))
    for i in range(_n(6)):
        limit = rng.randint(150, 1200) * 2**20
        kind = rng.random()
        if kind < 0.4:
            formats = rng.choice([("json",), ("json", "html"), ("json", "xlsx")] + ([("json", "pdf")] if SCALE > 1 else []))
            _build_case(found, guarded.spawn, tmp_path / f"out{i}", rng.choice([preset, sweep]), formats,
                        address_space=limit, env={"REPORTGEN_TEST_COMMIT_DELAY": rng.choice(DELAYS)})
        else:
            command = rng.choice([["check", "default"], ["check", sweep], ["estimate", "--model", "Llama-2-70B"],
                                  ["plan", "--model", "Llama-3-8B", "--workload", "full"], ["models"], ["validate"],
                                  ["params", "--config", REPO / "presets/models/mixtral-8x7b.json"]])
            found.check(guarded.spawn(command, address_space=limit, timeout=TIMEOUT_S * 3), f"ulimit -v {limit // 2**10}")
    found.done()


def test_the_shards_of_bad_input_run_its_cases_once_each(tmp_path, monkeypatch):
    """FUZZ_SHARD k/n: the n shards together run exactly the cases of the unsharded category, each once."""
    module = sys.modules[__name__]
    ran: dict[str, list] = {}

    def run_for(label):
        def fake(args, **kw):
            ran.setdefault(label, []).append(tuple(str(a).replace(str(tmp_path), "") for a in args))
            return guarded.Outcome(tuple(str(a) for a in args), 0, "", "", 0.0)
        return fake
    for label, shard in (("whole", (0, 1)), ("a", (0, 2)), ("b", (1, 2))):
        monkeypatch.setattr(module, "_run", run_for(label))
        monkeypatch.setattr(module, "SHARD", shard[0])
        monkeypatch.setattr(module, "SHARDS", shard[1])
        folder = tmp_path / label
        folder.mkdir()
        test_fuzz_bad_input_gives_one_line(folder)
    whole = [tuple(a.replace("/whole", "") for a in args) for args in ran["whole"]]
    halves = [tuple(a.replace("/a", "").replace("/b", "") for a in args) for args in ran["a"] + ran["b"]]
    assert len(ran["a"]) + len(ran["b"]) == len(whole) > 400 and abs(len(ran["a"]) - len(ran["b"])) <= 1
    assert sorted(halves) == sorted(whole)
