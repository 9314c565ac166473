"""The gRPC edge: thin servicers, resource names, validation, pagination, conversions."""
