"""The environment variables of running agents, in a module that imports nothing: the
``acti-store`` help texts name them without loading the catalog's machinery."""

from __future__ import annotations

from typing import Final

#: The MCP catalog (TOML) ``acti-store run`` and ``serve-mcp`` use unless told another.
ENV_CONFIG: Final = "ACTI_STORE_MCP_CONFIG"
