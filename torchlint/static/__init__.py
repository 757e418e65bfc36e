"""The static half: discover, read, prefilter, parse once, one traversal, suppress, report."""
