"""agentport.temporal: agentport calls and workflows as durable Temporal executions.

Internal to agentport, with no stability promise (the public modules: docs/architecture.md,
"Public API"): `__all__` is what the other layers of agentport use.

The only package of agentport that imports `temporalio` (the `agentport[temporal]` extra).

- Every workflow and activity input is a closed type (`_inputs`: unknown keys refused,
  fields that only name or narrow), parsed on the receiving side; anything else is a
  non-retryable `ApplicationError` of type `REFUSED_INPUT`. Files go through the path
  authority under the worker's `--root`s (`agentport.transport._beneath`).
- `complete`: the activity that runs one `complete()` call on a worker; `CompleteInput` /
  `CompleteOutput` carry the call and its `Result` as data; `retry_decision` is the retry
  rule per `ErrorKind`; `execute_complete` runs it from workflow code.
- `queue_for` / `workflow_queue` / `concurrency_for`: a task queue per backend and how many
  calls of it one worker runs at once (see `_queues` for why per worker).
- `SemaphoreWorkflow` / `cluster_permit` / `cluster_cap_for`: a cluster-wide cap per backend
  (`[temporal] cluster_concurrency`), a semaphore workflow per queue (see `_semaphore`).
- `web_search` / `web_fetch` (`WEB_ACTIVITIES`, on `web_queue`): agentport's own web tools
  as activities for a backend without web tools; `activity_web` injects them into a
  research workflow, `web_input` is the client's `[web]` table as workflow input.
- `run_worker` / `connect`: a worker process (`agentport worker --temporal HOST:PORT`).
- `ResearchWorkflow` / `RefineWorkflow` / `BatchWorkflow` (`WORKFLOWS`, `workflow_runner`):
  deep research and DeepRefine as durable workflows, one question or a batch;
  `start_batch` / `status` / `follow` submit and follow a batch (`BatchJob`).

Source: docs/deployment.md.
"""

from __future__ import annotations

try:
    import temporalio
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "agentport.temporal needs the Temporal SDK: pip install 'agentport[temporal]'"
    ) from exc

from ._activities import (
    COMPLETE_ACTIVITY,
    DEFAULT_HEARTBEAT_TIMEOUT,
    DEFAULT_RETRY_POLICY,
    complete,
    execute_complete,
)
from ._batch import BatchJob, BatchResult, ItemResult, RefineJob, ResearchJob
from ._budget import budget_data
from ._client import BatchStatus, follow, start_batch, status
from ._data import (
    CallConfig,
    CallSettings,
    CompleteInput,
    CompleteOutput,
    config_from_dict,
    config_to_dict,
    error_from_dict,
    error_to_dict,
    messages_to_dicts,
    retry_decision,
)
from ._inputs import REFUSED_INPUT, InputRefused, one_line
from ._queues import DEFAULT_CONCURRENCY, DEFAULT_PREFIX, concurrency_for, queue_for, workflow_queue
from ._semaphore import (
    SEMAPHORE_ACTIVITIES,
    SemaphoreWorkflow,
    cluster_cap_for,
    cluster_permit,
    semaphore_id,
)
from ._web import WEB_ACTIVITIES, activity_web, web_fetch, web_input, web_queue, web_search
from ._worker import WorkerPlan, connect, plan_worker, run_worker
from ._workflows import (
    WORKFLOWS,
    ActivityAdapter,
    BatchWorkflow,
    RefineWorkflow,
    ResearchWorkflow,
    workflow_runner,
)

__all__ = [
    "BatchJob",
    "WorkerPlan",
    "budget_data",
    "one_line",
    "run_worker",
    "web_input",
]
