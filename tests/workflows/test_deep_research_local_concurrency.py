"""An embedded model has one worker: research on it defaults to one call in flight (more
only queue on the worker while their deadlines run); every other backend keeps the seed's
10. A table over every backend of the catalog."""

from __future__ import annotations

import pytest

from agentport.catalog import all_backends
from agentport.core import BackendKind
from agentport.workflows.deep_research import CONCURRENCY, research_config_for

BACKENDS = sorted(all_backends(), key=lambda c: c.name)


@pytest.mark.parametrize("capability", BACKENDS, ids=[c.name for c in BACKENDS])
def test_default_research_concurrency_fits_the_backend(capability: object) -> None:
    name = capability.name  # type: ignore[attr-defined]
    local = capability.kind is BackendKind.local  # type: ignore[attr-defined]
    for small in (None, True, False):
        config = research_config_for(name, small_model=small)
        want = 1 if local else CONCURRENCY
        assert want == config.CONCURRENCY, (name, small)
    assert research_config_for(name, CONCURRENCY=4).CONCURRENCY == 4, "a flag still wins"


def test_the_catalog_has_a_local_backend() -> None:
    assert any(c.kind is BackendKind.local for c in BACKENDS)
