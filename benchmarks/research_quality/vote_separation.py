"""Does a vote's score separate the answer from the noise? Scores real claims with the
embedded model under several prompts and prints, per prompt, the mean score of claims that
hold a gold answer and of those that do not, the AUC (the chance an answer outscores a
noise claim; 0.5 = no separation) and the top-1 rate (questions whose best-scored claim
holds the answer, against the code's first claim).

    python benchmarks/research_quality/vote_separation.py ROWS [--questions 12] [--per 4]

ROWS: a `run.py --rows` file (any runner; the claims its reports extracted, any outcome,
are scored; `first-candidate` is fast and its claims are the code's candidates). Prompts:

- `vote`: the seed's vote prompt as small-model mode asks it (`_small_votes.verify_prompt`,
  no counter passage), P(supported) calibrated against a content-free statement, the two
  answer orders averaged;
- `answers`: "Does this sentence answer the question? yes or no", P(yes) calibrated the
  same way;
- `contrast-shuffled`: `answers` minus the same prompt with the sentence's words shuffled
  (what the model reads beyond shared words);
- `vote-counter`: `vote` with the counter passage small-model mode adds (the corpus's best
  match for the claim from another page, 400 characters), as the pipeline asks it;
- `code`: the code's order (the first claim scores highest), the baseline.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real
import score as scoring


def _has(text: str, answers: Sequence[Sequence[str]]) -> bool:
    said = scoring.normalise(text)
    return any(
        any(scoring.normalise(s).strip() and scoring.normalise(s) in said for s in spellings)
        for spellings in answers
    )


def auc(pos: Sequence[float], neg: Sequence[float]) -> float:
    """P(a random *pos* score > a random *neg* score), ties half."""
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def answers_prompt(question: str, sentence: str, first: str, second: str) -> str:
    return (
        "Question: " + question + "\n\n"
        'Sentence from the documents:\n"' + sentence + '"\n\n'
        f"Does this sentence answer the question? Answer {first} or {second}."
    )


async def main_async(args: argparse.Namespace) -> None:
    from agentport.backends.local import LocalAdapter, LocalOptions, packaged_model_path
    from agentport.catalog import get_capability
    from agentport.core import CompletionConfig, Message
    from agentport.workflows.deep_research import load_corpus, research_config_for
    from agentport.workflows.deep_research._run import cap
    from agentport.workflows.deep_research._small_votes import (
        calibrated,
        verify_prompt,
        vote_probability,
    )

    gold = {q["id"]: q for q in build_real.load_questions()}
    rows = [json.loads(line) for line in args.rows_text.splitlines() if line]
    rng = random.Random(7)
    items: list[dict[str, Any]] = []
    by_corpus: dict[str, list[str]] = {}
    for r in rows:
        by_corpus.setdefault(r["corpus"], []).append(r["question"])
    for r in rows:
        q = gold.get(r["id"])
        if q is None or q["type"] == "unanswerable":
            continue
        claims = [c for c in r["report"].get("claims") or [] if c.get("claim")][: args.per]
        labels = [_has(c["claim"], q["answers"]) for c in claims]
        if not any(labels) or all(labels):
            continue  # top-1 and AUC need both kinds
        others = [x for x in by_corpus[r["corpus"]] if x != r["question"]]
        for rank, (c, label) in enumerate(zip(claims, labels, strict=True)):
            items.append(
                {
                    "id": r["id"],
                    "question": r["question"],
                    "claim": c["claim"],
                    "source": str(c.get("source", "")).removeprefix("corpus://"),
                    "answer": label,
                    "rank": rank,
                    "other": rng.choice(others),
                    "corpus": r["corpus"],
                }
            )
        if len({i["id"] for i in items}) >= args.questions:
            break
    adapter = LocalAdapter(
        get_capability("local"),
        LocalOptions(model_path=packaged_model_path(), seed=1, n_ctx=2048),
    )

    async def p_of(prompt: str, choices: tuple[str, str]) -> float | None:
        cfg = CompletionConfig(choices=choices, max_tokens=8, temperature=0.0)
        got = (await adapter.complete([Message.user(prompt)], cfg)).unwrap()
        lp = got.raw.extra.get("choice_logprobs") or {}
        return vote_probability({"supported": lp[choices[0]], "refuted": lp[choices[1]]})

    priors: dict[str, float | None] = {}

    async def vote_priors(question: str) -> None:
        for v in (0, 1):
            key = f"vote{v}:{question}"
            if key not in priors:
                priors[key] = await p_of(
                    verify_prompt(question, "N/A", "N/A", [], v, 3), ("supported", "refuted")
                )

    async def vote(question: str, claim: str, source: str) -> float:
        total = 0.0
        await vote_priors(question)
        for v in (0, 1):
            key = f"vote{v}:{question}"
            prompt = verify_prompt(question, claim, source, [], v, 3)
            p = await p_of(prompt, ("supported", "refuted"))
            total += calibrated(p or 0.5, priors[key]) / 2
        return total

    async def answers(question: str, sentence: str) -> float:
        key = f"ans:{question}"
        if key not in priors:
            priors[key] = await p_of(answers_prompt(question, "N/A", "yes", "no"), ("yes", "no"))
        p = await p_of(answers_prompt(question, sentence, "yes", "no"), ("yes", "no"))
        return calibrated(p or 0.5, priors[key])

    out = Path(args.out)
    before = json.loads(out.read_text(encoding="utf-8")) if out.exists() else []  # noqa: ASYNC240
    kept = {(i["id"], i["claim"]): i for i in before}
    corpora: dict[str, Any] = {}

    def counter_of(it: Mapping[str, Any]) -> list[tuple[str, str]]:
        corpus = corpora.get(it["corpus"])
        if corpus is None:
            chars = research_config_for("local").max_passage_chars
            folder = build_real.corpus_dir(build_real.default_cache(), it["corpus"])
            corpus = corpora[it["corpus"]] = load_corpus(folder, max_passage_chars=chars).unwrap()
        hits = corpus.search(it["claim"], 1, exclude=["corpus://" + it["source"]])
        return [(p.url.removeprefix("corpus://"), cap(" ".join(p.text.split()), 400)) for p in hits]

    async def vote_counter(it: Mapping[str, Any]) -> float:
        total = 0.0
        counter = counter_of(it)
        for v in (0, 1):
            prompt = verify_prompt(it["question"], it["claim"], it["source"], counter, v, 3)
            p = await p_of(prompt, ("supported", "refuted"))
            total += calibrated(p or 0.5, priors.get(f"vote{v}:{it['question']}")) / 2
        return total

    for n, it in enumerate(items, 1):
        it.update(kept.get((it["id"], it["claim"]), {}))
        words = it["claim"].split()
        rng.shuffle(words)
        if "vote" not in it:
            it["vote"] = await vote(it["question"], it["claim"], it["source"])
        await vote_priors(it["question"])
        if "vote-counter" not in it:
            it["vote-counter"] = await vote_counter(it)
        if "contrast-shuffled" not in it:
            it["answers"] = await answers(it["question"], it["claim"])
            it["contrast-shuffled"] = it["answers"] - await answers(it["question"], " ".join(words))
        it["code"] = -float(it["rank"])
        print(
            f"{n}/{len(items)} {it['id']} answer={it['answer']} vote={it['vote']:.2f} "
            f"counter={it['vote-counter']:.2f} contrast={it['contrast-shuffled']:.2f}",
            file=sys.stderr,
            flush=True,
        )
        done = [i for i in items if "code" in i]  # written as it goes: --table reads it
        await anyio.Path(args.out).write_text(json.dumps(done, indent=1) + "\n", encoding="utf-8")
    print(table(items))


def table(items: Sequence[Mapping[str, Any]]) -> str:
    ids = sorted({i["id"] for i in items})
    lines = [
        f"{len(items)} claims of {len(ids)} questions "
        f"({sum(bool(i['answer']) for i in items)} hold the answer)\n",
        "| score | mean (answer) | mean (noise) | AUC | top-1 |",
        "|---|--:|--:|--:|--:|",
    ]
    for key in ("vote", "vote-counter", "answers", "contrast-shuffled", "code"):
        if not all(key in i for i in items):
            continue
        pos = [float(i[key]) for i in items if i["answer"]]
        neg = [float(i[key]) for i in items if not i["answer"]]
        top = 0
        for qid in ids:
            mine = [i for i in items if i["id"] == qid]
            best = max(mine, key=lambda i: (float(i[key]), -int(i["rank"])))
            top += bool(best["answer"])
        lines.append(
            f"| {key} | {sum(pos) / len(pos):.2f} | {sum(neg) / len(neg):.2f} | "
            f"{auc(pos, neg):.2f} | {top}/{len(ids)} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows")
    parser.add_argument("--questions", type=int, default=12)
    parser.add_argument("--per", type=int, default=4, help="claims per question (code order)")
    parser.add_argument("--out", default="vote_separation.json")
    parser.add_argument("--table", action="store_true", help="print the table of --out")
    args = parser.parse_args(argv)
    if args.table:
        print(table(json.loads(Path(args.out).read_text())))
        return 0
    args.rows_text = Path(args.rows).read_text(encoding="utf-8")
    anyio.run(main_async, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
