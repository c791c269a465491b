#!/usr/bin/env bash
# Builds a libFuzzer target (address sanitizer on) and runs it for a bounded time.
#   scripts/fuzz.sh [TARGET] [SECONDS]     e.g. scripts/fuzz.sh FuzzPasswordRules 60
# Targets live in Fuzz/Sources. Crashes are written to .fuzz-artifacts/TARGET/ and fail the script.
set -euo pipefail
cd "$(dirname "$0")/.."
target="${1:-FuzzPasswordRules}"
seconds="${2:-60}"
root="$(pwd)"
corpus="$root/.fuzz-artifacts/$target/corpus"
artifacts="$root/.fuzz-artifacts/$target/"
mkdir -p "$corpus"

# Seed the corpus with real inputs when there is one for this target.
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
esac

swift build --package-path Fuzz --scratch-path Fuzz/.build -c debug --product "$target" \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -use-ld=lld
binary="Fuzz/.build/debug/$target"
echo "fuzzing $target for ${seconds}s"
"$binary" -max_total_time="$seconds" -max_len=512 -timeout=10 -artifact_prefix="$artifacts" -print_final_stats=1 "$corpus"
