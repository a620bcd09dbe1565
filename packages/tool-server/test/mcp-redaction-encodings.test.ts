// Regression: an attack run planted secrets in encodings the redactor did not look through
// (docs/redaction.md "Encoded secrets") and read them back. Every case of the encoded corpus is
// captured on a member's device and read back through inspect_requests (in full and as a list)
// and summarize_device_traffic (the slowest requests' URLs, the top endpoints' paths).
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ENCODED_CORPUS,
  findEncodedLeaks,
  readableEncodedText,
} from '../../../supabase/functions/tests/redaction_encoded_corpus.ts';
import { connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
/** The member's iPhone (seed). */
const DEVICE = 'd0000000-0000-4000-8000-000000000002';
const ids: number[] = [];
const ALL_SECRETS = ENCODED_CORPUS.flatMap((entry) => entry.secrets);
const URL_CASES = ENCODED_CORPUS.filter((entry) => entry.gap === 'percent');

beforeAll(async () => {
  const db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  try {
    for (const [index, entry] of ENCODED_CORPUS.entries()) {
      // URL cases are captured three times and slowest, so they lead the summary's top
      // endpoints and slowest requests whatever else the device sent.
      const copies = entry.gap === 'percent' ? 3 : 1;
      for (let copy = 0; copy < copies; copy += 1) {
        const timings = { ...(entry.payload.timings as object), total: 90_000 + index * 10 + copy };
        const { rows } = await db.query<{ id: string }>(
          `insert into public.entries (ts, kind, request_id, device_uuid, payload)
           values (now() - make_interval(secs => $1), $2, $3, $4, $5) returning id`,
          [
            index + copy / 10,
            entry.kind,
            `redaction-encoded-${index}-${copy}`,
            DEVICE,
            entry.gap === 'percent' ? { ...entry.payload, timings } : entry.payload,
          ],
        );
        if (copy === 0) ids.push(Number(rows[0]?.id));
      }
    }
  } finally {
    await db.end();
  }
});

describe('secrets in encodings read back through the tools', () => {
  it.each(ENCODED_CORPUS.map((entry, index) => [entry.name, index] as const))(
    'inspect_requests in full shows no secret of %s',
    async (_name, index) => {
      const entry = ENCODED_CORPUS[index];
      if (!entry) throw new Error('no case');
      const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
      const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
      try {
        const result = await client.callTool('inspect_requests', { id: ids[index] });
        expect(result.isError ?? false).toBe(false);
        expect(findEncodedLeaks(result.structuredContent, entry.secrets)).toEqual([]);
        expect(findEncodedLeaks(result.content[0]?.text, entry.secrets)).toEqual([]);
        const text = readableEncodedText(result.structuredContent);
        for (const kind of entry.kinds) expect(text).toContain(`[redacted:${kind}:`);
        for (const survivor of entry.present) expect(text).toContain(survivor);
      } finally {
        await client.close();
      }
    },
  );

  it("inspect_requests as a list shows no secret of an encoded URL, and keeps the URLs' shape", async () => {
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
    try {
      const result = await client.callTool('inspect_requests', { device_uuid: DEVICE, limit: 100 });
      expect(result.isError ?? false).toBe(false);
      expect(findEncodedLeaks(result, ALL_SECRETS)).toEqual([]);
      const urls = JSON.stringify(result.structuredContent);
      for (const entry of URL_CASES) {
        for (const survivor of entry.present) expect(urls).toContain(survivor);
      }
    } finally {
      await client.close();
    }
  });

  it('summarize_device_traffic shows no secret of an encoded URL in slow URLs or endpoint paths', async () => {
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
    try {
      const result = await client.callTool('summarize_device_traffic', { device_uuid: DEVICE });
      expect(result.isError ?? false).toBe(false);
      expect(findEncodedLeaks(result, ALL_SECRETS)).toEqual([]);
      const summary = result.structuredContent as {
        summary: { top_endpoints: { path: string }[]; slowest: { url: string }[] };
      };
      // Each URL case is in both lists, redacted in place.
      const paths = summary.summary.top_endpoints.map((endpoint) => endpoint.path);
      expect(
        paths.filter((path) =>
          /^\/v2\/sessions\/\[redacted:jwt:[0-9a-f]{8}\]\/refresh$/.test(path),
        ),
      ).toHaveLength(1);
      const slowest = JSON.stringify(summary.summary.slowest);
      for (const entry of URL_CASES) {
        for (const survivor of entry.present) expect(slowest).toContain(survivor);
      }
    } finally {
      await client.close();
    }
  });
});
