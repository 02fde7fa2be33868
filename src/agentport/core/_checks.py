"""Pure checks shared by every adapter."""

from __future__ import annotations

from collections.abc import Sequence

from returns.result import Failure, Result, Success

from ._capabilities import BackendCapability, Param, ParamSupport
from ._config import CompletionConfig
from ._errors import ErrorKind, ProviderError
from ._messages import Message, MessageRole, inline_files

__all__ = [
    "SAFETY_PARAMS",
    "check_params",
    "messages_for",
    "prepare_messages",
    "resumable",
    "unenforced_safety",
]

# Parameters that limit what an agent may do: never silently dropped.
SAFETY_PARAMS: frozenset[Param] = frozenset({Param.tool_restriction, Param.sandbox})


def unenforced_safety(capability: BackendCapability, config: CompletionConfig) -> list[str]:
    """The safety parameters this call sets that *capability* cannot enforce (sorted names).

    `tool_restriction` needs NATIVE or TRANSLATED support. `sandbox` too, except that a call
    with no tools at all (`allowed_tools=()`) on a backend that enforces the tool list needs
    no sandbox: nothing can run.
    """
    tools = config.tools
    tools_ok = capability.support(Param.tool_restriction) is not ParamSupport.IGNORED
    sandbox_ok = capability.support(Param.sandbox) is not ParamSupport.IGNORED
    missing: list[str] = []
    if tools.allowed_tools is not None and not tools_ok:
        missing.append(Param.tool_restriction.value)
    if tools.sandbox is not None and not sandbox_ok and not (tools.no_tools and tools_ok):
        missing.append(Param.sandbox.value)
    return sorted(missing)


def resumable(capability: BackendCapability) -> bool:
    """Whether *capability*'s backend can resume a session by id (`session_resume` is not
    IGNORED)."""
    return capability.support(Param.session_resume) is not ParamSupport.IGNORED


def check_params(
    capability: BackendCapability, messages: Sequence[Message], config: CompletionConfig
) -> Result[tuple[str, ...], ProviderError]:
    """Apply the caller's `on_ignored` policy to the parameters this call sets.

    Returns `Success(warnings)` (one line per IGNORED parameter under `warn`), or
    `Failure(ErrorKind.unsupported)` naming them under `fail`. IGNORED is the backend's
    catalog status for the parameter (`BackendCapability`).
    Safety parameters (`SAFETY_PARAMS`: tool_restriction, sandbox) fail closed: one the
    backend cannot enforce is `Failure(ErrorKind.unsupported)` whatever `on_ignored` says
    (`unenforced_safety`); so does a `session_id` on a backend that cannot resume
    (`resumable`): the answer would come from a new, empty session. A call with no user or
    assistant message with text, a file, or an image the backend takes (nothing to answer)
    is `Failure(ErrorKind.invalid_request)`.
    """
    refused = _refused(capability, messages, config)
    if refused is not None:
        return Failure(refused)
    ignored = sorted(
        p.value
        for p in config.params_set(messages) - SAFETY_PARAMS - {Param.session_resume, Param.fork}
        if capability.support(p) is ParamSupport.IGNORED
    )
    if not ignored:
        return Success(())
    if config.on_ignored == "fail":
        return Failure(
            ProviderError(
                ErrorKind.unsupported,
                f"backend ignores: {', '.join(ignored)} (on_ignored='fail')",
                backend=capability.name,
                details={"params": ignored},
            )
        )
    return Success(
        tuple(
            f"{capability.name} ignores {p}"
            + (f": {capability.notes[Param(p)]}" if Param(p) in capability.notes else "")
            for p in ignored
        )
    )


def messages_for(capability: BackendCapability, messages: Sequence[Message]) -> list[Message]:
    """The messages *capability*'s backend is given, after `check_params` passed: text files
    inlined into their message (files are TRANSLATED everywhere), images removed when the
    backend IGNOREs them (the call's `on_ignored` policy warned, or failed it first)."""
    drop = capability.support(Param.images) is ParamSupport.IGNORED
    return inline_files(messages, drop_images=drop)


def prepare_messages(
    capability: BackendCapability, messages: Sequence[Message], config: CompletionConfig
) -> Result[tuple[list[Message], tuple[str, ...]], ProviderError]:
    """What every adapter does first: `check_params`, then `messages_for`. `Success((the
    messages the backend is given, the warnings))`, or `check_params`'s `Failure`."""
    return check_params(capability, messages, config).map(
        lambda warnings: (messages_for(capability, messages), warnings)
    )


def _refused(
    capability: BackendCapability, messages: Sequence[Message], config: CompletionConfig
) -> ProviderError | None:
    """The failure of a call `check_params` refuses whatever `on_ignored` says: nothing to
    answer, an unenforced safety parameter, a fork or a resume the backend cannot make."""
    kept_images = capability.support(Param.images) is not ParamSupport.IGNORED
    if not any(
        m.role is not MessageRole.system
        and (m.content.strip() or m.files or (kept_images and m.images))
        for m in messages
    ):
        return ProviderError(
            ErrorKind.invalid_request,
            "nothing to answer: no user or assistant message with text or parts",
            backend=capability.name,
        )
    unsafe = unenforced_safety(capability, config)
    if unsafe:
        return ProviderError(
            ErrorKind.unsupported,
            f"{capability.name} cannot enforce {', '.join(unsafe)} (tools "
            f"{config.tools.allowed_tools!r}, sandbox {config.tools.sandbox}); safety "
            "parameters fail closed: pass ToolPolicy.cli_defaults() (or None for the "
            "parameter) to accept the CLI's own defaults",
            backend=capability.name,
            retryable=False,
            details={"params": unsafe},
        )
    if config.fork_session and capability.support(Param.fork) is ParamSupport.IGNORED:
        return ProviderError(
            ErrorKind.unsupported,
            f"{capability.name} cannot fork session {config.session_id!r}",
            backend=capability.name,
            retryable=False,
            details={"params": [Param.fork.value], "session_id": config.session_id},
        )
    if config.session_id is not None and not resumable(capability):
        # a resume that cannot happen would answer in a new, empty session: never silently
        return ProviderError(
            ErrorKind.unsupported,
            f"{capability.name} cannot resume session {config.session_id!r}"
            + (f" ({note})" if (note := capability.notes.get(Param.session_resume)) else "")
            + "; continue the conversation with agentport.handoff instead",
            backend=capability.name,
            retryable=False,
            details={"params": [Param.session_resume.value], "session_id": config.session_id},
        )
    return None
