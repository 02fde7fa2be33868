"""`agentport doctor`: is each backend usable on this machine, and if not, what fixes it.

- `local`: starts the model worker, loads the model and runs one grammar-constrained
  generation (the small-model path every workflow uses); prints ok with the timings, or the
  exact failure, whose message names the fix (a crash of a native build this CPU cannot run
  names the portable rebuild command).
- each CLI on PATH: its `--version` (through the runner) against the version agentport's
  contract tests verified, and whether a credential it reads is present (an environment
  variable or the login file the CLI writes; a CLI may also keep one in a keychain, so
  "none found" is a hint, not a verdict).

Exit status: 0 when every check of something installed passed, 1 otherwise.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from returns.result import Failure

from ..catalog import all_backends, get_capability
from ..core import BackendCapability, BackendKind, CompletionConfig, Message, ProviderError
from ._app import app, fail_error
from ._out import echo

# Where each CLI's own docs say it reads a credential: environment variables first, then the
# login file its `login` command writes (relative to $HOME; codex honours $CODEX_HOME).
_AUTH: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "claude": (("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"), (".claude/.credentials.json",)),
    "codex": (("OPENAI_API_KEY", "CODEX_API_KEY"), (".codex/auth.json",)),
    "gemini": (("GEMINI_API_KEY", "GOOGLE_API_KEY"), (".gemini/oauth_creds.json",)),
    "qwen": (("OPENAI_API_KEY", "DASHSCOPE_API_KEY"), (".qwen/oauth_creds.json",)),
    "copilot": (
        ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "COPILOT_PROVIDER_API_KEY"),
        (),
    ),
    "opencode": ((), (".local/share/opencode/auth.json",)),
    "pi": ((), (".pi/agent/auth.json",)),
}
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")


def _auth(name: str) -> str:
    known = _AUTH.get(name)
    if known is None:
        return "auth: not checked (no known credential location)"
    env_names, files = known
    found = [n for n in env_names if os.environ.get(n)]
    home = Path.home()
    roots = {".codex/": Path(os.environ["CODEX_HOME"])} if os.environ.get("CODEX_HOME") else {}
    for rel in files:
        root = next((r for p, r in roots.items() if rel.startswith(p)), None)
        path = root / rel.split("/", 1)[1] if root is not None else home / rel
        if path.is_file():
            found.append(f"~/{rel}" if root is None else str(path))
    return f"auth: {', '.join(found)}" if found else "auth: none found (log in with the CLI)"


def _cli_row(cap: BackendCapability) -> dict[str, Any]:
    from ..factory import installed_version, is_installed

    row: dict[str, Any] = {"backend": cap.name, "verified_against": cap.verified_against}
    if not is_installed(cap):
        return row | {"status": "missing", "detail": cap.install_hint}
    version = installed_version(cap)
    if version is None:
        return row | {"status": "failed", "detail": f"`{cap.executable} --version` gave nothing"}
    have = _VERSION.search(version)
    want = cap.verified_against
    if want is None:
        status, note = "ok", "no verified version (docs and a fake CLI only)"
    elif have is not None and have.group(0) == want:
        status, note = "ok", f"verified {want}"
    else:
        status, note = "differs", f"verified {want}: this version's contract is untested"
    return row | {"status": status, "version": version, "detail": f"{note}; {_auth(cap.name)}"}


def _local_row() -> dict[str, Any]:
    row: dict[str, Any] = {"backend": "local"}
    if importlib.util.find_spec("llama_cpp") is None:
        return row | {
            "status": "missing",
            "detail": "pip install 'agentport[local]' (README quick start 1)",
        }
    row["version"] = f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
    from ..backends.local import create_adapter
    from ..config import load_settings
    from ..factory import backend_settings

    try:
        adapter = create_adapter(
            get_capability("local"), backend_settings(load_settings().llm, "local")
        )
        started = time.monotonic()
        load_s = adapter.load(CompletionConfig(total_timeout_s=300))
    except ProviderError as exc:
        return row | {"status": "failed", "detail": str(exc)}
    config = CompletionConfig(choices=("yes", "no"), max_tokens=4, total_timeout_s=120)
    ask = [Message.user("Is the sky blue? Answer yes or no.")]
    import anyio

    result = anyio.run(adapter.complete, ask, config)
    if isinstance(result, Failure):
        return row | {"status": "failed", "detail": str(result.failure())}
    answer = result.unwrap()
    detail = (
        f"model {answer.model} loaded in {load_s:.1f} s; a constrained answer "
        f"({answer.content!r}) in {time.monotonic() - started - load_s:.1f} s"
    )
    return row | {"status": "ok", "detail": detail}


def _deeprefine_row() -> dict[str, Any]:
    from ._deeprefine import command_owner

    owner, clash = command_owner()
    if clash:
        return {"backend": "deeprefine", "status": "clash", "detail": clash}
    where = {
        "none": "is not on PATH (agentport's runs as `agentport-deeprefine`)",
        "agentport": "on PATH is agentport's",
        "deeprefine-cli": "on PATH is deeprefine-cli's (agentport's is `agentport-deeprefine`)",
    }.get(owner, "on PATH is another program (agentport's is `agentport-deeprefine`)")
    return {"backend": "deeprefine", "status": "ok", "detail": f"the `deeprefine` command {where}"}


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Check each backend on this machine: the local model (load + one constrained
    generation, in its worker process), and every installed CLI (its version against the
    verified one, whether a credential is present). Exit 1 when a check failed."""
    from ..config import load_settings

    try:
        load_settings()
    except ProviderError as exc:
        fail_error(exc)
    rows = [_local_row(), _deeprefine_row()]
    rows += [_cli_row(c) for c in all_backends() if c.kind is BackendKind.cli and c.executable]
    if as_json:
        echo(json.dumps(rows, indent=2))
    else:
        width = max(len(r["backend"]) for r in rows)
        for r in rows:
            version = f"{r['version']}: " if r.get("version") else ""
            echo(f"{r['backend']:<{width}}  {r['status']:<8} {version}{r['detail']}")
    if any(r["status"] == "failed" for r in rows):
        raise typer.Exit(1)
