"""After a game over, the next game: headless play goes on from one game to the next.

When the camera reports ``game_over``, the ai presses ``new_game`` once the final board has been
on the screen for ``play.new_game_after_s`` (the operator's look at it, and the target's own
game-over screen), and again every ``RETRY_S`` while no piece of a new game shows (a press the
target missed or ignored).  The press is a plan of one key, sent like any other, so it goes
through the relay's checks and is stopped by a halt; it is only sent while playing and not halted.
Pure bookkeeping: the ai service owns the clock and the bus.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A new_game press that shows no new piece is repeated this long after it: the target's
#: game-over screen may still have been drawing, or the press was lost.
RETRY_S = 5.0
#: The relay may press new_game until this long after the plan was sent (a busy relay after a
#: long halt still presses it; later, the next retry does).
PRESS_DEADLINE_S = 1.0


@dataclass
class NextGame:
    """When the next ``new_game`` press is due: never while a game is on."""

    after_s: float | None  # play.new_game_after_s; None: never press it
    due_t: float = float("inf")
    presses: int = 0

    def game_over(self, now: float) -> None:
        """The camera saw the game end at ``now``: the press is due ``after_s`` later (a repeated
        report does not put it off)."""
        if self.after_s is not None and self.due_t == float("inf"):
            self.due_t = now + self.after_s

    def game_on(self) -> None:
        """A piece of a new game showed (whoever started it): nothing to press."""
        self.due_t = float("inf")

    def due(self, now: float) -> bool:
        """Whether ``new_game`` should be pressed at ``now``."""
        return now >= self.due_t

    def pressed(self, now: float) -> None:
        """A press was sent at ``now``: the next one only if no new game shows within RETRY_S."""
        self.presses += 1
        self.due_t = now + RETRY_S
