#!/usr/bin/env bash
# Installs what the test suites need beyond Swift, if it is missing. Idempotent and quiet when
# everything is present:
#   - python3 with `requests` (a plain HTTP client run against our range server).
set -euo pipefail

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)

if [ ${#need_apt[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing: ${need_apt[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
    else
        echo "missing test dependencies: ${need_apt[*]} (install them, or run as root on Debian/Ubuntu)" >&2
        exit 1
    fi
fi

if ! python3 -c "import requests" >/dev/null 2>&1; then
    echo "installing: python requests"
    python3 -m pip install --quiet requests || {
        echo "cannot install the python package requests" >&2
        exit 1
    }
fi
