"""From `llm.backend` to a ready adapter or runtime.

`resolve_backend(name)` maps names and aliases to canonical names (the catalog owns them);
`create_llm_adapter` / `create_agent_runtime` load settings (see `agentport.config`), resolve
`auto`, import the backend module lazily and build the backend: a CLI backend module is one
`BackendSpec` (`SPEC`) driven by the generic `CliAdapter` / `CliRuntime`; other modules
(acp, openai_compat, litellm, local, the test doubles) expose `create_adapter(capability,
settings)` / `create_runtime(capability, settings)` (`backend_settings`: a backend is handed
its own typed settings, never `agentport.config`). Adapters are wrapped in the policy layer
(`agentport.policies`: retries inside the whole-call deadline, attempt history, the
backend's shared adaptive concurrency window).

Errors (one rule, docs/errors.md): setup problems found before any call (bad configuration,
unknown backend, a missing Python extra, a runtime of a completion-only backend, real
backends blocked in tests) RAISE `ProviderError` from `create_llm_adapter` /
`create_agent_runtime`; everything that happens during a call is a `Failure` from
`complete()`. `complete_sync` folds both into one `Result` for scripts.

`auto` picks the first available backend in catalog `auto_priority` order: an agent CLI whose
executable is on PATH, then backends whose Python extra is installed; a backend cooling down
after an exhausted usage window (the shared cooldown store) is passed over.

`llm.backend` may be an ordered chain (`["codex", "claude", "local"]`, or a comma list in
`AGENTPORT_LLM_BACKEND`): `create_llm_adapter` then returns a
`agentport.policies.FailoverAdapter` (typed failover, optional `hedge_after_s`).
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
import os
import shutil
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import anyio
from returns.result import Failure, Result

from ._chain import parse_chain
from ._guard import ensure_real_backends_allowed
from ._trust import ENDPOINT_KEYS
from .catalog import all_backends, get_capability, resolve_backend
from .config import LLMSettings, load_settings
from .core import (
    MAX_PART_BYTES,
    AgentRuntime,
    BackendCapability,
    BackendKind,
    CompletionConfig,
    CompletionResponse,
    ErrorKind,
    FilePart,
    ImagePart,
    LLMAdapter,
    Message,
    ProviderError,
    RunawayGuard,
    as_messages,
    sniff_image,
)
from .policies import (
    DEFAULT_FAILOVER_ON,
    ChainMember,
    FailoverAdapter,
    GatedRuntime,
    RetryingAdapter,
    RetryPolicy,
    SessionHandover,
    concurrency_gate,
    default_store,
    failover_kinds,
)

if TYPE_CHECKING:
    from .backends import BackendSettings

__all__ = [
    "attach",
    "complete_sync",
    "create_agent_runtime",
    "create_llm_adapter",
    "installed_version",
    "is_installed",
    "resolve_auto",
    "resolve_backend",
]


def attach(path: str | os.PathLike[str]) -> ImagePart | FilePart:
    """The file at *path* as a message part: an `ImagePart` when its bytes are a PNG, JPEG,
    GIF or WebP image, else a `FilePart` with its UTF-8 text (named by the file name).

    `Message.user("What is in it?", attach("photo.png"), attach("notes.md"))`.

    Only a regular file is read (a symlink is followed first): a folder, a named pipe, a
    socket or a device (`/dev/zero`) is refused before any read, and at most
    `MAX_PART_BYTES` + 1 bytes are ever read, so it never blocks nor fills memory.

    Raises `ValueError` naming the file when it cannot be read, is not a regular file, is
    larger than `MAX_PART_BYTES` (20 MiB), or is neither an image nor UTF-8 text (binary
    files other than images are sent by no backend here: see the catalog's `images` /
    `files`)."""
    from .transport import read_regular

    file = Path(path)
    try:
        data, _ = read_regular(file, MAX_PART_BYTES)
    except OSError as exc:
        why = exc.strerror or str(exc)
        refused = exc.errno in (errno.EINVAL, errno.ENXIO, errno.EFBIG)  # read_regular's own
        raise ValueError(f"{file}: {why if refused else 'cannot read: ' + why}") from None
    if sniff_image(data) is not None:
        return ImagePart.from_bytes(data, name=file.name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(
            f"{file}: neither a PNG/JPEG/GIF/WebP image nor UTF-8 text; no backend takes "
            "other binary files"
        ) from None
    return FilePart.from_text(file.name, text)


def is_installed(capability: BackendCapability) -> bool:
    """Executable on PATH (cli) and required Python modules importable."""
    if capability.executable and shutil.which(capability.executable) is None:
        return False
    return all(importlib.util.find_spec(m) is not None for m in capability.requires_modules)


_VERSIONS: dict[tuple[str, int, int], str | None] = {}


def installed_version(capability: BackendCapability, timeout_s: float = 10.0) -> str | None:
    """`<executable> --version`'s first line (stdout, else stderr), or None when absent,
    silent or over *timeout_s* seconds. Run through the one runner (guardian, group kill);
    cached per executable file (path, size, mtime) for the process's life."""
    exe = capability.executable and shutil.which(capability.executable)
    if not exe:
        return None
    try:
        st = os.stat(exe)
    except OSError:
        return None
    key = (exe, st.st_size, st.st_mtime_ns)
    if key in _VERSIONS:
        return _VERSIONS[key]
    from .transport import ProcessRequest, run_capture_sync

    request = ProcessRequest(
        argv=[exe, "--version"],
        startup_timeout_s=timeout_s,
        idle_timeout_s=timeout_s,
        total_timeout_s=timeout_s,
        grace_s=1.0,
        linger_s=0.0,
    )
    result, stdout = run_capture_sync(request, 1 << 20)
    version = None
    if result.error is None:
        lines = (stdout or result.stderr_tail).strip().splitlines()
        version = lines[0].strip() if lines else None
    _VERSIONS[key] = version
    return version


def resolve_auto() -> str:
    """The first available backend in `auto` order, or `ProviderError(config)` saying how to
    configure one."""
    ranked = sorted(
        (c for c in all_backends() if c.auto_priority is not None),
        key=lambda c: cast(int, c.auto_priority),
    )
    cooling: str | None = None
    for capability in ranked:
        if is_installed(capability):
            if _cooling(capability.name):  # an exhausted window: the next one
                cooling = cooling or capability.name
                continue
            return capability.name
    if cooling is not None:  # every available backend is cooling down: its calls say so
        return cooling
    tried = ", ".join(c.name for c in ranked) or "none registered"
    raise ProviderError(
        ErrorKind.config,
        "llm.backend is 'auto' but no backend is available (tried: "
        f'{tried}); set one with AGENTPORT_LLM_BACKEND=<name> or `[llm] backend = "<name>"` in '
        "your own ~/.config/agentport/config.toml (a project's agentport.toml may set it only "
        "in a trusted folder), or install an agent CLI or `agentport[local]`",
    )


def _cooling(name: str) -> bool:
    store = default_store()
    return store.path.exists() and store.active(name) is not None


def _settings(
    backend: str | Sequence[str] | None, cwd: Path | None, overrides: dict[str, Any]
) -> LLMSettings:
    llm = load_settings(cwd, backend=backend, **overrides).llm
    if "," in llm.backend:  # a failover chain: resolved member by member (_chain_adapter)
        return llm
    name = resolve_auto() if llm.backend.strip().lower() == "auto" else resolve_backend(llm.backend)
    return llm.model_copy(update={"backend": name})


def _module(capability: BackendCapability) -> ModuleType:
    """The backend's module, imported; `ProviderError` when its extra is missing or real
    backends are blocked (unit tests)."""
    missing = [m for m in capability.requires_modules if importlib.util.find_spec(m) is None]
    if missing:
        extra = f"pip install 'agentport[{capability.extra}]'" if capability.extra else ""
        raise ProviderError(
            ErrorKind.not_installed,
            f"backend {capability.name!r} needs {', '.join(missing)}; "
            f"{extra or capability.install_hint}",
            backend=capability.name,
        )
    if capability.kind is not BackendKind.test:
        ensure_real_backends_allowed(capability.name)
    return importlib.import_module(capability.module)


def _build(capability: BackendCapability, settings: LLMSettings, *, runtime: bool) -> Any:
    """An adapter (or runtime) for *capability*: the generic CLI one for a module whose `SPEC`
    is a `BackendSpec`, else the module's `create_adapter` / `create_runtime` hook."""
    module = _module(capability)
    from .backends import BackendSpec, CliAdapter, CliRuntime

    own = backend_settings(settings, capability.name)
    spec = getattr(module, "SPEC", None)
    if isinstance(spec, BackendSpec):
        return (CliRuntime if runtime else CliAdapter)(spec, capability, own)
    return getattr(module, "create_runtime" if runtime else "create_adapter")(capability, own)


def backend_settings(settings: LLMSettings, backend: str) -> BackendSettings:
    """What *backend*'s module is handed (`agentport.backends.BackendSettings`): the call
    defaults, its own `[llm.<backend>]` table, `warm`, and whether a project file chose its
    endpoint (the trust decision is made here, on the settings' origins, not in the backend)."""
    from .backends import BackendSettings

    return BackendSettings(
        defaults=settings.completion_config(),
        options=settings.options(backend),
        warm=settings.warm,
        endpoint_from_project=any(
            settings.from_project(f"{backend}.{key}") for key in ENDPOINT_KEYS
        ),
    )


def create_llm_adapter(
    backend: str | Sequence[str] | None = None,
    *,
    cwd: Path | None = None,
    retry: bool = True,
    **overrides: Any,
) -> LLMAdapter:
    """An `LLMAdapter` for *backend* (or `llm.backend` from configuration); a list or comma
    list of backends is a failover chain (`agentport.policies.FailoverAdapter`).

    `overrides` are `[llm]` settings (`model=`, `total_timeout_s=`, `openai_compat={...}`),
    highest priority. Every call's `CompletionConfig` is merged over the settings: a field
    the caller did not set takes the configured value (`agentport.core.merge_config`).

    With `retry=True` (the default) the adapter is wrapped in the policy layer
    (`agentport.policies.RetryingAdapter`): the configured `RetryPolicy` (`retry_attempts`,
    back-off) inside the whole-call deadline `total_timeout_s`, and the attempt history on
    every failure. `retry=False` returns the backend's own adapter (one attempt, bounded by
    `total_timeout_s`, no history).

    Raises `ProviderError` for setup problems (docs/errors.md): `config` (bad or missing
    configuration, unknown backend, real backends blocked), `not_installed` (a missing Python
    extra; a missing CLI executable is a `Failure` of the first call instead).
    """
    settings = _settings(backend, cwd, overrides)
    if "," in settings.backend:
        return _chain_adapter(settings, retry=retry)
    capability = get_capability(settings.backend)
    adapter = cast(LLMAdapter, _build(capability, settings, runtime=False))
    if settings.warm and not getattr(adapter, "keeps_warm", False):
        warnings.warn(
            f"[llm] warm = {settings.warm} has no effect on backend {capability.name!r}: "
            "only the acp, claude, codex and pi backends keep warm agent processes (docs/warm.md)",
            stacklevel=2,
        )
    if not retry:
        return adapter
    return _with_policies(adapter, capability, settings)


def _with_policies(
    adapter: LLMAdapter,
    capability: BackendCapability,
    settings: LLMSettings,
    hand_over: frozenset[ErrorKind] = frozenset(),
) -> RetryingAdapter:
    policy = RetryPolicy(
        attempts=settings.retry_attempts,
        base_delay_s=settings.retry_base_delay_s,
        max_delay_s=settings.retry_max_delay_s,
    )
    store = default_store()
    return RetryingAdapter(
        adapter, policy, defaults=settings.completion_config(), cooldown=store,
        capability=capability, hand_over=hand_over, runaway=RunawayGuard(),
        concurrency=concurrency_gate(capability, store, getattr(adapter, "base_url", None)),
    )  # fmt: skip


def _chain_adapter(settings: LLMSettings, *, retry: bool) -> FailoverAdapter:
    """A `FailoverAdapter` over `llm.backend = [...]`: each member built on first
    use with the same settings, wrapped in the retry policy (unless *retry* is False)."""
    names = list(parse_chain(settings.backend))
    if names[-1] == "auto":
        names[-1] = resolve_auto()
        if names.count(names[-1]) > 1:
            names.pop()

    kinds = DEFAULT_FAILOVER_ON
    if settings.failover_on is not None:
        kinds = failover_kinds(settings.failover_on)

    def member(name: str, last: bool) -> ChainMember:
        capability = get_capability(name)
        own = settings.model_copy(update={"backend": name})
        # a member before the last hands over at once on what fails the chain over (no
        # retry, no Retry-After sleep); the last, which no other member can replace, retries
        hand_over = frozenset() if last else kinds

        def build() -> LLMAdapter:
            adapter = cast(LLMAdapter, _build(capability, own, runtime=False))
            return _with_policies(adapter, capability, own, hand_over) if retry else adapter

        return ChainMember(name, build, capability)

    return FailoverAdapter(
        [member(n, i == len(names) - 1) for i, n in enumerate(names)],
        failover_on=kinds,
        hedge_after_s=settings.hedge_after_s,
        min_headroom=settings.min_headroom,
        defaults=settings.completion_config(),
        cooldown=default_store(),
        handover=(
            None
            if settings.handover_on is None
            else SessionHandover(failover_kinds(settings.handover_on))
        ),
    )


def create_agent_runtime(
    backend: str | Sequence[str] | None = None, *, cwd: Path | None = None, **overrides: Any
) -> AgentRuntime:
    """An `AgentRuntime` for *backend*; each turn's config is merged over the settings.

    Each turn holds a slot of the backend's shared adaptive concurrency window
    (`agentport.policies.GatedRuntime`; docs/concurrency.md).

    Raises `ProviderError` like `create_llm_adapter`, and `unsupported` for a completion-only
    backend."""
    settings = _settings(backend, cwd, overrides)
    if "," in settings.backend:  # a chain: its first member that can run
        names = [n for n in parse_chain(settings.backend) if n != "auto"] or [resolve_auto()]
        caps = [get_capability(n) for n in names]
        usable = [c for c in caps if c.supports_runtime and is_installed(c)]
        chosen = (usable or [c for c in caps if c.supports_runtime] or caps)[0]
        settings = settings.model_copy(update={"backend": chosen.name})
    capability = get_capability(settings.backend)
    if not capability.supports_runtime:
        raise ProviderError(
            ErrorKind.unsupported,
            f"backend {capability.name!r} is completion-only; it has no AgentRuntime",
            backend=capability.name,
        )
    runtime = cast(AgentRuntime, _build(capability, settings, runtime=True))
    # each turn holds a slot of the backend's shared concurrency window, like each attempt
    gate = concurrency_gate(capability, default_store(), getattr(runtime, "base_url", None))
    return runtime if gate is None else GatedRuntime(runtime, gate)


def complete_sync(
    prompt: str | Sequence[Message],
    config: CompletionConfig | None = None,
    *,
    backend: str | Sequence[str] | None = None,
    cwd: Path | None = None,
    **settings: Any,
) -> Result[CompletionResponse, ProviderError]:
    """One blocking call for scripts: create the adapter, complete, return the `Result`.

    *prompt* is a string (one user message) or a list of `Message`s; *settings* are `[llm]`
    overrides as for `create_llm_adapter` (`model=`, `total_timeout_s=`, `retry=False`, ...).
    Every expected problem, setup ones included (unknown backend, bad configuration, missing
    extra), comes back as `Failure(ProviderError)`: nothing to catch. Runs its own event loop
    (`anyio.run`), so it raises `RuntimeError` when called from async code: use
    `await create_llm_adapter(...).complete(...)` there.
    """
    messages = as_messages(prompt)
    try:
        adapter = create_llm_adapter(backend, cwd=cwd, **settings)
    except ProviderError as exc:
        return Failure(exc)
    # `[llm] warm` agents end with this call's event loop (transport._warm closes them there)
    return anyio.run(adapter.complete, messages, config)
