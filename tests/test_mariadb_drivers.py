"""MariaDB on its C driver too: ``mariadb+mysqldb://`` and ``mysql+mysqldb://`` (mysqlclient)
pass the whole conformance kit, and error numbers translate the same way. The lane runs when
``ACTI_STORE_TEST_MYSQL_URL`` is set and mysqlclient is installed (it builds against MariaDB's
client library, which a machine may not have); otherwise it is skipped with the reason."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import MYSQL_URL, SKIP_MYSQL, fresh_store, make_config
from sqlalchemy.engine import make_url

from acti_store import AgentExistsError, AgentRepository, open_repository
from acti_store.testing.conformance import RepositoryConformance

pytestmark = [
    pytest.mark.mysql,
    pytest.mark.skipif(not MYSQL_URL, reason=SKIP_MYSQL),
    pytest.mark.skipif(
        importlib.util.find_spec("MySQLdb") is None,
        reason="mysqlclient is not installed (pip install mysqlclient; it needs libmariadb-dev)",
    ),
]


def _on_mysqlclient(url: str, backend: str = "mariadb") -> str:
    return make_url(url).set(drivername=f"{backend}+mysqldb").render_as_string(hide_password=False)


class TestMysqlclientConformance(RepositoryConformance):
    """The kit on MariaDB through mysqlclient: every store a database of its own."""

    supports_processes = True

    @pytest.fixture(autouse=True)
    def _stores(self, tmp_path: Path) -> Iterator[None]:
        self._tmp = tmp_path
        self._urls: dict[int, str] = {}
        with ExitStack() as self._more:
            yield

    def make_repository(self) -> AgentRepository:
        folder = self._tmp / f"store_{len(self._urls)}"
        folder.mkdir()
        url = _on_mysqlclient(self._more.enter_context(fresh_store("mysql", folder)))
        repository = open_repository(url)
        self._urls[id(repository)] = url
        return repository

    def open_again(self, repo: AgentRepository) -> AgentRepository:
        return open_repository(self._urls[id(repo)])


@pytest.mark.parametrize("backend", ["mysql", "mariadb"])
def test_both_url_forms_open_the_same_store(backend: str, mysql_database: str) -> None:
    with open_repository(mysql_database) as first:
        first.create(make_config())
    with open_repository(_on_mysqlclient(mysql_database, backend)) as again:
        assert again.get("lead_qualifier").metadata.version == 1
        with pytest.raises(AgentExistsError):  # error number 1062, as on PyMySQL
            again.create(make_config())
