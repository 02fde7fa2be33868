"""Answer quality of deep research on corpora with gold answers (see score.py).

Two sets of corpora and questions:

- the real documentation (`--real [CORPUS ...]`): the docs of three pinned packages in
  three markups, built by build_real.py (run it once; nothing is fetched here), with the
  90 questions of real_questions.toml; tables per corpus and type;
- the synthetic world (world.py, the default): a fictional gazetteer, the harness's own
  unit test (every runner must behave as designed on it).

    python benchmarks/research_quality/build_real.py                   # once: the corpora
    python benchmarks/research_quality/run.py --real --backend local     # the embedded model
    python benchmarks/research_quality/run.py --real --runner first-candidate
    python benchmarks/research_quality/run.py --real --runner perfect-reader
    python benchmarks/research_quality/run.py --real --backend local --oracle-retrieval
    python benchmarks/research_quality/run.py --real click --backend codex --slice 2
    python benchmarks/research_quality/run.py --runner oracle            # the world

Runners: `oracle` writes the report a perfect researcher would (must score 100 %: proves
the harness), `adversary` writes hostile reports (wrong and planted values, fabricated
quotes, malformed fields; must score near 0 and never crash), `perfect-reader` runs the
seed's full path on `openai_compat` against `FakeModelServer` scripted as a reader that
never misses a gold answer it is shown (reader.py: what is lost is lost by the pipeline,
i.e. retrieval), `first-candidate` runs small-model mode with the embedded model's
settings against a fake model that always takes the first option the code offers (no
model: the baseline a deciding model must beat), `--backend NAME` runs `run_research`
with that backend and the settings `agentport research` gives it (small-model mode for
the embedded model, the seed's full path otherwise; `--small` forces small-model mode).
`--oracle-retrieval` gives each question a corpus of its gold documents only (and a
planted question's near-copy): the ceiling when retrieval is perfect, so the loss can be
attributed to retrieval or to reading. `--slice N` keeps the first N questions of each
type (of each corpus); `--ids`, `--types` pick questions. The agentport imported is the
first on the path (set PYTHONPATH to measure a branch); its folder is in the JSON.
Prints the tables (markdown) and writes every score and report to `--json`; `--rows
FILE` appends each scored row as it ends and `--resume` skips the rows FILE holds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real
import score as scoring
import world

Report = dict[str, Any]


def _sentence_with(docs: Mapping[str, str], paths: Sequence[str], spellings: Sequence[str]):
    """The first sentence of *paths* holding one of *spellings* (the whole paragraph, lines
    joined, when the answer spans sentences)."""
    from reader import _paragraphs

    def has(text: str) -> bool:
        return any(scoring.normalise(s) in scoring.normalise(text) for s in spellings)

    for path in paths:
        for para in _paragraphs(docs[path], rows=True):
            if has(para):
                pieces = re.split(scoring.SENTENCE_END, para)
                return path, next((p for p in pieces if has(p)), para)
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
    """A corpus of *q*'s gold documents only, and of a planted question's near-copy (the
    archive page beside a real corpus's source, the planted pages of the world)."""
    if not q["gold_docs"]:
        return None
    planted = [
        p
        for p, text in docs.items()
        if any(scoring.normalise(v) in scoring.normalise(text) for v in q.get("planted") or [])
    ]
    for rel in dict.fromkeys([*q["gold_docs"], *planted]):
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(docs[rel], encoding="utf-8")
    return folder


class _Traced:
    """An adapter that appends every call (question id, phase, prompt, answer, choice
    log-likelihoods) to a JSON-lines file: where a question's answer was lost (trace.py)."""

    def __init__(self, inner: Any, path: Path) -> None:
        self.inner, self.path, self.question = inner, path, ""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def complete(self, messages: Any, config: Any) -> Any:
        result = await self.inner.complete(messages, config)
        from returns.result import Success

        response = result.unwrap() if isinstance(result, Success) else None
        entry = {
            "id": self.question,
            "phase": config.label,
            "prompt": messages[-1].content,
            "answer": response.content if response is not None else None,
            "scores": response.raw.extra.get("choice_logprobs") if response is not None else None,
        }
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(entry, default=str) + "\n")
        return result


@contextlib.contextmanager
def _traced(inner: Any, args: argparse.Namespace) -> Iterator[Any]:
    with inner as adapter:
        yield _Traced(adapter, Path(args.trace)) if getattr(args, "trace", None) else adapter


def _adapter(args: argparse.Namespace, questions: Sequence[Mapping[str, Any]]) -> Any:
    """The adapter a runner calls (traced with `--trace`), inside the context that keeps
    its fake server up."""
    return _traced(_bare_adapter(args, questions), args)


def _bare_adapter(args: argparse.Namespace, questions: Sequence[Mapping[str, Any]]) -> Any:
    from agentport.factory import create_llm_adapter

    if args.runner not in ("perfect-reader", "first-candidate"):
        return contextlib.nullcontext(create_llm_adapter(args.backend))
    from reader import first_candidate, perfect_reader

    from agentport.testing import FakeModelServer

    @contextlib.contextmanager
    def served() -> Iterator[Any]:
        reply = perfect_reader(questions) if args.runner == "perfect-reader" else first_candidate
        with FakeModelServer(default=reply) as server:
            yield create_llm_adapter(
                "openai_compat",
                retry_attempts=1,
                openai_compat={"base_url": server.openai_base_url, "model": "fake-model"},
            )

    return served()


def research_config(args: argparse.Namespace) -> Any:
    """The settings `agentport research` would use: the embedded model's for `local` and
    for the first-candidate baseline (small-model mode, the same caps), the seed's full
    path for the perfect reader and other backends (`--small` forces small-model mode)."""
    from agentport.workflows.deep_research import research_config_for

    extra: dict[str, Any] = {}
    if getattr(args, "concurrency", None):
        extra["CONCURRENCY"] = args.concurrency
    if getattr(args, "rounds", 0):  # 1 = the seed's single round; 2 adds the follow-up round
        extra["rounds"] = args.rounds
    if args.runner == "first-candidate":
        return research_config_for("local", **extra)
    if args.runner == "perfect-reader":
        return research_config_for("openai_compat", small_model=args.small or None, **extra)
    return research_config_for(args.backend, small_model=args.small or None, **extra)


async def _reports(
    questions: Sequence[Mapping[str, Any]],
    corpus_dir: Path,
    args: argparse.Namespace,
    adapter: Any,
    docs: Mapping[str, str],
    done: Callable[[Mapping[str, Any], Report, float], None],
) -> None:
    """Research each question on *corpus_dir* and hand every report to *done* as it ends."""
    from agentport.workflows.deep_research import load_corpus, run_research

    config = research_config(args)
    shared = load_corpus(corpus_dir, max_passage_chars=config.max_passage_chars).unwrap()
    try:
        for q in questions:
            started = time.monotonic()
            if isinstance(adapter, _Traced):
                adapter.question = q["id"]
            corpus: Any = shared
            scratch = None
            if args.oracle_retrieval:
                scratch = Path(tempfile.mkdtemp(prefix="rq-gold-"))
                corpus = _gold_only(scratch, q, docs) or shared
            try:
                report = await run_research(q["question"], adapter, config=config, corpus=corpus)
                data = report.model_dump(mode="json", by_alias=True)
            except Exception as exc:  # one failed question must not lose the others
                data = {"summary": "", "findings": [], "error": f"{type(exc).__name__}: {exc}"}
            finally:
                if scratch is not None:
                    shutil.rmtree(scratch, ignore_errors=True)
            wall = time.monotonic() - started
            done(q, data, wall)
            print(f"  {q['id']}: {wall:.1f} s", file=sys.stderr)
    finally:
        shared.close()


def _read_docs(corpus_dir: Path) -> dict[str, str]:
    return build_real.read_docs(corpus_dir)


_COLUMNS = ("correct", "lead", "recall", "quote_precision", "refuted", "abstained", "wall_s")


def _table(rows: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]]:
    """A markdown table of *rows* by type (and an `all` line), and its numbers."""

    def mean(values: list[Any]) -> float | None:
        values = [float(v) for v in values if v is not None]
        return round(sum(values) / len(values), 3) if values else None

    def cell(v: float | None, pct: bool = True) -> str:
        return "-" if v is None else (f"{100 * v:.0f}%" if pct else f"{v:.1f}")

    summary: dict[str, Any] = {}
    lines = [
        "| type | n | correct | lead | recall | quotes | planted refuted | abstained | wall s |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    groups = [(k, [r for r in rows if r["type"] == k]) for k in world.TYPES]
    if len({r["type"] for r in rows}) > 1:
        groups.append(("all", list(rows)))
    for kind, mine in groups:
        if not mine:
            continue
        s: dict[str, Any] = {"n": len(mine)}
        s |= {c: mean([r.get(c) for r in mine]) for c in _COLUMNS}
        if kind == "all":
            walls = sorted(float(r["wall_s"]) for r in mine if r.get("wall_s") is not None)
            s["median_wall_s"] = walls[len(walls) // 2] if walls else None
        summary[kind] = s
        lines.append(
            f"| {kind} | {s['n']} | {cell(s['correct'])} | {cell(s['lead'])} | "
            f"{cell(s['recall'])} | {cell(s['quote_precision'])} | {cell(s['refuted'])} | "
            f"{cell(s['abstained'])} | "
            f"{cell(s['wall_s'], False)} |"
        )
    return "\n".join(lines), summary


def _runner_name(args: argparse.Namespace) -> str:
    name = args.runner or f"backend {args.backend}"
    return name + (" + oracle retrieval" if args.oracle_retrieval else "")


def _score_rows(
    questions: Sequence[Mapping[str, Any]],
    reports: Sequence[tuple[Report, float]],
    docs: Mapping[str, str],
) -> list[dict[str, Any]]:
    rows = []
    for q, (report, wall) in zip(questions, reports, strict=True):
        row = scoring.score(report, q, docs) | {"wall_s": round(wall, 2)}
        rows.append(row | {"question": q["question"], "report": report})
    return rows


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The synthetic world (the harness's unit test): build it in a scratch folder, get a
    report per question, score them."""
    if getattr(args, "real", None) is not None:
        return run_real(args)
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
        reports = _collect(questions, work / "corpus", docs, args)
        rows = _score_rows(questions, reports, docs)
        table, summary = _table(rows)
        return {
            "runner": _runner_name(args),
            "seed": args.seed,
            "oracle_retrieval": args.oracle_retrieval,
            "table": table,
            "summary": summary,
            "rows": rows,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _collect(
    questions: Sequence[Mapping[str, Any]],
    corpus_dir: Path,
    docs: Mapping[str, str],
    args: argparse.Namespace,
    on_row: Callable[[Mapping[str, Any], Report, float], None] | None = None,
) -> list[tuple[Report, float]]:
    """A report and its wall time per question, from the runner *args* names."""
    got: dict[str, tuple[Report, float]] = {}

    def done(q: Mapping[str, Any], report: Report, wall: float) -> None:
        got[q["id"]] = (report, wall)
        if on_row is not None:
            on_row(q, report, wall)

    if args.runner in ("oracle", "adversary"):
        make = oracle if args.runner == "oracle" else adversary
        for q in questions:
            done(q, make(q, docs), 0.0)
    else:

        async def go() -> None:
            with _adapter(args, questions) as adapter:
                await _reports(questions, corpus_dir, args, adapter, docs, done)

        anyio.run(go)
    return [got[q["id"]] for q in questions]


def _pick(questions: list[dict[str, Any]], args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.ids:
        wanted = set(args.ids.split(","))
        questions = [q for q in questions if q["id"] in wanted]
    if args.types:
        kinds = set(args.types.split(","))
        questions = [q for q in questions if q["type"] in kinds]
    if args.slice:
        questions = [
            q
            for c in build_real.BY_CORPUS
            for k in world.TYPES
            for q in [x for x in questions if x["type"] == k and x["corpus"] == c][: args.slice]
        ]
    return questions


def run_real(args: argparse.Namespace) -> dict[str, Any]:
    """The real-documentation corpora (build_real.py): a report per question on its corpus
    folder as built, scored; a table per corpus and type. Rows go to `args.rows` (JSON
    lines) as they finish, and `--resume` skips the ids already there."""
    import agentport

    cache = (args.cache or build_real.default_cache()).expanduser()
    questions = build_real.load_questions(args.questions or build_real.QUESTIONS)
    corpora = args.real or list(build_real.BY_CORPUS)
    questions = _pick([q for q in questions if q["corpus"] in corpora], args)
    for name in corpora:
        if not build_real.corpus_dir(cache, name).is_dir():
            raise SystemExit(build_real.missing_hint(cache))
    rows_path = Path(args.rows) if args.rows else None
    finished: dict[str, dict[str, Any]] = {}
    if rows_path is not None and args.resume and rows_path.exists():
        for line in rows_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                finished[row["id"]] = row
    elif rows_path is not None:
        rows_path.write_text("", encoding="utf-8")
    rows: list[dict[str, Any]] = []
    tables: dict[str, str] = {}
    summaries: dict[str, Any] = {}
    for name in corpora:
        folder = build_real.corpus_dir(cache, name)
        docs = build_real.read_docs(folder)
        mine = [q for q in questions if q["corpus"] == name]
        todo = [q for q in mine if q["id"] not in finished]

        def keep(q: Mapping[str, Any], report: Report, wall: float, docs: Any = docs) -> None:
            row = scoring.score(report, q, docs) | {"wall_s": round(wall, 2)}
            row |= {"corpus": q["corpus"], "question": q["question"], "report": report}
            finished[q["id"]] = row
            if rows_path is not None:
                with rows_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(row, default=str) + "\n")

        if todo:
            print(f"{name}: {len(todo)} question(s)", file=sys.stderr)
            _collect(todo, folder, docs, args, on_row=keep)
        corpus_rows = [finished[q["id"]] for q in mine]
        rows += corpus_rows
        tables[name], summaries[name] = _table(corpus_rows)
    tables["all corpora"], summaries["all corpora"] = _table(rows)
    text = "\n\n".join(f"### {_runner_name(args)}: {k}\n\n{t}" for k, t in tables.items())
    return {
        "runner": _runner_name(args),
        "agentport": str(Path(agentport.__file__).resolve().parent),
        "corpora": {
            c: json.loads((cache / "corpora" / f"{c}.manifest.json").read_text())
            for c in corpora
            if (cache / "corpora" / f"{c}.manifest.json").exists()
        },
        "oracle_retrieval": args.oracle_retrieval,
        "table": text,
        "summary": summaries,
        "rows": rows,
    }


def tables_of_rows(path: Path, title: str, cache: Path | None = None) -> str:
    """The per-corpus and per-type tables of the rows a `--rows` file holds (the last row of
    each id), for a run that stopped or was continued in stages. Each report is scored
    again with the current scorer and questions (the corpora under *cache*)."""
    cache = (cache or build_real.default_cache()).expanduser()
    questions = {q["id"]: q for q in build_real.load_questions()}
    docs: dict[str, dict[str, str]] = {}
    by_id: dict[str, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        q = questions.get(row["id"])
        if q is not None:
            if q["corpus"] not in docs:
                docs[q["corpus"]] = build_real.read_docs(build_real.corpus_dir(cache, q["corpus"]))
            row |= scoring.score(row["report"], q, docs[q["corpus"]])
        by_id[row["id"]] = row
    rows = list(by_id.values())
    parts = []
    for name in [*build_real.BY_CORPUS, "all corpora"]:
        mine = rows if name == "all corpora" else [r for r in rows if r.get("corpus") == name]
        if mine:
            parts.append(f"### {title}: {name}\n\n{_table(mine)[0]}")
    return "\n\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--tables",
        metavar="ROWS",
        type=Path,
        help="print the tables of a --rows file (no run) and exit",
    )
    who = parser.add_mutually_exclusive_group()
    who.add_argument(
        "--runner", choices=("oracle", "adversary", "perfect-reader", "first-candidate")
    )
    who.add_argument("--backend", help="a backend name (local = the embedded model)")
    parser.add_argument("--small", action="store_true", help="small-model mode on any backend")
    parser.add_argument("--oracle-retrieval", action="store_true")
    parser.add_argument("--slice", type=int, default=0, help="first N questions of each type")
    parser.add_argument("--rounds", type=int, default=0, help="search rounds (default: mode's)")
    parser.add_argument("--seed", type=int, default=world.SEED)
    parser.add_argument("--json", default="research_quality.json")
    parser.add_argument(
        "--real",
        nargs="*",
        choices=sorted(build_real.BY_CORPUS),
        help="the real-documentation corpora (all when none is named) instead of the world",
    )
    parser.add_argument("--cache", type=Path, help="where build_real.py built the corpora")
    parser.add_argument("--questions", type=Path, help="default: real_questions.toml")
    parser.add_argument("--ids", help="comma-separated question ids")
    parser.add_argument("--types", help="comma-separated question types")
    parser.add_argument("--rows", help="JSON lines of every scored row, written as they end")
    parser.add_argument("--resume", action="store_true", help="skip the ids --rows holds")
    parser.add_argument("--trace", help="JSON lines of every model call (see trace.py)")
    parser.add_argument(
        "--concurrency", type=int, help="agent calls in flight (default: the CLI's, 10)"
    )
    args = parser.parse_args(argv)
    if args.tables is not None:
        print(
            tables_of_rows(
                args.tables, _runner_name(args) if args.runner or args.backend else "rows"
            )
        )
        return 0
    if args.runner is None and args.backend is None:
        parser.error("one of --runner, --backend or --tables is required")
    result = run(args)
    print(result["table"])
    Path(args.json).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
