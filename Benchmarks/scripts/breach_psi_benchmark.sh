#!/usr/bin/env bash
# The private breach check end to end (issue 29): `keyhaven audit --breach-psi` of a PASSWORDS-credential
# vault against a local `keyhaven breach psi serve` over a HASHES-hash corpus, whole process, with the
# breach stage's time (`--timings`); the bytes of the server's answers (posted by hand, every bucket
# size seen); and, when the binary has `breach top`, the same audit with a local list.
#   Benchmarks/scripts/breach_psi_benchmark.sh [PASSWORDS] [HASHES]   (default 1000 50000)
# KEYHAVEN_BIN: the keyhaven binary to measure (default: a release build of this checkout).
set -euo pipefail
cd "$(dirname "$0")/../.."
count="${1:-1000}"
hashes="${2:-50000}"
work=$(mktemp -d /tmp/keyhaven-psi-bench.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
if [ -z "${KEYHAVEN_BIN:-}" ]; then
    swift build -c release --product keyhaven >/dev/null
    KEYHAVEN_BIN=.build/release/keyhaven
fi
bin="$KEYHAVEN_BIN"
export KEYHAVEN_VAULT="$work/vault.sqlite" KEYHAVEN_PASSWORD="benchmark master password"

python3 Benchmarks/scripts/synthetic_vault.py "$count" "$work" "$hashes"
$bin init >/dev/null
$bin import "$work/export.csv" >/dev/null

start=$(date +%s.%N)
$bin breach psi build "$work/pwned.txt" --output "$work/psi" --json 2>/dev/null > "$work/build.json"
end=$(date +%s.%N)
python3 -c "
import json; b = json.load(open('$work/build.json')); s = $end - $start
print(f'psi build: {b[\"digests\"]} hashes in {s:.1f} s ({b[\"digests\"] / s:.0f} evaluations/s, one thread), largest bucket {b[\"largestBucket\"]}')"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
$bin breach psi serve "$work/psi" --port "$port" --rate 1000000 --burst 1000000 2>/dev/null &
server=$!
base="http://127.0.0.1:$port"
for _ in $(seq 100); do curl -sf "$base/psi/v1/key" >/dev/null && break; sleep 0.1; done

# Answers' bytes: 200 requests to random buckets with the group's generator as the blinded element.
python3 - "$base" "$hashes" <<'PY'
import random, sys, urllib.request
base, hashes = sys.argv[1], int(sys.argv[2])
g = bytes.fromhex("03aa87ca22be8b05378eb1c71ef320ad746e1d3b628ba79b9859f741e082542a385502f25dbf55296c3a545e3872760ab7")
sizes = []
for _ in range(200):
    body = bytes([1]) + random.randrange(1 << 15).to_bytes(2, "big") + g
    request = urllib.request.Request(base + "/psi/v1/query", data=body, headers={"Content-Type": "application/octet-stream"})
    sizes.append(len(urllib.request.urlopen(request).read()))
entries = hashes / 32768
print(f"answer bytes: mean {sum(sizes) / len(sizes):.0f}, max {max(sizes)} ({entries:.2f} entries per bucket here; "
      f"168 + 8 x entries: ~244,000 for the 10^9 hashes of Pwned Passwords)")
PY

audit() {
    local label="$1"; shift
    local start end
    # A first run learns that the synthetic sites do not resolve (kept in the vault): the measured
    # run asks no site, so what is left is the unlock, the offline stages and the breach check.
    $bin audit --breach-psi "$base" "$@" >/dev/null 2>&1 || true
    start=$(date +%s.%N)
    $bin audit --breach-psi "$base" "$@" --timings --json 2> "$work/timings.txt" > "$work/report.json"
    end=$(date +%s.%N)
    python3 - "$work" "$label" "$end" "$start" <<'PY'
import json, re, sys
work, label, end, start = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
s = json.load(open(f"{work}/report.json"))["summary"]
timings = open(f"{work}/timings.txt").read()
stage = re.search(r"breach check \(private set intersection\) ([0-9.]+) s", timings)
unlock = re.search(r"unlock and decrypt ([0-9.]+) s", timings)
print(f"{label}: {s['credentials']} credentials, {s['breached']} breached, check {s['breachCheck']}; "
      f"whole process {end - start:.2f} s (unlock {unlock.group(1) if unlock else '?'} s, "
      f"breach stage {stage.group(1) if stage else '?'} s)")
PY
}
audit "audit --breach-psi"
if $bin breach --help 2>/dev/null | grep -q "^  top "; then
    $bin breach top "$work/pwned.txt" --output "$work/top.khbi" --top 1000000 >/dev/null 2>&1
    audit "audit --breach-psi, every hash on the local list" --breach-top "$work/top.khbi"
fi
