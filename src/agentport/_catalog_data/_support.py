"""Shorthands shared by the catalog's data modules."""

from __future__ import annotations

from ..core import Param, ParamSupport

__all__ = [
    "FILES_INLINED",
    "FUNCTIONS_NO_MCP",
    "FUNCTIONS_SERVED",
    "IMAGES_UNVERIFIED",
    "MCP_COMPLETION",
    "MCP_NOT_WIRED",
    "OWN_WEB",
    "I",
    "N",
    "T",
    "params",
]

N, T, I = ParamSupport.NATIVE, ParamSupport.TRANSLATED, ParamSupport.IGNORED  # noqa: E741
# the end of an IGNORED web_search note of an agent CLI
OWN_WEB = "; deep research uses agentport's own search and fetch instead"
# the files note of every backend (`core.inline_files`: files are TRANSLATED everywhere)
FILES_INLINED = "text files are inlined into the message in a fence named after the file"
# the images note of a CLI whose image input was never checked against its binary
IMAGES_UNVERIFIED = "images are not passed to this CLI (not verified against it)"


def params(**support: ParamSupport) -> dict[Param, ParamSupport]:
    """A `Param` -> `ParamSupport` map from keyword arguments named after the params."""
    return {Param(name): value for name, value in support.items()}


# the notes of the two caller-tool params (`mcp_servers`, `functions`), shared by many entries
MCP_COMPLETION = "completion only: no agent loop calls tools"
MCP_NOT_WIRED = "not wired: this CLI's MCP configuration was not checked against its binary"
FUNCTIONS_SERVED = (
    "served on 127.0.0.1 as the MCP server 'functions' (streamable HTTP, a per-call bearer "
    "token), then passed like mcp_servers"
)
FUNCTIONS_NO_MCP = "served as an MCP server, which this backend does not take"
