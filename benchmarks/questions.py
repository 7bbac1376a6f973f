"""What `reportgen plan` costs per buyer question (issue #35: under 1 s of CPU each), paired with `python -c pass` in
the same run (not a test).

    python3 benchmarks/questions.py [--runs 3]

The questions are `reportgen plan -h`'s examples and the ones the issues ask (#31's serving goal, #32's DeepSeek-V3
and Mixtral-8x22B, #33's three RLHF purchases, with separate pools and with both placements compared), each over
every GPU type of the catalog unless it names one. Each runs in a fresh process, start-up included, interleaved run
by run with the others; the figures are CPU seconds (user + system), the median of the runs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import machine  # noqa: E402
from startup import BASELINE, COMMANDS, startup_costs  # noqa: E402

PLAN = [sys.executable, "-m", "reportgen", "plan"]
QUESTIONS = {
    "Llama-2-70B full fine-tuning, checkpointing": "--model Llama-2-70B --workload full --checkpointing full",
    "Llama-3-8B full fine-tuning, 10^9 tokens within 7 days": "--model Llama-3-8B --workload full --train-tokens 1e9 "
                                                              "--within 7d",
    "Llama-3.1-8B, 50 users at 32k (512 generated), 20 tokens/s": "--model Llama-3.1-8B --users 50 --context 32k "
                                                                "--gen-len 512 --min-tokens-per-s 20",
    "Llama-3.1-70B on vLLM, 32 users at 8k, first token within 1 s": "--model Llama-3.1-70B --engine vllm --users 32 "
                                                                     "--context 8k --max-ttft 1s",
    "Llama-3.1-70B on vLLM, 50 users at 32k, 20 tokens/s (#31)": "--model Llama-3.1-70B --engine vllm --users 50 "
                                                                 "--context 32k --min-tokens-per-s 20",
    "DeepSeek-V3 fp8 on vLLM (#32)": "--model DeepSeek-V3 --weight-dtype fp8 --engine vllm",
    "Mixtral-8x22B full fine-tuning (#32)": "--model Mixtral-8x22B --workload full",
    "PPO Qwen2.5-7B, vLLM rollouts (#33)": "--model Qwen2.5-7B --workload ppo --engine vllm",
    "PPO Qwen2.5-7B, separate pools": "--model Qwen2.5-7B --workload ppo --engine vllm --placement separate",
    "PPO Qwen2.5-7B, engine beside the actor and apart compared": "--model Qwen2.5-7B --workload ppo --engine vllm "
                                                                  "--compare-placements",
    "GRPO Llama-3.1-8B, 4k responses, group 8 (#33)": "--model Llama-3.1-8B --workload grpo --group-size 8 "
                                                      "--gen-len 4096 --engine vllm",
    "GRPO Qwen3-30B-A3B, 2k responses, group 8 (#33)": "--model Qwen3-30B-A3B --workload grpo --group-size 8 "
                                                       "--gen-len 2048 --engine vllm",
    "GRPO Qwen3-30B-A3B, 200 iterations within 3 days": "--model Qwen3-30B-A3B --workload grpo --group-size 8 "
                                                        "--gen-len 2048 --engine vllm --steps 200 --within 3d",
}


def question_costs(runs: int) -> dict[str, float]:
    """Each question's CPU seconds (median of `runs`), and the baseline's."""
    return startup_costs(runs, {BASELINE: COMMANDS[BASELINE], **{q: PLAN + a.split() for q, a in QUESTIONS.items()}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    costs = question_costs(args.runs)
    base = costs.pop(BASELINE)
    print(f"\n| buyer question (`reportgen plan`) | CPU s (median of {args.runs}) | above `python -c pass` "
          f"({base:.3f} s) |\n|---|---|---|")
    for name, median in costs.items():
        print(f"| {name} | {median:.2f} | {median - base:+.2f} |")
    print(machine())


if __name__ == "__main__":
    main()
