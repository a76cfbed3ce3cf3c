"""``security.*`` checks: advisory boot-chain and kernel-integrity posture, encrypted storage."""
