// Unit tests of POST /ask/confirm's answers with PostgREST stubbed at fetch level (no network):
// the database's refusal of a token that is no dashboard session (docs/assistant.md "Writes") is
// a 403 the client can tell apart from a role without the edit capability.
import { deepStrictEqual as assertEquals } from 'node:assert/strict';
import type { Caller } from '../_shared/caller.ts';
import { confirmWrite } from './confirm-handler.ts';
import { createCallerClient } from './data-api.ts';

const CALLER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  roles: [{ slug: 'member', name: 'Member', is_admin: false }],
  capabilities: ['tags:view', 'tags:edit'],
  is_admin: false,
  token: { jti: 'j', client_id: 'an-mcp-client', label: 'oauth' },
};

/** What PostgREST answers assistant_confirm_write with: `status` and the error's code. */
function confirmAnswering(status: number, code: string) {
  const fetch = (() =>
    Promise.resolve(
      Response.json({ code, message: 'refused', details: null, hint: null }, { status }),
    )) as typeof globalThis.fetch;
  const db = createCallerClient('http://api.test', 'token', new AbortController().signal, fetch);
  return confirmWrite(CALLER, crypto.randomUUID(), db);
}

Deno.test('answers 403 dashboard_session_required for a token that is no session', async () => {
  const response = await confirmAnswering(403, 'PT403');
  assertEquals(response.status, 403);
  assertEquals((await response.json()).error, 'dashboard_session_required');
});

Deno.test('answers 403 forbidden when the role lacks the edit capability', async () => {
  const response = await confirmAnswering(403, '42501');
  assertEquals(response.status, 403);
  assertEquals((await response.json()).error, 'forbidden');
});
