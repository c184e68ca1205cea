"""Where ``benchmarks.run`` puts each backend's stores: files in a work directory, PostgreSQL
schemas in a database created for the run, and MariaDB databases created for the run (all dropped
at the end, whatever happens)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Final

import sqlalchemy

from .backends import StoreSpec
from .report import (
    ACTI_MYSQL,
    ACTI_POSTGRES,
    ACTI_SQLITE,
    JSON_FILES,
    LANGGRAPH_PG,
    MYSQL_BACKENDS,
    POSTGRES_BACKENDS,
    RAW_PSYCOPG,
    RAW_PYMYSQL,
    REFERENCE,
)

#: Backend label (as printed) -> backend kind (a key of ``backends.KINDS``).
KIND_OF: Final = {
    REFERENCE: "raw_sqlite",
    ACTI_SQLITE: "acti_store",
    JSON_FILES: "json_files",
    ACTI_POSTGRES: "acti_store",
    RAW_PSYCOPG: "raw_psycopg",
    LANGGRAPH_PG: "langgraph_pg",
    ACTI_MYSQL: "acti_store",
    RAW_PYMYSQL: "raw_pymysql",
}


def slug(label: str) -> str:
    """A label as a file name: ``acti_store[sqlite]`` -> ``acti_store-sqlite``."""
    return label.replace("[", "-").replace("]", "")


class Stores:
    """Hands out empty stores for each backend; removes them all at the end.

    A PostgreSQL store is a schema of its own in the run's database, selected by
    ``options=-csearch_path=<schema>`` in its URL (so that subprocesses can open it too). A
    MariaDB store is a database of its own (MariaDB has no schemas inside a database), named
    ``acti_bench_<run>_<tag>_<random>``: every one of them is dropped at the end.
    """

    def __init__(
        self, workdir: Path, postgres_url: str | None, mysql_url: str | None = None
    ) -> None:
        self.workdir = workdir
        self._run_id = uuid.uuid4().hex[:10]
        self._mysql: sqlalchemy.Engine | None = None
        self._mysql_url: sqlalchemy.URL | None = None
        self._mysql_databases: list[str] = []
        if mysql_url:
            self._mysql_url = sqlalchemy.make_url(mysql_url)
            self._mysql = sqlalchemy.create_engine(self._mysql_url, isolation_level="AUTOCOMMIT")
        self._admin: sqlalchemy.Engine | None = None
        self._database: str | None = None
        self._pg: sqlalchemy.Engine | None = None
        if postgres_url:
            url = sqlalchemy.make_url(postgres_url)
            self._admin = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
            self._database = f"acti_bench_{uuid.uuid4().hex[:10]}"
            with self._admin.connect() as conn:
                conn.exec_driver_sql(f'CREATE DATABASE "{self._database}"')
            self._pg_url = url.set(database=self._database)
            self._pg = sqlalchemy.create_engine(self._pg_url, isolation_level="AUTOCOMMIT")

    @property
    def labels(self) -> list[str]:
        labels = [REFERENCE, ACTI_SQLITE, JSON_FILES]
        if self._pg is not None:
            labels += POSTGRES_BACKENDS
        if self._mysql is not None:
            labels += MYSQL_BACKENDS
        return labels

    def spec(self, label: str, tag: str) -> StoreSpec:
        kind = KIND_OF[label]
        if label in MYSQL_BACKENDS:
            assert self._mysql is not None and self._mysql_url is not None
            database = f"acti_bench_{self._run_id}_{tag}_{uuid.uuid4().hex[:6]}"
            with self._mysql.connect() as conn:
                conn.exec_driver_sql(
                    f"CREATE DATABASE `{database}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
            self._mysql_databases.append(database)
            url = self._mysql_url.set(database=database)
            return StoreSpec(kind, label, url.render_as_string(hide_password=False))
        if label in POSTGRES_BACKENDS:
            assert self._pg is not None
            schema = f"{tag}_{uuid.uuid4().hex[:6]}"
            with self._pg.connect() as conn:
                conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            url = self._pg_url.update_query_dict({"options": f"-csearch_path={schema}"})
            return StoreSpec(kind, label, url.render_as_string(hide_password=False))
        if kind == "json_files":
            return StoreSpec(kind, label, str(self.workdir / f"{slug(label)}-{tag}"))
        path = self.workdir / f"{slug(label)}-{tag}.db"
        return StoreSpec(kind, label, f"sqlite:///{path}" if kind == "acti_store" else str(path))

    def close(self) -> None:
        try:
            self._close_mysql()
        finally:
            self._close_postgres()

    def _close_postgres(self) -> None:
        if self._pg is not None:
            self._pg.dispose()
        if self._admin is not None:
            with self._admin.connect() as conn:
                conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{self._database}" WITH (FORCE)')
            self._admin.dispose()

    def _close_mysql(self) -> None:
        if self._mysql is None:
            return
        with self._mysql.connect() as conn:
            for database in self._mysql_databases:
                conn.exec_driver_sql(f"DROP DATABASE IF EXISTS `{database}`")
        self._mysql.dispose()
