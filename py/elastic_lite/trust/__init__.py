"""What restoring a checkpoint may import or call: the rules and the guarded unpicklers
(rules), module attributes computed by a module's own __getattr__ (module_attrs), and
which checkpoint bytes this process made itself (made_here). Never imports the
picklers, the pipeline or the stores (.importlinter)."""
