"""Which project folders may configure more than models and timeouts (like git's safe.directory).

A cloned repository's `agentport.toml` or `pyproject.toml` `[tool.agentport]` is read, but
until the user trusts that folder it may only set:

- in `[llm]`: `model`, `temperature`, `max_tokens`, the timeouts, `on_ignored` and the
  retry settings;
- in `[llm.<backend>]`: `model` and keys ending in `timeout_s`.

Everything else there (`backend`, `base_url`, `executable`, `extra_args`, `env`, `home`,
`api_key`, `api_key_env`, `headers`, `command`, ...) is ignored with one warning per key
naming the file and key, because it could send the user's keys to the project's server or run
the project's programs. The user trusts a folder in their own file
(`~/.config/agentport/config.toml`, top level, not under `[llm]`):

```toml
trusted_projects = ["/home/me/src/myproject", "/home/me/work/*"]
```

or with `AGENTPORT_TRUSTED_PROJECTS` (paths separated by `os.pathsep`, for CI). An entry
ending in `/*` trusts every folder below it; `*` alone trusts every folder.
"""

from __future__ import annotations

import os
import sys
import tomllib
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "ENV_TRUSTED",
    "PROJECT_SAFE_KEYS",
    "UnknownConfigWarning",
    "UntrustedConfigWarning",
    "filter_untrusted",
    "is_trusted",
    "one_line_warnings",
    "trusted_entries",
    "warn_dropped",
]

ENV_TRUSTED = "AGENTPORT_TRUSTED_PROJECTS"

# The `[llm]` keys that are per-call defaults (`CompletionConfig` fields of the same name).
CALL_FIELDS = (
    "model",
    "temperature",
    "max_tokens",
    "startup_timeout_s",
    "idle_timeout_s",
    "attempt_timeout_s",
    "total_timeout_s",
    "on_ignored",
)
# What an untrusted project file may set: the per-call values and the retry policy.
PROJECT_SAFE_KEYS = frozenset(
    {*CALL_FIELDS, "retry_attempts", "retry_base_delay_s", "retry_max_delay_s"}
)


class UntrustedConfigWarning(UserWarning):
    """A project file set a key only a trusted project may set; the key was ignored."""


class UnknownConfigWarning(UserWarning):
    """A config file has a top-level table or key agentport does not know (a typo such as
    `[lm]`); it was ignored."""


def trusted_entries(user_file: Path) -> list[str]:
    """`trusted_projects` from the user's file plus `AGENTPORT_TRUSTED_PROJECTS` (raw text).

    A missing or unreadable user file contributes nothing (the settings loader reports a
    malformed file itself); a `trusted_projects` that is not a list of strings is ignored.
    """
    entries: list[str] = []
    try:
        with user_file.open("rb") as handle:
            value = tomllib.load(handle).get("trusted_projects", [])
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        value = []
    if isinstance(value, list):
        entries += [v for v in value if isinstance(v, str) and v.strip()]
    env = os.environ.get(ENV_TRUSTED, "")
    entries += [part for part in env.split(os.pathsep) if part.strip()]
    return entries


def _norm(path: str | Path) -> Path:
    return Path(os.path.expanduser(str(path))).resolve()


def is_trusted(folder: Path, entries: list[str]) -> bool:
    """Whether *folder* matches an entry: the same folder, below a `dir/*` entry, or `*`."""
    here = _norm(folder)
    for entry in entries:
        entry = entry.strip()
        if entry == "*":
            return True
        if entry.endswith("/*"):
            base = _norm(entry[:-2])
            if here == base or base in here.parents:
                return True
        elif _norm(entry) == here:
            return True
    return False


def _safe_backend_key(key: str) -> bool:
    return key == "model" or key.endswith("timeout_s")


def filter_untrusted(llm: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The `[llm]` table of an untrusted project file without its unsafe keys, and the
    dotted names of the keys dropped (`llm.backend`, `llm.openai_compat.base_url`, ...).
    Pure: the caller warns."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in llm.items():
        if isinstance(value, Mapping):
            table = {}
            for sub, sub_value in value.items():
                if _safe_backend_key(str(sub)):
                    table[sub] = sub_value
                else:
                    dropped.append(f"llm.{key}.{sub}")
            kept[key] = table
        elif key in PROJECT_SAFE_KEYS:
            kept[key] = value
        else:
            dropped.append(f"llm.{key}")
    return kept, dropped


def warn_dropped(label: str, dropped: list[str]) -> None:
    """One warning line per ignored key, naming the file and key."""
    for key in dropped:
        warnings.warn(
            f"{label}: {key} ignored: this project folder is not trusted (add it to "
            f"trusted_projects in your own agentport config to allow it)",
            UntrustedConfigWarning,
            stacklevel=2,
        )


def one_line_warnings() -> None:
    """Console scripts: print `UntrustedConfigWarning`s and `UnknownConfigWarning`s as
    `agentport: warning: ...` lines."""
    previous = warnings.showwarning

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, UntrustedConfigWarning | UnknownConfigWarning):
            print(f"agentport: warning: {message}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
