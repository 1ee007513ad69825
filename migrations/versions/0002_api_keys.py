"""api keys and job owners

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa


revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_keys',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('token_sha256', sa.String(length=64), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name'),
    sa.UniqueConstraint('token_sha256')
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('api_key_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_jobs_api_key_id'), ['api_key_id'], unique=False)
        batch_op.create_foreign_key(
            'fk_jobs_api_key_id', 'api_keys', ['api_key_id'], ['id'], ondelete='SET NULL'
        )


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_constraint('fk_jobs_api_key_id', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_jobs_api_key_id'))
        batch_op.drop_column('api_key_id')
    op.drop_table('api_keys')
