"""open pages index: finding a job's unfinished pages costs the same at any job size

Revision ID: 0004_i16_open_pages
Revises: 0003_i20_stop_mechanism
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0004_i16_open_pages"
down_revision = "0003_i20_stop_mechanism"
branch_labels = None
depends_on = None

OPEN = sa.text("status IN ('pending', 'running')")


def upgrade() -> None:
    # Partial: only open pages are in it, so it stays small however many pages are done.
    op.create_index(
        "ix_pages_open_by_job",
        "pages",
        ["job_id"],
        postgresql_where=OPEN,
        sqlite_where=OPEN,
    )


def downgrade() -> None:
    op.drop_index("ix_pages_open_by_job", table_name="pages")
