#!/usr/bin/env bash
# Install reinloop from this checkout into ./.venv.
#   ./install.sh          what the demo and the library need: pip install -e . (its runtime dependencies, from PyPI);
#   ./install.sh --test   what the tests need besides: the test extra (pip install -e '.[test]'), and Debian's
#                         chromium (the run-report test renders a page in it) and postgresql binaries (the
#                         PostgreSQL tests start a throwaway server) when they are missing.
# System packages need root (or sudo); without them the install goes on and says which tests will fail.
# apt waits up to 2 minutes for its lock (another apt or unattended-upgrades running) before it gives up.
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
    local wait=(-o DPkg::Lock::Timeout=120)  # another apt holding the lock: wait for it, not fail at once
    step "updating apt's package lists" "${runner[@]}" apt-get "${wait[@]}" update -qq
    step "installing $* with apt-get (a few minutes)" \
        "${runner[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "${wait[@]}" install -y -qq "$@"
}

case "${1:-}" in
    "") tests=0 ;;
    --test) tests=1 ;;
    *) echo "usage: ./install.sh [--test]  (--test: also what the tests need)" >&2; exit 2 ;;
esac

if [ "$tests" = 1 ]; then
    missing=()
    command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-wqy-microhei)
    ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || missing+=(postgresql)
    if [ "${#missing[@]}" -gt 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt_install "${missing[@]}"
    fi
fi

if [ ! -x .venv/bin/pip ]; then
    step "creating .venv" python3 -m venv .venv
    step "upgrading pip in .venv" .venv/bin/pip install --quiet --upgrade pip
fi
if [ "$tests" = 1 ]; then
    step "installing reinloop and its test dependencies into .venv (pip, a few minutes)" \
        .venv/bin/pip install --quiet -e '.[test]'
    echo "install.sh: done; run the tests with .venv/bin/python -m pytest"
else
    step "installing reinloop into .venv (pip, a minute)" .venv/bin/pip install --quiet -e .
    echo "install.sh: done; try .venv/bin/reinloop demo"
fi
