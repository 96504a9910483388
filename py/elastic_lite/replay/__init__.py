"""The recorded cells and their replay: the recorder of what every cell read, wrote and
did (recorder), what a cell's code does, read from its syntax tree (cell_ast, with
the tables of effect_rules), planning and running a replay (engine), and replay
wired into checkpoint and restore (steps)."""
