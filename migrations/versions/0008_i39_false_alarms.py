"""attempts record why they ran beside their plan step (role: confirm)

Revision ID: i39_false_alarms
Revises: i31_invalid_answers
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa


revision = "i39_false_alarms"
down_revision = "i31_invalid_answers"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('role', sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_column('role')
