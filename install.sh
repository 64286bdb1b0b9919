#!/usr/bin/env bash
# Install reinloop from this checkout into ./.venv, with what its tests need:
#   - Python packages: pip install -e '.[test]' (from PyPI);
#   - Debian's chromium (the run-report test renders a page in it), if it is missing;
#   - Debian's postgresql binaries (the PostgreSQL tests start a throwaway server), if they are missing.
# System packages need root (or sudo); without them the install goes on and says which tests will fail.
# Each long step prints one line; its own output (apt's, pip's, setuptools' editable-install banner)
# goes to a log that is shown only when the step fails.
set -euo pipefail
cd "$(dirname "$0")"

log=$(mktemp "${TMPDIR:-/tmp}/reinloop-install.XXXXXX")
trap 'rm -f "$log"' EXIT

step() {  # step DESCRIPTION COMMAND...: one progress line; the command's output only if it fails
    local what=$1
    shift
    echo "install.sh: $what ..."
    if ! "$@" >"$log" 2>&1; then
        echo "install.sh: $what failed; its last output:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
}

apt_install() {
    local runner=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then runner=(sudo); else
            echo "install.sh: not root and no sudo: cannot install $*; the tests that need them will fail" >&2
            return 0
        fi
    fi
    step "updating apt's package lists" "${runner[@]}" apt-get update -qq
    step "installing $* with apt-get (a few minutes)" \
        "${runner[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-wqy-microhei)
ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install "${missing[@]}"
fi

step "creating .venv" python3 -m venv .venv
step "upgrading pip in .venv" .venv/bin/pip install --quiet --upgrade pip
step "installing reinloop and its test dependencies into .venv (pip, a few minutes)" \
    .venv/bin/pip install --quiet -e '.[test]'
echo "install.sh: done; try .venv/bin/reinloop demo"
