"""Hit rate and wall time of `agentport research` on the embedded model over docs/.

Runs the README's command (same flags) once per question of
`deep_research_local_questions.json`, as a user would, in a scratch folder holding a copy of
docs/, and reports per question: exit code, wall seconds, whether the answer cites the
expected page (a hit), confirmed claims, quotes that are not verbatim spans of their page,
agent calls and output tokens per wall second. Goal: the README question within 180 s on
2 cores (not a test: timings vary with load).

    python benchmarks/deep_research_local.py [--only-readme] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _research_report_check import check_report  # noqa: E402

QUESTIONS = json.loads((Path(__file__).with_name("deep_research_local_questions.json")).read_text())
_STATS = re.compile(r"## Stats\n```json\n(.*?)\n```", re.DOTALL)


def run_one(question: str, work: Path) -> dict[str, object]:
    out = work / "report.md"
    out.unlink(missing_ok=True)
    exe = Path(sys.executable).with_name("agentport")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPORT_")}
    env["XDG_CACHE_HOME"] = str(work / "cache")
    cmd = [str(exe), "research", question, "--backend", "local", "--corpus", "docs"]
    started = time.monotonic()
    done = subprocess.run(
        [*cmd, "--out", "report.md"], cwd=work, env=env, capture_output=True, text=True
    )
    wall = time.monotonic() - started
    report = out.read_text(encoding="utf-8") if out.is_file() else ""
    check = check_report(report, work / "docs")
    stats = json.loads(m.group(1)) if (m := _STATS.search(report)) else {}
    return {
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "pages": check.answer_pages,
        "confirmed": check.confirmed,
        "quotes": len(check.quotes),
        "bad_quotes": len(check.bad_quotes),
        "calls": stats.get("agentCallsMade"),
        "out_tok_per_s": round(
            stats.get("outputTokens", 0) / max(stats.get("durationS", 1), 1e-9), 1
        ),
        "stderr_tail": done.stderr.strip().splitlines()[-1:] if done.returncode else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only-readme", action="store_true")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    questions = [q for q in QUESTIONS if q.get("readme") or not args.only_readme]
    hits = runs = 0
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "docs", work / "docs")
        for q in questions:
            for _ in range(args.repeat):
                row = run_one(q["question"], work)
                hit = q["page"] in row["pages"]  # type: ignore[operator]
                hits += hit
                runs += 1
                print(
                    json.dumps(
                        {"question": q["question"], "expected": q["page"], "hit": hit, **row}
                    )
                )
    print(f"hit rate: {hits}/{runs}")


if __name__ == "__main__":
    main()
