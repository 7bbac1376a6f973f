"""Issue #37: how a build ends when its summary cannot be printed, or when its PDF renderer crashes."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_a_build_into_a_full_stdout_says_its_outputs_were_written(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    env.update(PYTHONPATH=str(REPO), SOURCE_DATE_EPOCH="1000000")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "reportgen", "build", "ppo-rlhf", "--format", "json,html", "-o",
                               str(out)], cwd=REPO, env=env, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (proc.returncode, proc.stderr) == (0, "outputs written; could not print the summary: No space left on device\n")
    assert json.loads((out / "ppo-rlhf.json").read_text())["generated_at"] == "1970-01-12T13:46:40+00:00"
    assert sorted(p.name for p in out.iterdir()) == ["ppo-rlhf.html", "ppo-rlhf.json"]


def test_a_pdf_alone_renders_in_the_child_so_its_crash_is_one_line(tmp_path):
    """WeasyPrint's libraries abort or segfault under memory pressure: with --format pdf alone too, the
    crash ends the forked renderer, and the build says so in one line, changing nothing."""
    out = tmp_path / "out"
    code = ("import os, signal, sys\n"
            "import reportgen.writers.pdf as pdf\n"
            "pdf.write = lambda *args, **kwargs: os.kill(os.getpid(), signal.SIGSEGV)\n"
            "from reportgen.cli import main\n"
            f"main(['build', 'ppo-rlhf', '--format', 'pdf', '-o', {str(out)!r}])\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    env.update(PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"Error: {out / 'ppo-rlhf.pdf'}: the renderer was killed by signal 11 (SIGSEGV; out of memory?)\n")
    assert list(out.iterdir()) == []


def _build_with_pdf_writer(tmp_path, writer: str) -> subprocess.CompletedProcess:
    """`reportgen build ppo-rlhf --format json,pdf` in a fresh interpreter whose PDF writer is `writer` (code),
    with a renderer counted as stuck after 2 s without CPU."""
    out = tmp_path / "out"
    code = ("import os, signal, sys, time\n"
            "import reportgen.writers.atomic as atomic\n"
            "atomic.RENDERER_STALL_SECONDS = 2\n"
            "import reportgen.writers.pdf as pdf\n"
            f"{writer}\n"
            f"sys.argv = ['reportgen', 'build', 'ppo-rlhf', '--format', 'json,pdf', '-o', {str(out)!r}]\n"
            "from reportgen.entry import run\n"
            "run()\n")  # as the installed command runs (entry.run: memory errors, the exit status)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPORTGEN_")}
    env.update(PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_a_renderer_aborting_with_its_own_message_is_still_one_line(tmp_path):
    """#36's full fuzz run, ulimit -v 500 MB: pango could not start a thread, GLib printed its error and raised
    SIGTRAP in the renderer. Its message is not printed as it came: the one line quotes it."""
    glib = "(process:1503): GLib-ERROR **: creating thread '[pango] FcFontSetSort': Resource temporarily unavailable"
    proc = _build_with_pdf_writer(tmp_path, "def write(*args, **kwargs):\n"
                                            f"    os.write(2, {(chr(10) + glib + chr(10)).encode()!r})\n"
                                            "    os.kill(os.getpid(), signal.SIGTRAP)\n"
                                            "pdf.write = write")
    out = tmp_path / "out"
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"Error: {out / 'ppo-rlhf.pdf'}: the renderer was killed by signal 5 (SIGTRAP; out of memory?); "
               f"its last message: {glib}\n")
    assert list(out.iterdir()) == []


def test_a_renderer_failing_to_allocate_in_c_says_out_of_memory(tmp_path):
    """#36's full fuzz run, ulimit -v 700 MB: a C extension in the renderer that could not allocate raised
    SystemError ('error return without exception set'); it is the out-of-memory line, not a traceback."""
    proc = _build_with_pdf_writer(tmp_path, "def write(*args, **kwargs):\n"
                                            "    raise SystemError('error return without exception set')\n"
                                            "pdf.write = write")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", "Error: out of memory\n")
    assert list((tmp_path / "out").iterdir()) == []


def test_a_renderer_stuck_without_using_cpu_is_ended_in_one_line(tmp_path):
    """#36's full fuzz run had one build hang under ulimit -v (the parent waited on a renderer for ever): a
    renderer sleeping without CPU is stuck, killed, and the build says so, changing nothing."""
    started = time.monotonic()
    proc = _build_with_pdf_writer(tmp_path, "def write(*args, **kwargs):\n"
                                            "    os.write(2, b'waiting for a thread\\n')\n"
                                            "    time.sleep(600)\n"
                                            "pdf.write = write")
    out = tmp_path / "out"
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"Error: {out / 'ppo-rlhf.pdf'}: the renderer stopped: it used no CPU for 2 s (out of memory?); "
               "its last message: waiting for a thread\n")
    assert list(out.iterdir()) == []
    assert time.monotonic() - started < 60


def test_a_renderer_busy_for_longer_than_the_stall_limit_is_not_stopped(tmp_path):
    """Only a renderer that uses no CPU is stuck: one computing for 5 s (beyond the 2 s limit) completes."""
    proc = _build_with_pdf_writer(tmp_path, "real_write = pdf.write\n"
                                            "def write(*args, **kwargs):\n"
                                            "    end = time.process_time() + 5\n"
                                            "    while time.process_time() < end:\n"
                                            "        pass\n"
                                            "    real_write(*args, **kwargs)\n"
                                            "pdf.write = write")
    assert (proc.returncode, proc.stderr) == (0, "")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ppo-rlhf.json", "ppo-rlhf.pdf"]
