"""`McpServer`: an MCP server the caller hands one call (`CompletionConfig.mcp_servers`).

Pure data: which process to start (stdio: command, args, env) or which endpoint to reach
(streamable HTTP: url, headers). The values of `env` and `headers` are `SecretStr`: they
print as `**********` in a repr, a `model_dump()` or a receipt, and they are registered for
redaction (`register_secret`) so an error echoing a CLI's argv or config never shows them.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from ._redact import register_secret

__all__ = ["FUNCTIONS_SERVER", "McpServer", "ToolFunction", "check_function"]

#: The name of the MCP server that serves a call's `functions` (claude names its tools
#: `mcp__functions__<fn>`); a call that passes functions cannot use it for another server.
FUNCTIONS_SERVER = "functions"

#: A Python callable the caller offers the agent as a tool (`CompletionConfig.functions`).
ToolFunction = Callable[..., Any]

# Server names become parts of tool names (`mcp__<server>__<tool>` in claude, a TOML key in
# codex's `-c mcp_servers.<name>`, a JSON key elsewhere): one safe spelling everywhere.
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
# a function's name is its tool's name (a Python identifier, as MCP tool names allow)
_FUNCTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class McpServer(BaseModel):
    """One MCP server for one call: `McpServer(name="files", command="npx", args=(...))`
    (stdio) or `McpServer(name="search", url="https://...", headers={"Authorization": ...})`
    (streamable HTTP).

    Attributes:
        name: how the agent names the server: a letter, then letters, digits, `_` or `-`
            (at most 40 characters); unique within a call.
        command: the executable of a stdio server (set command or url, not both).
        args: its arguments.
        env: variables for the stdio server's process (values kept secret).
        url: the endpoint of a streamable HTTP server (`http://` or `https://`).
        headers: HTTP headers sent to it, e.g. `Authorization` (values kept secret).
        timeout_s: how long the CLI may wait for the server to start / answer, where the CLI
            has the setting (gemini `timeout`, codex `startup_timeout_sec`, qwen `timeout`).

    Raises `ValueError` (pydantic `ValidationError`) naming the field for a bad name, neither
    or both of command and url, or a url that is not http(s).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, SecretStr] = Field(default_factory=dict)
    url: str | None = None
    headers: Mapping[str, SecretStr] = Field(default_factory=dict)
    timeout_s: float = Field(default=60.0, gt=0)

    @field_validator("name")
    @classmethod
    def _safe_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(
                f"MCP server name {v!r}: a letter, then letters, digits, '_' or '-' (<= 40)"
            )
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> McpServer:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: set command (stdio) or url (HTTP)")
        if self.url is not None and not re.match(r"^https?://", self.url):
            raise ValueError(f"MCP server {self.name!r}: url must be http:// or https://")
        if self.url is None and self.headers:
            raise ValueError(f"MCP server {self.name!r}: headers need a url (HTTP server)")
        if self.command is None and (self.args or self.env):
            raise ValueError(f"MCP server {self.name!r}: args and env need a command (stdio)")
        register_secret(*self.plain_env().values(), *self.plain_headers().values())
        return self

    @property
    def is_http(self) -> bool:
        """True for a streamable HTTP server, False for a stdio one."""
        return self.url is not None

    def plain_env(self) -> dict[str, str]:
        """`env` with its values revealed (only for the file or argv the CLI reads)."""
        return {k: v.get_secret_value() for k, v in self.env.items()}

    def plain_headers(self) -> dict[str, str]:
        """`headers` with their values revealed (only for what the CLI reads)."""
        return {k: v.get_secret_value() for k, v in self.headers.items()}


_SPREAD = (
    inspect.Parameter.VAR_POSITIONAL,
    inspect.Parameter.VAR_KEYWORD,
    inspect.Parameter.POSITIONAL_ONLY,
)


def check_function(fn: Any) -> str:
    """The tool name of *fn* (its `__name__`), after checking that it can be a tool: a
    callable whose parameters all have type annotations (they become the tool's JSON
    schema), none of them `*args`, `**kwargs` or positional-only, and not a generator.
    Raises `ValueError` naming the function and what is missing."""
    if not callable(fn):
        raise ValueError(f"functions: {fn!r} is not callable")
    name = getattr(fn, "__name__", "")
    if not _FUNCTION.match(name):
        raise ValueError(f"functions: {fn!r} needs a plain name (a def, not a lambda)")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"functions: {name} has no signature: {exc}") from None
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        # the tool would answer with the generator object's repr, never running the body
        raise ValueError(f"functions: {name} is a generator; a tool returns one result")
    # the tool is called with the JSON object's keys as keyword arguments: nothing can fill
    # *args, **kwargs or a positional-only parameter
    unnamed = [str(p).split(":")[0] for p in signature.parameters.values() if p.kind in _SPREAD]
    if unnamed:
        raise ValueError(
            f"functions: {name} takes {', '.join(unnamed)} (*args, **kwargs or "
            "positional-only): a tool's parameters are passed by name"
        )
    bare = [p.name for p in signature.parameters.values() if p.annotation is p.empty]
    if bare:
        raise ValueError(f"functions: {name} needs type annotations on: {', '.join(bare)}")
    return name
