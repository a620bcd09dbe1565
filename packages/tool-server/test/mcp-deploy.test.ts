// 001 §6 and §9: a deploy (a new build starting while the old one still serves, sharing only the
// database) sends notifications/tools/list_changed and notifications/resources/list_changed to
// every client holding a listen stream on the old instance, in both eras: the 2025-11-25 GET
// stream and the 2026-07-28 subscriptions/listen stream. The new build then reports its version.
// Also the GET streams' limits as the v1 SDK client (what mcp-remote runs) lives with them: many
// apps on one token each keep a stream, and one closed to make room reconnects by itself.
import { request } from 'node:http';
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1Transport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { findFreePort } from '../../stack/src/ports.ts';
import { until } from '../../stack/test/helpers/until.ts';
import { type RunningToolServer, startToolServer } from '../src/index.ts';
import { REPLACED_RETRY_MS, STREAMS_PER_TOKEN } from '../src/mcp/listen-streams.ts';
import { authorizeAndExchange, INITIALIZE_BODY, useOAuthStack } from './helpers/oauth-stack.ts';
import { recordingFetch } from './helpers/sdk-flows.ts';

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
  let ended = false;
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    try {
      for (;;) {
        const chunk = await reader?.read();
        if (!chunk || chunk.done) break;
        received += decoder.decode(chunk.value, { stream: true });
      }
      ended = true;
    } catch {
      // Aborted at the end of the test.
    }
  })();
  cleanups.push(async () => abort.abort());
  return { received: () => received, ended: () => ended };
}

/** A new build starting beside the stack's instance, sharing only the database: a deploy. */
async function deploy(buildNumber: string): Promise<number> {
  const port = await findFreePort();
  const next: RunningToolServer = await startToolServer(
    {
      origins: [stack().mcpUrl, stack().mcpLegacyUrl],
      listen: [{ host: '127.0.0.1', port }],
      dashboardUrl: stack().dashboardUrl,
      dbUrl: stack().dbUrl,
      supabaseUrl: stack().apiUrl,
      jwtSecret: stack().keys.jwtSecret,
      buildNumber,
    },
    pino({ level: 'silent' }),
  );
  cleanups.push(() => next.stop());
  return port;
}

/**
 * A 2025-era v1 SDK client, as mcp-remote runs one per app: every request it makes is logged
 * (`GET / 200` is its listen stream opening), and so is every tools/list_changed it hears.
 */
async function connectV1App(token: string) {
  const log: string[] = [];
  const heard: string[] = [];
  const client = new V1Client({ name: 'mcp-remote-app', version: '1.0.0' });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    heard.push('notifications/tools/list_changed');
  });
  const transport = new V1Transport(new URL(stack().mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: recordingFetch(log),
  });
  await client.connect(transport);
  cleanups.push(() => client.close());
  const listens = () => log.filter((entry) => entry.startsWith('GET / ')).length;
  // Stateless: no Mcp-Session-Id, so the token is all that tells one app's stream from another's.
  return { log, heard, listens, sessionId: () => transport.sessionId };
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

    const port = await deploy('101');

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

describe('listen streams of apps sharing one token', () => {
  // Regression: one token held 4 streams and the fifth app's GET got 429, which the SDK clients
  // report once and never retry, so that app heard of no deploy until it restarted.
  it('keeps a stream for each of five mcp-remote apps on one token, and each hears the deploy', async () => {
    const { access_token: token } = await authorizeAndExchange(stack());
    const apps: Array<Awaited<ReturnType<typeof connectV1App>>> = [];
    for (let index = 0; index < 5; index += 1) apps.push(await connectV1App(token));
    await until(() => (apps.every((app) => app.log.includes('GET / 200')) ? true : undefined));
    expect(apps.flatMap((app) => app.log.filter((entry) => entry.startsWith('GET /')))).toEqual(
      Array(5).fill('GET / 200'),
    );
    expect(apps.map((app) => app.sessionId())).toEqual(Array(5).fill(undefined));

    await deploy('102');
    await until(() => (apps.every((app) => app.heard.length > 0) ? true : undefined));
  }, 30_000);

  it(`closes the oldest stream past ${STREAMS_PER_TOKEN} on one token; its SDK client reconnects by itself and hears the next deploy`, async () => {
    const { access_token: token } = await authorizeAndExchange(stack());
    const app = await connectV1App(token);
    await until(() => (app.listens() === 1 ? true : undefined));
    const others: Array<Awaited<ReturnType<typeof openLegacyStream>>> = [];
    for (let index = 0; index < STREAMS_PER_TOKEN; index += 1) {
      others.push(await openLegacyStream(stack().mcpUrl, token));
    }
    // The 33rd stream closed the app's; after `retry` the app opens another, which closes the
    // oldest of the others in turn (a raw reader that does not come back).
    await until(() => (app.listens() === 2 ? true : undefined), REPLACED_RETRY_MS + 10_000);
    expect(app.log.filter((entry) => entry.startsWith('GET /'))).toEqual([
      'GET / 200',
      'GET / 200',
    ]);
    await until(() => (others[0]?.ended() ? true : undefined));
    expect(others[0]?.received()).toContain(`retry: ${REPLACED_RETRY_MS}\n`);
    expect(others.slice(1).some((other) => other.ended())).toBe(false);

    await deploy('103');
    await until(() =>
      app.heard.length > 0 &&
      others.slice(1).every((other) => other.received().includes('tools/list_changed'))
        ? true
        : undefined,
    );
  }, 40_000);
});
