"""A store behind a pooler in transaction mode (issue 41 §1): PgBouncer (Debian's, started by
``pg_cluster.PgBouncer``) with ``pool_mode = transaction`` and 2 server connections in front of
the test server, the roles of docs/tenants.md: the owner migrates over a direct URL, the app
role (row-level security applies to it) runs the store through the pooler.

Every session of the pooler serves any client's next transaction: a setting kept by the session
(the tenant, the search path) or a statement prepared on it would follow the server connection
to another client. Skipped without ``ACTI_STORE_TEST_POSTGRES_URL`` or without PgBouncer.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from conftest import POSTGRES_URL, SKIP_POSTGRES, make_config
from pg_cluster import PgBouncer, pgbouncer_missing
from test_tenant_roles import roles_database, with_user
from workers import pooled
from workers.harness import run_children

from acti_store import StoreUnavailableError, open_repository

pytestmark = [
    pytest.mark.postgresql,
    pytest.mark.skipif(not POSTGRES_URL, reason=SKIP_POSTGRES),
    pytest.mark.skipif(bool(pgbouncer_missing()), reason=pgbouncer_missing() or ""),
]

SCHEMA = "acti"
TENANTS = ("acme", "globex")
#: Processes per tenant, and seconds of load once every one is up (issue 41: 8 over 2 tenants).
PER_TENANT = 4
SECONDS = 20.0


class Store:
    """A database with the roles of docs/tenants.md, migrated by the owner over a direct URL,
    and a PgBouncer in transaction mode in front of the server."""

    def __init__(self, direct: str, pooler: PgBouncer, owner: str, app: str) -> None:
        self.direct = direct
        self.owner = with_user(direct, owner)
        database = sa.make_url(direct).database or ""
        self.app = with_user(pooler.url(database), app)
        self.pooled_admin = pooler.url(database)


@pytest.fixture(scope="module")
def store() -> Iterator[Store]:
    assert POSTGRES_URL is not None
    port = sa.make_url(POSTGRES_URL).port or 5432
    with (
        roles_database() as (url, owner, app),
        PgBouncer(port, users=("postgres", owner, app), settings=_NO_OPTIONS) as pooler,
    ):
        made = Store(url, pooler, owner, app)
        open_repository(made.owner, schema=SCHEMA).close()
        yield made


#: As PgBouncer is mostly deployed: a client's server options (``options=``) refused.
_NO_OPTIONS = {"ignore_startup_parameters": "extra_float_digits"}


def test_processes_of_two_tenants_share_two_server_connections_without_a_slip(
    store: Store,
) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PER_TENANT * len(TENANTS))
    children = [
        (store.app, SCHEMA, tenant, worker, barrier, SECONDS)
        for tenant in TENANTS
        for worker in range(PER_TENANT)
    ]
    results = run_children(ctx, pooled.run, children, timeout=240)
    rounds = [result["rounds"] for result in results]
    problems = [result["problems"] for result in results]
    print(f"rounds per process through 2 server connections: {rounds}")
    assert problems == [{}] * len(children)
    assert all(count > 10 for count in rounds), rounds

    # Each tenant holds its own agents and no other: read as the superuser, directly.
    engine = sa.create_engine(store.direct)
    try:
        with engine.connect() as conn:
            found = conn.execute(
                sa.text(f"SELECT tenant, count(*) FROM {SCHEMA}.agents GROUP BY tenant")
            ).all()
            wrong = conn.execute(
                sa.text(
                    f"SELECT count(*) FROM {SCHEMA}.agents "
                    "WHERE description NOT LIKE '%marker' || tenant || 'xyz%'"
                )
            ).scalar_one()
    finally:
        engine.dispose()
    assert wrong == 0
    assert {tenant: count for tenant, count in found} == {
        tenant: sum(r for c, r in zip(children, rounds, strict=True) if c[2] == tenant)
        for tenant in TENANTS
    }


def test_a_store_behind_the_pooler_without_the_option_is_told_to_set_it(store: Store) -> None:
    url = sa.make_url(store.app).update_query_dict({"options": f"-csearch_path={SCHEMA}"})
    with pytest.raises(StoreUnavailableError, match='pooler="transaction"') as refused:
        open_repository(url.render_as_string(False), tenant="acme", migrate=False, pooler="none")
    assert "ACTI_STORE_POOLER=transaction" in str(refused.value)
    assert not refused.value.transient
    # The same URL with the option: its schema comes from the options, made per transaction.
    with open_repository(url, tenant="acme", pooler="transaction") as repo:
        repo.create(make_config("from_options"))
        assert repo.get("from_options").name == "from_options"


def test_prepared_statements_a_pooler_loses_are_told_to_set_the_option(store: Store) -> None:
    """Two clients through one server connection, as the app role, without the option: psycopg
    prepares a statement run 5 times (``_pg3_0``, on the server connection), and the second
    client's ``_pg3_0`` meets the first's there. The error names the option. (``pooler="none"``
    says so whatever ``ACTI_STORE_POOLER`` says: the pooler lane sets it.)"""
    assert POSTGRES_URL is not None
    port = sa.make_url(POSTGRES_URL).port or 5432
    app = sa.make_url(store.app).username or ""
    database = sa.make_url(store.direct).database or ""
    with PgBouncer(port, users=("postgres", app), pool_size=1, settings=_NO_OPTIONS) as one:
        url = with_user(one.url(database), app)
        with (
            open_repository(
                url, schema=SCHEMA, tenant="acme", migrate=False, pooler="none"
            ) as first,
            open_repository(
                url, schema=SCHEMA, tenant="acme", migrate=False, pooler="none"
            ) as second,
        ):
            first.create(make_config("prepared_twice"))
            with pytest.raises(StoreUnavailableError, match='pooler="transaction"') as refused:
                for _ in range(10):
                    first.get("prepared_twice")
                    second.get("prepared_twice")
    assert not refused.value.transient
    assert "ACTI_STORE_POOLER=transaction" in str(refused.value)


def test_the_feed_listens_on_a_direct_url_or_polls_with_one_warning(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    direct = with_user(store.direct, sa.make_url(store.app).username or "")
    for listen_url, name in ((direct, "watched_on_listen"), (None, "watched_by_polling")):
        caplog.clear()
        with (
            caplog.at_level(logging.WARNING, logger="acti_store"),
            open_repository(
                store.app,
                schema=SCHEMA,
                tenant="globex",
                pooler="transaction",
                listen_url=listen_url,
            ) as repo,
            open_repository(
                store.app, schema=SCHEMA, tenant="globex", pooler="transaction"
            ) as writer,
        ):
            start = repo.last_change()
            later = threading.Timer(1.0, writer.create, args=(make_config(name),))
            later.start()
            try:
                change = next(iter(repo.watch(after=start, timeout=30)))
            finally:
                later.join()
            assert (change.kind, change.agent, change.seq) == ("created", name, start + 1)
            warned = [r.getMessage() for r in caplog.records if "pooler" in r.getMessage()]
            assert len(warned) == (0 if listen_url else 1), warned


def test_migrations_run_through_the_pooler(store: Store) -> None:
    """The migration lock is the transaction's and the schema's search path the transaction's:
    a store is made through the pooler too."""
    with open_repository(store.pooled_admin, schema="acti_second", pooler="transaction") as repo:
        repo.create(make_config("second_store"))
        assert repo.list_names() == ["second_store"]
