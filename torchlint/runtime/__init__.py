"""`torchlint run`: execute the user's code in a child process under runtime probes.

The parent side (``parent``, ``merge``, ``report``) never imports torch or the user's code; the
child (``child``, ``devices``) writes JSON-lines evidence that the parent matches to static
findings.

README.md in this folder draws the path of one run, step by step, and where each step lives, and
the order of the subpackages' layers.
"""
