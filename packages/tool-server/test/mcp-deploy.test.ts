// 001 §6 and §9: a deploy (a new build starting while the old one still serves, sharing only the
// database) sends notifications/tools/list_changed and notifications/resources/list_changed to
// every client holding a listen stream on the old instance, in both eras: the 2025-11-25 GET
// stream and the 2026-07-28 subscriptions/listen stream. The new build then reports its version.
import { request } from 'node:http';
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../stack/src/ports.ts';
import { until } from '../../stack/test/helpers/until.ts';
import { type RunningToolServer, startToolServer } from '../src/index.ts';
import { authorizeAndExchange, INITIALIZE_BODY, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack({ buildNumber: '100' });
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
});

/** A 2025-era listen stream: GET / with SSE, collecting everything the server sends. */
async function openLegacyStream(base: string, token: string) {
  const abort = new AbortController();
  const response = await fetch(`${base}/`, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal: abort.signal,
  });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('text/event-stream');
  let received = '';
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for (;;) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) return;
        received += decoder.decode(chunk.value, { stream: true });
      }
    } catch {
      // Aborted at the end of the test.
    }
  })();
  cleanups.push(async () => abort.abort());
  return { received: () => received };
}

/** initialize on an instance reached directly, with the Host the load balancer would pass. */
function initializeVia(port: number, host: string, token: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: '127.0.0.1',
        port,
        path: '/',
        method: 'POST',
        headers: {
          host,
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
      },
      (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => {
          text += chunk;
        });
        answer.on('end', () => resolve(text));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(INITIALIZE_BODY);
  });
}

describe('a rolling deploy', () => {
  it('notifies listen streams of both eras on the old instance, and the new build is seen after', async () => {
    const { access_token: token } = await authorizeAndExchange(stack());
    const legacy = await openLegacyStream(stack().mcpUrl, token);

    const modern = new V2Client(
      { name: 'deploy-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    const seen = { tools: 0, resources: 0 };
    modern.setNotificationHandler('notifications/tools/list_changed', () => {
      seen.tools += 1;
    });
    modern.setNotificationHandler('notifications/resources/list_changed', () => {
      seen.resources += 1;
    });
    await modern.connect(
      new StreamableHTTPClientTransport(new URL(stack().mcpUrl), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    cleanups.push(() => modern.close());
    expect(modern.getServerVersion()?.version).toBe('100');
    const subscription = await modern.listen({
      toolsListChanged: true,
      resourcesListChanged: true,
    });
    cleanups.push(async () => subscription.close());

    const port = await findFreePort();
    const next: RunningToolServer = await startToolServer(
      {
        origins: [stack().mcpUrl, stack().mcpLegacyUrl],
        listen: [{ host: '127.0.0.1', port }],
        dashboardUrl: stack().dashboardUrl,
        dbUrl: stack().dbUrl,
        supabaseUrl: stack().apiUrl,
        jwtSecret: stack().keys.jwtSecret,
        buildNumber: '101',
      },
      pino({ level: 'silent' }),
    );
    cleanups.push(() => next.stop());

    await until(async () =>
      legacy.received().includes('notifications/tools/list_changed') &&
      legacy.received().includes('notifications/resources/list_changed') &&
      seen.tools > 0 &&
      seen.resources > 0
        ? true
        : undefined,
    );
    expect(await initializeVia(port, new URL(stack().mcpUrl).host, token)).toMatch(
      /"serverInfo":\{"name":"capture-platform","version":"101"/,
    );
  }, 30_000);
});
