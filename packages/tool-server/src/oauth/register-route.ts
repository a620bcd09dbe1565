// POST /register (RFC 7591): registers public (`none`) and confidential clients. Registrations
// never expire (001 §2.1). Bad metadata: 400 invalid_redirect_uri / invalid_client_metadata
// (RFC 7591 §3.2.2). Rate-limited per client address, since registration is open to anyone; a
// public client on loopback redirects that registered before from the same address gets its
// client_id again without counting (loopback-registration.ts).
import { randomUUID } from 'node:crypto';
import type { Context } from 'hono';
import type { ToolServerContext, ToolServerEnv } from '../context.ts';
import { type AcceptedClientMetadata, acceptClientMetadata } from './client-metadata.ts';
import {
  clientFromMetadata,
  findClient,
  type OAuthClient,
  saveClient,
  saveClientOnce,
} from './clients.ts';
import { isSameLoopbackRegistration, sharedLoopbackClientId } from './loopback-registration.ts';
import { OAuthError } from './oauth-error.ts';
import { enforceRateLimit } from './rate-limit.ts';
import { generateSecret, hashSecret } from './secrets.ts';

const MAX_BODY_BYTES = 16 * 1024;

/** RFC 7591 §3.2.1: the client's registered metadata, its id and (once) its secret. */
function registrationResponse(
  c: Context<ToolServerEnv>,
  client: OAuthClient,
  metadata: AcceptedClientMetadata,
  secret: string | undefined,
): Response {
  return c.json(
    {
      ...metadata.echo,
      client_id: client.client_id,
      client_id_issued_at: Math.floor(client.created_at.getTime() / 1000),
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      // As sent: a shared loopback registration was stored with another port, and any port
      // matches (RFC 8252 §7.3), so these are registered too.
      redirect_uris: metadata.redirect_uris,
      token_endpoint_auth_method: client.token_endpoint_auth_method,
      grant_types: client.grant_types,
      response_types: client.response_types,
      application_type: client.application_type,
    },
    201,
    { 'cache-control': 'no-store', pragma: 'no-cache' },
  );
}

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
    const sharedId = sharedLoopbackClientId(context.secret, address, metadata);
    const existing = sharedId ? await findClient(context.db, sharedId) : undefined;
    if (existing && isSameLoopbackRegistration(existing, metadata)) {
      context.logger.info(
        { event: 'oauth.client_registration_reused', client_id: existing.client_id },
        'client registered again',
      );
      return registrationResponse(c, existing, metadata, undefined);
    }
    await enforceRateLimit(
      context.db,
      `register|${address}`,
      context.config.registrationsPerHour,
      3_600,
    );
    const secret = metadata.token_endpoint_auth_method === 'none' ? undefined : generateSecret(32);
    const record = (clientId: string) =>
      clientFromMetadata(metadata, {
        client_id: clientId,
        source: 'registration',
        client_secret_hash: secret ? hashSecret(secret) : null,
        metadata_expires_at: null,
        registered_from: address,
      });
    // The shared id unless a client holding it was edited since (then it is not this one).
    let client =
      sharedId && !existing ? await saveClientOnce(context.db, record(sharedId)) : undefined;
    if (!client || !isSameLoopbackRegistration(client, metadata)) {
      client = await saveClient(context.db, record(randomUUID()));
    }
    context.logger.info(
      {
        event: 'oauth.client_registered',
        client_id: client.client_id,
        client_name: metadata.client_name,
      },
      'client registered',
    );
    return registrationResponse(c, client, metadata, secret);
  };
}
