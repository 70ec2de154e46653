#!/usr/bin/env bash
# Makes sure a headless Chromium is there for the HTML report's browser test
# (test/local/show/report.test.ts). Quick when one is: CHROMIUM_PATH, or chromium, chromium-browser or
# google-chrome on PATH. Otherwise it installs Debian's chromium with apt-get, but only as root
# (a CI container, .ci/run on a fresh clone). Anywhere else it says how to get one and carries on:
# the other local tests still run, and the browser test fails with the same advice (never skips).
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -x "$CHROMIUM_PATH" ]; then exit 0; fi
  echo "ensure-chromium: CHROMIUM_PATH=$CHROMIUM_PATH is not executable; the report's browser test will fail" >&2
  exit 0
fi
for browser in chromium chromium-browser google-chrome-stable google-chrome; do
  if command -v "$browser" >/dev/null 2>&1; then exit 0; fi
done

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: installing chromium with apt-get (for the report's browser test)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null; then
    echo "ensure-chromium: $(chromium --version 2>/dev/null || echo chromium installed)" >&2
  else
    echo "ensure-chromium: apt-get could not install chromium; the report's browser test will fail" >&2
  fi
  exit 0
fi

echo "ensure-chromium: no Chromium found and none can be installed here (that needs root and apt-get)." >&2
echo "ensure-chromium: set CHROMIUM_PATH to a Chromium or Chrome binary, or run: sudo apt-get install -y chromium" >&2
