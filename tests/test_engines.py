"""Training engines (input engine: hf | deepspeed | fsdp2 | megatron | litgpt) and the loss input, against
documented numbers (LitGPT's model-code terms are checked against its code run on the oracle:
test_oracle_arch.py, litgpt family).

None of these terms is fitted: each follows the engine's documented defaults or its code, cited in the
term's source. The oracle cannot run a multi-GPU engine, so these tests pin the terms to what the
engines document (tests/data/facts.json keeps the quoted tables), and the published fine-tuning
figures (tests/test_published_finetune.py) check them against real runs.
"""
from dataclasses import replace

import pytest

from refdata import fact
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario, rlhf_scenario
from reportgen.model.shape import model_row
from reportgen.model.terms import ASSUMPTION_DEFAULTS
from reportgen.model.units import GiB
from reportgen.report.i18n import fit_limit_text, load_catalogue

EST = Estimator(load_models(), load_gpus())
PSI = 7_000_000_000  # Generic-7B: exactly 7e9 parameters


def _full(engine, zero, gpus, **kw):
    return Scenario(model="Generic-7B", workload="full", precision="bf16-mixed", seq_len=512, prompt_len=0,
                    gen_len=0, num_gpus=gpus, zero_stage=zero, framework=engine, **kw)


def _states(e):
    return e["weights"] + e["gradients"] + e["optimizer_states"] + e["master_weights"]


@pytest.mark.parametrize("d", [2, 8])
def test_megatron_bytes_per_parameter_are_the_documented_table(d):
    """Megatron-LM docs (formula-0176): bf16 parameters with fp32 gradients take 18 bytes per parameter, and
    6 + 12/d with the distributed optimizer (zero_stage 1 here)."""
    table = fact("formula-0176")["value"]["bf16 params, fp32 grads"]
    assert table == {"non_distributed": 18, "distributed_optimizer": "6 + 12/d"}
    assert _states(EST.estimate(_full("megatron", 0, d))) == 18 * PSI
    assert _states(EST.estimate(_full("megatron", 1, d))) == 6 * PSI + 12 * PSI // d


@pytest.mark.parametrize("zero", [0, 1])
def test_megatron_gradient_buffer_is_resident_before_backward(zero):
    """The same docs: the contiguous grad buffer holds zeros between iterations and all model grads after
    backward; it is allocated once, so the whole table is resident when backward starts (an engine that frees
    its gradients, DeepSpeed here, has none then)."""
    e = EST.estimate(_full("megatron", zero, 8))
    assert e["persistent_gradients"] == e["gradients"] == 4 * PSI and e["transient_gradients"] == 0
    assert e["model_states"] == _states(e)
    assert (e["phase_backward_start"] - e["training_activations"] - e["loss_backward_bytes"]
            - e["framework_backward_bytes"]) == _states(e)
    ds = EST.estimate(_full("deepspeed", zero, 8))
    assert ds["persistent_gradients"] == 0


def test_deepspeed_zero3_keeps_its_gradient_partition_through_forward():
    """DeepSpeed's stage3.py allocates grad_partitions_flat_buffer (every trainable parameter's partition, in
    the model's 16-bit dtype under ZeRO) once, on the GPU unless the optimizer is offloaded, and zero_grad never
    frees it; ZeRO-2's gradients come and go with backward."""
    z3 = EST.estimate(_full("deepspeed", 3, 8))
    assert z3["persistent_gradients"] == z3["gradients"] == 2 * PSI // 8
    assert z3["model_states"] == (z3["weights"] + z3["master_weights"] + z3["optimizer_states"] + 2 * PSI // 8
                                  + z3["zero3_buffer"])
    assert (z3["phase_backward_start"] - z3["training_activations"] - z3["loss_backward_bytes"]
            - z3["framework_backward_bytes"]) == z3["model_states"]
    # the step adds no second copy: its transient gradients are none
    assert z3["phase_optimizer_step"] == z3["model_states"] + z3["optimizer_step_bytes"] + z3["framework_step_bytes"]
    assert EST.estimate(_full("deepspeed", 2, 8))["persistent_gradients"] == 0
    assert EST.estimate(_full("deepspeed", 3, 8, offload="optimizer"))["persistent_gradients"] == 0
    assert EST.estimate(_full("hf", 3, 8))["persistent_gradients"] == 0  # ZeRO as the paper counts it


def test_a_colocated_group_keeps_every_role_s_gradient_buffer():
    """PPO under DeepSpeed ZeRO-3 (what OpenRLHF runs): the actor's and the critic's gradient partitions both
    stay allocated, so the group's resident states hold both while either role is at its peak."""
    actor = Scenario(model="Llama-2-7B", workload="full", precision="bf16-mixed", batch_size=4, prompt_len=512,
                     gen_len=512, num_gpus=8, zero_stage=3, checkpointing="full", framework="deepspeed")
    group = EST.estimate_group(rlhf_scenario(name="ppo", algorithm="ppo", placement="colocated", actor=actor))
    roles = dict(group.roles)
    trained = [roles[r] for r in ("actor", "critic")]
    assert all(e["persistent_gradients"] == e["gradients"] > 0 for e in trained)
    assert roles["reference"]["persistent_gradients"] == roles["reward"]["persistent_gradients"] == 0
    buffers = sum(e["persistent_gradients"] for e in trained)
    assert group["model_states"] == sum(e["model_states"] for e in roles.values())
    without = sum(e["weights"] + e["master_weights"] + e["optimizer_states"] + e["zero3_buffer"] for e in roles.values())
    assert group["model_states"] == without + buffers


@pytest.mark.parametrize("d", [2, 8])
def test_deepspeed_optimizer_step_counts_the_fp32_gradient_partition(d):
    """DeepSpeed's memory docs (formula-0177) count 16 bytes per parameter over the GPUs for ZeRO-2 (fp32
    master 4 + Adam 8 + fp32 gradient partition 4) and 18 for ZeRO-3 (the 16-bit parameter shard 2 besides).
    The estimator keeps the 16-bit gradient partition apart (2/d; stage3.py's grad_partitions_flat_buffer,
    which the docs' estimator leaves out) and the unpartitioned 16-bit weights of ZeRO-2 as the ZeRO paper does."""
    docs = fact("formula-0177")["value"]
    assert docs["ZeRO-3 no offload"] == "largest_layer_memory + 18 * params / total_gpus"
    z2 = EST.estimate(_full("deepspeed", 2, d))
    assert z2["master_weights"] + z2["optimizer_states"] + z2["ds_fp32_grad_bytes"] == 16 * PSI // d
    z3 = EST.estimate(_full("deepspeed", 3, d))
    assert z3["weights"] + z3["master_weights"] + z3["optimizer_states"] + z3["ds_fp32_grad_bytes"] == 18 * PSI // d
    # the partition exists at the step, on top of the hf engine's step
    hf = EST.estimate(_full("hf", 2, d))
    assert z2["phase_optimizer_step"] - hf["phase_optimizer_step"] == 4 * PSI // d


def test_deepspeed_reduce_bucket_is_the_documented_default():
    """reduce_bucket_size defaults to 5e8 elements (deepspeed/runtime/zero/config.py): one 16-bit bucket of
    1e9 bytes, two with overlap_comm at ZeRO-1/2 (stage_1_and_2.py's ipg buffers), one flat buffer at ZeRO-3."""
    assert ASSUMPTION_DEFAULTS["ds_reduce_bucket_size"] == 500_000_000
    assert EST.estimate(_full("deepspeed", 2, 8))["ds_reduce_bucket_bytes"] == 1_000_000_000
    overlap = Estimator(load_models(), load_gpus(), {"ds_overlap_comm": 1})
    assert overlap.estimate(_full("deepspeed", 2, 8))["ds_reduce_bucket_bytes"] == 2_000_000_000
    assert overlap.estimate(_full("deepspeed", 3, 8))["ds_reduce_bucket_bytes"] == 1_000_000_000
    # the HF Trainer's "auto" sets hidden_size²: 4096² elements for a 7B model
    auto = Estimator(load_models(), load_gpus(), {"ds_reduce_bucket_size": 4096 * 4096})
    assert auto.estimate(_full("deepspeed", 2, 8))["ds_reduce_bucket_bytes"] == 2 * 4096 * 4096
    # LoRA with fp32 adapters reduces fp32 gradients
    lora = Scenario(model="Llama-2-7B", workload="lora", seq_len=512, num_gpus=8, zero_stage=2, framework="deepspeed")
    assert EST.estimate(lora)["ds_reduce_bucket_bytes"] == 4 * 500_000_000


def test_deepspeed_zero3_gathers_and_keeps_parameters_by_its_documented_limits():
    """stage3_prefetch_bucket_size 5e7 and stage3_max_live_parameters / stage3_max_reuse_distance 1e9
    (deepspeed/runtime/zero/config.py)."""
    largest = model_row(EST.spec("Llama-2-7B"))["largest_layer_params"]
    s = Scenario(model="Llama-2-7B", workload="full", precision="bf16-mixed", seq_len=512, num_gpus=8, zero_stage=3,
                 framework="deepspeed")
    e = EST.estimate(s)
    assert e["zero3_buffer"] == 2 * (largest + 50_000_000)  # the layer computed + 5e7 prefetched elements
    assert e["ds_live_params_bytes"] == 2 * 500_000_000  # reuse distance 1e9: half of it on each side of the turn
    small = Estimator(load_models(), load_gpus(), {"ds_max_live_parameters": 100_000_000})
    assert small.estimate(s)["ds_live_params_bytes"] == 2 * 100_000_000
    assert EST.estimate(replace(s, framework="hf"))["zero3_buffer"] == 2 * 2 * largest


def test_fsdp2_holds_its_root_unit_a_layer_and_a_reduce_scatter_buffer():
    """One rank of FSDP2 on a fake process group (tools/oracle/measure_fsdp2.py): the root unit (embedding, LM
    head, final norm) stays unsharded through forward and backward beside the decoder layer being gathered; in
    backward one unit's unsharded gradients and the previous unit's reduce-scatter input in reduce_dtype (fp32
    by default here, as the tutorial's and torchtitan's MixedPrecisionPolicy)."""
    row = model_row(EST.spec("Llama-2-7B"))
    largest = row["largest_layer_params"]
    s = Scenario(model="Llama-2-7B", workload="full", precision="bf16-mixed", seq_len=512, num_gpus=8, zero_stage=3,
                 framework="fsdp2")
    e = EST.estimate(s)
    assert e["zero3_buffer"] == 2 * (row["embedding_params"] + row["lm_head_params"] + 4096 + row["decoder_layer_params"])
    assert e["fsdp_reduce_scatter_bytes"] == largest * (2 + 4)
    hf = EST.estimate(replace(s, framework="hf"))  # ZeRO-3 gathering two of the largest unit, no reduce-scatter buffer
    # late in backward FSDP2 gathers the first decoder layer ahead of the second (bf16: 2 bytes), while the shards of
    # the root and of those two layers (bf16 gradients over 8 GPUs) are not made yet
    root = row["embedding_params"] + row["lm_head_params"] + 4096
    unmade = -(-root * 2 // 8) + 2 * -(-row["decoder_layer_params"] * 2 // 8) - row["decoder_layer_params"] * 2
    assert e["fsdp_backward_unmade_bytes"] == unmade
    assert e["phase_backward_end"] - hf["phase_backward_end"] == (largest * 6 + e["zero3_buffer"] - hf["zero3_buffer"]
                                                                  - unmade)


def test_zero_on_one_gpu_is_allowed_where_the_framework_allows_it():
    one = Scenario(model="Llama-2-7B", workload="full", seq_len=512, num_gpus=1, zero_stage=2, offload="optimizer")
    assert EST.skip_check(one).code == "zero_one_rank"
    assert EST.skip_check(replace(one, framework="deepspeed")) is None  # ZeRO-Offload on a single GPU
    assert EST.skip_check(replace(one, framework="megatron")).code == "offload_framework"  # Megatron-FSDP
    assert EST.skip_check(replace(one, framework="megatron", offload="none")) is None
    assert EST.skip_check(replace(one, framework="fsdp2", zero_stage=1)).code == "framework_zero"
    assert EST.skip_reason(replace(one, framework="fsdp2", zero_stage=1)) == (
        "the fsdp2 framework does not run ZeRO-1 (FSDP2 shards with stage 2 or 3, LitGPT's scripts one device or, on "
        "several, FSDP's full sharding: ZeRO-3)")
    assert EST.skip_check(replace(one, framework="litgpt", zero_stage=1)).code == "framework_zero"
    # LitGPT's scripts shard fully (FSDP's default FULL_SHARD) on several GPUs: neither ZeRO-2 nor plain DDP
    several = replace(one, framework="litgpt", offload="none", num_gpus=4)
    assert {EST.skip_check(replace(several, zero_stage=z)).code for z in (0, 2)} == {"framework_zero"}
    assert EST.skip_check(replace(several, zero_stage=3)) is None
    # LitGPT's scripts run FSDP without CPU offload (finetune/full.py: FSDPStrategy(cpu_offload=False))
    assert EST.skip_check(replace(one, framework="litgpt", zero_stage=3)).code == "offload_litgpt"
    assert EST.skip_check(replace(one, framework="litgpt", zero_stage=3, offload="none")) is None


def test_the_hf_engine_adds_nothing():
    for zero in (0, 1, 2, 3):
        e = EST.estimate(_full("hf", zero, 8))
        assert e["framework_backward_bytes"] == e["framework_step_bytes"] == 0


def test_loss_dtype_follows_the_recipe():
    """transformers upcasts the logits (4 bytes per log-probability); a 16-bit loss without autocast keeps 2;
    autocast runs log_softmax in fp32 whatever the loss code does (checked against oracle peaks in
    test_oracle_arch.py, loss family)."""
    s = Scenario(model="Llama-3.2-1B", workload="full", precision="bf16", seq_len=1024)
    assert EST.estimate(s)["loss_bytes"] == 4
    assert EST.estimate(replace(s, loss="compute"))["loss_bytes"] == 2
    assert EST.estimate(replace(s, loss="compute", precision="amp-bf16"))["loss_bytes"] == 4
    v = EST.spec("Llama-3.2-1B").vocab_size
    assert EST.estimate(replace(s, loss="compute-chunked"))["loss_backward_bytes"] == 2 * 1024 * v


def test_ddp_keeps_a_second_copy_of_the_gradients_in_its_buckets():
    """PyTorch DistributedDataParallel with gradient_as_bucket_view=False (the HF Trainer's and Lightning's
    default) copies every gradient into all-reduce buckets allocated for the whole run (pytorch/pytorch#41954);
    one GPU has no DDP, and ZeRO, FSDP, DeepSpeed and Megatron use their own buffers. published_finetune.json's
    pub-ft-065 (GPT-2 XL under Lightning DDP on 4 GPUs) checks it against a published peak."""
    one, four = EST.estimate(_full("hf", 0, 1)), EST.estimate(_full("hf", 0, 4))
    assert one["ddp_bucket_bytes"] == 0
    assert four["ddp_bucket_bytes"] == four["gradients"] == 2 * PSI  # bf16-mixed: 16-bit gradients
    assert four["model_states"] - one["model_states"] == four["gradients"]
    assert four["allocated_peak"] - one["allocated_peak"] == four["gradients"]
    assert EST.estimate(_full("litgpt", 0, 4))["ddp_bucket_bytes"] == 2 * PSI
    for engine, zero in (("hf", 1), ("hf", 3), ("deepspeed", 2), ("fsdp2", 3), ("megatron", 0)):
        assert EST.estimate(_full(engine, zero, 4))["ddp_bucket_bytes"] == 0, (engine, zero)
    lora = EST.estimate(replace(_full("hf", 0, 4), workload="lora", lora_rank=16))
    assert lora["ddp_bucket_bytes"] == lora["gradients"] < PSI // 100  # only the trainable adapters' gradients


def test_an_engine_whose_weights_pass_its_budget_shows_what_it_needs_and_does_not_fit():
    """Found by the property test: BLOOM-560M in FP32 under vLLM with gpu_memory_utilization 0.05 on an A10
    (1.1 GiB of budget for 2.2 GB of weights). vLLM does not start ("No available memory for the cache
    blocks"); the device total said the budget alone, less than the allocated peak."""
    s = Scenario(model="BLOOM-560M", workload="inference", precision="fp32", weight_dtype="fp32", kv_dtype="fp32",
                 batch_size=1, prompt_len=0, gen_len=1, gpu="A10", serving_engine="vllm",
                 gpu_memory_utilization=0.05078125, max_num_batched_tokens=16)
    e = EST.estimate(s)
    assert e["engine_budget_bytes"] < e["weights"]
    assert e["kv_pool_bytes"] == 0
    assert e["allocated_peak"] <= e["reserved_peak"] <= e["device_total"] <= e["recommended"]
    assert e["device_total"] >= e["engine_needed_bytes"] > e["engine_budget_bytes"]
    # what binds: its weights past its budget (vLLM's 'No available memory for the cache blocks'), said as such
    assert (e["fits"], e["fits_recommended"], e["fit_limit"]) == (0, 0, 5)
    assert fit_limit_text(e.values, 1536, load_catalogue("en")) == (
        f"the weights take {e['weights'] / GiB:,.2f} GiB per GPU, more than the engine's budget of "
        f"{e['engine_budget_bytes'] / GiB:,.2f} GiB (its gpu_memory_utilization of the GPU's "
        f"{e['gpu_memory_bytes'] / GiB:,.2f} GiB): it cannot start")


def test_fsdp_mixed_precision_is_fsdp2s_alone():
    s = Scenario(model="Llama-2-7B", workload="full", precision="fsdp-bf16", seq_len=512, num_gpus=8, zero_stage=3,
                 framework="fsdp2")
    assert EST.skip_check(s) is None
    assert EST.skip_reason(replace(s, framework="deepspeed")) == (
        "precision fsdp-bf16 is FSDP2's mixed-precision policy: it needs framework fsdp2, not deepspeed")
    assert EST.skip_check(replace(s, zero_stage=0, framework="fsdp2")).code == "framework_zero"
    # fp32 states sharded, the gathered unit and its unsharded gradients in bf16
    e, amp = EST.estimate(s), EST.estimate(replace(s, precision="amp-bf16"))
    assert e["optimizer_states"] == amp["optimizer_states"] and e["weights"] == amp["weights"]
    assert 2 * e["zero3_buffer"] == amp["zero3_buffer"]
