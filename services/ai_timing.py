"""When the target game acts, on the rig's own clock, learned from what the rig sees and presses.

Pure: no I/O and no clock; the ai service feeds it times: ``relay.key``'s ``down_t`` (when the relay
closed a key) and ``obs.frame``'s ``t_capture`` (when the camera service received a frame) of the
frames that first showed a key's effect or a fall step (the caller checks that the frame before,
by ``frame_seq``, showed the piece as it was).  Nothing here reads the simulator or assumes its
figures: a real game on a fixed gravity timer is learned the same way.

- The frame period is the game's nominal one (60 Hz unless told otherwise): the fall step runs in
  whole frames of it.  Not learned: frames reach the camera service in bursts (MJPEG over HTTP),
  so their arrival intervals do not show it to the precision needed (an estimate from them was
  7 % short in a bench run).
- The view latency: from a key going down to the t_capture of the first frame showing its effect
  (the falling piece moved or turned).  The game acts on a key at its first frame after the
  contact closes, and the camera service may show the move only later (at level 10 it showed
  moves only together with the next fall step: checked against the simulator's ground truth), so
  each sample is the latency plus a delay >= 0; the smallest samples (of many presses at random
  phases) are keys closed just before the frame that showed them: the latency itself.
- The gravity ticks: a frame that shows the piece one row lower than the frame before it is the
  first picture of a tick; gravity runs every ``period`` (the level's fall step in whole frames)
  on a fixed schedule, so the ticks' phase in capture time is the low envelope of these pictures
  modulo the period, and on the key clock it is that minus the view latency.  Modulo the period
  a picture late by more than three quarters of it looks early: pictures more than a quarter
  period before the typical one are left out (at level 10 on a loaded machine, a tail of pictures
  25-35 ms late had put the ticks 12-24 ms early, and a tenth of the next pieces spawned a tick
  before their predicted spawn: their first keys waited 50 ms).  A tick ``g`` on the
  key clock means: a key down before ``g`` acts no later than that gravity step, one down after
  it acts after it.  Both envelopes take a low quantile (ENVELOPE_QUANTILE) of the samples of the
  same last WINDOW_S, so the transport delay they both carry cancels.
- Feedback from the rig's own drops: a drop timed just after a tick that made the next piece
  appear a tick earlier than predicted acted before the tick; each such piece moves the ticks a
  little later (:meth:`GameTiming.see_spawn`).  Measured on the simulator at level 10 (bench rig,
  ground truth): the estimated tick stayed 2-5.5 ms early over 300 pieces after the first few.

Tried and dropped: the frame period from frame intervals (above); bounding the tick by the keys
whose move showed in the same picture as a fall step, which needs no latency (it put the ticks
10-20 ms late: the camera service's tracker showed a key that acted a frame after the tick in the
tick's fall report); latency and fall windows of their own sizes (the ticks jumped by about 10 ms,
early for 40 pieces, as fast samples left one window and not the other).

:meth:`Ticks.spawn_after` predicts when the next piece appears after a drop (the first tick after
the drop acts), :meth:`Ticks.drop_time` times a drop so that the next piece's first key can follow
its spawn closely despite the relay's hold and gap.  Tested in tests/unit/test_ai_timing.py with
synthetic times (a game on a frame grid, jittered latencies); measured through ``gamerigctl bench
rig`` (see services/ai.py).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

#: Both estimates use the samples of the same last WINDOW_S seconds (by t_capture), so that a spell
#: of slower or faster pictures (the machine's load) moves both alike.
WINDOW_S = 15.0
KEY_SAMPLES = 512
FALL_SAMPLES = 512
#: Samples needed before an estimate is trusted.  The fall samples start again at every level
#: change, and every piece planned from sight until they are back costs ~80 ms to its first key:
#: with 6 that was ~5 pieces per level change (glass-to-key p99 of the pieces that move first,
#: level 5 to 10 in 300 pieces: 104 ms); with 2, about one, as a piece planned ahead at levels 7-9
#: shows one fall or two before its drop: the first piece of a new level was timed by none, so the
#: next one was planned from sight (78 ms).  With 1, no piece of a level-5 run was planned from
#: sight after a level change (one first key at 42 ms: that sample was 30 ms late).  Few fall
#: samples err late, the safe side: a key waits, never comes before the spawn, unless the picture
#: was late by nearly a whole fall step.  Few key samples err the other way: each
#: is the latency plus the wait for the game's next frame, so from 3 the latency came some 15 ms
#: high and the ticks as early, and at a level-5 start the first key of a piece planned ahead went
#: down before its spawn and its turn before its first fall (both lost).  The key samples are
#: gathered once (they outlive level changes): 12 cost the first three or four pieces.
MIN_KEY_SAMPLES = 12
MIN_FALL_SAMPLES = 1
#: The envelopes take this quantile of the samples from the low end, ignoring outliers below: at
#: least the second smallest of three or more, the smaller of two.  (Of two, the larger put a new
#: level's ticks 9-31 ms late in four level-5 runs, as a piece's first fall picture often comes
#: late; the smaller, 0-4 ms.)
ENVELOPE_QUANTILE = 1 / 32
#: Feedback from the rig's own drops: a piece that appeared more than a quarter of a fall step
#: before the predicted spawn came a tick early (the drop acted before the tick: the ticks were
#: estimated too early; a piece on time appears 0..1 step after it, as the camera names a piece once
#: it shows whole: measured at level 10, on time 0..51 ms, a tick early -50..-16 ms); each such
#: piece moves the ticks CORRECTION_STEP_S later (up to MAX_CORRECTION_S, well under a quarter of
#: the shortest fall step, so a correction cannot feed itself), each piece on time
#: CORRECTION_DECAY_S back.
CORRECTION_STEP_S = 0.003
CORRECTION_DECAY_S = 0.0001
MAX_CORRECTION_S = 0.008
#: A key effect is paired with a press at most this long before the frame showing it.
MAX_EFFECT_AGE_S = 0.5


@dataclass(frozen=True)
class Ticks:
    """The gravity ticks on the key clock: ``anchor + k * period`` for every integer k."""

    anchor: float
    period: float

    def first_at_or_after(self, t: float) -> float:
        """The first tick at or after ``t``."""
        return self.anchor + math.ceil((t - self.anchor) / self.period) * self.period

    def spawn_after(self, drop_t: float, margin_s: float) -> float:
        """When the piece after one dropped at ``drop_t`` appears: the first tick the drop acts
        before.  A drop within ``margin_s`` of a tick may act on either side of it: the later
        tick is returned, so a key timed from it cannot act before the spawn."""
        return self.first_at_or_after(drop_t + margin_s)

    def landing(self, spawn_t: float, falls: int) -> float:
        """The tick on which a piece that spawned on the tick at about ``spawn_t`` lands by gravity
        after falling ``falls`` rows: it falls a row on each tick after its spawn, and lands on the
        tick after its last fall (the next piece spawns a tick later)."""
        return self.first_at_or_after(spawn_t + (falls + 1) * self.period - self.period / 2)

    def drop_time(self, earliest: float, latest: float, next_key_after_s: float, margin_s: float, first_key_margin_s: float) -> float:
        """The first time at or after ``earliest`` (and not after ``latest``) to press a drop so
        that the next piece's first key, at least ``next_key_after_s`` after the drop (the relay's hold),
        comes as soon after its spawn as it can: no later than ``first_key_margin_s`` after it if
        the fall step allows, else a drop ``margin_s`` after a tick (the spawn comes a whole fall
        step later).  ``earliest`` itself when no such time is before ``latest``."""
        window_end = max(margin_s, self.period - next_key_after_s + first_key_margin_s)
        phase = (earliest - self.anchor) % self.period
        if margin_s <= phase <= window_end:
            return earliest
        wait = (margin_s - phase) % self.period
        t = earliest + wait
        return t if t <= latest else earliest


class GameTiming:
    """The learned frame period, view latency and gravity phase; see the module docstring."""

    def __init__(self, frame_s: float = 1 / 60) -> None:
        self.frame_s = frame_s
        self._latencies: deque[tuple[float, float]] = deque(maxlen=KEY_SAMPLES)  # (t_capture, latency)
        self._falls: deque[float] = deque(maxlen=FALL_SAMPLES)  # t_capture
        self._fall_period: float | None = None
        self.correction_s = 0.0  # added to the estimated ticks, from the drops' outcomes

    @property
    def view_latency_s(self) -> float | None:
        """From a key going down to the first frame showing its effect, for a key closed just
        before a game frame; None until enough presses were seen."""
        recent = self._recent_latencies()
        return _low(recent) if len(recent) >= MIN_KEY_SAMPLES else None

    def _latest(self) -> float:
        return max(self._latencies[-1][0] if self._latencies else -math.inf, self._falls[-1] if self._falls else -math.inf)

    def _recent_latencies(self) -> list[float]:
        since = self._latest() - WINDOW_S
        return [latency for t, latency in self._latencies if t >= since]

    def gravity_period(self, fall_step_s: float) -> float:
        """The fall step as the game runs it: a whole number of frames."""
        frame = self.frame_s
        return frame * max(1, round(fall_step_s / frame))

    def see_key_effect(self, down_t: float, t_capture: float) -> None:
        """The key that went down at ``down_t`` first showed in the frame of ``t_capture``."""
        if 0.0 < t_capture - down_t <= MAX_EFFECT_AGE_S:
            self._latencies.append((t_capture, t_capture - down_t))

    def see_fall(self, t_capture: float, fall_step_s: float) -> None:
        """The frame of ``t_capture`` first showed a gravity step (the level's step ``fall_step_s``)."""
        period = self.gravity_period(fall_step_s)
        if self._fall_period is None or abs(period - self._fall_period) > 0.25 * self.frame_s:
            self._falls.clear()  # a new level: the old ticks say nothing about the new schedule
            self._fall_period = period
        self._falls.append(t_capture)

    def restart_gravity(self) -> None:
        """The game's gravity may run on another schedule from now (play starts, a new game): the
        falls seen so far say nothing about it.  Kept, they mixed two schedules: a bench run's
        first 15 s of play had its ticks 35 ms early (the simulator put its first piece back at
        the top before play, restarting gravity; the envelope took the old schedule's pictures),
        and thirteen pieces' first keys went down before they spawned."""
        self._falls.clear()
        self._fall_period = None

    def ticks(self, fall_step_s: float) -> Ticks | None:
        """The gravity ticks on the key clock at this fall step; None until learned."""
        latency = self.view_latency_s
        period = self.gravity_period(fall_step_s)
        since = self._latest() - WINDOW_S
        falls = [t for t in self._falls if t >= since]
        if latency is None or self._fall_period is None or len(falls) < MIN_FALL_SAMPLES:
            return None
        if abs(period - self._fall_period) > 0.25 * self.frame_s:
            return None
        ref = falls[-1]
        residuals = [(t - ref) % period for t in falls]
        angle = math.atan2(sum(math.sin(2 * math.pi * r / period) for r in residuals), sum(math.cos(2 * math.pi * r / period) for r in residuals))
        centre = angle / (2 * math.pi) * period
        offsets = [(r - centre + period / 2) % period - period / 2 for r in residuals]
        # A picture that lagged the typical one by more than three quarters of a step wraps round
        # to look early: left out, or the envelope takes it for the earliest picture of a tick.
        offsets = [offset for offset in offsets if offset >= -period / 4] or offsets
        return Ticks(ref + centre + _low(offsets) - latency + self.correction_s, period)

    def see_spawn(self, predicted_t: float, appeared_t: float, fall_step_s: float) -> None:
        """A piece whose spawn was predicted at ``predicted_t`` (key clock, from its predecessor's
        drop) appeared at ``appeared_t`` (its first picture's t_capture minus the view latency: a
        rough time, but a tick early is told apart from on time or late)."""
        if appeared_t < predicted_t - self.gravity_period(fall_step_s) / 4:
            self.correction_s = min(MAX_CORRECTION_S, self.correction_s + CORRECTION_STEP_S)
        else:
            self.correction_s = max(0.0, self.correction_s - CORRECTION_DECAY_S)


class KeyEffects:
    """Pairs the moves and turns of the falling piece seen in frames with the presses that made them."""

    def __init__(self) -> None:
        self._pressed: deque[tuple[str, float]] = deque(maxlen=16)

    def pressed(self, key: str, down_t: float) -> None:
        """A key went down (relay.key)."""
        self._pressed.append((key, down_t))

    def seen(self, before: tuple[int, int], after: tuple[int, int], t_capture: float) -> float | None:
        """The falling piece's (orientation, x) changed from ``before`` to ``after`` in the frame of
        ``t_capture``: the down_t of the press that did it, if one key explains the change.  The
        oldest unpaired press of that key is taken (an earlier one that never showed was lost or
        blocked, and a late pairing only raises a sample, which the low quantile ignores)."""
        (o0, x0), (o1, x1) = before, after
        if o0 == o1 and x1 == x0 - 1:
            key = "left"
        elif o0 == o1 and x1 == x0 + 1:
            key = "right"
        elif o0 != o1 and x0 == x1:
            key = "rotate"
        else:
            return None
        for i, (k, down_t) in enumerate(self._pressed):
            if k == key and t_capture - MAX_EFFECT_AGE_S <= down_t < t_capture:
                del self._pressed[i]
                return down_t
        return None


def _low(values: list[float]) -> float:
    ordered = sorted(values)
    least = 1 if len(ordered) > 2 else 0
    return ordered[min(max(least, int(len(ordered) * ENVELOPE_QUANTILE)), len(ordered) - 1)]
