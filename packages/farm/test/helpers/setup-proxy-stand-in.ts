// A stand-in for the capture proxy's part of the Android set-up, on loopback: a device-port
// listener that takes the phone browser's absolute-form requests (opening `/setup/<token>`
// marks that device seen, as the real proxy's set-up page does), and a management listener
// serving `/ca.der` and `GET /setup/<token>/status` as JSON. Ports may be chosen beforehand, for a
// tool server configured before the stand-in starts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SetupStandInStatus {
  seen: boolean;
  lastSeenAt: string | null;
  connection: 'http' | null;
  listener: 'device-port' | null;
  caProblem: { host: string; at: string; reason: string } | null;
}

export interface SetupProxyStandIn {
  devicePort: number;
  managementPort: number;
  managementUrl: string;
  /** Requests the device port received: the phone's browser through its proxy. */
  hits: Array<{ url: string; from: string }>;
  /** What every status answers besides `seen` (a CA problem to report). */
  caProblem: SetupStandInStatus['caProblem'];
  /** Tokens whose set-up page was opened through the device port. */
  seenTokens: Set<string>;
  reset(): void;
  close(): Promise<void>;
}

/** A certificate's first bytes: one ASN.1 SEQUENCE, as the set-up checks. */
export const STAND_IN_CA_DER = Buffer.from('3082010a0282010100c0ffee', 'hex');

const SETUP_PATH = /\/setup\/([A-Za-z0-9_-]+)$/;
const STATUS_PATH = /^\/setup\/([A-Za-z0-9_-]+)\/status$/;

async function listen(
  port: number,
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Promise<{ server: Server; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

export async function startSetupProxyStandIn(
  ports: { devicePort?: number; managementPort?: number } = {},
): Promise<SetupProxyStandIn> {
  const seenAt = new Map<string, string>();
  const standIn = {
    hits: [] as SetupProxyStandIn['hits'],
    caProblem: null as SetupStandInStatus['caProblem'],
    seenTokens: new Set<string>(),
  };
  const device = await listen(ports.devicePort ?? 0, (request, response) => {
    const url = request.url ?? '';
    standIn.hits.push({ url, from: request.socket.remoteAddress ?? '' });
    const token = url.startsWith('http://') ? SETUP_PATH.exec(new URL(url).pathname)?.[1] : null;
    if (!token) {
      response.writeHead(404).end();
      return;
    }
    standIn.seenTokens.add(token);
    seenAt.set(token, new Date().toISOString());
    response.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Set up</h1>');
  });
  const management = await listen(ports.managementPort ?? 0, (request, response) => {
    if (request.url === '/ca.der') {
      response.writeHead(200, { 'content-type': 'application/x-x509-ca-cert' });
      response.end(STAND_IN_CA_DER);
      return;
    }
    const token = STATUS_PATH.exec(request.url ?? '')?.[1];
    if (!token || request.headers.accept !== 'application/json') {
      response.writeHead(404).end();
      return;
    }
    const seen = standIn.seenTokens.has(token);
    const status: SetupStandInStatus = {
      seen,
      lastSeenAt: seenAt.get(token) ?? null,
      connection: seen ? 'http' : null,
      listener: seen ? 'device-port' : null,
      caProblem: standIn.caProblem,
    };
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(status));
  });
  return Object.assign(standIn, {
    devicePort: device.port,
    managementPort: management.port,
    managementUrl: `http://127.0.0.1:${management.port}`,
    reset() {
      standIn.hits.length = 0;
      standIn.caProblem = null;
      standIn.seenTokens.clear();
      seenAt.clear();
    },
    async close() {
      await closeServer(device.server);
      await closeServer(management.server);
    },
  });
}
