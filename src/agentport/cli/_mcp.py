"""`agentport mcp`: serve agentport's tools over the Model Context Protocol.

stdio by default (what agent CLIs launch); `--http HOST:PORT` serves streamable HTTP at
`http://HOST:PORT/mcp`, loopback unless a token is configured. Needs `agentport[mcp]`.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Annotated

import typer

from ._app import app, fail

__all__ = ["mcp", "parse_http", "read_token"]

TOKEN_ENV = "AGENTPORT_MCP_TOKEN"
_ORIGIN = re.compile(r"https?://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:(\d{1,5}|\*))?/?")


def parse_http(value: str) -> tuple[str, int]:
    """`HOST:PORT`, `:PORT` (127.0.0.1) or `PORT`; `[::1]:PORT` for IPv6. Exits 2 when bad."""
    host, sep, port = value.rpartition(":")
    if not sep:
        host, port = "", value
    host = host or "127.0.0.1"
    if not port.isdigit() or not 0 < int(port) < 65536:
        fail(f"--http {value}: expected HOST:PORT with a port in 1-65535", 2)
    return host, int(port)


def read_token(token_file: Path | None) -> str | None:
    """The bearer token: the first line of *token_file* (which other users must not be able
    to read), else `AGENTPORT_MCP_TOKEN`, else None. Exits 2 with one line when the file
    cannot serve."""
    if token_file is None:
        return os.environ.get(TOKEN_ENV, "").strip() or None
    try:
        mode = token_file.stat().st_mode
        token = token_file.read_text(encoding="utf-8").splitlines()[0].strip()
    except (OSError, UnicodeDecodeError, IndexError) as exc:
        fail(f"--token-file {token_file}: cannot read a token ({exc})", 2)
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        fail(
            f"--token-file {token_file}: other users can read it (mode "
            f"{stat.S_IMODE(mode):04o}); run chmod 600 {token_file}",
            2,
        )
    if not token:
        fail(f"--token-file {token_file}: the first line is empty", 2)
    return token


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
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            help="Read the bearer token HTTP clients must send from this file (first line; "
            f"mode 600). Or set {TOKEN_ENV}. Required for a non-loopback bind.",
        ),
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-origin",
            help="An Origin browsers may call from (scheme://host[:port], port * for any); "
            "repeat it. Every other Origin is refused (403); a loopback bind also allows "
            "this machine's loopback pages.",
        ),
    ] = None,
    max_message_bytes: Annotated[
        int,
        typer.Option(
            "--max-message-bytes",
            min=1024,
            help="Largest JSON-RPC message accepted: a stdio line or an HTTP body (default 1 MiB).",
        ),
    ] = 1 << 20,
    token: Annotated[str | None, typer.Option("--token", hidden=True)] = None,
) -> None:
    """Serve agentport as an MCP server: complete, backends, deep research jobs, DeepRefine."""
    if token is not None:  # an argument is in the process list: every local user reads it
        fail(
            f"--token VALUE is refused: every local user can read it in the process list; "
            f"set {TOKEN_ENV} or use --token-file FILE",
            2,
        )
    try:
        from ..mcp import build_server, check_bind, serve_http, serve_stdio
    except ImportError as exc:
        fail(f"agentport mcp needs the MCP SDK: pip install 'agentport[mcp]' ({exc})", 2)
    roots = root or []
    for folder in roots:
        if not folder.is_dir():
            fail(f"--root {folder}: not a folder", 2)
    origins = allow_origin or []
    for origin in origins:
        if not _ORIGIN.fullmatch(origin):
            fail(f"--allow-origin {origin}: expected scheme://host[:port] (port * for any)", 2)
    if http is None:
        serve_stdio(build_server([os.fspath(r) for r in roots]), max_message_bytes)
        return
    host, port = parse_http(http)
    secret = read_token(token_file)
    if (problem := check_bind(host, secret)) is not None:
        fail(problem, 2)
    server = build_server([os.fspath(r) for r in roots])
    serve_http(
        server,
        host,
        port,
        secret,
        allowed_origins=[o.rstrip("/") for o in origins],
        max_message_bytes=max_message_bytes,
    )
