#!/usr/bin/env bash
# The official MCP conformance suite against `acti-store serve-mcp --transport http`.
#
# Starts the server on a free loopback port with a fresh SQLite store, runs every scenario that
# applies to it (the others need the suite's own test tools, resources and prompts) and exits
# non-zero when one fails or warns. Needs Node 20+ (npx) and acti-store on PATH (or PYTHON set
# to a Python that has it). The first run downloads the suite from npm; later runs use npx's cache
# (NPX_OFFLINE=1: the cache only, no network).
#
#   .ci/mcp_conformance.sh                 # every applicable scenario
#   .ci/mcp_conformance.sh ping tools-list # these only
set -euo pipefail

SUITE="@modelcontextprotocol/conformance@0.1.13"
PYTHON="${PYTHON:-python3}"
SCENARIOS=(
    server-initialize
    ping
    tools-list
    resources-list
    resources-subscribe
    resources-unsubscribe
    prompts-list
    logging-set-level
    completion-complete
    dns-rebinding-protection
    server-sse-multiple-streams
)
# Scenarios that may warn: server-sse-polling negotiates protocol 2025-03-26, for which the SDK
# sends no priming event (it does for 2025-11-25 clients), and calls its own test_reconnection tool.
MAY_WARN=(server-sse-polling)
if [[ $# -gt 0 ]]; then
    SCENARIOS=("$@")
    MAY_WARN=()
fi

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
url="http://127.0.0.1:${port}/mcp"
if command -v acti-store >/dev/null 2>&1; then
    serve=(acti-store)
else
    serve=("$PYTHON" -m acti_store)
fi
env -u ACTI_STORE_MCP_TOKEN "${serve[@]}" serve-mcp --url "sqlite:///${work}/conformance.db" \
    --transport http --host 127.0.0.1 --port "$port" >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 240); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "serve-mcp exited:" >&2
        cat "$work/server.log" >&2
        exit 1
    fi
    if "$PYTHON" -c "import socket, sys; socket.create_connection(('127.0.0.1', $port), 0.5)" 2>/dev/null; then
        break
    fi
    sleep 0.5
done

failed=()
run() {  # run SCENARIO ALLOW_WARNINGS
    local out
    if ! out="$(npx ${NPX_OFFLINE:+--offline} -y "$SUITE" server --url "$url" --scenario "$1" 2>&1)"; then
        failed+=("$1")
    elif [[ "$2" == no ]] && ! grep -q ", 0 warnings" <<<"$out"; then
        failed+=("$1 (warnings)")
    fi
    printf '%s\n' "$out" | grep -E "^(Passed|Total):|(FAILURE|WARNING)" | sed "s/^/[$1] /" || true
}
for scenario in "${SCENARIOS[@]}"; do
    run "$scenario" no
done
for scenario in "${MAY_WARN[@]}"; do
    run "$scenario" yes
done

if grep -q "Traceback" "$work/server.log"; then
    echo "the server logged a traceback:" >&2
    cat "$work/server.log" >&2
    failed+=("server log")
fi
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "MCP conformance FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "MCP conformance passed: ${SCENARIOS[*]} ${MAY_WARN[*]}"
