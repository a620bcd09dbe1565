// The proxy's own URLs (002 §4.3, §4.4), answered locally on every listener and never forwarded:
// /health (queue depth, listeners, certificates), /ca.pem and /ca.der, POST /allocate, the
// PAC file on `<port>.{proxy_domain}` at /, /proxy.pac and /wpad.dat, and the device set-up URLs
// (setup-routes.ts: PAC files by IP, set-up pages, the configuration profile).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CaptureWriter } from '../capture/capture-writer.ts';
import { type AllocateContext, handleAllocate } from '../devices/allocate.ts';
import { PAC_CONTENT_TYPE, PAC_PATHS, pacBody, pacSubdomain } from '../devices/pac.ts';
import type { WorkerShare } from '../proxy-options.ts';
import { type SetupClient, type SetupRoutesContext, serveSetup } from '../setup/setup-routes.ts';
import type { CertificateAuthority } from '../tls/certificate-authority.ts';
import type { LeafCertificateCache } from '../tls/leaf-certificates.ts';
import type { PassthroughPolicy } from '../tls/passthrough-policy.ts';

export interface ManagementContext {
  writer: CaptureWriter;
  /** In a worker process: every worker's captures, summed (the writer holds this one's). */
  worker: WorkerShare | undefined;
  ca: CertificateAuthority | undefined;
  leaves: LeafCertificateCache | null;
  passthrough: PassthroughPolicy;
  devices: AllocateContext | undefined;
  setup: SetupRoutesContext | undefined;
  listeningPorts(): number[];
}

function sendJson(response: ServerResponse, status: number, body: object): void {
  response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  response.end(JSON.stringify(body));
}

function notFound(response: ServerResponse, what: string): void {
  sendJson(response, 404, { error: 'not_found', message: what });
}

/** /health's captures: this daemon's, summed over its worker processes when it has them. */
function capturesOf(context: ManagementContext): object {
  if (!context.worker) return { captures: context.writer.stats() };
  const { total, workers } = context.worker.captures();
  return { captures: total, workers };
}

/** `hostHeader`: the Host the request named (absolute-form authority or Host header). */
export async function serveManagement(
  request: IncomingMessage,
  response: ServerResponse,
  path: string,
  hostHeader: string | undefined,
  client: SetupClient,
  context: ManagementContext,
): Promise<void> {
  const devices = context.devices;
  const subdomain = devices ? pacSubdomain(hostHeader, devices.proxyDomain) : null;
  if (devices && subdomain !== null) {
    await servePac(response, path, subdomain, devices);
    return;
  }
  if (context.setup && (await serveSetup(request, response, path, client, context.setup))) return;
  switch (path) {
    case '/health':
      sendJson(response, 200, {
        status: 'ok',
        ...capturesOf(context),
        listeners: context.listeningPorts(),
        certificates: { issued: context.leaves?.issued ?? 0 },
        // A count only: the pairs are client addresses and the hosts they visited.
        passthroughLearned: context.passthrough.learnedPairs().length,
      });
      return;
    case '/ca.pem':
    case '/ca.der': {
      if (!context.ca) break;
      const pem = path === '/ca.pem';
      // DER is the form Android and iOS install from a download (proxy-anchors §1.3.5).
      response.writeHead(200, {
        'content-type': pem ? 'application/x-pem-file' : 'application/x-x509-ca-cert',
        'content-disposition': `attachment; filename="capture-ca.${pem ? 'pem' : 'der'}"`,
      });
      response.end(pem ? context.ca.certPem : context.ca.certDer);
      return;
    }
    case '/allocate':
      if (!devices) break;
      await handleAllocate(request, response, devices);
      return;
  }
  notFound(response, `no management URL ${path}`);
}

async function servePac(
  response: ServerResponse,
  path: string,
  subdomain: string,
  devices: AllocateContext,
): Promise<void> {
  if (!PAC_PATHS.has(path)) {
    notFound(response, `no PAC file at ${path}`);
    return;
  }
  const port = /^\d{1,5}$/.test(subdomain) ? Number(subdomain) : Number.NaN;
  if (!(port >= 1 && port <= 65_535)) {
    notFound(response, `no device port ${subdomain}`);
    return;
  }
  // Every port gets the same answer, allocated or not, and before any lookup: status, headers, body
  // and timing tell nobody which ports are in use (docs/proxy.md "Devices, ports and PAC"). A free
  // port's PAC sends the client to a port nobody listens on, so it falls back to DIRECT.
  response.writeHead(200, { 'content-type': PAC_CONTENT_TYPE, 'cache-control': 'no-cache' });
  response.end(pacBody(devices.proxyDomain, port));
  // A port another daemon allocated a moment ago opens here now, not at the next refresh.
  const device = await devices.registry.lookupPort(port);
  if (device) await devices.ensureListener(port);
}
