// The caller of an edge function resolved to user, roles and capabilities (001 §5.4): the bearer
// token goes to PostgREST's whoami() in both headers (001 §5.3), so PostgREST checks signature and
// expiry and its pre-request hook refuses revoked tokens, which verify_jwt (signature only) does not.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';

/** The closed set of failures, with the status a function answers for each. */
export const CALLER_ERRORS = {
  /** Missing, malformed, expired, revoked, or not a signed-in user's token. */
  unauthorized: 401,
  /** PostgREST unreachable, slow, or answering something it should not. */
  unavailable: 503,
} as const;

export type CallerErrorCode = keyof typeof CALLER_ERRORS;

export class CallerError extends Error {
  readonly code: CallerErrorCode;
  /** Internal reason for the logs (never shown to the client, never holds the token). */
  readonly reason: string;

  constructor(code: CallerErrorCode, message: string, reason: string, cause?: unknown) {
    super(message, { cause });
    this.name = 'CallerError';
    this.code = code;
    this.reason = reason;
  }

  get status(): number {
    return CALLER_ERRORS[this.code];
  }
}

const callerSchema = z.object({
  user_id: z.uuid(),
  email: z.string().nullable(),
  roles: z.array(z.object({ slug: z.string(), name: z.string(), is_admin: z.boolean() })),
  capabilities: z.array(z.string().regex(/^[a-z_]+:(view|edit)$/)),
  is_admin: z.boolean(),
  token: z.object({
    jti: z.string().nullable(),
    client_id: z.string().nullable(),
    label: z.string().nullable(),
  }),
});

/** What whoami() answers: the caller, their roles and every `section:action` they hold. */
export type Caller = z.infer<typeof callerSchema>;

export type CallerResolution =
  | { ok: true; caller: Caller; accessToken: string }
  | { ok: false; error: CallerError };

export interface CallerEnv {
  /** {SUPABASE_URL}, where /rest/v1 is served. */
  supabaseUrl: string;
  /** The fetch to call PostgREST with (unit tests pass a stub). */
  fetch?: typeof fetch;
  /** How long PostgREST may take before the caller counts as unavailable. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 5_000;
const USER_TOKEN_REQUIRED = "A signed-in user's access token is required.";

/** The token of `Authorization: Bearer <token>` (RFC 6750 §2.1), if that is what it holds. */
export function bearerTokenOf(header: string | null): string | undefined {
  const match = header ? /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)[ ]*$/i.exec(header) : null;
  return match?.[1];
}

/** PostgREST's error body `{code, message}`, when the response holds one. */
async function readPostgrestError(
  response: Response,
): Promise<{ code?: string; message?: string }> {
  try {
    const body: unknown = await response.json();
    if (body && typeof body === 'object') {
      const { code, message } = body as Record<string, unknown>;
      return {
        code: typeof code === 'string' ? code : undefined,
        message: typeof message === 'string' ? message : undefined,
      };
    }
  } catch {
    // Not JSON: the status alone decides.
  }
  return {};
}

/**
 * 401/403 from PostgREST: the token is not a live user's. PostgREST's own JWT wording ('JWT
 * expired', 'JWT revoked') is public already and tells the client what to do; a permission error
 * (an anon or service key, which may not call whoami) gets one fixed message.
 */
async function refusal(response: Response): Promise<CallerError> {
  const { code, message } = await readPostgrestError(response);
  const jwtMessage = code?.startsWith('PGRST') && message && message.length <= 100
    ? message
    : undefined;
  return new CallerError(
    'unauthorized',
    jwtMessage ?? USER_TOKEN_REQUIRED,
    `whoami answered ${response.status} ${code ?? 'without a code'}`,
  );
}

export async function resolveCaller(request: Request, env: CallerEnv): Promise<CallerResolution> {
  const accessToken = bearerTokenOf(request.headers.get('authorization'));
  if (!accessToken) {
    return {
      ok: false,
      error: new CallerError(
        'unauthorized',
        'An access token is required: Authorization: Bearer <access token>.',
        'no bearer token',
      ),
    };
  }
  const send = env.fetch ?? fetch;
  let response: Response;
  try {
    response = await send(`${env.supabaseUrl.replace(/\/+$/, '')}/rest/v1/rpc/whoami`, {
      method: 'POST',
      // 001 §5.3: the same access token in both headers.
      headers: {
        apikey: accessToken,
        authorization: `Bearer ${accessToken}`,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: '{}',
      signal: AbortSignal.timeout(env.timeoutMs ?? DEFAULT_TIMEOUT_MS),
    });
  } catch (cause) {
    return { ok: false, error: unavailable('whoami unreachable', cause) };
  }
  if (response.status === 401 || response.status === 403) {
    return { ok: false, error: await refusal(response) };
  }
  if (!response.ok) {
    await response.body?.cancel();
    // Anything else (5xx, or a 4xx that means whoami is missing) is ours, not the caller's fault.
    return { ok: false, error: unavailable(`whoami answered ${response.status}`) };
  }
  let body: unknown;
  try {
    body = await response.json();
  } catch (cause) {
    return { ok: false, error: unavailable('whoami answered no JSON', cause) };
  }
  const parsed = callerSchema.safeParse(body);
  if (!parsed.success) {
    return { ok: false, error: unavailable('whoami answered an unexpected shape', parsed.error) };
  }
  return { ok: true, caller: parsed.data, accessToken };
}

function unavailable(reason: string, cause?: unknown): CallerError {
  return new CallerError(
    'unavailable',
    'The caller could not be checked just now; try again shortly.',
    reason,
    cause,
  );
}
