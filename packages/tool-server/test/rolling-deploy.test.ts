// 001 §9: the tool server redeploys often and access tokens survive deploys. A second instance
// (a new build starting while the old one serves, as a rolling deploy runs them) shares only the
// database; tokens and refresh tokens issued by the first work on it unchanged, and it reports
// its own build number.
import { request } from 'node:http';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../stack/src/ports.ts';
import { type RunningToolServer, startToolServer } from '../src/index.ts';
import { authorizeAndExchange, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack({ buildNumber: '100' });
let next: RunningToolServer | undefined;
let nextPort = 0;

beforeAll(async () => {
  nextPort = await findFreePort();
  next = await startToolServer(
    {
      origins: [stack().mcpUrl, stack().mcpLegacyUrl],
      listen: [{ host: '127.0.0.1', port: nextPort }],
      dashboardUrl: stack().dashboardUrl,
      dbUrl: stack().dbUrl,
      supabaseUrl: stack().apiUrl,
      jwtSecret: stack().keys.jwtSecret,
      buildNumber: '101',
    },
    pino({ level: 'silent' }),
  );
});

afterAll(async () => {
  await next?.stop();
});

/** A request to the new instance as the load balancer forwards it: same Host as the old one. */
function viaNewInstance(
  path: string,
  init: { method: string; headers: Record<string, string>; body: string },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port: nextPort,
        path,
        method: init.method,
        headers: { ...init.headers, host: new URL(stack().mcpUrl).host },
      },
      (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => {
          text += chunk;
        });
        answer.on('end', () => resolve({ status: answer.statusCode ?? 0, text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(init.body);
  });
}

describe('a rolling deploy', () => {
  it('accepts the old build’s access token and reports the new build number', async () => {
    const tokens = await authorizeAndExchange(stack());
    const answer = await viaNewInstance('/', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${tokens.access_token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: {
          protocolVersion: '2025-11-25',
          capabilities: {},
          clientInfo: { name: 't', version: '1' },
        },
      }),
    });
    expect(answer.status).toBe(200);
    expect(answer.text).toMatch(/"serverInfo":\{"name":"capture-platform","version":"101"/);
  });

  it('rotates the old build’s refresh token', async () => {
    const tokens = await authorizeAndExchange(stack());
    const answer = await viaNewInstance('/token', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: tokens.client.client_id,
      }).toString(),
    });
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({
      token_type: 'Bearer',
      refresh_token: expect.any(String),
    });
  });
});
