"""`agentport mcp`: serve agentport's tools over the Model Context Protocol.

stdio by default (what agent CLIs launch); `--http HOST:PORT` serves streamable HTTP at
`http://HOST:PORT/mcp`, loopback unless a token is configured. Needs `agentport[mcp]`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail
from ._out import echo

__all__ = ["mcp", "parse_http"]


def parse_http(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` (127.0.0.1) or `PORT`; `[::1]:PORT` for IPv6. Exits 2 when bad."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"--http {value}: expected HOST:PORT with a port in 1-65535", 2)
    return host, int(port)


@app.command()
def mcp(
    root: Annotated[
        list[Path] | None,
        typer.Option(
            "--root",
            help="A folder the tools may read and write (corpora, graphs); repeat it. "
            "Every other path is refused.",
        ),
    ] = None,
    http: Annotated[
        str | None,
        typer.Option("--http", help="Serve streamable HTTP on HOST:PORT (default host 127.0.0.1)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="AGENTPORT_MCP_TOKEN",
            help="Bearer token HTTP clients must send; required for a non-loopback bind. "
            "Prefer the variable or --token-file: an argument is visible in the process list.",
            show_envvar=True,
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="Read the bearer token from this file (first line)."),
    ] = None,
) -> None:
    """Serve agentport as an MCP server: complete, backends, deep research jobs, DeepRefine."""
    try:
        from ..mcp import build_server, check_bind, serve_http, serve_stdio
    except ImportError as exc:
        fail(f"agentport mcp needs the MCP SDK: pip install 'agentport[mcp]' ({exc})", 2)
    roots = root or []
    for folder in roots:
        if not folder.is_dir():
            fail(f"--root {folder}: not a folder", 2)
    server = build_server([os.fspath(r) for r in roots])
    if http is None:
        serve_stdio(server)
        return
    host, port = parse_http(http)
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").splitlines()[0].strip()
        except (OSError, UnicodeDecodeError, IndexError) as exc:
            fail(f"--token-file {token_file}: cannot read a token ({exc})", 2)
        if not token:
            fail(f"--token-file {token_file}: the first line is empty", 2)
    elif token and os.environ.get("AGENTPORT_MCP_TOKEN") != token:
        echo(
            "agentport: warning: --token is visible to every local user in the process list; "
            "use --token-file or AGENTPORT_MCP_TOKEN",
            err=True,
        )
    if (problem := check_bind(host, token)) is not None:
        fail(problem, 2)
    serve_http(server, host, port, token)
