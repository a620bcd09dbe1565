// startDashboardServer(): serves the built app (dist/) with an SPA fallback to index.html, the
// deployment's runtime config at /config.json, and the security headers on every response.
import { createReadStream, existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import pino, { type Logger } from 'pino';
import { type DashboardRuntimeConfig, parseRuntimeConfig } from '../src/runtime-config.ts';
import { DashboardServerError } from './errors.ts';
import { buildSecurityHeaders } from './security-headers.ts';
import { cacheControlFor, contentTypeFor, isAppRoute, resolveDistPath } from './static-files.ts';

/** Where `npm run build -w @capture/dashboard` writes the app. */
export const DASHBOARD_DIST_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'dist');

export type DashboardServerOptions = {
  port: number;
  /** Default 127.0.0.1; 0.0.0.0 behind a proxy or in a container. */
  host?: string;
  distDir?: string;
  config: DashboardRuntimeConfig;
  logger?: Logger;
};

/** Stream errors that only mean the client hung up. */
const CLIENT_GONE = new Set([
  'ERR_STREAM_PREMATURE_CLOSE',
  'ERR_STREAM_UNABLE_TO_PIPE',
  'ECONNRESET',
]);

export type RunningDashboardServer = { url: string; stop(): Promise<void> };

function sendText(response: ServerResponse, status: number, text: string, head: boolean): void {
  response.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Cache-Control': 'no-store',
    'Content-Length': Buffer.byteLength(text),
  });
  response.end(head ? undefined : text);
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

export async function startDashboardServer(
  options: DashboardServerOptions,
): Promise<RunningDashboardServer> {
  const logger = (options.logger ?? pino({ level: 'info' })).child({ component: 'dashboard' });
  const distDir = resolve(options.distDir ?? DASHBOARD_DIST_DIR);
  const indexFile = join(distDir, 'index.html');
  if (!existsSync(indexFile)) {
    throw new DashboardServerError(
      'dist_missing',
      `the dashboard is not built (${indexFile} is missing): run \`npm run build -w @capture/dashboard\``,
    );
  }
  let config: DashboardRuntimeConfig;
  try {
    config = parseRuntimeConfig(options.config);
  } catch (cause) {
    throw new DashboardServerError('bad_config', `dashboard config: ${(cause as Error).message}`);
  }
  const securityHeaders = buildSecurityHeaders(config);
  const configBody = JSON.stringify(config);

  async function sendFile(
    response: ServerResponse,
    absolutePath: string,
    relativePath: string,
    size: number,
    head: boolean,
  ): Promise<void> {
    response.writeHead(200, {
      'Content-Type': contentTypeFor(absolutePath),
      'Cache-Control': cacheControlFor(relativePath),
      'Content-Length': size,
    });
    if (head) response.end();
    else if (!response.destroyed) await pipeline(createReadStream(absolutePath), response);
  }

  async function sendIndex(response: ServerResponse, head: boolean): Promise<void> {
    // Read per request, so a rebuild (vite build --watch) is served without a restart.
    const html = await readFile(indexFile);
    await sendFile(response, indexFile, 'index.html', html.length, head);
  }

  async function answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(securityHeaders)) response.setHeader(name, value);
    const head = request.method === 'HEAD';
    if (request.method !== 'GET' && !head) {
      response.setHeader('Allow', 'GET, HEAD');
      return sendText(response, 405, 'Method not allowed\n', head);
    }
    const pathname = (request.url ?? '').split('?')[0] as string;
    if (pathname === '/config.json') {
      response.writeHead(200, {
        'Content-Type': 'application/json; charset=utf-8',
        'Cache-Control': 'no-store',
        'Content-Length': Buffer.byteLength(configBody),
      });
      response.end(head ? undefined : configBody);
      return;
    }
    const resolved = resolveDistPath(distDir, pathname);
    if (resolved.kind === 'refused') return sendText(response, 400, 'Bad path\n', head);
    if (resolved.relativePath === '' || resolved.relativePath === 'index.html') {
      return sendIndex(response, head);
    }
    const found = await stat(resolved.absolutePath).catch(() => null);
    if (found?.isFile()) {
      return sendFile(response, resolved.absolutePath, resolved.relativePath, found.size, head);
    }
    if (isAppRoute(resolved.relativePath)) return sendIndex(response, head);
    return sendText(response, 404, 'Not found\n', head);
  }

  const server = createServer((request, response) => {
    answer(request, response)
      .catch((error: unknown) => {
        // A browser that goes away mid-download is not a server fault.
        if (CLIENT_GONE.has((error as { code?: string }).code ?? '')) return;
        logger.error({ err: error, method: request.method }, 'dashboard_request_failed');
        if (!response.headersSent) sendText(response, 500, 'Server error\n', false);
        else response.destroy();
      })
      .finally(() => {
        // The path only: a magic link's ?code= must not reach the logs.
        const path = (request.url ?? '').split('?')[0];
        logger.debug(
          { method: request.method, path, status: response.statusCode },
          'dashboard_request',
        );
      });
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolveListen, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolveListen();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${hostForUrl(host)}:${port}`;
  logger.info({ url, distDir }, 'dashboard_started');
  return {
    url,
    stop: async () => {
      const closed = new Promise<void>((resolveClose) => server.close(() => resolveClose()));
      server.closeAllConnections();
      await closed;
    },
  };
}
