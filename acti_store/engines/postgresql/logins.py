"""PostgreSQL's tenant-bound logins (``engines.base.TenantLogins``): ``agent_tenant_logins``
(revision 0015), which the row-level security of every tenant table reads.

A binding names a login (``session_user``) and its tenant; the policies compare each row's
tenant with that login's tenant where it has one, else with the session's ``acti.tenant``
(``migrations.guards.BOUND_SETTING``). Only the table's owner (the role that migrates the store,
or a role with its privileges) or a superuser writes bindings: row-level security, not forced
on this table, lets every other role read its own binding and write none. A login is bound
only where row-level security holds it: not a superuser, a role with ``BYPASSRLS`` or
``CREATEROLE`` (which can grant itself any other role), nor a member of such a role or of the
tables' owner (``SET ROLE`` to one of them would step outside the policies).
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import String, bindparam, column, delete, select, table, text

from ...engine import TENANT_LOGINS_TABLE
from ...sqlexec import Cursor, Prepared

_LOGINS: Final = table(TENANT_LOGINS_TABLE, column("role", String()), column("tenant", String()))
_ROLE = bindparam("role", type_=String())
_TENANT = bindparam("bound_tenant", type_=String())

_BINDINGS: Final = Prepared(select(_LOGINS.c.role, _LOGINS.c.tenant).order_by(_LOGINS.c.role))
#: A text, not an ``insert()``: SQLAlchemy names an INSERT's parameter after its column, and
#: the cursor binds the store's own tenant to a parameter named ``tenant``.
_BIND: Final = Prepared(
    text(
        f"INSERT INTO {TENANT_LOGINS_TABLE} (role, tenant) VALUES (:role, :bound_tenant) "
        "ON CONFLICT (role) DO UPDATE SET tenant = excluded.tenant"
    ).bindparams(_ROLE, _TENANT)
)
_UNBIND: Final = Prepared(
    delete(_LOGINS).where(_LOGINS.c.role == _ROLE).returning(_LOGINS.c.tenant)
)
#: The owners of the bindings and of the agents (the roles that made them): the store's owner.
_OWNERS: Final = (
    f"SELECT relowner FROM pg_class WHERE oid IN ('{TENANT_LOGINS_TABLE}'::regclass, "
    "'agents'::regclass)"
)
#: Whether the session may write bindings: a superuser, or a role with the owner's privileges.
_OPERATOR: Final = Prepared(
    text(
        "SELECT rolsuper OR EXISTS (SELECT 1 FROM pg_class WHERE oid = "
        f"'{TENANT_LOGINS_TABLE}'::regclass AND pg_has_role(current_user, relowner, 'USAGE')) "
        "FROM pg_roles WHERE rolname = current_user"
    )
)
_EXISTS: Final = Prepared(text("SELECT 1 FROM pg_roles WHERE rolname = :role").bindparams(_ROLE))
#: The roles ``role`` is (or is a member of) that row-level security does not hold, and why.
_UNHELD: Final = Prepared(
    text(
        "SELECT m.rolname, m.rolsuper, m.rolbypassrls, m.rolcreaterole FROM pg_roles m "
        "WHERE pg_has_role(:role, m.oid, 'MEMBER') AND (m.rolsuper OR m.rolbypassrls "
        f"OR m.rolcreaterole OR m.oid IN ({_OWNERS})) ORDER BY m.rolname <> :role, m.rolname"
    ).bindparams(_ROLE)
)
#: The logins that can be bound.
ORDINARY: Final = (
    "bind an ordinary login (not a superuser, BYPASSRLS or CREATEROLE, and a member of no such "
    "role nor of the store's owner)"
)
#: Why the session cannot write bindings.
NOT_OWNER: Final = (
    "only the store's owner (the role that migrates it) or a superuser binds and unbinds "
    "logins: connect as that role"
)


class PostgresqlLogins:
    """``TenantLogins`` on ``agent_tenant_logins``."""

    def bindings(self, cursor: Cursor) -> dict[str, str]:
        return {str(role): str(tenant) for role, tenant in cursor.all(_BINDINGS)}

    def refusal(self, cursor: Cursor, role: str | None = None) -> str | None:
        row = cursor.first(_OPERATOR)
        if row is None or not row[0]:
            return NOT_OWNER
        if role is None:
            return None
        if cursor.first(_EXISTS, {"role": role}) is None:
            return "no role of this name exists in the database (CREATE ROLE ... LOGIN)"
        unheld = cursor.first(_UNHELD, {"role": role})
        if unheld is None:
            return None
        name, superuser, bypass, create_role = unheld
        what = (
            "a superuser"
            if superuser
            else "BYPASSRLS"
            if bypass
            else "CREATEROLE"
            if create_role
            else "the store's owner (it can change the policies)"
        )
        whose = "it is" if name == role else f"it is a member of {name!r}, which is"
        return f"{whose} {what}, beyond row-level security's hold: {ORDINARY}"

    def bind(self, cursor: Cursor, role: str, tenant: str) -> None:
        cursor.execute(_BIND, {"role": role, "bound_tenant": tenant})

    def unbind(self, cursor: Cursor, role: str) -> str | None:
        row = cursor.first(_UNBIND, {"role": role})
        return None if row is None else str(row[0])


#: The one instance the PostgreSQL strategies share.
POSTGRESQL_LOGINS: Final = PostgresqlLogins()
