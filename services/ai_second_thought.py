"""The ai service's second thoughts: a piece chosen without the piece after it (every plan made
ahead is, services/ai_ahead.py) is chosen again once the preview shows that piece, and steered on
to the new choice if its keys still fit.

At once (``_think_early``), while the piece's first part is under way: the keys of the part still
to come are stopped and the piece steered on from where the keys the relay reported put it, with
room for one confirmation.  Else at its confirmation (``_think_again``), with room for two.

SecondThought is a mixin of services/ai.py's AiService, as PlanAhead is: the service provides the
settings, planner, counters, piece in play and latest key declared here, and ``_stop_part``,
``_steer_anew``, ``_correct`` and ``_press_cycle_s``.  Tested through the ai service in
tests/integration/test_ai_service.py.
"""

from __future__ import annotations

import logging

from gamerig.games.tetris.engine import FallingPiece, fits
from gamerig.games.tetris.rules import iteration_delay

from .ai_ahead import first_fall
from .ai_lost_drop import poses_along
from .ai_planner import KeyPlan, Planner
from .ai_settings import AiSettings
from .ai_state import Counters, PieceInPlay

log = logging.getLogger("gamerig.services.ai")


class SecondThought:
    """Second thoughts, mixed into AiService (see the module docstring)."""

    settings: AiSettings
    planner: Planner
    counters: Counters
    active: PieceInPlay | None
    last_key_down_t: float  # the relay's latest press

    def _learn_next_piece(self, active: PieceInPlay, next_piece: str | None) -> None:
        """The preview shows the piece after ``active``, which was planned without it: while its
        drop is still to come, ask the player where the piece goes now (the costly search, done
        here while the keys act, not at the confirmation)."""
        active.next_piece = next_piece
        if next_piece is not None and not active.finished and self.settings.preview:
            active.second_thought = self.planner.second_thought(active.board_before, active.placement, next_piece, active.level)
            if active is self.active:
                self._think_early(active)

    def _think_early(self, active: PieceInPlay) -> None:
        """A second thought while the piece's first part is under way: steer the piece there at
        once, from where the keys pressed so far put it, if its keys fit with a confirmation; the
        keys of the part still to come are stopped first (an empty part), unless the relay is done
        with it.  Taken only at the confirmation (``_think_again``), from a piece 3-4 rows lower,
        most came too late: in a level-10 faults run (seed 1, 717 pieces), of the 206 pieces the
        player would have put elsewhere knowing the piece after, 109 landed where they were
        planned ahead and 67 on the second thought.  In tests/faults_model.py's level-10 play,
        taking them early (with room for one confirmation, as the plan made ahead had) ended 10
        games of seeds 0-89 early against 28, and 11 of seeds 90-179 against 38."""
        if active.second_thought is None or active.finished or active.part != 0 or active.plan.final:
            return
        found = self._pose_from_keys(active)
        if active.stopping is not None or active.rethinking is not None or found is None or self._early_plan(active, *found) is None:
            return  # out of reach from here already: perhaps at the confirmation, else on as planned
        if active.relay_done:
            self._steer_early(active)
            return
        active.rethinking = (active.part_id, active.deadline_t)
        self._stop_part(active)

    def _pose_from_keys(self, active: PieceInPlay) -> tuple[FallingPiece, float] | None:
        """Where the keys of the part in play reported down put the piece (none lost), in the row
        it was in when the part was planned from (or the one below, after its next fall, where a
        turn did not fit the spawn row), and when it was there; None if it fits neither."""
        plan = active.plan
        pose = poses_along(active.board_before, plan.start, plan.keys[: active.pressed], above_allowed=True)[-1]
        start_y, start_t = active.start
        for fallen in (0, 1):
            here = FallingPiece(pose.kind, pose.orientation, pose.x, start_y - fallen)
            if fits(active.board_before, here.cells()):
                return here, start_t + fallen * iteration_delay(active.level)
        return None

    def _early_plan(self, active: PieceInPlay, here: FallingPiece, t_state: float) -> KeyPlan | None:
        """Keys from ``here`` (at ``t_state``) to the second thought that finish in time with a
        confirmation, after the relay's next free press; None if none do.  A piece that appeared
        when its plan made ahead predicted is reckoned as that plan was, on the relay's clock with
        its first fall a step after its spawn: in tests/faults_model.py, reckoned from an unknown
        fall phase with the view's key latency, early second thoughts lost 23 games of 90, not 10."""
        better = active.second_thought
        if better is None:
            return None
        target = FallingPiece(better.piece, better.orientation, better.x, better.y)
        first_key_t = self.last_key_down_t + self._press_cycle_s()
        on_clock = active.spawn_t is not None and active.start[1] == active.spawn_t
        plan = self.planner.keys_to(
            active.board_before, here, target, active.level, t_state, confirm_again=True, first_key_t=first_key_t,
            key_latency_s=0.0 if on_clock else None, first_fall_s=first_fall(active.level) if on_clock else None,
        )
        return plan if plan is not None and not plan.final else None

    def _steer_early(self, active: PieceInPlay) -> None:
        """The relay is done with the part in play (or stopped it): on to the second thought from
        where its keys put the piece if that still fits, else on to the placement it was going to."""
        stopped, active.rethinking = active.rethinking, None
        found = self._pose_from_keys(active)
        plan = self._early_plan(active, *found) if found is not None else None
        better, target = active.second_thought, active.plan.target
        # The next part starts where the counted keys put the piece; if one of them was lost, the
        # frames show it off that part's way, and taken for a lost key of the part it was
        # "corrected" astray (a level-10 faults run: an L whose R and last L were lost, on target).
        counted = (active.plan.start, tuple(active.plan.keys[: active.pressed]))
        if plan is not None and found is not None and better is not None:
            active.second_thought = None
            self.counters.second_thoughts += 1
            log.info("plan %s: the piece after it shown, steered on at once from %s to %s", active.part_id, (found[0].orientation, found[0].x), better)
            self._steer_anew(active, better, plan, *found)
            active.counted_from = counted
            # Frames from before the counted keys acted show poses off the new part's way: taken
            # for lost keys of it, they had good second thoughts "corrected" astray.
            active.fresh_after = self.last_key_down_t + self.settings.key_latency_s
        elif stopped and found is not None and (found[0].orientation, found[0].x) != (target.orientation, target.x):
            self._correct(active, *found, on_target=False)  # from where the stop left it
            active.counted_from = counted
        elif stopped:  # its keys were all pressed, or only a frame can tell where it is: confirm it
            active.relay_done, active.last_down_t, active.deadline_t = True, self.last_key_down_t, stopped[1]

    def _think_again(self, active: PieceInPlay, seen: FallingPiece, t_state: float) -> bool:
        """Confirmed on target, with a second thought: steer the piece there instead, if its keys
        from ``seen`` still finish in time with a confirmation of their own and room for one more.
        A plan made ahead is chosen with the piece after it unknown; with it, the player's
        two-piece search avoids what the expectation over all seven cannot see coming (a run of Z
        pieces stacked into a tower at level 10, a lost game).  With room for one confirmation
        only, second thoughts landed off their predictions five times as often as other pieces:
        their drops came late in the fall, and a lost one could not be pressed again before the
        next piece's keys moved this piece on."""
        better, active.second_thought = active.second_thought, None
        assert better is not None
        target = FallingPiece(better.piece, better.orientation, better.x, better.y)
        plan = self.planner.keys_to(active.board_before, seen, target, active.level, t_state, confirm_again=True, confirm_rounds=2)
        if plan is None or plan.final:
            return False  # it must leave room to correct its own lost key or press a lost drop again
        self.counters.second_thoughts += 1
        log.info("plan %s: the piece after it shown, steered on from %s to %s", active.part_id, (seen.orientation, seen.x, seen.y), better)
        self._steer_anew(active, better, plan, seen, t_state)
        return True
