"""The running turn of a runtime, as the runtime steers and interrupts it natively: a
`TurnControl` the runtime makes current (`CURRENT_TURN`) while a turn runs; the spec's build
fills in how this CLI takes a steer or an interrupt (`steer` / `interrupt` encoders, None
while it cannot: before the CLI named its turn, after it ended), and the adapter binds the
turn's stdin (`bind_stdin`). A turn of a CLI that takes neither leaves them None and the
runtime falls back to queueing the text / stopping the process (docs/sessions.md).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

from anyio.streams.memory import MemoryObjectSendStream

__all__ = ["CURRENT_TURN", "TurnControl", "bind_stdin"]


@dataclass(eq=False, slots=True)
class TurnControl:
    """One running turn. `write` sends bytes to its stdin; `steer(text)` / `interrupt()`
    give the bytes that steer or interrupt it now, or None when it cannot take them now.
    `interrupted`: an interrupt was sent (the turn's failure is then the interrupt);
    `refused`: steer texts the CLI answered with an error (the runtime queues them for the
    next turn, so none is lost)."""

    write: Callable[[bytes], None] | None = None
    steer: Callable[[str], bytes | None] | None = None
    interrupt: Callable[[], bytes | None] | None = None
    interrupted: bool = False
    refused: list[str] = field(default_factory=list)

    def send(self, data: bytes | None) -> bool:
        """Write *data* to the turn's stdin; False when there is nothing to send or no
        stdin (the turn ended or never had one)."""
        if data is None or self.write is None:
            return False
        try:
            self.write(data)
        except Exception:  # the turn's stdin closed or is full: the turn is ending
            return False
        return True


CURRENT_TURN: ContextVar[TurnControl | None] = ContextVar("agentport_turn", default=None)


def bind_stdin(more: MemoryObjectSendStream[bytes]) -> None:
    """Give the current turn (if a runtime runs one) the stdin of its CLI process."""
    control = CURRENT_TURN.get()
    if control is not None:
        control.write = more.send_nowait
