"""The semantic model the engine owns and rules query: scopes and bindings, the module model
(nn.Module subclasses, their layers and forward), function summaries and the calls between
them, within a file (`torchlint.semantic.model`) and across the project
(`torchlint.semantic.project`). Rules ask it questions; they carry no interpreter of their own.
"""
