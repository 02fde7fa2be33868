"""`agentport worker --temporal HOST:PORT`: run a Temporal worker on this machine.

It serves the `complete` activity on one task queue per `--backend` (default: the configured
`llm.backend`), the workflows on `<prefix>.workflows` and agentport's own web search and
fetch on `<prefix>.web` (`--web/--no-web`). The workflows' file steps read and write only
under the `--root` folders (required with the workflows; `/`, a home folder or a folder above
one, or one holding the agentport config, only with `--allow-broad-root`), printed at start.
Refuses (one line, exit 1) a backend whose CLI is not installed here; an unreachable server
is one line within seconds. Needs `agentport[temporal]`. Source: docs/deployment.md.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import anyio
import typer

from ..core import ProviderError
from ._app import app, fail, fail_error
from ._out import echo

__all__ = ["parse_caps", "worker"]


def parse_caps(values: list[str] | None) -> dict[str, int]:
    """`--concurrency NAME=N` options as a dict; exits 2 on a malformed one."""
    caps: dict[str, int] = {}
    for value in values or []:
        name, sep, count = value.partition("=")
        if not sep or not name.strip() or not count.strip().isdigit() or int(count) < 1:
            fail(f"--concurrency {value!r}: expected BACKEND=N with N >= 1", 2)
        caps[name.strip()] = int(count)
    return caps


def _fixed_hash_seed() -> None:
    """Re-run this command with `PYTHONHASHSEED=0` when it is unset: a workflow replayed on
    another worker must iterate sets of strings in the same order as where it ran first.
    Only when this process IS `agentport worker` (not a test runner invoking the app)."""
    if os.environ.get("PYTHONHASHSEED") is not None or sys.argv[1:2] != ["worker"]:
        return
    argv = [sys.executable, *sys.orig_argv[1:]]
    os.execve(sys.executable, argv, {**os.environ, "PYTHONHASHSEED": "0"})


# the options of `worker`, one name each (typer reads the annotations)
_WorkerTemporal = Annotated[
    str | None,
    typer.Option(
        "--temporal",
        metavar="HOST:PORT",
        help="The Temporal server (default: \\[temporal] address).",
    ),
]
_WorkerBackend = Annotated[
    list[str] | None,
    typer.Option(
        "--backend",
        "-b",
        help="Serve this backend's queue; repeat it (default: llm.backend).",
    ),
]
_WorkerNamespace = Annotated[
    str | None, typer.Option("--namespace", help="Temporal namespace (default: default).")
]
_WorkerQueuePrefix = Annotated[
    str | None,
    typer.Option("--queue-prefix", help="Task queues are `PREFIX.BACKEND` (default: agentport)."),
]
_WorkerConcurrency = Annotated[
    list[str] | None,
    typer.Option(
        "--concurrency",
        metavar="BACKEND=N",
        help="Calls of BACKEND this worker runs at once; repeat it "
        "(default: \\[temporal] concurrency, else 2 per agent CLI).",
    ),
]
_WorkerWorkflows = Annotated[
    bool,
    typer.Option("--workflows/--no-workflows", help="Also run the workflows (default: yes)."),
]
_WorkerWeb = Annotated[
    bool | None,
    typer.Option(
        "--web/--no-web",
        help="Serve agentport's own web search and page fetches (PREFIX.web) "
        "(default: with the workflows, when the web extra is installed).",
    ),
]
_WorkerRoot = Annotated[
    list[Path] | None,
    typer.Option(
        "--root",
        metavar="FOLDER",
        help="A folder the batch file steps may read and write (graphs, --out folders, "
        "corpora); repeat it. Required unless --no-workflows.",
    ),
]
_WorkerAllowBroadRoot = Annotated[
    bool,
    typer.Option(
        "--allow-broad-root",
        help="Serve a --root that is /, a home folder or a folder above one, or that "
        "holds your agentport config (refused by default: any client of the "
        "namespace could write there).",
    ),
]


@app.command()
def worker(
    temporal: _WorkerTemporal = None,
    backend: _WorkerBackend = None,
    namespace: _WorkerNamespace = None,
    queue_prefix: _WorkerQueuePrefix = None,
    concurrency: _WorkerConcurrency = None,
    workflows: _WorkerWorkflows = True,
    web: _WorkerWeb = None,
    root: _WorkerRoot = None,
    allow_broad_root: _WorkerAllowBroadRoot = False,
) -> None:
    """Run a Temporal worker: model calls of the given backends, and the workflows.

    What runs, where it connects and with which key is this worker's own configuration:
    workflow input only names backends this worker serves, questions, budgets and files
    under its --root folders, which it prints at start (docs/deployment.md)."""
    _fixed_hash_seed()
    from ..config import load_settings

    try:
        from ..temporal import WorkerPlan, run_worker
    except ImportError as exc:
        hint = "" if "agentport[temporal]" in str(exc) else " (pip install 'agentport[temporal]')"
        fail(f"{exc}{hint}", 2)
    try:
        settings = load_settings()
    except ProviderError as exc:
        fail_error(exc)
    address = temporal or settings.temporal.address
    if not address:
        fail("no Temporal server: pass --temporal HOST:PORT or set [temporal] address", 2)
    names = list(backend or [])
    if not names and settings.llm.backend.strip().lower() != "auto":
        names = [settings.llm.backend]  # else a workflows-only worker (or nothing: refused)
    elif not names:  # `auto` is not served: a queue must name one backend everywhere
        echo(
            "agentport worker: no model queue: llm.backend is 'auto'; pass --backend NAME "
            "(e.g. the one `agentport config` says auto is here) to serve its calls",
            err=True,
        )
    caps = {**settings.temporal.concurrency, **parse_caps(concurrency)}

    def ready(plan: WorkerPlan) -> None:
        for line in plan.describe():
            echo(f"agentport worker: {line}", err=True)
        echo(f"agentport worker: ready ({address}, namespace {ns})", err=True)

    ns = namespace or settings.temporal.namespace
    try:
        anyio.run(
            lambda: run_worker(
                address,
                names,
                namespace=ns,
                prefix=queue_prefix or settings.temporal.queue_prefix,
                concurrency=caps,
                workflows=workflows,
                on_ready=ready,
                web=web,
                roots=root or [],
                allow_broad_roots=allow_broad_root,
            )
        )
    except ProviderError as exc:
        fail_error(exc)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
