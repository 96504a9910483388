"""The checkpoint side of serialization: which names a checkpoint takes (selection), how
variables that share objects are grouped (groups), the picklers a group is tried with
(picklers), the global random generators' state (random_state), and the namespace
written as one container, group by group (container)."""
