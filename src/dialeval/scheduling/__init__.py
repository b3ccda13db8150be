"""Scheduling: which unit an annotator gets next, and -- for pairwise methods -- why that bot pair.

Why was this pair chosen? Follow one assignment, outermost first:

1. **assign.py** -- ``assign_locked`` takes the study's write lock, expires abandoned assignments,
   enforces the caps (``units_per_annotator``, an open study's ``daily_cap``) and asks the method's
   ``choose(view)`` for a unit. Without ``adaptive:`` the method picks by balance alone
   (``least_loaded`` over ``group_load`` per bot pair, then ``conversation_load``): the pair with the
   fewest annotations so far, ties at random.
2. **plan.py** -- with ``adaptive.enabled``, ``choose`` first asks ``adaptive_plan``. It replays the
   people's judgments (not the LLM judges', not filtered annotators' -- annotator_rules.is_filtered)
   into one AdaptiveState per question. If every question's order is decided, or the
   ``max_judgments`` budget is spent, nobody gets more work (event ``adaptive-stopped``).
   Otherwise ``AdaptivePlan.pick`` takes the least-loaded open question and draws the pair.
3. **state.py** -- ``AdaptiveState.next_pair``: among the pairs whose order is still open (not decided
   by their anytime-valid test at alpha/m, not implied by transitivity), the selection rule
   (``adaptive.selection``: uniform, variance-reduction, rank-overlap; stats/active.py) draws one,
   with a generator seeded from (study seed, assignment counter) so a replay draws the same pair.
   When the annotator has seen every unit of that pair, the least-loaded open pair is used.
4. **tickets.py / pools.py** -- with ``adaptive.judge`` (judge-guided), the pair is chosen as above,
   and the *unit* within it is the pair's next free ticket: ticket k is a draw (seeded by study seed,
   pair, k) from the frozen pool, weighted by the square root of the judge's doubt.

So the answer to "why this pair?" is, in order: the study had not stopped; this pair's order was
still open; the selection rule drew it (or it was the least used one this annotator could get).
The report's ``stopping`` table (analysis/stopping.py) replays the same judgments through the same
``study_state`` and shows, per pair, n, the always-valid p-value and when it was decided.

What the scheduler keeps in memory between assignments is in process_state.py. Pure statistics
(the sequential tests, the selection rules, the betting martingale) live in stats/.

The submodules are imported on use: this package's ``__init__`` imports nothing, so a report that
reads the adaptive state (state.py, pools.py) does not load the store.
"""
