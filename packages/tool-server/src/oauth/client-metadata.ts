// RFC 7591 §2 client metadata as we accept it, for /register and for Client ID Metadata
// Documents alike: the fields we use are validated, unknown fields are ignored (RFC 7591 §2:
// "MUST ignore any client metadata sent by the client that it does not understand"), and an
// unknown or partly unknown `scope` is kept as sent (real clients send `openid email profile`).
import { z } from 'zod';
import { OAuthError } from './oauth-error.ts';
import { redirectUriProblem } from './redirect-uris.ts';

/** RFC 7591 §2 token_endpoint_auth_method values this server accepts. */
export type TokenEndpointAuthMethod = 'none' | 'client_secret_basic' | 'client_secret_post';

const httpUrl = z
  .string()
  .max(2_000)
  .refine((value) => /^https?:\/\//i.test(value) && URL.canParse(value), 'must be an http(s) URL');

const ClientMetadataSchema = z.object({
  redirect_uris: z.array(z.string()).min(1).max(20),
  token_endpoint_auth_method: z
    .enum(['none', 'client_secret_basic', 'client_secret_post'])
    // RFC 7591 §2: the default when omitted is client_secret_basic.
    .default('client_secret_basic'),
  grant_types: z
    .array(z.string())
    .max(10)
    .default(['authorization_code'])
    .refine(
      (types) => types.every((type) => type === 'authorization_code' || type === 'refresh_token'),
      'only authorization_code and refresh_token are supported',
    ),
  response_types: z
    .array(z.string())
    .max(10)
    .default(['code'])
    .refine((types) => types.every((type) => type === 'code'), 'only code is supported'),
  application_type: z.enum(['web', 'native']).default('web'),
  client_name: z.string().trim().min(1).max(200).optional(),
  client_uri: httpUrl.optional(),
  logo_uri: httpUrl.optional(),
  scope: z.string().max(1_000).optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(100).optional(),
  contacts: z.array(z.string().max(320)).max(10).optional(),
  tos_uri: httpUrl.optional(),
  policy_uri: httpUrl.optional(),
});

export interface AcceptedClientMetadata {
  redirect_uris: string[];
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  grant_types: string[];
  response_types: string[];
  application_type: 'web' | 'native';
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  scope: string | null;
  /** Every accepted field, as echoed in the registration response (RFC 7591 §3.2.1). */
  echo: Record<string, unknown>;
}

/** Validates client metadata; throws invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2). */
export function acceptClientMetadata(body: unknown): AcceptedClientMetadata {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new OAuthError('invalid_client_metadata', 'The body must be a JSON object.');
  }
  const redirects = (body as { redirect_uris?: unknown }).redirect_uris;
  if (Array.isArray(redirects)) {
    for (const uri of redirects) {
      const problem = typeof uri === 'string' ? redirectUriProblem(uri) : 'is not a string';
      if (problem) {
        throw new OAuthError(
          'invalid_redirect_uri',
          `redirect_uri ${JSON.stringify(uri)} ${problem}.`,
        );
      }
    }
  } else if (redirects !== undefined) {
    throw new OAuthError('invalid_redirect_uri', 'redirect_uris must be an array of URIs.');
  }
  const parsed = ClientMetadataSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || 'body';
    const code = field.startsWith('redirect_uris')
      ? 'invalid_redirect_uri'
      : 'invalid_client_metadata';
    throw new OAuthError(code, `${field}: ${issue?.message ?? 'is invalid'}.`);
  }
  const metadata = parsed.data;
  if (
    metadata.grant_types.includes('refresh_token') &&
    !metadata.grant_types.includes('authorization_code')
  ) {
    throw new OAuthError(
      'invalid_client_metadata',
      'grant_types: refresh_token needs authorization_code.',
    );
  }
  const echo: Record<string, unknown> = Object.fromEntries(
    Object.entries(metadata).filter(([, value]) => value !== undefined),
  );
  return {
    redirect_uris: metadata.redirect_uris,
    token_endpoint_auth_method: metadata.token_endpoint_auth_method,
    grant_types: metadata.grant_types,
    response_types: metadata.response_types,
    application_type: metadata.application_type,
    client_name: metadata.client_name ?? null,
    client_uri: metadata.client_uri ?? null,
    logo_uri: metadata.logo_uri ?? null,
    scope: metadata.scope ?? null,
    echo,
  };
}
