"""Distributed runs (`torchlint run --nproc-per-node N`): one probed child per rank.

Parent side, plain data: ``launch`` builds the command that starts the ranks through
``agent`` (torch's launcher, quieted), ``monitor`` stops them once their collectives diverge,
``divergence`` says where, and ``report`` merges the ranks' evidence into one report. Child
side (torch): ``rank`` sets up one rank, ``collectives`` records the collectives it calls.
"""
