"""What a GPU can run (#34): a V100 (Volta) has no bf16, so bf16 recipes, weights and caches are refused on it
with the reason, and the plan does not rank it for them; fp16 runs. Every GPU of the catalogue states it."""
from __future__ import annotations

from dataclasses import replace

from reportgen.catalog import load_gpus, load_models
from reportgen.estimate import Estimator, Scenario
from reportgen.plan import plan

EST = Estimator(load_models(), load_gpus())
V100 = "V100-32GB"
TRAIN = Scenario(model="Llama-3.2-1B", workload="full", seq_len=2048, prompt_len=0, gen_len=0, gpu=V100)
SERVE = Scenario(model="Llama-3.2-1B", workload="inference", prompt_len=512, gen_len=128, gpu=V100)


def test_every_gpu_states_bf16_and_only_volta_lacks_it():
    gpus = load_gpus()
    assert {name for name, g in gpus.items() if not g.bf16} == {V100}
    assert all(g.bf16 in (0, 1) for g in gpus.values())


def test_bf16_work_is_refused_on_a_v100_and_fp16_runs():
    for s in (TRAIN, replace(TRAIN, precision="amp-bf16"), replace(TRAIN, precision="bf16"), SERVE,
              replace(SERVE, weight_dtype="fp16")):  # the last: its KV cache is still bf16
        assert "no bf16" in EST.skip_reason(s), s.label()
    assert EST.skip_reason(replace(TRAIN, precision="fp16-mixed")) is None
    assert EST.skip_reason(replace(SERVE, weight_dtype="fp16", kv_dtype="fp16")) is None
    assert EST.skip_reason(replace(TRAIN, gpu="A100-80GB")) is None


def test_the_plan_does_not_rank_a_v100_for_bf16_and_says_why():
    gpus = ["A100-80GB", V100]
    found = plan(EST, TRAIN, gpus)
    assert [o.gpu for o in found.options] == ["A100-80GB"]
    miss = found.misses[0]
    assert miss.gpu == V100 and miss.nearest is None and [r.code for r in miss.skipped] == ["bf16_gpu"]
    assert V100 in [o.gpu for o in plan(EST, replace(TRAIN, precision="fp16-mixed"), gpus).options]
