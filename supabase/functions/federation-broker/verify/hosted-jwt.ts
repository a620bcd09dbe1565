// verify_mode hosted_jwt (000 §4.1): the user's live access token, verified with jose against
// the client's JWKS: ES256 or RS256 only, kid required, exact issuer and audience (RFC 8725).
// Key sets are cached per URL for the life of the isolate; jose refetches on an unknown kid
// after the cooldown, which is how a rotation is picked up.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import * as jose from 'npm:jose@6.2.17';
import { BrokerError } from '../broker-error.ts';
import { fetchFromPartner } from './partner-fetch.ts';
import { emailClaims, type PartnerIdentity } from './partner-identity.ts';

const ALGORITHMS = ['ES256', 'RS256'];

export interface HostedJwtTrust {
  jwksUrl: string;
  issuer: string;
  audience: string;
}

export interface HostedJwtOptions {
  nowMs: number;
  cooldownMs: number;
  allowHttp: boolean;
}

type KeySet = ReturnType<typeof jose.createRemoteJWKSet>;
const keySets = new Map<string, KeySet>();

function keySetFor(jwksUrl: string, options: HostedJwtOptions): KeySet {
  const cached = keySets.get(jwksUrl);
  if (cached) return cached;
  const keySet = jose.createRemoteJWKSet(new URL(jwksUrl), {
    timeoutDuration: 3_000,
    cooldownDuration: options.cooldownMs,
    // jose reads the JWKS with response.json() and no size cap; this fetch bounds it.
    [jose.customFetch]: async (url: string, init: RequestInit) => {
      const answer = await fetchFromPartner(new URL(url), init, options.allowHttp);
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    },
  });
  keySets.set(jwksUrl, keySet);
  return keySet;
}

export async function verifyHostedJwt(
  token: string,
  trust: HostedJwtTrust,
  options: HostedJwtOptions,
): Promise<PartnerIdentity> {
  let kid: string | undefined;
  try {
    kid = jose.decodeProtectedHeader(token).kid;
  } catch (cause) {
    throw new BrokerError('access_denied', 'hosted token is not a JWS', { cause });
  }
  if (typeof kid !== 'string' || kid.length === 0) {
    throw new BrokerError('access_denied', 'hosted token has no kid');
  }
  try {
    const { payload } = await jose.jwtVerify(token, keySetFor(trust.jwksUrl, options), {
      algorithms: ALGORITHMS,
      issuer: trust.issuer,
      audience: trust.audience,
      requiredClaims: ['sub', 'exp', 'iat'],
      currentDate: new Date(options.nowMs),
      clockTolerance: 30,
      maxTokenAge: '24h',
    });
    if (typeof payload.sub !== 'string' || payload.sub.length === 0) {
      throw new BrokerError('access_denied', 'hosted token has no sub');
    }
    return { sub: payload.sub, ...emailClaims(payload) };
  } catch (cause) {
    if (cause instanceof BrokerError) throw cause;
    const reason = cause instanceof jose.errors.JOSEError ? cause.code : 'verification failed';
    throw new BrokerError('access_denied', `hosted token rejected: ${reason}`, { cause });
  }
}
