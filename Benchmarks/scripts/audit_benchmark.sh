#!/usr/bin/env bash
# Audit of a 10,000-credential vault with an offline breach index, whole process, with a breakdown
# per stage (`keyhaven audit --timings`). Goal: under 2 seconds on this machine.
#   Benchmarks/scripts/audit_benchmark.sh [CREDENTIALS]   (default 10000)
# Uses Keyhaven's default key derivation (calibrated scrypt, at least N=2^17) so unlocking is real.
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-10000}"
work=$(mktemp -d /tmp/keyhaven-audit-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
swift build -c release --product keyhaven >/dev/null
bin=.build/release/keyhaven
export KEYHAVEN_VAULT="$work/vault.sqlite" KEYHAVEN_PASSWORD="benchmark master password"

python3 Benchmarks/scripts/synthetic_vault.py "$count" "$work"

$bin init >/dev/null
$bin import "$work/export.csv" >/dev/null
$bin breach index build "$work/pwned.txt" --output "$work/pwned.khbi" --compact >/dev/null
echo "Auditing $count credentials (offline index of 1,000,000 hashes, no network):"
start=$(date +%s.%N)
$bin audit --breach-index "$work/pwned.khbi" --no-network --timings --json > "$work/report.json"
end=$(date +%s.%N)
python3 -c "import json; s=json.load(open('$work/report.json'))['summary']; print('summary:', {k: s[k] for k in ('credentials','withIssues','breached','reused','weak','unsecured')})"
python3 -c "print(f'total wall clock: {$end - $start:.2f} s (goal < 2 s)')"
