#!/usr/bin/env bash
# The test command (README.md). Runs pytest inside a fresh network namespace with only
# loopback up when `unshare -n` works here, so no test can reach anything but 127.0.0.1.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
# A crash in native code (even at interpreter exit, after pytest has finished) prints the
# Python stacks of every thread instead of a bare "Segmentation fault".
export PYTHONFAULTHANDLER=1
if [ "${AGENTPORT_NO_UNSHARE:-}" != "1" ] && unshare -n true 2>/dev/null; then
    exec unshare -n sh -c 'ip link set lo up 2>/dev/null || true; exec "$@"' sh "$PY" -m pytest "$@"
fi
echo "scripts/test.sh: unshare -n is not available; running without network isolation" >&2
exec "$PY" -m pytest "$@"
