"""Typed values parsed once, compared as values, printed in one form (STYLE.md rule 19)."""
