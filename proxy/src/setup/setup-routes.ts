// The device set-up URLs the proxy answers itself (docs/devices.md), on every listener like the
// other management URLs, so a phone reaches them on the LAN before it uses the proxy and through
// the proxy afterwards:
//
//   /<port>.pac            the PAC file by IP (no wildcard DNS needed): PROXY <address>:<port>,
//                          <address> being the proxy address this client reached
//   /ca.mobileconfig       the CA as an Apple configuration profile (iOS, macOS)
//   /setup                 the set-up page for any device (manual proxy, CA, steps)
//   /setup/<token>         a device's set-up page from its QR code: opening it binds the device's
//                          port to this client's address, as /allocate does
//   /setup/<token>/status  the device's live check (Server-Sent Events, or JSON)
//   http://capture.invalid/ (and /status): the same pages at a fixed name through the proxy, as
//                          mitmproxy answers mitm.it: for the device whose port it came through
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { AllocateLimiter } from '../devices/allocate-limiter.ts';
import {
  AllocationError,
  type DeviceRegistry,
  type SetupLinkDevice,
} from '../devices/device-registry.ts';
import { PAC_CONTENT_TYPE, pacBody } from '../devices/pac.ts';
import type { CertificateAuthority } from '../tls/certificate-authority.ts';
import type { DeviceActivity, DeviceSetupStatus } from './device-activity.ts';
import { caMobileconfig, MOBILECONFIG_CONTENT_TYPE } from './mobileconfig.ts';
import { platformSteps } from './platform-steps.ts';
import { escapeHtml, renderSetupPage, SETUP_CSP, SETUP_SCRIPT, SETUP_STYLE } from './setup-page.ts';

/** The fixed name of the set-up page through the proxy (RFC 6761 §6.4: never resolves). */
export const SETUP_HOST = 'capture.invalid';

const ASSET_BASE = '/setup/assets';
/** Set-up link tokens: 24 random bytes, base64url (supabase/migrations/…_device_setup_links). */
const TOKEN = /^\/setup\/([A-Za-z0-9_-]{32})(\/status)?$/;
const PAC_BY_IP = /^\/(\d{1,5})\.pac$/;
/** A comment line keeps idle event streams open through NATs and proxies. */
const HEARTBEAT_MS = 15_000;

export interface SetupRoutesContext {
  registry: DeviceRegistry;
  /** Failed set-up link lookups count with failed /allocate calls, per client address. */
  limiter: AllocateLimiter;
  activity: DeviceActivity;
  ca: CertificateAuthority | undefined;
  /**
   * The ports as opened: the shared manual port (8888, the manual proxy of a page for no device
   * in particular) and where PAC files are fetched by IP ({proxy_url}, 8889; else the shared).
   */
  ports(): { shared: number; management: number | undefined };
  ensureListener(port: number): Promise<void>;
  /** A device's port was bound to a new address: forget the port guard's cached binding. */
  rebound(deviceUuid: string): void;
  logger: Logger;
}

/** Who asked, as the listener saw it. */
export interface SetupClient {
  ip: string | null;
  /** The proxy's address this connection reached: the address the client can reach it at. */
  reachedAddress: string;
  /** The device this connection is admitted as (its own port, or its address on 8888). */
  device: { uuid: string; via: 'device-port' | 'shared-port' } | null;
  /** The request named SETUP_HOST. */
  fixedHost: boolean;
  /** The listener port the connection came in on. */
  arrivedOnPort: number;
  /** The request was sent to us as a proxy (absolute-form or in a tunnel), not to our address. */
  proxied: boolean;
}

/** Answers a set-up URL; false when `path` is not one (the caller answers it then). */
export async function serveSetup(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  client: SetupClient,
  context: SetupRoutesContext,
): Promise<boolean> {
  const pacPort = PAC_BY_IP.exec(path)?.[1];
  if (pacPort !== undefined) {
    servePacByIp(response, Number(pacPort), client);
    return true;
  }
  if (path === '/ca.mobileconfig' && context.ca) {
    response.writeHead(200, {
      'content-type': MOBILECONFIG_CONTENT_TYPE,
      'content-disposition': 'attachment; filename="capture-ca.mobileconfig"',
    });
    response.end(caMobileconfig(context.ca));
    return true;
  }
  if (path === `${ASSET_BASE}/setup.js` || path === `${ASSET_BASE}/setup.css`) {
    const script = path.endsWith('.js');
    response.writeHead(200, {
      'content-type': script ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8',
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
    });
    response.end(script ? SETUP_SCRIPT : SETUP_STYLE);
    return true;
  }
  if (client.fixedHost && (path === '/' || path === '/status')) {
    const device = client.device && (await context.registry.describeDevice(client.device.uuid));
    if (path === '/status') {
      if (device) streamStatus(request, response, device.uuid, context.activity);
      else sendJson(response, 404, { error: 'not_found', message: 'no device on this connection' });
    } else sendPage(response, 200, pageFor(device ?? null, '/status', client, context));
    return true;
  }
  if (path === '/setup') {
    sendPage(response, 200, pageFor(null, null, client, context));
    return true;
  }
  const link = TOKEN.exec(path);
  if (!link) return false;
  const [, token, status] = link as unknown as [string, string, string | undefined];
  if (status) {
    const device = await context.registry.setupLinkDevice(token);
    if (device) streamStatus(request, response, device.uuid, context.activity);
    else sendJson(response, 404, { error: 'not_found', message: 'unknown or expired link' });
    return true;
  }
  await redeem(response, token, client, context);
  return true;
}

/** Opens a device's set-up link: binds its port to this client, then shows its page. */
async function redeem(
  response: ServerResponse,
  token: string,
  client: SetupClient,
  context: SetupRoutesContext,
): Promise<void> {
  const place = await context.limiter.begin(client.ip);
  if (place.retryAfter > 0) {
    response.setHeader('retry-after', String(place.retryAfter));
    sendPage(response, 429, problemPage('Too many unknown set-up links', 'Try again shortly.'));
    return;
  }
  let device: SetupLinkDevice | null;
  try {
    device = await context.registry.redeemSetupLink(token, client.ip);
  } catch (error) {
    if (!(error instanceof AllocationError)) throw error;
    sendPage(
      response,
      error.status,
      problemPage('This device cannot be set up here', error.message),
    );
    return;
  }
  if (!device) {
    sendPage(
      response,
      404,
      problemPage(
        'Unknown or expired set-up link',
        'Open the device in the dashboard (Devices → Set up) for a new QR code.',
      ),
    );
    return;
  }
  await context.limiter.forgive(client.ip, place).catch((error: unknown) => {
    context.logger.warn({ err: error }, 'could not give back a set-up link place');
  });
  context.rebound(device.uuid);
  if (device.port !== null) {
    await context.ensureListener(device.port);
    // Opened through the device's own port (its proxy was set before the link was opened): the
    // page's own request is the first one seen.
    if (client.proxied && client.arrivedOnPort === device.port) {
      context.activity.noteRequest(device.uuid, 'http', 'device-port');
    }
  }
  context.logger.info({ device: device.uuid, client: client.ip }, 'set-up link opened');
  sendPage(response, 200, pageFor(device, `/setup/${token}/status`, client, context));
}

function pageFor(
  device: SetupLinkDevice | null,
  statusUrl: string | null,
  client: SetupClient,
  context: SetupRoutesContext,
): string {
  const host = urlHost(client.reachedAddress);
  const ports = context.ports();
  const pacPort = ports.management ?? ports.shared;
  const pacUrl = device?.port ? `http://${host}:${pacPort}/${device.port}.pac` : null;
  const manualProxy = `${host}:${device?.port ?? ports.shared}`;
  const links = {
    pacUrl,
    manualProxy,
    caDerUrl: '/ca.der',
    caPemUrl: '/ca.pem',
    mobileconfigUrl: '/ca.mobileconfig',
  };
  return renderSetupPage({
    ...links,
    deviceName: device?.name ?? null,
    statusUrl: device ? statusUrl : null,
    steps: platformSteps(links),
    assetBase: ASSET_BASE,
  });
}

/**
 * Every port gets the same answer (so the PAC URL tells nobody which ports are in use),
 * naming the address this client reached, which is one it can reach (002 §4.4 body rules).
 */
function servePacByIp(response: ServerResponse, port: number, client: SetupClient): void {
  if (!(port >= 1 && port <= 65_535)) {
    sendJson(response, 404, { error: 'not_found', message: `no device port ${port}` });
    return;
  }
  response.writeHead(200, { 'content-type': PAC_CONTENT_TYPE, 'cache-control': 'no-cache' });
  response.end(pacBody(urlHost(client.reachedAddress), port));
}

/** The live check: the status now and at every change, as events (or once, as JSON). */
function streamStatus(
  request: IncomingMessage,
  response: ServerResponse,
  deviceUuid: string,
  activity: DeviceActivity,
): void {
  if (!/text\/event-stream/.test(request.headers.accept ?? '')) {
    sendJson(response, 200, activity.status(deviceUuid));
    return;
  }
  response.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
  });
  const send = (status: DeviceSetupStatus) => response.write(`data: ${JSON.stringify(status)}\n\n`);
  send(activity.status(deviceUuid));
  const unwatch = activity.watch(deviceUuid, send);
  const heartbeat = setInterval(() => response.write(': still here\n\n'), HEARTBEAT_MS);
  heartbeat.unref();
  response.on('close', () => {
    unwatch();
    clearInterval(heartbeat);
  });
}

/** `::ffff:10.0.0.1` → `10.0.0.1`; an IPv6 address in brackets, as URLs and PAC hosts take it. */
function urlHost(address: string): string {
  const plain = address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');
  return plain.includes(':') ? `[${plain}]` : plain;
}

function sendPage(response: ServerResponse, status: number, html: string): void {
  response.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': SETUP_CSP,
    'cache-control': 'no-store',
    // The path carries the link's token: no page it leads to may learn it.
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
  });
  response.end(html);
}

/** A page saying why there is no set-up page, styled like one. */
function problemPage(title: string, detail: string): string {
  return [
    '<!doctype html><html lang="en"><head><meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${escapeHtml(title)}</title>`,
    `<link rel="stylesheet" href="${ASSET_BASE}/setup.css"></head>`,
    `<body><main><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p></main></body></html>`,
  ].join('\n');
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}
