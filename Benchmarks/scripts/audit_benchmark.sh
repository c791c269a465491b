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

python3 - "$count" "$work" <<'PY'
import hashlib, random, sys
count, work = int(sys.argv[1]), sys.argv[2]
rng = random.Random(7)
common = ["password1", "qwerty123", "iloveyou", "dragon2000", "monkey12", "letmein!", "sunshine7"]
rows, breached = [], []
for i in range(count):
    r = rng.random()
    if r < 0.1:
        pw = rng.choice(common)                      # weak, reused, breached
    elif r < 0.2:
        pw = f"Shared-{i % 50}-Passw0rd!"            # reused across sites
    else:
        pw = "".join(rng.choice("abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789-!") for _ in range(18))
    if r < 0.15:
        breached.append(pw)
    scheme = "http" if rng.random() < 0.03 else "https"
    rows.append(f"site{i}.example,{scheme}://login.site{i}.example/auth,user{i}@mail.example,{pw},")
open(f"{work}/export.csv", "w").write("name,url,username,password,note\n" + "\n".join(rows) + "\n")
with open(f"{work}/pwned.txt", "w") as out:
    for k in range(1_000_000):
        out.write(hashlib.sha1(f"filler-{k}".encode()).hexdigest().upper() + f":{k % 1000 + 1}\r\n")
    for pw in set(breached):
        out.write(hashlib.sha1(pw.encode()).hexdigest().upper() + ":42\r\n")
PY

$bin init >/dev/null
$bin import "$work/export.csv" >/dev/null
$bin breach index build "$work/pwned.txt" --output "$work/pwned.khbi" --compact >/dev/null
echo "Auditing $count credentials (offline index of 1,000,000 hashes, no network):"
start=$(date +%s.%N)
$bin audit --breach-index "$work/pwned.khbi" --no-network --timings --json > "$work/report.json"
end=$(date +%s.%N)
python3 -c "import json; s=json.load(open('$work/report.json'))['summary']; print('summary:', {k: s[k] for k in ('credentials','withIssues','breached','reused','weak','unsecured')})"
python3 -c "print(f'total wall clock: {$end - $start:.2f} s (goal < 2 s)')"
