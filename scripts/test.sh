#!/usr/bin/env bash
# Runs every Keyhaven test. This is the README's test command; .ci/run calls it after the soundness
# checks.
#   1. the Swift test suites (unit, end-to-end CLI, real browsers, fixtures against reference
#      implementations, fault injection);
#   2. schemathesis against the example service with the protocol's OpenAPI document, and against
#      `keyhaven sync serve` with docs/openapi/sync.yaml (scripts/schemathesis-sync.sh).
# Outside programs (Chromium, Python packages) are installed when missing: scripts/install-test-deps.sh.
# The identity provider's PostgreSQL tests run against a real server that
# scripts/start-test-postgres.sh installs and starts (KEYHAVEN_TEST_POSTGRES_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
KEYHAVEN_TEST_POSTGRES_URL=$(scripts/start-test-postgres.sh)
export KEYHAVEN_TEST_POSTGRES_URL
# Every import names a declared dependency (the boundaries between targets stay honest): SwiftPM's
# check for imports of this package's targets, scripts/check-imports.py for products of other
# packages (which this toolchain's check does not cover).
swift build --build-tests --explicit-target-dependency-import-check error
python3 scripts/check-imports.py
# Suites that drive Chromium or python clients run here (they are installed above): a missing tool
# fails them instead of skipping them, as plain `swift test` does.
export KEYHAVEN_REQUIRE_EXTERNAL_TOOLS=1
# One test at a time. Before the provider moved scrypt and SQLite off the event loops, parallel runs
# starved in-process servers now and then. Since then (2026-11-23) a parallel run passed all 240
# tests in 156 s against 281 s serial; CI stays serial until parallel runs have proven steady.
# `swift test` alone runs them in parallel for a quick local check.
swift test --skip-build --no-parallel "$@"

# The account-modification contract, fuzzed against a running shiny.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
.build/debug/shiny --port "$port" >/dev/null 2>&1 &
shiny=$!
trap 'kill $shiny 2>/dev/null || true' EXIT
for _ in $(seq 1 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    sleep 0.1
done
scripts/schemathesis.sh "http://127.0.0.1:$port"

# The sync server's contract, fuzzed against a running `keyhaven sync serve` with a device's bearer
# token (about 20 s).
scripts/schemathesis-sync.sh
