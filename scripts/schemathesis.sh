#!/usr/bin/env bash
# Tests a running service that mounts Keyhaven's account-modification kit against the protocol's
# contract (docs/openapi/account-modification.yaml) with Schemathesis: the service operations only
# (the `local-api` tag and the human-facing step-up page are left out), checking for server errors
# and that status codes, content types and bodies conform to the document.
#   scripts/schemathesis.sh BASE_URL [EXTRA SCHEMATHESIS ARGS...]
#   e.g. scripts/schemathesis.sh http://127.0.0.1:8080
# BASE_URL is the service's origin (the paths already start with /.well-known and
# /account-modification). Environment:
#   MAX_EXAMPLES          test cases per operation and phase (default 50)
#   SCHEMATHESIS_SEED     seed for a reproducible run
#   SCHEMATHESIS_SPEC     what to pip install when schemathesis is missing (default "schemathesis")
#   SCHEMATHESIS_SCHEMA   another OpenAPI document (scripts/schemathesis-sync.sh: docs/openapi/sync.yaml);
#                         the account-modification filters below apply to the default only
# Works with Schemathesis 3.x and 4.x (the CLI differs; the version is detected). Exits non-zero on
# any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -lt 1 || "$1" == -* ]]; then
    echo "usage: scripts/schemathesis.sh BASE_URL [EXTRA SCHEMATHESIS ARGS...]" >&2
    exit 2
fi
base="${1%/}"
shift
schema="${SCHEMATHESIS_SCHEMA:-docs/openapi/account-modification.yaml}"
account_modification=0
[[ "$schema" == docs/openapi/account-modification.yaml ]] && account_modification=1
max_examples="${MAX_EXAMPLES:-50}"
checks=(not_a_server_error status_code_conformance content_type_conformance response_schema_conformance)

# Find schemathesis; install it with pip when it is missing.
st=()
find_schemathesis() {
    if command -v schemathesis >/dev/null 2>&1; then
        st=(schemathesis)
    elif command -v st >/dev/null 2>&1 && st --version 2>/dev/null | grep -qi schemathesis; then
        st=(st)
    elif python3 -c "import schemathesis" >/dev/null 2>&1; then
        st=(python3 -m schemathesis.cli)
    else
        return 1
    fi
}
if ! find_schemathesis; then
    echo "schemathesis: not found; installing ${SCHEMATHESIS_SPEC:-schemathesis} with pip" >&2
    python3 -m pip install --quiet "${SCHEMATHESIS_SPEC:-schemathesis}" ||
        python3 -m pip install --quiet --user "${SCHEMATHESIS_SPEC:-schemathesis}" ||
        python3 -m pip install --quiet --break-system-packages "${SCHEMATHESIS_SPEC:-schemathesis}"
    export PATH="$(python3 -m site --user-base)/bin:$PATH"
    find_schemathesis || {
        echo "schemathesis: still not found after installing" >&2
        exit 1
    }
fi

version="$("${st[@]}" --version 2>&1 | grep -oE '[0-9]+(\.[0-9]+)+' | head -n 1 || true)"
if [[ -z "$version" ]]; then
    echo "schemathesis: cannot determine its version" >&2
    exit 1
fi
major="${version%%.*}"
echo "schemathesis $version"
run_help="$("${st[@]}" run --help 2>&1 | tr -d '\000' || true)"
has_option() { grep -aqE -- "(^|[ ,])$1([ ,=]|$)" <<<"$run_help"; }

args=(run "$schema")
if ((major >= 4)); then
    # 4.x: --url, comma-separated --checks, -n/--max-examples, --exclude-TYPE filters.
    args+=(--url "$base")
    args+=(--checks "$(IFS=,; echo "${checks[*]}")")
    args+=(--max-examples "$max_examples")
    if ((account_modification)); then
        args+=(--exclude-tag local-api --exclude-tag step-up --exclude-operation-id getStepUpPage)
    fi
    [[ -n "${SCHEMATHESIS_SEED:-}" ]] && args+=(--seed "$SCHEMATHESIS_SEED")
elif ((major == 3)); then
    # 3.x: --base-url, one --checks per check, --hypothesis-max-examples; filters changed during 3.x.
    args+=(--base-url "$base")
    for check in "${checks[@]}"; do args+=(--checks "$check"); done
    args+=(--hypothesis-max-examples "$max_examples")
    if ((!account_modification)); then
        :
    elif has_option --exclude-tag; then
        args+=(--exclude-tag local-api --exclude-tag step-up --exclude-operation-id getStepUpPage)
    else
        # Older 3.x: include filters only (regular expressions).
        args+=(--tag '^service$')
    fi
    # 3.x's link-following ("old" stateful) recurses through the response links and takes ages.
    if has_option --stateful; then
        args+=(--stateful none)
    fi
    if has_option --data-generation-method; then
        args+=(--data-generation-method all)
    fi
    [[ -n "${SCHEMATHESIS_SEED:-}" ]] && args+=(--hypothesis-seed "$SCHEMATHESIS_SEED")
else
    echo "schemathesis $version is not supported (need 3.x or 4.x)" >&2
    exit 1
fi
args+=("$@")

printf '+'
printf ' %q' "${st[@]}" "${args[@]}"
printf '\n'
exec "${st[@]}" "${args[@]}"
