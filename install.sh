#!/usr/bin/env bash
# Install reinloop from this checkout into ./.venv, with what its tests need:
#   - Python packages: pip install -e '.[test]' (from PyPI);
#   - Debian's chromium (the run-report test renders a page in it), if it is missing;
#   - Debian's postgresql binaries (the PostgreSQL tests start a throwaway server), if they are missing.
# System packages need root (or sudo); without them the install goes on and says which tests will fail.
set -euo pipefail
cd "$(dirname "$0")"

apt_install() {
    local runner=()
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1; then runner=(sudo); else
            echo "install.sh: not root and no sudo: cannot install $*; the tests that need them will fail" >&2
            return 0
        fi
    fi
    "${runner[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${runner[@]}" apt-get install -y -qq "$@" >/dev/null
}

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-wqy-microhei)
ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || missing+=(postgresql)
if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt_install "${missing[@]}"
fi

python3 -m venv .venv
.venv/bin/pip install --quiet --upgrade pip
.venv/bin/pip install --quiet -e '.[test]'
