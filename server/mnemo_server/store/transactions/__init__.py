"""transactions."""
