"""``CheckpointService``: servicer, request rules, conversions."""
