"""The fuzz harness's judgement of a hang (tests/guarded.py): a command is hung when it and its children use
no CPU for the timeout, not when a loaded machine makes it slow (#36's full run)."""
import time
from pathlib import Path

import guarded


def test_a_command_that_sleeps_past_the_timeout_is_hung(tmp_path, monkeypatch):
    import reportgen.writers.json_writer as json_writer
    monkeypatch.setattr(json_writer, "write", lambda *args, **kwargs: time.sleep(60))  # the forked child sleeps
    outcome = guarded.run(["build", "ppo-rlhf", "--format", "json", "-o", tmp_path / "out", "-q"], timeout=2)
    assert outcome.timed_out and outcome.seconds < 15
    assert outcome.problem().startswith("no answer: no CPU used for the timeout")


def test_a_command_busy_for_longer_than_the_timeout_is_not_hung(tmp_path, monkeypatch):
    import reportgen.writers.json_writer as json_writer
    write = json_writer.write

    def busy_then_write(*args, **kwargs):  # computes for 3 s of CPU, then writes: slow on any machine, never idle
        spent = time.process_time()
        while time.process_time() - spent < 3:
            pass
        return write(*args, **kwargs)

    monkeypatch.setattr(json_writer, "write", busy_then_write)
    started = time.monotonic()
    outcome = guarded.run(["build", "default", "--format", "json,html,xlsx", "-o", tmp_path / "out", "-q"], timeout=1)
    assert not outcome.timed_out and outcome.status == 0, outcome.problem()
    assert time.monotonic() - started > 3  # it did run past the timeout
    assert sorted(p.name for p in Path(tmp_path / "out").iterdir()) == ["default.html", "default.json", "default.xlsx"]
