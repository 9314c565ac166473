"""The tenant of an erased user's change feed (``change_cursors.erased_tenant_id``).

``DeleteUserData`` deletes the ``users`` row, which said whose the feed is,
but leaves the feed's ERASE change and cursor counter for the erased user's
other devices. The erasure now records the erased user's tenant on the
counter row, so that a caller of another tenant naming the same user id
sees none of it and the id's new owner there starts a feed of its own
(``store.feed.changes``). A nullable column; nothing else is altered.

Feeds erased before this migration have no tenant recorded (NULL) and no
``users`` row: their owner is unknown, so they are read only under ``--auth
none`` (an authenticated device of the erased user finds its cursor
``CURSOR_AHEAD``, resynchronises and finds nothing), and the next user
created with that id, in any tenant, starts a new feed.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    op.add_column(
        "change_cursors", sa.Column("erased_tenant_id", sa.String(length=128), nullable=True)
    )


def downgrade() -> None:
    with op.batch_alter_table("change_cursors") as batch:
        batch.drop_column("erased_tenant_id")
