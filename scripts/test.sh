#!/usr/bin/env bash
# Every check of the project, in order of speed: types, lint and format, Deno type-check and unit
# tests, vitest (unit and integration, each integration file on its own throwaway stack), pgTAP.
# Every step runs even when an earlier one fails, and the end lists each failed step, so one run
# shows everything that is red; the exit status is 1 when any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."

# Tests leave the tree as they found it: a fresh clone stays clean after npm test.
status_before="$(git status --porcelain 2>/dev/null || true)"
failed=()

# step NAME COMMAND...: runs the command, records NAME when it fails.
step() {
  local name="$1"
  shift
  echo "== ${name}"
  if ! "$@"; then
    echo "test: step '${name}' failed" >&2
    failed+=("$name")
  fi
}

deno_dirs=(supabase/functions packages/stack/test/fixtures/project/supabase/functions)

step 'tsc' tsc --noEmit -p tsconfig.json
step 'tsc (dashboard)' tsc --noEmit -p packages/dashboard/tsconfig.json
step 'biome' biome ci .
step 'deno fmt' deno fmt --check "${deno_dirs[@]}"
step 'deno lint' deno lint "${deno_dirs[@]}"
step 'deno check' deno check "${deno_dirs[@]}"
step 'deno test' deno test --permit-no-files --allow-env --allow-read supabase/functions
step 'vitest' vitest run
step 'pgTAP' node scripts/run-pgtap.ts

echo '== tree left clean'
status_after="$(git status --porcelain 2>/dev/null || true)"
if [[ "$status_after" != "$status_before" ]]; then
  echo 'test: the tests changed the working tree:' >&2
  diff <(echo "$status_before") <(echo "$status_after") >&2 || true
  failed+=('tree left clean')
fi

if ((${#failed[@]} > 0)); then
  echo "test: ${#failed[@]} step(s) failed: $(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')" >&2
  exit 1
fi
echo 'test: every step passed'
