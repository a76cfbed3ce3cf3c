"""``dolmen.cli``: one module per command group, loaded only when its command runs."""
