"""Use cases and policies of Mnemo, in plain Python (no gRPC, no SQL)."""
