"""MemoryService: long-term memory, recall, context, extraction (servicer, request rules,
request parsing, conversions)."""
