"""server counter samples per job (server-side token accounting)

Revision ID: 0005_i14_server_samples
Revises: 0004_i16_open_pages
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_i14_server_samples"
down_revision = "0004_i16_open_pages"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "server_samples",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=32), nullable=False),
        sa.Column("endpoint", sa.String(length=200), nullable=False),
        sa.Column("metrics_url", sa.Text(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=False),
        sa.Column("phase", sa.String(length=8), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("generation_tokens", sa.Float(), nullable=True),
        sa.Column("prompt_tokens", sa.Float(), nullable=True),
        sa.Column("requests", sa.Float(), nullable=True),
        sa.Column("server_started", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("job_id", "endpoint", "worker", "phase"),
    )
    with op.batch_alter_table("server_samples", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_server_samples_job_id"), ["job_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("server_samples", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_server_samples_job_id"))
    op.drop_table("server_samples")
