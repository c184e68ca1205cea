"""Tenant-bound logins: the operator's view of which database logins row-level security holds
to one tenant each (``bind_login``, ``unbind_login``, ``login_bindings``; CLI ``acti-store
tenants bind|unbind|logins``).

A bound login (a reporting tool's, a support engineer's ``psql``, a tenant's own export) sees
and writes only its tenant, whatever ``acti.tenant`` it sets or role it takes: the policies
take the tenant from its binding (docs/tenants.md). The engine keeps the bindings
(``EngineStrategy.tenant_logins``); an engine without logins row-level security holds refuses
each call with ``LoginBindingError``.
"""

from __future__ import annotations

from typing import Final

from ..errors import InvalidInputError, LoginBindingError, LoginNotBoundError
from ..sqlexec import Cursor
from ..tenancy import check_tenant
from .core import StoreCore
from .strategy import TenantLogins

#: Why an engine without tenant-bound logins refuses them.
NO_LOGINS: Final = (
    "tenant-bound logins are PostgreSQL's (its row-level security holds a login to its "
    "tenant); this store is on {engine}, where the store's own tenant condition is all"
)
#: The longest role name PostgreSQL keeps (NAMEDATALEN - 1 bytes).
ROLE_MAX_BYTES: Final = 63


def _logins(core: StoreCore) -> TenantLogins:
    logins = core.kind.tenant_logins
    if logins is None:
        raise LoginBindingError(NO_LOGINS.format(engine=core.kind.name))
    return logins


def _checked_role(role: str) -> str:
    if not isinstance(role, str) or not role or len(role.encode()) > ROLE_MAX_BYTES:
        raise InvalidInputError(
            "role", [("role", f"a database role's name, 1 to {ROLE_MAX_BYTES} bytes")]
        )
    return role


def login_bindings(core: StoreCore) -> dict[str, str]:
    """Every binding the session may read (the owner: all; another role: its own), login ->
    tenant, by login."""
    logins = _logins(core)
    return core.read(logins.bindings)


def bind_login(core: StoreCore, role: str, tenant: str) -> None:
    """Bind the login ``role`` to ``tenant`` (in place of its binding, if it had one): from its
    next statement on, it sees and writes only that tenant's rows. Run as the store's owner."""
    logins = _logins(core)
    role, tenant = _checked_role(role), check_tenant(tenant)

    def work(cursor: Cursor) -> None:
        refusal = logins.refusal(cursor, role)
        if refusal is not None:
            raise LoginBindingError(refusal, role)
        logins.bind(cursor, role, tenant)

    core.write(work)


def unbind_login(core: StoreCore, role: str) -> str:
    """Take the login ``role``'s binding away (it then runs as the ``acti.tenant`` it sets, as
    the app role does); the tenant it was bound to. ``LoginNotBoundError`` if it was not bound.
    Run as the store's owner."""
    logins = _logins(core)
    role = _checked_role(role)

    def work(cursor: Cursor) -> str:
        refusal = logins.refusal(cursor)
        if refusal is not None:
            raise LoginBindingError(refusal)
        tenant = logins.unbind(cursor, role)
        if tenant is None:
            raise LoginNotBoundError(role)
        return tenant

    return core.write(work)
