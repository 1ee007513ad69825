"""documents record a stored object's ETag and version (their path is then its s3:// URI)

Revision ID: i41_object_storage
Revises: i39_false_alarms
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa


revision = "i41_object_storage"
down_revision = "i39_false_alarms"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('etag', sa.String(length=200), nullable=True))
        batch_op.add_column(sa.Column('version_id', sa.String(length=200), nullable=True))
        batch_op.create_index(batch_op.f('ix_documents_etag'), ['etag'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_documents_etag'))
        batch_op.drop_column('version_id')
        batch_op.drop_column('etag')
