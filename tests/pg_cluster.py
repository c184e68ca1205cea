"""Throwaway PostgreSQL clusters and a PgBouncer, for tests of how production runs (issue 41).

Production PostgreSQL is seldom one bare server: a transaction pooler sits in front of it, reads
go to streaming replicas, and a standby is promoted when the primary dies. The tests of those
setups make their own servers with these helpers, on loopback ports, in temporary folders:

- :class:`Cluster`: a cluster made by ``initdb`` (or, with :meth:`Cluster.standby_of`, a hot
  standby made by ``pg_basebackup -R -X stream`` from a running primary, synchronous or not),
  started by ``pg_ctl -w`` with its settings as ``-c`` options; ``stop``, ``kill`` (an immediate
  stop: a crash, as far as clients can tell), ``promote`` and ``url``.
- :class:`PgBouncer`: PgBouncer in transaction mode (2 server connections per database and
  user) in front of a host and port.
- :func:`free_port`: a loopback port nobody listens on.

Each object is a context manager; leaving it, even on a failed test, stops its server and
removes its folder. The servers run as the ``postgres`` OS user (neither PostgreSQL nor PgBouncer
runs as root): from root the processes are started with ``subprocess``'s ``user=`` and
``group=``, so that the process this module holds is the server itself (a ``runuser`` wrapper
would stand between it and the signals it is sent). Tests skip with :func:`clusters_missing` and
:func:`pgbouncer_missing`, which say why when the binaries are missing or nothing can run as
``postgres``.

``ACTI_STORE_TEST_PG_BIN`` names the folder of ``initdb``, ``pg_ctl`` and ``pg_basebackup``
(default: Debian's ``/usr/lib/postgresql/15/bin``); ``ACTI_STORE_TEST_PGBOUNCER`` the
``pgbouncer`` binary (default: the one on ``PATH``, else ``/usr/sbin/pgbouncer``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

import psycopg

#: The folder of the server's binaries.
PG_BIN: Final = Path(os.environ.get("ACTI_STORE_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
#: The PgBouncer binary.
PGBOUNCER: Final = Path(
    os.environ.get("ACTI_STORE_TEST_PGBOUNCER")
    or shutil.which("pgbouncer")
    or "/usr/sbin/pgbouncer"
)
#: The OS user the servers run as, and the database superuser ``initdb`` makes (trust auth).
OS_USER: Final = "postgres"
#: How long a server may take to start, stop, promote or copy itself (seconds).
SERVER_TIMEOUT: Final = 120

#: Every cluster's settings; a test adds or overrides any with ``settings=``. No durability is
#: needed (``fsync=off``): a killed primary is never started again, and a standby has what it
#: replayed from the primary.
BASE_SETTINGS: Final[Mapping[str, str]] = {
    "listen_addresses": "127.0.0.1",
    "wal_level": "replica",
    "max_wal_senders": "4",
    "max_replication_slots": "4",
    "hot_standby": "on",
    "fsync": "off",
    "full_page_writes": "off",
    "shared_buffers": "32MB",
    "max_connections": "60",
    "logging_collector": "off",
}


class ClusterError(RuntimeError):
    """A server command failed, or a server did not come up; the message holds its output."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now.

    The port is free when this returns, not reserved: a server started at once takes it. (Two
    tests picking ports at the same moment could meet; the kernel hands out ports in turn, so
    they do not in practice.)
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _os_user() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(OS_USER)
    except KeyError:
        return None


def _cannot_run_as_postgres() -> str | None:
    """Why a process cannot be started as :data:`OS_USER`; None when it can."""
    user = _os_user()
    if user is None:
        return f"there is no {OS_USER!r} OS user to run the servers as"
    if os.geteuid() not in (0, user.pw_uid):
        return f"the servers run as {OS_USER!r}: that needs root or {OS_USER!r} itself"
    return None


def clusters_missing() -> str | None:
    """Why :class:`Cluster` cannot be used here (a skip reason); None when it can."""
    for binary in ("initdb", "pg_ctl", "pg_basebackup", "postgres"):
        if not (PG_BIN / binary).is_file():
            return f"{PG_BIN / binary} is missing (set ACTI_STORE_TEST_PG_BIN)"
    return _cannot_run_as_postgres()


def pgbouncer_missing() -> str | None:
    """Why :class:`PgBouncer` cannot be used here (a skip reason); None when it can."""
    if not PGBOUNCER.is_file():
        return f"{PGBOUNCER} is missing (apt-get install pgbouncer, or ACTI_STORE_TEST_PGBOUNCER)"
    return _cannot_run_as_postgres()


def _as_postgres() -> dict[str, Any]:
    """``subprocess`` arguments that run a command as :data:`OS_USER`, from its home folder."""
    user = _os_user()
    assert user is not None, _cannot_run_as_postgres()
    env = {
        "PATH": f"{PG_BIN}:/usr/sbin:/usr/bin:/bin",
        "HOME": user.pw_dir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    switch: dict[str, Any] = {}
    if os.geteuid() != user.pw_uid:
        switch = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    return {"env": env, "cwd": "/", **switch}


def _run(command: Sequence[str | os.PathLike[str]], *, log: Path | None = None) -> str:
    """Run ``command`` as :data:`OS_USER` and return its output; :class:`ClusterError` with
    the output (and the tail of ``log``) when it fails or outlives :data:`SERVER_TIMEOUT`."""
    args = [str(part) for part in command]
    try:
        done = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=SERVER_TIMEOUT,
            check=False,
            **_as_postgres(),
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(
            f"{' '.join(args)}: no answer in {SERVER_TIMEOUT} s{_tail(log)}"
        ) from exc
    output = f"{done.stdout}{done.stderr}"
    if done.returncode != 0:
        raise ClusterError(f"{' '.join(args)} exited with {done.returncode}:\n{output}{_tail(log)}")
    return output


def _tail(log: Path | None, lines: int = 30) -> str:
    """The last lines of a server's log, to quote in an error."""
    if log is None or not log.is_file():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return f"\n--- {log} (last {len(text)} lines) ---\n" + "\n".join(text)


def _owned_folder(prefix: str) -> Path:
    """A new temporary folder that :data:`OS_USER` owns (mode 0700, as initdb wants it)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    user = _os_user()
    assert user is not None
    os.chown(folder, user.pw_uid, user.pw_gid)
    return folder


def _wait_for_connection(conninfo: str, alive: Any, what: str, log: Path) -> None:
    """Wait until ``conninfo`` accepts a connection; :class:`ClusterError` if ``alive()`` turns
    False first or :data:`SERVER_TIMEOUT` passes."""
    deadline = time.monotonic() + SERVER_TIMEOUT
    while True:
        try:
            with psycopg.connect(conninfo, connect_timeout=2, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError as exc:
            if not alive():
                raise ClusterError(
                    f"{what} exited before it accepted a connection{_tail(log)}"
                ) from exc
            if time.monotonic() > deadline:
                raise ClusterError(f"{what}: no connection in {SERVER_TIMEOUT} s: {exc}") from exc
            time.sleep(0.05)


class Cluster:
    """A PostgreSQL cluster of its own in a temporary folder, on a free loopback port.

    ``with Cluster() as primary:`` makes it with ``initdb`` and starts it; ``with
    Cluster.standby_of(primary, synchronous=True) as standby:`` copies a running primary instead.
    Leaving the block stops the server at once (an immediate stop: nothing is left to keep) and
    removes the folder. ``open()`` and ``close()`` do the same for a fixture that cannot use
    ``with``. The superuser is ``postgres``, trusted on 127.0.0.1 and on the cluster's own
    socket folder (its folder, so it never meets the machine's server).
    """

    def __init__(self, name: str = "primary", settings: Mapping[str, str] | None = None) -> None:
        """``name`` is the cluster's ``cluster_name``, and the ``application_name`` it has as a
        standby; ``settings`` add to or override :data:`BASE_SETTINGS`. Nothing is made until
        the cluster is opened."""
        self.name = name
        self.settings = {**BASE_SETTINGS, **(settings or {})}
        self.port = 0
        self.folder: Path | None = None
        self._primary: Cluster | None = None
        self._synchronous = False
        self._running = False

    @classmethod
    def standby_of(
        cls,
        primary: Cluster,
        *,
        synchronous: bool = False,
        name: str = "standby",
        settings: Mapping[str, str] | None = None,
    ) -> Cluster:
        """A hot standby of the running ``primary``, made when opened: ``pg_basebackup -R -X
        stream`` (``-R`` writes ``primary_conninfo``, with ``application_name`` = ``name``, and
        ``standby.signal``), then started, then waited for until it streams.

        ``synchronous``: the primary then names this standby in ``synchronous_standby_names``
        and sets ``synchronous_commit = remote_apply`` (``ALTER SYSTEM``, reloaded), so a commit
        returns only once the standby has replayed it, and a read there sees it. That is set
        after the copy, so the standby does not inherit it: promoted, it writes alone.
        """
        standby = cls(name=name, settings={**primary.settings, **(settings or {})})
        standby._primary = primary
        standby._synchronous = synchronous
        return standby

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def data(self) -> Path:
        """The data directory."""
        assert self.folder is not None, "the cluster is not open"
        return self.folder / "data"

    @property
    def log(self) -> Path:
        """The server's log (``pg_ctl -l``)."""
        assert self.folder is not None, "the cluster is not open"
        return self.folder / "server.log"

    @property
    def running(self) -> bool:
        """Whether this object started the server and has not stopped it since."""
        return self._running

    def open(self) -> Self:
        """Make the cluster and start it; on any failure, remove what was made and raise."""
        self.folder = _owned_folder(f"acti-pg-{self.name}-")
        self.port = free_port()
        try:
            if self._primary is None:
                _run(
                    [
                        PG_BIN / "initdb",
                        "-D",
                        self.data,
                        "-U",
                        OS_USER,
                        "--auth=trust",
                        "--encoding=UTF8",
                        "--locale=C.UTF-8",
                        "--no-sync",
                    ]
                )
                self.start()
            else:
                self._copy(self._primary)
        except BaseException:
            self.close()
            raise
        return self

    def _copy(self, primary: Cluster) -> None:
        conninfo = f"host=127.0.0.1 port={primary.port} user={OS_USER} application_name={self.name}"
        _run(
            [
                PG_BIN / "pg_basebackup",
                "-d",
                conninfo,
                "-D",
                self.data,
                "-R",
                "-X",
                "stream",
                "--checkpoint=fast",
                "--no-sync",
            ]
        )
        self.start()
        self.wait_streaming(primary)
        if self._synchronous:
            primary.execute(
                f"ALTER SYSTEM SET synchronous_standby_names = '\"{self.name}\"'",
                "ALTER SYSTEM SET synchronous_commit = 'remote_apply'",
                "SELECT pg_reload_conf()",
            )
            self.wait_streaming(primary, state="sync")

    def wait_streaming(self, primary: Cluster, state: str | None = None) -> None:
        """Wait until ``primary`` shows this standby streaming (with ``sync_state`` = ``state``
        when given: ``'sync'`` once the primary's reloaded settings name it)."""
        deadline = time.monotonic() + SERVER_TIMEOUT
        query = "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s"
        query += " AND state = 'streaming'"
        while True:
            rows = primary.execute_one(query, (self.name,))
            if rows is not None and (state is None or rows[0] == state):
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{self.name} is not streaming from {primary.name} (as {state or 'any'}) "
                    f"after {SERVER_TIMEOUT} s{_tail(self.log)}"
                )
            time.sleep(0.05)

    def detach(self, primary: Cluster) -> None:
        """A standby stops receiving from ``primary`` (its ``primary_conninfo`` emptied and
        reloaded), as if the network between them failed; returns once ``primary`` no longer
        lists it. It keeps what it has replayed, and can still be promoted."""
        self.execute("ALTER SYSTEM SET primary_conninfo = ''", "SELECT pg_reload_conf()")
        deadline = time.monotonic() + SERVER_TIMEOUT
        query = "SELECT 1 FROM pg_stat_replication WHERE application_name = %s"
        while primary.execute_one(query, (self.name,)) is not None:
            if time.monotonic() > deadline:
                raise ClusterError(f"{self.name} still streams after {SERVER_TIMEOUT} s")
            time.sleep(0.02)

    def close(self) -> None:
        """Stop the server at once if it runs, and remove the folder. Safe to call twice."""
        try:
            if self._running:
                self.kill()
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the server ----------------------------------------------------------------------------

    def _options(self) -> str:
        """``pg_ctl -o``: the port, the socket folder and every setting, as ``-c`` options."""
        assert self.folder is not None
        settings = {
            **self.settings,
            "port": str(self.port),
            "unix_socket_directories": str(self.folder),
            "cluster_name": self.name,
        }
        for key, value in settings.items():
            if any(c.isspace() or c in "'\"\\" for c in value):
                raise ValueError(f"{key}={value!r}: a -c value cannot hold spaces or quotes here")
        return " ".join(f"-c {key}={value}" for key, value in settings.items())

    def _pg_ctl(self, action: str, *options: str) -> None:
        _run([PG_BIN / "pg_ctl", action, "-D", self.data, *options], log=self.log)

    def start(self) -> None:
        """``pg_ctl start -w``: returns once the server accepts connections."""
        self._pg_ctl(
            "start", "-w", "-t", str(SERVER_TIMEOUT), "-l", str(self.log), "-o", self._options()
        )
        self._running = True

    def stop(self, mode: str = "fast") -> None:
        """``pg_ctl stop -m mode -w``: ``smart``, ``fast`` (the default: sessions are ended, a
        clean shutdown) or ``immediate`` (no shutdown checkpoint: a crash, to its clients)."""
        self._pg_ctl("stop", "-m", mode, "-w", "-t", str(SERVER_TIMEOUT))
        self._running = False

    def kill(self) -> None:
        """The primary dies: ``pg_ctl stop -m immediate``. Every session's connection drops."""
        self.stop("immediate")

    def promote(self) -> None:
        """``pg_ctl promote -w``: a standby becomes a primary; returns once it accepts writes."""
        self._pg_ctl("promote", "-w", "-t", str(SERVER_TIMEOUT))

    # -- clients -------------------------------------------------------------------------------

    def conninfo(self, database: str = "postgres") -> str:
        """A libpq connection string to ``database`` over TCP."""
        return f"host=127.0.0.1 port={self.port} user={OS_USER} dbname={database}"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of ``database``: ``postgresql+psycopg://postgres@127.0.0.1:PORT/DB``."""
        return f"postgresql+psycopg://{OS_USER}@127.0.0.1:{self.port}/{database}"

    def execute(self, *statements: str, database: str = "postgres") -> None:
        """Run ``statements`` in autocommit (``CREATE DATABASE``, ``ALTER SYSTEM``, ...)."""
        with psycopg.connect(self.conninfo(database), autocommit=True) as conn:
            for statement in statements:
                conn.execute(statement)

    def execute_one(
        self, query: str, params: Sequence[Any] = (), *, database: str = "postgres"
    ) -> tuple[Any, ...] | None:
        """The first row of ``query``, or None."""
        with psycopg.connect(self.conninfo(database), autocommit=True) as conn:
            return conn.execute(query, params).fetchone()

    def create_database(self, name: str) -> str:
        """``CREATE DATABASE name``; returns its :meth:`url`."""
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


class PgBouncer:
    """PgBouncer in transaction mode in front of ``host:port``, as ``with PgBouncer(port):``.

    Every database on the server is reached through it (``* = host=... port=...``), as
    ``postgres`` (or the given ``users``) with trust auth, through 2 server connections per
    database and user (``default_pool_size = 2``); each client transaction gets whichever
    server connection is free, so session state (settings, prepared statements,
    ``search_path``) does not follow a client from one transaction to the next.
    ``extra_float_digits`` and ``options`` are ignored as startup parameters (a client's
    ``options=-c ...`` then reaches no server: PgBouncer drops it). It runs in the
    foreground (no ``-d``) as a child of this process, is waited for until it accepts
    connections, and is stopped (SIGTERM, then SIGKILL) on exit.
    """

    def __init__(
        self,
        port: int,
        host: str = "127.0.0.1",
        *,
        pool_size: int = 2,
        users: Sequence[str] = (OS_USER,),
        settings: Mapping[str, str] | None = None,
    ) -> None:
        """``users``: the roles it lets in (its ``auth_file``, written in its own folder,
        which the ``postgres`` OS user can read: a pytest ``tmp_path`` is not); ``settings``
        add to or override the ``[pgbouncer]`` section's."""
        self.server = (host, port)
        self.users = tuple(users)
        self.pool_size = pool_size
        self.settings = dict(settings or {})
        self.port = 0
        self.folder: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def log(self) -> Path:
        """PgBouncer's log file."""
        assert self.folder is not None, "the pooler is not open"
        return self.folder / "pgbouncer.log"

    def _ini(self) -> str:
        assert self.folder is not None
        host, port = self.server
        settings = {
            "listen_addr": "127.0.0.1",
            "listen_port": str(self.port),
            "unix_socket_dir": "",
            "auth_type": "trust",
            "auth_file": str(self.folder / "users.txt"),
            "pool_mode": "transaction",
            "default_pool_size": str(self.pool_size),
            "max_client_conn": "200",
            "ignore_startup_parameters": "extra_float_digits,options",
            "logfile": str(self.log),
            **self.settings,
        }
        lines = ["[databases]", f"* = host={host} port={port}", "", "[pgbouncer]"]
        lines += [f"{key} = {value}" for key, value in settings.items()]
        return "\n".join(lines) + "\n"

    def open(self) -> Self:
        """Write the configuration, start PgBouncer, and wait until it accepts connections."""
        self.folder = _owned_folder("acti-pgbouncer-")
        self.port = free_port()
        user = _os_user()
        assert user is not None
        try:
            (self.folder / "users.txt").write_text("".join(f'"{u}" ""\n' for u in self.users))
            (self.folder / "pgbouncer.ini").write_text(self._ini())
            for made in ("users.txt", "pgbouncer.ini"):
                os.chown(self.folder / made, user.pw_uid, user.pw_gid)
            self._process = subprocess.Popen(
                [str(PGBOUNCER), str(self.folder / "pgbouncer.ini")],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                **_as_postgres(),
            )
            process = self._process
            _wait_for_connection(
                self.conninfo(), lambda: process.poll() is None, "pgbouncer", self.log
            )
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop PgBouncer (SIGTERM: at once, then SIGKILL after 10 s) and remove the folder."""
        try:
            if self._process is not None and self._process.poll() is None:
                self._process.send_signal(signal.SIGTERM)
                try:
                    self._process.wait(10)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait(10)
            self._process = None
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)
                self.folder = None

    def __enter__(self) -> Self:
        return self.open()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def conninfo(self, database: str = "postgres") -> str:
        """A libpq connection string to ``database`` through the pooler."""
        return f"host=127.0.0.1 port={self.port} user={OS_USER} dbname={database}"

    def url(self, database: str = "postgres") -> str:
        """The SQLAlchemy URL of ``database`` through the pooler."""
        return f"postgresql+psycopg://{OS_USER}@127.0.0.1:{self.port}/{database}"
