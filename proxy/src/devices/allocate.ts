// POST {proxy_url}/allocate (002 §2.3, §4.4, §5): HTTP basic auth with a certificate bundle's
// credentials, body {uuid, deviceName, country}, answer {port, baseDomain, uuid, deviceName}.
// The device's listener is running before the answer is sent. Choices where the spec says "not
// shown": uuid and deviceName are required, country is optional (ISO 3166-1 alpha-2, any case);
// errors are JSON {error, message} with 400, 401 (plus WWW-Authenticate), 403, 405, 413, 503,
// and 429 (with Retry-After) once an address has failed too often (allocate-limiter.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { AllocateLimiter } from './allocate-limiter.ts';
import { type BundleCredentials, bundleCredentials } from './bundle-credentials.ts';
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
  limiter: AllocateLimiter;
  /** The device's port was bound (again) to the caller's address: drop what was cached. */
  rebound(deviceUuid: string): void;
  logger: Logger;
}

/** What a call answers: status, JSON body and extra headers. */
interface Answer {
  status: number;
  body: object;
  headers?: Record<string, string>;
}

/**
 * Answers counted against the caller's address: bad credentials, another account's device, bad
 * requests. An account at its port cap (403 quota_exceeded) is not guessing anything.
 */
const FAILURES = new Set([400, 401, 403, 413]);
const counted = (answer: Answer) =>
  FAILURES.has(answer.status) && (answer.body as { error?: string }).error !== 'quota_exceeded';

function reply(response: ServerResponse, answer: Answer): void {
  response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
  response.end(JSON.stringify(answer.body));
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
  credentials: BundleCredentials,
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
    request.resume();
    reply(response, {
      status: 405,
      body: { error: 'method_not_allowed', message: 'use POST' },
      headers: { allow: 'POST' },
    });
    return;
  }
  const clientIp = request.socket.remoteAddress ?? null;
  const place = await context.limiter.begin(clientIp);
  const wait = place.retryAfter;
  if (wait > 0) {
    request.resume();
    reply(response, {
      status: 429,
      body: { error: 'rate_limited', message: 'too many failed calls from this address' },
      headers: { 'retry-after': String(wait) },
    });
    return;
  }
  const answer = await allocateAnswer(request, context, clientIp);
  if (answer === 'aborted') response.destroy();
  else reply(response, answer);
  // After the answer: the port is allocated whether or not the place can be given back (then
  // it stays counted, as a failure would, until the minute ends).
  if (answer === 'aborted' || !counted(answer)) {
    await context.limiter.forgive(clientIp, place).catch((error: unknown) => {
      context.logger.warn({ err: error }, 'cannot give back an /allocate place');
    });
  }
}

async function allocateAnswer(
  request: IncomingMessage,
  context: AllocateContext,
  clientIp: string | null,
): Promise<Answer | 'aborted'> {
  const unauthorized: Answer = {
    status: 401,
    body: {
      error: 'unauthorized',
      message: 'basic credentials of a certificate bundle are required',
    },
    headers: { 'www-authenticate': 'Basic realm="capture-proxy", charset="UTF-8"' },
  };
  const credentials = bundleCredentials(request.headers.authorization);
  if (!credentials) {
    request.resume();
    return unauthorized;
  }
  const read = await readBody(request);
  if ('failure' in read) {
    if (read.failure === 'aborted') return 'aborted';
    return {
      status: 413,
      body: { error: 'payload_too_large', message: 'the body is over 16 KiB' },
    };
  }
  let parsed: z.infer<typeof AllocateBody>;
  try {
    const result = AllocateBody.safeParse(JSON.parse(read.body.toString('utf8')));
    if (!result.success) {
      const issue = result.error.issues[0];
      return {
        status: 400,
        body: {
          error: 'invalid_request',
          message: `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`,
        },
      };
    }
    parsed = result.data;
  } catch {
    return { status: 400, body: { error: 'invalid_request', message: 'the body is not JSON' } };
  }
  try {
    const allocation = await allocateListening(
      context,
      credentials,
      { uuid: parsed.uuid, deviceName: parsed.deviceName, country: parsed.country ?? null },
      clientIp,
    );
    if (!allocation) return unauthorized;
    context.rebound(parsed.uuid);
    return {
      status: 200,
      body: {
        port: allocation.port,
        baseDomain: context.proxyDomain,
        uuid: parsed.uuid,
        deviceName: parsed.deviceName,
      },
    };
  } catch (error) {
    if (error instanceof AllocationError) {
      return { status: error.status, body: { error: error.code, message: error.message } };
    }
    return {
      status: 503,
      body: {
        error: 'listener_unavailable',
        message: `the device port could not be opened: ${(error as Error).message}`,
      },
    };
  }
}
