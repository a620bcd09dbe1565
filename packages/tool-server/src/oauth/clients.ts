// Client records: registered by POST /register (RFC 7591), resolved from a Client ID Metadata
// Document when the client_id is an https URL, or the dashboard's first-party client. Reads and
// writes go through here so every endpoint sees the same client.
import type { Database } from '../store/database.ts';
import type { AcceptedClientMetadata, TokenEndpointAuthMethod } from './client-metadata.ts';

export interface OAuthClient {
  client_id: string;
  source: 'registration' | 'metadata_document' | 'first_party';
  client_secret_hash: string | null;
  token_endpoint_auth_method: TokenEndpointAuthMethod;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  application_type: 'web' | 'native';
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  scope: string | null;
  metadata: Record<string, unknown>;
  created_at: Date;
  metadata_expires_at: Date | null;
}

export type NewClient = Omit<OAuthClient, 'created_at'> & { registered_from: string | null };

/** The record a client's accepted metadata (a registration or a metadata document) becomes. */
export function clientFromMetadata(
  metadata: AcceptedClientMetadata,
  identity: Pick<
    NewClient,
    'client_id' | 'source' | 'client_secret_hash' | 'metadata_expires_at' | 'registered_from'
  >,
): NewClient {
  return {
    ...identity,
    token_endpoint_auth_method: metadata.token_endpoint_auth_method,
    redirect_uris: metadata.redirect_uris,
    grant_types: metadata.grant_types,
    response_types: metadata.response_types,
    application_type: metadata.application_type,
    client_name: metadata.client_name,
    client_uri: metadata.client_uri,
    logo_uri: metadata.logo_uri,
    scope: metadata.scope,
    metadata: metadata.echo,
  };
}

const COLUMNS = `client_id, source, client_secret_hash, token_endpoint_auth_method, redirect_uris,
  grant_types, response_types, application_type, client_name, client_uri, logo_uri, scope, metadata,
  created_at, metadata_expires_at`;

export async function findClient(db: Database, clientId: string): Promise<OAuthClient | undefined> {
  const rows = await db.query<OAuthClient>(
    `select ${COLUMNS} from private.oauth_clients where client_id = $1`,
    [clientId],
  );
  return rows[0];
}

const INSERT = `insert into private.oauth_clients (client_id, source, client_secret_hash,
    token_endpoint_auth_method, redirect_uris, grant_types, response_types, application_type,
    client_name, client_uri, logo_uri, scope, software_id, software_version, metadata,
    registered_from, metadata_expires_at)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`;

function insertValues(client: NewClient): unknown[] {
  return [
    client.client_id,
    client.source,
    client.client_secret_hash,
    client.token_endpoint_auth_method,
    client.redirect_uris,
    client.grant_types,
    client.response_types,
    client.application_type,
    client.client_name,
    client.client_uri,
    client.logo_uri,
    client.scope,
    typeof client.metadata.software_id === 'string' ? client.metadata.software_id : null,
    typeof client.metadata.software_version === 'string' ? client.metadata.software_version : null,
    client.metadata,
    client.registered_from,
    client.metadata_expires_at,
  ];
}

/** Inserts a client, or replaces a metadata-document client's cached copy. */
export async function saveClient(db: Database, client: NewClient): Promise<OAuthClient> {
  const rows = await db.query<OAuthClient>(
    `${INSERT}
     on conflict (client_id) do update set
       redirect_uris = excluded.redirect_uris, grant_types = excluded.grant_types,
       response_types = excluded.response_types, application_type = excluded.application_type,
       token_endpoint_auth_method = excluded.token_endpoint_auth_method,
       client_name = excluded.client_name, client_uri = excluded.client_uri,
       logo_uri = excluded.logo_uri, scope = excluded.scope, metadata = excluded.metadata,
       metadata_expires_at = excluded.metadata_expires_at
     where private.oauth_clients.source = 'metadata_document'
     returning ${COLUMNS}`,
    insertValues(client),
  );
  const saved = rows[0];
  if (!saved) throw new Error(`client ${client.client_id} exists and is not a metadata document`);
  return saved;
}

/**
 * Inserts a client unless its client_id is taken; then answers the client that holds it (two
 * instances of one shared loopback registration arriving at once, loopback-registration.ts).
 */
export async function saveClientOnce(db: Database, client: NewClient): Promise<OAuthClient> {
  const rows = await db.query<OAuthClient>(
    `${INSERT} on conflict (client_id) do nothing returning ${COLUMNS}`,
    insertValues(client),
  );
  const saved = rows[0] ?? (await findClient(db, client.client_id));
  if (!saved) throw new Error(`client ${client.client_id} was neither inserted nor found`);
  return saved;
}
