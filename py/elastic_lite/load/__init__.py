"""The restore side of serialization: checkpoint bytes validated by the C core, judged,
then unpickled record by record into the namespace (loader), and read from a store one
record at a time when the checkpoint is large (streamed)."""
