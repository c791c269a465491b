#!/usr/bin/env python3
"""Throughput of password-strength estimators on one corpus, measured in ONE process run.

Usage:

    pip install zxcvbn==4.5.0 zxcvbn-rs-py
    python3 Benchmarks/scripts/strength_peers.py CORPUS [--keyhaven PATH] [options]

    CORPUS   either the reference fixture (a JSON object with "entries": [{"password": ...}, ...],
             e.g. Tests/PasswordStrengthTests/Fixtures/zxcvbn-reference.json) or a UTF-8 text file
             with one password per line ("\\n" separated; a trailing "\\r" is kept as part of the line).

    --keyhaven PATH   also time `PATH strength -`: all passwords are written to its stdin, one per
                      line; it must print `score<TAB>guesses_log10` per line. The whole process is
                      timed (spawn, data loading, scoring, exit) -- nothing is subtracted.
    --repeat N        timed repetitions per engine (default 5; the median is reported)
    --warmup N        untimed warm-up passes per engine (default 1)
    --limit N         use only the first N usable passwords
    --cpu K           pin this process (and the keyhaven child) to CPU K (default: lowest allowed CPU)
    --engines LIST    comma-separated subset of: zxcvbn,zxcvbn-rs,keyhaven (default: all available)
    --no-check        do not compare keyhaven's scores with python zxcvbn's

Examples:

    python3 Benchmarks/scripts/strength_peers.py Tests/PasswordStrengthTests/Fixtures/zxcvbn-reference.json
    python3 Benchmarks/scripts/strength_peers.py corpus.txt --keyhaven .build/release/keyhaven --repeat 7

Passwords are skipped if they contain "\\n" or "\\r" (they cannot travel one-per-line), are empty
(python zxcvbn 4.5.0 raises IndexError on ""), or are longer than 72 code points (python zxcvbn
raises ValueError). user_inputs in the fixture are ignored so every engine gets identical work.
Throughput = passwords / median wall-clock seconds of a full pass. "ours/peer" = keyhaven's
passwords-per-second divided by the peer's (> 1 means keyhaven is faster).
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time

MAX_LEN = 72


def load_passwords(path):
    with open(path, "rb") as fh:
        raw = fh.read()
    text = raw.decode("utf-8")
    passwords = None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
            passwords = [e["password"] for e in doc["entries"]]
        except (ValueError, KeyError, TypeError):
            passwords = None
    if passwords is None:
        passwords = text.split("\n")
        if passwords and passwords[-1] == "":
            passwords.pop()  # final newline
    kept, skipped = [], {"newline": 0, "empty": 0, "too_long": 0}
    for pw in passwords:
        if "\n" in pw or "\r" in pw:
            skipped["newline"] += 1
        elif pw == "":
            skipped["empty"] += 1
        elif len(pw) > MAX_LEN:
            skipped["too_long"] += 1
        else:
            kept.append(pw)
    return kept, skipped


def time_python_engine(fn, passwords, warmup, repeat):
    for _ in range(warmup):
        for pw in passwords:
            fn(pw)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for pw in passwords:
            fn(pw)
        times.append(time.perf_counter() - t0)
    return times


def run_keyhaven(binary, payload, cpu):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([binary, "strength", "-"], input=payload, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE,
                          preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if cpu is not None else None)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        raise SystemExit("keyhaven exited with status %d" % proc.returncode)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu_s, proc.stdout


def parse_keyhaven_output(out, n):
    lines = out.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) != n:
        raise SystemExit("keyhaven printed %d lines for %d passwords" % (len(lines), n))
    res = []
    for ln in lines:
        score, log10 = ln.split("\t")
        res.append((int(score), float(log10)))
    return res


def main():
    ap = argparse.ArgumentParser(description="Compare password-strength estimator throughput.",
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("corpus")
    ap.add_argument("--keyhaven", metavar="PATH")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--limit", type=int)
    ap.add_argument("--cpu", type=int)
    ap.add_argument("--engines", default="zxcvbn,zxcvbn-rs,keyhaven")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()

    passwords, skipped = load_passwords(args.corpus)
    if args.limit:
        passwords = passwords[: args.limit]
    if not passwords:
        raise SystemExit("no usable passwords in %s" % args.corpus)

    cpu = args.cpu
    if hasattr(os, "sched_setaffinity"):
        if cpu is None:
            cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
    else:
        cpu = None
    wanted = [e.strip() for e in args.engines.split(",") if e.strip()]

    engines = []  # (name, version, fn)
    if "zxcvbn" in wanted:
        try:
            import importlib.metadata
            import zxcvbn as zx
            engines.append(("zxcvbn (python)", importlib.metadata.version("zxcvbn"), zx.zxcvbn))
        except ImportError:
            sys.stderr.write("note: python zxcvbn not installed, skipped\n")
    if "zxcvbn-rs" in wanted:
        try:
            import zxcvbn_rs_py
            engines.append(("zxcvbn-rs-py (rust)", zxcvbn_rs_py.__version__, zxcvbn_rs_py.zxcvbn))
        except ImportError:
            sys.stderr.write("note: zxcvbn-rs-py not installed, skipped\n")

    print("corpus: %s -- %d passwords (skipped: %s)" % (args.corpus, len(passwords),
                                                        ", ".join("%s %d" % kv for kv in skipped.items())))
    print("python %s, pinned to cpu %s, warm-up %d, repetitions %d (median reported)\n"
          % (sys.version.split()[0], cpu, args.warmup, args.repeat))

    results = []  # (name, version, times, extra)
    for name, version, fn in engines:
        times = time_python_engine(fn, passwords, args.warmup, args.repeat)
        results.append((name, version, times, ""))

    if args.keyhaven and "keyhaven" in wanted:
        payload = ("\n".join(passwords) + "\n").encode("utf-8")
        for _ in range(args.warmup):
            run_keyhaven(args.keyhaven, payload, cpu)
        times, cpus, out = [], [], None
        for _ in range(args.repeat):
            elapsed, cpu_s, out = run_keyhaven(args.keyhaven, payload, cpu)
            times.append(elapsed)
            cpus.append(cpu_s)
        extra = "child cpu %.3fs" % statistics.median(cpus)
        results.append(("keyhaven strength -", os.path.basename(args.keyhaven), times, extra))
        if not args.no_check:
            ours = parse_keyhaven_output(out, len(passwords))
            try:
                import zxcvbn as zx
                same_score, max_dlog = 0, 0.0
                for pw, (score, log10) in zip(passwords, ours):
                    ref = zx.zxcvbn(pw)
                    same_score += score == ref["score"]
                    max_dlog = max(max_dlog, abs(log10 - float(ref["guesses_log10"])))
                print("keyhaven vs python zxcvbn: score equal %d/%d, max |guesses_log10 diff| %.3g\n"
                      % (same_score, len(passwords), max_dlog))
            except ImportError:
                pass

    n = len(passwords)
    header = "%-24s %-14s %10s %12s %12s  %s" % ("engine", "version", "median s", "pw/s", "min-max s", "")
    print(header)
    print("-" * len(header))
    rates = {}
    for name, version, times, extra in results:
        med = statistics.median(times)
        rates[name] = n / med if med > 0 else math.inf
        print("%-24s %-14s %10.3f %12.0f %5.3f-%-6.3f  %s"
              % (name, version, med, rates[name], min(times), max(times), extra))
    if "keyhaven strength -" in rates:
        ours = rates["keyhaven strength -"]
        print("\nratio ours/peer (passwords per second, > 1 = keyhaven faster):")
        for name, version, _, _ in results:
            if name != "keyhaven strength -":
                print("  keyhaven / %-22s %8.2fx" % (name, ours / rates[name]))


if __name__ == "__main__":
    main()
