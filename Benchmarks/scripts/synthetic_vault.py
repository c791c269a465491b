#!/usr/bin/env python3
"""A synthetic vault export and breach corpus for the audit and web-app benchmarks.

    synthetic_vault.py COUNT WORK [FILLER_HASHES]

Writes WORK/export.csv (Chrome CSV, COUNT credentials: 10 % common passwords — weak, reused and
breached —, 10 % shared among 50 sites, the rest random; 3 % of login URLs on plain http) and
WORK/pwned.txt (HIBP's SHA1:COUNT lines: FILLER_HASHES made-up hashes, default 1,000,000, plus 15 %
of the vault's passwords). Seeded: every run writes the same files.
"""
import hashlib
import random
import sys

count, work = int(sys.argv[1]), sys.argv[2]
filler = int(sys.argv[3]) if len(sys.argv) > 3 else 1_000_000
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
    for k in range(filler):
        out.write(hashlib.sha1(f"filler-{k}".encode()).hexdigest().upper() + f":{k % 1000 + 1}\r\n")
    for pw in set(breached):
        out.write(hashlib.sha1(pw.encode()).hexdigest().upper() + ":42\r\n")
