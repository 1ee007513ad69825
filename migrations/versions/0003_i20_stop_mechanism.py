"""attempts record which stop ended them and the tokens generated after the verdict

Revision ID: 0003_i20_stop_mechanism
Revises: 0002
Create Date: 2026-11-23
"""

from alembic import op
import sqlalchemy as sa


revision = '0003_i20_stop_mechanism'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stop_mechanism', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('tokens_after_verdict', sa.Integer(), nullable=True))
        batch_op.add_column(
            sa.Column('tokens_after_verdict_note', sa.String(length=200), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('attempts', schema=None) as batch_op:
        batch_op.drop_column('tokens_after_verdict_note')
        batch_op.drop_column('tokens_after_verdict')
        batch_op.drop_column('stop_mechanism')
