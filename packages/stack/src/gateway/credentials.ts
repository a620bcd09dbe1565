// Which bearer token reaches a service, decided from the `apikey` and `Authorization` headers.
// Mirrors the Supabase CLI gateway (Kong's request-transformer): a publishable/secret key becomes
// the anon/service JWT. For /rest/v1 it adds 001 §5.3: an access token must be sent in both
// headers; only the project's own keys may stand alone in `apikey`.
import type { ProjectKeys } from '../keys.ts';

export type CredentialDecision =
  | { ok: true; authorization: string | undefined }
  | { ok: false; message: string; hint: string };

/** The token of an `Authorization: Bearer <token>` header, if that is what it holds. */
export function bearerOf(header: string | undefined): string | undefined {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/** The JWT a project key stands for, or undefined when the value is not one of our keys. */
export function projectKeyJwt(value: string, keys: ProjectKeys): string | undefined {
  if (value === keys.publishableKey || value === keys.anonKey) return keys.anonKey;
  if (value === keys.secretKey || value === keys.serviceRoleKey) return keys.serviceRoleKey;
  return undefined;
}

/**
 * Kong's rule for every route but the open auth ones: keep `Authorization` unless it is missing
 * or carries an `sb_` key; then derive it from `apikey`.
 */
export function translateAuthorization(
  apikey: string | undefined,
  authorization: string | undefined,
  keys: ProjectKeys,
): string | undefined {
  const bearer = bearerOf(authorization);
  if (authorization && !bearer?.startsWith('sb_')) return authorization;
  const source = bearer?.startsWith('sb_') ? bearer : apikey;
  if (!source) return authorization;
  const jwt = projectKeyJwt(source, keys) ?? (source.startsWith('sb_') ? undefined : source);
  return jwt ? `Bearer ${jwt}` : authorization;
}

export function decideRestCredentials(
  apikey: string | undefined,
  authorization: string | undefined,
  keys: ProjectKeys,
): CredentialDecision {
  if (!apikey) {
    return {
      ok: false,
      message: 'No API key found in request',
      hint: 'Send the access token in both the Authorization: Bearer and apikey headers',
    };
  }
  if (projectKeyJwt(apikey, keys)) {
    return { ok: true, authorization: translateAuthorization(apikey, authorization, keys) };
  }
  if (bearerOf(authorization) !== apikey) {
    return {
      ok: false,
      message: 'The access token must be sent in both the Authorization and apikey headers',
      hint: 'Send the same access token as Authorization: Bearer <token> and apikey: <token>',
    };
  }
  return { ok: true, authorization };
}
