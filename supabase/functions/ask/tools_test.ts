// Unit tests of which tools a caller is offered (docs/assistant.md "Writes"): a write only
// proposes and only a person in the dashboard confirms it, so a token issued to an OAuth client
// is offered no write, whatever its role holds.
import { deepStrictEqual as assertEquals } from 'node:assert/strict';
import type { Caller } from '../_shared/caller.ts';
import { toolsFor } from './tools.ts';

const MEMBER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  roles: [{ slug: 'member', name: 'Member', is_admin: false }],
  capabilities: ['devices:view', 'entries:view', 'tags:view', 'tags:edit'],
  is_admin: false,
  token: { jti: null, client_id: null, label: null },
};

const writesOf = (caller: Caller) =>
  toolsFor(caller).filter((tool) => tool.write).map((tool) => tool.name);

Deno.test('offers the write to a dashboard session whose role may make it', () => {
  assertEquals(writesOf(MEMBER), ['propose_tag_request']);
});

Deno.test("offers no write to an OAuth client's token of the same role", () => {
  assertEquals(
    writesOf({ ...MEMBER, token: { jti: 'j', client_id: 'an-mcp-client', label: 'oauth' } }),
    [],
  );
  // An OAuth 2.1 server that stamps client_id on its tokens (Supabase Auth's) records none.
  assertEquals(writesOf({ ...MEMBER, token: { jti: null, client_id: 'c', label: null } }), []);
  // The dashboard's first-party exchange is recorded in api_tokens too.
  assertEquals(
    writesOf({ ...MEMBER, token: { jti: 'j', client_id: 'dashboard', label: 'oauth' } }),
    [],
  );
});
