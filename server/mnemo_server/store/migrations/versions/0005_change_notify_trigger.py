"""PostgreSQL: the change notice comes from a trigger on the cursor counter,
so a write announces its changes without a statement of its own.

Every write that appends changes moves its user's ``change_cursors`` row
once; the trigger sends ``pg_notify('mnemo_changes', '<user_id> <cursor>')``,
delivered at commit like the statement it replaces. SQLite has nothing to
do: its notices never leave the process (``store.feed.notify``).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        """
        CREATE FUNCTION mnemo_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM pg_notify('mnemo_changes', NEW.user_id || ' ' || NEW.last_cursor);
          RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        "CREATE TRIGGER change_cursors_notify AFTER INSERT OR UPDATE ON change_cursors "
        "FOR EACH ROW EXECUTE FUNCTION mnemo_notify_change()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER change_cursors_notify ON change_cursors")
    op.execute("DROP FUNCTION mnemo_notify_change()")
