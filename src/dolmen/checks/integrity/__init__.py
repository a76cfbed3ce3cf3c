"""Integrity checks: the boot chain and the AI stack are the files a signed manifest holds
(docs/integrity.md). Gating, unlike the security posture checks: a site that names a
manifest asks for a node whose files changed to be taken out of service."""
