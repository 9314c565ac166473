"""Storage: narrow interfaces (``interfaces``) and their SQLAlchemy implementation."""
