// Finds the client a request names: a registered client_id from the store, or a metadata
// document URL, served from its cached copy until that expires and fetched again after.
import type { Database } from '../store/database.ts';
import {
  isMetadataDocumentClientId,
  type MetadataDocumentFetcher,
} from './client-metadata-document.ts';
import { clientFromMetadata, findClient, type OAuthClient, saveClient } from './clients.ts';

export class ClientResolver {
  private readonly db: Database;
  private readonly fetcher: MetadataDocumentFetcher;

  constructor(db: Database, fetcher: MetadataDocumentFetcher) {
    this.db = db;
    this.fetcher = fetcher;
  }

  /** The client, or undefined when no such client is registered. */
  async resolve(clientId: string): Promise<OAuthClient | undefined> {
    const stored = await findClient(this.db, clientId);
    if (!isMetadataDocumentClientId(clientId)) return stored;
    if (stored && stored.source !== 'metadata_document') return stored;
    if (stored?.metadata_expires_at && stored.metadata_expires_at > new Date()) return stored;
    const { metadata, expiresAt } = await this.fetcher.fetchDocument(clientId);
    return saveClient(
      this.db,
      clientFromMetadata(metadata, {
        client_id: clientId,
        source: 'metadata_document',
        client_secret_hash: null,
        metadata_expires_at: expiresAt,
        registered_from: null,
      }),
    );
  }
}
