"""A batch item that failed says what failed: the innermost cause of Temporal's failure chain
(an activity's own error under "Activity task failed", a question's under "Child Workflow
execution failed"), never only the wrapper's words."""

from __future__ import annotations

import pytest

pytest.importorskip("temporalio")

from hypothesis import given
from hypothesis import strategies as st
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

from agentport.temporal._data import failure_line


def _activity(cause: BaseException) -> ActivityError:
    err = ActivityError(
        "Activity task failed", scheduled_event_id=1, started_event_id=2, identity="w",
        activity_type="agentport.small_research", activity_id="1", retry_state=None,
    )  # fmt: skip
    err.__cause__ = cause
    return err


def _child(cause: BaseException) -> ChildWorkflowError:
    err = ChildWorkflowError(
        "Child Workflow execution failed", namespace="default", workflow_id="q-1", run_id="r",
        workflow_type="agentport.research", initiated_event_id=1, started_event_id=2,
        retry_state=None,
    )  # fmt: skip
    err.__cause__ = cause
    return err


@given(
    st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1).filter(
        str.strip
    ),
    st.lists(st.sampled_from(["activity", "child"]), max_size=4),
)
def test_the_innermost_cause_is_named_through_any_wrapping(message: str, wraps: list[str]) -> None:
    err: BaseException = ApplicationError(message, type="FileNotFoundError")
    for kind in wraps:
        err = _activity(err) if kind == "activity" else _child(err)
    line = failure_line(err)
    assert message.strip().splitlines()[0] in line
    assert "Activity task failed" not in line or "Activity task failed" in message
    assert "\n" not in line


def test_the_error_type_is_named_when_the_text_does_not_say_it() -> None:
    inner = ApplicationError("[Errno 2] /srv/docs: gone", type="FileNotFoundError")
    assert failure_line(_child(_activity(inner))) == "FileNotFoundError: [Errno 2] /srv/docs: gone"
    ours = ApplicationError("corpus: outside the roots", type="agentport.refused_input")
    assert failure_line(_activity(ours)) == "corpus: outside the roots"
