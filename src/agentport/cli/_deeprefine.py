"""The `deeprefine` console script: deeprefine-cli 0.2.0's commands and flags on agentport.

Commands (as `deeprefine --help` of 0.2.0 lists them): `history add|list|sync-memory`,
`loop init|validate|finish`, `review`, `apply` (plus `--refresh-wiki` from the reference's
GitHub main), `refine` (agentport's own loop and LLM backend instead of FAISS) and `index`
(a no-op: nothing to index), and the reference's skill installers (`cursor`, `copilot`,
`codex`, `claude`, `opencode`, `gemini`, `install`, `uninstall`: `_skills`). argparse
keeps the reference's exact flag spelling. Every
expected failure is one line `deeprefine: <file>: <field>: <message>` on stderr, rc 1
(2 for usage errors); never a traceback.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ..core import redact
from ..transport import PathRefused
from ..workflows.deeprefine import (
    InputError,
    Layout,
    ReviewContext,
    ReviewItem,
    add_query,
    apply_refinement,
    atomic_write,
    dump_trace,
    ensure_state,
    find_layout,
    finish,
    load_graph,
    load_trace,
    pending,
    read_bytes,
    read_history,
    review,
    sync_memory,
    trace_template,
    validate_trace,
)
from ._out import echo
from ._skills import add_installers

__all__ = ["build_parser", "command_owner", "main", "refresh_wiki"]

_OK = "OK — loop trace matches Reafiner.refine() rules."


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _index(args: argparse.Namespace) -> int:
    echo("Nothing to index: agentport reads graph.json.")
    return 0


def _err(message: str) -> None:
    echo(f"deeprefine: {redact(message)}", err=True)


def _layout(args: argparse.Namespace) -> Layout:
    root = getattr(args, "project_root", None)
    return find_layout(Path(root) if root else None)


def _text(path: Path, what: str) -> str:
    try:
        return read_bytes(path, limit=16 * 1024 * 1024).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, what, "not UTF-8 text") from None


def _check_trace(layout: Layout, trace_file: Path, refinement: Path | None, header: str) -> dict:  # type: ignore[type-arg]
    trace = load_trace(trace_file)
    errors = validate_trace(trace, trace_file, layout, refinement)
    if errors:
        _err(f"{trace_file}: {header}")
        for error in errors:
            echo(f"  - {trace_file}: {error}", err=True)
        raise _Exit(1)
    return trace


# -- history ---------------------------------------------------------------------------------


def _history(args: argparse.Namespace) -> int:
    layout = _layout(args)
    if args.history_cmd == "add":
        row = add_query(layout, args.query, args.source)
        echo(f"Added: {row['id']}: {row['query']}")
        return 0
    if args.history_cmd == "sync-memory" or getattr(args, "sync_memory", False):
        added, known, problems = sync_memory(layout)
        for problem in problems:
            _err(problem)
        echo(f"Memory dir: {layout.memory}")
        echo(f"History: {layout.history}")
        echo(f"Added: {added}")
        echo(f"Known query ids: {known}")
        if args.history_cmd == "sync-memory":
            return 0
    history = read_history(layout.history)
    for problem in history.problems:
        _err(problem)
    rows = pending(history) if args.pending else history.rows
    if args.pending and not rows:
        echo("No pending queries.")
    for row in rows:
        state = "refined" if row.get("refined") is True else "pending"
        echo(f"[{state}] {row['id']}: {row['query']}")
    return 0


# -- loop ------------------------------------------------------------------------------------


def _loop(args: argparse.Namespace) -> int:
    layout = _layout(args)
    if args.loop_cmd == "init":
        if not args.query.strip():
            raise InputError("--query", "", "the question is empty")
        trace = trace_template(args.query)
        path = Path(args.trace_file) if args.trace_file else layout.trace_path(trace["query_id"])
        if path.exists() and not args.force:
            existing = load_trace(path)
            if existing.get("interaction_history"):
                raise InputError(
                    path, "interaction_history", "already has steps; pass --force to overwrite"
                )
        if not args.trace_file:
            ensure_state(layout.state)  # a real, user-owned folder, never a symlink
        atomic_write(path, dump_trace(trace), mode=layout.graph_mode())
        echo(f"Loop trace template: {path}")
        return 0
    trace_file = Path(args.trace_file)
    refinement = Path(args.refinement_file) if args.refinement_file else None
    if args.loop_cmd == "validate":
        trace = load_trace(trace_file)
        errors = validate_trace(trace, trace_file, layout, refinement)
        if not errors:
            echo(_OK)
            return 0
        echo(f"INVALID — {trace_file}: {len(errors)} problem(s)")
        for error in errors:
            echo(f"  - {trace_file}: {error}")
        return 1
    for line in finish(layout, trace_file, refinement):
        echo(line)
    return 0


# -- review / apply --------------------------------------------------------------------------


def _graph_path(args: argparse.Namespace, layout: Layout) -> Path:
    return Path(args.graph) if getattr(args, "graph", None) else layout.graph


def _review(args: argparse.Namespace) -> int:
    layout = _layout(args)
    refinement = Path(args.refinement_file)
    text = _text(refinement, "")
    trace = None
    if args.trace_file:
        trace = _check_trace(
            layout, Path(args.trace_file), refinement, "Loop trace validation failed:"
        )
    graph = load_graph(_graph_path(args, layout), lean=True)
    result = review(text, graph, ReviewContext.from_trace(trace, graph, layout.root))
    if not result.items:
        _err(f"{refinement}: <refinement>: no actions (empty block or no action calls)")
        return 1
    for item in result.items:
        if item.action is None:
            _err(_action_line(refinement, item))
    markdown = result.markdown(args.trace_file or "<trace>", str(refinement))
    echo(markdown)
    output = Path(args.output) if args.output else layout.state / "proposed_refinement_review.md"
    if not args.output:
        ensure_state(layout.state)  # a real, user-owned folder, never a symlink
    atomic_write(output, (markdown + "\n").encode("utf-8"), mode=layout.graph_mode())
    echo(f"Review saved: {output}")
    if args.json_output:
        json_path = Path(args.json_output)
        payload = json.dumps(result.as_json(), indent=2, ensure_ascii=False) + "\n"
        atomic_write(json_path, payload.encode("utf-8"))
        echo(f"Review JSON saved: {json_path}")
    echo(f"No graph changes applied. Proposed actions: {len(result.items)}")
    return 0


def _action_line(refinement: Path, item: ReviewItem) -> str:
    reason = (item.warnings or ["LOW"])[0].removeprefix("R1 ")
    return f"{refinement}: action {item.index + 1}: {reason}: {item.text}"


def refresh_wiki(layout: Layout, graph: Path) -> str:
    """Run `graphify export wiki --graph <graph>` when graphify is installed; one line."""
    exe = shutil.which("graphify") or shutil.which(
        "graphify", path=str(Path(sys.executable).parent)
    )
    if exe is None:
        return "graphify is not installed (pip install graphifyy); wiki not refreshed"
    from ..transport import ProcessRequest, run_capture_sync  # httpx (and click) load late

    request = ProcessRequest(
        argv=[exe, "export", "wiki", "--graph", str(graph)],
        cwd=layout.root,
        startup_timeout_s=600,
        idle_timeout_s=600,
        total_timeout_s=600,
        linger_s=0.0,
    )
    done, stdout = run_capture_sync(request)  # the one runner: guardian, group kill, timeout
    if done.error is not None:
        return f"graphify export wiki failed: {done.error}"
    if done.exit_code != 0:
        tail = (done.stderr_tail or stdout).strip().splitlines()[-1:] or [""]
        return f"graphify export wiki failed (rc {done.exit_code}): {tail[0]}"
    return f"Wiki refreshed with graphify export wiki ({graph.parent / 'wiki'})"


def _apply(args: argparse.Namespace) -> int:
    layout = _layout(args)
    refinement = Path(args.refinement_file)
    text = _text(refinement, "")
    trace = None
    if not args.skip_trace_check:
        if not args.trace_file:
            _err("Agent loop requires --trace-file (or --skip-trace-check)")
            return 1
        trace = _check_trace(
            layout,
            Path(args.trace_file),
            refinement,
            "Loop trace validation failed (must match Reafiner.refine()):",
        )
    report = apply_refinement(
        layout,
        text,
        graph_path=_graph_path(args, layout),
        trace=trace,
        allow_low=args.allow_low_confidence,
        refinement_file=refinement,
    )
    if not report.review.items:
        _err(f"{refinement}: <refinement>: no actions (empty block or no action calls)")
        return 1
    echo(report.review.markdown(args.trace_file or "<trace>", str(refinement)))
    if report.refused:
        _err("Refusing to apply because LOW-confidence action(s) were detected:")
        for item in report.review.low:
            _err(_action_line(refinement, item))
        _err("Nothing was written. Fix the actions, or pass --allow-low-confidence.")
        return 1
    for item, outcome, reason in report.outcomes:
        suffix = f" ({reason})" if reason else ""
        echo(f"  - {outcome}: {item.text}{suffix}")
    if report.written:
        echo(f"Applied {report.applied} action(s) to {report.graph_path}")
        echo(f"Backup (pre-image of this apply): {report.backup_path}")
    else:
        echo(f"Applied 0 action(s); {report.graph_path} left untouched")
    if args.refresh_wiki:
        echo(
            refresh_wiki(layout, report.graph_path or layout.graph)
            if report.written
            else "Nothing changed; wiki not refreshed"
        )
    return 0


# -- refine / index / installers ------------------------------------------------------------


def _refine(args: argparse.Namespace) -> int:
    from ..core import ProviderError
    from ._budget import combined_exit, resolve_budget
    from ._refine import run_refine

    try:
        budget = resolve_budget(args.budget)
    except (ValueError, ProviderError) as exc:  # one line naming --budget or the config field
        _err(str(exc))
        return 2
    layout = _layout(args)
    questions: list[str]
    if args.query:
        questions = [args.query]
    else:
        sync_memory(layout)
        questions = [str(r["query"]) for r in pending(read_history(layout.history))]
        if not questions:
            _err("no pending queries; pass --query QUESTION")
            return 1
    codes = [
        run_refine(question, layout.graph, args.backend, args.apply, print, _err, budget=budget)
        for question in questions
    ]
    return combined_exit(codes)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deeprefine",
        description="DeepRefine on graphify graphs (agentport, compatible with deeprefine-cli).",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    _add_history(sub)
    _add_loop(sub)
    _add_review_and_apply(sub)
    _add_refine(sub)
    idx = sub.add_parser("index", help="No-op: agentport reads graph.json directly.")
    idx.add_argument("--rebuild", action="store_true")
    idx.set_defaults(handler=_index)

    add_installers(sub)
    return parser


_Sub = argparse._SubParsersAction  # what `add_subparsers` returns


def _root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project-root", help="Directory holding graphify-out/ (default: search up).")


def _add_history(sub: _Sub[argparse.ArgumentParser]) -> None:
    history = sub.add_parser("history", help="Pending-query history.")
    hsub = history.add_subparsers(dest="history_cmd", required=True)
    h_add = hsub.add_parser("add")
    h_add.add_argument("--query", required=True)
    h_add.add_argument("--source", default="user")
    h_list = hsub.add_parser("list")
    h_list.add_argument("--pending", action="store_true")
    h_list.add_argument("--sync-memory", action="store_true")
    h_sync = hsub.add_parser("sync-memory")
    for p in (h_add, h_list, h_sync):
        _root(p)
        p.set_defaults(handler=_history, pending=getattr(p, "pending", False))


def _add_loop(sub: _Sub[argparse.ArgumentParser]) -> None:
    loop = sub.add_parser("loop", help="Agent-loop trace.")
    lsub = loop.add_subparsers(dest="loop_cmd", required=True)
    l_init = lsub.add_parser("init")
    l_init.add_argument("--query", required=True)
    l_init.add_argument("--trace-file")
    l_init.add_argument("--force", action="store_true", help="Overwrite a trace that has steps.")
    l_val = lsub.add_parser("validate")
    l_fin = lsub.add_parser("finish")
    for p in (l_val, l_fin):
        p.add_argument("--trace-file", required=True)
        p.add_argument("--refinement-file")
    for p in (l_init, l_val, l_fin):
        _root(p)
        p.set_defaults(handler=_loop)


def _add_review_and_apply(sub: _Sub[argparse.ArgumentParser]) -> None:
    rev = sub.add_parser("review", help="Label proposed actions HIGH/MEDIUM/LOW (dry run).")
    rev.add_argument("--refinement-file", required=True)
    rev.add_argument("--trace-file")
    rev.add_argument("--output")
    rev.add_argument(
        "--json-output", nargs="?", const="graphify-out/.deeprefine/proposed_refinement_review.json"
    )
    rev.add_argument("--graph", help="graph.json to review against (default: the project's).")
    _root(rev)
    rev.set_defaults(handler=_review)

    app = sub.add_parser("apply", help="Apply reviewed actions to graph.json (atomic, backed up).")
    app.add_argument("--refinement-file", required=True)
    app.add_argument("--trace-file")
    app.add_argument("--skip-trace-check", action="store_true")
    app.add_argument("--allow-low-confidence", action="store_true")
    app.add_argument("--refresh-wiki", action="store_true")
    app.add_argument("--graph", help="graph.json to change (default: the project's).")
    _root(app)
    app.set_defaults(handler=_apply)


def _add_refine(sub: _Sub[argparse.ArgumentParser]) -> None:
    ref = sub.add_parser("refine", help="Run the loop with agentport's LLM backend.")
    ref.add_argument("--query")
    ref.add_argument("--apply", action="store_true")
    ref.add_argument("--rebuild-index", action="store_true", help="Accepted; nothing to index.")
    ref.add_argument("--backend", help="agentport backend (default: llm.backend).")
    ref.add_argument(
        "--budget",
        help="Ceilings per question, e.g. 'calls=12,wall=5m' (keys: calls, input_tokens, "
        "output_tokens, usd, wall; over [budget]; 'none' drops it). At a ceiling the partial "
        "trace is written, nothing applied, exit code 3.",
    )
    _root(ref)
    ref.set_defaults(handler=_refine)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (the console script exits with it)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except _Exit as exc:
        return exc.code
    except (InputError, PathRefused) as exc:  # PathRefused: a link below an install's base
        _err(str(exc))
        return 1
    except OSError as exc:
        _err(f"{exc.filename or ''}: {exc.strerror}")
        return 1


def command_owner() -> tuple[str, str | None]:
    """Which program the `deeprefine` on PATH runs ("agentport", "deeprefine-cli", "none"
    or "other") and, when deeprefine-cli is installed beside agentport, one line saying so:
    both packages install a `deeprefine` script and pip lets the last install win (and
    uninstalling that one leaves none). `agentport-deeprefine` is agentport's under a name
    that cannot clash."""
    import importlib.metadata
    import shutil

    exe = shutil.which("deeprefine")
    try:
        script = Path(exe).read_text(encoding="utf-8", errors="replace")[:2000] if exe else ""
    except OSError:
        script = ""
    owner = (
        "none"
        if exe is None
        else "agentport"
        if "agentport" in script
        else "deeprefine-cli"
        if "deeprefine_skill" in script
        else "other"
    )
    try:
        importlib.metadata.distribution("deeprefine-cli")
    except importlib.metadata.PackageNotFoundError:
        return owner, None
    return owner, (
        f"deeprefine-cli is installed beside agentport: `deeprefine` runs {owner}'s "
        "(the last package installed wins); agentport's is always `agentport-deeprefine`"
    )


def console() -> None:
    from .._trust import one_line_warnings

    one_line_warnings()
    _, clash = command_owner()
    if clash:
        _err(clash)
    raise SystemExit(main())
