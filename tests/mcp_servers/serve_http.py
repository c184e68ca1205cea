"""Serve one of the test MCP servers over streamable HTTP: ``python serve_http.py crm_server PORT``.

The server's tools are the module's (``crm_server``, ``calendar_server``, ...); it listens on
127.0.0.1:PORT at ``/mcp`` until killed. Tests use it where many runs share one server.
"""

from __future__ import annotations

import importlib
import sys

if __name__ == "__main__":
    module, port = sys.argv[1], int(sys.argv[2])
    server = importlib.import_module(module).server
    server.settings.host = "127.0.0.1"
    server.settings.port = port
    server.run(transport="streamable-http")
