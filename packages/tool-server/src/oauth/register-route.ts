// POST /register (RFC 7591): registers public (`none`) and confidential clients. Registrations
// never expire (001 §2.1). Bad metadata: 400 invalid_redirect_uri / invalid_client_metadata
// (RFC 7591 §3.2.2). Rate-limited per client address, since registration is open to anyone.
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { acceptClientMetadata } from './client-metadata.ts';
import { clientFromMetadata, saveClient } from './clients.ts';
import { OAuthError } from './oauth-error.ts';
import { enforceRateLimit } from './rate-limit.ts';
import { generateSecret, hashSecret } from './secrets.ts';

const MAX_BODY_BYTES = 16 * 1024;

export function handleRegister(context: ToolServerContext) {
  return async (c: Context<ToolServerEnv>) => {
    const type = c.req.header('content-type') ?? '';
    if (!/^application\/json\b/i.test(type)) {
      throw new OAuthError('invalid_client_metadata', 'The body must be application/json.');
    }
    const text = await c.req.text();
    if (text.length > MAX_BODY_BYTES) {
      throw new OAuthError('invalid_client_metadata', 'The registration is too large.');
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new OAuthError('invalid_client_metadata', 'The body is not valid JSON.');
    }
    const metadata = acceptClientMetadata(body);
    const address = c.get('clientAddress');
    await enforceRateLimit(
      context.db,
      `register|${address}`,
      context.config.registrationsPerHour,
      3_600,
    );
    const clientId = randomUUID();
    const secret = metadata.token_endpoint_auth_method === 'none' ? undefined : generateSecret(32);
    const client = await saveClient(
      context.db,
      clientFromMetadata(metadata, {
        client_id: clientId,
        source: 'registration',
        client_secret_hash: secret ? hashSecret(secret) : null,
        metadata_expires_at: null,
        registered_from: address,
      }),
    );
    context.logger.info(
      { event: 'oauth.client_registered', client_id: clientId, client_name: metadata.client_name },
      'client registered',
    );
    return c.json(
      {
        ...metadata.echo,
        client_id: clientId,
        client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
        ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        redirect_uris: client.redirect_uris,
        token_endpoint_auth_method: client.token_endpoint_auth_method,
        grant_types: client.grant_types,
        response_types: client.response_types,
        application_type: client.application_type,
      },
      201,
      { 'cache-control': 'no-store', pragma: 'no-cache' },
    );
  };
}
