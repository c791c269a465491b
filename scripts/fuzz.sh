#!/usr/bin/env bash
# Builds a libFuzzer target (optimised, address sanitizer on) and runs it for a bounded time.
#   scripts/fuzz.sh [TARGET] [SECONDS] [LIBFUZZER OPTIONS…]   e.g. scripts/fuzz.sh FuzzImport 60
#   scripts/fuzz.sh --list                                    the targets
# Targets live in Fuzz/Sources (see Fuzz/Package.swift for what each one reads). The corpus of each
# is seeded from the test fixtures (or inputs the target generates with Keyhaven's own code) and kept
# in .fuzz-artifacts/TARGET/corpus, so repeated runs continue where the last one stopped. Crashes
# are written to .fuzz-artifacts/TARGET/ and fail the script. The final statistics (executions,
# executions per second) are printed by libFuzzer (-print_final_stats=1).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(FuzzPasswordRules FuzzPasswordStrength FuzzJOSE FuzzImport FuzzRangeBody FuzzBreachIndex FuzzManifest
    FuzzFormBody FuzzServiceOrigin FuzzMultipart FuzzCBOR FuzzAttestation)
if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "${targets[@]}"
    exit 0
fi
target="${1:-FuzzPasswordRules}"
seconds="${2:-60}"
shift $(($# > 2 ? 2 : $#))
if [[ ! " ${targets[*]} " == *" $target "* ]]; then
    echo "unknown fuzz target $target; one of: ${targets[*]}" >&2
    exit 2
fi
# SwiftPM names a path dependency after its (real) folder: a checkout folder called `fuzz` would
# clash with the Fuzz package itself.
if [ "$(basename "$(pwd -P)" | tr '[:upper:]' '[:lower:]')" = fuzz ]; then
    echo "the checkout's folder is called fuzz, like the Fuzz package; build from a bind mount or copy with another name" >&2
    exit 2
fi
root="$(pwd)"
corpus="$root/.fuzz-artifacts/$target/corpus"
artifacts="$root/.fuzz-artifacts/$target/"
mkdir -p "$corpus"

# Optimised (-O keeps every overflow, array-bounds and fatalError check; the address sanitizer sees
# reads past an allocation): several times the executions per second of a debug build. Testing is
# enabled for the targets that call internal API (`@testable import`).
swift build --package-path Fuzz --scratch-path Fuzz/.build -c release --product "$target" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld -Xswiftc -enable-testing
binary="Fuzz/.build/release/$target"
# libFuzzer reports crashes itself; Swift's backtracer, started inside an address-sanitized process,
# trips the sanitizer while it reads the crashed stack and buries the report.
export SWIFT_BACKTRACE=enable=no
export LSAN_OPTIONS="suppressions=$root/Fuzz/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"

# The longest input worth mutating for each target (its seeds' size).
max_len=512
# Seed the corpus with real inputs: the tests' fixtures, or what the target generates with
# Keyhaven's own code (KEYHAVEN_FUZZ_SEEDS, see Fuzz/Sources/FuzzDriver/FuzzDriver.swift).
case "$target" in
FuzzPasswordRules)
    python3 - "$corpus" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
rules = json.load(open("Sources/PasswordRules/Resources/password-rules.json"))
for i, v in enumerate(rules.values()):
    (out / f"quirk-{i}").write_text(v["password-rules"], encoding="utf-8")
PY
    ;;
FuzzPasswordStrength)
    python3 -c "
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
for i, e in enumerate(json.load(open('Tests/PasswordStrengthTests/Fixtures/zxcvbn-reference-smoke.json'))['entries']):
    (out / f'smoke-{i}').write_text(e['password'], encoding='utf-8')
" "$corpus"
    ;;
FuzzJOSE | FuzzBreachIndex)
    # Signed tokens and key sets / small real indexes, made by the target with Keyhaven's code.
    max_len=$([ "$target" = FuzzJOSE ] && echo 4096 || echo 16384)
    KEYHAVEN_FUZZ_SEEDS="$corpus" "$binary"
    ;;
FuzzImport)
    # Every import fixture, once with format detection (selector 0) and once with its format named
    # (selectors 1…11 follow ImportFormat.allCases).
    max_len=16384
    python3 - "$corpus" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
formats = ["chrome-csv", "firefox-csv", "apple-passwords-csv", "bitwarden-csv", "bitwarden-json",
           "1password8-csv", "keepassxc-csv", "lastpass-csv", "cxf-1.0-json", "keyhaven-csv", "keepass-xml"]
by_file = {"chrome.csv": "chrome-csv", "chrome-old.csv": "chrome-csv", "firefox.csv": "firefox-csv",
           "safari.csv": "apple-passwords-csv", "bitwarden.csv": "bitwarden-csv",
           "bitwarden.json": "bitwarden-json", "1password.csv": "1password8-csv",
           "keepassxc.csv": "keepassxc-csv", "lastpass.csv": "lastpass-csv", "cxf.json": "cxf-1.0-json",
           "broken-1000.csv": "chrome-csv", "keepass.xml": "keepass-xml"}
fixtures = pathlib.Path("Tests/VaultTests/Fixtures/imports")
for name, fmt in by_file.items():
    data = (fixtures / name).read_bytes()[:16000]
    (out / f"{name}-detect").write_bytes(bytes([0]) + data)
    (out / f"{name}-named").write_bytes(bytes([formats.index(fmt) + 1]) + data)
audit = pathlib.Path("Tests/SecurityRecommendationsTests/Fixtures/audit-chrome.csv").read_bytes()
(out / "audit-chrome.csv").write_bytes(bytes([0]) + audit)
keyhaven = ('name,url,username,password,note,totp,folder,other_urls\n'
            'GitHub,https://github.com/login,alice,"p,a""s\ns",note,JBSWY3DPEHPK3PXP,Work/Dev,"a.example\n'
            'androidapp://com.example"\n Spaced ,example.com,bob,x,,,,\n')
(out / "keyhaven.csv").write_bytes(bytes([0]) + keyhaven.encode())
PY
    ;;
FuzzRangeBody)
    max_len=4096
    python3 - "$corpus" <<'PY'
import hashlib, pathlib, sys
out = pathlib.Path(sys.argv[1])
rows = sorted(hashlib.sha1(f"password-{i}".encode()).hexdigest().upper() for i in range(40))
body = [f"{h[5:]}:{i * 37 + 1}" for i, h in enumerate(rows)]
(out / "crlf").write_text("\r\n".join(body))
(out / "lf-lower").write_text("\n".join(b.lower() for b in body) + "\n")
(out / "padded").write_text("\r\n".join(body[:5] + [f"{h[5:]}:0" for h in rows[5:20]]))
(out / "broken").write_text("\r\n".join(["NOTAHASH:1", body[0][:-1] + ":", body[1] + "x", ":5", body[2],
                                          body[3].replace(":", "-"), body[4] + ":9", "F" * 35 + ":99999999999999"]))
(out / "prefix").write_text("21BD1")
PY
    ;;
FuzzManifest)
    max_len=2048
    python3 - "$corpus" <<'PY'
import json, pathlib, sys
out = pathlib.Path(sys.argv[1])
manifests = [
    {"endpoint": "/account-modification", "supportsStrongPasswordChange": True, "supportsUpgradeToSignIn": True,
     "passwordGenerationRequirements": "minlength: 20; required: lower; required: upper; required: digit;",
     "signIn": {"issuer": "https://idp.example", "clientId": "com.shiny.web"}},
    {"endpoint": "https://shiny.example/account-modification", "supportsStrongPasswordChange": True,
     "supportsUpgradeToSignIn": False},
    {"endpoint": "http://127.0.0.1:8080/am", "supportsStrongPasswordChange": False, "supportsUpgradeToSignIn": False},
    {"endpoint": "https://evil.example/collect", "supportsStrongPasswordChange": True, "supportsUpgradeToSignIn": False},
    {"endpoint": "//evil.example/x", "supportsStrongPasswordChange": True, "supportsUpgradeToSignIn": False},
    {"endpoint": "https://shiny.example:8443/a?b#c", "supportsStrongPasswordChange": True,
     "supportsUpgradeToSignIn": True, "signIn": {"issuer": "", "clientId": ""}},
]
for i, m in enumerate(manifests):
    (out / f"manifest-{i}").write_text(json.dumps(m))
PY
    ;;
FuzzFormBody)
    python3 - "$corpus" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
bodies = [
    "grant_type=authorization_code&code=c.0.abc&redirect_uri=https%3A%2F%2Fshiny.example%2Fcallback"
    "&client_id=com.shiny.web&client_secret=eyJhbGciOiJFUzI1NiJ9.e30.sig",
    "grant_type=refresh_token&refresh_token=r.1.xyz&client_id=a&client_id=b",
    "email=ada%40example.com&password=p%C3%A4ss+word%21&form_token=t0k3n",
    "a=%&b=%4&c=%zz&d=%e2%82%ac&e=%E2%82&=v&n=&&x",
    "token=abc&token_type_hint=refresh_token",
]
for i, b in enumerate(bodies):
    (out / f"form-{i}").write_text(b)
PY
    ;;
FuzzAttestation)
    python3 - "$corpus" <<'PY'
import hashlib, pathlib, sys
out = pathlib.Path(sys.argv[1])
rp = hashlib.sha256(b"shiny.example").digest()
key = bytes.fromhex("a5010203262001215820" + "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
                    + "225820" + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
auth = rp + bytes([0x45]) + b"\0\0\0\0" + b"\0" * 16 + b"\0\x10" + bytes(range(16)) + key
def text(s): return bytes([0x60 | len(s)]) + s.encode()
def blob(b): return (bytes([0x58, len(b)]) if len(b) < 256 else bytes([0x59, len(b) >> 8, len(b) & 255])) + b
none = bytes([0xa3]) + text("fmt") + text("none") + text("attStmt") + bytes([0xa0]) + text("authData") + blob(auth)
for i, b in enumerate([auth, none, rp + bytes([0x01]) + b"\0\0\0\x05"]):
    (out / f"attestation-{i}").write_bytes(b)
PY
    ;;
FuzzCBOR)
    python3 - "$corpus" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
items = ["a5010203262001215820" + "11" * 32 + "225820" + "22" * 32,  # a COSE EC2 key
         "a363666d74646e6f6e656761747453746d74a068617574684461746145" + "00" * 5,  # attestation "none"
         "8301820203820405", "a26161016162820203", "c11a514b67b0", "fb3ff199999999999a", "f93e00"]
for i, item in enumerate(items):
    (out / f"cbor-{i}").write_bytes(bytes.fromhex(item))
PY
    ;;
FuzzMultipart)
    python3 - "$corpus" <<'PY'
import pathlib, sys
out = pathlib.Path(sys.argv[1])
bodies = [
    b'--kh-b\r\nContent-Disposition: form-data; name="csrf"\r\n\r\ntoken\r\n'
    b'--kh-b\r\nContent-Disposition: form-data; name="file"; filename="export.csv"\r\nContent-Type: text/csv\r\n\r\n'
    b'name,url,username,password\r\nx,https://x.example,u,p\r\n\r\n'
    b'--kh-b\r\nContent-Disposition: form-data; name="format"\r\n\r\n\r\n--kh-b--\r\n',
    b'--kh-b\r\ncontent-disposition: form-data; name=a\r\n\r\n--kh-\r\n--kh-b--',
    b'--kh-b--',
]
for i, b in enumerate(bodies):
    (out / f"multipart-{i}").write_bytes(b)
PY
    ;;
FuzzServiceOrigin)
    python3 - "$corpus" <<'PY'
import pathlib, re, sys
out = pathlib.Path(sys.argv[1])
hosts = set(re.findall(r"checkPublicSuffix\('([^']*)'", open("Tests/_KeyhavenSupportTests/Fixtures/test_psl.txt",
                                                             encoding="utf-8").read()))
hosts |= {"https://Example.COM:8443/login", "http://127.0.0.1:8080", "http://[::1]:9000/x", "example.com/path?q",
          "alice.github.io", "https://xn--bcher-kva.example", "https://user@example.com", "http://localhost.",
          "https://a.b.c.example.co.uk:443/", "http://example.com:80", "https://example.com:99999", "ftp://x.y"}
for i, h in enumerate(sorted(hosts)):
    (out / f"origin-{i}").write_bytes(bytes([0]) + h.encode())
rules = "// comment\ncom\n*.wild.com\n!keep.wild.com\n\nbücher.de trailing\n*.ck\n!www.ck\n"
for i, h in enumerate(["a.b.wild.com", "keep.wild.com", "x.bücher.de", "www.ck", "a.b.ck", "com"]):
    (out / f"list-{i}").write_bytes(bytes([1]) + rules.encode() + b"\0" + h.encode())
PY
    ;;
esac

echo "fuzzing $target for ${seconds}s"
"$binary" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts" -print_final_stats=1 "$@" "$corpus"
