"""A model worker (`agentport worker --backend local --no-workflows --root DIR`) serves its
`--root`s: a small-model question runs whole on it and reads its corpus there. Before, the
roots of a worker without the workflows were dropped, so every small-model corpus was
refused on it whatever `--root` said."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from agentport.core import ProviderError
from agentport.temporal._worker import plan_worker, served_roots


@pytest.mark.parametrize("workflows", [True, False])
def test_the_roots_a_worker_is_given_are_the_roots_it_serves(
    tmp_path: Path, workflows: bool
) -> None:
    corpora = tmp_path / "corpora"
    corpora.mkdir()
    plan = plan_worker(["openai_compat"], workflows=workflows)
    assert served_roots(plan, [corpora]) == [corpora.resolve()]


def test_a_model_worker_without_roots_serves_none_and_a_workflow_worker_needs_one() -> None:
    assert served_roots(plan_worker(["openai_compat"], workflows=False), []) == []
    with pytest.raises(ProviderError, match="--root"):
        served_roots(plan_worker(["openai_compat"], workflows=True), [])
