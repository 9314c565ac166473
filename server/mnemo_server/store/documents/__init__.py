"""Documents (``DocumentService``): rows, units of work, reads."""
