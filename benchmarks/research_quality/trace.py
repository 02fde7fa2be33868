"""Where each question's answer was lost: read a `run.py --rows` file and the `--trace`
file of the same run, and follow every gold answer through the small-model stages.

    python benchmarks/research_quality/trace.py ROWS TRACE

Stages, in pipeline order (a gold answer is "at" a stage when one of its spellings is in
what that stage produced):

- read: a passage the run fetched (the report's `sources`) holds it;
- offered: an extract prompt lists a candidate sentence holding it;
- picked: an extracted claim (the report's `claims`, any outcome) holds it;
- confirmed: a confirmed claim holds it (the votes kept it);
- stated: the summary or a finding states it (the scorer's `correct`);
- lead: the summary's first sentence states it (first gold answer only).

For each question the first stage some gold answer did not reach is where it was lost; an
unanswerable question is "abstained" or "findings" (it stated something). Prints a table
of lost stages per type, and one line per question.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import build_real
import score as scoring

STAGES = ("read", "offered", "picked", "confirmed", "stated", "lead")
_LINE = re.compile(r"^S\d+: (.*)$", re.MULTILINE)


def _has(text: str, spellings: Sequence[str]) -> bool:
    said = scoring.normalise(text)
    return any(scoring.normalise(s).strip() and scoring.normalise(s) in said for s in spellings)


def _passages(corpus: str, cache: Path) -> dict[str, str]:
    from agentport.workflows.deep_research import load_corpus, research_config_for

    chars = research_config_for("local").max_passage_chars
    shared = load_corpus(build_real.corpus_dir(cache, corpus), max_passage_chars=chars).unwrap()
    try:
        return {p.url: p.text for p in shared.passages}
    finally:
        shared.close()


def stages_of(
    q: Mapping[str, Any],
    report: Mapping[str, Any],
    calls: Sequence[Mapping[str, Any]],
    passages: Mapping[str, str],
) -> str:
    """The first stage a gold answer of *q* did not reach ("ok" when all did)."""
    if not q["answerable"]:
        return "abstained" if scoring.abstained(report) else "findings"
    read = " ".join(passages.get(s.get("url", ""), "") for s in report.get("sources") or [])
    offered = " ".join(
        " ".join(_LINE.findall(c["prompt"])) for c in calls if c["phase"] == "extract"
    )
    claims = report.get("claims") or []
    picked = " ".join(str(c.get("claim")) for c in claims)
    confirmed = " ".join(str(c.get("claim")) for c in claims if c.get("outcome") == "confirmed")
    texts = {"read": read, "offered": offered, "picked": picked, "confirmed": confirmed}
    for stage in STAGES[:4]:
        if not all(_has(texts[stage], a) for a in q["answers"]):
            return stage
    if not all(scoring.states(report, a) for a in q["answers"]):
        return "stated"
    lead = scoring.lead_sentence(report.get("summary"))
    return "ok" if _has(lead, q["answers"][0]) else "lead"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    rows = [json.loads(x) for x in Path(args[0]).read_text().splitlines() if x.strip()]
    trace = [json.loads(x) for x in Path(args[1]).read_text().splitlines() if x.strip()]
    questions = {q["id"]: q for q in build_real.load_questions()}
    cache = build_real.default_cache()
    texts: dict[str, dict[str, str]] = {}
    lost: Counter[tuple[str, str]] = Counter()
    for row in rows:
        q = questions[row["id"]]
        if q["corpus"] not in texts:
            texts[q["corpus"]] = _passages(q["corpus"], cache)
        calls = [c for c in trace if c["id"] == row["id"]]
        where = stages_of(q, row["report"], calls, texts[q["corpus"]])
        lost[(q["type"], where)] += 1
        print(f"{row['id']}: {where}")
    kinds = sorted({k for k, _ in lost})
    columns = ["read", "offered", "picked", "confirmed", "stated", "lead", "ok"]
    columns += ["abstained", "findings"]
    print("\n| type | " + " | ".join(f"lost at {c}" if c in STAGES else c for c in columns) + " |")
    print("|---|" + "--:|" * len(columns))
    for k in kinds:
        print(f"| {k} | " + " | ".join(str(lost[(k, c)]) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
