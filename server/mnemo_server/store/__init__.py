"""Storage: the SQLAlchemy implementation of the domain's ports (``domain.ports``)."""
