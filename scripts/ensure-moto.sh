#!/usr/bin/env bash
# Makes sure .venv holds moto's server (the local AWS for the integration tests).
# Idempotent and quick when moto is already there; works on a fresh clone (CI).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
PY="$VENV/bin/python"

if [ -x "$PY" ] && "$PY" -c "import moto, flask, werkzeug" >/dev/null 2>&1; then
  exit 0
fi

PYTHON_BIN="${PYTHON:-python3}"
if ! command -v "$PYTHON_BIN" >/dev/null 2>&1; then
  echo "ensure-moto: $PYTHON_BIN not found; install Python 3.9+ to run the integration tests" >&2
  exit 1
fi

echo "ensure-moto: installing moto[server] into $VENV" >&2
if [ ! -x "$PY" ]; then
  "$PYTHON_BIN" -m venv "$VENV"
fi
"$PY" -m pip install --quiet --disable-pip-version-check "moto[server]>=5.2,<5.3"
"$PY" -c "import moto; print('ensure-moto: moto', moto.__version__)" >&2
