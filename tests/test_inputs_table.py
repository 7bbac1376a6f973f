"""One input table (reportgen/model/inputs.py) and every place that reads it.

Adding an input is one entry in INPUTS (or RLHF_INPUTS): the Scenario class, the command-line options of
`estimate` and `plan`, the workbook's input columns and the report's method table are all made from it.
These tests fail when one of them lists the inputs differently (a hand-written option, a column left
out, a table typed into a template)."""
from dataclasses import fields

import pytest

from conftest import bundled_report
from reportgen import cli
from reportgen.report.i18n import LANGUAGES, load_catalogue
from reportgen.model.inputs import INPUT_NAMES, INPUTS, RLHF_INPUTS, Scenario
from reportgen.report.views import CLI_OWN, build_view, inputs_table
from reportgen.writers.xlsx.book import build_book

ALL = INPUTS + RLHF_INPUTS
# Inputs without an option from the table: the model (beside --config) and the workload (with the RLHF
# algorithms) are declared by the CLI itself (views.CLI_OWN); the head and the role pools are set otherwise.
NO_OPTION = {"model", "workload", "head", "role_gpus", "role_gpu_types"}


@pytest.fixture(scope="module")
def report():
    return bundled_report("default")


def test_the_scenario_class_has_one_field_per_input():
    assert tuple(f.name for f in fields(Scenario) if f.name != "name") == INPUT_NAMES


@pytest.mark.parametrize("command", [cli.estimate, cli.plan], ids=lambda c: c.name)
def test_the_command_line_options_are_the_inputs_options(command):
    params = {p.name: p for p in command.params}
    assert all(params[name].opts[0] == option for name, option in CLI_OWN.items())
    assert {i.name for i in ALL if not i.option} == NO_OPTION
    for i in ALL:
        if i.option:
            assert params[i.name].opts[0] == i.option, i.name
            assert i.help in params[i.name].help, i.name


def test_the_workbook_has_one_input_column_per_input_in_table_order(report):
    book = build_book(report)
    for table in (book.scenarios, book.note_scenarios):
        inputs = [c for c in table.columns if c.kind == "input"]
        assert [c.name for c in inputs] == list(INPUT_NAMES), table.sheet
        assert all(c.label == i.label and c.help == i.help for c, i in zip(inputs, INPUTS)), table.sheet


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_method_section_lists_every_input_with_its_option_and_default(report, lang):
    t = load_catalogue(lang)
    table = build_view(report, lang).inputs
    assert [row[0].text.replace("\u200b", "") for row in table.rows] == [i.name for i in ALL]
    for row, i in zip(table.rows, ALL):
        assert row[4].text == (i.option or CLI_OWN.get(i.name, "—")), i.name
        if i.choices:
            assert row[3].text == ", ".join(i.user_choices), i.name
        if lang == "en":
            assert row[1].text == i.label, i.name
        else:  # every input has its Chinese name
            assert t.terms[f"input.{i.name}"] == row[1].text, i.name
    assert table == inputs_table(t)  # the same table whatever the report


def test_the_method_table_says_which_workloads_read_an_input():
    t = load_catalogue("en")
    reads = {row[0].text.replace("\u200b", ""): row[5].text for row in inputs_table(t).rows}
    assert reads["seq_len"] == "full fine-tuning, LoRA, QLoRA, frozen RLHF roles"
    assert reads["batch_size"] == "every workload"
    assert reads["gpu_memory_utilization"].endswith("(serving_engine = vllm, sglang)")
