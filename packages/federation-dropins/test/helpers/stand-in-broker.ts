// A stand-in for the federation broker that speaks 000 §4.1/§4.3's wire format on loopback, for
// unit tests of the drop-ins. It records every request so tests can check what went over the wire.
// The end-to-end test (broker-e2e.test.ts) uses the real broker instead.
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HandoffSession } from '../../src/index.ts';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

export interface StandInBroker {
  /** `{base}/functions/v1/federation-broker`. */
  brokerUrl: string;
  /** `{app_link_base}` the links point at (this server; it answers them with a blank page). */
  appLinkBase: string;
  requests: RecordedRequest[];
  /** Forces the next answers of an endpoint to this status (000 §7 rows). */
  failWith: { start?: number; exchange?: number };
  /** Replaces the /start answer body (malformed-response tests). */
  startBody?: (code: string, target: string) => unknown;
  /** The session /exchange answers with once the verifier matches. */
  session: () => Promise<HandoffSession> | HandoffSession;
  close(): Promise<void>;
}

const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>);
      } catch {
        resolve({});
      }
    });
  });
}

export async function startStandInBroker(): Promise<StandInBroker> {
  const codes = new Map<string, string>();
  let server: Server | undefined;
  const broker: StandInBroker = {
    brokerUrl: '',
    appLinkBase: '',
    requests: [],
    failWith: {},
    session: () => {
      throw new Error('no session configured');
    },
    close: () => new Promise((resolve) => server?.close(() => resolve())),
  };
  server = createServer(async (request, response) => {
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': 'content-type',
      'access-control-allow-methods': 'POST',
    };
    if (request.method === 'OPTIONS') {
      response.writeHead(204, cors).end();
      return;
    }
    const body = request.method === 'POST' ? await readBody(request) : {};
    broker.requests.push({
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      body,
    });
    const send = (status: number, json: unknown) => {
      response.writeHead(status, { ...cors, 'content-type': 'application/json' });
      response.end(JSON.stringify(json));
    };
    if (request.url === '/functions/v1/federation-broker/start') {
      if (broker.failWith.start) return send(broker.failWith.start, { error: 'forced' });
      const ok =
        typeof body.client_id === 'string' &&
        CHALLENGE.test(String(body.code_challenge)) &&
        body.code_challenge_method === 'S256';
      if (!ok) return send(400, { error: 'invalid_request' });
      const code = randomBytes(32).toString('base64url');
      codes.set(code, String(body.code_challenge));
      const target = String(body.target ?? 'universal');
      return send(
        200,
        broker.startBody?.(code, target) ?? {
          link: `${broker.appLinkBase}/app/auth/federation?code=${code}`,
          expires_in: 60,
          target,
        },
      );
    }
    if (request.url === '/functions/v1/federation-broker/exchange') {
      if (broker.failWith.exchange) return send(broker.failWith.exchange, { error: 'forced' });
      if (typeof body.code !== 'string' || typeof body.code_verifier !== 'string') {
        return send(400, { error: 'invalid_request' });
      }
      const challenge = codes.get(body.code);
      if (!challenge) return send(410, { error: 'gone' });
      const derived = createHash('sha256').update(body.code_verifier).digest('base64url');
      if (derived !== challenge) return send(401, { error: 'invalid_grant' });
      codes.delete(body.code);
      return send(200, await broker.session());
    }
    // The universal link's web fallback: what a server sees when a browser follows the link.
    response.writeHead(200, { 'content-type': 'text/html', 'referrer-policy': 'no-referrer' });
    response.end('<!doctype html><title>companion</title>');
  });
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  broker.appLinkBase = `http://127.0.0.1:${port}`;
  broker.brokerUrl = `http://127.0.0.1:${port}/functions/v1/federation-broker`;
  return broker;
}
