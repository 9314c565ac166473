"""working_memory."""
