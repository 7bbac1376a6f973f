"""The decision page of a preset's `purchase:` section (fleet.py, presets.portfolio, views._decision): the
section is read strictly, the bundled `procurement` preset's fleet is what a brute-force search over its
jobs' plans finds, its schedule keeps every window, its costs add up, and page 1 of the PDF (read back by
poppler) names the fleet, buying against renting and the accuracy bands, in English and Chinese."""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from conftest import bundled_report
from reportgen.cli import main
from reportgen.planning.fleet import HOURS_PER_YEAR, PlannedJob, Pool, pool_costs, schedule
from reportgen.planning.plan import buyable_counts

BASE = """title: t
purchase:
  horizon: 13w
  gpus: [A100-80GB, H100-80GB-SXM]
  jobs:
    - name: ft
      model: Llama-3.2-1B
      workload: {type: full, seq_len: 2048}
      train_tokens: 100000000
"""


def _check(tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(text)
    return CliRunner().invoke(main, ["check", str(path)]), path


@pytest.mark.parametrize("change, message", [
    (("  horizon: 13w\n", "  horizon: 13\n"), "purchase.horizon: a duration needs a unit"),
    (("  horizon: 13w\n", ""), "purchase.horizon: missing required key"),
    (("      train_tokens: 100000000\n", "      train_tokens: 100000000\n      deadline: 20w\n"),
     "purchase.jobs[0].deadline: the job must start before its deadline and end within the horizon (91 days)"),
    (("      train_tokens: 100000000\n", ""), "purchase.jobs[0].train_tokens: missing required key"),
    (("      train_tokens: 100000000\n", "      train_tokens: 100000000\n      serve: {users: 4}\n"),
     "purchase.jobs[0].serve: does not apply to a training run"),
    (("      train_tokens: 100000000\n", "      train_tokens: 100000000\n      gpu: L4\n"),
     "purchase.jobs[0].gpu: unknown key"),
    (("[A100-80GB, H100-80GB-SXM]", "[A100-80GB, A100-80GB]"), "purchase.gpus[1]: GPU type 'A100-80GB' is listed twice"),
    (("    - name: ft\n", "    - name: ft\n      start: 0\n"), "purchase.jobs[0].start: a duration needs a unit"),
    (("  jobs:\n", "  owned: {H100-80GB-SXM: 0}\n  jobs:\n"),
     "purchase.owned.H100-80GB-SXM: expected a number of GPUs from 1 to 100,000, got 0"),
    (("  jobs:\n", "  owned: {H100-80GB-SXM: 2.5}\n  jobs:\n"),
     "purchase.owned.H100-80GB-SXM: expected a number of GPUs from 1 to 100,000, got 2.5"),
    (("  jobs:\n", "  owned: [H100-80GB-SXM]\n  jobs:\n"), "purchase.owned: expected a mapping, got ['H100-80GB-SXM']"),
    (("  jobs:\n", "  owned: {}\n  jobs:\n"), "purchase.owned: empty mapping"),
    (("  jobs:\n", "  owned: {H100-80GB-SXM: 2, A100-80GB: 2, L4: 2}\n  jobs:\n"),
     "purchase.owned: 3 GPU types: at most 2"),
    (("  jobs:\n", "  owned: {H100-80GB: 2}\n  jobs:\n"), "purchase.owned.H100-80GB: unknown GPU"),
])
def test_a_bad_purchase_section_is_one_line_naming_the_key(tmp_path, change, message):
    result, path = _check(tmp_path, BASE.replace(*change))
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"Error: {path}: {message}"), result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_served_job_needs_its_users_and_may_not_set_what_its_goal_sets(tmp_path):
    serve = BASE.replace("""      workload: {type: full, seq_len: 2048}
      train_tokens: 100000000
""", """      workload: {type: inference, gen_len: 128}
      serve: {context: 4096}
""")
    result, path = _check(tmp_path, serve)
    assert result.output.startswith(f"Error: {path}: purchase.jobs[0].serve.users: missing required key"), result.output
    result, path = _check(tmp_path, serve.replace("{context: 4096}", "{users: 8}\n      batch_size: 4"))
    assert "purchase.jobs[0].batch_size: the serve goal sets batch_size" in result.output
    result, path = _check(tmp_path, serve.replace("{context: 4096}", "{users: 8, context: 4096, hours_per_day: 8}"))
    assert result.exit_code == 0, result.output
    assert result.output == f"{path}: OK — 0 scenarios, 0 skipped, 1 purchase jobs (planned by build)\n"


@pytest.fixture(scope="module")
def procurement():
    return bundled_report("procurement")


def test_the_fleet_is_what_a_brute_force_search_over_the_jobs_plans_finds(procurement):
    d = procurement.decision
    gpus = procurement.gpus
    options = {job: {g: p.option for g, p in per.items() if isinstance(p, PlannedJob)} for job, per in d.planned.items()}
    best = None
    types = d.portfolio.gpu_types
    for assignment in itertools.product(types, repeat=len(options)):
        if len(set(assignment)) > d.portfolio.max_types or any(t not in options[j] for j, t in zip(options, assignment)):
            continue
        price, count = 0, 0
        for t in set(assignment):
            members = [options[j][t] for j, a in zip(options, assignment) if a == t]
            runs = [i for i, o in enumerate(members) if not o.serving]
            n = next((n for n in buyable_counts(gpus[t].gpus_per_node) for order in itertools.permutations(runs)
                      if schedule(members, n, order) is not None), None)
            if n is None:
                break
            price, count = price + n * gpus[t].price_purchase_usd, count + n
        else:
            best = min(best or (price, count), (price, count))
    assert (d.choice.best.purchase_usd, d.choice.best.num_gpus) == best


def test_every_job_runs_inside_its_window_and_the_pool_is_never_overbooked(procurement):
    d = procurement.decision
    jobs = {j.name: j for j in d.portfolio.jobs}
    placed = set()
    for pool in d.choice.best.pools:
        for s in pool.slots:
            job, option = jobs[s.job], d.planned[s.job][pool.gpu].option
            placed.add(s.job)
            assert s.start_seconds >= job.start_seconds
            assert s.end_seconds <= (d.portfolio.horizon_seconds if job.kind == "serve" else job.deadline_seconds) + 1e-6
            assert s.end_seconds - s.start_seconds == pytest.approx(option.seconds)
            in_use = sum(o.gpus for o in pool.slots if o.start_seconds <= s.start_seconds < o.end_seconds)
            assert in_use <= pool.num_gpus
    assert placed == set(jobs)


def test_owning_and_renting_add_up_from_the_catalogue_and_the_assumptions(procurement):
    d, a, gpus = procurement.decision, procurement.assumptions, procurement.gpus
    fleet = d.choice.best
    c = d.costs_of(fleet)
    years = d.portfolio.horizon_seconds / 3600 / HOURS_PER_YEAR

    def energy_usd_per_gpu_hour(gpu, a):
        return pool_costs(Pool(gpu.name, 1, (), 0.0), d.portfolio.horizon_seconds, gpus, a)["energy_usd_per_gpu_hour"]
    busy = {p.gpu: sum(d.planned[s.job][p.gpu].option.busy_gpu_hours for s in p.slots) for p in fleet.pools}
    assert c.purchase_usd == sum(p.num_gpus * gpus[p.gpu].price_purchase_usd for p in fleet.pools)
    assert c.depreciation_usd == pytest.approx(c.purchase_usd * years / a["amortisation_years"])
    assert c.hosting_usd == pytest.approx(fleet.num_gpus * a["hosting_usd_per_gpu_year"] * years)
    # a busy GPU-hour's energy: TDP (kW) × server factor × PUE × price per kWh
    assert energy_usd_per_gpu_hour(gpus["A100-80GB"], a) == pytest.approx(0.4 * 1.82 * 1.58 * 0.10)
    assert c.energy_usd == pytest.approx(sum(h * energy_usd_per_gpu_hour(gpus[g], a) for g, h in busy.items()))
    assert c.rent_usd == pytest.approx(sum(h * gpus[g].price_per_hour_usd for g, h in busy.items()))
    assert c.utilisation == pytest.approx(sum(busy.values()) / (fleet.num_gpus * d.portfolio.horizon_seconds / 3600))
    # at the break-even utilisation owning a GPU-hour costs what renting it does
    u, g = c.break_even_utilisation, gpus[fleet.pools[0].gpu]
    if len(fleet.pools) == 1:
        fixed = g.price_purchase_usd / a["amortisation_years"] + a["hosting_usd_per_gpu_year"]
        assert fixed / (HOURS_PER_YEAR * u) + energy_usd_per_gpu_hour(g, a) == pytest.approx(g.price_per_hour_usd)


def test_a_job_no_gpu_type_runs_is_named_with_why_per_gpu_type(tmp_path):
    text = BASE.replace("model: Llama-3.2-1B", "model: Llama-3.1-405B\n      num_gpus: 1").replace("gpus: [A100-80GB, H100-80GB-SXM]",
                                                                               "gpus: [L4]")
    path = tmp_path / "p.yaml"
    path.write_text(text)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", str(path), "-o", str(out), "--format", "json,html"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "p.json").read_text())["purchase"]
    assert data["fleet"] is None and data["unplaced_jobs"] == ["ft"]
    assert data["jobs"][0]["per_gpu_type"][0]["reason"] == "fit"
    html = (out / "p.html").read_text()
    assert "ft runs on no GPU type offered: L4: does not fit on up to 1 × L4." in html


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("pdftotext"), reason="poppler-utils")
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_one_of_the_pdf_names_the_fleet_the_rent_comparison_and_the_accuracy(tmp_path, lang, procurement):
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["build", "procurement", "-o", str(out), "--format", "pdf", "--lang", lang])
    assert result.exit_code == 0, result.output
    pdf = out / ("procurement.pdf" if lang == "en" else "procurement.zh.pdf")
    page = subprocess.run(["pdftotext", "-f", "1", "-l", "1", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True).stdout
    flat = " ".join(page.split())
    fleet = procurement.decision.choice.best
    c = procurement.decision.costs_of(fleet)
    for p in fleet.pools:
        assert f"{p.num_gpus} × {p.gpu}" in flat
    for figure in (f"${c.purchase_usd:,.0f}", f"${c.rent_usd:,.0f}", f"${c.own_usd:,.0f}"):
        assert figure in flat, figure
    words = {"en": ("renting", "Accuracy against held-out", "Week of the period"),
             "zh": ("采购", "租用", "留出的公开数据", "本期的周次")}[lang]
    for word in words:
        assert word in flat, word
    for job in procurement.decision.portfolio.jobs:
        assert job.name_in(lang) in flat, job.name


def test_the_accuracy_line_says_which_times_are_lower_bounds(procurement):
    """RLHF step times are estimated short in nearly every held-out figure: the decision page says to read them as
    lower bounds (a median alone reads as a symmetric band); training times, short and long alike, get no such
    words."""
    from reportgen.report.views import build_view
    for lang, words in (("en", "estimated short: read these times as lower bounds"), ("zh", "请把这些时间视为下限")):
        line = build_view(procurement, lang).decision.accuracy
        rlhf = line.split("RLHF" if lang == "en" else "RLHF 单步时间")[1]
        assert words in rlhf and line.count(words) == 1, line


@pytest.mark.slow  # several seconds: the full run has it
def test_the_headline_says_whether_buying_or_renting_is_cheaper(procurement, tmp_path):
    """A manager reads the first line: where renting the same GPU-hours costs less than owning over the period,
    it must not read as advice to buy; where owning costs less, it says buy."""
    import yaml
    from reportgen.pipeline import load, make_report
    from reportgen.scenarios.presets import bundled_presets
    from reportgen.report.views import build_view

    def headline(report, lang="en"):
        return build_view(report, lang, pdf=True, appendix=False).decision.headline

    c = procurement.decision.costs_of(procurement.decision.choice.best)
    assert c.rent_usd < c.own_usd  # the bundled quarter: its GPUs busy less than the break-even share
    assert headline(procurement).startswith(f"The {len(procurement.decision.portfolio.jobs)} jobs of the next 13 weeks")
    assert "renting it is cheaper than owning" in headline(procurement) and f"${c.purchase_usd:,.0f}" in headline(procurement)
    assert "租用比自有更便宜" in headline(procurement, "zh")
    # the same quarter with the GPUs depreciated over 10 years instead of 3: owning is cheaper, the line says buy
    data = yaml.safe_load(bundled_presets()["procurement"].read_text(encoding="utf-8"))
    data["assumptions"]["amortisation_years"] = 10
    path = tmp_path / "ten-years.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    longer = make_report(load(str(path)), "2026-01-01T00:00:00+00:00")
    c = longer.decision.costs_of(longer.decision.choice.best)
    assert c.own_usd < c.rent_usd
    assert headline(longer).startswith("Buy ") and headline(longer, "zh").startswith("采购")


def test_the_jobs_table_counts_weeks_from_one_as_the_chart_does(procurement):
    """'weeks a–b' (or 'week a'): the job starts in week a and ends in week b, weeks counted from 1."""
    import re
    from reportgen.report.views import build_view
    view = build_view(procurement, "en", pdf=True, appendix=False)
    week = 7 * 86400
    slots = {s.job: s for p in procurement.decision.choice.best.pools for s in p.slots}
    for row in view.decision.jobs.rows:
        numbers = [int(n) for n in re.findall(r"\d+", row[4].text)]
        a, b = numbers[0], numbers[-1]
        s = slots[row[0].text]
        assert a - 1 <= s.start_seconds / week < a
        assert b - 1 < s.end_seconds / week <= b or (a == b and s.end_seconds / week <= a)


def _with_owned(procurement_path, tmp_path, owned):
    import yaml
    from reportgen.pipeline import load, make_report
    data = yaml.safe_load(procurement_path.read_text(encoding="utf-8"))
    data["purchase"]["owned"] = owned
    path = tmp_path / "owned.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return make_report(load(str(path)), "2026-01-01T00:00:00+00:00")


@pytest.mark.slow  # several seconds: the full run has it
def test_gpus_already_owned_are_used_first_and_only_what_is_bought_is_costed(procurement, tmp_path):
    """The bundled quarter with GPUs already owned: owning the fleet it would buy leaves nothing to buy (and the
    page says so); owning part of it, only the rest is bought, and renting covers only the GPU-hours above the
    owned GPUs."""
    from reportgen.scenarios.presets import bundled_presets
    from reportgen.report.views import build_view
    source = bundled_presets()["procurement"]
    bought = procurement.decision.choice.best
    assert len(bought.pools) == 1  # the bundled answer: one pool of one type
    gpu, n = bought.pools[0].gpu, bought.pools[0].num_gpus
    c0 = procurement.decision.costs_of(bought)

    everything = _with_owned(source, tmp_path, {gpu: n})
    best = everything.decision.choice.best
    c = everything.decision.costs_of(best)
    assert (c.purchase_usd, c.rent_usd, c.own_usd, best.num_gpus) == (0, 0, 0, n)
    view = build_view(everything, "en", pdf=True, appendix=False).decision
    assert view.headline == f"The {n} × {gpu} you own run the 4 jobs of the next 13 weeks: nothing to buy."
    assert build_view(everything, "zh", pdf=True, appendix=False).decision.headline.endswith("无需采购。")

    half = _with_owned(source, tmp_path, {gpu: n // 2})
    best = half.decision.choice.best
    c = half.decision.costs_of(best)
    assert sum(p.owned_gpus for p in best.pools) == n // 2
    assert 0 < c.purchase_usd < c0.purchase_usd and c.rent_usd < c0.rent_usd
    # renting covers the busy GPU-hours above the owned GPUs, which are fewer than all the busy hours
    above = sum(p.new_busy_gpu_hours for p in best.pools)
    assert 0 < above < sum(p.busy_gpu_hours for p in best.pools)
    assert c.rent_usd == pytest.approx(sum(p.new_busy_gpu_hours * half.gpus[p.gpu].price_per_hour_usd
                                           for p in best.pools))
    view = build_view(half, "en", pdf=True, appendix=False).decision
    assert f"beside the {n // 2} × {gpu} you own" in view.headline
    assert f"GPU-hours beyond the {n // 2} × {gpu} you own" in view.own_vs_rent
    # a job's own rent is not what renting instead of buying costs beside owned GPUs: its column says so
    assert view.jobs.headers[-1].text == "Rent, the job alone (USD)"
    assert build_view(procurement, "en", pdf=True, appendix=False).decision.jobs.headers[-1].text == "Rent (USD)"


def test_owned_geforce_cards_are_left_out_under_datacenter_only(tmp_path):
    """datacenter_only leaves out GeForce cards already owned as it does those offered, and says so."""
    text = "datacenter_only: true\n" + BASE.replace("  jobs:\n", "  owned: {RTX-4090: 4, A100-80GB: 2}\n  jobs:\n")
    result, path = _check(tmp_path, text)
    assert result.exit_code == 0, result.output
    assert "left out by datacenter_only (not licensed for data-centre use): RTX-4090 (purchase.owned)" in result.output
    from reportgen.pipeline import load
    assert load(str(path)).expansion.purchase.owned == (("A100-80GB", 2),)
