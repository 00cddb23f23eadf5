"""Closed loop: when the drop goes down unconfirmed if no camera frame has confirmed the piece.

The planned moment is the pause the plan assumed after its last key (``confirm_delay_s``: the
view latency, a frame, recognition and the key latency).  It is not enough where a frame that the
ai can take as confirmation cannot have come by then: the ai takes a frame only if it shows the
piece at least a row below where the part was planned from (the camera's tracker can repeat a lost
piece where it last saw it), so a piece still in its spawn row can be confirmed only after its
first fall, a whole fall step at a slow level (0.3 s at level 5, against 0.23 s from the last key
to the planned drop); and frames that say the piece is off target must agree for a while before a
correction (a lagging frame looks like a lost key).  The first fall is reckoned from the later of
the part's start and when the piece was first seen: a piece planned ahead that spawned later than
predicted falls first a step after it really appeared.  Reckoned from the prediction, the drop
could go down before a frame after that fall came: most likely how a level-6 faults run dropped
such a piece unturned (its turn, pressed before the fall, had been ignored by the game).  Dropping before either had its chance landed
pieces off target when one of their moves was a lost key press: with 2 % dropped presses and
planning ahead, the mismatches that lost a faults run.  So the drop waits for those frames too,
unless that would pass its deadline.  Pure: the caller gives the times.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConfirmWait:
    """What the wait for a confirming frame depends on; times on the ai's clock, in seconds."""

    last_down_t: float  # the part's last key went down
    start_y: int  # the row the part was planned from ...
    start_t: float  # ... and when the game showed the piece there
    lowest_y: int  # the lowest row a frame has shown the piece in since
    suspect_t: float | None  # frames first said the piece is off target (None: they have not)
    deadline_t: float  # the latest time the drop may go down
    first_seen_t: float = float("-inf")  # when the game showed the piece in the first frame of it


def blind_drop_due(wait: ConfirmWait, fall_step_s: float, key_interval_s: float, confirm_delay_s: float, evidence_s: float, margin_s: float) -> float:
    """When to drop unconfirmed: the planned pause after the last key, or later while a frame that
    could confirm or correct the piece (see the module docstring) may still come ``margin_s`` before
    the deadline; never earlier than planned.  ``evidence_s``: how long off-target frames must agree."""
    planned = wait.last_down_t + key_interval_s + confirm_delay_s
    awaited = planned
    if wait.lowest_y >= wait.start_y:  # not seen below its start row yet: its first fall comes within a step
        awaited = max(awaited, max(wait.start_t, wait.first_seen_t) + fall_step_s + confirm_delay_s)
    if wait.suspect_t is not None:
        awaited = max(awaited, wait.suspect_t + evidence_s + confirm_delay_s)
    return max(planned, min(awaited, wait.deadline_t - margin_s))
