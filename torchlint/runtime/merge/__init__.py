"""Matching the child's evidence to the static findings (plain data, no torch): below the
report, the per-rank merge and the parent, which all read its results.

``matching`` decides each static finding's status (confirmed, not reproduced, not reached,
not probed) and turns the evidence no finding explains, a crash and a timeout into
runtime-only findings; ``child_result`` is what it reads: one child run as the parent saw it."""
