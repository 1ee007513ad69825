"""The migrations build exactly the models' schema, and 0002 goes down and up again."""

from __future__ import annotations

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine, inspect

from app.db.engine import alembic_config, upgrade
from app.db.models import Base


def test_migrations_match_the_models_and_downgrade(db_url: str) -> None:
    upgrade(db_url)
    engine = create_engine(db_url)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
        command.downgrade(alembic_config(db_url), "0001")
        assert "api_keys" not in inspect(engine).get_table_names()
        upgrade(db_url)
        assert "api_keys" in inspect(engine).get_table_names()
    finally:
        engine.dispose()
