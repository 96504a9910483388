"""Change detection between checkpoints: what need not be written again. The memory of
the previous checkpoint's records and the proofs that a group is unchanged
(tracker), and the fast path that knows from the code that ran which variables it
could have changed (fast_path). Not the recorded cells (replay.recorder), not the
timeline of points (session.timeline)."""
