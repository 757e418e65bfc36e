"""`torchlint server`: the static rules in an editor, over the Language Server Protocol.

Only `server.py` imports pygls; the other modules are plain functions over torchlint's own
data, so `torchlint check` never pays for the protocol library and the pieces are testable
without a client.
"""
