"""Which project folders may configure more than models and timeouts (like git's safe.directory).

A cloned repository's `agentport.toml` or `pyproject.toml` `[tool.agentport]` is read, but
until the user trusts that folder it may only set:

- in `[llm]`: `model`, `temperature`, `max_tokens`, the timeouts, `on_ignored` and the
  retry settings, each within a cap (`PROJECT_CAPS`, timeouts at most an hour);
- in `[llm.<backend>]`: `model` and keys ending in `timeout_s`;
- in `[budget]`: ceilings that only lower the user's own (a higher one is ignored).

A model is a name, never a file path (the local backend would parse the project's file).
Table names are matched as the loader matches them, in any case (`[LLM]` is `[llm]`).

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

Trust is decided per file, by identity (`read_project_file`): a project file that is a
symbolic link, or resolves outside its folder, is untrusted even in a trusted folder (a
cloned repository can ship `agentport.toml -> ~/.config/agentport/config.toml`), and the
trust of one file never extends to another. The decision and the read use one descriptor,
so what was judged is what is applied.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
import sys
import tomllib
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core import printable

__all__ = [
    "ENV_TRUSTED",
    "PROJECT_CAPS",
    "PROJECT_SAFE_KEYS",
    "PROJECT_TIMEOUT_CAP_S",
    "ProjectFile",
    "UnknownConfigWarning",
    "UntrustedConfigWarning",
    "canonical_tables",
    "did_you_mean",
    "filter_untrusted",
    "is_trusted",
    "narrow_budget",
    "one_line_warnings",
    "read_project_file",
    "read_user_file",
    "strip_strangers_credentials",
    "trusted_entries",
    "unknown_setting",
    "user_toml",
    "warn_dropped",
]

ENV_TRUSTED = "AGENTPORT_TRUSTED_PROJECTS"

# The `[llm]` keys that are per-call defaults (`CompletionConfig` fields of the same name).
CALL_FIELDS = (
    "model",
    "temperature",
    "max_tokens",
    "reasoning_effort",
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
        value = user_toml(user_file).get("trusted_projects", [])
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


#: why an untrusted folder's restricted keys are ignored (the warning's tail)
FOLDER_UNTRUSTED = (
    "this project folder is not trusted (add it to trusted_projects in your own agentport "
    "config to allow it)"
)
#: a project config file is small; a larger one is refused rather than parsed
PROJECT_FILE_LIMIT = 4 * 1024 * 1024


@dataclass(frozen=True)
class ProjectFile:
    """One project config file as read: *data* its bytes (None when there is no file),
    *trusted* whether its restricted keys apply, *why* the reason they do not (the tail of
    each warning line)."""

    path: Path
    data: bytes | None
    trusted: bool
    why: str = FOLDER_UNTRUSTED


def _unreadable(path: Path, exc: OSError) -> Exception:
    """The one-line config error for a config file `read_regular` could not read: its own
    refusal as it says it (a pipe, a folder, too large), anything else as "cannot read"."""
    from .core import ErrorKind, ProviderError

    refused = exc.errno in (errno.EINVAL, errno.ENXIO, errno.EFBIG)  # read_regular's own
    why = exc.strerror if refused else f"cannot read: {exc.strerror or exc}"
    return ProviderError(ErrorKind.config, f"{path}: {why}")


def user_toml(path: Path) -> dict[str, Any]:
    """The TOML table of a config file someone else's program also reads (the user's own
    file, a CLI's): read like every config file here (`read_regular`: a regular file only,
    bounded, never blocking on a named pipe). A missing file is `{}`; `OSError`,
    `tomllib.TOMLDecodeError` and `UnicodeDecodeError` pass to the caller."""
    from .transport import read_regular

    try:
        data, _ = read_regular(path, PROJECT_FILE_LIMIT)
    except FileNotFoundError:
        return {}
    return tomllib.loads(data.decode("utf-8"))


def read_user_file(path: Path) -> ProjectFile:
    """The user's own config file, read once on one descriptor like a project file (a named
    pipe, a folder or a device is refused at once instead of blocking the load) and trusted:
    it is the user's. A missing file gives `data=None`. Raises `ProviderError(config)` naming
    the file when it cannot be read."""
    from .transport import read_regular

    try:
        data, _ = read_regular(path, PROJECT_FILE_LIMIT)
    except FileNotFoundError:
        return ProjectFile(path, None, True, "")
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return ProjectFile(path, data, True, "")


def read_project_file(path: Path, *, folder_trusted: bool, user_file: Path) -> ProjectFile:
    """Read the project file *path* (`<folder>/agentport.toml`, `<folder>/pyproject.toml`)
    and decide its trust from what was opened, never from a neighbour:

    - a symbolic link is untrusted, whatever it points to (the user's own file included:
      that one is read as the user's file anyway) and whatever the folder's trust;
    - a file that resolves outside its folder is untrusted;
    - else it is trusted when its folder is (*folder_trusted*), or when it is the user's
      own config file itself (`AGENTPORT_CONFIG_FILE` naming it: same device and inode).

    A missing file (or a dangling link) gives `data=None`. Raises `ProviderError(config)`
    naming the file when it is not a regular file (a folder, a named pipe, a device), is
    over 4 MiB or cannot be read."""
    from .transport import read_regular

    try:
        link = stat.S_ISLNK(path.lstat().st_mode)
        data, opened = read_regular(path, PROJECT_FILE_LIMIT, follow=link)
    except FileNotFoundError:
        return ProjectFile(path, None, False)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    if link:
        why = (
            f"this file is a symbolic link (to {os.readlink(path)}); a linked project file is "
            "never trusted, even in a trusted folder (copy it, or set the key in your own "
            "agentport config)"
        )
        return ProjectFile(path, data, False, why)
    real, folder = path.resolve(), path.parent.resolve()
    if not real.is_relative_to(folder):
        return ProjectFile(path, data, False, f"this file resolves outside its folder ({real})")
    try:
        mine = user_file.stat()
    except OSError:
        own = False
    else:
        own = (mine.st_dev, mine.st_ino) == (opened.st_dev, opened.st_ino)
    return ProjectFile(path, data, folder_trusted or own)


#: keys of an `[llm.<backend>]` table that choose where calls go, and those that authenticate
ENDPOINT_KEYS = ("base_url", "api_base")
CREDENTIAL_KEYS = ("api_key", "api_key_env", "headers", "env")


def strip_strangers_credentials(
    extra: Mapping[str, Any], origins: Mapping[str, tuple[str, bool]]
) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, bool]]]:
    """Leave out the credentials that would follow an endpoint another source chose: in
    each `[llm.<backend>]` table of *extra* whose endpoint (`base_url`, `api_base`) came
    from a project file, every credential key (`api_key`, `api_key_env`, `headers`, `env`)
    set by a different source (the user's own file, the environment, an argument), with one
    `UntrustedConfigWarning` each. *origins* maps a dotted key to (where it was set,
    whether that is a project file). Returns the changed tables by backend (empty when
    nothing is left out) and the origins without the keys left out. A project file's
    endpoint gets only the credentials that same file sets, as it gets no environment key."""
    update: dict[str, dict[str, Any]] = {}
    kept = dict(origins)
    for backend, table in extra.items():
        if not isinstance(table, Mapping):
            continue
        for endpoint in ENDPOINT_KEYS:
            chose, project = origins.get(f"{backend}.{endpoint}", ("", False))
            if endpoint not in table or not project:
                continue
            for key in CREDENTIAL_KEYS:
                where = origins.get(f"{backend}.{key}", ("", False))[0]
                if key not in table or where == chose:
                    continue
                update.setdefault(backend, dict(table)).pop(key, None)
                kept.pop(f"{backend}.{key}", None)
                warnings.warn(
                    f"{where}: llm.{backend}.{key} not sent: llm.{backend}.{endpoint} comes "
                    f"from the project file {chose}, which gets only the credentials it sets "
                    f"itself (set the key there, or move {endpoint} to your own config)",
                    UntrustedConfigWarning,
                    stacklevel=4,
                )
    return update, kept


# What an untrusted project may set is capped: it may narrow the user's limits, never widen them
# into a denial of service (100000 retries, a 1e12 s timeout). Over a cap, the key is refused.
PROJECT_CAPS: dict[str, float] = {
    "retry_attempts": 5,
    "retry_base_delay_s": 60.0,
    "retry_max_delay_s": 300.0,
    "max_tokens": 200_000,
}
PROJECT_TIMEOUT_CAP_S = 3600.0


def canonical_tables(label: str, node: Mapping[str, Any]) -> dict[str, Any]:
    """*node* (a config file's top level, or its `[tool.agentport]`) with its table names as
    the settings loader resolves them: case-insensitively (`[LLM]`, `[Llm]` and `[llm]` all
    set `llm`). The trust filter and the unknown-table warning then see exactly what would
    be applied. Raises `ProviderError(config)` naming the file when two spellings of one
    table are both present."""
    from .core import ErrorKind, ProviderError

    out: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in node.items():
        name = str(key).lower()
        if name in spelled:
            raise ProviderError(
                ErrorKind.config,
                f"{label}: [{spelled[name]}] and [{key}] are the same table; keep one",
            )
        spelled[name] = str(key)
        out[name] = value
    return out


def _path_like(value: Any, root: Path | None) -> bool:
    """A model value that names a file (the local backend takes a path): `.gguf`, absolute,
    home- or dot-relative, or an existing file below the project folder."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if text.lower().endswith(".gguf") or text.startswith(("/", "~", ".", "\\")) or "\\" in text:
        return True
    return root is not None and (root / text).exists()


def _over_cap(key: str, value: Any) -> str | None:
    """Why an untrusted *key* = *value* is refused (over its cap, or a path as a model)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    cap = PROJECT_TIMEOUT_CAP_S if key.endswith("timeout_s") else PROJECT_CAPS.get(key)
    if cap is not None and not value <= cap:  # `not <=`: NaN is over every cap
        return f"over the cap of {cap:g} for an untrusted project"
    return None


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`; did you mean 'x'?` naming the closest of *known* to a mistyped *key*, else ``."""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_setting(key: str, known: Iterable[str]) -> str:
    """The one-line error for a setting no model field has, with the closest name."""
    return f"unknown setting {key!r}{did_you_mean(key, known)}"


def filter_untrusted(
    llm: Mapping[str, Any], root: Path | None = None, known: Iterable[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The `[llm]` table of an untrusted project file (in folder *root*) without its unsafe
    keys, and the dotted names of the keys dropped (`llm.backend`, `llm.openai_compat.base_url`,
    `llm.model (a file path)`, ...). Kept: `PROJECT_SAFE_KEYS` and, in `[llm.<backend>]`,
    `model` and `*timeout_s`; numbers within `PROJECT_CAPS` / `PROJECT_TIMEOUT_CAP_S`; models
    that are names, never paths. Pure: the caller warns."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []

    def keep(name: str, key: str, value: Any, table: dict[str, Any]) -> None:
        if key == "model" and _path_like(value, root):
            dropped.append(f"{name} (a model file path)")
        elif (why := _over_cap(key, value)) is not None:
            dropped.append(f"{name} ({why})")
        else:
            table[key] = value

    for key, value in llm.items():
        if isinstance(value, Mapping):
            table: dict[str, Any] = {}
            for sub, sub_value in value.items():
                name = f"llm.{key}.{sub}"
                if sub == "model" or str(sub).endswith("timeout_s"):
                    keep(name, str(sub), sub_value, table)
                else:
                    dropped.append(name)
            kept[key] = table
        elif key in PROJECT_SAFE_KEYS:
            keep(f"llm.{key}", str(key), value, kept)
        elif known and key not in known:  # a typo, not a trust question
            dropped.append(f"llm.{key} (unknown setting{did_you_mean(str(key), known)})")
        else:
            dropped.append(f"llm.{key}")
    return kept, dropped


def narrow_budget(
    project: Mapping[str, Any], user: Mapping[str, Any], measure: Any
) -> tuple[dict[str, Any], list[str]]:
    """An untrusted project's `[budget]` may only lower the user's: each key the user also
    sets is kept only when it is not higher (*measure* turns a value into a number: `wall`
    is a duration). Returns the kept table and the dropped dotted names."""
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, value in project.items():
        mine = user.get(key)
        try:
            higher = mine is not None and not measure(key, value) <= measure(key, mine)
        except (TypeError, ValueError):
            higher = False  # the settings validation names the bad value
        if higher:
            dropped.append(f"budget.{key} (higher than your own {mine!r})")
        else:
            kept[key] = value
    return kept, dropped


def warn_dropped(label: str, dropped: list[str], why: str = FOLDER_UNTRUSTED) -> None:
    """One warning line per ignored key, naming the file, the key and *why* the file is not
    trusted."""
    for key in dropped:
        if " (unknown setting" in key:  # a typo: the file's trust has nothing to do with it
            warnings.warn(f"{label}: {key} ignored", UntrustedConfigWarning, stacklevel=2)
            continue
        instead = (
            "; the backend comes from your own configuration (or `auto`) instead"
            if key == "llm.backend"
            else ""
        )
        warnings.warn(
            f"{label}: {key} ignored: {why}{instead}", UntrustedConfigWarning, stacklevel=2
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
            print(f"agentport: warning: {printable(str(message))}", file=sys.stderr)
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
