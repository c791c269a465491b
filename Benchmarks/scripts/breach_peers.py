#!/usr/bin/env python3
"""Breach-check benchmark: keyhaven vs KeePassXC on the same machine, in one run.

    python3 Benchmarks/scripts/breach_peers.py [--hashes 10000000] [--entries 3000] [--work DIR]
                                               [--keyhaven .build/release/keyhaven] [--wrk-seconds 10]

Steps (all timed here, nothing taken from elsewhere):
 1. Generate an HIBP-format file (`SHA1:COUNT`, CRLF, shuffled) with --hashes random hashes, plus the
    SHA-1 of every third of --entries passwords.
 2. Build a KeePassXC database with those --entries passwords (`keepassxc-cli import` from KeePass
    XML) and time `keepassxc-cli analyze --hibp FILE DB` (KeePassXC reads the whole text file once).
 3. Build keyhaven indexes (compact and full): build time and bytes per hash. Time
    `keyhaven breach check --index` on the same passwords (whole process: start, map, look up).
 4. Lookups per second: `keyhaven breach check --index --sha1` on 1,000,000 hashes.
 5. The range server under wrk on loopback (random prefixes, 64 connections): requests/s and p99.

Needs: keepassxc-cli (Debian `keepassxc`), wrk (Debian `wrk`); installed with apt when missing and
running as root. Builds keyhaven in release mode unless --keyhaven is given.
"""
import argparse, hashlib, os, random, re, shutil, signal, socket, subprocess, sys, time, uuid, base64

ap = argparse.ArgumentParser()
ap.add_argument("--hashes", type=int, default=10_000_000)
ap.add_argument("--entries", type=int, default=3000)
ap.add_argument("--work", default="/tmp/keyhaven-breach-bench")
ap.add_argument("--keyhaven")
ap.add_argument("--wrk-seconds", type=int, default=10)
args = ap.parse_args()
root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.makedirs(args.work, exist_ok=True)


def need(tool, package):
    if shutil.which(tool):
        return
    if os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", package], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if not shutil.which(tool):
        sys.exit(f"{tool} is needed (Debian package {package})")


need("keepassxc-cli", "keepassxc")
need("wrk", "wrk")
keyhaven = args.keyhaven
if not keyhaven:
    subprocess.run(["swift", "build", "-c", "release", "--product", "keyhaven"], cwd=root, check=True)
    keyhaven = os.path.join(root, ".build", "release", "keyhaven")


def timed(command, **kwargs):
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, **kwargs)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr.decode()[-2000:]}")
    return elapsed, result


# 1. The HIBP file.
rng = random.Random(2026)
passwords = [f"bench-{i}-{rng.getrandbits(40):x}" for i in range(args.entries)]
leaked = {hashlib.sha1(p.encode()).hexdigest().upper(): rng.randint(1, 500_000)
          for i, p in enumerate(passwords) if i % 3 == 0}
hibp = os.path.join(args.work, f"pwned-{args.hashes}.txt")
if not os.path.exists(hibp):
    print(f"generating {args.hashes:,} hashes ...", flush=True)
    with open(hibp, "wb") as out:
        remaining = args.hashes
        chunk = 200_000
        items = list(leaked.items())
        while remaining > 0:
            n = min(chunk, remaining)
            raw = os.urandom(20 * n).hex().upper()
            lines = [f"{raw[40 * k:40 * k + 40]}:{rng.randint(1, 1000)}" for k in range(n)]
            take = items[:max(1, len(items) * n // args.hashes)] if items else []
            items = items[len(take):]
            lines += [f"{h}:{c}" for h, c in take]
            rng.shuffle(lines)
            out.write(("\r\n".join(lines) + "\r\n").encode())
            remaining -= n
        for h, c in items:
            out.write(f"{h}:{c}\r\n".encode())
size = os.path.getsize(hibp)
print(f"HIBP file: {hibp} ({size / 1e6:,.0f} MB)")

# 2. KeePassXC.
def b64uuid():
    return base64.b64encode(uuid.uuid4().bytes).decode()

xml = os.path.join(args.work, "entries.xml")
with open(xml, "w", encoding="utf-8") as out:
    out.write('<?xml version="1.0" encoding="utf-8" standalone="yes"?>\n<KeePassFile><Meta><Generator>keyhaven</Generator>'
              '<DatabaseName>bench</DatabaseName></Meta><Root><Group><UUID>' + b64uuid() + '</UUID><Name>Root</Name>\n')
    for i, p in enumerate(passwords):
        out.write(f'<Entry><UUID>{b64uuid()}</UUID><String><Key>Title</Key><Value>site {i}</Value></String>'
                  f'<String><Key>UserName</Key><Value>user{i}</Value></String>'
                  f'<String><Key>Password</Key><Value>{p}</Value></String>'
                  f'<String><Key>URL</Key><Value>https://site{i}.example</Value></String></Entry>\n')
    out.write('</Group></Root></KeePassFile>\n')
database = os.path.join(args.work, "bench.kdbx")
if os.path.exists(database):
    os.remove(database)
timed(["keepassxc-cli", "import", "-p", "-t", "100", xml, database], input=b"benchpw\nbenchpw\n")
kp_seconds, kp = timed(["keepassxc-cli", "analyze", "--hibp", hibp, database], input=b"benchpw\n")
kp_found = len(re.findall(rb"has been seen", kp.stdout)) or kp.stdout.count(b"\n")
print(f"KeePassXC 2.7 analyze --hibp: {kp_seconds:.2f} s for {args.entries} passwords "
      f"({kp_seconds / args.entries * 1e6:,.0f} us per check), {kp_found} reported")

# 3. keyhaven indexes.
results = {}
for kind in ["compact", "full"]:
    index = os.path.join(args.work, f"pwned-{kind}.khbi")
    extra = ["--compact"] if kind == "compact" else []
    seconds, _ = timed([keyhaven, "breach", "index", "build", hibp, "--output", index] + extra)
    per_hash = os.path.getsize(index) / (args.hashes + len(leaked))
    results[kind] = index
    print(f"keyhaven index ({kind}): built in {seconds:.1f} s ({(args.hashes / seconds) / 1e6:.2f} M hashes/s), "
          f"{per_hash:.2f} bytes per hash")

stdin = ("\n".join(passwords) + "\n").encode()
best = None
for _ in range(5):
    seconds, out = timed([keyhaven, "breach", "check", "--index", results["compact"]], input=stdin)
    best = seconds if best is None else min(best, seconds)
found = sum(1 for line in out.stdout.split() if line != b"0")
print(f"keyhaven breach check --index: {best * 1000:.1f} ms for {args.entries} passwords "
      f"({best / args.entries * 1e6:.1f} us per check, whole process), {found} found")
print(f"ratio per check: keyhaven is {kp_seconds / best:,.0f}x faster than KeePassXC (goal >= 100x)")

# 4. Lookups per second.
sample = os.urandom(20 * 1_000_000).hex().upper()
hashes = ("\n".join(sample[40 * k:40 * k + 40] for k in range(1_000_000)) + "\n").encode()
for kind in ["compact", "full"]:
    seconds, _ = timed([keyhaven, "breach", "check", "--index", results[kind], "--sha1"], input=hashes)
    print(f"lookups ({kind}): {1_000_000 / seconds:,.0f} per second through the CLI (parsing included)")

# 5. Range server under wrk.
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen([keyhaven, "breach", "serve", "--index", results["full"], "--port", str(port)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    lua = os.path.join(args.work, "ranges.lua")
    with open(lua, "w") as out:
        out.write('math.randomseed(os.time())\nrequest = function()\n'
                  '  return wrk.format("GET", string.format("/range/%05X", math.random(0, 1048575)))\nend\n')
    for label, headers in [("no padding", []), ("Add-Padding", ["-H", "Add-Padding: true"])]:
        result = subprocess.run(["wrk", "-t2", "-c64", f"-d{args.wrk_seconds}s", "--latency", "-s", lua] + headers
                                + [f"http://127.0.0.1:{port}"], capture_output=True, text=True)
        rps = re.search(r"Requests/sec:\s+([\d.]+)", result.stdout)
        p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", result.stdout)
        p99ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)] if p99 else float("nan")
        print(f"range server ({label}): {float(rps.group(1)) if rps else 0:,.0f} requests/s, p99 {p99ms:.2f} ms "
              f"(goal >= 20,000 requests/s, p99 < 5 ms; wrk and server share this machine's cores)")
finally:
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=10)
