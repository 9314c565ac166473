"""Conversations in SQL: the conversation rows (``conversation``), the history (``messages``),
compaction, working memory, expired temporary conversations, and their reads (``store``)."""
