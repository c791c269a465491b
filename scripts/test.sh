#!/usr/bin/env bash
# Runs every Keyhaven test: the Swift test suites (unit, end-to-end CLI, fixtures against reference
# implementations). This is the README's test command; .ci/run calls it after the soundness checks.
#
# Tests that need outside programs install them when they are missing and the machine allows it
# (Debian/Ubuntu with apt as root, PyPI via pip); see scripts/install-test-deps.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
swift build --build-tests
swift test --skip-build "$@"
