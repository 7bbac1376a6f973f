"""The fleet of the decision page (reportgen/planning/fleet.py): its schedules keep their promises, and its choice
costs what a brute-force search over every fleet, pool size and order of jobs costs."""
from __future__ import annotations

import itertools
import random

import pytest

from reportgen.planning.fleet import JobOption, Pool, Slot, choose_fleet, hours_above_owned, schedule, smallest_pool

DAY = 86400.0
COUNTS = (1, 2, 4, 8, 16, 24, 32, 40, 48)


def _run(job, gpus, days, start=0.0, deadline=90.0, gpu="A"):
    return JobOption(job, "train", gpu, gpus, days * DAY, gpus * days * 24, start * DAY, deadline * DAY)


def _serve(job, gpus, start=0.0, horizon=90.0, gpu="A", hours_per_day=24):
    held = (horizon - start) * DAY
    return JobOption(job, "serve", gpu, gpus, held, gpus * held / 3600 * hours_per_day / 24, start * DAY, horizon * DAY)


def _check(slots, options, pool_gpus):
    """Every job placed once, inside its window, and never more GPUs at once than the pool has."""
    by_job = {o.job: o for o in options}
    assert sorted(s.job for s in slots) == sorted(by_job)
    for s in slots:
        o = by_job[s.job]
        assert s.gpus == o.gpus and s.end_seconds - s.start_seconds == pytest.approx(o.seconds)
        assert s.start_seconds >= o.start_seconds and s.end_seconds <= o.deadline_seconds + 1e-6
        if o.serving:
            assert s.start_seconds == o.start_seconds
    for t in {s.start_seconds for s in slots}:
        assert sum(s.gpus for s in slots if s.start_seconds <= t < s.end_seconds) <= pool_gpus


def test_two_runs_share_a_pool_one_after_the_other_when_their_deadlines_allow():
    runs = [_run("a", 8, 10, deadline=20), _run("b", 8, 10, deadline=20)]
    assert smallest_pool(runs, COUNTS).num_gpus == 8
    slots = schedule(runs, 8)
    _check(slots, runs, 8)
    assert [s.start_seconds / DAY for s in slots] == [0, 10]
    tight = [_run("a", 8, 10, deadline=15), _run("b", 8, 10, deadline=15)]
    assert smallest_pool(tight, COUNTS).num_gpus == 16


def test_a_served_model_holds_its_gpus_from_its_start_and_runs_fill_around_it():
    options = [_serve("chat", 8, start=14), _run("ft", 16, 10, deadline=30), _run("lora", 8, 20, start=10, deadline=40)]
    pool = smallest_pool(options, COUNTS)
    _check(pool.slots, options, pool.num_gpus)
    # the fine-tune on 16 GPUs in days 0-10; then the LoRA (8) beside the served model (8) from day 14 at the latest
    assert pool.num_gpus == 16


def test_earliest_deadline_first_is_not_always_enough_and_the_exact_search_finds_the_order():
    # Earliest deadline first places "later" (due day 25, released day 10) at days 10-20; "long" (due 30) then
    # starts at 20 and ends at 35. Placing "long" first (0-15) and "later" after it (15-25) meets both on 8 GPUs.
    options = [_run("long", 8, 15, deadline=30), _run("later", 8, 10, start=10, deadline=25),
               _run("small", 4, 15, deadline=40)]
    assert schedule(options, 8) is None
    found = smallest_pool(options, COUNTS)
    assert found.num_gpus == 8
    _check(found.slots, options, 8)
    assert [(s.job, s.start_seconds / DAY) for s in found.slots] == [("long", 0), ("later", 15), ("small", 25)]


def _random_portfolio(rng: random.Random):
    types = ["A", "B", "C"][: rng.choice((2, 3))]
    jobs = [f"j{i}" for i in range(rng.choice((2, 3, 4)))]
    options = {}
    for j in jobs:
        serving = rng.random() < 0.25
        start = rng.choice((0, 0, 10, 20))
        per_type = {}
        for t in types:
            if rng.random() < 0.2:
                continue  # this job does not run on this type
            gpus = rng.choice((1, 2, 4, 8, 16))
            if serving:
                per_type[t] = _serve(j, gpus, start=start, gpu=t)
            else:
                days = rng.choice((3, 7, 14, 30))
                per_type[t] = _run(j, gpus, days, start=start, deadline=min(90, start + days + rng.choice((0, 5, 30, 60))),
                                   gpu=t)
        options[j] = per_type
    prices = {t: rng.choice((1000, 2500, 8000, 30000)) for t in types}
    return types, options, prices


def _brute_force(types, options, prices, max_types):
    """Every assignment of jobs to GPU types, every pool size, every order: the least (price, GPUs)."""
    jobs = list(options)
    best = None
    for assignment in itertools.product(types, repeat=len(jobs)):
        if len(set(assignment)) > max_types or any(t not in options[j] for j, t in zip(jobs, assignment)):
            continue
        total_price, total_gpus = 0, 0
        for t in set(assignment):
            members = [options[j][t] for j, a in zip(jobs, assignment) if a == t]
            runs = [i for i, o in enumerate(members) if not o.serving]
            n = next((n for n in COUNTS for order in itertools.permutations(runs)
                      if schedule(members, n, order) is not None), None)
            if n is None:
                break
            total_price += n * prices[t]
            total_gpus += n
        else:
            if best is None or (total_price, total_gpus) < best:
                best = (total_price, total_gpus)
    return best


@pytest.mark.parametrize("seed", range(60))
def test_the_fleet_costs_what_a_brute_force_search_finds(seed):
    rng = random.Random(seed)
    types, options, prices = _random_portfolio(rng)
    for max_types in (1, 2):
        choice = choose_fleet(options, types, lambda gpu: COUNTS, lambda pools: 0.0, prices, max_types)
        expected = _brute_force(types, options, prices, max_types)
        if expected is None:
            assert choice.best is None
            continue
        assert (choice.best.purchase_usd, choice.best.num_gpus) == expected
        for pool in choice.best.pools:
            members = [o for per in options.values() for o in per.values()
                       if o.gpu == pool.gpu and o.job in {s.job for s in pool.slots}]
            _check(pool.slots, members, pool.num_gpus)


def test_a_job_no_gpu_type_runs_is_named_and_no_fleet_is_chosen():
    options = {"ft": {"A": _run("ft", 8, 5)}, "huge": {}}
    choice = choose_fleet(options, ["A"], lambda gpu: COUNTS, lambda pools: 0.0, {"A": 1000})
    assert choice.best is None and choice.unplaced == ("huge",)


def test_utilisation_is_busy_hours_over_the_pools_hours():
    pool = Pool("A", 8, (), busy_gpu_hours=8 * 24 * 45)
    assert pool.utilisation(90 * DAY) == pytest.approx(0.5)


def _random_owned(rng: random.Random, types):
    """GPUs already owned: none, or one or two types (possibly one not offered for sale, "Z")."""
    kinds = rng.choice(((), (types[0],), ("Z",), (types[-1], "Z")))
    return {t: rng.choice((1, 3, 8, 12)) for t in kinds}


def _with_owned_type(options, rng: random.Random):
    """Each job may also run on "Z", a type only owned."""
    for j, per in options.items():
        if per and rng.random() < 0.6:
            o = next(iter(per.values()))
            per["Z"] = JobOption(j, o.kind, "Z", o.gpus, o.seconds, o.busy_gpu_hours, o.start_seconds,
                                 o.deadline_seconds)


def _brute_force_owned(types, options, prices, max_types, owned):
    """Every assignment of jobs to the types offered or owned; per type the smallest pool that schedules its jobs
    (the owned GPUs, more only of a type offered); a type bought beyond what is owned counts toward max_types;
    the owned GPUs always count. The least (price, GPUs)."""
    jobs = list(options)
    every = list(types) + [t for t in owned if t not in types]
    best = None
    for assignment in itertools.product(every, repeat=len(jobs)):
        if any(t not in options[j] for j, t in zip(jobs, assignment)):
            continue
        total_price, total_gpus, bought = 0, sum(owned.values()), 0
        for t in set(assignment):
            members = [options[j][t] for j, a in zip(jobs, assignment) if a == t]
            runs = [i for i, o in enumerate(members) if not o.serving]
            base = owned.get(t, 0)
            sizes = ([base] if base else []) + ([base + c for c in COUNTS] if t in types else [])
            n = next((n for n in sizes for order in itertools.permutations(runs)
                      if schedule(members, n, order) is not None), None)
            if n is None:
                break
            total_price += (n - base) * prices.get(t, 0)
            total_gpus += n - base
            bought += n > base
        else:
            if bought <= max_types and (best is None or (total_price, total_gpus) < best):
                best = (total_price, total_gpus)
    return best


@pytest.mark.parametrize("seed", range(40))
def test_with_gpus_owned_the_fleet_costs_what_a_brute_force_search_finds(seed):
    """Owned GPUs are in every fleet at no price; more of an offered type may be bought beside them. The
    choice equals the brute force's (price, GPUs), never costs more than buying with nothing owned, and its
    pools hold every owned GPU."""
    rng = random.Random(1000 + seed)
    types, options, prices = _random_portfolio(rng)
    owned = _random_owned(rng, types)
    _with_owned_type(options, rng)
    for max_types in (1, 2):
        choice = choose_fleet(options, types, lambda gpu: COUNTS, lambda pools: 0.0, prices, max_types, owned)
        expected = _brute_force_owned(types, options, prices, max_types, owned)
        if expected is None:
            assert choice.best is None
            continue
        best = choice.best
        assert (best.purchase_usd, best.num_gpus) == expected
        assert {p.gpu: p.owned_gpus for p in best.pools if p.owned_gpus} == owned
        assert sum(p.new_gpus > 0 for p in best.pools) <= max_types
        without = choose_fleet({j: {t: o for t, o in per.items() if t != "Z"} for j, per in options.items()},
                               types, lambda gpu: COUNTS, lambda pools: 0.0, prices, max_types)
        if without.best is not None:
            assert best.purchase_usd <= without.best.purchase_usd
        for pool in best.pools:
            members = [per[pool.gpu] for per in options.values()
                       if pool.gpu in per and per[pool.gpu].job in {s.job for s in pool.slots}]
            _check(pool.slots, members, pool.num_gpus)


def test_a_job_only_an_owned_type_runs_is_placed_on_the_owned_gpus_alone():
    options = {"ft": {"Z": _run("ft", 8, 5, gpu="Z")}, "serve": {"A": _serve("serve", 2), "Z": _serve("serve", 4, gpu="Z")}}
    choice = choose_fleet(options, ["A"], lambda gpu: COUNTS, lambda pools: 0.0, {"A": 1000}, 2, {"Z": 8})
    # the served model fits beside the run only on bought GPUs: 12 Z would be needed, and Z cannot be bought
    assert [(p.gpu, p.num_gpus, p.owned_gpus) for p in choice.best.pools] == [("Z", 8, 8), ("A", 2, 0)]
    assert choice.best.purchase_usd == 2000


@pytest.mark.parametrize("seed", range(30))
def test_busy_hours_above_the_owned_gpus_add_up_day_by_day(seed):
    """hours_above_owned against a day-by-day sum (the slots start and end on whole days): each day the GPUs
    held beyond the owned ones, busy in the day's share."""
    rng = random.Random(seed)
    slots = []
    for k in range(rng.randint(1, 6)):
        start = rng.randint(0, 40)
        slots.append(Slot(f"j{k}", rng.choice((1, 2, 4, 8)), start * DAY, (start + rng.randint(1, 30)) * DAY,
                          rng.choice((1.0, 0.5, 1 / 3))))
    owned = rng.choice((0, 1, 4, 8, 100))
    expected = 0.0
    for day in range(80):
        inside = [s for s in slots if s.start_seconds <= day * DAY < s.end_seconds]
        held = sum(s.gpus for s in inside)
        if held > owned:
            expected += (held - owned) * sum(s.gpus * s.busy_share for s in inside) / held * 24
    assert hours_above_owned(slots, owned) == pytest.approx(expected, rel=1e-12, abs=1e-9)
    if owned == 0:
        assert expected == pytest.approx(sum(s.gpus * s.busy_share * (s.end_seconds - s.start_seconds) / 3600
                                             for s in slots))
