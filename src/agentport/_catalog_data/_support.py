"""Shorthands shared by the catalog's data modules."""

from __future__ import annotations

from ..core import Param, ParamSupport

__all__ = ["OWN_WEB", "I", "N", "T", "params"]

N, T, I = ParamSupport.NATIVE, ParamSupport.TRANSLATED, ParamSupport.IGNORED  # noqa: E741
# the end of an IGNORED web_search note of an agent CLI
OWN_WEB = "; deep research uses agentport's own search and fetch instead"


def params(**support: ParamSupport) -> dict[Param, ParamSupport]:
    """A `Param` -> `ParamSupport` map from keyword arguments named after the params."""
    return {Param(name): value for name, value in support.items()}
