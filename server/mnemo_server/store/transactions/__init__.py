"""The one transaction helper (``database.Database``), what a write works with (``tx``), how a
command becomes its unit of work (``units``) and idempotent writes (``idempotency``)."""
