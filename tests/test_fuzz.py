"""Fuzzing every way in: presets, configs, measured files, options, special files, output folders.

A seeded generator (FUZZ_SEED, default 20; FUZZ_SCALE multiplies the case counts) makes the cases
of each category of issue #20; every case runs as `reportgen …` in a forked child with a timeout
and a memory cap (tests/guarded.py) and must end with status 0, one `Error:` line and status 1, or
a usage error with status 2: no traceback, no hang, no memory past the cap. Cases that write also
check that a failed command left earlier files byte-identical and no temporary behind, that a
successful build replaced all its outputs, and that the catalog still loads after import-config.
"""
from __future__ import annotations

import copy
import json
import os
import random
import shutil
import stat
import time
from pathlib import Path

import pytest
import yaml

import guarded
from reportgen import catalog

SEED = int(os.environ.get("FUZZ_SEED", "20"))
SCALE = float(os.environ.get("FUZZ_SCALE", "1"))
TIMEOUT_S = 20.0  # per case; the slowest legitimate case (a workbook build) takes about 2 s
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
    """Cases that broke the promise, with what to run to see it again."""

    def __init__(self, category: str):
        self.category, self.items, self.cases, self.start = category, [], 0, time.monotonic()

    def check(self, outcome: guarded.Outcome, note: str = "") -> bool:
        self.cases += 1
        problem = outcome.problem()
        if problem:
            self.items.append(f"reportgen {' '.join(a[:80] for a in outcome.args)} {note}: {problem[-1500:]}")
        return problem is None

    def fail(self, text: str) -> None:
        self.items.append(text)

    def done(self) -> None:
        seconds = time.monotonic() - self.start
        print(f"\nfuzz {self.category}: {self.cases} cases in {seconds:.1f} s (seed {SEED}, memory cap "
              f"{guarded.MEMORY_CAP // 2**20} MiB above the parent, timeout {TIMEOUT_S:g} s)")
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
    """Category 4 (tracebacks): mutated presets, configs, measured files and option values."""
    rng = random.Random(SEED)
    found = Findings("bad input")
    for i in range(_n(200)):
        preset = tmp_path / f"p{i % 7}.yaml"
        preset.write_text(_dump_yaml(_mutate(rng, PRESET)))
        found.check(_run(["check", preset]), preset.read_text()[:300])
    for i in range(_n(120)):
        name, config = rng.choice(list(CONFIGS.items()))
        mutated = _mutate(rng, {"c": config}).get("c")
        path = tmp_path / f"c{i % 7}.json"
        path.write_text(json.dumps(mutated) if isinstance(mutated, dict) or rng.random() < 0.1 else json.dumps(config))
        command = rng.choice([["params"], ["params", "--lora-rank", "8", "--lora-targets", "all-linear"],
                              ["estimate", "--workload", rng.choice(["inference", "full", "lora", "ppo"])],
                              ["plan", "--workload", "inference", "--gpu-type", "L4"]])
        found.check(_run([*command, "--config", path]), f"{name}: {path.read_text()[:300]}")
    measured = json.loads((REPO / "presets/validation/measured.json").read_text())
    for i in range(_n(40)):
        path = tmp_path / "measured.json"
        path.write_text(json.dumps(_mutate(rng, {**measured, "cases": measured["cases"][:2]})))
        found.check(_run(["validate", "--measured", path]))
    options = ["--batch", "--seq", "--prompt-len", "--gen-len", "--gpus", "--zero", "--tp", "--lora-rank",
               "--safety-factor", "--gpu", "--precision", "--model", "--critic-model", "--role-gpus", "--group-size"]
    for _ in range(_n(90)):
        value = str(rng.choice([*STRINGS, "nan", "inf", "-inf", "-0", "1e400", "9" * 5000, "3.5", "2"]))
        found.check(_run(["estimate", "--model", "Llama-2-7B", "--workload", rng.choice(["full", "ppo", "grpo"]),
                          rng.choice(options), value]))
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
                found.fail(f"build succeeded but kept {stale}: {outcome.args}")
        elif any(now.get(n) != old[n] for n in old):
            found.fail(f"failed build changed outputs ({outcome.stderr.strip()}): {outcome.args}")
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
