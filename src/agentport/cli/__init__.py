"""The `agentport` console script."""

from ._app import app, main

__all__ = ["app", "main"]
