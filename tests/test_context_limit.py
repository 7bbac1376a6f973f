"""A context longer than the model's positions is refused, as vLLM refuses a longer max_model_len.

The limit is derived from the config as vLLM derives max_model_len (vllm/config.py _get_and_verify_max_len, at
vllm-project/vllm c0c2335): the smallest position key, times the RoPE scaling factor unless the scaling type already
counts it (llama3, longrope, su); yarn scales its original length. The published context lengths below are the model
makers' own words, copied here with their sources; the rules are checked on configs edited in each test.
"""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from reportgen.cli import main
from reportgen.model.catalog import load_gpus, load_models
from reportgen.model.estimate import Estimator, Scenario
from reportgen.model.spec import spec_from_config

EST = Estimator(load_models(), load_gpus())
MODELS = Path(__file__).parents[1] / "presets" / "models"

# Published context lengths (tokens), each with where it is stated.
PUBLISHED_CONTEXT = {
    # Meta, Llama 3 model card (github.com/meta-llama/llama3/blob/main/MODEL_CARD.md): "Context length 8k" (8,192)
    "Llama-3-8B": 8192,
    # Meta, Llama 3.1 model card (github.com/meta-llama/llama-models/blob/main/models/llama3_1/MODEL_CARD.md):
    # "Context length 128k" (131,072)
    "Llama-3.1-8B": 131072,
    # Mistral AI, "Mixtral of experts" (mistral.ai/news/mixtral-of-experts, 2023-12-11): "It gracefully handles a
    # context of 32k tokens" (32,768)
    "Mixtral-8x7B": 32768,
    # Meta, Llama 2 paper (arXiv:2307.09288, Table 1): context length 4k (4,096)
    "Llama-2-7B": 4096,
}
# Qwen, Qwen3-8B model card (huggingface.co/Qwen/Qwen3-8B, "Processing Long Texts"): "Qwen3 natively supports context
# lengths of up to 32,768 tokens ... we recommend using the YaRN method" with "rope_scaling": {"rope_type": "yarn",
# "factor": 4.0, "original_max_position_embeddings": 32768}, to "handle up to 131,072 tokens".
QWEN3_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
QWEN3_YARN_CONTEXT = 131072


def _config(name: str) -> dict:
    return json.loads((MODELS / f"{name.lower()}.json").read_text())["config"]


def _limit(config: dict) -> int:
    return spec_from_config(config, name="edited", source="test").max_positions


@pytest.mark.parametrize("model", sorted(PUBLISHED_CONTEXT))
def test_the_limit_is_the_published_context_length(model):
    assert EST.specs[model].max_positions == PUBLISHED_CONTEXT[model]


def test_yarn_extends_a_model_to_its_makers_stated_length():
    config = _config("Qwen3-8B")
    assert _limit({**config, "rope_scaling": QWEN3_YARN}) == QWEN3_YARN_CONTEXT
    # transformers 5 writes the same block as rope_parameters
    assert _limit({**config, "rope_parameters": QWEN3_YARN}) == QWEN3_YARN_CONTEXT


@pytest.mark.parametrize("rope_type,scaled", [("linear", True), ("dynamic", True), ("llama3", False),
                                              ("longrope", False), ("su", False)])
def test_rope_scaling_multiplies_the_positions_unless_its_type_already_counts_them(rope_type, scaled):
    config = _config("Llama-2-7B")
    limit = _limit({**config, "rope_scaling": {"rope_type": rope_type, "factor": 2.0}})
    assert limit == config["max_position_embeddings"] * (2 if scaled else 1)
    # the older spelling of the type's key reads alike
    assert _limit({**config, "rope_scaling": {"type": rope_type, "factor": 2.0}}) == limit


def test_the_smallest_position_key_counts_and_a_config_without_one_has_no_limit():
    config = _config("Llama-2-7B")
    assert _limit({**config, "seq_length": 2048}) == 2048
    assert _limit({**config, "seq_length": 8192}) == 4096
    without = {k: v for k, v in config.items() if k != "max_position_embeddings"}
    assert _limit(without) == 0
    # BLOOM's ALiBi states no positions: any context is asked of it
    assert EST.specs["BLOOM-560M"].max_positions == 0
    long = Scenario(model="BLOOM-560M", workload="inference", prompt_len=100_000, gen_len=512, gpu="H100-80GB-SXM")
    assert EST.skip_reason(long) is None


def _error(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def test_estimate_refuses_one_token_past_the_limit_in_one_line():
    common = ("estimate", "--model", "Llama-3-8B", "--workload", "inference", "--gen-len", "512")
    assert _error(*common, "--prompt-len", str(8192 - 512))[0] == 0
    code, out = _error(*common, "--prompt-len", str(8192 - 511))
    assert code == 1 and out.count("\n") == 1 and "Traceback" not in out
    assert out.startswith("Error: Llama-3-8B takes at most 8192 tokens of context") and "8193 asked" in out


def test_training_past_the_positions_runs_with_rope_not_with_learned_positions():
    """A RoPE model trains past its positions (extending its context: DeepSpeed issue #3901 fine-tunes Falcon-7B, 2,048
    positions, at 4k, a published run of the validation set, offload-005); GPT-2's learned position embeddings end at
    its 1,024 (its n_positions)."""
    falcon = Scenario(model="Falcon-7B", workload="full", seq_len=4096, prompt_len=0, gen_len=0, gpu="A100-40GB")
    assert EST.specs["Falcon-7B"].max_positions == 2048 and EST.skip_reason(falcon) is None
    gpt2 = Scenario(model="GPT-2", workload="full", seq_len=1024, prompt_len=0, gen_len=0, gpu="H100-80GB-SXM")
    assert EST.skip_reason(gpt2) is None
    assert "1025 asked" in EST.skip_reason(gpt2.with_inputs(seq_len=1025))


def test_the_longest_rollout_counts():
    # a PPO actor's responses average 1,024 tokens but the longest reaches 3,584: its prompt and longest pass 4,096
    actor = Scenario(model="Llama-2-7B", workload="ppo", prompt_len=1024, gen_len=1024, gpu="H100-80GB-SXM")
    assert EST.skip_reason(actor.with_inputs(max_gen_len=3072)) is None
    assert "4608 asked" in EST.skip_reason(actor.with_inputs(max_gen_len=3584))


def test_plan_says_why_no_gpu_serves_a_context_the_model_cannot_take():
    code, out = _error("plan", "--model", "Llama-3-70B", "--workload", "inference", "--engine", "vllm",
                       "--users", "50", "--context", "32768")
    assert code == 1 and out.count("\n") == 1
    assert out.startswith("Error: no layout can run on any GPU type: Llama-3-70B takes at most 8192 tokens")
    assert _error("plan", "--model", "Llama-3.1-70B", "--workload", "inference", "--engine", "vllm",
                  "--users", "50", "--context", "32768", "--gpu-type", "H100-80GB-SXM")[0] == 0


@pytest.mark.parametrize("preset", ["default", "finetune", "inference-serving", "moe", "ppo-rlhf", "procurement"])
def test_the_bundled_presets_ask_no_model_past_its_positions_but_the_serving_sweeps_longest(preset):
    """The inference-serving preset sweeps 4k, 32k and 128k contexts over six models: Llama-3-8B's 8k positions end
    before 32k and Mixtral-8x7B's 32k before 128k, and those scenarios are skipped with the reason; no other preset
    asks past a model's positions."""
    from conftest import bundled_report
    report = bundled_report(preset)
    refused = [s.scenario for s in report.skipped if s.reason.code == "context_positions"]
    expected = ({("Llama-3-8B", 32768), ("Llama-3-8B", 131072), ("Mixtral-8x7B", 131072)} if preset == "inference-serving"
                else set())
    assert {(s.model, s.prompt_len + s.gen_len) for s in refused} == expected


def test_an_engines_context_per_sequence_stops_at_the_models_positions():
    """One sequence alone in a vLLM pool of 400k tokens may still have only the model's 8,192 (its model card's 8k);
    at 256 sequences the pool's share binds."""
    s = Scenario(model="Llama-3-8B", workload="inference", serving_engine="vllm", prompt_len=1000, gen_len=100,
                 gpu="H100-80GB-SXM")
    alone = EST.estimate(s)
    assert alone["kv_pool_tokens"] > 8192 and alone["max_context_tokens"] == PUBLISHED_CONTEXT["Llama-3-8B"]
    crowded = EST.estimate(s.with_inputs(batch_size=256))
    assert crowded["max_context_tokens"] < 8192
    assert crowded["max_context_tokens"] <= crowded["kv_pool_tokens"] / 256


def test_the_catalogue_listing_says_how_long_a_context_each_model_takes():
    listed = {r["name"]: r for r in json.loads(CliRunner().invoke(main, ["models", "--json"]).output)}
    for model, tokens in PUBLISHED_CONTEXT.items():
        assert listed[model]["max_positions"] == tokens
    table = CliRunner().invoke(main, ["models"]).output.splitlines()
    assert table[0].rstrip().endswith("context (tokens)")
    assert next(line for line in table if line.startswith("Llama-3-8B ")).rstrip().endswith("8,192")
    assert next(line for line in table if line.startswith("BLOOM-560M ")).rstrip().endswith("-")  # none stated
