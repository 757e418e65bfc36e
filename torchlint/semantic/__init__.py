"""The semantic model the engine owns and rules query: scopes and bindings, the module model
(nn.Module subclasses, their layers and forward), function summaries and the calls between
them, within a file (`torchlint.semantic.model`) and across the project
(`torchlint.semantic.project`). Its device domain: where a CPU tensor from a factory meets a
device tensor (`devices`), which bodies to read and from what (`placement`: data loading,
callers that move a result, moved models), and which class attributes hold parameters
(`parameters`). Rules ask it questions; they carry no interpreter of their own.
"""
