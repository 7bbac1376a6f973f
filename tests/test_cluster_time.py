"""Time at cluster scale (#32): MoE token dispatch and combine as an all-to-all over the expert-parallel group,
on NVLink inside a node and on each GPU's network link across nodes. First principles, hand-computed here;
no published figure was used to set it (the published MoE runs are kept as held-out evidence)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.units import MiB

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
    assert e["moe_network_bytes"] == 0 and e["moe_nvlink_bytes"] == e["moe_a2a_bytes"]  # all 8 ranks in one node
    link = GPUS[H100].link_gbps * 1e9 * EST.assumptions["comm_efficiency"]
    assert e["moe_a2a_seconds"] == pytest.approx(e["moe_a2a_bytes"] / link + 4 * 48 * EST.assumptions["collective_latency_us"] / 1e6)
    full = EST.estimate(replace(MOE, checkpointing="full"))
    assert full["moe_a2a_calls"] == 6 * 48  # the recomputed forward dispatches again


def test_an_expert_group_across_nodes_is_bound_by_the_network():
    inside, across = EST.estimate(MOE), EST.estimate(replace(MOE, ep_size=16))
    # 7 of 15 peers on NVLink, 8 across the network: the network part dominates
    assert across["moe_network_bytes"] == pytest.approx(across["moe_a2a_bytes"] * 8 / 15, rel=1e-12)
    assert across["moe_nvlink_bytes"] == pytest.approx(across["moe_a2a_bytes"] * 7 / 15, rel=1e-12)
    per_gpu_network = GPUS[H100].inter_node_gbps * 1e9 * EST.assumptions["comm_efficiency"]
    assert across["moe_a2a_seconds"] > across["moe_network_bytes"] / per_gpu_network
    assert across["moe_a2a_seconds"] > 3 * inside["moe_a2a_seconds"]
    assert across["train_tokens_per_s_per_gpu"] < inside["train_tokens_per_s_per_gpu"]


def test_deepep_sends_a_token_once_to_each_node_of_its_experts():
    """DeepEP's internode dispatch (its README: tokens go over RDMA to each target node once and NVLink forwards them
    to the experts' GPUs there). Qwen3-235B-A22B at TP 2, ETP 1, EP 32: four nodes of 8 expert ranks; top-8 of 128
    experts drawn evenly hit each of the 3 other nodes with probability 1 − (3/4)^8 (hand-computed here), where
    NCCL's all-to-all sends 8 × 24/32 copies of each token over the network. DeepEP's stages overlap: the slower
    bounds the time."""
    scenario = Scenario(model="Qwen3-235B-A22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                        num_gpus=256, tp_size=2, etp_size=1, ep_size=32, pp_size=8, vp_size=4, grad_accum_steps=128,
                        framework="megatron", zero_stage=1, checkpointing="selective", gpu=H100)
    nccl, deepep = EST.estimate(scenario), EST.estimate(replace(scenario, moe_dispatcher="deepep"))
    calls = nccl["moe_a2a_calls"]
    layers = EST.tables["Models"]["Qwen3-235B-A22B"]["num_moe_layers"]
    assert calls == pytest.approx(4 * 12, rel=1e-12) and layers == 94  # the busiest stage: 12 of 94 (uneven chunks)
    token_bytes = calls * 4096 / 2 * 4096 * 2  # each GPU's sequence shard, hidden 4096, bf16
    assert nccl["moe_network_bytes"] == pytest.approx(token_bytes * 8 * 24 / 32, rel=1e-12)
    assert deepep["moe_network_bytes"] == pytest.approx(token_bytes * 3 * (1 - 0.75 ** 8), rel=1e-12)
    assert deepep["moe_nvlink_bytes"] == pytest.approx(token_bytes * 8 * 31 / 32, rel=1e-12)
    wire = EST.assumptions["comm_efficiency"] * 1e9
    latency = calls * EST.assumptions["collective_latency_us"] / 1e6
    assert deepep["moe_a2a_seconds"] == pytest.approx(max(deepep["moe_network_bytes"] / GPUS[H100].inter_node_gbps,
                                                          deepep["moe_nvlink_bytes"] / GPUS[H100].link_gbps) / wire
                                                      + latency, rel=1e-12)
    assert deepep["moe_a2a_seconds"] < nccl["moe_a2a_seconds"] / 2
    assert deepep["train_tokens_per_s_per_gpu"] > nccl["train_tokens_per_s_per_gpu"]


@pytest.mark.parametrize("ep,tp", [(4, 1), (8, 1), (8, 2), (16, 1), (16, 4), (32, 2), (64, 1)])
def test_deepep_never_slower_than_nccl_and_the_same_inside_a_node(ep, tp):
    """Property: fewer network bytes (1 − (1 − 1/n)^k ≤ k/n) and stages that overlap never take longer than NCCL's
    all-to-all where NVLink is at least the network's speed; inside one node the two move the same bytes."""
    scenario = replace(MOE, num_gpus=max(64, ep * tp), tp_size=tp, etp_size=1, ep_size=ep)
    nccl, deepep = EST.estimate(scenario), EST.estimate(replace(scenario, moe_dispatcher="deepep"))
    if nccl["ep_nodes"] == 1:
        assert deepep["moe_a2a_seconds"] == pytest.approx(nccl["moe_a2a_seconds"], rel=1e-12)
    else:
        assert deepep["moe_network_bytes"] < nccl["moe_network_bytes"]
        assert deepep["moe_a2a_seconds"] < nccl["moe_a2a_seconds"]


def _megatron_ep_ranks_in_node(world: int, tp: int, etp: int, ep: int, pp: int, gpus_per_node: int) -> int:
    """The oracle: Megatron-Core's expert rank groups (megatron/core/parallel_state.py, RankGenerator with the
    order 'tp-cp-ep-dp-pp', ETP in TP's place and CP 1: a rank is etp_i + etp·(ep_i + ep·(edp_i + edp·pp_i))),
    enumerated rank by rank; the most ranks of one EP group that share a node."""
    edp = world // pp // (etp * ep)
    most = 0
    for etp_i in range(etp):
        for edp_i in range(edp):
            for pp_i in range(pp):
                ranks = [etp_i + etp * (ep_i + ep * (edp_i + edp * pp_i)) for ep_i in range(ep)]
                nodes = [r // gpus_per_node for r in ranks]
                most = max(most, max(nodes.count(n) for n in set(nodes)))
    return most


@pytest.mark.parametrize("tp,etp,ep,pp", [(1, 1, 8, 1), (2, 1, 8, 1), (4, 1, 8, 2), (2, 1, 32, 8), (2, 2, 8, 1),
                                          (4, 4, 4, 1), (2, 1, 16, 2), (8, 8, 4, 1), (4, 2, 16, 1)])
def test_an_expert_groups_ranks_in_a_node_follow_megatrons_rank_order(tp, etp, ep, pp):
    """Megatron-Core numbers an expert group's ranks ETP first: at ETP 1 an EP group is consecutive GPUs, whatever
    the attention's TP (Qwen3-235B-A22B's published layouts: TP 2, ETP 1, EP 8 is one node's 8 GPUs, not 4 on NVLink
    and 4 across the network). Fails on dividing the node by tp_size."""
    world = 256
    scenario = Scenario(model="Qwen3-235B-A22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                        num_gpus=world, tp_size=tp, etp_size=etp, ep_size=ep, pp_size=pp, grad_accum_steps=2 * pp,
                        framework="megatron", zero_stage=1, checkpointing="full", gpu=H100)
    assert EST.skip_check(scenario) is None
    node = GPUS[H100].gpus_per_node
    assert EST.estimate(scenario)["ep_ranks_in_node"] == _megatron_ep_ranks_in_node(world, tp, etp, ep, pp, node)


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


# A grouped GEMM reads each of its experts' weights however few tokens reach them (the roofline of #32's
# "grouped-GEMM efficiency as a function of tokens per expert"): first principles, no figure fitted.
ONE_GPU = replace(MOE, num_gpus=1, ep_size=1, framework="hf", zero_stage=0, seq_len=256)


def _crossover_tokens(s: Scenario) -> float:
    """Tokens per micro-batch at which a full fine-tune's routed experts take as long to stream their weights (read
    in forward and backward, their gradient written: 3 × 2 bytes a parameter) as to compute (6 FLOPs a parameter for
    the top-k of E experts a token reaches), from the GPU sheet and Qwen3-30B-A3B's config (128 experts, top 8)."""
    g = GPUS[s.gpu]
    flops = g.bf16_dense_tflops * 1e12 * g.train_efficiency
    bytes_per_s = g.memory_bandwidth_gbps * 1e9 * EST.assumptions["decode_bandwidth_efficiency"]
    return flops / bytes_per_s * (3 * 2) / 6 * 128 / 8


def test_few_tokens_per_expert_leave_the_experts_memory_bound():
    """Below the crossover the experts' weight traffic binds: doubling the micro-batch adds only the other layers'
    time (and the experts' time stays); above it the micro-batch's time is proportional to its tokens, as a dense
    model's is at every size."""
    crossover = _crossover_tokens(ONE_GPU)
    assert 2000 < crossover < 6000  # about 3,200 tokens: each of the 128 experts gets about 200 of them
    time = {b: EST.estimate(replace(ONE_GPU, batch_size=b)) for b in (1, 2, 64, 128)}
    assert time[1]["expert_traffic_seconds"] > 10 * time[1]["expert_compute_seconds"]
    assert 1 < time[2]["train_compute_seconds"] / time[1]["train_compute_seconds"] < 1.5
    assert time[128]["train_compute_seconds"] == pytest.approx(2 * time[64]["train_compute_seconds"], rel=1e-12)
    dense = {b: EST.estimate(replace(ONE_GPU, model="Qwen3-8B", batch_size=b)) for b in (1, 2)}
    assert dense[2]["train_compute_seconds"] == pytest.approx(2 * dense[1]["train_compute_seconds"], rel=1e-12)
    assert dense[1]["expert_traffic_seconds"] == dense[1]["expert_compute_seconds"] == 0


def test_the_expert_roofline_turns_where_first_principles_put_it():
    crossover = _crossover_tokens(ONE_GPU)
    below, above = (EST.estimate(replace(ONE_GPU, batch_size=1, seq_len=int(crossover * f))) for f in (0.97, 1.03))
    assert below["expert_traffic_seconds"] > below["expert_compute_seconds"]
    assert above["expert_traffic_seconds"] < above["expert_compute_seconds"]


def test_expert_parallelism_divides_the_weights_each_gpu_streams():
    """EP 8 leaves each GPU 16 of the 128 experts: an eighth of the traffic; LoRA's frozen experts write no weight
    gradient (2 passes of 3); full checkpointing reads them once more (4)."""
    whole = EST.estimate(ONE_GPU)
    spread = EST.estimate(replace(ONE_GPU, num_gpus=8, ep_size=8, framework="megatron", zero_stage=1))
    assert spread["expert_traffic_seconds"] == pytest.approx(whole["expert_traffic_seconds"] / 8, rel=1e-12)
    lora = EST.estimate(replace(ONE_GPU, workload="lora"))
    recomputed = EST.estimate(replace(ONE_GPU, checkpointing="full"))
    assert lora["expert_traffic_seconds"] == pytest.approx(whole["expert_traffic_seconds"] * 2 / 3, rel=1e-12)
    assert recomputed["expert_traffic_seconds"] == pytest.approx(whole["expert_traffic_seconds"] * 4 / 3, rel=1e-12)


def test_load_imbalance_slows_and_fills_the_busiest_expert_gpu():
    """moe_load_imbalance 1.5 with EP 8: the busiest GPU's experts compute 1.5 times as long, its all-to-all carries
    1.5 times the tokens, and its routed tokens' saved tensors grow by half (the rest of the layer does not); one GPU
    holding every expert (EP 1) and a dense model change nothing."""
    even = EST.estimate(replace(MOE, ep_size=8))
    busy = EST.estimate(replace(MOE, ep_size=8, moe_load_imbalance=1.5))
    assert busy["expert_compute_seconds"] == pytest.approx(1.5 * even["expert_compute_seconds"], rel=1e-12)
    assert busy["moe_a2a_bytes"] == pytest.approx(1.5 * even["moe_a2a_bytes"], rel=1e-12)
    assert busy["train_compute_seconds"] - even["train_compute_seconds"] == pytest.approx(
        0.5 * even["expert_compute_seconds"], rel=1e-9)
    assert busy["step_seconds"] > even["step_seconds"]
    # Qwen3-30B-A3B: every one of the 48 layers routes each token to 8 experts of width 768, gated; Megatron-Core
    # keeps 3 expert widths (gate and up, the activation's output) and per pair the permuted 16-bit input and an
    # fp32 routing probability
    grown = (busy["layer_saved_per_token"] - even["layer_saved_per_token"])
    assert grown == pytest.approx(0.5 * (2 * 8 * 768 * 3 + 8 * (2 * 2048 + 4)), rel=1e-12)
    assert busy["activations"] > even["activations"]
    for same in (replace(MOE, ep_size=1, num_gpus=16), replace(MOE, model="Qwen3-8B", ep_size=1)):
        assert EST.estimate(replace(same, moe_load_imbalance=1.5)).values == EST.estimate(same).values


def test_a_pipeline_moves_at_its_busiest_stages_pace():
    """Narayanan et al. 2021 §2.2: every slot of a 1F1B step waits for the slowest stage. With the split the memory
    terms take, the last stage holds ⌈L ÷ pp⌉ layers and the LM head: Llama-3-8B (32 layers, a 128,256 × 4,096 head,
    2.4 layers' worth of FLOPs) over 4 stages computes 8 layers and the head per micro-batch, not a quarter of the
    model (hand-computed here from the model's sizes and the GPU's peak and efficiency)."""
    scenario = Scenario(model="Llama-3-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                        pp_size=4, grad_accum_steps=16, framework="megatron", zero_stage=1, checkpointing="none",
                        gpu=H100)
    e = EST.estimate(scenario)
    gpu = GPUS[H100]
    head = 4096 / (gpu.bf16_dense_tflops * 1e12) * 6 * 128256 * 4096 / gpu.train_efficiency
    assert e["head_compute_seconds"] == pytest.approx(head, rel=1e-12)
    layers = (e["train_compute_seconds"] - head) / 32
    assert e["stage_compute_seconds"] == pytest.approx(8 * layers + head, rel=1e-12)
    assert e["stage_compute_seconds"] > 1.1 * e["train_compute_seconds"] / 4  # the head: (8 + 2.4) against 8.6
    assert e["step_seconds"] >= e["pipeline_slots"] * e["stage_compute_seconds"]
    alone = EST.estimate(replace(scenario, pp_size=1, num_gpus=2))
    assert alone["stage_compute_seconds"] == alone["train_compute_seconds"]
    # Qwen3-235B-A22B at PP 32: the busiest stage's 3 of 94 layers and a head of about 2.4 layers' FLOPs (about 1.9
    # layers' time: the layers' attention runs at the lower attention efficiency), against 94 ÷ 32 layers
    deep = EST.estimate(Scenario(model="Qwen3-235B-A22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                                 num_gpus=256, tp_size=2, etp_size=1, ep_size=8, pp_size=32, vp_size=3,
                                 grad_accum_steps=512, framework="megatron", zero_stage=1, checkpointing="selective",
                                 gpu=H100))
    assert deep["pp_stage_layers"] == 3
    assert 1.55 < deep["stage_compute_seconds"] / (deep["train_compute_seconds"] / 32) < 1.65


def test_tensor_parallel_overlap_hides_what_the_stage_compute_covers():
    """Megatron-Core's --tp-comm-overlap (torchtitan's async TP): the all-gathers and reduce-scatters run beside the
    matrix multiplications, so a micro-batch waits only for what its stage's compute does not cover, and nothing else
    moves in time (Megatron-LM's 2024 H100 table, GPT 177B on TP 8 × PP 6: 13.5 % of the step was TP communication);
    under megatron the device total adds Transformer Engine's userbuffers (module/base.py initialize_ub). It needs
    training under megatron or fsdp2, with sequence parallelism where there is TP: anything else is refused by name;
    at TP 1 it changes nothing (NeMo and Megatron-Bridge turn the flag off there with a warning; Megatron-LM's own
    arguments refuse it), so a plan asked for it still weighs TP 1."""
    scenario = Scenario(model="Llama-3.1-70B", workload="full", seq_len=8192, prompt_len=0, gen_len=0, num_gpus=64,
                        tp_size=8, pp_size=4, grad_accum_steps=16, framework="megatron", zero_stage=1,
                        checkpointing="none", gpu=H100)
    serial, hidden = EST.estimate(scenario), EST.estimate(replace(scenario, tp_overlap="on"))
    tp, compute = serial["tp_comm_seconds"], serial["stage_compute_seconds"]
    assert 0 < tp < compute and serial["tp_exposed_seconds"] == tp and hidden["tp_exposed_seconds"] == 0
    assert serial["step_seconds"] - hidden["step_seconds"] == pytest.approx(serial["pipeline_slots"] * tp, rel=1e-9)
    # what PyTorch's allocator holds does not move; Transformer Engine's userbuffers sit beside it: ten buffers of
    # the micro-batch's tokens × hidden, the six all-gathers' in FP8 where the linear layers are
    assert hidden["allocated_peak"] == serial["allocated_peak"] and hidden["reserved_peak"] == serial["reserved_peak"]
    ub = hidden["tp_overlap_buffer_bytes"]
    assert serial["tp_overlap_buffer_bytes"] == 0 and ub == 8192 * 8192 * (4 * 2 + 6 * 2) == 1280 * MiB
    assert hidden["device_total"] - serial["device_total"] == ub
    fp8 = EST.estimate(replace(scenario, tp_overlap="on", precision="fp8-te"))
    assert fp8["tp_overlap_buffer_bytes"] == 8192 * 8192 * (4 * 2 + 6 * 1)
    titan = replace(scenario, tp_overlap="on", framework="fsdp2", zero_stage=3, pp_size=1)
    assert EST.estimate(titan)["tp_overlap_buffer_bytes"] == 0
    # where the communication outlasts the compute (a slow link between nodes), the rest stays exposed
    slow = replace(EST.gpus[H100], link_gbps=1, nvls=0)
    crawling = Estimator(load_models(), {**EST.gpus, H100: slow}).estimate(replace(scenario, tp_overlap="on"))
    assert crawling["tp_comm_seconds"] > crawling["stage_compute_seconds"]
    assert crawling["tp_exposed_seconds"] == pytest.approx(
        crawling["tp_comm_seconds"] - crawling["stage_compute_seconds"], rel=1e-12)
    for refused in (replace(scenario, tp_overlap="on", framework="hf"),
                    replace(scenario, tp_overlap="on", sequence_parallel="off"),
                    replace(scenario, tp_overlap="on", tp_size=1, framework="deepspeed")):
        reason = EST.skip_check(refused)
        assert reason is not None and reason.code == "tp_overlap", (refused, reason)
    assert EST.skip_check(replace(scenario, tp_overlap="on", framework="fsdp2", zero_stage=3, pp_size=1)) is None
    alone = replace(scenario, tp_size=1, pp_size=4)
    assert EST.skip_check(replace(alone, tp_overlap="on")) is None
    assert EST.estimate(replace(alone, tp_overlap="on")).values == EST.estimate(alone).values


def test_the_combined_1f1b_schedule_hides_the_all_to_all_behind_compute():
    """Megatron-Core's --overlap-moe-expert-parallel-comm: a slot takes the longer of its compute and its
    all-to-all, not their sum (pub-tr-035's layout: EP32 over four nodes with DeepEP, PP 8 × VP 4), the compute slowed
    while the all-to-all runs beside it by the 20 of 132 SMs its kernels hold (DeepEP's default in Megatron-Core);
    Megatron runs it for MoE models under EP > 1, and with a pipeline only interleaved: anything else is refused by
    name."""
    scenario = Scenario(model="Qwen3-235B-A22B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                        num_gpus=256, tp_size=2, etp_size=1, ep_size=32, pp_size=8, vp_size=4, grad_accum_steps=128,
                        framework="megatron", zero_stage=1, checkpointing="selective", moe_dispatcher="deepep",
                        gpu=H100)
    serial, hidden = EST.estimate(scenario), EST.estimate(replace(scenario, ep_overlap="on"))
    assert serial["slot_seconds"] == pytest.approx(serial["stage_compute_seconds"] + serial["moe_a2a_seconds"],
                                                   rel=1e-12)
    compute, a2a = hidden["stage_compute_seconds"], hidden["moe_a2a_seconds"]
    assert hidden["slot_seconds"] == pytest.approx(max(a2a, compute + 20 / 132 * a2a), rel=1e-12)
    assert a2a == serial["moe_a2a_seconds"] > 0 and compute > a2a  # compute-bound: the SMs' share shows
    assert serial["step_seconds"] - hidden["step_seconds"] == pytest.approx(
        serial["pipeline_slots"] * min(compute, (1 - 20 / 132) * a2a), rel=1e-9)
    for refused in (replace(scenario, ep_overlap="on", vp_size=1), replace(scenario, ep_overlap="on", ep_size=1),
                    replace(scenario, ep_overlap="on", framework="fsdp2", zero_stage=3, vp_size=1),
                    Scenario(model="Llama-3-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=8,
                             framework="megatron", ep_overlap="on", gpu=H100)):
        reason = EST.skip_check(refused)
        assert reason is not None and reason.code == "ep_overlap", (refused, reason)
    assert EST.skip_check(replace(scenario, ep_overlap="on")) is None
    assert EST.skip_check(replace(scenario, ep_overlap="on", pp_size=1, vp_size=1, num_gpus=64)) is None


@pytest.mark.parametrize("tp,gpus,nics", [(1, 32, 8), (2, 32, 4), (4, 32, 2), (8, 32, 1), (8, 8, None), (1, 8, None)])
def test_a_data_parallel_group_reduces_over_the_nics_of_its_gpus_in_each_node(tp, gpus, nics):
    """Every GPU of a node reduces its gradients at once, each in its own data-parallel group: beside TP t a group has
    8 ÷ t GPUs in each node of its span and moves its data over their NICs (one where TP 8 fills the node), the
    node's eight rails shared by the t groups; a group inside one node has NVLink. (Until 2026-12-07 every group
    across nodes had all eight NICs: TP 8's gradient traffic 8× too fast.)"""
    e = EST.estimate(Scenario(model="Llama-3.1-70B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                              num_gpus=gpus, tp_size=tp, framework="megatron", zero_stage=1, gpu=H100))
    gpu, efficiency = GPUS[H100], EST.assumptions["comm_efficiency"]
    per_gpu = gpu.link_gbps if nics is None else min(gpu.link_gbps, nics * gpu.inter_node_gbps)
    assert e["dp_link_bytes_per_s"] == pytest.approx(per_gpu * 1e9 * efficiency)


def test_a_tensor_parallel_group_across_nodes_moves_over_the_nics_of_a_node():
    """TP 16 on H100 nodes of 8: the group's ring leaves each node over that node's 8 NICs (8 × 50 GB/s, below
    NVLink's 450); inside a node TP has NVLink. (Until 2026-12-07 a TP group across nodes counted a NIC per member:
    16, and got NVLink's whole rate.)"""
    gpu, efficiency = GPUS[H100], EST.assumptions["comm_efficiency"]
    for tp, per_gpu in ((8, gpu.link_gbps), (16, min(gpu.link_gbps, gpu.gpus_per_node * gpu.inter_node_gbps))):
        e = EST.estimate(Scenario(model="Llama-3.1-70B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                                  num_gpus=16, tp_size=tp, framework="megatron", zero_stage=1, gpu=H100))
        assert e["tp_link_bytes_per_s"] == pytest.approx(per_gpu * 1e9 * efficiency)
    assert gpu.gpus_per_node * gpu.inter_node_gbps < gpu.link_gbps  # the case tells the two rules apart


@pytest.mark.parametrize("framework,zero,bytes_per_param", [("megatron", 1, 4 + 2), ("megatron", 0, 2 * 4),
                                                            ("deepspeed", 1, 2 + 2), ("deepspeed", 2, 2 + 2)])
def test_zero_1_and_2_reduce_scatter_the_gradients_and_gather_the_working_weights(framework, zero, bytes_per_param):
    """Data-parallel bytes a GPU sends per step, Llama-3.1-8B (8,030,261,248 parameters) over 16 ranks: ZeRO-1 and -2
    (Megatron's distributed optimizer) reduce-scatter the gradients and all-gather the updated weights in their
    working dtype: Megatron's fp32 gradients and bf16 weights 4 + 2 bytes a parameter, DeepSpeed's bf16 ones 2 + 2;
    plain data parallelism all-reduces the gradients, twice their bytes. (Until 2026-12-07 ZeRO-1 and -2 counted
    twice the gradients: Megatron's 8.)"""
    e = EST.estimate(Scenario(model="Llama-3.1-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0,
                              num_gpus=16, framework=framework, zero_stage=zero, gpu=H100))
    assert e["dp_comm_bytes"] == pytest.approx(15 / 16 * bytes_per_param * 8_030_261_248, rel=1e-12)


def test_fp8_primary_weights_are_gathered_in_one_byte():
    """Megatron's --fp8-param-gather (fp8-te-params): the distributed optimizer all-gathers the updated decoder
    weights in FP8, 1 byte, and the embedding and the untied LM head (128,256 × 4,096 each on Llama-3.1-8B) in bf16;
    the gradients are reduce-scattered in fp32 as under fp8-te, whose gather is 2 bytes a parameter."""
    params, embedding = 8_030_261_248, 128_256 * 4096
    base = Scenario(model="Llama-3.1-8B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, num_gpus=16,
                    framework="megatron", zero_stage=1, gpu=H100, precision="fp8-te")
    fp8, primary = EST.estimate(base), EST.estimate(replace(base, precision="fp8-te-params"))
    assert fp8["dp_comm_bytes"] == pytest.approx(15 / 16 * (4 + 2) * params, rel=1e-12)
    gathered = 2 * 2 * embedding + 1 * (params - 2 * embedding)
    assert primary["dp_comm_bytes"] == pytest.approx(15 / 16 * (4 * params + gathered), rel=1e-12)
