"""The kernel session: the one object per kernel that owns the per-kernel state and runs
checkpoint and restore as phases (kernel); the timeline's rules: the names and labels
of automatic points, which checkpoint a restore without a name brings back
(timeline); what the session says of the browser storage a store lives in and of
checkpoints whose data it lost (storage_status)."""
