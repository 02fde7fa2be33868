"""agentport.workflows.batch: research and DeepRefine over a file of questions.

- `read_questions(path)`: one question per line (blank lines skipped, duplicates reported
  and skipped, a non-UTF-8 byte is a one-line `BatchInputError` naming the line).
- `research_batch` / `refine_batch`: the local batch (bounded concurrency, one report per
  question in the output folder, `batch.json` state written atomically, `summary.md`,
  resumable: a question whose report exists is not run again).
- `research_outcome`, `save_and_review`, `apply_saved`, `loop_to_data` / `loop_from_data`:
  the steps the Temporal workflows (`agentport.temporal`) share with the local batch, so
  both paths write the same reports.
"""

from ._commands import refine_batch, research_batch
from ._jobs import (
    apply_saved,
    loop_from_data,
    loop_to_data,
    refine_one,
    research_one,
    research_outcome,
    save_and_review,
)
from ._local import Outcome, Progress, ProgressCallback, Summary, run_batch, summary_markdown
from ._questions import BatchInputError, Question, QuestionsFile, question_id, read_questions
from ._state import STATE_FILE, BatchState, Item

__all__ = [
    "STATE_FILE",
    "BatchInputError",
    "BatchState",
    "Item",
    "Outcome",
    "Progress",
    "ProgressCallback",
    "Question",
    "QuestionsFile",
    "Summary",
    "apply_saved",
    "loop_from_data",
    "loop_to_data",
    "question_id",
    "read_questions",
    "refine_batch",
    "refine_one",
    "research_batch",
    "research_one",
    "research_outcome",
    "run_batch",
    "save_and_review",
    "summary_markdown",
]
