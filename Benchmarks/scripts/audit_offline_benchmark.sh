#!/usr/bin/env bash
# `keyhaven audit` of a new person's imported passwords with the network unreachable (issue 27): every
# site name fails to resolve (the synthetic vault's made-up domains), the range API too (its base is a
# name that never resolves), the vault's scrypt calibrated as a real one is. Goal: ≤ 3 s whole process
# for 310 credentials. Three runs: nothing known yet, then again (what the first learned is in the
# vault), and — with KEYHAVEN_OLD_BINARY set to a build from before issue 27 — the old behaviour on
# the same vault.
#   Benchmarks/scripts/audit_offline_benchmark.sh [CREDENTIALS]   (default 310)
#   KEYHAVEN_BINARY=path uses that build instead of building in release.
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-310}"
work=$(mktemp -d /tmp/keyhaven-audit-offline.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -z "${KEYHAVEN_BINARY:-}" ]; then
    swift build -c release --product keyhaven >/dev/null
fi
bin=${KEYHAVEN_BINARY:-.build/release/keyhaven}
export KEYHAVEN_VAULT="$work/vault.sqlite" KEYHAVEN_PASSWORD="benchmark master password"
unset KEYHAVEN_BREACH_INDEX

python3 Benchmarks/scripts/synthetic_vault.py "$count" "$work" 0
$bin init >/dev/null
$bin import "$work/export.csv" >/dev/null
for file in "$work"/vault.sqlite*; do cp "$file" "${file/vault.sqlite/untouched.sqlite}"; done

audit() {  # label binary vault → wall time and the summary
    local label=$1 binary=$2 vault=$3
    local start end
    start=$(date +%s.%N)
    KEYHAVEN_VAULT="$vault" "$binary" audit --json --timings --breach-api https://api.pwnedpasswords.invalid \
        >"$work/report.json" 2>"$work/timings.txt"
    end=$(date +%s.%N)
    python3 - "$label" "$start" "$end" "$work/report.json" "$work/timings.txt" <<'PY'
import json, sys
label, start, end, report, timings = sys.argv[1:]
s = json.load(open(report))["summary"]
stages = [line.removeprefix("timing: ").strip() for line in open(timings) if line.startswith("timing: ")]
print(f"{label}: {float(end) - float(start):.2f} s wall clock (goal ≤ 3 s) — {s['credentials']} credentials, "
      f"{s['withIssues']} with issues, {s['unreachableSites']} sites unreachable, {s.get('pendingSites', 0)} pending")
print("    " + "; ".join(stages))
PY
}

echo "keyhaven audit, $count credentials, no network (names do not resolve), calibrated scrypt:"
audit "first audit (nothing known yet)" "$bin" "$work/vault.sqlite"
audit "next audit (starts from the vault)" "$bin" "$work/vault.sqlite"
if [ -n "${KEYHAVEN_OLD_BINARY:-}" ]; then
    audit "before issue 27 ($KEYHAVEN_OLD_BINARY)" "$KEYHAVEN_OLD_BINARY" "$work/untouched.sqlite"
fi
