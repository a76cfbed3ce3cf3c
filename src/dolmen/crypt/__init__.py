"""Encrypted storage: LUKS2 posture, provider-wrapped keys in LUKS2 tokens, per-job scratch.

See docs/crypt.md. Keys come from a key provider (dolmen.keys); every change goes
through a plan, an apply with a way back, and audit events.
"""
