"""An MCP server that cannot start: it says why on stderr and exits."""

import sys

print("fatal: cannot reach api.example.test (connection refused)", file=sys.stderr)
sys.exit(3)
