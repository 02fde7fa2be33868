"""The options of `agentport research` (typer annotations), one name each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._budget import BUDGET_HELP

_Question = Annotated[str | None, typer.Argument(help="The research question (not with --batch).")]
_Backend = Annotated[
    str | None, typer.Option("--backend", "-b", help="Backend or alias (default: config).")
]
_Model = Annotated[str | None, typer.Option("--model", "-m", help="Model id.")]
_Corpus = Annotated[
    Path | None,
    typer.Option("--corpus", help="Research this folder (md, txt, rst, html) instead of the web."),
]
_AsJson = Annotated[bool, typer.Option("--json", help="Emit the report as JSON.")]
_Out = Annotated[Path | None, typer.Option("--out", "-o", help="Write the report to this file.")]
_EarlyQuorum = Annotated[
    bool,
    typer.Option("--early-quorum", help="Stop voting once a claim's outcome is settled."),
]
_Concurrency = Annotated[
    int | None,
    typer.Option(
        "--concurrency", min=1, help="Agent calls in flight (10; 1 on the embedded model)."
    ),
]
_Rounds = Annotated[
    int | None,
    typer.Option(
        "--rounds",
        min=1,
        max=3,
        help="Search rounds: 1 = the seed's single round; 2 adds a follow-up round for "
        "what the findings name but do not answer (default: 2 in small-model mode, else 1).",
    ),
]
_Plan = Annotated[bool, typer.Option("--plan", help="Print the call budget and limits, then exit.")]
_Resume = Annotated[
    bool, typer.Option("--resume", help="Reuse the finished calls of an interrupted run.")
]
_Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
_SmallModel = Annotated[
    bool | None,
    typer.Option(
        "--small-model/--full-model",
        help="Small-model mode: the model only chooses (sentences, votes); "
        "default: on for the local backend, off otherwise.",
        show_default=False,
    ),
]
_Debug = Annotated[
    bool, typer.Option("--debug", help="Show every model call's raw answer on stderr.")
]
_BudgetSpec = Annotated[str | None, typer.Option("--budget", help=BUDGET_HELP)]
_Batch = Annotated[
    Path | None,
    typer.Option("--batch", help="Research every line of this file; --out is a folder."),
]
_Jobs = Annotated[int, typer.Option("--jobs", min=1, help="Batch: questions in flight (4).")]
_Temporal = Annotated[
    str | None,
    typer.Option("--temporal", help="Batch: run on this Temporal cluster (HOST:PORT)."),
]
_Namespace = Annotated[str, typer.Option("--namespace", help="Batch: Temporal namespace.")]
_BatchId = Annotated[str | None, typer.Option("--batch-id", help="Batch: Temporal workflow id.")]
_Detach = Annotated[bool, typer.Option("--detach", help="Batch: submit to Temporal and exit.")]
