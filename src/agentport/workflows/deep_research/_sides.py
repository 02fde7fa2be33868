"""The two sides of a comparison question (pure: no I/O).

"How does tail -F differ from tail -f?", "What are the default values of the baselevel and
toc_depth options?", "Which uses a wider default line width, fmt or fold?": the answer is
two statements, one about each side, often in two sentences of one passage or in two
documents. A pass that takes the best sentence answers one side only. `sides_of` finds
the two things set side by side, so that the candidates, the documents read and the
summary cover both; `says` tells whether a sentence is about one of them.

A side is the word (an option, an identifier, a number, an escape, a content word) next
to a joining word ("and", "or", "vs", "differ from", "compared to"), past the words both
sides share ("*rm* -i and *rm* -I", "the Abbreviations *extension* or the New-Line
*extension*"). Two plain words count only when the question compares ("differ", "which
... or", "same", "between"); code-like sides always do ("124 and 125", "baselevel and
toc_depth" where one of them is code-like), and so do two words a plural kind follows ("the
input and output options").
"""

from __future__ import annotations

import re

from ._corpus import STOP_WORDS

__all__ = ["about_side", "says", "sides_of"]

# a token of a question: `code`, an option, an escape (\b), a word (dots, dashes and
# underscores inside it kept)
_TOKEN = re.compile(r"`[^`]+`|(?<![\w-])--?[A-Za-z][\w-]*|\\[A-Za-z]|\w[\w.-]*\w|\w")
_JOIN = re.compile(r"^(?:and|or|vs\.?|versus)$", re.I)
# a joining word only after the verb: "differ(s) from", "compared to / with"
_AFTER_VERB = {"from": re.compile(r"^differ\w*$", re.I), "to": re.compile(r"^compar\w*$", re.I)}
_AFTER_VERB["with"] = _AFTER_VERB["to"]
_FRAME = re.compile(r"^(?:differ\w*|difference|compar\w*|between|versus|vs)$", re.I)
_COMPARES = re.compile(
    r"\b(?:differ\w*|difference|compar\w*|versus|vs\.?|same|between|whereas|which\b.*\bor)\b",
    re.I,
)
# "the input and output options": a plural kind after the second side says both are names
_KIND = re.compile(
    r"^(?:options|arguments|parameters|settings|flags|fields|attributes|methods|functions|"
    r"commands|variables|keys|modes|extensions|classes|exceptions|hooks|properties)$",
    re.I,
)
_CODE = re.compile(r"^(?:`.+`|--?[A-Za-z][\w-]*|\\[A-Za-z]|\d+|.*[_.].*)$")
_CONTEXT = 3  # how far a shared word may sit from the side it frames


def _plain(token: str) -> str:
    """A token as compared: code as written (`-F` is not `-f`), a word case-folded."""
    return token.strip("`") if _CODE.match(token) else token.casefold()


def _content(token: str) -> bool:
    if _FRAME.match(token):
        return False
    return bool(_CODE.match(token)) or (len(token) > 2 and token.casefold() not in STOP_WORDS)


def _joins(tokens: list[str], j: int) -> bool:
    word = tokens[j].casefold()
    if _JOIN.match(word):
        return True
    verb = _AFTER_VERB.get(word)
    return verb is not None and j > 0 and verb.match(tokens[j - 1]) is not None


def sides_of(question: str) -> tuple[str, ...]:
    """The two sides *question* compares, as written (backticks stripped), or () when it
    compares nothing (see the module docstring). Each side is a token of the question."""
    tokens = [m.group(0) for m in _TOKEN.finditer(question)]
    compares = _COMPARES.search(question) is not None
    for j in range(1, len(tokens)):
        if not _joins(tokens, j):
            continue
        before = list(range(max(0, j - 1 - _CONTEXT), j))
        after = list(range(j + 1, min(len(tokens), j + 2 + _CONTEXT)))
        left = _side(tokens, before[::-1], {_plain(tokens[i]) for i in after})
        right = _side(tokens, after, {_plain(tokens[i]) for i in before})
        if left is None or right is None or tokens[left] == tokens[right]:
            continue
        named = right + 1 < len(tokens) and _KIND.match(tokens[right + 1]) is not None
        if compares or named or any(_CODE.match(tokens[i]) for i in (left, right)):
            return (tokens[left].strip("`"), tokens[right].strip("`"))
    return ()


def _side(tokens: list[str], order: list[int], shared: set[str]) -> int | None:
    """The index of the first token in *order* (nearest the joining word first) that is
    content and not one of the *shared* words that frame both sides."""
    for i in order:
        token = tokens[i]
        if _JOIN.match(token) or token.casefold() in _AFTER_VERB or not _content(token):
            continue
        if _plain(token) in shared:
            continue
        return i
    return None


def says(text: str, side: str) -> bool:
    """True when *text* is about *side*: code-like sides as written (case kept: `-i` is not
    `-I`), whole; a word as a whole word, case ignored."""
    if _CODE.match(side):
        return re.search(rf"(?<![\w-]){re.escape(side)}(?![\w-])", text) is not None
    return re.search(rf"\b{re.escape(side)}\b", text, re.I) is not None


def about_side(text: str, side: str, sides: tuple[str, ...]) -> bool:
    """True when *text* is about *side* alone: it `says` *side* and no other of *sides* (a
    sentence naming both is about how they relate, and answers neither side's value)."""
    return says(text, side) and not any(says(text, o) for o in sides if o != side)
