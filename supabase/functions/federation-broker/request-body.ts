// Reads and validates the JSON bodies of /start (000 §4.1) and /exchange (000 §4.3). Shape
// errors are 400 (000 §7); nothing here judges a credential.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';
import { isValidCodeChallenge } from '../_shared/federation/pkce.ts';
import { BrokerError } from './broker-error.ts';

const MAX_BODY_BYTES = 16 * 1024;

export const startBodySchema = z.object({
  client_id: z.string().regex(/^svc_[a-z0-9_]+$/).max(100),
  code_challenge: z.string().refine(isValidCodeChallenge),
  // RFC 9700 §2.1.1: S256 only; `plain` is a downgrade.
  code_challenge_method: z.literal('S256'),
  // Reference A7 item 9: target picks a fixed template, never a caller-chosen URL.
  target: z.enum(['ios', 'universal']).default('universal'),
  backend_token: z.string().min(1).max(8192).optional(),
  payload: z.unknown().optional(),
  signature: z.string().max(256).optional(),
  hosted_token: z.string().min(1).max(16384).optional(),
});
export type StartBody = z.infer<typeof startBodySchema>;

export const exchangeBodySchema = z.object({
  code: z.string().min(1).max(256),
  code_verifier: z.string().min(1).max(256),
});
export type ExchangeBody = z.infer<typeof exchangeBodySchema>;

/**
 * The body as text, reading at most MAX_BODY_BYTES + 1 bytes: a chunked body carries no
 * Content-Length, and request.text() would buffer whatever a caller streams.
 */
async function readBoundedText(request: Request): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > MAX_BODY_BYTES) throw new BrokerError('payload_too_large', 'declared length');
  if (!request.body) return '';
  const reader = request.body.getReader();
  const body = new Uint8Array(MAX_BODY_BYTES);
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (length + value.length > MAX_BODY_BYTES) {
        throw new BrokerError('payload_too_large', 'body length');
      }
      body.set(value, length);
      length += value.length;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return new TextDecoder().decode(body.subarray(0, length));
}

export async function readJsonBody<T>(request: Request, schema: z.ZodType<T>): Promise<T> {
  const text = await readBoundedText(request);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw new BrokerError('invalid_request', 'body is not JSON', { cause });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((issue) => issue.path.join('.')).join(', ');
    throw new BrokerError('invalid_request', `invalid fields: ${fields}`, {
      message: `Missing or invalid field(s): ${fields}.`,
    });
  }
  return parsed.data;
}
