"""Procurement search: the cheapest GPU layouts that fit a workload."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable, Sequence

from .estimate import Estimate, Estimator, GroupEstimate, RlhfScenario, Scenario

GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class PlanOption:
    gpu: str
    num_gpus: int
    zero_stage: int
    tp_size: int
    estimate: Estimate | GroupEstimate

    @property
    def purchase_usd(self) -> float:
        return self.estimate["purchase_usd"]

    @property
    def total_gpus(self) -> int:
        """GPUs to buy: num_gpus per role pool when RLHF roles sit on separate pools."""
        return int(self.estimate["total_gpus"]) if isinstance(self.estimate, GroupEstimate) else self.num_gpus

    def to_json(self) -> dict:
        out = {"gpu": self.gpu, "num_gpus": self.num_gpus, "total_gpus": self.total_gpus, "zero_stage": self.zero_stage,
               "tp_size": self.tp_size, "purchase_usd": self.purchase_usd, "per_gpu_bytes": self.estimate.per_gpu_bytes}
        if isinstance(self.estimate, GroupEstimate):
            out["gpus_per_role"] = {r: e.scenario.num_gpus for r, e in self.estimate.roles}
        return out


def _layouts(s: Scenario, n: int) -> Iterable[tuple[int, int]]:
    """(zero_stage, tp_size) candidates for n GPUs: ZeRO for training, TP for inference."""
    if s.workload == "inference":
        return [(0, tp) for tp in TP_SIZES if tp <= n]
    return [(z, 1) for z in ((0,) if n == 1 else (0, 1, 2, 3))]


def _relayout(s: Scenario, gpu: str, n: int, zero: int, tp: int) -> Scenario:
    return replace(s, gpu=gpu, num_gpus=n, zero_stage=zero, tp_size=tp)


def cheapest_per_gpu(estimator: Estimator, scenario: Scenario | RlhfScenario, gpus: Sequence[str],
                     counts: Sequence[int] = GPU_COUNTS) -> list[PlanOption]:
    """For each GPU type, the smallest GPU count (then lowest ZeRO stage / TP) whose recommended
    budget fits; GPU types where nothing up to max(counts) fits are left out."""
    options = []
    for gpu in dict.fromkeys(gpus):  # a type named twice is searched once
        best = _search(estimator, scenario, gpu, counts)
        if best:
            options.append(best)
    return sorted(options, key=lambda o: (o.purchase_usd, o.total_gpus, o.gpu))


def _search(estimator: Estimator, scenario, gpu: str, counts: Sequence[int]) -> PlanOption | None:
    base = scenario.actor if isinstance(scenario, RlhfScenario) else scenario
    for n in counts:
        for zero, tp in _layouts(base, n):
            candidate = _relayout(base, gpu, n, zero, tp)
            if estimator.skip_check(candidate):
                continue
            if isinstance(scenario, RlhfScenario):
                est = estimator.estimate_group(scenario.relayout(gpu=gpu, num_gpus=n, zero_stage=zero, tp_size=tp))
            else:
                est = estimator.estimate(candidate)
            if est["fits_recommended"]:
                return PlanOption(gpu, n, zero, tp, est)
    return None
