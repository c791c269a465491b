#!/usr/bin/env bash
# Password generation throughput: keyhaven vs peers, measured in the same run on the same machine.
#   Benchmarks/scripts/generate_peers.sh [COUNT]        (default 200000)
# Peers: pwgen -s (Debian `pwgen`, 20 characters, secure mode) and Python's `secrets` module drawing
# 20 characters from ascii letters+digits. keyhaven runs Apple's format and, separately, the
# americanexpress.com quirk rule (random style with required lines and max-consecutive).
# Installs pwgen with apt when missing and running as root. Builds keyhaven in release mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-200000}"

if ! command -v pwgen >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pwgen >/dev/null
fi
swift build -c release --product keyhaven >/dev/null
bin=.build/release/keyhaven

measure() { # name command...
    local name="$1"; shift
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    python3 -c "import sys; n=$count; t=$end-$start; print(f'{sys.argv[1]:<34} {n/t:>12,.0f} passwords/s  ({t:.2f} s)')" "$name"
    echo "$end $start" >"/tmp/kh-bench-$name"
}
rate() { python3 -c "s,e=open('/tmp/kh-bench-$1').read().split(); print($count/(float(s)-float(e)))"; }

echo "Generating $count passwords each:"
measure keyhaven-apple-format "$bin" generate --count "$count"
measure keyhaven-quirk-amex "$bin" generate --domain americanexpress.com --count "$count"
if command -v pwgen >/dev/null 2>&1; then
    measure pwgen-secure pwgen -s -1 20 "$count"
fi
measure python-secrets python3 -c "
import secrets, string, sys
a = string.ascii_letters + string.digits
w = sys.stdout.write
for _ in range($count): w(''.join(secrets.choice(a) for _ in range(20)) + '\n')"

ours=$(rate keyhaven-apple-format)
for peer in pwgen-secure python-secrets; do
    [ -f "/tmp/kh-bench-$peer" ] || continue
    python3 -c "print(f'ratio keyhaven(apple format) / $peer: {$ours/$(rate $peer):.2f}x')"
done
