"""Small-model mode: the summary's first sentence states the answer (pure helpers).

A documentation entry often names what it describes first and gives the value after it
("`title_class`: CSS class used for the title. Defaults to `toctitle`."): quoted whole, the
answer is its second sentence. The summary (not the finding, which stays verbatim) states
such a claim with its first sentence that carries a value the question does not hold (a
code span, a quoted string, a number, an entity) ahead of the sentences that only name
what is asked; and for a question that asks for a number or a year ("how many times
...?"), a claim that carries a value leads one that carries none (`valued_first`). (A
comparison's sides are stated in the question's order by `_small_report._both_sides`.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ._small_qa import ask_of

__all__ = ["answer_first", "carries_value", "split_sentences", "valued_first"]

# a sentence ends at ". " before a capital or a markup opener, not after an initial
_END = re.compile(r"(?<=[.!?])(?<!\s[A-Z]\.)\s+(?=[A-Z`*_\[(\"'])")
_VALUE = re.compile(r"`[^`]+`|\"[^\"]+\"|&\w+;|\b\d[\d.,]*\b")
_WORD = re.compile(r"\w+", re.UNICODE)
# an entry's name before its description ("**`title_class`**: CSS class ...") is no value
_LABEL = re.compile(r"^[*_`\s]*[^\s:*`]+[*_`]*(?:\{[^}]*\})?\s*:\s")


def split_sentences(text: str) -> list[str]:
    """*text*'s sentences, in order; joined by single spaces they give *text* back
    (whitespace between sentences aside)."""
    return [s for s in _END.split(text.strip()) if s]


def carries_value(sentence: str, question: str) -> bool:
    """True when *sentence* holds a value (a code span, a quoted string, an HTML entity,
    a number) whose words are not all in *question*: "Defaults to `toctitle`." carries
    one for "what CSS class is used by default?", "Set to `True` ..." does not for "when
    permalink is set to True?", nor does an entry's name before its colon ("**`title_class`**:
    CSS class used for the title.")."""
    asked = {w.casefold() for w in _WORD.findall(question)}
    for value in _VALUE.findall(_LABEL.sub("", sentence, count=1)):
        words = {w.casefold() for w in _WORD.findall(value)}
        if not words or not words <= asked:
            return True
    return False


def answer_first(text: str, question: str) -> str:
    """*text* with its first sentence that carries a value (`carries_value`) moved ahead
    (after an entry's name: "`x`: Defaults to 3. The x of y.") when its first sentence
    carries none; *text* unchanged otherwise (one sentence, or
    none carries a value, or the first already does)."""
    parts = split_sentences(text)
    if len(parts) < 2 or carries_value(parts[0], question):
        return text
    at = next((i for i, s in enumerate(parts) if carries_value(s, question)), None)
    if at is None:
        return text
    label = _LABEL.match(parts[0])
    head = label.group(0) if label else ""  # the entry's name stays in front
    rest = [parts[0][len(head) :], *parts[1:at], *parts[at + 1 :]]
    return head + " ".join([parts[at], *rest])


def valued_first(
    question: str, top: Sequence[dict[str, Any]], ranked: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """*top* (merged claims: `record` holds the claim) with, for a *question* asking for a
    quantity or a year (`_small_qa.Ask.kind`) whose first claim carries no value
    (`carries_value`), the first claim of *ranked* that does moved to the front (*top*
    keeps its length): "overwrite N times instead of the default (3)" leads "shred -
    overwrite a file to hide its contents" for "how many times does shred overwrite?"."""
    out = list(top)
    if not out or ask_of(question).kind not in ("quantity", "year"):
        return out

    def valued(m: dict[str, Any]) -> bool:
        return carries_value(str(m["record"]["claim"]), question)

    if valued(out[0]):
        return out
    found = next((m for m in ranked if valued(m)), None)
    if found is None:
        return out
    return [found, *(m for m in out if m is not found)][: len(out)]
