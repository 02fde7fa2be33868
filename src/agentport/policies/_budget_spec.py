"""A budget written by a person: the `--budget` spec, the `[budget]` table, durations, and
the plan-against-budget check (pure).

One spelling for the command line and the configuration: `calls`, `input_tokens`,
`output_tokens`, `usd`, `wall` (`Budget.calls`, `.input_tokens`, `.output_tokens`,
`.cost_usd`, `.deadline_s`):

    --budget "calls=40,output_tokens=20000,usd=0.50,wall=10m"

    [budget]                      # agentport.toml, ~/.config/agentport/config.toml,
    calls = 40                    # [tool.agentport.budget] in pyproject.toml,
    wall = "10m"                  # AGENTPORT_BUDGET_CALLS=40 in the environment

`wall` is seconds (`600`) or a duration (`90s`, `10m`, `1h30m`, `1.5h`, `2d`). `--budget none`
drops the configured budget for one run. Bad input is a one-line `ValueError` naming the
flag (or, through the settings loader, the file) and the key: an unknown key (did you mean),
a malformed `key=value`, a key given twice, a zero or negative value, a fractional count.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, fields
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ._budget import Budget

__all__ = [
    "BUDGET_KEYS",
    "BudgetSettings",
    "PlanFit",
    "fit_plan",
    "format_budget",
    "format_duration",
    "merge_budgets",
    "parse_budget",
    "parse_duration",
]

#: spec / config key -> `Budget` field
BUDGET_KEYS: dict[str, str] = {
    "calls": "calls",
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "usd": "cost_usd",
    "wall": "deadline_s",
}
_COUNTS = frozenset({"calls", "input_tokens", "output_tokens"})
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?|\.\d+)([smhd])")


def parse_duration(text: str | float) -> float:
    """Seconds in *text*: a number of seconds (`600`, `2.5`) or unit parts in any order
    (`90s`, `10m`, `1h30m`, `1.5h`, `2d`). Raises `ValueError` (one line) for anything else,
    and for zero, negative or non-finite values."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        raw = text.strip().lower().replace(" ", "")
        try:
            seconds = float(raw)
        except ValueError:
            pos, seconds = 0, 0.0
            for match in _PART.finditer(raw):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _UNIT_S[match.group(2)]
                pos = match.end()
            if pos != len(raw) or not raw:
                raise ValueError(
                    f"not a duration: {text!r} (seconds, or e.g. 90s, 10m, 1h30m)"
                ) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"must be > 0 (got {text!r})")
    return seconds


def format_duration(seconds: float) -> str:
    """`600.0` -> `"10m"`, `5400` -> `"1h30m"`, `45` -> `"45s"`, `2.5` -> `"2.5"` (plain
    seconds); `parse_duration` reads each back exactly."""
    if seconds != int(seconds):
        return repr(float(seconds))
    left, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size:
            parts.append(f"{left // size}{unit}")
            left %= size
    return "".join(parts)


def _value(key: str, raw: str | float) -> float | int:
    if key == "wall":
        return parse_duration(raw)
    if isinstance(raw, bool):
        raise ValueError(f"must be a number (got {raw!r})")
    if key in _COUNTS:
        try:
            number: float | int = int(raw) if isinstance(raw, int) else int(str(raw).strip())
        except ValueError:
            raise ValueError(f"must be a whole number (got {raw!r})") from None
    else:
        try:
            number = float(str(raw).strip().removeprefix("$"))
        except ValueError:
            raise ValueError(f"must be a number of dollars (got {raw!r})") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"must be > 0 (got {raw!r})")
    return number


def _unknown(key: str) -> str:
    close = difflib.get_close_matches(key, [*BUDGET_KEYS, *_ALIASES], n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown budget key {key!r}{hint} (keys: {', '.join(BUDGET_KEYS)})"


_ALIASES = {"cost_usd": "usd", "deadline_s": "wall"}  # the library's names, accepted too


def parse_budget(spec: str, *, source: str = "--budget") -> Budget | None:
    """The `Budget` of a spec `key=value[,key=value...]` (keys in `BUDGET_KEYS`; the library
    names `cost_usd` and `deadline_s` are accepted too), or None for `none`. Raises
    `ValueError("<source>: <key>: <problem>")` on one line for bad input."""
    text = spec.strip()
    if text.lower() == "none":
        return None
    if not text:
        raise ValueError(f"{source}: empty budget; e.g. calls=40,wall=10m (or none)")
    values: dict[str, Any] = {}
    for part in text.split(","):
        key, sep, raw = part.partition("=")
        key = key.strip().lower()
        if not sep or not key or not raw.strip():
            raise ValueError(f"{source}: malformed {part.strip()!r}; expected key=value")
        key = _ALIASES.get(key, key)
        if key not in BUDGET_KEYS:
            raise ValueError(f"{source}: {_unknown(key)}")
        if BUDGET_KEYS[key] in values:
            raise ValueError(f"{source}: {key}: given twice")
        try:
            values[BUDGET_KEYS[key]] = _value(key, raw)
        except ValueError as exc:
            raise ValueError(f"{source}: {key}: {exc}") from None
    return Budget(**values)


def format_budget(budget: Budget | None) -> str:
    """The spec of *budget* (`parse_budget` reads it back), `none` for None."""
    if budget is None:
        return "none"
    parts = []
    for key, name in BUDGET_KEYS.items():
        value = getattr(budget, name)
        if value is None:
            continue
        text = format_duration(value) if key == "wall" else repr(value)
        parts.append(f"{key}={text}")
    return ",".join(parts) or "none"


def merge_budgets(base: Budget | None, override: Budget | None) -> Budget | None:
    """*override*'s ceilings over *base*'s, key by key (the command line over the config)."""
    if base is None or override is None:
        return override if base is None else base
    merged = {
        f.name: getattr(override, f.name)
        if getattr(override, f.name) is not None
        else getattr(base, f.name)
        for f in fields(Budget)
    }
    return Budget(**merged)


class BudgetSettings(BaseModel):
    """The `[budget]` table: ceilings of every workflow run (`agentport research`,
    `agentport refine`, `deeprefine refine`); unset = no ceiling. Same keys as `--budget`.
    A budget only lowers what a run may spend, so a project file may set it untrusted."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    calls: int | None = Field(default=None, gt=0)
    input_tokens: int | None = Field(default=None, gt=0)
    output_tokens: int | None = Field(default=None, gt=0)
    usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    wall: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _known(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for key in value:
                if key not in BUDGET_KEYS:
                    raise ValueError(_unknown(str(key)))
        return value

    @field_validator("wall", mode="before")
    @classmethod
    def _wall(cls, value: Any) -> Any:
        return None if value is None else parse_duration(value)

    def to_budget(self) -> Budget | None:
        """The table as a `Budget`, None when no key is set."""
        values = {BUDGET_KEYS[k]: v for k, v in self.model_dump().items() if v is not None}
        return Budget(**values) if values else None


@dataclass(frozen=True, slots=True)
class PlanFit:
    """A plan's worst case against a budget: `fits` is False when a ceiling is below the
    worst case (the run may end in a partial report), None when no ceiling can be checked
    before the run; `lines` say so for people."""

    fits: bool | None
    lines: tuple[str, ...]


def fit_plan(
    budget: Budget | None,
    worst_calls: int,
    *,
    typical_calls: int | None = None,
    worst_output_tokens: int | None = None,
) -> PlanFit:
    """Compare a plan's worst case (*worst_calls*, *worst_output_tokens* when estimable)
    with *budget*. Input tokens, dollars and wall-clock time are counted during the run only:
    they are listed as "checked during the run"."""
    if budget is None:
        return PlanFit(None, ("budget: none (the run stops only at its own limits)",))
    lines = [f"budget: {format_budget(budget)}"]
    verdicts: list[bool] = []
    if budget.calls is not None:
        ok = worst_calls <= budget.calls
        verdicts.append(ok)
        line = f"  calls: worst case {worst_calls} vs ceiling {budget.calls}: " + (
            "fits" if ok else "may stop early"
        )
        if not ok and typical_calls is not None:
            line += f" (typical {typical_calls}: " + (
                "fits)" if typical_calls <= budget.calls else "stops early)"
            )
        lines.append(line)
    if budget.output_tokens is not None:
        if worst_output_tokens is None:
            lines.append("  output_tokens: no per-call cap set, so checked during the run only")
        else:
            ok = worst_output_tokens <= budget.output_tokens
            verdicts.append(ok)
            lines.append(
                f"  output_tokens: worst case {worst_output_tokens} vs ceiling "
                f"{budget.output_tokens}: " + ("fits" if ok else "may stop early")
            )
    for key in ("input_tokens", "usd", "wall"):
        if getattr(budget, BUDGET_KEYS[key]) is not None:
            note = " (only calls whose backend reports a cost count)" if key == "usd" else ""
            lines.append(f"  {key}: checked during the run{note}")
    fits = None if not verdicts else all(verdicts)
    if fits is True:
        lines.append("plan fits the budget")
    elif fits is False:
        lines.append(
            "plan may exceed the budget: the run then stops at the ceiling with a partial "
            "report (exit code 3)"
        )
    return PlanFit(fits, tuple(lines))
