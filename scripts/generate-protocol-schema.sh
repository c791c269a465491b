#!/usr/bin/env bash
# Regenerates Extension/protocol.schema.json, the JSON Schema of the browser protocol's requests,
# from the Swift types the agent decodes them with (AutoFill's BrowserProtocolSchema), by running
# the test that otherwise fails while the committed file differs. Commit the result.
#   scripts/generate-protocol-schema.sh [swift test options, e.g. --skip-build]
set -euo pipefail
cd "$(dirname "$0")/.."
KEYHAVEN_WRITE_PROTOCOL_SCHEMA=1 swift test "$@" \
    --filter 'BrowserProtocolTests/theCommittedSchemaIsTheOneTheSwiftTypesGenerate'
git --no-pager diff --stat -- Extension/protocol.schema.json
