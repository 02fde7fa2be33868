"""A `ProviderError` cannot carry a secret: it is immutable, and every path that builds one
(the constructor, every public method that returns one, copy, pickle) redacts every field.
The methods are found by introspection: a new one is covered, or this test says which
parameter type it cannot fill."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agentport.core import Attempt, ErrorKind, ProviderError, Usage, _errors

# the planted secret: a key of a known shape with a random body; the body must not survive
body = st.text(alphabet="ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789", min_size=24)
FORMS = (
    "sk-proj-{}",
    "sk-ant-api03-{}",
    "ghp_{}",
    "AIza{}",
    "Authorization: Bearer {}",
    "aws_secret_access_key = {}",
    "x-api-key: {}9",
    "https://api.example.com/v1?api_key={}&m=1",
)
SEPARATORS = (" ", "\n", ": ", "(", '"', "=", "\t")


@st.composite
def planted(draw: st.DrawFn, secret: str) -> str:
    """Text with *secret* (already in one of FORMS) somewhere in it."""
    left = draw(st.text(max_size=30))
    right = draw(st.text(max_size=30))
    sep = draw(st.sampled_from(SEPARATORS))
    around = f"{left}\0{right}"  # the random text must not repeat the key bare
    assume(not any(secret[i : i + 24] in around for i in range(len(secret) - 23)))
    return f"{left}{sep}{secret}{sep}{right}"


def _strategy(hint: Any, secret: str) -> st.SearchStrategy[Any]:
    """A value for a parameter annotated *hint*, every text in it carrying *secret*."""
    text = planted(secret)
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return st.one_of(*(_strategy(arg, secret) for arg in typing.get_args(hint)))
    if hint is type(None):
        return st.none()
    if hint is str:
        return text
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers(-1, 600)
    if hint is float:
        return st.floats(0, 1e6, allow_nan=False)
    if hint is ErrorKind:
        return st.sampled_from(list(ErrorKind))
    if hint is datetime:
        return st.datetimes(timezones=st.just(UTC))
    if hint is Usage:
        return st.builds(Usage, input_tokens=st.integers(0, 10**6))
    if hint is Attempt:
        return st.builds(
            Attempt, kind=st.sampled_from(list(ErrorKind)), duration_s=st.just(1.0), backend=text
        )
    if origin is typing.Literal:
        return st.sampled_from(typing.get_args(hint))
    if origin in (Mapping, dict):
        leaf = text | st.integers() | st.none()
        nested = st.recursive(
            leaf,
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
        )
        return st.dictionaries(text | st.sampled_from(["url", "said"]), nested, max_size=4)
    if origin in (Sequence, tuple, list, Iterable):
        (item,) = typing.get_args(hint)[:1]
        return st.lists(_strategy(item, secret), max_size=3)
    if hint is ProviderError:
        return errors(secret)
    raise AssertionError(f"no strategy for a parameter annotated {hint!r}: add one here")


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    return typing.get_type_hints(fn, vars(_errors))


def _fill(fn: Callable[..., Any], secret: str, skip: int) -> st.SearchStrategy[dict[str, Any]]:
    """Keyword arguments for every parameter of *fn* after the first *skip*; `**changes` is
    filled with the constructor's own parameters."""
    hints = _hints(fn)
    params = list(inspect.signature(fn).parameters.values())[skip:]
    fixed: dict[str, st.SearchStrategy[Any]] = {}
    optional: dict[str, st.SearchStrategy[Any]] = {}
    for param in params:
        if param.kind is param.VAR_KEYWORD:
            init = _hints(ProviderError.__init__)
            for name in inspect.signature(ProviderError.__init__).parameters:
                if name in init and name != "return":
                    optional[name] = _strategy(init[name], secret)
        else:
            fixed[param.name] = _strategy(hints[param.name], secret)
    return st.fixed_dictionaries(fixed, optional=optional)


def errors(secret: str) -> st.SearchStrategy[ProviderError]:
    return _fill(ProviderError.__init__, secret, skip=1).map(lambda kw: ProviderError(**kw))


def _producers() -> list[str]:
    """Every public method of `ProviderError` annotated to return a `ProviderError`."""
    names = []
    for name, member in inspect.getmembers(ProviderError, callable):
        if name.startswith("_") or name in vars(BaseException):
            continue
        if _hints(member).get("return") is ProviderError:
            names.append(name)
    return sorted(names)


PRODUCERS = _producers()


def test_the_producers_are_found() -> None:
    # the list this module derives: if it shrinks, introspection broke, not the class
    assert {"replace", "sent", "reached_by", "with_backend"} <= set(PRODUCERS)


def assert_clean(error: ProviderError, secret: str) -> None:
    seen = {name: repr(getattr(error, name)) for name in _errors._FIELDS}
    seen |= {"str": str(error), "repr": repr(error), "args": repr(error.args)}
    leaked = [where for where, text in seen.items() if secret in text]
    assert not leaked, f"{secret!r} survives in {leaked}: {seen}"


@st.composite
def produced(draw: st.DrawFn) -> tuple[str, ProviderError, str]:
    """(the path taken, the error it built, the planted key's random body)."""
    token = draw(body)
    secret = draw(st.sampled_from(FORMS)).format(token)
    path = draw(st.sampled_from(["__init__", "copy", "deepcopy", "pickle", *PRODUCERS]))
    error = draw(errors(secret))
    if path == "copy":
        error = copy.copy(error)
    elif path == "deepcopy":
        error = copy.deepcopy(error)
    elif path == "pickle":
        error = pickle.loads(pickle.dumps(error))
    elif path != "__init__":
        method = getattr(error, path)
        error = method(**draw(_fill(method, secret, skip=0)))
    return path, error, token


@settings(max_examples=300, deadline=None)
@given(produced())
def test_no_path_that_builds_an_error_keeps_a_planted_secret(
    case: tuple[str, ProviderError, str],
) -> None:
    _path, error, token = case
    assert_clean(error, token)  # the vendor prefix may stay as a hint ("sk-***")


@pytest.mark.parametrize("name", _errors._FIELDS)
def test_every_field_refuses_assignment(name: str) -> None:
    error = ProviderError(ErrorKind.network, "down", details={"a": [1, {"b": 2}]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(error, name, "sk-proj-abcdefghijklmnopqrstuvwx")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(error, name)


def test_details_refuse_changes_at_every_depth() -> None:
    error = ProviderError(ErrorKind.network, "down", details={"a": [1, {"b": 2}]})
    changes: list[Callable[[], object]] = [
        lambda: error.details.__setitem__("x", "sk-proj-abcdefghijklmnopqrstuvwx"),
        lambda: error.details.update(x=1),
        lambda: error.details["a"].append("sk-proj-abcdefghijklmnopqrstuvwx"),
        lambda: error.details["a"][1].__setitem__("b", 3),
        lambda: error.details.pop("a"),
    ]
    for change in changes:
        with pytest.raises(TypeError, match="immutable"):
            change()
    assert error.details == {"a": [1, {"b": 2}]}  # still reads as plain data
    assert copy.deepcopy(error).details == error.details


def _load() -> None:
    try:
        raise KeyError("x")
    except KeyError as cause:
        error = ProviderError(ErrorKind.config, "bad")
        error.add_note("while loading")
        raise error from cause


def test_python_may_still_chain_and_note_a_raised_error() -> None:
    with pytest.raises(ProviderError) as raised:
        _load()
    assert isinstance(raised.value.__cause__, KeyError)
    assert raised.value.__notes__ == ["while loading"]


def test_replace_keeps_an_explicit_cannot_tell() -> None:
    error = ProviderError(ErrorKind.not_installed, "x")
    assert error.request_sent is False
    assert error.replace(request_sent=None).request_sent is None
    assert error.replace(mid_stream=True).request_sent is True


def test_a_timeout_outside_the_four_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout must be one of"):
        ProviderError(ErrorKind.timeout, "x", timeout="sk-proj-abcdefghijklmnopqrstuvwx")  # type: ignore[arg-type]
