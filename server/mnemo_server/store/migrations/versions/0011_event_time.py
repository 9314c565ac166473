"""Event time: when each entry's fact was stated or observed
(``memories.event_at``), settable by the client; existing entries get their
create time.

``memories`` is altered in place (``ADD COLUMN`` with a default, ``DROP
COLUMN`` on the way down), never rebuilt: on SQLite a rebuilt ``memories``
would be dropped first, and the drop cascades to the entries' versions,
vectors and queue.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column(
        "memories",
        sa.Column("event_at", sa.BigInteger(), nullable=False, server_default=sa.text("0")),
    )
    memories = sa.table("memories", sa.column("event_at"), sa.column("created_at"))
    op.execute(memories.update().values(event_at=memories.c.created_at))


def downgrade() -> None:
    op.drop_column("memories", "event_at")
