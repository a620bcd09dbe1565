// POST /start (000 §4.1): rate limits, the client's verify mode, then a 60 s code bound to the
// PKCE challenge. Answers a link with the code, never a token (000 §1 rule 1).
import { normalizeEmail } from '../_shared/federation/email-normalization.ts';
import { BrokerError } from './broker-error.ts';
import type { RequestClock } from './clock.ts';
import type { BrokerConfig } from './config.ts';
import { buildHandoffLink } from './handoff-link.ts';
import { hashHandoffCode, mintHandoffCode } from './handoff-code.ts';
import { logEvent } from './log.ts';
import { readJsonBody, type StartBody, startBodySchema } from './request-body.ts';
import { jsonResponse } from './responses.ts';
import type { SecretUnsealer } from './secret-unsealing.ts';
import type { SupabaseApi } from './supabase-api.ts';
import { verifyBackendBearer } from './verify/backend-bearer.ts';
import { verifyHmacAssertion } from './verify/hmac.ts';
import { verifyHostedJwt } from './verify/hosted-jwt.ts';
import { type PartnerIdentity, trustedEmail } from './verify/partner-identity.ts';

export interface BrokerDeps {
  config: BrokerConfig;
  api: SupabaseApi;
  unsealer: SecretUnsealer;
}

interface ClientSettings {
  client_id: string;
  verify_mode: 'backend_bearer' | 'hmac' | 'hosted_jwt';
  backend_base_url: string | null;
  jwks_url: string | null;
  issuer: string | null;
  audience: string | null;
  emails_verified_by_partner: boolean;
  hmac_binds_challenge: boolean;
  sealed_secret: string | null;
}

type BeginStart =
  | { status: 'ok'; client: ClientSettings }
  | { status: 'rate_limited' | 'unknown_client' };

/** 000 §4.1: the body field wins over `Authorization: Bearer`. */
function backendTokenOf(body: StartBody, request: Request): string | undefined {
  if (body.backend_token) return body.backend_token;
  const match = /^Bearer\s+(\S+)$/i.exec(request.headers.get('authorization') ?? '');
  return match?.[1];
}

/** 000 §7: a missing credential for the client's mode is a 400, checked before any call out. */
function requireCredential(mode: ClientSettings['verify_mode'], body: StartBody, request: Request) {
  const present = mode === 'backend_bearer'
    ? backendTokenOf(body, request) !== undefined
    : mode === 'hmac'
    ? body.payload !== undefined && body.signature !== undefined
    : body.hosted_token !== undefined;
  if (!present) {
    throw new BrokerError('invalid_request', `missing ${mode} credential`, {
      message: `Missing the credential for verify mode ${mode}.`,
    });
  }
}

async function verifyCredential(
  client: ClientSettings,
  body: StartBody,
  request: Request,
  deps: BrokerDeps,
  clock: RequestClock,
): Promise<PartnerIdentity> {
  const allowHttp = deps.config.allowHttpPartners;
  switch (client.verify_mode) {
    case 'backend_bearer':
      return verifyBackendBearer(
        backendTokenOf(body, request) as string,
        client.backend_base_url as string,
        allowHttp,
      );
    case 'hmac': {
      if (!client.sealed_secret) throw new BrokerError('access_denied', 'no secret minted');
      const secret = await deps.unsealer.unseal(client.sealed_secret);
      return verifyHmacAssertion(body.payload, body.signature as string, secret, clock.now(), {
        required: client.hmac_binds_challenge === true,
        codeChallenge: body.code_challenge,
      });
    }
    case 'hosted_jwt':
      return verifyHostedJwt(
        body.hosted_token as string,
        {
          jwksUrl: client.jwks_url as string,
          issuer: client.issuer as string,
          audience: client.audience as string,
        },
        { nowMs: clock.now(), cooldownMs: deps.config.jwksCooldownMs, allowHttp },
      );
  }
}

export async function handleStart(
  request: Request,
  deps: BrokerDeps,
  clock: RequestClock,
  clientIp: string,
): Promise<Response> {
  const body = await readJsonBody(request, startBodySchema);
  const at = clock.injected ? new Date(clock.now()).toISOString() : null;
  let begin: BeginStart;
  try {
    begin = await deps.api.rpc<BeginStart>('federation_broker_begin_start', {
      client_id: body.client_id,
      client_ip: clientIp,
      at,
    });
  } catch (cause) {
    // 000 §8: the limiter fails closed.
    throw new BrokerError('rate_limited', 'rate limiter unavailable', { cause });
  }
  if (begin.status === 'rate_limited') throw new BrokerError('rate_limited', 'start limit');
  if (begin.status !== 'ok') throw new BrokerError('access_denied', 'unknown or disabled client');
  const client = begin.client;
  requireCredential(client.verify_mode, body, request);
  const verified = await verifyCredential(client, body, request, deps, clock);
  const identity = {
    ...verified,
    email: trustedEmail(verified, client.verify_mode, client.emails_verified_by_partner),
  };

  const code = mintHandoffCode();
  const outcome = await deps.api.rpc<string>('federation_broker_issue_code', {
    client_id: client.client_id,
    code_hash: await hashHandoffCode(code),
    code_challenge: body.code_challenge,
    partner_sub: identity.sub,
    partner_email: identity.email ?? null,
    email_normalized: normalizeEmail(identity.email) ?? null,
    jti: identity.jti?.value ?? null,
    jti_expires_at: identity.jti?.expiresAt.toISOString() ?? null,
    at,
  });
  if (outcome === 'replayed') throw new BrokerError('access_denied', 'hmac jti replayed');
  logEvent('handoff_started', { client_id: client.client_id, verify_mode: client.verify_mode });
  return jsonResponse(200, {
    link: buildHandoffLink(deps.config, code),
    expires_in: 60,
    target: body.target,
  });
}
