"""Builds killed with SIGKILL, SIGTERM or SIGINT at random moments leave the previous outputs or all
new ones, never a mix; no temporary survives the next build; no process survives the build.

Each round starts a real `python -m reportgen build` of all four formats (the PDF in a forked child)
with a new SOURCE_DATE_EPOCH, so every file it writes differs from the one before, and signals it:
at a random moment, the moment the PDF child is forked, or between two renames of the commit
(tests/slow_commit.py runs the build with its commit stretched for that). SIGTERM and SIGINT are handled: the
outputs are checked at once, against what the CLI says it changed. SIGKILL cannot be handled: the
outputs are checked after the next build into the folder, which finishes a killed commit.
"""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("json", "html", "xlsx", "pdf")
SEED = 20
COMMIT_DELAY = 0.4  # seconds before each rename after the first
ROUNDS = ([(signum, "random") for signum in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGKILL)]
          + [(signum, "fork") for signum in (signal.SIGKILL, signal.SIGINT)]
          + [(signum, "renames") for signum in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)])


def _start(preset: Path, out: Path, epoch: int, formats=FORMATS, delay: float | None = None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    env.update(PYTHONPATH=str(REPO), SOURCE_DATE_EPOCH=str(epoch))
    command = [str(REPO / "tests" / "slow_commit.py"), str(delay)] if delay else ["-m", "reportgen"]
    return subprocess.Popen([sys.executable, *command, "build", str(preset), "-o", str(out), "--format",
                             ",".join(formats), "-q"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _processes() -> list[tuple[int, int, int, str]]:
    """(pid, parent pid, process group, state) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            found.append((int(entry.name), int(fields[1]), int(fields[2]), fields[0]))
    return found


def _wait_for_child(parent: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if any(ppid == parent for _, ppid, _, _ in _processes()):
            return
        time.sleep(0.001)


def _wait_for_commit(out: Path, proc: subprocess.Popen, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        if out.is_dir() and any(p.name.startswith(".reportgen.") for p in out.iterdir()):
            return
        time.sleep(0.005)


def _living_group(group: int) -> list[int]:
    return [pid for pid, _, pgrp, state in _processes() if pgrp == group and state not in "ZX"]


def _outputs(out: Path, name: str) -> dict[str, bytes]:
    return {fmt: (out / f"{name}.{fmt}").read_bytes() for fmt in FORMATS if (out / f"{name}.{fmt}").exists()}


def _state(before: dict, after: dict, epoch: int) -> str:
    """'old' (byte-identical), 'new' (all four from this round's build) or what is wrong."""
    if after == before:
        return "old"
    if set(after) == set(FORMATS) and all(after[f] != before[f] for f in FORMATS):
        stamp = datetime.fromtimestamp(epoch, tz=timezone.utc).isoformat()
        if json.loads(after["json"])["generated_at"] == stamp and stamp[:10].encode() in after["html"]:
            return "new"
        return "new files, but from another build"
    changed = sorted(f for f in FORMATS if after.get(f) != before.get(f))
    return f"mixed: {changed} changed, the others not"


def _leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith("."))


def test_interrupted_builds_leave_old_or_all_new_outputs(tmp_path):
    rng = random.Random(SEED)
    preset = tmp_path / "tiny.yaml"
    preset.write_text("title: tiny\nscenarios: [{model: Llama-3.2-1B, workload: inference, gpu: L4}]\n")
    other = tmp_path / "other.yaml"  # the next build: it writes elsewhere in the folder, quickly
    other.write_text("title: other\nscenarios: [{model: Qwen2.5-0.5B, workload: inference, gpu: L4}]\n")
    out = tmp_path / "out"
    first = _start(preset, out, epoch=1_000_000)
    assert first.wait(timeout=120) == 0, first.stderr.read()
    seen = []
    for n, (signum, moment) in enumerate(rng.sample(ROUNDS, len(ROUNDS))):
        epoch = 1_000_000 + 86_400 * (n + 1)  # a new day: every output differs, the HTML shows the date
        where = f"round {n} (seed {SEED}): {signum.name} at {moment}"
        before = _outputs(out, "tiny")
        proc = _start(preset, out, epoch, delay=COMMIT_DELAY if moment == "renames" else None)
        if moment == "random":
            time.sleep(rng.uniform(0.05, 3.5))
        elif moment == "fork":
            _wait_for_child(proc.pid, proc)
        else:
            _wait_for_commit(out, proc)
            time.sleep(rng.uniform(0, 3 * COMMIT_DELAY))
        proc.send_signal(signum)  # nothing if the build has already ended
        _, stderr = proc.communicate(timeout=120)
        end = time.monotonic() + 5
        while _living_group(proc.pid) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _living_group(proc.pid), f"{where}: processes left: {_living_group(proc.pid)}"
        state = _state(before, _outputs(out, "tiny"), epoch)
        if signum != signal.SIGKILL:
            assert state in ("old", "new"), f"{where}: {state}; {stderr}"
            if proc.returncode == 128 + signum:
                message = stderr.strip().splitlines()[-1]
                expected = (f"Interrupted ({signum.name}): no output was changed." if state == "old" else
                            f"Interrupted ({signum.name}) after every output was written: ")
                assert message.startswith(expected), f"{where}: {state}, but the CLI said {message!r}"
            assert _leftovers(out) == [], f"{where}: {_leftovers(out)}"
        recovery = _start(other, out, epoch, formats=("json",))
        assert recovery.wait(timeout=60) == 0, recovery.stderr.read()
        state = _state(before, _outputs(out, "tiny"), epoch)
        assert state in ("old", "new"), f"{where}, after the next build: {state}"
        assert _leftovers(out) == [], f"{where}, after the next build: {_leftovers(out)}"
        seen.append((signum.name, moment, proc.returncode, state))
    # The rounds exercised both outcomes and the interesting moments (not only kills before any work).
    assert {s for *_, s in seen} == {"old", "new"}, seen
    assert any(rc == -signal.SIGKILL and moment == "renames" for _, moment, rc, _ in seen), seen


def test_a_signal_during_the_commit_waits_for_it_to_finish(tmp_path, signum=signal.SIGTERM):
    """SIGTERM (like SIGINT and SIGHUP) is blocked while the renames run: the build completes, then
    says so."""
    preset = tmp_path / "tiny.yaml"
    preset.write_text("title: tiny\nscenarios: [{model: Llama-3.2-1B, workload: inference, gpu: L4}]\n")
    out = tmp_path / "out"
    formats = ("json", "html", "xlsx")
    assert _start(preset, out, 10**6, formats=formats).wait(timeout=60) == 0
    proc = _start(preset, out, 2 * 10**6, formats=formats, delay=1.0)
    _wait_for_commit(out, proc)
    time.sleep(0.3)  # the first rename is done, two are to come
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    assert stderr == (f"Interrupted ({signum.name}) after every output was written: "
                      + ", ".join(str(out / f"tiny.{f}") for f in formats) + "\n")
    assert json.loads((out / "tiny.json").read_text())["generated_at"].startswith("1970-01-24")
    assert _leftovers(out) == []


def test_concurrent_builds_do_not_interleave_their_files(tmp_path):
    """A build that commits while another's renames are under way waits for them: the folder ends
    with all of one build's files, never some of each."""
    preset = tmp_path / "tiny.yaml"
    preset.write_text("title: tiny\nscenarios: [{model: Llama-3.2-1B, workload: inference, gpu: L4}]\n")
    out = tmp_path / "out"
    formats = ("json", "html", "xlsx")
    slow = _start(preset, out, 10**6, formats=formats, delay=1.5)  # its commit spans the other build
    _wait_for_commit(out, slow)
    fast = _start(preset, out, 2 * 10**6, formats=formats)
    assert fast.wait(timeout=60) == 0 and slow.wait(timeout=60) == 0
    stamps = {f: (out / f"tiny.{f}").read_bytes() for f in formats}
    assert json.loads(stamps["json"])["generated_at"].startswith("1970-01-24")  # the later commit, whole
    assert b"1970-01-24" in stamps["html"] and b"1970-01-12" not in stamps["html"]
    assert _leftovers(out) == []


def test_an_interrupt_ends_with_the_clis_line_not_a_finalisers_noise():
    """An interrupted writer can abandon an object whose finaliser then fails at exit (a zip archive
    over a buffer already closed, as XlsxWriter's is when Ctrl-C lands in its save): the CLI's one line
    stays the whole of stderr."""
    code = (
        "import io, zipfile\n"
        "from reportgen.cli import handle_input_errors\n"
        "@handle_input_errors\n"
        "def build():\n"
        "    global abandoned\n"
        "    buffer = io.BytesIO()\n"
        "    abandoned = zipfile.ZipFile(buffer, 'w')\n"
        "    abandoned.writestr('part', 'data')\n"
        "    buffer.close()\n"
        "    raise KeyboardInterrupt\n"
        "build()\n")
    _assert_one_line_after_interrupt(code)


def test_an_interrupt_while_the_modules_load_ends_with_one_line():
    """Ctrl-C in the first moments of `reportgen …` (the modules still importing) gives the same line
    as later, not a traceback: the entry point loads the CLI inside its handler."""
    code = ("import sys, types\n"
            "class Loading(types.ModuleType):\n"
            "    def __getattr__(self, name):\n"
            "        raise KeyboardInterrupt\n"
            "sys.modules['reportgen.cli'] = Loading('reportgen.cli')\n"
            "from reportgen.entry import run\n"
            "run()\n")
    _assert_one_line_after_interrupt(code)


def _assert_one_line_after_interrupt(code: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 128 + signal.SIGINT
    assert proc.stderr.strip().splitlines() == ["Interrupted (SIGINT): no output was changed."], proc.stderr
