"""Where ``benchmarks.run`` puts each backend's stores: files in a work directory, PostgreSQL
schemas in a database created for the run (reached directly, or through a pooler for
acti_store[pg+pooler]), and MariaDB databases created for the run (all dropped at the end,
whatever happens)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Final

import sqlalchemy

from .backends import StoreSpec
from .report import (
    ACTI_MYSQL,
    ACTI_POOLED,
    ACTI_POSTGRES,
    ACTI_SQLITE,
    JSON_FILES,
    LANGGRAPH_PG,
    MYSQL_BACKENDS,
    ON_POSTGRES,
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
    ACTI_POOLED: "acti_store",
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
    ``options=-csearch_path=<schema>`` in its URL (so that subprocesses can open it too); with
    ``postgres_pooler_url`` (the same server through a pooler in transaction mode), the pooled
    acti_store's URL is the pooler's, on the same database, opened with ``pooler="transaction"``
    (which takes the search path out of what it sends and sets it in each transaction). A
    MariaDB store is a database of its own (MariaDB has no schemas inside a database), named
    ``acti_bench_<run>_<tag>_<random>``: every one of them is dropped at the end.
    """

    def __init__(
        self,
        workdir: Path,
        postgres_url: str | None,
        mysql_url: str | None = None,
        postgres_pooler_url: str | None = None,
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
        self._pooler_url: sqlalchemy.URL | None = None
        if postgres_pooler_url:
            if self._pg is None:
                raise ValueError("a PostgreSQL pooler's URL needs the server's URL too")
            pooler_url = sqlalchemy.make_url(postgres_pooler_url)
            self._pooler_url = pooler_url.set(database=self._database)

    @property
    def labels(self) -> list[str]:
        labels = [REFERENCE, ACTI_SQLITE, JSON_FILES]
        if self._pg is not None:
            labels += [b for b in ON_POSTGRES if b != ACTI_POOLED or self._pooler_url]
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
        if label in ON_POSTGRES:
            assert self._pg is not None
            schema = f"{tag}_{uuid.uuid4().hex[:6]}"
            with self._pg.connect() as conn:
                conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            pooled = label == ACTI_POOLED
            base = self._pooler_url if pooled else self._pg_url
            assert base is not None
            url = base.update_query_dict({"options": f"-csearch_path={schema}"})
            location = url.render_as_string(hide_password=False)
            return StoreSpec(kind, label, location, "transaction" if pooled else None)
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
