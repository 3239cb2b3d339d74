"""Runs: run folders (local or object storage), the trial record, reading results back, the end-of-run step."""
