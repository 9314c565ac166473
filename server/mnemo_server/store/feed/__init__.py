"""feed."""
