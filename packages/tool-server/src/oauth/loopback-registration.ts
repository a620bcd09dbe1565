// Which registration a native app on a loopback redirect gets again. mcp-remote (and other local
// clients) register anew whenever their callback port changes, but RFC 8252 §7.3 makes the port
// no part of a loopback redirect URI: /authorize accepts any port (redirect-uris.ts). So a public
// client whose redirect URIs are all loopback, registering from the same address with the same
// metadata up to those ports, is the same client: it gets the same client_id, which RFC 7591
// §3.2.1 allows ("MAY issue the same client identifier to multiple instances of a registered
// client"), and the per-address limit counts it once (docs/tool-server.md "Registration").
//
// Only public clients (`none`): a confidential client's secret is shown once and never again,
// and rotating it would break the instance that holds it.
import { createHmac } from 'node:crypto';
import type { AcceptedClientMetadata } from './client-metadata.ts';
import type { OAuthClient } from './clients.ts';
import { isLoopbackRedirect, withoutPort } from './redirect-uris.ts';

/** What a registration says, as a stored client and accepted metadata both carry it. */
type Registered = Pick<
  OAuthClient,
  | 'redirect_uris'
  | 'token_endpoint_auth_method'
  | 'grant_types'
  | 'response_types'
  | 'application_type'
  | 'client_name'
  | 'client_uri'
  | 'logo_uri'
  | 'scope'
> & { metadata: Record<string, unknown> };

/** The registration as one string, redirect ports left out; undefined when it may not be shared. */
function fingerprintOf(registered: Registered): string | undefined {
  const redirectUris = registered.redirect_uris;
  if (registered.token_endpoint_auth_method !== 'none') return undefined;
  if (redirectUris.length === 0 || !redirectUris.every(isLoopbackRedirect)) return undefined;
  // The columns over the echoed metadata: what /authorize and /token read is what must agree.
  const fields: Record<string, unknown> = {
    ...registered.metadata,
    token_endpoint_auth_method: registered.token_endpoint_auth_method,
    grant_types: registered.grant_types,
    response_types: registered.response_types,
    application_type: registered.application_type,
    client_name: registered.client_name,
    client_uri: registered.client_uri,
    logo_uri: registered.logo_uri,
    scope: registered.scope,
    redirect_uris: redirectUris.map(withoutPort),
  };
  return JSON.stringify(
    Object.keys(fields)
      .sort()
      .map((name) => [name, fields[name]]),
  );
}

function fingerprintOfRequest(metadata: AcceptedClientMetadata): string | undefined {
  return fingerprintOf({ ...metadata, metadata: metadata.echo });
}

/**
 * The client_id a shareable registration from `address` gets, the same for every instance of it:
 * an HMAC under the server's secret, so it reveals neither the address nor lets anyone predict it,
 * laid out as a UUID version 8 (RFC 9562 §5.8) like the random ids of other registrations.
 * Undefined when the registration is not shareable.
 */
export function sharedLoopbackClientId(
  secret: Uint8Array,
  address: string,
  metadata: AcceptedClientMetadata,
): string | undefined {
  const fingerprint = fingerprintOfRequest(metadata);
  if (fingerprint === undefined) return undefined;
  const digest = createHmac('sha256', secret)
    .update(`tool-server loopback client\0${address}\0${fingerprint}`)
    .digest()
    .subarray(0, 16);
  digest[6] = ((digest[6] as number) & 0x0f) | 0x80;
  digest[8] = ((digest[8] as number) & 0x3f) | 0x80;
  const hex = digest.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Whether the stored `client` is still what `metadata` registers (up to loopback ports): a public
 * registration, never edited since, so handing out its client_id hands out nothing more.
 */
export function isSameLoopbackRegistration(
  client: OAuthClient,
  metadata: AcceptedClientMetadata,
): boolean {
  if (client.source !== 'registration' || client.client_secret_hash !== null) return false;
  const stored = fingerprintOf(client);
  return stored !== undefined && stored === fingerprintOfRequest(metadata);
}
