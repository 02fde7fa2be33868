"""A reset stated as a clock time (`try again at 7:58 PM`, `resets 4:20am (Europe/Warsaw)`) is
read as the next moment that wall clock shows, never a day late: a minute that has begun (the
CLIs print minute precision) or one that passed a moment ago is now, across midnight and both
DST changes of a zone that has them. Property over instants around now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from agentport.core import parse_quota
from agentport.core._quota import CLOCK_TOLERANCE

MINUTE = timedelta(minutes=1)
# with DST (New York, Berlin: 1 h; Lord Howe: 30 min), without (Tokyo, Phoenix), and UTC
ZONES = ("America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Tokyo",
         "America/Phoenix", "UTC")  # fmt: skip
# instants near both 2026 DST changes of New York and Berlin, and a plain midnight
ANCHORS = (
    datetime(2026, 3, 8, 7, 0, tzinfo=UTC),  # New York springs forward (02:00 EST)
    datetime(2026, 11, 1, 6, 0, tzinfo=UTC),  # New York falls back (02:00 EDT)
    datetime(2026, 3, 29, 1, 0, tzinfo=UTC),  # Berlin springs forward
    datetime(2026, 10, 25, 1, 0, tzinfo=UTC),  # Berlin falls back
    datetime(2026, 4, 5, 15, 0, tzinfo=UTC),  # Lord Howe leaves DST
    datetime(2026, 7, 1, 4, 0, tzinfo=UTC),  # midnight in New York
)


def _codex(wall: datetime) -> str:
    hour = wall.hour % 12 or 12
    return (
        "You've hit your usage limit. To get more access now, send a request to your admin "
        f"or try again at {hour}:{wall.minute:02d} {'PM' if wall.hour >= 12 else 'AM'}."
    )


def _claude(wall: datetime, zone: str) -> str:
    hour = wall.hour % 12 or 12
    ampm = "pm" if wall.hour >= 12 else "am"
    return f"You've hit your session limit · resets {hour}:{wall.minute:02d}{ampm} ({zone})"


@given(
    zone=st.sampled_from(ZONES),
    anchor=st.sampled_from(ANCHORS),
    shift_s=st.integers(-36 * 3600, 36 * 3600),
    ahead_s=st.integers(-int(CLOCK_TOLERANCE.total_seconds()) + 60, 23 * 3600),
    claude_form=st.booleans(),
)
@example(
    zone="UTC", anchor=ANCHORS[-1], shift_s=15 * 3600 + 58 * 60 + 10, ahead_s=30, claude_form=False
)  # read at 19:58:10 for a reset at 19:58:40: this minute, not tomorrow
@example(
    zone="America/New_York", anchor=ANCHORS[-1], shift_s=120, ahead_s=-180, claude_form=False
)  # 00:02 reads "11:59 PM": a moment ago, not tonight
@example(
    zone="America/New_York", anchor=ANCHORS[1], shift_s=-600, ahead_s=40 * 60, claude_form=False
)  # 01:50 EDT reads "1:30 AM": the repeated hour, 40 min ahead
def test_a_clock_time_is_the_next_moment_it_names_never_a_day_late(
    zone: str, anchor: datetime, shift_s: int, ahead_s: int, claude_form: bool
) -> None:
    tz = ZoneInfo(zone)
    now = anchor + timedelta(seconds=shift_s)
    reset = now + timedelta(seconds=ahead_s)  # the real reset; the CLI prints its minute
    wall = reset.astimezone(tz)
    text = _claude(wall, zone) if claude_form else _codex(wall)
    found = parse_quota(text, now=now, local_tz=tz)
    assert found is not None
    assert found.retry_at is not None, text
    assert found.retry_at >= now, text
    # never later than the end of the minute the CLI printed: a day late is the bug
    printed_end = reset.replace(second=0, microsecond=0) + MINUTE
    assert found.retry_at <= max(printed_end, now), (text, now)
    if ahead_s <= 0:  # the minute began or passed a moment ago: now, or within the minute
        assert found.retry_at - now <= MINUTE, (text, now)


@pytest.mark.parametrize(
    ("now", "said", "expected"),
    [
        # the stated minute has begun: the reset is within it, by its end
        (datetime(2026, 7, 1, 19, 58, 10, tzinfo=UTC), "7:58 PM",
         datetime(2026, 7, 1, 19, 59, tzinfo=UTC)),
        # read 3 minutes after it: now
        (datetime(2026, 7, 1, 20, 1, 0, tzinfo=UTC), "7:58 PM",
         datetime(2026, 7, 1, 20, 1, 0, tzinfo=UTC)),
        # past the tolerance: the next one, tomorrow
        (datetime(2026, 7, 1, 20, 4, 0, tzinfo=UTC), "7:58 PM",
         datetime(2026, 7, 2, 19, 58, tzinfo=UTC)),
        # ahead today
        (datetime(2026, 7, 1, 19, 57, 59, tzinfo=UTC), "7:58 PM",
         datetime(2026, 7, 1, 19, 58, tzinfo=UTC)),
    ],
)  # fmt: skip
def test_the_minute_rule_at_its_edges(now: datetime, said: str, expected: datetime) -> None:
    found = parse_quota(f"You've hit your usage limit. Try again at {said}.", now=now,
                        local_tz=UTC)  # fmt: skip
    assert found is not None
    assert found.retry_at == expected


def test_a_dated_reset_in_the_minute_that_began_is_believed() -> None:
    now = datetime(2026, 7, 10, 14, 57, 30, tzinfo=UTC)
    text = "You've hit your usage limit. Try again at Jul 10th, 2026 2:57 PM."
    found = parse_quota(text, now=now, local_tz=UTC)
    assert found is not None
    assert found.retry_at == datetime(2026, 7, 10, 14, 58, tzinfo=UTC)  # was None: "past"
    stale = parse_quota(text, now=now + timedelta(hours=1), local_tz=UTC)
    assert stale is not None
    assert stale.retry_at is None  # an hour past: not believed


def test_a_local_clock_time_is_read_in_the_system_zone_with_its_dst(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # codex prints the machine's local time; the day before New York falls back, a reset
    # "7:58 AM" read at noon is tomorrow 7:58 EST (a fixed -4 h offset would say 6:58 EST)
    monkeypatch.setenv("TZ", "America/New_York")
    now = datetime(2026, 10, 31, 12, 0, tzinfo=ZoneInfo("America/New_York"))  # noon, EDT
    found = parse_quota("You've hit your usage limit. Try again at 7:58 AM.", now=now)
    assert found is not None
    assert found.retry_at == datetime(2026, 11, 1, 7, 58, tzinfo=ZoneInfo("America/New_York"))
