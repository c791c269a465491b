#!/usr/bin/env bash
# Installs what the test suites need beyond Swift, if it is missing. Idempotent and quiet when
# everything is present. Nothing is needed yet beyond python3; later suites add PostgreSQL, Chromium
# and Python clients here.
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
