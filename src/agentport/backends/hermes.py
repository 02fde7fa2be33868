"""Hermes Agent (`hermes -z PROMPT --usage-file F`, PyPI `hermes-agent`), as one `BackendSpec`.

Checked here on hermes-agent 0.19.0 (its `--help`, then runs against FakeModelServer on
127.0.0.1): `-z/--oneshot PROMPT` prints only the final reply on stdout; `--usage-file PATH`
writes a JSON report (tokens, `model`, `session_id`, `completed`, `failed`) even when the run
fails; on failure 0.19.0 still exits 0 and prints the error as the reply ("API call failed
after 3 retries: …"), so the usage file decides, never the exit code (builds after
hermes-agent PR#113234, 2026-09-16, exit 2). An OpenAI-compatible endpoint is set in
`$HERMES_HOME/config.yaml` (`model.provider: custom`, `model.base_url`, `model.default`) with
the key in `OPENAI_API_KEY`; `agent.api_max_retries` and `agent.max_turns` live there too.
`-z` auto-approves every tool (its `--help`), so no sandbox can be enforced; `-t TOOLSETS`
limits which toolsets are loaded. Output is plain text, so the CLI runs under `_lines.py`,
which also hands the usage file over as the last line.

Options (`[llm.hermes]`): `base_url` (OpenAI-compatible, e.g. `http://127.0.0.1:8080/v1`;
agentport then writes `config.yaml` into `home`), `api_key`, `home` (`HERMES_HOME`; default
with `base_url`: `$XDG_CACHE_HOME/agentport/hermes/<hash of base_url>`, kept so sessions can
be resumed; without `base_url`: hermes' own `~/.hermes`), `provider` (`--provider`),
`max_retries` (`agent.api_max_retries`, default 0 with `base_url`), `ignore_rules` (true adds
`--ignore-rules`), `extra_args`, plus the generic `executable`, `env`, `grace_s`,
`max_line_bytes`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core import (
    AgentEvent,
    EndSignal,
    ErrorKind,
    EventType,
    ProviderError,
    Usage,
)
from . import _lines
from ._classify import kind_from_text
from ._policy import endpoint_passthrough
from ._spec import BackendSpec, CliCall, Invocation, RunOutcome

__all__ = [
    "SPEC",
    "build",
    "classify",
    "decode",
    "final_text",
    "write_home",
]


# 0.19.0 refuses a toolset list with no known name; `context_engine` is a real toolset that
# declares no tools (only a context engine plugin could add some)
_NO_TOOLSET = "context_engine"
# what hermes reads from the parent environment when it talks to its own provider
_PASSTHROUGH = (
    "HERMES_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY", "NOUS_API_KEY",
)  # fmt: skip


def default_home(base_url: str) -> Path:
    """Where agentport keeps a HERMES_HOME for *base_url* when none is configured."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(base_url.encode("utf-8")).hexdigest()[:12]
    return Path(cache) / "agentport" / "hermes" / digest


def write_home(
    home: Path, base_url: str, model: str, max_retries: int, max_turns: int | None
) -> None:
    """Write `config.yaml` (JSON is YAML) pointing hermes at an OpenAI-compatible endpoint."""
    agent: dict[str, Any] = {"api_max_retries": max_retries}
    if max_turns is not None:
        agent["max_turns"] = max_turns
    config = {
        "model": {"provider": "custom", "base_url": base_url.rstrip("/"), "default": model},
        "agent": agent,
    }
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    tmp = home / f".config.yaml.{os.getpid()}"
    tmp.write_text(json.dumps(config, indent=2), encoding="utf-8")
    tmp.replace(path)  # atomic: a concurrent call never reads half a file


def build(call: CliCall) -> Invocation:
    """argv: `python -I -S _lines.py --trailer USAGE hermes --oneshot=PROMPT --usage-file USAGE
    [--model=M] [--provider=P] [--toolsets=T] [--ignore-rules]`. No `--resume`: 0.19.0's `-z`
    ignores it (checked: the next call carried no history). The prompt stays in argv (as the
    value of `--oneshot=`, so it can never be read as a flag): the usage report that decides
    success exists only in `-z` mode, and `-z` takes the prompt only as its value; the
    stdin form (`chat --query-file -`, not in 0.19.0) writes no usage report. No tools
    (`allowed_tools=()`): `--toolsets=context_engine` (no tools declared) and
    `--ignore-rules`."""
    opts, config = call.options, call.config
    usage = call.run_dir / "usage.json"
    argv = [call.executable, f"--oneshot={call.prompt}", "--usage-file", str(usage)]
    if config.model:
        argv.append(f"--model={config.model}")
    if opts.get("provider"):
        argv.append(f"--provider={opts['provider']}")
    allowed = config.tools.allowed_tools
    if allowed is not None:
        # `-z` approves every tool it has: least privilege is having none. An empty value
        # would mean "the default toolsets", so no tools is a toolset that declares none.
        argv.append(f"--toolsets={','.join(allowed) if allowed else _NO_TOOLSET}")
    if opts.get("ignore_rules") or allowed == ():
        argv.append("--ignore-rules")  # no AGENTS.md / memory from the working directory
    argv += [str(a) for a in opts.get("extra_args", ())]
    env: dict[str, str] = {}
    home = Path(str(opts["home"])) if opts.get("home") else None
    if opts.get("base_url"):
        base_url = str(opts["base_url"])
        home = home or default_home(base_url)
        retries = int(opts.get("max_retries", 0))  # agentport owns retries
        write_home(home, base_url, config.model or "default", retries, config.max_turns)
    if home is not None:
        env["HERMES_HOME"] = str(home)
    if "api_key" in opts:
        env["OPENAI_API_KEY"] = str(opts["api_key"])
    return Invocation(
        tuple(_lines.command(sys.executable, argv, str(usage))),
        env,
        None,
        endpoint_passthrough(opts, _PASSTHROUGH),
    )


def _usage(report: dict[str, Any]) -> Usage:
    cost = report.get("estimated_cost_usd")
    return Usage(
        input_tokens=int(report.get("input_tokens") or 0),
        output_tokens=int(report.get("output_tokens") or 0),
        cached_tokens=int(report.get("cache_read_tokens") or 0),
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


def decode(obj: Any) -> AgentEvent | None:
    """`{"line": …}` -> a text event; `{"trailer": usage report}` -> the terminal usage
    event (`is_error` when the report says failed or not completed)."""
    if "line" in obj:
        return AgentEvent(type=EventType.text, content=str(obj["line"]), raw=obj)
    report = obj.get("trailer")
    if not isinstance(report, dict):
        return None
    failed = bool(report.get("failed")) or not report.get("completed", True)
    meta = {
        "usage": _usage(report),
        "session_id": report.get("session_id"),
        "model": report.get("model"),
    }
    # the report has no stop reason: a completed turn is "stop"
    end = EndSignal(terminal=True, finish_reason=None if failed else "stop")
    return AgentEvent(type=EventType.usage, raw=obj, is_error=failed, metadata=meta, end=end)


def final_text(events: Sequence[AgentEvent]) -> str:
    """The reply: every stdout line, joined (blank lines kept)."""
    return "\n".join(e.content for e in events if e.type is EventType.text).strip("\n")


def classify(outcome: RunOutcome) -> ProviderError | None:
    """The usage report decides (0.19.0 exits 0 on failure and prints the error as the
    reply); without one: the exit code (130 interrupted, others failed) and stderr."""
    tail = outcome.stderr_tail[-4000:]
    report = next((e for e in reversed(outcome.events) if e.end.terminal), None)
    text = final_text(outcome.events)
    if report is not None and not report.is_error:
        return None
    if report is not None:
        message = text.strip().splitlines()[-1] if text.strip() else "hermes reported failed"
        kind = kind_from_text(message) or ErrorKind.process_failed
        return ProviderError(kind, message, exit_code=outcome.exit_code, stderr_tail=tail)
    code = outcome.exit_code
    if code in (0, None):
        return None if text.strip() else ProviderError(
            ErrorKind.bad_output, "hermes printed no reply and no usage report",
            exit_code=code, stderr_tail=tail,
        )  # fmt: skip
    lines = [ln.strip() for ln in tail.strip().splitlines() if ln.strip()]
    message = lines[-1] if lines else f"hermes failed (exit {code})"
    kind = kind_from_text(message) or ErrorKind.process_failed
    return ProviderError(kind, message, exit_code=code, stderr_tail=tail)


SPEC = BackendSpec(
    name="hermes",
    terminal_event="usage report",
    build=build,
    decode=decode,
    classify=classify,
    final_text=final_text,
)
