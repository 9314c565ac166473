"""The change feed in SQL (``changes``), telling watches that it moved (``notify``), and its
reads (``store``)."""
