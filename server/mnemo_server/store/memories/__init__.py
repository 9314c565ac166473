"""Long-term memory in SQL: saving (``writes``), updating, erasing, versions, reads, recall
(``recall``, ``text_index``, ``vector_cache``), extraction candidates, and their reads
(``store``)."""
