"""TPM attestation: the measured-boot event log, its replay, quotes and PCR policy."""
