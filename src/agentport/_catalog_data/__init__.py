"""The catalog's per-backend declarations (data only), in catalog order.

Private: `agentport.catalog` is the one public place that reads and indexes these entries.
Importing this package imports no backend.
"""

from __future__ import annotations

from ..core import BackendCapability
from ._completion import ENTRIES as _COMPLETION
from ._more_agents import ENTRIES as _MORE_AGENTS
from ._vendor_clis import ENTRIES as _VENDOR_CLIS

__all__ = ["ENTRIES"]

ENTRIES: tuple[BackendCapability, ...] = _COMPLETION + _VENDOR_CLIS + _MORE_AGENTS
