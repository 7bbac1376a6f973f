"""Time at cluster scale (#32): MoE token dispatch and combine as an all-to-all over the expert-parallel group,
on NVLink inside a node and on each GPU's network link across nodes. First principles, hand-computed here;
no published figure was used to set it (the published MoE runs are kept as held-out evidence)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario

GPUS = load_gpus()
EST = Estimator(load_models(), GPUS)
H100 = "H100-80GB-SXM"
MOE = Scenario(model="Qwen3-30B-A3B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=16, ep_size=8,
               framework="megatron", zero_stage=1, checkpointing="none", gpu=H100)


def test_dispatch_and_combine_bytes_by_hand():
    """Qwen3-30B-A3B: 48 MoE layers, top-8 of 128 experts, hidden 2048, bf16: per micro-batch of 4,096 tokens,
    4 all-to-alls per layer (dispatch and combine, forward and backward), 7/8 of it leaving the GPU."""
    e = EST.estimate(MOE)
    assert e["moe_a2a_calls"] == 4 * 48
    assert e["moe_a2a_bytes"] == pytest.approx(4 * 48 * 4096 * 8 * 2048 * 2 * 7 / 8)
    link = GPUS[H100].link_gbps * 1e9 * EST.assumptions["comm_efficiency"]
    assert e["moe_a2a_bytes_per_s"] == pytest.approx(link)  # all 8 ranks in one node
    full = EST.estimate(replace(MOE, checkpointing="full"))
    assert full["moe_a2a_calls"] == 6 * 48  # the recomputed forward dispatches again


def test_an_expert_group_across_nodes_is_bound_by_the_network():
    inside, across = EST.estimate(MOE), EST.estimate(replace(MOE, ep_size=16))
    per_gpu_network = GPUS[H100].inter_node_gbps * 1e9 * EST.assumptions["comm_efficiency"]
    # 7 of 15 peers on NVLink, 8 across the network: the network part dominates
    assert per_gpu_network < across["moe_a2a_bytes_per_s"] < 2 * per_gpu_network
    assert across["moe_a2a_seconds"] > 3 * inside["moe_a2a_seconds"]
    assert across["train_tokens_per_s_per_gpu"] < inside["train_tokens_per_s_per_gpu"]


def test_no_all_to_all_without_expert_parallelism_or_experts():
    assert EST.estimate(replace(MOE, ep_size=1))["moe_a2a_seconds"] == 0
    dense = Scenario(model="Llama-3-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                     framework="megatron", gpu=H100)
    assert EST.estimate(dense)["moe_a2a_seconds"] == 0


def test_tensor_parallelism_over_pcie_is_priced_at_pcie_bandwidth():
    """#34 item 3: a card without NVLink (L40S, RTX-4090: PCIe 4.0 x16, 32 GB/s per direction in the GPUs
    sheet) moves TP's all-reduces at its PCIe figure, an H100 at NVLink's: the same layout's TP time is
    larger by the links' ratio (serving's decode all-reduces are priced by their latency alone)."""
    dense = Scenario(model="Llama-3-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=4,
                     tp_size=4, checkpointing="full", gpu=H100)
    nvlink = EST.estimate(dense)
    for gpu in ("L40S", "RTX-4090"):
        assert GPUS[gpu].link_gbps == 32
        pcie = EST.estimate(replace(dense, gpu=gpu))
        assert pcie["tp_link_bytes_per_s"] == pytest.approx(32e9 * EST.assumptions["comm_efficiency"])
        latency = 6 * 32 * EST.assumptions["collective_latency_us"] / 1e6  # 6 all-reduces per layer, full recompute
        ratio = (pcie["tp_comm_seconds"] - latency) / (nvlink["tp_comm_seconds"] - latency)
        assert ratio == pytest.approx(GPUS[H100].link_gbps / 32)
        assert pcie["tp_comm_seconds"] > 10 * nvlink["tp_comm_seconds"]
