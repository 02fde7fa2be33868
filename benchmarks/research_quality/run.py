"""Answer quality of deep research on a corpus with gold answers (see world.py, score.py).

    python benchmarks/research_quality/run.py --runner oracle
    python benchmarks/research_quality/run.py --runner adversary
    python benchmarks/research_quality/run.py --backend local            # the embedded model
    python benchmarks/research_quality/run.py --backend local --oracle-retrieval
    python benchmarks/research_quality/run.py --backend codex --slice 2  # any configured one

Runners: `oracle` writes the report a perfect researcher would (must score 100 %: proves
the harness), `adversary` writes hostile reports (wrong and planted values, fabricated
quotes, malformed fields; must score near 0 and never crash), `perfect-reader` runs the
seed's full path on `openai_compat` against `FakeModelServer` scripted as a reader that
never misses a gold answer it is shown (reader.py: what is lost is lost by the pipeline,
i.e. retrieval), `--backend NAME` runs
`run_research` with that backend (the command line's mode: small-model mode for the
embedded model, the seed's full path otherwise; `--small` forces small-model mode).
`--oracle-retrieval` gives each question a corpus of its gold documents only: the ceiling
when retrieval is perfect, so the loss can be attributed to retrieval or to reading.
`--slice N` keeps the first N questions of each type. Prints a table per type and writes
every score and report to `--json` (default research_quality.json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import score as scoring
import world

Report = dict[str, Any]


def _sentence_with(docs: Mapping[str, str], paths: Sequence[str], spellings: Sequence[str]):
    for path in paths:
        for line in docs[path].splitlines():
            if any(scoring.normalise(s) in scoring.normalise(line) for s in spellings):
                return path, line.strip()
    return None


def oracle(q: Mapping[str, Any], docs: Mapping[str, str]) -> Report:
    """The report a perfect researcher writes: the gold sentences, cited and quoted."""
    if not q["answerable"]:
        return {"summary": "The documents do not answer the question.", "findings": []}
    findings, claims = [], []
    for spellings in q["answers"]:
        path, line = _sentence_with(docs, q["gold_docs"], spellings)
        findings.append({"claim": line, "sources": [f"corpus://{path}/0"], "confidence": "high"})
        claims.append(
            {"claim": line, "quote": line, "source": f"corpus://{path}/0", "outcome": "confirmed"}
        )
    # a two-hop answer cites the first hop too
    for path in q["gold_docs"]:
        if all(path not in s for f in findings for s in f["sources"]):
            line = next(x for x in docs[path].splitlines() if x and not x.startswith("#"))
            findings.append({"claim": line, "sources": [f"corpus://{path}/0"]})
    return {
        "summary": " ".join(f["claim"] for f in findings),
        "findings": findings,
        "claims": claims,
    }


_HOSTILE: list[Callable[[Mapping[str, Any]], Any]] = [
    # a confident wrong answer, citing a hard negative, with a fabricated quote
    lambda q: {
        "summary": "The answer is 42 and the town is Nowhere. " + " ".join(q.get("planted", [])),
        "findings": [{"claim": "It is 42.", "sources": ["corpus://towns/port-x.md/0"]}],
        "claims": [
            {
                "claim": "42",
                "quote": "It is 42.",
                "source": "corpus://towns/x.md/0",
                "outcome": "confirmed",
            }
        ],
    },
    # the planted value, stated
    lambda q: {
        "summary": " ".join(q.get("planted") or ["unknown"]) + " is certain.",
        "findings": [{"claim": "see summary", "sources": []}],
    },
    # malformed fields everywhere
    lambda q: {
        "summary": None,
        "findings": ["x", None, 5, {"claim": " ".join(q.get("planted", [])), "sources": "no"}],
        "claims": [None, {"outcome": "confirmed", "quote": None}],
    },
    # not a report at all
    lambda q: ["not", "a", "report"],
    # a huge, binary-ish summary
    lambda q: {
        "summary": "\x00\udcff" * 5000 + " 1,2,3 " + " ".join(q.get("planted", [])),
        "findings": [{"claim": "\u202e"}],
    },
]


def adversary(q: Mapping[str, Any], docs: Mapping[str, str]) -> Any:
    return _HOSTILE[int(q["id"].rsplit("-", 1)[1]) % len(_HOSTILE)](q)


def _gold_only(folder: Path, q: Mapping[str, Any], docs: Mapping[str, str]) -> Path | None:
    if not q["gold_docs"]:
        return None
    for rel in q["gold_docs"]:
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(docs[rel], encoding="utf-8")
    return folder


async def _model_reports(
    questions: Sequence[Mapping[str, Any]], corpus_dir: Path, args: argparse.Namespace
) -> list[tuple[Report, float]]:
    from agentport.factory import create_llm_adapter

    if args.runner != "perfect-reader":
        return await _reports(questions, corpus_dir, args, create_llm_adapter(args.backend))
    from reader import perfect_reader

    from agentport.testing import FakeModelServer

    with FakeModelServer(default=perfect_reader(questions)) as server:
        adapter = create_llm_adapter(
            "openai_compat",
            retry_attempts=1,
            openai_compat={"base_url": server.openai_base_url, "model": "fake-model"},
        )
        return await _reports(questions, corpus_dir, args, adapter)


async def _reports(
    questions: Sequence[Mapping[str, Any]], corpus_dir: Path, args: argparse.Namespace, adapter: Any
) -> list[tuple[Report, float]]:
    from agentport.workflows.deep_research import ResearchConfig, load_corpus, run_research

    small = args.small or args.backend == "local"
    config = ResearchConfig.for_small_model(small_model=small) if small else ResearchConfig()
    if getattr(args, "rounds", 0):  # 1 = the seed's single round; 2 adds the follow-up round
        config = config.model_copy(update={"rounds": args.rounds})
    shared = load_corpus(corpus_dir, max_passage_chars=config.max_passage_chars).unwrap()
    docs = _read_docs(corpus_dir)
    out: list[tuple[Report, float]] = []
    try:
        for q in questions:
            started = time.monotonic()
            corpus: Any = shared
            scratch = None
            if args.oracle_retrieval:
                scratch = Path(tempfile.mkdtemp(prefix="rq-gold-"))
                corpus = _gold_only(scratch, q, docs) or shared
            report = await run_research(q["question"], adapter, config=config, corpus=corpus)
            if scratch is not None:
                shutil.rmtree(scratch, ignore_errors=True)
            wall = time.monotonic() - started
            out.append((report.model_dump(mode="json", by_alias=True), wall))
            print(f"  {q['id']}: {wall:.1f} s", file=sys.stderr)
    finally:
        shared.close()
    return out


def _read_docs(corpus_dir: Path) -> dict[str, str]:
    return {
        p.relative_to(corpus_dir).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(corpus_dir.rglob("*.md"))
    }


def _table(rows: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]]:
    def mean(values: list[Any]) -> float | None:
        values = [float(v) for v in values if v is not None]
        return round(sum(values) / len(values), 3) if values else None

    summary: dict[str, Any] = {}
    lines = [
        f"{'type':<13}{'n':>3}{'correct':>9}{'recall':>8}{'quotes':>8}{'refuted':>9}"
        f"{'abstain':>9}{'wall s':>8}"
    ]
    for kind in world.TYPES:
        mine = [r for r in rows if r["type"] == kind]
        if not mine:
            continue
        s = {
            "n": len(mine),
            "correct": mean([r["correct"] for r in mine]),
            "recall": mean([r["recall"] for r in mine]),
            "quote_precision": mean([r["quote_precision"] for r in mine]),
            "refuted": mean([r.get("refuted") for r in mine]),
            "abstained": mean([r["abstained"] for r in mine]),
            "wall_s": mean([r.get("wall_s") for r in mine]),
        }
        summary[kind] = s

        def cell(v: float | None, pct: bool = True) -> str:
            return "-" if v is None else (f"{100 * v:.0f}%" if pct else f"{v:.1f}")

        lines.append(
            f"{kind:<13}{s['n']:>3}{cell(s['correct']):>9}{cell(s['recall']):>8}"
            f"{cell(s['quote_precision']):>8}{cell(s['refuted']):>9}{cell(s['abstained']):>9}"
            f"{cell(s['wall_s'], False):>8}"
        )
    return "\n".join(lines), summary


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Build the world in a scratch folder, get a report per question, score them."""
    work = Path(tempfile.mkdtemp(prefix="research-quality-"))
    try:
        built = world.write(work, args.seed)
        questions = [vars(q) | {} for q in built.questions]
        if args.slice:
            questions = [
                q
                for k in world.TYPES
                for q in [x for x in questions if x["type"] == k][: args.slice]
            ]
        docs = built.documents
        if args.runner in ("oracle", "adversary"):
            make = oracle if args.runner == "oracle" else adversary
            reports = [(make(q, docs), 0.0) for q in questions]
        else:
            reports = anyio.run(_model_reports, questions, work / "corpus", args)
        rows = []
        for q, (report, wall) in zip(questions, reports, strict=True):
            row = scoring.score(report, q, docs) | {"wall_s": round(wall, 2)}
            rows.append(row | {"question": q["question"], "report": report})
        table, summary = _table(rows)
        return {
            "runner": args.runner or args.backend,
            "seed": args.seed,
            "oracle_retrieval": args.oracle_retrieval,
            "table": table,
            "summary": summary,
            "rows": rows,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    who = parser.add_mutually_exclusive_group(required=True)
    who.add_argument("--runner", choices=("oracle", "adversary", "perfect-reader"))
    who.add_argument("--backend", help="a backend name (local = the embedded model)")
    parser.add_argument("--small", action="store_true", help="small-model mode on any backend")
    parser.add_argument("--oracle-retrieval", action="store_true")
    parser.add_argument("--slice", type=int, default=0, help="first N questions of each type")
    parser.add_argument("--rounds", type=int, default=0, help="search rounds (default: mode's)")
    parser.add_argument("--seed", type=int, default=world.SEED)
    parser.add_argument("--json", default="research_quality.json")
    args = parser.parse_args(argv)
    result = run(args)
    print(result["table"])
    Path(args.json).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
