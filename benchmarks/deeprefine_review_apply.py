"""Benchmark: `deeprefine review` + `deeprefine apply` on a large graphify graph, agentport vs
the reference deeprefine-cli 0.2.0 (installed separately, e.g. `python -m venv /tmp/venv-ref
&& /tmp/venv-ref/bin/pip install deeprefine-cli==0.2.0`; its code is not vendored).

Build the graph first (about 1 minute on 2 cores), e.g. from the Python standard library:

    mkdir /tmp/stdlib-proj && cd /usr/lib/python3.11 && find . -name '*.py' \\
        -not -path './site-packages/*' -not -path './dist-packages/*' \\
        -exec cp --parents {} /tmp/stdlib-proj/ \\;
    cd /tmp/stdlib-proj && graphify update .

Then:

    python benchmarks/deeprefine_review_apply.py /tmp/stdlib-proj \\
        --reference /tmp/venv-ref/bin/deeprefine --repeat 3

Both tools get the same 10 grounded insert_edge actions (picked deterministically from the
graph), run in the same project (graph.json restored to its pre-image before every run), as
separate processes; wall time and peak RSS (`ru_maxrss` of the child) are reported as the
median of `--repeat` runs. `apply` uses `--skip-trace-check --allow-low-confidence` for both so
both actually write.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


def pick_actions(graph: dict[str, Any], n: int = 10) -> list[str]:
    """n inserts between uniquely-labelled code nodes of one community that are not linked."""
    nodes = graph["nodes"]
    counts = Counter(node["label"] for node in nodes)
    linked = {
        frozenset((x["source"], x["target"])) for x in graph.get("links", graph.get("edges", []))
    }
    by_community: dict[Any, list[dict[str, Any]]] = {}
    for node in sorted(nodes, key=lambda x: x["id"]):
        label = node["label"]
        plain = '"' not in label and "\\" not in label
        if (
            counts[label] == 1
            and node.get("file_type") == "code"
            and label.endswith("()")
            and plain
        ):
            by_community.setdefault(node.get("community"), []).append(node)
    actions: list[str] = []
    for members in sorted(by_community.values(), key=lambda m: -len(m)):
        for a, b in zip(members[::2], members[1::2], strict=False):
            if frozenset((a["id"], b["id"])) not in linked:
                actions.append(f'insert_edge("{a["label"]}", "calls", "{b["label"]}")')
                break
        if len(actions) == n:
            break
    return actions


# A small launcher process spawns each measured command: a child forked from this (large)
# process would inherit its RSS, and ru_maxrss would report the parent's size, not the tool's.
_LAUNCH = """
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = child.stderr.read()
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps([time.perf_counter() - start, usage.ru_maxrss // 1024,
                  os.waitstatus_to_exitcode(status), err.decode()[-2000:]]))
"""


def run(argv: list[str], cwd: Path) -> tuple[float, int, int]:
    """Wall seconds, peak RSS in MiB, exit code of one child process."""
    out = subprocess.run(
        [sys.executable, "-c", _LAUNCH, *argv], cwd=cwd, capture_output=True, text=True, check=True
    )
    elapsed, rss, code, err = json.loads(out.stdout)
    if code not in (0, 1):
        sys.stderr.write(err)
    return elapsed, rss, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("project", type=Path, help="directory holding graphify-out/graph.json")
    parser.add_argument(
        "--reference", default=shutil.which("deeprefine-ref") or "/tmp/venv-ref/bin/deeprefine"
    )
    parser.add_argument("--ours", default=str(Path(sys.executable).parent / "deeprefine"))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    project: Path = args.project.resolve()
    graph_path = project / "graphify-out" / "graph.json"
    state = project / "graphify-out" / ".deeprefine"
    pre = graph_path.read_bytes()
    graph = json.loads(pre)
    actions = pick_actions(graph)
    refinement = project / "bench_refinement.txt"
    refinement.write_text("<refinement>" + "|".join(actions) + "</refinement>\n", encoding="utf-8")
    print(
        f"graph: {len(graph['nodes'])} nodes, {len(graph['links'])} links, {len(pre) / 1e6:.1f} MB"
    )
    print(f"actions: {len(actions)}")
    tools = {"agentport": args.ours}
    if Path(args.reference).exists():
        tools["reference"] = args.reference
    else:
        print(f"reference not found at {args.reference}; measuring agentport only")
    common = ["--refinement-file", str(refinement), "--project-root", str(project)]
    commands = {
        "review": ["review", *common],
        "apply": ["apply", "--skip-trace-check", "--allow-low-confidence", *common],
    }
    results: dict[tuple[str, str], list[tuple[float, int, int]]] = {}
    for _ in range(args.repeat):
        for tool, exe in tools.items():
            for name, cmd in commands.items():
                graph_path.write_bytes(pre)
                shutil.rmtree(state, ignore_errors=True)
                results.setdefault((tool, name), []).append(run([exe, *cmd], project))
                if name == "apply":
                    size = graph_path.stat().st_size
                    results.setdefault((tool, "size"), []).append((size / 1e6, 0, 0))
    graph_path.write_bytes(pre)
    shutil.rmtree(state, ignore_errors=True)
    refinement.unlink()
    print(f"{'tool':<10} {'command':<7} {'time s':>8} {'peak MiB':>9} {'rc':>3}")
    for (tool, name), runs in results.items():
        if name == "size":
            continue
        t = statistics.median(r[0] for r in runs)
        m = statistics.median(r[1] for r in runs)
        print(f"{tool:<10} {name:<7} {t:8.2f} {m:9.0f} {runs[-1][2]:3d}")
    for tool in tools:
        print(f"{tool} graph after apply: {results[(tool, 'size')][-1][0]:.1f} MB")
    if "reference" in tools:
        for name in commands:
            ours = [statistics.median(r[i] for r in results[("agentport", name)]) for i in (0, 1)]
            ref = [statistics.median(r[i] for r in results[("reference", name)]) for i in (0, 1)]
            print(
                f"ratio {name}: time {ours[0] / ref[0]:.2f}x, memory {ours[1] / ref[1]:.2f}x "
                "(goal <= 0.5x)"
            )


if __name__ == "__main__":
    main()
