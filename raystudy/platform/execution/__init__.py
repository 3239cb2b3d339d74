"""Execution: the request and its plan, the Tuner, trainables, Ray contexts, in-process
runs, preflight, placement, progress."""
