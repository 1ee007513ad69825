"""api keys keep their previous token and webhook secret for a grace period (rotations)

Revision ID: i62_rotations
Revises: i41_object_storage
Create Date: 2026-11-29
"""

from alembic import op
import sqlalchemy as sa


revision = "i62_rotations"
down_revision = "i41_object_storage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("previous_token_sha256", sa.String(length=64), nullable=True))
        batch_op.add_column(
            sa.Column("previous_token_until", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.add_column(
            sa.Column("previous_webhook_secret", sa.String(length=80), nullable=True)
        )
        batch_op.add_column(
            sa.Column("previous_webhook_secret_until", sa.DateTime(timezone=True), nullable=True)
        )
        batch_op.create_index(
            batch_op.f("ix_api_keys_previous_token_sha256"), ["previous_token_sha256"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_keys_previous_token_sha256"))
        batch_op.drop_column("previous_webhook_secret_until")
        batch_op.drop_column("previous_webhook_secret")
        batch_op.drop_column("previous_token_until")
        batch_op.drop_column("previous_token_sha256")
