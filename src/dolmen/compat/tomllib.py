"""tomllib (3.11+) or its source, tomli, on 3.10: ``from dolmen.compat import tomllib``.

A module of its own so that importing ``dolmen.compat`` loads no TOML parser (a plain
``validate`` on a host without a dolmen.toml stays lean: tests/cli/test_validate.py).
"""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, load, loads
else:  # pyproject: tomli; python_version < "3.11" (the same parser, tomllib's origin)
    from tomli import TOMLDecodeError, load, loads

__all__ = ["TOMLDecodeError", "load", "loads"]
