#!/usr/bin/env bash
# Every check of the project, in order of speed: types, lint and format, Deno type-check and unit
# tests, vitest (unit and integration, each integration file on its own throwaway stack), pgTAP.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests leave the tree as they found it (issue 20: a fresh clone stays clean after npm test).
status_before="$(git status --porcelain 2>/dev/null || true)"

echo '== tsc'
tsc --noEmit -p tsconfig.json
tsc --noEmit -p packages/dashboard/tsconfig.json
echo '== biome'
biome ci .
echo '== deno'
deno fmt --check supabase/functions packages/stack/test/fixtures/project/supabase/functions
deno lint supabase/functions packages/stack/test/fixtures/project/supabase/functions
deno check supabase/functions packages/stack/test/fixtures/project/supabase/functions
deno test --permit-no-files --allow-env --allow-read supabase/functions
echo '== vitest'
vitest run
echo '== pgTAP'
node scripts/run-pgtap.ts
echo '== tree left clean'
status_after="$(git status --porcelain 2>/dev/null || true)"
if [[ "$status_after" != "$status_before" ]]; then
  echo 'test: the tests changed the working tree:' >&2
  diff <(echo "$status_before") <(echo "$status_after") >&2 || true
  exit 1
fi
