"""attempts record why an answer was refused (invalid) and a valid answer's structured fields

Revision ID: i31_invalid_answers
Revises: i34_webhooks
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa


revision = "i31_invalid_answers"
down_revision = "i34_webhooks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('invalid_reason', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('answer_fields', sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_column('answer_fields')
        batch_op.drop_column('invalid_reason')
