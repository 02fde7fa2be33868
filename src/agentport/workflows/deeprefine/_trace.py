"""The loop trace (`loop_trace_<query_id>.json`) and `loop validate`.

The file format is the reference's (reference section 2.5) so agent skills written for
deeprefine-cli keep working. Validation follows its rules (section 2.6) with the holes closed
(F-11, F-13): the constants are the workflow's, never the trace's own; `query_id` must be the
query's id; steps are numbered and `num_hops`/`base_top_k` checked; every triple is checked;
a loop that stopped on `No` before `MAX_HOPS` is rejected; the refinement file must exist, sit
in `.deeprefine/` and belong to this trace. Every problem is one line naming the field.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ...core import bounded
from ._constants import (
    BASE_TOP_K,
    CONSTANTS,
    INCREMENT_HOP,
    MAX_HOPS,
    MODE,
    SCHEMA_VERSION,
)
from ._files import InputError, Layout, read_bytes
from ._retrieval import step_cap

__all__ = [
    "JUDGE_TAG",
    "check_query_id",
    "load_trace",
    "query_id",
    "refinement_path",
    "trace_template",
    "validate_trace",
]

JUDGE_TAG = re.compile(r"<judge>\s*(yes|no)\s*</judge>", re.IGNORECASE)
_ABDUCTION = re.compile(r"<abduction>(.*?)</abduction>", re.IGNORECASE | re.DOTALL)
_REFINEMENT = re.compile(
    r"<refinement>.*?</refinement>|<refinement\s*/>", re.IGNORECASE | re.DOTALL
)
_QID = re.compile(r"[0-9a-f]{16}")
_STEP_KEYS = (
    "step",
    "num_hops",
    "base_top_k",
    "query",
    "retrieved_subgraph",
    "answerable",
    "judgement_raw",
    "retrieval",
)
_HOP1_METHODS = ("graphify_query", "graphify_query+graph_read")
_HOPN_METHODS = ("k_hop_expansion", "graphify_query", "graphify_query+k_hop_expansion")


def query_id(question: str) -> str:
    """First 16 hex digits of sha256 of the stripped question, UTF-8 (reference 2.3)."""
    return hashlib.sha256(question.strip().encode("utf-8")).hexdigest()[:16]


def check_query_id(value: Any, where: str | Path, field: str = "query_id") -> str:
    """A query id safe to put in a file name: exactly 16 lower-case hex digits."""
    if not isinstance(value, str) or not _QID.fullmatch(value):
        raise InputError(where, field, f"must be 16 lower-case hex digits, got {value!r}")
    return value


def trace_template(question: str) -> dict[str, Any]:
    """`loop init`'s template (reference 2.5)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "mode": MODE,
        "query": question.strip(),
        "query_id": query_id(question),
        "constants": json.loads(json.dumps(CONSTANTS)),
        "interaction_history": [],
        "error_abduction_reason": None,
        "error_abduction_raw": None,
        "refinement_action_file": None,
        "early_exit": None,
    }


TRACE_MAX_DEPTH = 64  # a trace is a few levels deep; anything deeper is hostile or broken


def load_trace(path: Path) -> dict[str, Any]:
    """Read a trace; `InputError` when it is not a JSON object."""
    data = read_bytes(path, limit=64 * 1024 * 1024)
    try:
        trace = bounded.loads(data, max_depth=TRACE_MAX_DEPTH)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno}: {exc.msg})" if isinstance(exc, json.JSONDecodeError) else ""
        raise InputError(path, "", f"not valid JSON{where}") from None
    if not isinstance(trace, dict):
        raise InputError(path, "", f"a trace must be a JSON object, got {type(trace).__name__}")
    return trace


def refinement_path(trace: dict[str, Any], layout: Layout, where: Path) -> Path | None:
    """The trace's `refinement_action_file` resolved against the project root; it must stay
    inside `.deeprefine/`. None when unset."""
    value = trace.get("refinement_action_file")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(where, "refinement_action_file", "must be a path string or null")
    path = Path(value)
    path = (path if path.is_absolute() else layout.root / path).resolve()
    if not path.is_relative_to(layout.state.resolve()):
        raise InputError(where, "refinement_action_file", f"{value!r} is outside {layout.state}")
    return path


def _judge(raw: Any) -> bool | None:
    """The strict tag's answer; None without one, or with both a Yes and a No tag (an
    echoed instruction is not a judgement)."""
    if not isinstance(raw, str):
        return None
    answers = {m.lower() for m in JUDGE_TAG.findall(raw)}
    return answers.pop() == "yes" if len(answers) == 1 else None


def _check_retrieval(where: str, k: int, retrieval: Any, errors: list[str]) -> None:
    if not isinstance(retrieval, dict):
        errors.append(f"{where}.retrieval: must be an object with method and evidence")
    else:
        for key in ("method", "evidence"):
            value = retrieval.get(key)
            if not isinstance(value, str) or not value.strip():
                errors.append(f"{where}.retrieval.{key}: required (graphify command or graph read)")
        method = retrieval.get("method")
        allowed = _HOP1_METHODS if k == 1 else _HOPN_METHODS
        if isinstance(method, str) and method.strip() and method not in allowed:
            errors.append(f"{where}.retrieval.method: {method!r} not one of {list(allowed)}")


def _check_triples(where: str, k: int, triples: Any, errors: list[str]) -> None:
    if not isinstance(triples, list) or not triples:
        errors.append(f"{where}.retrieved_subgraph: must be a non-empty list")
    else:
        cap = step_cap(k)
        if len(triples) > cap:
            errors.append(
                f"{where}.retrieved_subgraph: {len(triples)} triples exceed the cap {cap} "
                "(MAX_TRIPLE_NUM_BY_STEP)"
            )
        for j, triple in enumerate(triples):
            if not isinstance(triple, dict) or not all(
                isinstance(triple.get(f), str) and triple[f].strip()
                for f in ("subject", "relation", "object")
            ):
                errors.append(
                    f"{where}.retrieved_subgraph[{j}]: needs non-empty subject/relation/object"
                )
                break


def _check_step(k: int, step: Any, last: bool, query: str, errors: list[str]) -> None:
    where = f"interaction_history[{k - 1}]"
    if not isinstance(step, dict):
        errors.append(f"{where}: must be an object")
        return
    missing = [key for key in _STEP_KEYS if key not in step]
    for key in missing:
        errors.append(f"{where}.{key}: missing")
    if missing:
        return
    if step["step"] != k or isinstance(step["step"], bool):
        errors.append(f"{where}.step: expected {k}, got {step['step']!r}")
    want_hops = (k - 1) * INCREMENT_HOP
    if step["num_hops"] != want_hops or isinstance(step["num_hops"], bool):
        errors.append(f"{where}.num_hops: expected {want_hops} ((step-1)*INCREMENT_HOP)")
    if step["base_top_k"] != BASE_TOP_K or isinstance(step["base_top_k"], bool):
        errors.append(f"{where}.base_top_k: expected {BASE_TOP_K}")
    if not isinstance(step["query"], str) or step["query"].strip() != query:
        errors.append(f"{where}.query: must be the trace's query")
    _check_retrieval(where, k, step["retrieval"], errors)
    _check_triples(where, k, step["retrieved_subgraph"], errors)
    judged = _judge(step["judgement_raw"])
    if judged is None:
        errors.append(
            f"{where}.judgement_raw: must contain exactly one of <judge>Yes</judge> and "
            "<judge>No</judge>"
        )
    if not isinstance(step["answerable"], bool):
        errors.append(f"{where}.answerable: must be true or false")
    elif judged is not None and step["answerable"] != judged:
        errors.append(f"{where}.answerable: {step['answerable']} disagrees with the <judge> tag")
    elif step["answerable"] and not last:
        errors.append(f"{where}.answerable: true but the loop continued (stop after Yes)")


def validate_trace(
    trace: dict[str, Any],
    where: Path,
    layout: Layout,
    refinement_file: Path | None = None,
) -> list[str]:
    """All problems of a trace, one line each (`field: message`); empty when valid.

    `refinement_file` is the `--refinement-file` given on the command line; when the trace
    names a file too, both must be the same file (binding the actions to this trace).
    """
    errors: list[str] = []
    query, qid = _check_header(trace, where, errors)
    _check_constants(trace.get("constants"), errors)
    history = trace.get("interaction_history")
    if not isinstance(history, list) or not history:
        errors.append("interaction_history: empty — run hops 1..N before apply/finish")
        return errors
    _check_history(history, query, errors)
    early = len(history) <= 1
    if trace.get("early_exit") is not None and trace.get("early_exit") is not early:
        errors.append(f"early_exit: {trace.get('early_exit')!r} but the rule gives {early}")
    named: Path | None = None
    try:
        named = refinement_path(trace, layout, where)
    except InputError as exc:
        errors.append(str(exc).split(": ", 1)[-1])
    if early:
        if trace.get("error_abduction_raw") or trace.get("error_abduction_reason"):
            errors.append("error_abduction_raw: early exit must not run error abduction")
        if named is not None or refinement_file is not None:
            errors.append("refinement_action_file: early exit must not apply refinements")
        return errors
    raw = trace.get("error_abduction_raw")
    if not isinstance(raw, str) or not _ABDUCTION.search(raw):
        errors.append("error_abduction_raw: missing <abduction>...</abduction>")
    reason = trace.get("error_abduction_reason")
    if not isinstance(reason, str) or not reason.strip():
        errors.append("error_abduction_reason: missing (text inside <abduction>)")
    _check_refinement(qid, named, refinement_file, errors)
    return errors


def _check_header(trace: dict[str, Any], where: Path, errors: list[str]) -> tuple[str, Any]:
    """The schema version, mode, query and query id; (the query stripped, the id)."""
    version = trace.get("schema_version")
    if version != SCHEMA_VERSION or isinstance(version, bool):
        errors.append(f"schema_version: must be {SCHEMA_VERSION}, got {version!r}")
    if trace.get("mode") != MODE:
        errors.append(f'mode: must be "{MODE}"')
    query = trace.get("query")
    if not isinstance(query, str) or not query.strip():
        errors.append("query: missing")
        query = ""
    query = query.strip()
    qid = trace.get("query_id")
    try:
        check_query_id(qid, where)
        if query and qid != query_id(query):
            errors.append(f"query_id: {qid} is not the id of the query ({query_id(query)})")
    except InputError as exc:
        errors.append(f"query_id: {str(exc).split(': ', 2)[-1]}")
    return query, qid


def _check_constants(constants: Any, errors: list[str]) -> None:
    if constants is None:
        return
    if not isinstance(constants, dict):
        errors.append("constants: must be an object")
        return
    for key, value in constants.items():
        if key in CONSTANTS and value != CONSTANTS[key]:
            errors.append(
                f"constants.{key}: {value!r} differs from the workflow's {CONSTANTS[key]!r}"
            )


def _check_history(history: list[Any], query: str, errors: list[str]) -> None:
    """Every step, and the loop's stopping rule (Yes or MAX_HOPS)."""
    if len(history) > MAX_HOPS:
        errors.append(f"interaction_history: {len(history)} steps; MAX_HOPS={MAX_HOPS}")
    for k, step in enumerate(history, start=1):
        _check_step(k, step, k == len(history), query, errors)
    last = history[-1]
    last_yes = isinstance(last, dict) and last.get("answerable") is True
    if not last_yes and len(history) < MAX_HOPS:
        errors.append(
            f"interaction_history: stopped at step {len(history)} after <judge>No</judge>; "
            f"the loop continues until Yes or MAX_HOPS={MAX_HOPS}"
        )


def _check_refinement(
    qid: Any, named: Path | None, refinement_file: Path | None, errors: list[str]
) -> None:
    """The refinement file: given or named (the same one when both), readable UTF-8 text
    with a `<refinement>` block."""
    chosen = refinement_file or named
    if chosen is None:
        errors.append("refinement_action_file: missing (or pass --refinement-file)")
        return
    if refinement_file is not None and named is not None and refinement_file.resolve() != named:
        errors.append(f"refinement_action_file: names {named}, not the given {refinement_file}")
    elif refinement_file is not None and named is None:
        expected = f"refinement_actions_{qid}.txt"
        if refinement_file.name != expected:
            errors.append(
                f"refinement_action_file: unset, so the refinement file must be {expected}"
            )
    try:
        text = read_bytes(chosen, limit=16 * 1024 * 1024).decode("utf-8")
    except InputError as exc:
        errors.append(f"refinement_action_file: {exc}")
        return
    except UnicodeDecodeError:
        errors.append(f"refinement_action_file: {chosen} is not UTF-8 text")
        return
    if not _REFINEMENT.search(text):
        errors.append(f"refinement_action_file: {chosen} has no <refinement>...</refinement>")
