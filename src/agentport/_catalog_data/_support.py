"""Shorthands shared by the catalog's data modules."""

from __future__ import annotations

from ..core import Param, ParamSupport

__all__ = ["FILES_INLINED", "IMAGES_UNVERIFIED", "OWN_WEB", "I", "N", "T", "params"]

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
