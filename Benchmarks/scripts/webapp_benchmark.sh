#!/usr/bin/env bash
# The web app on a 10,000-credential vault (issue 15): server time of the Security Recommendations
# page (goal ≤ 300 ms), of a vault search (goal ≤ 50 ms) and of the vault list, measured as curl's
# time to first byte over loopback (the request, the page's rendering and the first bytes sent),
# with `keyhaven audit` of the same vault measured in the same run for comparison.
#   Benchmarks/scripts/webapp_benchmark.sh [CREDENTIALS] [REQUESTS]   (default 10000, 30)
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-10000}"
requests="${2:-30}"
work=$(mktemp -d /tmp/keyhaven-webapp-bench.XXXXXX)
bin=.build/release/keyhaven
export KEYHAVEN_VAULT="$work/vault.sqlite" KEYHAVEN_PASSWORD="benchmark master password"
export XDG_RUNTIME_DIR="$work/run" KEYHAVEN_AGENT_SOCKET="$work/run/agent.sock"
trap '$bin agent stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
swift build -c release --product keyhaven >/dev/null

python3 Benchmarks/scripts/synthetic_vault.py "$count" "$work" 100000

$bin init >/dev/null
$bin import "$work/export.csv" >/dev/null
# Beside the vault: the app's automatic breach source uses it, as `keyhaven audit` does.
$bin breach index build "$work/pwned.txt" --output "$work/pwned.khbi" --compact >/dev/null
url=$($bin ui --no-open 2>/dev/null | head -1)
$bin unlock >/dev/null
origin=${url%%/launch*}
# The launch page sets the cookie and names the session's paths (/s/CAPABILITY/); both are needed.
base=$(curl -s -c "$work/jar" "$url" | sed -n 's/.*id="continue" href="\([^"]*\)\/".*/\1/p')
app="$origin$base"
csrf=$(curl -s -b "$work/jar" "$app/settings" | sed -n 's/.*name="csrf-token" content="\([^"]*\)".*/\1/p')
# No change-password probes or manifests: the sites are made up.
curl -s -b "$work/jar" -H "Origin: $origin" -o /dev/null \
    --data "csrf=$csrf&idleLockMinutes=0&breachSource=automatic&breachIndexPath=&breachAPI=https://api.pwnedpasswords.com" \
    "$app/settings"

first=$(curl -s -b "$work/jar" -o /dev/null -w '%{time_starttransfer}' "$app/recommendations")
measure() {  # name path → p50/p95/max of time to first byte, in ms
    local name=$1 path=$2
    for _ in $(seq "$requests"); do
        curl -s -b "$work/jar" -o "$work/body" -w '%{time_starttransfer}\n' "$app$path"
    done | NAME="$name" python3 -c "
import os, sys
times = sorted(float(line) * 1000 for line in sys.stdin)
p = lambda q: times[min(len(times) - 1, int(q * len(times)))]
print(f'{os.environ[\"NAME\"]}: p50 {p(0.5):.1f} ms, p95 {p(0.95):.1f} ms, max {times[-1]:.1f} ms over {len(times)} requests')
"
}
echo "Web app on $count credentials ($(curl -s -b "$work/jar" "$app/api/items?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])') in the vault):"
python3 -c "print(f'first Security Recommendations view (the audit runs once per vault change): {float(\"$first\") * 1000:.0f} ms')"
measure "Security Recommendations page (goal ≤ 300 ms)" /recommendations
size=$(stat -c %s "$work/body")
echo "  (page size $((size / 1024)) KiB; each group shows its first 100, \"Show all\" the rest)"
measure "Security Recommendations, the largest group shown whole (breached)" "/recommendations?group=high"
size=$(stat -c %s "$work/body")
echo "  (page size $((size / 1024)) KiB)"
measure "search, site4242 (goal ≤ 50 ms)" "/api/items?q=site4242"
measure "search, mail.example (matches all; first 200 returned)" "/api/items?q=mail.example"
measure "vault list page (first 200 of $count)" /vault
measure "overview page (charts)" /

start=$(date +%s.%N)
$bin audit --no-network --json > /dev/null
end=$(date +%s.%N)
python3 -c "print(f'peer in the same run: keyhaven audit --no-network (the CLI: unlock + audit + print) {($end - $start) * 1000:.0f} ms')"
