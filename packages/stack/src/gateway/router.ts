// The gateway's Node router: every request the front door (nginx, front-door.ts) does not send
// straight to PostgREST arrives here over a Unix socket: /rest/v1 requests off the fast path,
// /auth/v1 to the auth service, /storage/v1 to the storage service, /functions/v1 to the function
// processes, WebSocket upgrades at /realtime/v1/websocket to the realtime service, CORS preflights. It is the reference for what
// the front door does: the fast path admits a subset of what routeRest admits, and does the same.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { FunctionHost } from '../functions/function-host.ts';
import {
  checkFunctionJwt,
  FUNCTION_BOOT_ERROR,
  FUNCTION_NOT_FOUND,
  type FunctionRefusal,
} from '../functions/function-refusals.ts';
import type { ProjectKeys } from '../keys.ts';
import type { RealtimeService } from '../realtime/realtime-service.ts';
import { isPreflight, preflightHeaders } from './cors.ts';
import {
  bearerOf,
  decideRestCredentials,
  projectKeyJwt,
  translateAuthorization,
} from './credentials.ts';
import { forward, UpstreamPools } from './forward.ts';
import { sendJson } from './json-response.ts';

export interface RouterOptions {
  /** The Unix socket the router listens on; only the front door can reach it. */
  socketPath: string;
  upstreams: UpstreamPools;
  keys: ProjectKeys;
  restPort: number;
  authPort: number;
  /** The storage service; undefined when `[storage] enabled = false`. */
  storagePort?: number;
  functions: FunctionHost;
  realtime?: RealtimeService;
  logger: Logger;
}

export interface RunningRouter {
  stop(): Promise<void>;
}

/** Auth routes Kong leaves untouched: a browser follows these links with no headers. */
const OPEN_AUTH_ROUTES = ['/verify', '/callback', '/authorize'];

function headerValue(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The client's address as the front door saw it: nginx replaces X-Real-IP with its peer's
 * address on every request, and nothing but nginx can connect to the router's socket.
 */
function clientAddress(request: IncomingMessage): string {
  return headerValue(request, 'x-real-ip') ?? '';
}

function routeRest(
  request: IncomingMessage,
  response: ServerResponse,
  options: RouterOptions,
  path: string,
) {
  const decision = decideRestCredentials(
    headerValue(request, 'apikey'),
    headerValue(request, 'authorization'),
    options.keys,
  );
  if (!decision.ok) {
    sendJson(
      response,
      401,
      { code: 'PGRST301', details: null, hint: decision.hint, message: decision.message },
      { 'www-authenticate': 'Bearer' },
    );
    return;
  }
  forward(options.upstreams, request, response, {
    port: options.restPort,
    path,
    prefix: '/rest/v1',
    clientAddress: clientAddress(request),
    headers: { authorization: decision.authorization },
  });
}

function routeAuth(
  request: IncomingMessage,
  response: ServerResponse,
  options: RouterOptions,
  path: string,
) {
  const route = path.split('?')[0] ?? '';
  const open = OPEN_AUTH_ROUTES.includes(route);
  const authorization = open
    ? headerValue(request, 'authorization')
    : translateAuthorization(
        headerValue(request, 'apikey'),
        headerValue(request, 'authorization'),
        options.keys,
      );
  forward(options.upstreams, request, response, {
    port: options.authPort,
    path,
    prefix: '/auth/v1',
    clientAddress: clientAddress(request),
    headers: { authorization },
  });
}

/** Hosted's relay answer: `{code, message}`, the code also in a header a browser may read. */
function sendFunctionRefusal(response: ServerResponse, refusal: FunctionRefusal) {
  sendJson(
    response,
    refusal.status,
    { code: refusal.code, message: refusal.message },
    {
      'content-type': 'application/json',
      'sb-error-code': refusal.code,
      'access-control-expose-headers': 'sb-error-code',
    },
  );
}

async function routeFunction(
  request: IncomingMessage,
  response: ServerResponse,
  options: RouterOptions,
  path: string,
) {
  const name = /^\/([^/?]+)/.exec(path)?.[1] ?? '';
  const source = options.functions.find(name);
  if (!source) {
    sendFunctionRefusal(response, FUNCTION_NOT_FOUND);
    return;
  }
  const authorization = translateAuthorization(
    headerValue(request, 'apikey'),
    headerValue(request, 'authorization'),
    options.keys,
  );
  // The edge runtime checks the JWT of every request but a preflight, which carries no token
  // (supabase/cli functions/serve/templates/main.ts: `req.method !== "OPTIONS" && verifyJWT`).
  if (source.verifyJwt && request.method !== 'OPTIONS') {
    const refusal = await checkFunctionJwt(authorization, options.keys.jwtSecret);
    if (refusal) {
      sendFunctionRefusal(response, refusal);
      return;
    }
  }
  let port: number;
  try {
    port = await options.functions.ensureRunning(name);
  } catch (error) {
    options.logger.error({ component: `fn:${name}`, err: error }, 'function failed to boot');
    sendFunctionRefusal(response, FUNCTION_BOOT_ERROR);
    return;
  }
  forward(options.upstreams, request, response, {
    port,
    path,
    prefix: '/functions/v1',
    clientAddress: clientAddress(request),
    headers: { authorization },
  });
}

/** Realtime's HTTP side (the broadcast endpoints), with Kong's key translation. */
function routeRealtimeHttp(
  request: IncomingMessage,
  response: ServerResponse,
  options: RouterOptions,
  path: string,
) {
  if (!options.realtime || !path.startsWith('/api/')) {
    sendJson(response, 404, {
      message: 'Realtime is served over WebSocket at /realtime/v1/websocket',
    });
    return;
  }
  const authorization = translateAuthorization(
    headerValue(request, 'apikey'),
    headerValue(request, 'authorization'),
    options.keys,
  );
  options.realtime
    .handleHttp(request, response, path, bearerOf(authorization) ?? null)
    .catch((error: unknown) => {
      options.logger.error({ err: error }, 'realtime http route failed');
      if (!response.headersSent) sendJson(response, 500, { error: 'Internal Server Error' });
    });
}

/**
 * Kong's storage route: the key translation of every route, then the storage service, which
 * verifies the token itself (a public object needs none).
 */
function routeStorage(
  request: IncomingMessage,
  response: ServerResponse,
  options: RouterOptions,
  path: string,
) {
  if (options.storagePort === undefined) {
    sendJson(response, 404, { message: 'no Route matched with those values' });
    return;
  }
  forward(options.upstreams, request, response, {
    port: options.storagePort,
    path,
    prefix: '/storage/v1',
    clientAddress: clientAddress(request),
    headers: {
      authorization: translateAuthorization(
        headerValue(request, 'apikey'),
        headerValue(request, 'authorization'),
        options.keys,
      ),
    },
  });
}

const PREFIXES = ['/rest/v1', '/auth/v1', '/storage/v1', '/functions/v1', '/realtime/v1'] as const;

function handle(request: IncomingMessage, response: ServerResponse, options: RouterOptions) {
  // Edge functions answer their own preflights (Supabase's function CORS guide: `if (req.method
  // === 'OPTIONS')`), so a function's CORS policy and headers reach the browser; the other
  // routes get the gateway's, as Kong's cors plugin answers them in the CLI's stack.
  const toFunction = (request.url ?? '').startsWith('/functions/v1/');
  if (isPreflight(request) && !toFunction) {
    response.writeHead(200, preflightHeaders(request));
    response.end();
    return;
  }
  const url = request.url ?? '/';
  const prefix = PREFIXES.find(
    (candidate) =>
      url === candidate || url.startsWith(`${candidate}/`) || url.startsWith(`${candidate}?`),
  );
  const path = prefix ? url.slice(prefix.length) || '/' : url;
  switch (prefix) {
    case '/rest/v1':
      routeRest(request, response, options, path.startsWith('?') ? `/${path}` : path);
      return;
    case '/auth/v1':
      routeAuth(request, response, options, path);
      return;
    case '/functions/v1':
      routeFunction(request, response, options, path).catch((error: unknown) => {
        options.logger.error({ err: error }, 'function route failed');
        if (!response.headersSent) sendJson(response, 500, { msg: 'Internal Server Error' });
      });
      return;
    case '/storage/v1':
      routeStorage(request, response, options, path.startsWith('?') ? `/${path}` : path);
      return;
    case '/realtime/v1':
      routeRealtimeHttp(request, response, options, path);
      return;
    default:
      sendJson(response, 404, { message: 'no Route matched with those values' });
  }
}

/**
 * Kong's realtime route: the `apikey` query parameter (or header) becomes the JWT it stands for,
 * and the realtime service takes the socket over.
 */
function upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, options: RouterOptions) {
  const url = new URL(request.url ?? '/', 'http://gateway');
  if (url.pathname !== '/realtime/v1/websocket' || !options.realtime) {
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  const apikey =
    url.searchParams.get('apikey') ??
    headerValue(request, 'apikey') ??
    headerValue(request, 'x-api-key');
  const token = apikey ? (projectKeyJwt(apikey, options.keys) ?? apikey) : null;
  options.realtime.handleUpgrade(request, socket, head, token);
}

export async function startRouter(
  settings: Omit<RouterOptions, 'upstreams'>,
): Promise<RunningRouter> {
  const upstreams = new UpstreamPools();
  const options: RouterOptions = { ...settings, upstreams };
  // nginx sends an HTTP/1.0 client's request on as HTTP/1.1, without the Host it never had.
  const server: Server = createServer(
    { keepAliveTimeout: 65_000, requireHostHeader: false },
    (request, response) => handle(request, response, options),
  );
  // Upgraded sockets leave the HTTP server's bookkeeping but still hold close() open.
  const upgraded = new Set<Duplex>();
  server.on('upgrade', (request, socket, head) => {
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    upgrade(request, socket, head, options);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The socket is made 0600 (Node creates it through the umask), so no one but the stack's
    // user can connect before it is handed to nginx's (runtime-dir.ts openRouterSocket). The
    // bind happens within listen(), so the umask is ours only for that call.
    const umask = process.umask(0o177);
    try {
      server.listen(options.socketPath, () => resolve());
    } finally {
      process.umask(umask);
    }
  });
  return {
    async stop() {
      for (const socket of upgraded) socket.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await upstreams.close();
    },
  };
}
