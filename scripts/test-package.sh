#!/usr/bin/env bash
# Builds the Debian packages (scripts/package-deb.sh, arguments passed on) and tests what they
# install, without touching this machine: both packages are unpacked into an empty root with
# `dpkg-deb -x`, and everything is checked from there:
#   - the file list, modes and owners (root:root) of each package, its control fields, and that the
#     binaries link no Swift runtime (the target machine needs no Swift);
#   - `ROOT/usr/bin/keyhaven --version`, `keyhaven idp serve` (answers discovery, data 0600) and
#     `keyhaven demo` (which finds ROOT/usr/lib/keyhaven/shiny next to the real keyhaven), run from
#     the unpacked files;
#   - the completion scripts parse (bash -n, zsh -n, fish -n) and bash's completes a subcommand; the
#     man pages render;
#   - keyhaven-idp.service passes `systemd-analyze verify` and its hardening scores at most 2.0 in
#     `systemd-analyze security`; postinst creates the system user through adduser (run against
#     stand-ins on PATH, so no user is made here).
# A shell or systemd-analyze that is missing is skipped with a message (install-test-deps.sh installs
# zsh and fish). .ci/run calls this after the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$(date +%s)
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}
ok() { echo "ok: $*"; }
skip() { echo "SKIP: $*"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
scripts/package-deb.sh --output "$work/debs" "$@" >"$work/built"
echo "packages built in $(($(date +%s) - start))s"
keyhaven_deb=$(grep '/keyhaven_[^/]*\.deb$' "$work/built")
shiny_deb=$(grep '/keyhaven-shiny_[^/]*\.deb$' "$work/built")
version=$(basename "$keyhaven_deb" | cut -d_ -f2)

# --- contents: path, mode and owner of what each package installs ---
# `dpkg-deb -c` lines: MODE OWNER/GROUP SIZE DATE TIME PATH [-> TARGET]
listing() {
    dpkg-deb -c "$1" | awk '{ path = $6; sub(/^\./, "", path); line = $1 " " $2 " " path
        if ($7 != "") line = line " " $7 " " $8
        print line }'
}
listing "$keyhaven_deb" >"$work/keyhaven.list"
listing "$shiny_deb" >"$work/keyhaven-shiny.list"
expect_entry() { # LIST MODE PATH [-> TARGET]
    local list=$1 mode=$2 path=$3 rest=${4:-}
    if grep -qxF -- "$mode root/root $path${rest:+ $rest}" "$work/$list.list"; then
        ok "$list: $mode $path $rest"
    else
        fail "$list: expected $mode root/root $path $rest; got: $(grep -F " $path" "$work/$list.list" || echo nothing)"
    fi
}
expect_entry keyhaven -rwxr-xr-x /usr/lib/keyhaven/keyhaven
expect_entry keyhaven lrwxrwxrwx /usr/bin/keyhaven "-> ../lib/keyhaven/keyhaven"
expect_entry keyhaven -rw-r--r-- /usr/share/bash-completion/completions/keyhaven
expect_entry keyhaven -rw-r--r-- /usr/share/zsh/vendor-completions/_keyhaven
expect_entry keyhaven -rw-r--r-- /usr/share/fish/vendor_completions.d/keyhaven.fish
expect_entry keyhaven -rw-r--r-- /usr/share/man/man1/keyhaven.1.gz
expect_entry keyhaven -rw-r--r-- /usr/share/man/man1/keyhaven.idp.serve.1.gz
expect_entry keyhaven -rw-r--r-- /lib/systemd/system/keyhaven-idp.service
expect_entry keyhaven -rw-r--r-- /etc/default/keyhaven-idp
expect_entry keyhaven -rw-r--r-- /usr/lib/systemd/user/keyhaven-agent.service
expect_entry keyhaven -rw-r--r-- /usr/share/doc/keyhaven/copyright
expect_entry keyhaven-shiny -rwxr-xr-x /usr/lib/keyhaven/shiny
expect_entry keyhaven-shiny -rw-r--r-- /usr/share/doc/keyhaven-shiny/copyright
# Nothing owned by the builder, nothing writable by others, nothing setuid.
for list in keyhaven keyhaven-shiny; do
    odd=$(awk '$2 != "root/root" || (substr($1, 9, 1) == "w" && $1 !~ /^l/) || $1 ~ /[sStT]/' "$work/$list.list")
    [ -z "$odd" ] && ok "$list: every entry root-owned, none world-writable or setuid" ||
        fail "$list: unexpected owners or modes: $odd"
done
# shiny belongs to its own package only.
grep -q ' /usr/lib/keyhaven/shiny$' "$work/keyhaven.list" && fail "keyhaven ships shiny" || ok "keyhaven does not ship shiny"

# --- control fields ---
field() { dpkg-deb -f "$1" "$2"; }
[ "$(field "$keyhaven_deb" Package)" = keyhaven ] && [ "$(field "$shiny_deb" Package)" = keyhaven-shiny ] &&
    ok "package names" || fail "package names"
depends=$(field "$keyhaven_deb" Depends)
[[ "$depends" == *libc6* && "$depends" != *swift* ]] && ok "keyhaven Depends: $depends" || fail "keyhaven Depends: $depends"
[ "$(dpkg-deb -I "$keyhaven_deb" conffiles)" = /etc/default/keyhaven-idp ] && ok "conffiles" || fail "conffiles"
for script in postinst prerm postrm; do
    dpkg-deb -I "$keyhaven_deb" "$script" >"$work/$script"
    sh -n "$work/$script" && ok "$script parses" || fail "$script does not parse"
done

# --- unpacked into an empty root ---
root=$work/root
mkdir "$root"
dpkg-deb -x "$keyhaven_deb" "$root"
dpkg-deb -x "$shiny_deb" "$root"
for executable in usr/lib/keyhaven/keyhaven usr/lib/keyhaven/shiny; do
    libraries=$(ldd "$root/$executable")
    if grep -Eq 'libswift|libFoundation|libdispatch|not found' <<<"$libraries"; then
        fail "$executable links the Swift runtime or misses a library: $libraries"
    else
        ok "$executable needs only system libraries"
    fi
done
shown=$("$root/usr/bin/keyhaven" --version)
[ "$shown" = "$version" ] && ok "keyhaven --version: $shown" || fail "keyhaven --version says '$shown', package is $version"

# The demo, from the installed files: shiny found next to /usr/lib/keyhaven/keyhaven, in a HOME of
# its own, without $KEYHAVEN_SHINY.
mkdir "$work/home"
if (cd "$work/home" && env -u KEYHAVEN_SHINY HOME="$work/home" XDG_DATA_HOME= XDG_CONFIG_HOME= \
    "$root/usr/bin/keyhaven" demo >"$work/demo.out" 2>"$work/demo.err") &&
    grep -q '^All checks passed\.$' "$work/demo.out"; then
    ok "keyhaven demo from the installed files"
else
    fail "keyhaven demo: $(tail -20 "$work/demo.out" "$work/demo.err")"
fi

# The provider as the unit runs it (its data named by KEYHAVEN_IDP_DATABASE), from the installed
# files: it serves discovery with the issuer it was given and keeps its data private.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -m 700 "$work/state"
KEYHAVEN_IDP_DATABASE="$work/state/idp.sqlite" HOME="$work/home" \
    "$root/usr/bin/keyhaven" idp serve --host 127.0.0.1 --port "$port" --issuer "https://id.example.test" \
    >"$work/idp.out" 2>&1 &
idp_pid=$!
discovery=""
for _ in $(seq 100); do
    discovery=$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())' \
        "http://127.0.0.1:$port/.well-known/openid-configuration" 2>/dev/null) && break
    sleep 0.1
done
kill "$idp_pid" 2>/dev/null || true
wait "$idp_pid" 2>/dev/null || true
grep -q '"issuer" *: *"https://id.example.test"' <<<"$discovery" &&
    ok "keyhaven idp serve from the installed files answers discovery" ||
    fail "keyhaven idp serve: discovery '$discovery'; output: $(cat "$work/idp.out")"
modes=$(stat -c '%a %n' "$work/state/idp.sqlite" "$work/state/idp.secrets-key" 2>&1)
[ "$(awk '{print $1}' <<<"$modes" | sort -u)" = 600 ] && ok "provider data and secrets key are 0600" ||
    fail "provider data modes: $modes"

# --- completions ---
completions=(
    "bash usr/share/bash-completion/completions/keyhaven"
    "zsh usr/share/zsh/vendor-completions/_keyhaven"
    "fish usr/share/fish/vendor_completions.d/keyhaven.fish"
)
for entry in "${completions[@]}"; do
    read -r shell file <<<"$entry"
    if ! command -v "$shell" >/dev/null; then
        skip "$shell is not installed: $file not parsed (scripts/install-test-deps.sh installs it)"
    elif "$shell" -n "$root/$file"; then
        ok "$shell -n $file"
    else
        fail "$shell cannot parse $file"
    fi
done
# bash's completes the subcommand `idp` from `keyhaven id`.
completed=$(PATH="$root/usr/bin:$PATH" bash -c '
    source "$1"
    COMP_WORDS=(keyhaven id); COMP_CWORD=1; COMP_LINE="keyhaven id"; COMP_POINT=${#COMP_LINE}
    _keyhaven keyhaven id keyhaven
    printf "%s\n" "${COMPREPLY[@]}"' completion "$root/usr/share/bash-completion/completions/keyhaven" 2>&1)
grep -qx 'idp' <<<"$completed" && ok "bash completes 'keyhaven id' to idp" ||
    fail "bash completion of 'keyhaven id': $completed"

# --- man pages ---
for page in "$root"/usr/share/man/man1/*.1.gz; do
    gzip -t "$page" || fail "$page is not gzip"
done
pages=$(find "$root/usr/share/man/man1" -name '*.1.gz' | wc -l)
if command -v man >/dev/null; then
    rendered=$(MANWIDTH=100 man -l "$root/usr/share/man/man1/keyhaven.idp.serve.1.gz" 2>&1)
    grep -q -- '--issuer' <<<"$rendered" && ok "$pages man pages; keyhaven.idp.serve(1) renders" ||
        fail "keyhaven.idp.serve(1) renders as: $rendered"
else
    skip "man is not installed: $pages man pages not rendered"
fi

# --- copyright: the licences of the data compiled in ---
copyright=$root/usr/share/doc/keyhaven/copyright
for expected in "Mozilla Public License Version 2.0" "Copyright 2020 - 2026 Apple Inc." "zxcvbn" \
    "Swift package swift-crypto/LICENSE.txt" "Swift package GRDB.swift/LICENSE"; do
    grep -qF "$expected" "$copyright" && ok "copyright has $expected" || fail "copyright lacks $expected"
done

# --- the system unit ---
unit=$root/lib/systemd/system/keyhaven-idp.service
grep -qx 'ExecStart=/usr/bin/keyhaven idp serve $KEYHAVEN_IDP_SERVE_OPTIONS' "$unit" &&
    grep -qx 'User=keyhaven-idp' "$unit" && grep -qx 'StateDirectory=keyhaven-idp' "$unit" &&
    ok "unit runs keyhaven idp serve as keyhaven-idp in its state directory" || fail "unit ExecStart/User/StateDirectory"
if command -v systemd-analyze >/dev/null; then
    # Checked where it is unpacked: ExecStart must name the unpacked binary.
    mkdir "$work/unit"
    sed "s|^ExecStart=/usr/bin/keyhaven|ExecStart=$root/usr/bin/keyhaven|" "$unit" >"$work/unit/keyhaven-idp.service"
    warnings=$(systemd-analyze verify --man=no "$work/unit/keyhaven-idp.service" 2>&1) && [ -z "$warnings" ] &&
        ok "systemd-analyze verify keyhaven-idp.service" || fail "systemd-analyze verify: $warnings"
    if systemd-analyze security --offline=yes --threshold=20 "$work/unit/keyhaven-idp.service" >"$work/security" 2>&1; then
        ok "keyhaven-idp.service $(grep -o 'Overall exposure level.*' "$work/security")"
    else
        fail "keyhaven-idp.service hardening: $(tail -3 "$work/security")"
    fi
    sed "s|^ExecStart=/usr/bin/keyhaven|ExecStart=$root/usr/bin/keyhaven|" "$root/usr/lib/systemd/user/keyhaven-agent.service" \
        >"$work/unit/keyhaven-agent.service"
    # Verified as a system unit (a user manager is not there to run `verify --user` in CI).
    warnings=$(systemd-analyze verify --man=no "$work/unit/keyhaven-agent.service" 2>&1) && [ -z "$warnings" ] &&
        ok "systemd-analyze verify keyhaven-agent.service" || fail "systemd-analyze verify (agent): $warnings"
else
    skip "systemd-analyze is not installed: keyhaven-idp.service not verified"
fi

# --- postinst, against stand-ins for getent/adduser/systemctl that record their arguments ---
mkdir "$work/bin"
for tool in getent adduser systemctl; do
    printf '#!/bin/sh\necho "%s $*" >>"%s"\n%s\n' "$tool" "$work/calls" \
        "$([ "$tool" = getent ] && echo 'exit 2' || echo 'exit 0')" >"$work/bin/$tool"
    chmod +x "$work/bin/$tool"
done
PATH="$work/bin:$PATH" sh "$work/postinst" configure && ok "postinst configure exits 0" || fail "postinst configure failed"
grep -q '^adduser --system --group .*keyhaven-idp$' "$work/calls" &&
    ok "postinst creates the system user keyhaven-idp when missing" || fail "postinst calls: $(cat "$work/calls")"
# An existing user is left alone.
printf '#!/bin/sh\necho "getent $*" >>"%s"\necho "keyhaven-idp:x:999:999::/var/lib/keyhaven-idp:/usr/sbin/nologin"\n' \
    "$work/calls" >"$work/bin/getent"
: >"$work/calls"
PATH="$work/bin:$PATH" sh "$work/postinst" configure
grep -q '^adduser' "$work/calls" && fail "postinst adds an existing user" || ok "postinst keeps an existing user"

echo "test-package: $failures failure(s) in $(($(date +%s) - start))s"
[ "$failures" = 0 ]
