"""Issue #37: a signal the build was started with ignored stays ignored. `nohup reportgen build …`
survives the hangup nohup exists for; a shell's background job (SIGINT ignored) survives Ctrl-C at
the terminal. The build renders all four formats (the PDF in a forked child, which must ignore it
too) while the signal is sent to its whole process group every 50 ms, as a hangup reaches it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("json", "html", "xlsx", "pdf")


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "background job"])
def test_a_build_survives_a_signal_it_was_started_ignoring(tmp_path, signum):
    preset = tmp_path / "tiny.yaml"
    preset.write_text("title: tiny\nscenarios: [{model: Llama-3.2-1B, workload: inference, gpu: L4}]\n")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    # a commit long enough to be signalled during its renames too
    env.update(PYTHONPATH=str(REPO), SOURCE_DATE_EPOCH="1000000", REPORTGEN_TEST_COMMIT_DELAY="0.2")
    proc = subprocess.Popen([sys.executable, "-m", "reportgen", "build", str(preset), "-o", str(out), "--format",
                             ",".join(FORMATS)], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signum, signal.SIG_IGN))  # as nohup, or a shell's &
    sent = 0
    end = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < end:
        try:
            os.killpg(proc.pid, signum)
            sent += 1
        except ProcessLookupError:
            break
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stderr) == (0, ""), f"after {sent} signals"
    assert sent > 20  # it was signalled throughout: while loading, rendering (the PDF child) and committing
    assert sorted(stdout.splitlines()) == sorted(str(out / f"tiny.{f}") for f in FORMATS)
    assert json.loads((out / "tiny.json").read_text())["generated_at"] == "1970-01-12T13:46:40+00:00"
    assert (out / "tiny.pdf").read_bytes().startswith(b"%PDF")
    assert sorted(p.name for p in out.iterdir()) == sorted(f"tiny.{f}" for f in FORMATS)
