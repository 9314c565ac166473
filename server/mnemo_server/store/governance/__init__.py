"""Governance in SQL: consent, the memory switch and the memory gate (``consent``), analytics
events (``events``), and their reads (``store``)."""
