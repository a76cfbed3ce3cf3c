"""Typed values parsed once, compared as values, printed in one canonical form (STYLE.md rule 19)."""
