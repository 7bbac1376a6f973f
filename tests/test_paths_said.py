"""Issue #37: an error about a path says what is wrong with it, and a malformed option value is refused."""
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main

REPO = Path(__file__).resolve().parent.parent


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("folder,message", [
    ("/dev/null", "Error: /dev/null: cannot write to the output folder: it is a device, not a folder\n"),
    ("/proc/self", "Error: /proc/self: cannot write to the output folder: it takes no new files (a kernel file "
                   "system such as /proc or /sys?)\n"),
    ("/proc/self/out", "Error: /proc/self/out: cannot write to the output folder: it cannot be made: a folder above "
                       "it takes no new files (a kernel file system such as /proc or /sys?)\n"),
], ids=["device", "proc", "below proc"])
def test_an_output_folder_that_cannot_be_one_says_why(folder, message):
    result = run("build", "ppo-rlhf", "--format", "json", "-o", folder, "-q")
    assert (result.exit_code, result.output) == (1, message)


def test_a_broken_link_as_output_folder_says_so(tmp_path):
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    result = run("build", "ppo-rlhf", "--format", "json", "-o", tmp_path / "link", "-q")
    assert (result.exit_code, result.output) == (
        1, f"Error: {tmp_path / 'link'}: cannot write to the output folder: it is a broken symbolic link, not a folder\n")


def _config(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(json.loads((REPO / "presets/models/qwen2.5-0.5b.json").read_text())["config"]))
    return config


@pytest.mark.parametrize("exists", [False, True], ids=["absent", "present"])
def test_import_config_into_a_folder_name_writes_no_file_of_that_name(tmp_path, exists):
    folder = tmp_path / "DIR"
    if exists:
        folder.mkdir()
    result = run("import-config", _config(tmp_path), "--name", "My-Qwen", "-o", f"{folder}{os.sep}")
    assert (result.exit_code, result.output) == (
        1, f"Error: {folder}/: names a folder (it ends in /): give the file to write, such as {folder}/my-qwen.json\n")
    assert folder.is_dir() == exists and not folder.is_file()


@pytest.mark.parametrize("targets,message", [
    ("", "expected module names separated by commas (such as q_proj,v_proj or all-linear), got ''"),
    ("q_proj,,v_proj", "expected module names separated by commas (such as q_proj,v_proj or all-linear), "
                       "got 'q_proj,,v_proj'"),
    ("q_proj,q_proj", "'q_proj' is listed twice"),
    ("all-linear,q_proj", "all-linear already names every linear layer: give it alone"),
])
def test_params_refuses_lora_targets_that_name_no_module_or_one_twice(targets, message):
    result = run("params", "--model", "Llama-2-7B", "--lora-rank", "8", "--lora-targets", targets)
    assert (result.exit_code, result.output) == (1, f"Error: --lora-targets: {message}\n")


def test_params_lora_targets_without_a_rank_is_a_usage_error():
    result = run("params", "--model", "Llama-2-7B", "--lora-targets", "")
    assert result.exit_code == 2 and result.output.endswith("Error: --lora-targets changes nothing without --lora-rank\n")
