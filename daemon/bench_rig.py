"""`gamerigctl bench rig`: the whole rig against the simulator, measured by the simulator's ground truth.

    gamerigctl bench rig [--pieces N] [--level L] [--preview] [--seed S] [--fault SPEC ...] [--no-plan-ahead] [--keep DIR] [--json]

Starts the simulator and gamerigd with its four services as real processes (daemon/sim_rig.py:
calibration through the camera service, then play), lets the rig play until N pieces have
appeared since play began (or the game ends, or the time limit), stops everything, and reports:

- from the ground truth (daemon/rig_truth.py): pieces, lines, lines_per_piece, game_over,
  glass_to_key_ms_p50/p99 (from the frame in which a piece appeared on the target's screen to
  the first relay closure its keyboard saw), view_to_key_ms_p50/p99 (the same from the first
  frame the camera sent showing it: what the rig adds beyond the camera's own latency),
  turn_first_pieces and glass_to_key_ms_p99_move_first (how many pieces' first key was a turn,
  and the p99 over the others: a piece whose placement needs only turns in the spawn column cannot
  turn before its first fall, a fall step after it appeared, so its first key waits for the game),
  frame_period_ms (the filmed frames' median interval);
- from the watchdog's wd.state (via gamerigd's status): deadline_misses, mismatches, resyncs,
  halts, max_halt_s, stale_frames;
- from the ai's heartbeat (via gamerigd's status; counted since the ai last started): steering,
  its closed loop's work (corrections, lost_keys, retargets, second_thoughts, drop_retries,
  blind_drops, stale_stops: services/ai.py; gravity_landings: services/ai_ahead.py);
- headless_lines_per_piece: the headless AI (games/tetris/headless.py, the same player) on the
  same piece sequence (the pieces the truth shows, in order) from an empty board.

--fault takes the simulator's fault specs (``drop=0.02``, ``freeze=0.5@60``; times counted from
the start of play; see ``gamerigctl sim --help``).  --keep DIR keeps the run's files: the rig's
config, gamerigd's and the simulator's logs, the ground truth (truth.jsonl) and every bus message
of the play (bus.jsonl, daemon/bus_recorder.py; 25 MB, 59,000 messages for 1000 pieces at level
10), to look into a lost game or a mismatch after the run.  Exit 0 after a run, 1 when the rig
could not be brought up, 2 for bad options.

Measured at commit e43b6c8 on the shared 2-core machine (simulator, gamerigd and its 4 services),
seed 0, the gamerig player, keys 30/30 ms (configs/gamerig-sim.yaml), planning ahead on (the
default, services/ai_ahead.py), 2026-12-03:

- ``--pieces 1000 --level 10 --preview --json``: pieces 1000, lines 398, deadline_misses 0,
  mismatches 0, resyncs 2, halts 1 (max 0.064 s: the camera late by 3 frames once),
  glass_to_key_ms p50 7.3 / p99 13.7 (turn_first_pieces 1), lines_per_piece 0.398 vs headless
  0.398.  No lost-key correction fired (``lost_keys`` 0: none was lost).
- ``--pieces 300 --level 5 --preview --json``: pieces 300, lines 118, deadline_misses 0,
  mismatches 0, resyncs 3, halts 2, max_halt_s 0.057, glass_to_key_ms p50 7.9 / p99 304.2;
  turn_first_pieces 16, glass_to_key_ms_p99_move_first 23.0 (a piece whose placement needs only
  turns in the spawn column cannot turn before its first fall: 0.3 s at level 5);
  lines_per_piece 0.3933 vs headless 0.3933.
- ``--pieces 300 --level 5 --preview --json --fault drop=0.02 --fault freeze=1@200p`` (2 % of the
  presses lost, the camera frozen for 1 s at the 200th piece, at level 8), two runs: pieces 300
  and 300, lines 119 and 115, deadline_misses 0 and 2, mismatches 1 and 1, halts 1 and 2,
  max_halt_s 1.035 and 1.028, lines_per_piece 0.3967 and 0.3833 vs headless 0.3933 (100.9 % and
  97.5 %).  With ``--seed 1`` (at bde447d): pieces 300, mismatches 0, max_halt_s 1.025,
  lines_per_piece 0.3933 vs 0.3967 (99.2 %).
- Harsher, two freezes at fixed times, the second in the level-10 phase (``--fault drop=0.02
  --fault freeze=1@60 --fault freeze=1@150``), ten runs at fe1da05-089fef8: seven played all 300
  pieces (lines per piece 0.3733-0.3967 vs 0.3933: 94.9-100.9 %; mismatches 0-5; max_halt_s
  1.027-1.09), three lost their games at pieces 263, 280 and 249 (90.3 %, 90.9 % and 87.8 %; one
  while tests ran on the same cores, one after the second freeze left two pieces unsteered at 50 ms
  a row; in the third, at level 6, a plan made ahead pressed its turn before the piece's first
  fall, which came a step later than predicted, so the game ignored it, and the piece was dropped
  unturned: why the closed loop did not correct it is not traced yet).
  Before fe1da05, 0a2dccf and f2eeb8c (a key lost early corrected at once, a resync re-landing a
  piece whose drop was sent, a lost drop seen by its height), two of ten such runs played all
  300.  While play is halted (the freeze) the piece in play falls unsteered: at level 10 that is
  a whole piece, often two.
- The same faults for 1,000 pieces at level 10 (``--pieces 1000 --level 10 --preview --json --fault
  drop=0.02 --fault freeze=1@200p --fault freeze=1@400p --fault freeze=1@600p --fault
  freeze=1@800p``): pieces 1000, lines 399, deadline_misses 0, mismatches 4, resyncs 13, halts 8
  (the four freezes, 1.05-1.06 s, and four camera hiccups of 50 ms), max_halt_s 1.062,
  glass_to_key_ms p50 7.4 / p99 59.5 (move first 15.7), lines_per_piece 0.399 vs headless 0.398;
  35 keys lost early were corrected as soon as their part ended.

Again at 089fef8 (an unconfirmed drop waits for the first fall after the piece was first seen):
level 10 x 1000 pieces 1000, deadline_misses 0, mismatches 0, glass_to_key_ms p99 23.6,
lines_per_piece 0.396 vs 0.398; level 5 x 300 mismatches 0, lines_per_piece 0.3967 vs 0.3933, p99
306.4 (turn_first_pieces 11; move first 76.7: three camera hiccups halted play, and the piece after
each was planned from sight); the faults run at ``freeze=1@200p`` played all 300 (0.3767 vs 0.3933,
95.8 %, max_halt_s 1.033).

On 2026-12-03 the shared machine ran slower (load 1.5-4.5 from other work) and at fcc2ab0 the
level-10 run lost its game in four runs of five (at pieces 46, 483, 540 and 583).  Each cause was
traced with a recording of the bus against the ground truth and fixed: the ai's first plan in play
loaded a compiled kernel its warm-up had not (a 1.25 s stall, five pieces unsteered: 3e73929); the
camera named a piece moving at every frame 0.11-0.14 s after its spawn, and its plan made ahead
was discarded and made again from a stale pose (d2567f4); after a drop the tracker looked for the
next piece in the top 4 rows only and, with the piece turned and lower, explained nothing for
0.75 s (7a211a1); the bench sent play before the watchdog, and then the camera, were ready for it
(ef97e78, 6eb8841, 28e1c5d); the view latency was trusted from 3 key samples, some 15 ms high at
the start (d1807b1); a piece first seen resting after a camera hiccup counted a deadline miss
(b37192a).  Level 10 x 1000 then: at d2567f4 pieces 1000, deadline_misses 1 (the start, since
fixed), mismatches 0, glass_to_key_ms p99 25.5, lines_per_piece 0.398 vs 0.398; at 089fa10
pieces 1000, deadline_misses 0, mismatches 2 (resyncs 6), halts 3 (camera hiccups of 50-55 ms, max
0.065 s), glass_to_key_ms p50 8.2 / p99 61.1, lines_per_piece 0.399 vs 0.398.  The p99 was past the
target again: on a tenth of the pieces the predicted spawn came a tick (50 ms) after the real one,
the gravity ticks estimated 12-24 ms early, so a drop timed just after a tick went down just
before it.  The cause: fall pictures 25-35 ms late, which modulo the 50 ms step look early, in the
ticks' envelope (a wider feedback correction, 12 ms, gave p99 56.9: not the cause).  Without them
(209d2af): pieces 1000, deadline_misses 0, mismatches 0 (resyncs 2), halts 1 (0.064 s),
glass_to_key_ms p50 7.5 / p99 24.0, lines_per_piece 0.397 vs 0.397.  At 209d2af too: level 5 x
300 deadline_misses 0, mismatches 0, lines_per_piece 0.3900 vs 0.3933 (99.2 %); the faults run at
``freeze=1@200p`` played all 300 (mismatches 1, max_halt_s 1.041, 0.3933 vs 0.3933); level 10 x
1000 with four freezes lost its game at piece 441, after the second (0.3741 vs 0.3968, 94 %,
max_halt_s 1.082): at level 10 a freeze leaves a piece or two unsteered.
Level 5 x 300 at 089fa10: deadline_misses 0, mismatches 0, lines_per_piece 0.3967 vs 0.3933.
The faults run (``--fault drop=0.02 --fault freeze=1@200p``) played all 300 at ef97e78
(0.3867 vs 0.3933, 98.3 %, max_halt_s 1.045) and lost its game at piece 287 at 089fa10 (0.3693
vs 0.3972, 93 %, max_halt_s 1.104).

On 2026-12-04 the faults runs at level 10 x 1000 were traced with a recording of the bus.  At seed
1 a 50 ms halt for a camera hiccup had the T in play planned again from a frame one turn behind the
halted plan's keys, and turned once too often (0c28c61: the keys its frame cannot show are applied
first); a lost drop found too late to press again let the next piece's plan made ahead go on
moving that piece and then the next one (5901ee8: an empty part stops them, the landing where it
falls is predicted).  At c63843a (the unknown piece after weighed by expectation at every height):
level 10 x 1000 pieces 1000, deadline_misses 0, mismatches 1 (after a camera hiccup; resyncs 5),
glass_to_key_ms p50 7.5 / p99 13.8, lines_per_piece 0.399 vs 0.398; level 5 x 300 mismatches 0,
0.3933 vs 0.3933, p99 303.4 (turn_first_pieces 11); with the four freezes, seeds 0, 1 and 2 lost
their games at pieces 833, 655 and 754 (0.3866 vs 0.3986, 0.3817 vs 0.3985, 0.3859 vs 0.3966: 96-97
%; mismatches 3 each; max_halt_s 1.061-1.070), after a freeze or a camera hiccup had left pieces
unsteered and a run of S and Z pieces came with the stack 8-12 rows high (the headless two-piece
player, replayed on the recorded boards, chose other placements than the rig on most of the last
15 pieces: some out of the keys' reach at 50 ms a row, some chosen without the piece after).
Before c63843a, seed 1 lost at pieces 366 and 351.  Two to four times a run the simulator's frame
loop, held off by the rig's processes, skipped two frames, the watchdog saw a stalled camera and
halted play for 50-100 ms; at cc41eef the loop runs at SCHED_FIFO when allowed.  Then: level 10 x
1000 pieces 1000, halts 0, mismatches 0, deadline_misses 0, glass_to_key_ms p50 7.9 / p99 13.5,
0.398 vs 0.398; with the four freezes at seed 0 pieces 1000, deadline_misses 0, mismatches 0
(resyncs 8), halts 7 (the four freezes and three 50 ms stalls), max_halt_s 1.067, p99 18.6, 0.399
vs 0.398; at seed 2 pieces 1000, deadline_misses 1, mismatches 1, max_halt_s 1.080, p99 74.7, 0.399
vs 0.399; at seeds 3 and 4 (0ef024d) pieces 1000, deadline_misses 0 and 0, mismatches 1 and 0,
max_halt_s 1.064 and 1.065, p99 56.0 and 39.8, 0.398 vs 0.399; at seed 1 game over at piece 356 (0.368 vs 0.3961, 93 %), as in every seed-1 run that
day: the freeze at piece 200 leaves the stack uneven for the run of S and Z pieces near 350.

That loss was a tower of upright Z pieces: chosen without the piece after them (a plan made ahead
never knows it), by expectation over all seven, where the two-piece search, knowing another Z comes,
lays each flat.  Since 784e904 the preview, once it shows that piece, has the player choose again,
and the confirmed piece is steered on there when its keys still fit (services/ai.py's second
thought; since d9e3217 only with room for two more confirmations: with room for one, 4 of a seed-2
run's 8 mismatches followed one of its 163 second thoughts, their drops late in the fall).  An
offline model of level-10 play with faults (tests/faults_model.py: the Planner planning ahead, two
pieces unsteered every 200, one lost key in 200 left uncorrected, 30 sequences of 1000 pieces) lost
19 games before, 15 with the second thought as the ai takes it, 7 with room for one confirmation,
and 4 if the piece after were known when planning (the model leaves out the late drops).  At
c0f83e4: level 10 x 1000 pieces 1000, deadline_misses 0, mismatches 0 (resyncs 3), glass_to_key_ms
p50 7.7 / p99 20.2, 0.398 vs 0.398, steering second_thoughts 100; level 5 x 300 mismatches 0, 0.3967
vs 0.3933, p99 305.1 (turn_first_pieces 7).  With the four freezes: seed 2 (d9e3217) pieces 1000,
deadline_misses 0, mismatches 1, max_halt_s 1.062, 0.399 vs 0.399; seed 3 (c0f83e4) game over at 655
(0.3817 vs 0.3969) in one run, 1000 pieces (mismatches 2, 0.395 vs 0.398) in another; seed 4
(c444acd, the same code) pieces 1000, deadline_misses 0, mismatches 1, max_halt_s 1.067, 0.400 vs
0.399; seed 1 (d9e3217) game over at 627 (0.3812 vs 0.3987, 96 %; 641 at 784e904, 651 before a
second thought needed a confirmation of its own), after the freeze at piece 600 found the stack 7-9
rows high, and a run of S and Z pieces.  At 784e904 seed 0 played 1000 pieces (0.399 vs 0.398), seed
2 1000 (8 mismatches) in one run and lost at 250 in another.

Since 141b5d0 the gamerig player doubles its landing height's weight at level 10 (``at_speed``: the
model's games ended early 66 of 180 times against 89).  At 1fb0d6f (the same code): level 10 x
1000 pieces 1000, deadline_misses 0, mismatches 0 (resyncs 3), glass_to_key_ms p50 8.0 / p99
13.3, 0.399 vs 0.398; level 5 x 300 mismatches 0, 0.3967 vs 0.3933, p99 307.0 (turn_first_pieces
11).  With the four freezes: seeds 2-6 pieces 1000 (deadline_misses 0, 0, 1, 0, 2; mismatches 0,
1, 4, 0, 5; max_halt_s 1.063-1.104; 0.398-0.399 vs 0.398-0.399); seed 0 game over at 261 (0.3602
vs 0.3946, 91 %: an I lost a move with no time left to correct it and stood upright on the second
column) and 1000 pieces (mismatches 1) in another run; seed 1 game over at 798 (141b5d0; 11
mismatches), 615 (a J's drop lost late: the next piece's plan moved it three columns, the ai moved
it back two) and 719 (10 mismatches), and played 1000 pieces (mismatches 3, 0.399 vs 0.399) in a
fourth run, whose bus was recorded: 10 of its 13 lost drops' ways back stopped the next piece's
plan while it ran, each published 2-21 ms after that plan's latest key; one, 3 ms after the third
of three moves right, had two moves left (planned before that key's relay.key came), and the
closed loop corrected the column in time, as it had no time to at 615.

At b23e30e a lost drop first stops the keys after it (an empty part) and the way back is planned
once the relay has answered, from every key it reported: seed 1 game over at 717 (mismatches 4,
0.3835 vs 0.3975), a tower of upright Z pieces planned ahead, whose second thoughts came too late
(of the run's 206 pieces the two-piece player would have put elsewhere, 109 landed where planned
ahead).  Since 586ab5d a second thought is taken at once (services/ai.py's ``_think_early``), and
since 0f31c38 frames from before the counted keys acted do not count as lost keys of the part
after them (at 586ab5d seed 2 lost at 526 with 7 mismatches and 39 lost-key corrections; seed 1
at 663; seed 0 played 1000, mismatches 4).  At 0f31c38: level 10 x 1000
pieces 1000, deadline_misses 0, mismatches 0 (resyncs 2), glass_to_key_ms p50 8.2 / p99 17.8,
0.399 vs 0.398, second_thoughts 260; level 5 x 300 mismatches 0, 0.3967 vs 0.3933, p99 305.6
(turn_first_pieces 9).  With the four freezes, seeds 0, 1, 2, 3 pieces 1000 each (deadline_misses
0, 0, 1, 1; mismatches 2, 1, 1, 4; max_halt_s 1.064-1.083; 0.398-0.400 vs 0.398-0.399), seeds 4 and 6
too (deadline_misses 2 and 3, mismatches 2 and 8, max_halt_s 1.067 and 1.074, 0.400 vs 0.399 and
0.399 vs 0.399); seed 5 game over at 584 (0.3801 vs 0.399, 95 %): a J's drop lost late in its fall,
and the key after it too, left it flat over a three-wide well.

Fixed since: a key counted before an early second thought may be the lost one (7da9503: a frame
off the new part's way had "corrected" an L on target astray); a frame after a lost drop may show
that a key since was lost too (9353552: seed 5's J, taken for turned twice); a piece with no time
left to correct is predicted where it falls (7de5faf: 3 of seed 6's 8 mismatches).  At fff7ecd:
level 10 x 1000 pieces 1000, deadline_misses 0, mismatches 0 (resyncs 5, halts 4, max_halt_s
0.058: camera stalls), glass_to_key_ms p50 8.1 / p99 14.0, 0.398 vs 0.398; level 5 x 300
mismatches 0, 0.3967 vs 0.3933, p99 307.2 (turn_first_pieces 9; move-first p99 78.2).  With the
four freezes, seeds 5, 6, 3, 0, 2, 4 pieces 1000 each (deadline_misses 1, 2, 0, 1, 1, 2; mismatches
1, 3, 1, 0, 2, 1; max_halt_s 1.062-1.069; 0.399-0.400 vs 0.398-0.399); seed 1 game over at 314
(0.3631 vs 0.3949, 92 %): an L lost a move, corrected, then its drop late in the fall, and the next
piece's plan made ahead turned it onto the wall column before the loss showed.

Since 0332fe1 (eed312a: a fall step and 0.35 s) a piece planned ahead and confirmed on target when
gravity lands it within 0.4 s at level 10 is left to gravity, its drop not pressed
(services/ai_ahead.py; ``gravity_landings`` 97-156 a run).  In the seven faults runs the drops lost
too late to press again fell from 15 to 2.  At eed312a: level 10 x 1000 pieces 1000,
deadline_misses 0, mismatches 0 (resyncs 1), glass_to_key_ms p50 8.4 / p99 12.7, 0.398 vs 0.398;
level 5 x 300 deadline_misses 0, mismatches 1 (an L whose two turns a plan made ahead pressed
before its first fall, at level 8), 0.3900 vs 0.3933 (99.2 %), p99 305.3 (turn_first_pieces 9;
move-first p99 74.3).  With the four freezes, seeds 1 (0332fe1), 0, 2, 4, 5, 6 pieces 1000 each
(deadline_misses 3, 1, 1, 1, 1, 2; mismatches 1, 3, 1, 0, 1, 2; max_halt_s 1.062-1.113;
0.396-0.400 vs 0.397-0.399); seed 3 game over at 786 (0.388 vs 0.3982, 97 %): a Z lost a move
with no time left to correct it, then the I after it lost one late in its fall, and the pieces
planned on the boards predicted for them made three mismatches in a row.  At a3a1dbe (the same
code) seeds 3, 7 and 8 played 1000 pieces each (deadline_misses 2, 4, 2; mismatches 0, 1, 0;
max_halt_s 1.062-1.067; 0.398-0.400 vs 0.398-0.399).

Since 66e452f a resync whose stack blocks the keys of the part under way, or lands the piece
before they are done, stops them and steers the piece on from where they put it (``stale_stops``;
in seed 3's lost game above, the J after the I was blocked on its way by the I, which had landed
off its prediction, and its drop, still to come, dropped the next piece in its spawn column).  At
66e452f: level 10 x 1000 pieces 1000, deadline_misses 0, mismatches 0 (resyncs 2), glass_to_key_ms p50 7.9 / p99 13.4, 0.398 vs 0.398;
level 5 x 300 mismatches 0, 0.3967 vs 0.3933, p99 307.0 (turn_first_pieces 9; move-first p99
74.0).  With the four freezes, seeds 3, 1, 9, 10, 11, 12, 13 pieces 1000 each (deadline_misses 0,
2, 1, 3, 1, 2, 1; mismatches 1, 2, 3, 1, 1, 1, 3; max_halt_s 1.061-1.116; 0.392-0.400 vs
0.397-0.399), and seeds 15, 16, 17 too (deadline_misses 2, 0, 1; mismatches 0, 0, 2); seed 14 game
over at 952 (0.3876 vs 0.3992, 97 %): after two mismatches on a stack some 11 rows high the ai
placed none of the last six pieces, for which the planner finds plans on the true boards (80c88b2
logs the frame's age and the model's stack with the warning).  ``stale_stops`` was 0 in each run:
the case is rare, and these runs show the change costs nothing, not what it saves.  Again at
3851189 (the ai as at 66e452f), recorded on the bus: seeds 14, 18, 19, 20, 21, 22 pieces 1000
each (deadline_misses 2, 0, 0, 2, 1, 2; mismatches 2, 1, 1, 1, 0, 3; max_halt_s 1.061-1.069;
0.396-0.399 vs 0.397-0.399; stale_stops 0).  Seed 14's lost run had lost 7 of its last 127
presses (5.5 %, against 2 % on average) while the holes under its stack grew from 1 to 24 over
its last 25 pieces: a burst of lost keys, not a fault the run repeats.

On 2026-12-06 the glass-to-first-key tail of the days before (level 10 x 1000 without faults,
p99 82-94 ms) came from CPU time, not the camera: the ai's key checks (15-90 ms handlers, ab6c7ea
makes them 7 times faster), this bench re-reading the whole truth file every half second (up to
60 % of a core late in a run, 6a0275a), drops timed as if the next piece's plan were at the relay
when they come up (f7a0079), and the simulator's board thread at normal priority (3cc5b89 ran it
at SCHED_FIFO; reverted in af26680, it starved the simulator's control and fault tests).  Level
10 x 1000: at 6a0275a p50 9.6 / p99 27.6, 0 deadline misses, 0 mismatches; at 3cc5b89 (``--keep``)
pieces 1000, deadline_misses 0, mismatches 0 (resyncs 3), max_halt_s 0.061, glass_to_key_ms p50
8.4 / p99 12.6, 0.399 vs 0.399.  The board thread is at SCHED_FIFO again since e844f6d (aedb44c
fixed the starvation: its select lock was re-taken at every turn), and since 8602d9a the spawn
after a drop that raises the level is reckoned at the dropped piece's fall step (a level-5 run
had pressed a plan made ahead's first key before the spawn at 9 -> 10).  At 8602d9a level 10 x
1000 pieces 1000, deadline_misses 0, mismatches 0 (resyncs 1), glass_to_key_ms p50 8.3 / p99
13.1, 0.399 vs 0.399; level 5 x 300 mismatches 0, 0.400 vs 0.3933, p99 303.2 (turn_first_pieces
7; move-first p99 79.4).  At 4f2e20e with the four freezes, seeds 39, 40, 41, 42 pieces 1000 each
(deadline_misses 2, 2, 2, 0; mismatches 1, 1, 2, 0; max_halt_s 1.072-1.130; 0.399-0.400 vs
0.397-0.399).

``--no-plan-ahead`` (every piece planned once the camera shows it), 2026-12-02: level 10 x 1000
lost the game at piece 961 (6 deadline misses; glass_to_key p50 81 / p99 131 ms: the camera alone
shows the screen three frames late); level 5 x 300 p50 81 / p99 381 ms, lines per piece 0.3967 vs
0.3933.  Keys 60/60 ms (a real board's, ``--hold-ms 60 --gap-ms 60``) lose level 10 within 23
pieces: sideways moves of 120 ms a key do not reach far columns at 50 ms a row.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from gamerig.games.tetris.engine import ROTATE
from gamerig.games.tetris.headless import play_game
from gamerig.games.tetris.players import Player
from gamerig.games.tetris.rules import Rules
from gamerig.games.tetris.sequence import FixedPieces
from gamerig.games.tetris.skins import skin as skin_by_name
from gamerig.hardware.sim.faults import parse_fault
from gamerig.hardware.sim.machine import FAULTS

from .bus_recorder import BusRecorder, recording
from .player_config import load_player
from .rig_truth import RunTruth, TruthReader, percentile, read_truth
from .sim_rig import RigFailed, SimRig, SimRigOptions

USAGE_ERROR = 2
#: Give up waiting for the pieces after this many seconds per piece (the rig stalled).
SECONDS_PER_PIECE_LIMIT = 5.0
POLL_S = 0.5
#: With --keep: the bus's messages during play, one JSON object a line (daemon/bus_recorder.py).
BUS_RECORD = "bus.jsonl"
#: The ai's heartbeat figures reported as "steering": what its closed loop did to the plans.
STEERING_STATS = ("corrections", "lost_keys", "retargets", "second_thoughts", "drop_retries", "blind_drops", "gravity_landings", "stale_stops")

def run_bench(options: SimRigOptions, pieces: int, workdir: Path, progress: Any = None, record_bus: bool = False) -> dict[str, Any]:
    """Play ``pieces`` pieces with the whole rig and return the report (see the module docstring);
    with ``record_bus``, every bus message of the play goes to ``workdir``/bus.jsonl as well."""
    rig = SimRig(options, workdir)
    with rig, _bus_record(rig, workdir) if record_bus else nullcontext() as recorder:
        started = time.monotonic()
        limit = started + 60.0 + SECONDS_PER_PIECE_LIMIT * pieces
        counted = 0
        so_far = TruthReader(rig.truth_path, rig.play_started_t or 0.0)
        while time.monotonic() < limit and rig.alive():
            if recorder is None:
                time.sleep(POLL_S)
            else:
                recorder.record_for(POLL_S)
            counted = so_far.read().pieces
            if progress is not None:
                progress(counted)
            if counted > pieces or rig.truth().get("over"):
                break
        status = rig.status()
        stopped_early = counted <= pieces and not rig.truth().get("over")
    truth = read_truth(rig.truth_path, rig.play_started_t or 0.0, max_pieces=pieces)
    report = summarize(truth, status, options, pieces)
    report["stopped_early"] = stopped_early
    report["wall_s"] = round(time.monotonic() - started, 1)
    return report


def _bus_record(rig: SimRig, workdir: Path) -> AbstractContextManager[BusRecorder]:
    """A recorder of every message on ``rig``'s bus into ``workdir``/bus.jsonl, late ones too."""
    return recording(rig.gamerigd.subscriber([""], keep_expired=True), workdir / BUS_RECORD)


def summarize(truth: RunTruth, status: dict[str, Any], options: SimRigOptions, pieces: int) -> dict[str, Any]:
    """The report from the truth of the run and gamerigd's last status."""
    watchdog = status.get("watchdog") or {}
    counters = watchdog.get("counters") or {}
    ai_stats = ((status.get("services") or {}).get("ai") or {}).get("stats") or {}
    placed = min(truth.pieces, pieces)  # the piece in play at the end has not been placed
    player = Player(load_player(options.player), Rules("standard", 10, 20))
    headless = _headless(player, truth.sequence, options, placed)
    turn_first = [delay for delay, key in zip(truth.glass_to_key_s, truth.first_keys) if key == ROTATE]
    move_first = [delay for delay, key in zip(truth.glass_to_key_s, truth.first_keys) if key != ROTATE]
    return {
        "pieces": placed,
        "lines": truth.lines,
        "deadline_misses": counters.get("deadline_misses"),
        "mismatches": counters.get("mismatches"),
        "resyncs": counters.get("resyncs"),
        "halts": counters.get("halts"),
        "max_halt_s": watchdog.get("max_halt_s"),
        "stale_frames": counters.get("stale_frames"),
        "steering": {name: ai_stats.get(name) for name in STEERING_STATS},
        "glass_to_key_ms_p50": _ms(percentile(truth.glass_to_key_s, 0.5)),
        "glass_to_key_ms_p99": _ms(percentile(truth.glass_to_key_s, 0.99)),
        "turn_first_pieces": len(turn_first),
        "glass_to_key_ms_p99_move_first": _ms(percentile(move_first, 0.99)),
        "view_to_key_ms_p50": _ms(percentile(truth.view_to_key_s, 0.5)),
        "view_to_key_ms_p99": _ms(percentile(truth.view_to_key_s, 0.99)),
        "frame_period_ms": _ms(truth.frame_period_s),
        "lines_per_piece": round(truth.lines / placed, 4) if placed else None,
        "headless_lines_per_piece": headless,
        "game_over": truth.game_over,
        "level": options.level,
        "level_end": truth.level_end,
        "preview": options.preview,
        "faults": list(options.faults),
        "keys": options.keys,
    }


def _headless(player: Player, sequence: list[str], options: SimRigOptions, pieces: int) -> float | None:
    """Lines per piece of the headless AI on ``sequence``'s first ``pieces`` pieces."""
    if not pieces or not sequence:
        return None
    result = play_game(
        player, Rules("standard", 10, 20), FixedPieces("".join(sequence)), preview=options.preview,
        max_pieces=pieces, initial_level=options.level,
    )
    return round(result.lines / max(1, result.pieces), 4)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def format_report(report: dict[str, Any]) -> str:
    """The report as aligned lines."""
    width = max(len(key) for key in report)
    return "\n".join(f"{key:<{width}}  {value}" for key, value in report.items())


def run(args: argparse.Namespace) -> int:
    """`gamerigctl bench rig`; returns the exit code."""
    try:
        if args.pieces < 1:
            raise ValueError(f"--pieces must be at least 1, got {args.pieces}")
        if not 1 <= args.level <= 10:
            raise ValueError(f"--level must be 1..10, got {args.level}")
        for spec in args.fault:
            parse_fault(spec, FAULTS)
        skin_by_name(args.skin)  # the skin's own error lists the known ones
    except ValueError as exc:
        print(f"gamerigctl bench rig: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    keys = {name: value for name, value in (("hold_ms", args.hold_ms), ("gap_ms", args.gap_ms)) if value is not None}
    options = SimRigOptions(
        level=args.level, preview=args.preview, seed=args.seed, skin=args.skin, player=args.player, faults=tuple(args.fault), keys=keys,
        play={"plan_ahead": False} if args.no_plan_ahead else {},
    )
    progress = None if args.json else (lambda n: print(f"\rpieces {n}/{args.pieces}", end="", file=sys.stderr, flush=True))
    with tempfile.TemporaryDirectory(prefix="gamerig-bench-rig-") as workdir:
        try:
            report = run_bench(options, args.pieces, Path(args.keep or workdir), progress, record_bus=args.keep is not None)
        except RigFailed as exc:
            print(f"gamerigctl bench rig: {exc}", file=sys.stderr)
            return 1
    if progress is not None:
        print(file=sys.stderr)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `rig` to gamerigctl bench's benchmarks."""
    parser = subparsers.add_parser(
        "rig", help="the whole rig (simulator + gamerigd + services): pieces, lines, latency, faults",
        description="Run the simulator and gamerigd with its services, play N pieces, and report what the "
        "simulator's ground truth and the watchdog saw.",
    )
    parser.add_argument("--pieces", type=int, default=100, help="pieces to play (default 100)")
    parser.add_argument("--level", type=int, default=5, help="the simulator's level 1..10 (default 5)")
    parser.add_argument("--preview", action="store_true", help="the simulator shows the next piece")
    parser.add_argument("--seed", type=int, default=0, help="the simulator's seed (pieces and camera; default 0)")
    parser.add_argument("--player", default="gamerig", help="the ai's player (default gamerig)")
    parser.add_argument("--skin", default=SimRigOptions.skin, help=f"the simulator's screen skin (default {SimRigOptions.skin})")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="SPEC",
        help="a simulator fault NAME[=VALUE][@SECONDS|@PIECESp after play starts] (repeatable), e.g. drop=0.02, freeze=0.5@60, freeze=1@200p",
    )
    parser.add_argument("--hold-ms", type=int, help="key press hold (default: configs/gamerig-sim.yaml's)")
    parser.add_argument("--gap-ms", type=int, help="gap between key presses (default: configs/gamerig-sim.yaml's)")
    parser.add_argument(
        "--no-plan-ahead", action="store_true", help="play.plan_ahead false: every piece planned once the camera shows it (to compare)"
    )
    parser.add_argument(
        "--keep", metavar="DIR", help=f"keep the run's files (config, logs, truth) in DIR, with every bus message of the play in DIR/{BUS_RECORD}"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)
