"""Output formats live in plugins (`torchlint.plugins.formats`); this package is reserved
for format helpers shared by several of them."""
