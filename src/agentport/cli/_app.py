"""`agentport` commands: `backends`, `complete` (workflow commands register themselves here).

Every expected failure prints one line `agentport: <error>` on stderr and exits non-zero
(2 for configuration errors, 1 otherwise); tracebacks are reserved for bugs.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import anyio
import typer
from returns.result import Failure

from ..catalog import all_backends
from ..core import (
    ErrorKind,
    Message,
    Param,
    ProviderError,
    bounded,
    json_schema_problem,
    printable,
    redact,
)
from ._docs import billing_label, verified_label
from ._out import echo

if TYPE_CHECKING:
    from ..config import LLMSettings

app = typer.Typer(
    name="agentport",
    help="One stable way to call any LLM backend.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # docstrings are wrapped source text: markdown joins their lines into one paragraph
    rich_markup_mode="markdown",
)

_LETTER = {"native": "N", "translated": "T", "ignored": "I"}


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        echo(f"agentport {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print agentport's version and exit.",
        ),
    ] = False,
) -> None:
    """One stable way to call any LLM backend."""


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and exit."""
    # controls first: a secret split by an escape sequence is whole again for `redact`
    echo(f"agentport: {redact(printable(message))}", err=True)
    raise typer.Exit(code)


def fail_error(error: ProviderError) -> NoReturn:
    fail(str(error), 2 if error.kind is ErrorKind.config else 1)


def _acp_installed(llm: LLMSettings | None) -> bool:
    """ACP has no executable of its own: it is installed when `[llm.acp] command` names a
    program that exists."""
    raw = llm.options("acp").get("command") if llm is not None else None
    if isinstance(raw, str):
        argv = shlex.split(raw)
    elif isinstance(raw, list | tuple):
        argv = [str(a) for a in raw]
    else:
        return False
    if not argv:
        return False
    exe = argv[0]
    return (os.sep in exe and Path(exe).exists()) or shutil.which(exe) is not None


def backend_rows(probe: bool, llm: LLMSettings | None = None) -> list[dict[str, Any]]:
    """One dict per catalog entry; `probe` adds installed/version (runs `--version`). *llm*
    (the loaded settings) decides whether backends configured by command (`acp`) are."""
    from ..factory import installed_version, is_installed
    from ..policies import default_store

    cooling = {c.backend: c for c in default_store().all_active()}
    rows = []
    for cap in all_backends():
        installed = None
        if probe:
            installed = _acp_installed(llm) if cap.name == "acp" else is_installed(cap)
        rows.append(
            {
                "name": cap.name,
                "aliases": list(cap.aliases),
                "kind": cap.kind.value,
                "summary": cap.summary,
                "executable": cap.executable,
                "installed": installed,
                "version": installed_version(cap) if probe and installed else None,
                "verified_against": cap.verified_against,
                "supports_runtime": cap.supports_runtime,
                "install_hint": cap.install_hint,
                "params": {p.value: cap.params[p].value for p in Param},
                "billing": [b.value for b in cap.billing],
                "cooldown": _cooldown_row(cooling.get(cap.name)),
            }
        )
    return rows


def _cooldown_row(cooldown: Any) -> dict[str, Any] | None:
    """The shared cooldown of a backend (an exhausted usage window), or None."""
    if cooldown is None:
        return None
    return {
        "until": cooldown.until.isoformat(timespec="seconds"),
        "remaining_s": round(cooldown.remaining_s()),
        "window": cooldown.window,
        "reason": cooldown.reason,
    }


def _cooldown_cell(row: dict[str, Any]) -> str:
    cooldown = row.get("cooldown")
    if not cooldown:
        return "-"
    left = int(cooldown["remaining_s"])
    when = cooldown["until"][:16].replace("T", " ")
    return f"until {when} UTC ({left // 3600}h{left % 3600 // 60:02d}m)"


@app.command()
def backends(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List backends: aliases, kind, how each is paid for, installed, version, verified
    version, its shared cooldown (an exhausted usage window), N/T/I grid.

    N native, T translated, I ignored (see docs/backends/index.md).
    """
    from ..config import load_settings

    try:  # a typo in the configuration is reported here too, like by every command
        llm = load_settings().llm
    except ProviderError as exc:
        fail_error(exc)
    rows = backend_rows(probe=True, llm=llm)
    if as_json:
        echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.measure import Measurement

    console = Console()
    wide = _backends_table(rows, grid=True)
    unbounded = console.options.update(max_width=10_000)
    # every column gets at least its longest word, so nothing is cut
    if Measurement.get(console, unbounded, wide).minimum <= console.width:
        console.print(wide)
        return
    # too narrow for one table: the facts (aliases after them), then the grid with short
    # headers and a legend; no header is ever cut
    console.print(_backends_table(rows, grid=False, narrow=True))
    aliases = "; ".join(f"{r['name']}: {', '.join(r['aliases'])}" for r in rows if r["aliases"])
    console.print(f"aliases: {aliases}", overflow="fold")
    console.print(_grid_table(rows))
    console.print("params: " + ", ".join(f"{_short(p)} {p.value}" for p in Param), overflow="fold")


def _short(param: Param) -> str:
    """The grid's three-letter header of *param* (its first letters for a new one)."""
    return _SHORT.get(param) or param.value[:3]


_SHORT = {
    Param.system_prompt: "sys", Param.output_schema: "out", Param.temperature: "tmp",
    Param.max_tokens: "max", Param.reasoning_effort: "eff", Param.model: "mdl",
    Param.tool_restriction: "tls", Param.sandbox: "sbx", Param.max_turns: "trn",
    Param.streaming: "str", Param.session_resume: "res", Param.cwd: "cwd", Param.web_search: "web",
    Param.images: "img", Param.files: "fil",
    Param.approvals: "apr",
    Param.steer: "ste", Param.interrupt: "int", Param.fork: "frk", Param.handoff: "hnd",
}  # fmt: skip


def _backends_table(rows: list[dict[str, Any]], grid: bool, narrow: bool = False) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title="agentport backends (N native · T translated · I ignored)")
    if narrow:  # 80 columns: no frame, no word cut, aliases listed after the table
        table = Table(title=table.title, box=box.SIMPLE, pad_edge=False, show_edge=False, padding=0)
    columns = ("name", "aliases", "kind", "paid by", "installed", "version", "verified",
               "cooldown")  # fmt: skip
    for col in columns:
        if col == "name":
            table.add_column(col, no_wrap=True, min_width=max(len(r["name"]) for r in rows))
        elif not (narrow and col == "aliases"):
            table.add_column(col, min_width=len(col) if narrow else None)
    if narrow:  # "paid by" as wide as its longest word ("subscription"): never cut
        paid = next(c for c in table.columns if c.header == "paid by")
        words = (w for cap in all_backends() for w in billing_label(cap).split())
        paid.min_width = max(len("paid by"), *(len(w) for w in words))
    if grid:
        for p in Param:
            table.add_column(p.value.replace("_", "\n"), justify="center")
    for cap, row in zip(all_backends(), rows, strict=True):
        letters = [_LETTER[row["params"][p.value]] for p in Param] if grid else []
        aliases = [] if narrow else [", ".join(row["aliases"])]
        table.add_row(
            row["name"],
            *aliases,
            row["kind"],
            billing_label(cap),
            "yes" if row["installed"] else "no",
            row["version"] or "-",
            verified_label(cap),
            _cooldown_cell(row),
            *letters,
        )
    return table


def _grid_table(rows: list[dict[str, Any]]) -> Any:
    from rich import box
    from rich.table import Table

    # one space between columns (the box's own separator, no padding): 19 three-letter
    # headers and the longest name fit in 80 columns
    table = Table(box=box.SIMPLE, pad_edge=False, padding=0, show_edge=False)
    table.add_column("name", no_wrap=True, min_width=max(len(r["name"]) for r in rows))
    for p in Param:
        table.add_column(_short(p), justify="center", no_wrap=True, min_width=len(_short(p)))
    for row in rows:
        table.add_row(row["name"], *(_LETTER[row["params"][p.value]] for p in Param))
    return table


# a field whose value is (or names) a secret: api_key, api_key_env, token, password, ...
# (not a count such as output_tokens)
_SECRET_FIELD = re.compile(r"key|secret|password|credential|(?:^|_)token$")


def _shown(field: str, value: Any) -> Any:
    """*value* as `agentport config` shows it: `***` for a secret-named field (and an
    `[llm.<backend>]` `env` or `headers` table), a URL's password masked, `redact`ed."""
    name = field.rsplit(".", 1)[-1].lower()
    if _SECRET_FIELD.search(name) or name in ("env", "headers"):
        return "***" if value is not None else None
    if hasattr(value, "get_secret_value"):
        return "***"
    if isinstance(value, str):
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(value)
        except ValueError:
            return redact(value)
        if parts.password:
            netloc = f"{parts.username}:***@{parts.netloc.rsplit('@', 1)[1]}"
            value = parts._replace(netloc=netloc).geturl()
        return redact(value)
    return value


def config_rows(settings: Any) -> list[tuple[str, str, Any, str]]:
    """`(table, key, value, origin)` for `agentport config`: `[llm]`'s backend, model and
    every key a source set, then every key of `[budget]`, `[web]` and `[temporal]`
    (secrets shown as `***`)."""
    from ..config import TABLES

    llm = settings.llm
    rows: list[tuple[str, str, Any, str]] = [
        ("llm", "backend", llm.backend, llm.origin("backend")),
        ("llm", "model", llm.model, llm.origin("model")),
    ]
    for key in sorted(k for k in llm._origins if "." not in k and k not in ("backend", "model")):
        rows.append(("llm", key, _shown(key, getattr(llm, key, None)), llm.origin(key)))
    for key in sorted(k for k in llm._origins if "." in k):
        table, field = key.split(".", 1)
        rows.append(("llm", key, _shown(field, llm.options(table).get(field)), llm.origin(key)))
    for table in TABLES:
        values = getattr(settings, table).model_dump(mode="json")
        for field, value in values.items():
            if isinstance(value, dict) and value:  # a sub-table: one row per entry
                for sub, item in sorted(value.items()):
                    dotted = f"{field}.{sub}"
                    rows.append(
                        (table, dotted, _shown(dotted, item), settings.origin(f"{table}.{dotted}"))
                    )
                continue
            rows.append((table, field, _shown(field, value), settings.origin(f"{table}.{field}")))
    return rows


@app.command("config")
def config_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Show the settings in effect (\\[llm], \\[budget], \\[web], \\[temporal]) and which
    file (or variable) chose each of them; secrets print as ***."""
    from ..config import load_settings

    try:
        rows = config_rows(load_settings())
    except ProviderError as exc:
        fail_error(exc)
    if as_json:
        listed = [{"table": t, "key": k, "value": v, "from": o} for t, k, v, o in rows]
        echo(json.dumps(listed, indent=2))
        return
    for table, key, value, origin in rows:
        echo(f"{table}.{key} = {value}  ({origin}){_resolves(table, key, value)}")


def _resolves(table: str, key: str, value: Any) -> str:
    """`llm.backend = auto` is followed by the backend `auto` picks on this machine now."""
    if (table, key) != ("llm", "backend") or not isinstance(value, str) or "auto" not in value:
        return ""
    from ..factory import resolve_auto

    try:
        return f"; auto is {resolve_auto()} here"
    except ProviderError:
        return "; auto finds no backend here (agentport doctor)"


_SCHEMA_LIMIT = 4 * 1024 * 1024  # a JSON schema is small; a larger file is refused, not read


def _load_schema(path: Path) -> dict[str, Any]:
    from ..transport import read_regular

    try:  # a regular file only (a FIFO would block, /dev/zero never end), bounded
        value = bounded.loads(read_regular(path, _SCHEMA_LIMIT)[0].decode("utf-8"))
    except OSError as exc:
        fail(f"{path}: cannot read schema: {exc.strerror}", 2)
    except UnicodeDecodeError as exc:
        fail(f"{path}: a JSON schema must be UTF-8 text (byte {exc.start} is not)", 2)
    except json.JSONDecodeError as exc:
        fail(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}", 2)
    if not isinstance(value, dict):
        fail(f"{path}: a JSON schema must be an object", 2)
    problem = json_schema_problem(value)
    if problem:
        fail(f"{path}: not a valid JSON schema: {problem}", 2)
    return value


def _check_choices(choices: list[str] | None) -> None:
    """Usage errors for `--choice`: an empty or blank answer, or one given twice."""
    for i, value in enumerate(choices or []):
        if not value.strip():
            fail("--choice: an allowed answer cannot be empty", 2)
        if value in (choices or [])[:i]:
            fail(f"--choice: {value!r} is given twice; each allowed answer once", 2)


@app.command()
def complete(
    prompt: Annotated[
        str, typer.Argument(metavar="PROMPT", help="The prompt; '-' reads standard input.")
    ],
    backend: Annotated[
        str | None, typer.Option("--backend", "-b", help="Backend or alias.")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Model id (default: the backend's).")
    ] = None,
    system: Annotated[str | None, typer.Option("--system", help="A system prompt.")] = None,
    schema: Annotated[
        Path | None, typer.Option("--schema", help="A JSON-schema file the answer must match.")
    ] = None,
    choice: Annotated[
        list[str] | None,
        typer.Option("--choice", help="An allowed answer; repeat it. The answer is one of them."),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the whole response as JSON.")
    ] = False,
) -> None:
    """Ask one question and print the answer."""
    from ..core import CompletionConfig
    from ..factory import create_llm_adapter

    if prompt == "-" and sys.stdin is None:  # started with stdin closed (`<&-`)
        fail("the prompt is '-' but standard input is closed", 2)
    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        fail("the prompt is empty", 2)
    output_schema = _load_schema(schema) if schema else None
    _check_choices(choice)
    try:
        adapter = create_llm_adapter(backend, model=model)
    except ProviderError as exc:
        fail_error(exc)
    messages = ([Message.system(system)] if system else []) + [Message.user(text)]
    if output_schema is not None and choice:
        fail("use --schema or --choice, not both", 2)
    # only what the command line sets: the adapter merges it over the configured settings
    config = CompletionConfig(
        **({"output_schema": output_schema} if output_schema is not None else {}),
        **({"choices": tuple(choice)} if choice else {}),
    )
    result = anyio.run(adapter.complete, messages, config)
    if isinstance(result, Failure):
        fail_error(result.failure())
    response = result.unwrap()
    for warning in response.warnings:
        echo(f"agentport: warning: {redact(warning)}", err=True)
    # what leaves the process is redacted, the answer included (a provider may echo a key)
    if as_json:
        echo(redact(response.model_dump_json(indent=2)))
    else:
        echo(redact(response.content))


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except ProviderError as exc:  # setup errors raised outside a command's own handling
        echo(f"agentport: {exc}", err=True)
        raise SystemExit(2 if exc.kind is ErrorKind.config else 1) from None
