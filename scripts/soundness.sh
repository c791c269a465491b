#!/usr/bin/env bash
# Soundness checks that CI runs before the tests:
#   - Swift sources are formatted (swift format lint --strict with .swift-format);
#   - generated sources are up to date with the data they embed;
#   - README's architecture section matches the package, and its boundaries hold
#     (scripts/architecture.py: an operator's provider links no part of the password manager…);
#   - every public error is a KeyhavenError<Domain> (the one error shape), bar the listed wire messages;
#   - browser scripts parse and write no markup, and pages have no inline script
#     (scripts/lint-browser-scripts.mjs, node only);
#   - nothing that must not be committed is tracked (.build, Package.resolved);
#   - no source file reads ../shared at run time (the product ships its own copies).
# Usage: scripts/soundness.sh [--fix]   (--fix formats in place first)
set -euo pipefail
cd "$(dirname "$0")/.."

swift_files() {
    git ls-files --cached --others --exclude-standard -- '*.swift' | grep -v '\.generated\.swift$' | while read -r f; do
        [ -f "$f" ] && echo "$f"
    done
}

status=0
if [ "${1:-}" = "--fix" ]; then
    swift_files | xargs swift format format --in-place --parallel
fi

echo "== swift format lint"
if ! swift_files | xargs swift format lint --strict --parallel; then
    echo "formatting differs: run scripts/soundness.sh --fix" >&2
    status=1
fi

echo "== generated sources"
python3 scripts/embed-resources.py --check || status=1

echo "== architecture (README from swift package describe; boundaries)"
python3 scripts/architecture.py --check || status=1

echo "== one error shape (every public error is a KeyhavenError<Domain>)"
# A public type (or extension) that conforms to Error must be KeyhavenError itself; a module
# declares a domain and codes instead (README "Code style"). Allowed: the wire messages that keep
# their protocol's shape (OAuthError: RFC 6749; ModificationError: Apple's extension API) and
# CommandFailure, the CLI's exit status printed once.
if git grep --untracked -nE '^\s*(public (struct|enum|final class|class|actor) \w+(<[^{]*>)?|(public )?extension [A-Za-z_.]+)\s*:([^{]*,)?\s*((Swift|Foundation)\.)?(Localized)?Error\b' -- 'Sources/*.swift' \
    | grep -vE '^Sources/[^:]+:[0-9]+:\s*public struct (KeyhavenError|OAuthError|ModificationError|CommandFailure)\b'; then
    echo "a public error of its own shape: make it KeyhavenError<YourDomain> (see _KeyhavenSupport/KeyhavenError.swift)" >&2
    status=1
fi

echo "== browser scripts"
if ! command -v node >/dev/null 2>&1; then
    echo "node is missing (scripts/install-test-deps.sh installs it): browser scripts not checked" >&2
    status=1
elif ! node scripts/lint-browser-scripts.mjs; then
    status=1
fi

echo "== tracked files"
if git ls-files | grep -qE '(^|/)\.build[^/]*/|Package\.resolved$'; then
    echo "a build folder or Package.resolved is tracked" >&2
    status=1
fi

echo "== no run-time reads of ../shared"
if git grep -nE '\.\./shared' -- 'Sources/*' ; then
    echo "Sources must not refer to ../shared: copy the data into the repository" >&2
    status=1
fi

[ $status -eq 0 ] && echo "soundness: ok"
exit $status
