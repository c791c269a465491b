#!/usr/bin/env bash
# Installs what the test suites need beyond Swift, if it is missing. Idempotent and quiet when
# everything is present:
#   - python3 with `requests` (a plain HTTP client run against our range server and local API),
#     `selenium` (drives the step-up page and the provider's pages), `schemathesis` (fuzzes the
#     protocol's OpenAPI document), and `pyjwt`, `joserfc`, `authlib` (independent clients that must
#     verify the identity provider's tokens);
#   - Chromium and its driver, headless (Debian packages `chromium` and `chromium-driver`);
#   - Firefox ESR and `marionette-driver` (Mozilla's client; the AutoFill smoke test), node (the
#     extension's crypto against the protocol's vectors), `cryptography` (makes those vectors);
#   - keepassxc (keepassxc-cli: the KeePass XML round trip through KeePassXC);
#   - for scripts/test-package.sh: zsh and fish (the completion scripts must parse), dpkg-dev
#     (dpkg-shlibdeps) and systemd (systemd-analyze checks the provider's unit).
# Needs root and apt for the system packages (CI, a fresh Debian/Ubuntu machine); pip for the rest.
set -euo pipefail

need_apt=()
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need_apt+=(chromium-driver)
command -v zsh >/dev/null 2>&1 || need_apt+=(zsh)
command -v fish >/dev/null 2>&1 || need_apt+=(fish)
command -v dpkg-shlibdeps >/dev/null 2>&1 || need_apt+=(dpkg-dev)
command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
# AutoFill: Firefox ESR (the extension's smoke test) and node (its crypto module against the vectors).
command -v firefox-esr >/dev/null 2>&1 || need_apt+=(firefox-esr)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
# Passkeys: KeePassXC reads Keyhaven's KeePass XML export and writes its own for the round trip.
command -v keepassxc-cli >/dev/null 2>&1 || need_apt+=(keepassxc)

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
# axe-core (bundled in this package) checks the web app's pages against WCAG 2 A/AA.
python3 -c "import axe_selenium_python" >/dev/null 2>&1 || need_pip+=(axe-selenium-python)
python3 -c "import schemathesis" >/dev/null 2>&1 || need_pip+=(schemathesis)
# py_webauthn: an independent relying party for the passkey authenticator (PasskeysTests).
python3 -c "import webauthn" >/dev/null 2>&1 || need_pip+=(webauthn)
# fido2 (Yubico): the encoders of an independent authenticator against PasskeyRelyingParty.
python3 -c "import fido2" >/dev/null 2>&1 || need_pip+=("fido2>=2.2")
python3 -c "import jwt; assert jwt.__version__ >= '2'" >/dev/null 2>&1 || need_pip+=("pyjwt>=2.15")
python3 -c "import joserfc" >/dev/null 2>&1 || need_pip+=("joserfc>=1.8")
python3 -c "import authlib" >/dev/null 2>&1 || need_pip+=("authlib>=1.9.6")
python3 -c "import marionette_driver" >/dev/null 2>&1 || need_pip+=(marionette-driver)
python3 -c "import cryptography" >/dev/null 2>&1 || need_pip+=(cryptography)
if [ ${#need_pip[@]} -gt 0 ]; then
    echo "installing python packages: ${need_pip[*]}"
    # A distribution's own python3 (Debian 12+, Ubuntu 23.04+) refuses pip installs outside a
    # virtual environment (PEP 668); for a test machine, installing beside it is what we want.
    python3 -m pip install --quiet "${need_pip[@]}" 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages "${need_pip[@]}" || {
        echo "cannot install the python packages ${need_pip[*]}" >&2
        exit 1
    }
fi
