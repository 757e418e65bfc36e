"""torchlint's built-in plugins, installed as ``torchlint.plugins``.

Each subpackage is registered through an entry point in the ``torchlint`` group, exactly as
a third-party plugin package would be.
"""
