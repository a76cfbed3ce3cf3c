"""dolmen: the DGX OS layer for any GPU Linux host."""

__version__ = "0.1.0"
