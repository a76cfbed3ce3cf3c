"""Performance tuning: profiles, one module per setting kind, the journaled engine."""
