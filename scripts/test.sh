#!/usr/bin/env bash
# Runs every Keyhaven test. This is the README's test command; .ci/run calls it after the soundness
# checks.
#   1. the Swift test suites (unit, end-to-end CLI, real browsers, fixtures against reference
#      implementations, fault injection);
#   2. schemathesis against the example service with the protocol's OpenAPI document.
# Outside programs (Chromium, Python packages) are installed when missing: scripts/install-test-deps.sh.
# The identity provider's PostgreSQL tests run against a real server that
# scripts/start-test-postgres.sh installs and starts (KEYHAVEN_TEST_POSTGRES_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-test-deps.sh
KEYHAVEN_TEST_POSTGRES_URL=$(scripts/start-test-postgres.sh)
export KEYHAVEN_TEST_POSTGRES_URL
swift build --build-tests
# Every import names a declared dependency (the boundaries between targets stay honest).
python3 scripts/check-imports.py
# Suites that drive Chromium or python clients run here (they are installed above): a missing tool
# fails them instead of skipping them, as plain `swift test` does.
export KEYHAVEN_REQUIRE_EXTERNAL_TOOLS=1
# One test at a time. In parallel, ~45 suites start together on a 2-core machine: Chromium, python
# clients, PostgreSQL and scrypt-heavy tests starve the servers other tests run in-process, whose
# timeouts then fire now and then (measured: 80 s parallel with occasional such failures, 130 s
# serial with none). `swift test` alone still runs them in parallel for a quick local check.
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
