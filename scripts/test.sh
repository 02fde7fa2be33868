#!/usr/bin/env bash
# The test command (README.md). Runs pytest inside a fresh network namespace with only
# loopback up when `unshare -n` works here, so no test can reach anything but 127.0.0.1.
# Extra arguments go to pytest.
#
# With pytest-xdist (the [dev] extra) the tests run on one worker per core, at most 4
# (`--dist loadscope`: a module's tests share one worker, so its module fixtures start once).
# Passing `-n N`, `-p no:xdist`, `--pdb` or `--trace` runs it your way instead.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
workers=$(nproc 2>/dev/null || echo 1)
[ "$workers" -gt 4 ] && workers=4
for arg in "$@"; do
    case $arg in -n* | --numprocesses* | no:xdist | --pdb | --trace) workers=1 ;; esac
done
if [ "$workers" -gt 1 ] && "$PY" -c "import xdist" 2>/dev/null; then
    set -- -n "$workers" --dist loadscope "$@"
fi
# A crash in native code (even at interpreter exit, after pytest has finished) prints the
# Python stacks of every thread instead of a bare "Segmentation fault".
export PYTHONFAULTHANDLER=1
if [ "${AGENTPORT_NO_UNSHARE:-}" != "1" ] && unshare -n true 2>/dev/null; then
    exec unshare -n sh -c 'ip link set lo up 2>/dev/null || true; exec "$@"' sh "$PY" -m pytest "$@"
fi
echo "scripts/test.sh: unshare -n is not available; running without network isolation" >&2
exec "$PY" -m pytest "$@"
