#!/usr/bin/env bash
# Makes Debian's cloud-init available for the user-data test (test/infra/cloud-init.test.ts), without
# touching the system: the package is downloaded (not installed) and unpacked under .tools/cloud-init,
# and its Python dependencies go into their own venv, .venv-cloud-init (both git-ignored). Then
#
#   PYTHONPATH=.tools/cloud-init/usr/lib/python3/dist-packages .venv-cloud-init/bin/python \
#     .tools/cloud-init/usr/bin/cloud-init schema --config-file <file>
#
# validates a #cloud-config file against cloud-init's own schema. Idempotent and quick when both are
# there; works on a fresh clone on Debian or Ubuntu (CI), needing apt-get and dpkg-deb but no root.
set -euo pipefail
cd "$(dirname "$0")/.."

DIR=.tools/cloud-init
VENV=.venv-cloud-init
PY="$VENV/bin/python"
SITE="$DIR/usr/lib/python3/dist-packages"

if [ -x "$PY" ] && [ -f "$DIR/usr/bin/cloud-init" ] && PYTHONPATH="$SITE" "$PY" -c "import cloudinit.config.schema, jsonschema, yaml, configobj, jinja2, jsonpatch, requests" >/dev/null 2>&1; then
  exit 0
fi

for tool in apt-get dpkg-deb; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ensure-cloud-init: $tool not found; the cloud-init schema test needs Debian's or Ubuntu's package tools" >&2
    exit 1
  fi
done
PYTHON_BIN="${PYTHON:-python3}"
if ! command -v "$PYTHON_BIN" >/dev/null 2>&1; then
  echo "ensure-cloud-init: $PYTHON_BIN not found; install Python 3.9+ to run the cloud-init schema test" >&2
  exit 1
fi

if [ ! -f "$DIR/usr/bin/cloud-init" ]; then
  echo "ensure-cloud-init: downloading Debian's cloud-init package into $DIR" >&2
  TMP="$(mktemp -d)"
  trap 'rm -rf "$TMP"' EXIT
  # apt-get download fetches the candidate .deb into the current directory, as any user, installing nothing.
  (cd "$TMP" && apt-get download cloud-init >/dev/null 2>&1) || (apt-get update >/dev/null 2>&1 && cd "$TMP" && apt-get download cloud-init)
  rm -rf "$DIR"
  mkdir -p "$DIR"
  dpkg-deb -x "$TMP"/cloud-init_*.deb "$DIR"
fi

echo "ensure-cloud-init: installing cloud-init's Python dependencies into $VENV" >&2
if [ ! -x "$PY" ]; then
  "$PYTHON_BIN" -m venv "$VENV"
fi
"$PY" -m pip install --quiet --disable-pip-version-check configobj jsonschema pyyaml jinja2 jsonpatch requests
PYTHONPATH="$SITE" "$PY" "$DIR/usr/bin/cloud-init" --version >&2
