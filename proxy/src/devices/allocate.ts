// POST {proxy_url}/allocate (002 §2.3, §4.4, §5): HTTP basic auth with a certificate bundle's
// credentials, body {uuid, deviceName, country}, answer {port, baseDomain, uuid, deviceName}.
// The device's listener is running before the answer is sent. Choices where the spec says "not
// shown": uuid and deviceName are required, country is optional (ISO 3166-1 alpha-2, any case);
// errors are JSON {error, message} with 400, 401 (plus WWW-Authenticate), 403, 405, 413, 503.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import {
  type Allocation,
  AllocationError,
  type AllocationRequest,
  type DeviceRegistry,
} from './device-registry.ts';

const MAX_BODY_BYTES = 16 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const AllocateBody = z.object({
  uuid: z
    .string()
    .regex(UUID, 'uuid must be a UUID')
    .transform((value) => value.toLowerCase()),
  deviceName: z
    .string()
    .transform((value) => value.trim())
    .pipe(
      z
        .string()
        .min(1, 'deviceName must not be empty')
        .max(200, 'deviceName is too long')
        // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
        .regex(/^[^\u0000-\u001f\u007f]*$/, 'deviceName must not contain control characters'),
    ),
  country: z
    .string()
    .regex(/^[A-Za-z]{2}$/, 'country must be an ISO 3166-1 alpha-2 code')
    .transform((value) => value.toUpperCase())
    .nullish(),
});

export interface AllocateContext {
  registry: DeviceRegistry;
  proxyDomain: string;
  /** Starts (or confirms) the device's listener; rejects when the port cannot be bound. */
  ensureListener(port: number): Promise<void>;
}

function reply(response: ServerResponse, status: number, body: object, headers = {}): void {
  response.writeHead(status, { 'content-type': 'application/json', ...headers });
  response.end(JSON.stringify(body));
}

/** `Authorization: Basic base64(username:password)` (RFC 7617), or null. */
function basicCredentials(header: string | undefined): { bundleId: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  if (!match) return null;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  const bundleId = decoded.slice(0, colon);
  const secret = decoded.slice(colon + 1);
  if (!UUID.test(bundleId) || secret.length === 0 || secret.length > 200) return null;
  return { bundleId, secret };
}

type BodyRead = { body: Buffer } | { failure: 'too_large' | 'aborted' };

/** The body, unless it is over the limit or the client went away before sending all of it. */
function readBody(request: IncomingMessage): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        resolve({ failure: 'too_large' });
        request.resume();
        return;
      }
      chunks.push(chunk);
    });
    request.on('end', () => resolve({ body: Buffer.concat(chunks) }));
    request.on('error', () => resolve({ failure: 'aborted' }));
    request.on('close', () => resolve({ failure: 'aborted' })); // no-op once settled
  });
}

/** Attempts at a new port when the one allocated turns out to be taken on this host. */
const ATTEMPTS = 3;

/**
 * Allocates and opens the device's port. A port new to the device that another program holds
 * here is given back and another one tried, so no device is stuck with a port it cannot use.
 */
async function allocateListening(
  context: AllocateContext,
  credentials: { bundleId: string; secret: string },
  request: AllocationRequest,
  clientIp: string | null,
): Promise<Allocation | null> {
  for (let attempt = 1; ; attempt += 1) {
    const allocation = await context.registry.allocate(credentials, request, clientIp);
    if (!allocation) return null;
    try {
      await context.ensureListener(allocation.port);
      return allocation;
    } catch (error) {
      const taken = (error as NodeJS.ErrnoException).code === 'EADDRINUSE';
      if (!taken || !allocation.created || attempt >= ATTEMPTS) throw error;
      await context.registry.release(request.uuid, allocation.port);
    }
  }
}

export async function handleAllocate(
  request: IncomingMessage,
  response: ServerResponse,
  context: AllocateContext,
): Promise<void> {
  if (request.method !== 'POST') {
    reply(response, 405, { error: 'method_not_allowed', message: 'use POST' }, { allow: 'POST' });
    return;
  }
  const credentials = basicCredentials(request.headers.authorization);
  const unauthorized = () =>
    reply(
      response,
      401,
      { error: 'unauthorized', message: 'basic credentials of a certificate bundle are required' },
      { 'www-authenticate': 'Basic realm="capture-proxy", charset="UTF-8"' },
    );
  if (!credentials) {
    request.resume();
    unauthorized();
    return;
  }
  const read = await readBody(request);
  if ('failure' in read) {
    if (read.failure === 'aborted') response.destroy();
    else reply(response, 413, { error: 'payload_too_large', message: 'the body is over 16 KiB' });
    return;
  }
  const raw = read.body;
  let parsed: z.infer<typeof AllocateBody>;
  try {
    const result = AllocateBody.safeParse(JSON.parse(raw.toString('utf8')));
    if (!result.success) {
      const issue = result.error.issues[0];
      reply(response, 400, {
        error: 'invalid_request',
        message: `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
      });
      return;
    }
    parsed = result.data;
  } catch {
    reply(response, 400, { error: 'invalid_request', message: 'the body is not JSON' });
    return;
  }
  try {
    const allocation = await allocateListening(
      context,
      credentials,
      { uuid: parsed.uuid, deviceName: parsed.deviceName, country: parsed.country ?? null },
      request.socket.remoteAddress ?? null,
    );
    if (!allocation) {
      unauthorized();
      return;
    }
    reply(response, 200, {
      port: allocation.port,
      baseDomain: context.proxyDomain,
      uuid: parsed.uuid,
      deviceName: parsed.deviceName,
    });
  } catch (error) {
    if (error instanceof AllocationError) {
      reply(response, error.status, { error: error.code, message: error.message });
    } else {
      reply(response, 503, {
        error: 'listener_unavailable',
        message: `the device port could not be opened: ${(error as Error).message}`,
      });
    }
  }
}
