"""Boot chain and AI stack integrity: signed manifests, verify, and TPM attestation.

See docs/integrity.md. Manifests are signed by a key provider (dolmen.keys);
``attest/`` replays the TPM's measured-boot event log and checks quotes.
"""
