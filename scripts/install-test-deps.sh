#!/usr/bin/env bash
# Installs what the test suites need beyond Swift, if it is missing. Idempotent and quiet when
# everything is present:
#   - python3 with `requests` (a plain HTTP client run against our range server and local API),
#     `selenium` (drives the step-up page) and `schemathesis` (fuzzes the protocol's OpenAPI document);
#   - Chromium and its driver, headless (Debian packages `chromium` and `chromium-driver`).
# Needs root and apt for the system packages (CI, a fresh Debian/Ubuntu machine); pip for the rest.
set -euo pipefail

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3 python3-pip)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)

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

need_pip=()
python3 -c "import requests" >/dev/null 2>&1 || need_pip+=(requests)
python3 -c "import selenium" >/dev/null 2>&1 || need_pip+=(selenium)
python3 -c "import schemathesis" >/dev/null 2>&1 || need_pip+=(schemathesis)
if [ ${#need_pip[@]} -gt 0 ]; then
    echo "installing python packages: ${need_pip[*]}"
    python3 -m pip install --quiet "${need_pip[@]}" || {
        echo "cannot install the python packages ${need_pip[*]}" >&2
        exit 1
    }
fi
