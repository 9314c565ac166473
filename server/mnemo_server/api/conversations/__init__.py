"""ConversationService: conversations and their canonical history (servicer, request rules)."""
