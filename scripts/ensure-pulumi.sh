#!/usr/bin/env bash
# Finds the Pulumi CLI (v3.249 or newer, the first with `pulumi policy analyze --file`) together with
# its Node language host, which runs the policy pack, and prints the directory holding both. The
# analyzer tier (npm run test:analyzer) runs the real engine's analyzer from there. Looked for, in order:
#
#   1. $ENCACHE_PULUMI_BIN: a directory holding `pulumi` and `pulumi-language-nodejs`;
#   2. `pulumi` on PATH, with `pulumi-language-nodejs` beside it;
#   3. .tools/pulumi/*/bin (git-ignored), unpacked here before;
#   4. a `pulumi-v*-linux-x64.tar.xz` release in $ENCACHE_PULUMI_TOOLS, in ../shared/tools (beside the
#      checkout), or in ../shared/tools beside the repository this one was cloned from (a clone of a
#      local checkout, as CI makes one), unpacked into .tools/pulumi/.
#
# Exit codes: 0 found (the directory on stdout); 3 none found (one line on stderr saying what to
# install: the tier is then skipped); 1 anything else. Idempotent and quick once found.
set -euo pipefail
cd "$(dirname "$0")/.."

MIN_MINOR=249
TOOLS_DIR=.tools/pulumi

# usable <dir>: both binaries there, and the CLI new enough.
usable() {
  local dir=$1 version minor
  [ -x "$dir/pulumi" ] && [ -x "$dir/pulumi-language-nodejs" ] || return 1
  version=$(PULUMI_SKIP_UPDATE_CHECK=1 "$dir/pulumi" version 2>/dev/null) || return 1
  # v3.274.1 → 274; any major above 3 is new enough.
  [[ $version =~ ^v([0-9]+)\.([0-9]+) ]] || return 1
  minor=${BASH_REMATCH[2]}
  [ "${BASH_REMATCH[1]}" -gt 3 ] || { [ "${BASH_REMATCH[1]}" -eq 3 ] && [ "$minor" -ge "$MIN_MINOR" ]; }
}

found() {
  (cd "$1" && pwd)
  exit 0
}

if [ -n "${ENCACHE_PULUMI_BIN:-}" ]; then
  if usable "$ENCACHE_PULUMI_BIN"; then found "$ENCACHE_PULUMI_BIN"; fi
  echo "ensure-pulumi: ENCACHE_PULUMI_BIN=$ENCACHE_PULUMI_BIN does not hold pulumi >= 3.$MIN_MINOR and pulumi-language-nodejs" >&2
  exit 3
fi

if command -v pulumi >/dev/null 2>&1; then
  on_path=$(dirname "$(command -v pulumi)")
  if usable "$on_path"; then found "$on_path"; fi
fi

for dir in "$TOOLS_DIR"/*/bin; do
  if [ -d "$dir" ] && usable "$dir"; then found "$dir"; fi
done

# Where a release tarball may be: the environment's choice, beside this checkout, beside its origin.
candidates=()
[ -n "${ENCACHE_PULUMI_TOOLS:-}" ] && candidates+=("$ENCACHE_PULUMI_TOOLS")
candidates+=("../shared/tools")
origin=$(git config --get remote.origin.url 2>/dev/null || true)
origin=${origin#file://}
if [ -n "$origin" ] && [ -d "$origin" ]; then
  candidates+=("$origin/../shared/tools" "$origin/../../shared/tools")
fi
for tools in "${candidates[@]}"; do
  for tarball in "$tools"/pulumi-v*-linux-x64.tar.xz; do
    [ -f "$tarball" ] || continue
    echo "ensure-pulumi: unpacking $tarball into $TOOLS_DIR" >&2
    mkdir -p "$TOOLS_DIR"
    tar -xJf "$tarball" -C "$TOOLS_DIR"
    for dir in "$TOOLS_DIR"/*/bin; do
      if [ -d "$dir" ] && usable "$dir"; then found "$dir"; fi
    done
  done
done

echo "ensure-pulumi: no Pulumi CLI >= 3.$MIN_MINOR with its Node language host (pulumi-language-nodejs) found; install it (https://www.pulumi.com/docs/install/) or set ENCACHE_PULUMI_BIN to its directory to run the analyzer tier" >&2
exit 3
