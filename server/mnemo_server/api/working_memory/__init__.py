"""WorkingMemoryService: working memory per conversation (servicer, request rules)."""
