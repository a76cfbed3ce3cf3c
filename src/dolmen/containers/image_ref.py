"""Image references: what ``containers run IMAGE`` and ``setup --bench-image`` accept.

An OCI image reference, as the distribution project's grammar (``reference.go``) writes it::

    [registry[:port]/]name[:tag][@sha256:<64 hex>]

- ``name`` is one or more ``/``-joined components of lowercase ``[a-z0-9]+`` runs joined
  by ``.``, ``_``, ``__`` or ``-``; the first component is the registry only when it
  holds a ``.`` or a ``:``, or is ``localhost`` (``nvcr.io/nvidia/pytorch``), else it is
  a name component and lowercase like the rest (``Upper/x`` is refused, as docker does);
- ``tag`` is ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``; the whole name at most 255 characters.

The HPC runtimes also take what is no registry reference: a transport prefix
(``docker://`` is followed by a reference; ``oras://``, ``library://``, ``shub://``,
``docker-archive:``, ``oci-archive:`` by the runtime's own form), or an image file
(an absolute path, ``*.sif``, ``*.sqsh``). Those are refused only for control characters
or white space at the ends, which no file name a shell user typed holds.
"""

from __future__ import annotations

import re

SCHEMES = ("docker://", "oras://", "library://", "shub://", "docker-archive:", "oci-archive:")
FILE_SUFFIXES = (".sif", ".sqsh")
RULE = "[registry[:port]/]name[:tag][@sha256:<64 hex>], name in lowercase a-z 0-9 and . _ -"

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_REFERENCE = re.compile(
    rf"(?:(?P<host>{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?)/)?"
    rf"(?P<name>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@sha256:[0-9a-f]{64})?",
    re.ASCII,
)
_NAME_MAX = 255
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_reference(image: str) -> bool:
    """Whether ``image`` is an OCI image reference (the module docstring's grammar)."""
    m = _REFERENCE.fullmatch(image)
    if m is None:
        return False
    host = m.group("host")
    if host is not None and not ("." in host or ":" in host or host == "localhost"):
        # no registry after all: the first component is part of the name, lowercase
        if re.fullmatch(_COMPONENT, host, re.ASCII) is None:
            return False
        name = f"{host}/{m.group('name')}"
    else:
        name = m.group("name")
    return len(name) <= _NAME_MAX


def image_problem(image: str) -> str | None:
    """Why ``image`` is no image a runtime can start (one line naming the rule), or None."""
    scheme = next((s for s in SCHEMES if image.startswith(s)), None)
    if (scheme is not None and scheme != "docker://") or image.startswith("/"):
        return None if _is_path(image.removeprefix(scheme or "")) else _not(image, "file")
    if image.endswith(FILE_SUFFIXES) and "/" not in image and _is_path(image):
        return None  # pytorch.sif in the working folder
    if is_reference(image.removeprefix("docker://")):
        return None
    return _not(image, "reference")


def _is_path(text: str) -> bool:
    return bool(text) and text.strip() == text and _CONTROL.search(text) is None


def _not(image: str, what: str) -> str:
    if what == "file":
        return f"{image!r} is not an image file (a path without control characters)"
    return f"{image!r} is not an image reference ({RULE})"
