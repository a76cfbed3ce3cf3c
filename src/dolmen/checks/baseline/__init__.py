"""``baseline.*``: every deviation of this host from a known-good baseline (--baseline FILE)."""
