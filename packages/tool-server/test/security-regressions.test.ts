// Regressions for what an attacker's review of the tool server found (2026-11-25): URLs carrying
// tokens in summarize_device_traffic and list_breakpoints output (now redacted), a banned account
// that kept refreshing (now refused on refresh, code exchange and every call), and one token
// holding unbounded listen streams (now 32, the oldest closed past that; all end with the token).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../stack/test/helpers/until.ts';
import { connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, mcpStatusFor, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();
/** The member's iPhone (seed). */
const DEVICE = 'd0000000-0000-4000-8000-000000000002';

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A JWT-shaped secret that the shared redactor recognises (as inspect_requests proves). */
const URL_JWT = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64({
  sub: 'a0000000-0000-4000-8000-00000000beef',
  role: 'authenticated',
  exp: 1893456000,
})}.${'Qm9ndXNTaWduYXR1cmVGb3JSZXZpZXdGaW5kaW5nczE'}`;
const SECRET_URL = `https://api.shop.example/v1/export?access_token=${URL_JWT}`;

let db: pg.Client;

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  // A very slow request whose URL carries a bearer token in its query string.
  await db.query(
    `insert into public.entries (ts, kind, request_id, device_uuid, payload)
     values (now() - interval '1 minute', 'http', 'review-slow-secret-url', $1, $2)`,
    [
      DEVICE,
      {
        method: 'GET',
        scheme: 'https',
        host: 'api.shop.example',
        port: 443,
        path: '/v1/export',
        query: `access_token=${URL_JWT}`,
        url: SECRET_URL,
        httpVersion: 'HTTP/1.1',
        statusCode: 200,
        statusText: 'OK',
        requestHeaders: [],
        responseHeaders: [],
        requestBody: null,
        responseBody: null,
        sizes: { requestBody: 0, responseBody: 0 },
        timings: { connect: 0, tls: -1, send: 0.2, wait: 99_000, receive: 3, total: 99_999 },
      },
    ],
  );
  // A breakpoint held on the same kind of request.
  await db.query(
    `insert into public.breakpoint_events (device_uuid, request_id, phase, pattern, method, url)
     values ($1, 'review-held-secret-url', 'request', 'api.shop.example/*', 'GET', $2)`,
    [DEVICE, SECRET_URL],
  );
});

afterAll(async () => {
  await db?.end();
});

describe('redaction of URLs outside inspect_requests', () => {
  it('summarize_device_traffic never returns a token carried in a slow request URL', async () => {
    // Sanity: inspect_requests redacts the same URL.
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
    try {
      const listed = await client.callTool('inspect_requests', {
        device_uuid: DEVICE,
        search: 'v1/export',
      });
      expect(JSON.stringify(listed)).not.toContain(URL_JWT);

      const summary = await client.callTool('summarize_device_traffic', { device_uuid: DEVICE });
      expect(summary.isError ?? false).toBe(false);
      expect(JSON.stringify(summary)).toContain('api.shop.example');
      expect(JSON.stringify(summary)).not.toContain(URL_JWT);
    } finally {
      await client.close();
    }
  });

  it('list_breakpoints never returns a token carried in a held request URL', async () => {
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const client = await connectClient('v2-legacy', stack().mcpUrl, access_token);
    try {
      const result = await client.callTool('list_breakpoints', { device_uuid: DEVICE });
      expect(result.isError ?? false).toBe(false);
      expect(JSON.stringify(result)).toContain('api.shop.example');
      expect(JSON.stringify(result)).not.toContain(URL_JWT);
    } finally {
      await client.close();
    }
  });
});

describe('listen streams', () => {
  it('one token cannot hold more than 32 GET listen streams: past that its oldest are closed', async () => {
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const controllers: AbortController[] = [];
    const statuses: number[] = [];
    const ended: boolean[] = [];
    try {
      for (let index = 0; index < 60; index += 1) {
        const controller = new AbortController();
        controllers.push(controller);
        const response = await fetch(`${stack().mcpUrl}/`, {
          headers: { authorization: `Bearer ${access_token}`, accept: 'text/event-stream' },
          signal: controller.signal,
        });
        statuses.push(response.status);
        ended.push(false);
        void response.body
          ?.pipeTo(
            new WritableStream({
              close: () => {
                ended[index] = true;
              },
            }),
          )
          .catch(() => undefined);
      }
      // 60 accepted (a refusal would never be retried by the SDK clients), 32 left open.
      expect(statuses).toEqual(Array(60).fill(200));
      await until(() => (ended.filter(Boolean).length === 28 ? true : undefined));
      expect(ended.slice(0, 28).every(Boolean)).toBe(true);
    } finally {
      for (const controller of controllers) controller.abort();
    }
  });
});

// Last: bans the viewer for the rest of this file.
describe('a banned account', () => {
  it('cannot refresh its tokens, and its access token stops working', async () => {
    const { access_token, refresh_token, client } = await authorizeAndExchange(
      stack(),
      DEMO.viewer,
    );
    await db.query(
      `update auth.users set banned_until = now() + interval '100 years' where email = $1`,
      [DEMO.viewer.email],
    );
    const response = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token,
        client_id: client.client_id,
      }),
    });
    const body = (await response.json()) as { error?: string };
    expect({ status: response.status, error: body.error }).toEqual({
      status: 400,
      error: 'invalid_grant',
    });
    expect(await mcpStatusFor(stack().mcpUrl, access_token)).toBe(401);
  });
});
