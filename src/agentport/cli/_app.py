"""`agentport` commands: `backends`, `complete` (workflow commands register themselves here).

Every expected failure prints one line `agentport: <error>` on stderr and exits non-zero
(2 for configuration errors, 1 otherwise); tracebacks are reserved for bugs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import anyio
import typer
from returns.result import Failure

from .._docs import verified_label
from ..catalog import all_backends
from ..core import ErrorKind, Message, Param, ProviderError, json_schema_problem

app = typer.Typer(
    name="agentport",
    help="One stable way to call any LLM backend.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_LETTER = {"native": "N", "translated": "T", "ignored": "I"}


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line on stderr and exit."""
    typer.echo(f"agentport: {message}", err=True)
    raise typer.Exit(code)


def fail_error(error: ProviderError) -> NoReturn:
    fail(str(error), 2 if error.kind is ErrorKind.config else 1)


def backend_rows(probe: bool) -> list[dict[str, Any]]:
    """One dict per catalog entry; `probe` adds installed/version (runs `--version`)."""
    from ..factory import installed_version, is_installed

    rows = []
    for cap in all_backends():
        installed = is_installed(cap) if probe else None
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
            }
        )
    return rows


@app.command()
def backends(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List backends: aliases, kind, installed, version, verified version, N/T/I grid.

    N native, T translated, I ignored (see docs/backends/index.md).
    """
    rows = backend_rows(probe=True)
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="agentport backends (N native · T translated · I ignored)")
    for col in ("name", "aliases", "kind", "installed", "version", "verified"):
        table.add_column(col)
    for p in Param:
        table.add_column(p.value.replace("_", "\n"), justify="center")
    for cap, row in zip(all_backends(), rows, strict=True):
        table.add_row(
            row["name"],
            ", ".join(row["aliases"]),
            row["kind"],
            "yes" if row["installed"] else "no",
            row["version"] or "-",
            verified_label(cap),
            *(_LETTER[row["params"][p.value]] for p in Param),
        )
    Console(width=200).print(table)


def _load_schema(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        fail(f"{path}: cannot read schema: {exc.strerror}", 2)
    except json.JSONDecodeError as exc:
        fail(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}", 2)
    if not isinstance(value, dict):
        fail(f"{path}: a JSON schema must be an object", 2)
    problem = json_schema_problem(value)
    if problem:
        fail(f"{path}: not a valid JSON schema: {problem}", 2)
    return value


@app.command()
def complete(
    prompt: Annotated[str, typer.Argument(help="The prompt; '-' reads standard input.")],
    backend: Annotated[
        str | None, typer.Option("--backend", "-b", help="Backend or alias.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m")] = None,
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
    from ..config import load_settings
    from ..factory import create_llm_adapter

    text = sys.stdin.read() if prompt == "-" else prompt
    if not text.strip():
        fail("the prompt is empty", 2)
    output_schema = _load_schema(schema) if schema else None
    try:
        settings = load_settings(backend=backend, model=model).llm
        adapter = create_llm_adapter(backend, model=model)
    except ProviderError as exc:
        fail_error(exc)
    messages = ([Message.system(system)] if system else []) + [Message.user(text)]
    if output_schema is not None and choice:
        fail("use --schema or --choice, not both", 2)
    config = settings.completion_config(
        output_schema=output_schema, choices=tuple(choice) if choice else None
    )
    result = anyio.run(adapter.complete, messages, config)
    if isinstance(result, Failure):
        fail_error(result.failure())
    response = result.unwrap()
    for warning in response.warnings:
        typer.echo(f"agentport: warning: {warning}", err=True)
    if as_json:
        typer.echo(response.model_dump_json(indent=2))
    else:
        typer.echo(response.content)


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except ProviderError as exc:  # setup errors raised outside a command's own handling
        typer.echo(f"agentport: {exc}", err=True)
        raise SystemExit(2 if exc.kind is ErrorKind.config else 1) from None
