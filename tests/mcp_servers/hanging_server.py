"""An MCP server that hangs on startup: it reads requests and never answers (exits on EOF)."""

import sys

for _line in sys.stdin:
    pass
