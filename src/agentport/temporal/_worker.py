"""A worker process: the `complete` activity on one task queue per backend, plus the workflows.

`plan_worker` decides what a worker serves and refuses a backend whose CLI (or Python extra)
is not installed on this machine, before anything connects: a queue is a promise that the
backend runs here. `connect` bounds the connection by a timeout so an unreachable address is
one `ProviderError(network)` within seconds. `run_worker` runs until SIGINT / SIGTERM, then
stops polling and lets running calls finish (`graceful_shutdown_timeout`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import os
import re
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
from temporalio.client import Client
from temporalio.worker import Worker

from ..catalog import get_capability
from ..core import BackendKind, ErrorKind, ProviderError
from ._activities import complete, serve_only
from ._batch import confine_to
from ._queues import DEFAULT_PREFIX, _canonical, concurrency_for, queue_for, workflow_queue
from ._small import SMALL_ACTIVITIES
from ._web import WEB_ACTIVITIES, WEB_CONCURRENCY, close_fetchers, web_queue

__all__ = [
    "CONNECT_TIMEOUT_S",
    "WorkerPlan",
    "broad_root",
    "check_roots",
    "connect",
    "plan_worker",
    "run_worker",
    "served_roots",
]

CONNECT_TIMEOUT_S = 5.0
_ADDRESS = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+):(\d{1,5})$")
_GRACE = timedelta(seconds=30)


@dataclass(frozen=True)
class WorkerPlan:
    """What one worker serves.

    Attributes:
        queues: activity task queue -> (backend, calls of it run at once).
        workflow_queue: the workflows' queue, or None when this worker runs no workflows.
        prefix: the task-queue prefix.
        web_queue: the queue of agentport's own search and fetch (`_web`), or None.
        roots: the folders the file steps may read and write (`--root`), real paths.
    """

    queues: dict[str, tuple[str, int]] = field(default_factory=dict)
    workflow_queue: str | None = None
    prefix: str = DEFAULT_PREFIX
    web_queue: str | None = None
    roots: tuple[Path, ...] = ()

    def describe(self) -> list[str]:
        """One line per queue, for the worker's start-up message."""
        lines = [f"queue {q}: backend {b}, at most {n} call(s) at once on this worker"
                 for q, (b, n) in self.queues.items()]  # fmt: skip
        if self.workflow_queue:
            lines.append(f"queue {self.workflow_queue}: workflows")
        if self.web_queue:
            lines.append(f"queue {self.web_queue}: web search and page fetches, at most "
                         f"{WEB_CONCURRENCY} at once on this worker")  # fmt: skip
        if self.workflow_queue:
            lines.append("files: batch reports, graphs and corpora only under "
                         + ", ".join(map(str, self.roots)))  # fmt: skip
        return lines


def _missing(name: str) -> str | None:
    """Why backend *name* cannot run on this machine, or None."""
    from ..factory import is_installed

    capability = get_capability(name)
    if capability.kind is BackendKind.test or is_installed(capability):
        return None
    if capability.executable:
        return f"its CLI `{capability.executable}` is not installed ({capability.install_hint})"
    extra = f"pip install 'agentport[{capability.extra}]'" if capability.extra else ""
    return f"its Python extra is not installed ({extra or capability.install_hint})"


def plan_worker(
    backends: Sequence[str],
    *,
    concurrency: Mapping[str, int] | None = None,
    prefix: str = DEFAULT_PREFIX,
    workflows: bool = True,
    web: bool | None = None,
) -> WorkerPlan:
    """The queues a worker for *backends* serves. Raises `ProviderError`: `config` for an
    unknown backend, `auto` or a bad cap; `not_installed` naming the backend, the queue and
    the install hint when a backend (any member of a chain) cannot run here.

    *web*: serve agentport's own search and fetch (`web_queue(prefix)`, see `_web`); None =
    with the workflows, when the `web` extra (trafilatura) is installed; True without the
    extra is `not_installed`."""
    queues: dict[str, tuple[str, int]] = {}
    for backend in backends:
        queue = queue_for(backend, prefix)
        for name in _canonical(backend):
            why = _missing(name)
            if why is not None:
                raise ProviderError(
                    ErrorKind.not_installed,
                    f"refusing to serve queue {queue}: backend {name!r} cannot run here: {why}",
                    backend=name,
                )
        queues[queue] = ("+".join(_canonical(backend)), concurrency_for(backend, concurrency))
    serve_web = workflows if web is None else web
    if serve_web and importlib.util.find_spec("trafilatura") is None:
        if web:
            raise ProviderError(
                ErrorKind.not_installed,
                f"refusing to serve queue {web_queue(prefix)}: agentport's own web tools "
                "need the web extra: pip install 'agentport[web]'",
            )
        serve_web = False
    if not queues and not workflows and not serve_web:
        raise ProviderError(ErrorKind.config, "this worker would serve no queue")
    return WorkerPlan(
        queues,
        workflow_queue(prefix) if workflows else None,
        prefix,
        web_queue(prefix) if serve_web else None,
    )


def check_address(address: str) -> str:
    """*address* if it is `HOST:PORT`, else `ProviderError(config)`."""
    match = _ADDRESS.match(address.strip())
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise ProviderError(ErrorKind.config, f"--temporal: expected HOST:PORT, got {address!r}")
    return address.strip()


async def connect(
    address: str, namespace: str = "default", *, timeout_s: float = CONNECT_TIMEOUT_S
) -> Client:
    """A Temporal client for *address* (`HOST:PORT`); `ProviderError(network)` in one line
    when the server does not answer within *timeout_s* seconds, `config` for a malformed
    address."""
    address = check_address(address)
    why = ""
    try:
        with anyio.fail_after(timeout_s):
            return await Client.connect(address, namespace=namespace)
    except TimeoutError:
        why = f"no answer within {timeout_s:g}s"
    except (RuntimeError, OSError) as exc:  # the SDK reports failed connects as RuntimeError
        why = _why(str(exc))
    raise ProviderError(ErrorKind.network, f"cannot reach the Temporal server at {address}: {why}")


_REASONS = (
    ("ConnectionRefused", "connection refused"),
    ("dns error", "unknown host"),
    ("grpc-status header missing", "not a Temporal server (no gRPC answer)"),
    ("NotFound", "namespace not found"),
)


def _why(text: str) -> str:
    """One short reason from the SDK's connect error (Rust transport errors are long)."""
    for needle, reason in _REASONS:
        if needle in text:
            return reason
    first = text.splitlines()[0] if text else "connection failed"
    return first if len(first) <= 200 else first[:197] + "..."


def _workflow_parts() -> tuple[list[type], list[Callable[..., Any]], Any]:
    """The workflows, their own activities (report and graph files) and their sandbox runner
    from `agentport.temporal._workflows` (`WORKFLOWS`, `ACTIVITIES`, `workflow_runner()`);
    nothing when that module is absent."""
    try:
        module = importlib.import_module(f"{__package__}._workflows")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__package__}._workflows":
            raise
        return [], [], None
    runner = getattr(module, "workflow_runner", None)
    return (
        list(getattr(module, "WORKFLOWS", [])),
        list(getattr(module, "ACTIVITIES", [])),
        runner() if runner is not None else None,
    )


async def run_worker(
    address: str,
    backends: Sequence[str],
    *,
    namespace: str = "default",
    prefix: str = DEFAULT_PREFIX,
    concurrency: Mapping[str, int] | None = None,
    workflows: bool = True,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    on_ready: Callable[[WorkerPlan], None] | None = None,
    web: bool | None = None,
    roots: Sequence[Path] | None = None,
    allow_broad_roots: bool = False,
) -> None:
    """Serve *backends* (and the workflows unless *workflows* is False, and the web queue
    as *web* says, see `plan_worker`) until SIGINT or SIGTERM. The workflows' file steps
    read and write only under *roots* (`check_roots`; required with the workflows).
    Raises `ProviderError` as `plan_worker`, `check_roots` and `connect` do, before
    serving."""
    check_address(address)
    plan = plan_worker(
        backends, concurrency=concurrency, prefix=prefix, workflows=workflows, web=web
    )
    served = served_roots(plan, roots or [], allow_broad=allow_broad_roots)
    plan = dataclasses.replace(plan, roots=tuple(served))
    # workflow input is written by any client of the namespace: this worker runs only the
    # backends it serves, and its file steps touch only files under *roots*
    with serving_only([backend for backend, _ in plan.queues.values()], served):
        await _serve(plan, address, namespace, connect_timeout_s, on_ready)


def _homes() -> set[Path]:
    """Every user's home folder (this user's first), as real paths."""
    import pwd

    homes = {Path(os.path.realpath(Path.home()))}
    with contextlib.suppress(OSError):
        homes |= {Path(os.path.realpath(entry.pw_dir)) for entry in pwd.getpwall()}
    return {home for home in homes if str(home) != "/"}


def broad_root(root: Path) -> str | None:
    """Why serving *root* (a real path) would hand its clients more than batch folders:
    it is `/`, a home folder or a folder above one, or it holds the user's agentport
    configuration file (which the worker rereads on every call); None when it is none
    of these."""
    from ..config import user_config_path

    if root == Path(root.anchor):
        return "it is the file system's root"
    for home in _homes():
        if root == home or root in home.parents:
            return f"it is the home folder {home} or holds it"
    config = Path(os.path.realpath(user_config_path()))
    if root in config.parents:
        return f"it holds your agentport configuration {config}"
    return None


def served_roots(
    plan: WorkerPlan, roots: Sequence[Path], *, allow_broad: bool = False
) -> list[Path]:
    """The folders a worker of *plan* serves: *roots* checked (`check_roots`), required
    with the workflows. A worker without them (`--no-workflows`, a model worker) serves its
    `--root`s too: a small-model question reads its corpus or graph there; with none it
    refuses every path."""
    if plan.workflow_queue is None and not roots:
        return []
    return check_roots(roots, allow_broad=allow_broad)


def check_roots(roots: Sequence[Path], *, allow_broad: bool = False) -> list[Path]:
    """*roots* as real paths. `ProviderError(config)` in one line when there is none (a
    worker that runs the workflows serves only the folders it is told), when one is not a
    folder, or when one is `broad_root` and *allow_broad* is False."""
    if not roots:
        raise ProviderError(
            ErrorKind.config,
            "pass --root FOLDER (repeatable): the folders whose batch reports, graphs and "
            "corpora workflow input may name; or --no-workflows for a worker of model "
            "calls only",
        )
    real: list[Path] = []
    for root in roots:
        path = Path(os.path.realpath(root))
        if not path.is_dir():
            raise ProviderError(ErrorKind.config, f"--root {root}: not a folder")
        why = broad_root(path)
        if why is not None and not allow_broad:
            raise ProviderError(
                ErrorKind.config,
                f"--root {root}: refusing to serve it, {why}: any client of the namespace "
                "could write there; pass a folder for batches, or --allow-broad-root",
            )
        real.append(path)
    return real


_ACTIVE: list[tuple[frozenset[str], tuple[Path, ...]]] = []


@contextmanager
def serving_only(backends: Sequence[str], roots: Sequence[Path]) -> Iterator[None]:
    """Within the block, this process's `complete` activity runs only *backends* and its
    file activities touch only files under *roots*. Workers running at once in one process
    (tests, an embedding) serve the union of their rules; when the last one ends, the
    activities are unrestricted again, as before any worker ran."""

    entry = (frozenset(backends), tuple(roots))
    _ACTIVE.append(entry)
    try:
        _apply_rules()
        yield
    finally:
        _ACTIVE.remove(entry)
        _apply_rules()


def _apply_rules() -> None:
    if not _ACTIVE:
        serve_only(None)
        confine_to(None)
        return
    serve_only([b for served, _ in _ACTIVE for b in served])
    confine_to([r for _, roots in _ACTIVE for r in roots])


async def _serve(
    plan: WorkerPlan,
    address: str,
    namespace: str,
    connect_timeout_s: float,
    on_ready: Callable[[WorkerPlan], None] | None,
) -> None:
    client = await connect(address, namespace, timeout_s=connect_timeout_s)
    workers = [
        Worker(
            client,
            task_queue=queue,
            activities=[complete, *SMALL_ACTIVITIES],  # small-model questions: _small
            max_concurrent_activities=cap,
            graceful_shutdown_timeout=_GRACE,
        )
        for queue, (_backend, cap) in plan.queues.items()
    ]
    flows, activities, runner = (
        _workflow_parts() if plan.workflow_queue is not None else ([], [], None)
    )
    if plan.workflow_queue is not None and (flows or activities):
        extra: dict[str, Any] = {"workflow_runner": runner} if runner is not None else {}
        workers.append(
            Worker(
                client,
                task_queue=plan.workflow_queue,
                workflows=flows,
                activities=activities,
                graceful_shutdown_timeout=_GRACE,
                **extra,  # agentport's sandbox: its pure modules passed through (_workflows)
            )
        )
    if plan.web_queue is not None:
        workers.append(
            Worker(
                client,
                task_queue=plan.web_queue,
                activities=WEB_ACTIVITIES,
                max_concurrent_activities=WEB_CONCURRENCY,
                graceful_shutdown_timeout=_GRACE,
            )
        )
    async with AsyncExitStack() as stack:
        stack.push_async_callback(close_fetchers)  # after every worker has stopped
        for worker in workers:
            await stack.enter_async_context(worker)
        if on_ready is not None:
            on_ready(plan)
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                break
