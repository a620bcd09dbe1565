// No secret of the redaction corpus (real formats: JWTs, cloud and vendor keys, cookies, URL
// passwords, private keys, secrets in JSON, form and multipart bodies) appears in any tool output:
// the corpus is captured on a member's device and read back through inspect_requests as a list
// and one request at a time, by the member and by an admin.
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  findLeaks,
  REDACTION_CORPUS,
  readableText,
} from '../../../supabase/functions/tests/redaction_corpus.ts';
import { connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
const DEVICE = 'd0000000-0000-4000-8000-000000000002';
const ids: number[] = [];

beforeAll(async () => {
  const db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  try {
    for (const [index, entry] of REDACTION_CORPUS.entries()) {
      const { rows } = await db.query<{ id: string }>(
        `insert into public.entries (ts, kind, request_id, device_uuid, payload)
         values (now() - make_interval(secs => $1), $2, $3, $4, $5) returning id`,
        [index, entry.kind, `redaction-corpus-${index}`, DEVICE, entry.payload],
      );
      ids.push(Number(rows[0]?.id));
    }
  } finally {
    await db.end();
  }
});

describe.each([
  ['member', DEMO.member],
  ['admin', DEMO.admin],
])('as %s', (_, login) => {
  it("shows no corpus secret in a list of the device's requests", async () => {
    const { access_token } = await authorizeAndExchange(stack(), login);
    const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
    try {
      const result = await client.callTool('inspect_requests', { device_uuid: DEVICE, limit: 100 });
      expect(result.isError ?? false).toBe(false);
      const listed = JSON.stringify(result);
      for (const entry of REDACTION_CORPUS) {
        expect(findLeaks(listed, entry.secrets), entry.name).toEqual([]);
      }
    } finally {
      await client.close();
    }
  });

  it('shows no corpus secret in any request read in full', async () => {
    const { access_token } = await authorizeAndExchange(stack(), login);
    const client = await connectClient('v1', stack().mcpUrl, access_token);
    try {
      for (const [index, entry] of REDACTION_CORPUS.entries()) {
        const result = await client.callTool('inspect_requests', { id: ids[index] });
        expect(result.isError ?? false, entry.name).toBe(false);
        expect(findLeaks(result.structuredContent, entry.secrets), entry.name).toEqual([]);
        expect(findLeaks(result.content[0]?.text, entry.secrets), entry.name).toEqual([]);
        // Base64 bodies are re-encoded after redaction: read them as the corpus helper decodes them.
        expect(readableText(result.structuredContent), entry.name).toMatch(
          /\[redacted:[a-z0-9-]+:[0-9a-f]{8}\]/,
        );
      }
    } finally {
      await client.close();
    }
  });
});
