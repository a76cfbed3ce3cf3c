"""Generated modules of `python -m dolmen.frozen`: one per package, the compiled methods of
its @frozen classes (see dolmen/frozen/__init__.py)."""
