"""torchlint: find the PyTorch bugs that cost days."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # `from torchlint import hookimpl` for plugin authors, without importing pluggy eagerly.
    if name == "hookimpl":
        from torchlint.pluginmanager import hookimpl

        return hookimpl
    raise AttributeError(name)
