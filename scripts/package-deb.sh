#!/usr/bin/env bash
# Builds Keyhaven's Debian packages with dpkg-deb (README "Install"):
#   keyhaven_VERSION_ARCH.deb        /usr/bin/keyhaven, shell completions (bash, zsh, fish), man pages,
#                                    keyhaven-idp.service (the identity provider as a system service,
#                                    its user made by postinst), licences of everything shipped;
#   keyhaven-shiny_VERSION_ARCH.deb  the example service `keyhaven demo` runs (optional).
# keyhaven itself lives in /usr/lib/keyhaven/ (with /usr/bin/keyhaven a link to it) so the demo finds
# shiny next to it there, as it does in .build/.
#
#   scripts/package-deb.sh [--output DIR] [--no-build]
#
# --output: where the .deb files go (default .build/deb). --no-build: package the release binaries
# already built. The binaries are built in release mode with the Swift runtime and Foundation linked
# in statically (the target machine needs no Swift); a cold release build takes 10+ minutes. Man pages
# come from argument-parser's GenerateManual plugin run over the debug build (the help text is the
# same; CI's tests have built it already). Version: `keyhaven --version`. Needs dpkg-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

out=.build/deb
build=1
while [ $# -gt 0 ]; do
    case "$1" in
    --output)
        out=${2:?--output needs a folder}
        shift 2
        ;;
    --no-build)
        build=0
        shift
        ;;
    -h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
    *)
        echo "package-deb.sh: unknown argument $1 (see --help)" >&2
        exit 64
        ;;
    esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

release=(-c release --static-swift-stdlib)
if [ "$build" = 1 ]; then
    swift build "${release[@]}" --product keyhaven
    swift build "${release[@]}" --product shiny
fi
bin=$(swift build "${release[@]}" --show-bin-path)
for executable in keyhaven shiny; do
    [ -x "$bin/$executable" ] || {
        echo "package-deb.sh: $bin/$executable is missing (run without --no-build)" >&2
        exit 1
    }
done

version=$("$bin/keyhaven" --version)
[[ "$version" =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || {
    echo "package-deb.sh: '$version' is not a Debian version" >&2
    exit 1
}
arch=$(dpkg --print-architecture)
# Reproducible dates: the last commit's (or SOURCE_DATE_EPOCH, as reproducible-builds.org asks).
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH=$epoch
day=$(date -u -d "@$epoch" +%Y-%m-%d)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- man pages: one per command (keyhaven.1, keyhaven.idp.serve.1, ...), from the same help. ---
# The plugin writes under .build/plugins; pages of an earlier run (a command since removed) go first.
[ ! -d .build/plugins ] || find .build/plugins -type f -name 'keyhaven*.1' -delete
swift package plugin generate-manual --configuration debug --multi-page --date "$day" \
    --authors "The Keyhaven authors" >"$work/manual.log" 2>&1 || {
    cat "$work/manual.log" >&2
    exit 1
}
manuals=$(find .build/plugins -type f -name keyhaven.1 -printf '%h\n' | head -1)
[ -n "$manuals" ] || {
    cat "$work/manual.log" >&2
    echo "package-deb.sh: the GenerateManual plugin made no keyhaven.1" >&2
    exit 1
}

# shlibs:Depends of a binary (dpkg-shlibdeps wants a debian/control beside it).
depends_of() {
    mkdir -p "$work/shlibs/debian"
    printf 'Source: keyhaven\n\nPackage: keyhaven\nArchitecture: any\n' >"$work/shlibs/debian/control"
    # Its warnings (the $ORIGIN rpath SwiftPM sets, no libraries there) are noise; its errors are not.
    (cd "$work/shlibs" && dpkg-shlibdeps -O "$1" 2>"$work/shlibs.log") | sed -n 's/^shlibs:Depends=//p' || {
        cat "$work/shlibs.log" >&2
        return 1
    }
}

# control FILE PACKAGE DEPENDS EXTRA-FIELDS DESCRIPTION
write_control() {
    local package=$1 depends=$2 extra=$3 description=$4 staging=$5
    local size
    size=$(du -sk --exclude=DEBIAN "$staging" | cut -f1)
    {
        echo "Package: $package"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: The Keyhaven authors <keyhaven@localhost>"
        echo "Installed-Size: $size"
        echo "Depends: $depends"
        [ -z "$extra" ] || echo "$extra"
        echo "Section: utils"
        echo "Priority: optional"
        echo "Homepage: https://github.com/keyhaven/keyhaven"
        echo "Description: $description"
    } >"$staging/DEBIAN/control"
}

# copyright: the data compiled into the binaries with its licence, then the Swift runtime and every
# Swift package linked in (the licence and notice files of each checkout).
write_copyright() {
    local file=$1 licence toolchain
    toolchain=$(dirname "$(readlink -f "$(command -v swift)")")/../share/swift/LICENSE.txt
    section() {
        printf '\n==============================================================================\n%s\n' "$1"
        printf '==============================================================================\n\n'
        cat "$2"
    }
    {
        cat <<'TEXT'
Keyhaven: account security you host yourself.

Keyhaven's own code has no licence declared yet. The binaries also contain, compiled in:

- The Public Suffix List (https://publicsuffix.org), Sources/_KeyhavenSupport/Resources/
  public_suffix_list.dat: Mozilla Public License 2.0 (text below).
- Apple's password-manager-resources (https://github.com/apple/password-manager-resources):
  password-rules.json, change-password-URLs.json, shared-credentials.json: MIT (text below).
- zxcvbn's frequency lists and adjacency graphs (Dropbox's zxcvbn, via zxcvbn-python 4.5.0): MIT
  (text below).
- The Swift runtime, standard library, Dispatch and Foundation, linked statically: Apache License
  2.0 with the Runtime Library Exception (text below).
- The Swift packages below, each with its licence and notice files as published (Apache-2.0 or MIT;
  swift-crypto and swift-nio-ssl include BoringSSL, swift-nio includes llhttp).
TEXT
        section "The Public Suffix List: MPL-2.0" Sources/_KeyhavenSupport/Resources/LICENSE-public-suffix-list.txt
        section "apple/password-manager-resources: MIT" \
            Sources/PasswordRules/Resources/LICENSE-password-manager-resources.md
        section "zxcvbn data: MIT" Sources/PasswordStrength/Resources/LICENSE-zxcvbn.txt
        [ ! -f "$toolchain" ] || section "The Swift toolchain's runtime and Foundation" "$toolchain"
        for licence in $(find .build/checkouts -mindepth 1 -maxdepth 4 \
            \( -name Tests -o -name Benchmarks -o -name '.*' \) -prune -o \
            \( -iname 'LICENSE*' -o -iname 'NOTICE*' -o -iname 'COPYING*' \) -type f -print | sort); do
            section "Swift package ${licence#.build/checkouts/}" "$licence"
        done
    } >"$file"
}

# --- keyhaven ---
stage=$work/keyhaven
install -d -m 755 "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/lib/keyhaven" \
    "$stage/usr/share/bash-completion/completions" "$stage/usr/share/zsh/vendor-completions" \
    "$stage/usr/share/fish/vendor_completions.d" "$stage/usr/share/man/man1" \
    "$stage/usr/share/doc/keyhaven" "$stage/lib/systemd/system" "$stage/usr/lib/systemd/user" "$stage/etc/default"
install -m 755 -s "$bin/keyhaven" "$stage/usr/lib/keyhaven/keyhaven"
ln -s ../lib/keyhaven/keyhaven "$stage/usr/bin/keyhaven"
# Completions complete commands and options, and account names with the sites of the vault when an
# agent runs unlocked (`keyhaven agent`; the completion asks it, never the vault).
"$bin/keyhaven" --generate-completion-script bash >"$stage/usr/share/bash-completion/completions/keyhaven"
"$bin/keyhaven" --generate-completion-script zsh >"$stage/usr/share/zsh/vendor-completions/_keyhaven"
"$bin/keyhaven" --generate-completion-script fish >"$stage/usr/share/fish/vendor_completions.d/keyhaven.fish"
for page in "$manuals"/keyhaven*.1; do
    gzip -9n <"$page" >"$stage/usr/share/man/man1/$(basename "$page").gz"
done
install -m 644 packaging/debian/keyhaven-idp.service "$stage/lib/systemd/system/keyhaven-idp.service"
install -m 644 packaging/debian/keyhaven-agent.service "$stage/usr/lib/systemd/user/keyhaven-agent.service"
install -m 644 packaging/debian/keyhaven-idp.default "$stage/etc/default/keyhaven-idp"
echo /etc/default/keyhaven-idp >"$stage/DEBIAN/conffiles"
install -m 755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
install -m 644 docs/sign-in-with-keyhaven.md "$stage/usr/share/doc/keyhaven/sign-in-with-keyhaven.md"
write_copyright "$stage/usr/share/doc/keyhaven/copyright"
depends=$(depends_of "$bin/keyhaven")
write_control keyhaven "$depends" "Suggests: keyhaven-shiny" \
    "$(printf '%s\n%s' "account security you host yourself: audit, generate and upgrade passwords" \
        " Finds reused, easily guessed and breached passwords and fixes them; runs a Sign in with
 Keyhaven identity provider (keyhaven-idp.service).")" "$stage"

# --- keyhaven-shiny ---
shiny=$work/keyhaven-shiny
install -d -m 755 "$shiny/DEBIAN" "$shiny/usr/lib/keyhaven" "$shiny/usr/share/doc/keyhaven-shiny"
install -m 755 -s "$bin/shiny" "$shiny/usr/lib/keyhaven/shiny"
cp "$stage/usr/share/doc/keyhaven/copyright" "$shiny/usr/share/doc/keyhaven-shiny/copyright"
depends=$(depends_of "$bin/shiny")
write_control keyhaven-shiny "$depends" "Enhances: keyhaven" \
    "$(printf '%s\n%s' "Keyhaven's example service, run by \`keyhaven demo\`" \
        " shiny implements Keyhaven's account-modification protocol and Sign in with Keyhaven; the demo
 runs it from /usr/lib/keyhaven/shiny, next to keyhaven.")" "$shiny"

# Every file the same date, owned by root (--root-owner-group), mode from install above.
find "$stage" "$shiny" -exec touch -h -d "@$epoch" {} +
for package in keyhaven keyhaven-shiny; do
    dpkg-deb --root-owner-group -Zxz --build "$work/$package" "$out/${package}_${version}_${arch}.deb" >/dev/null
    echo "$out/${package}_${version}_${arch}.deb"
done
