"""Runs: run folders (local or object storage), the trial index, reading results back."""
