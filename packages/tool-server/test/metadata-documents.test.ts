// Client ID Metadata Documents (2026-07-28 MCP's preferred registration): a client_id that is an
// https URL is fetched, checked (its client_id must equal the URL, redirect URIs come from it),
// cached by max-age and fetched again after. Served here by a loopback HTTPS server whose
// certificate the tool server is told to trust; the SSRF guard that refuses such addresses by
// default is exercised on its own.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MetadataDocumentFetcher } from '../src/oauth/client-metadata-document.ts';
import { OAuthError } from '../src/oauth/oauth-error.ts';
import {
  authorizeUrl,
  DEMO,
  decide,
  pkcePair,
  signIn,
  startAuthorization,
  useOAuthStack,
} from './helpers/oauth-stack.ts';

const certDir = mkdtempSync(join(tmpdir(), 'cimd-cert-'));
execFileSync(
  'openssl',
  [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    join(certDir, 'key.pem'),
    '-out',
    join(certDir, 'cert.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=127.0.0.1',
    '-addext',
    'subjectAltName=IP:127.0.0.1',
  ],
  { stdio: 'ignore' },
);
const cert = readFileSync(join(certDir, 'cert.pem'), 'utf8');
const key = readFileSync(join(certDir, 'key.pem'), 'utf8');

const stack = useOAuthStack({
  toolServerSettings: {
    metadataDocumentsAllowPrivateAddresses: true,
    metadataDocumentsExtraCa: cert,
  },
});

/** Documents by path, with how often each was fetched. */
const documents = new Map<
  string,
  { status?: number; headers?: Record<string, string>; body: string }
>();
const fetches = new Map<string, number>();
let documentServer: Server | undefined;
let documentBase = '';
const REDIRECT = 'http://127.0.0.1:4321/callback';

beforeAll(async () => {
  documentServer = createServer({ cert, key }, (request, response) => {
    const path = request.url ?? '/';
    fetches.set(path, (fetches.get(path) ?? 0) + 1);
    const document = documents.get(path);
    if (!document) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(document.status ?? 200, {
      'content-type': 'application/json',
      ...document.headers,
    });
    response.end(document.body);
  });
  await new Promise<void>((resolve) => documentServer?.listen(0, '127.0.0.1', () => resolve()));
  documentBase = `https://127.0.0.1:${(documentServer.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) =>
    documentServer ? documentServer.close(() => resolve()) : resolve(),
  );
  rmSync(certDir, { recursive: true, force: true });
});

function publish(path: string, fields: Record<string, unknown>, headers?: Record<string, string>) {
  const clientId = `${documentBase}${path}`;
  documents.set(path, {
    headers,
    body: JSON.stringify({
      client_id: clientId,
      client_name: 'Document Client',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
      ...fields,
    }),
  });
  return clientId;
}

async function authorize(clientId: string, challenge = pkcePair().challenge) {
  return fetch(
    authorizeUrl(stack().mcpUrl, {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 's',
    }),
    { redirect: 'manual' },
  );
}

describe('a client_id that is a metadata document URL', () => {
  it('is fetched, shown on consent by its name, and completes the flow as a public client', async () => {
    const clientId = publish('/clients/good.json', {});
    const { verifier, challenge } = pkcePair();
    const rid = await startAuthorization(
      authorizeUrl(stack().mcpUrl, {
        response_type: 'code',
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      }),
    );
    const session = await signIn(stack(), DEMO.member);
    const details = await fetch(`${stack().mcpUrl}/oauth/authorizations/${rid}`, {
      headers: { authorization: `Bearer ${session}` },
    });
    expect(((await details.json()) as { client: { name: string } }).client.name).toBe(
      'Document Client',
    );
    const code = new URL(await decide(stack().mcpUrl, rid, session, 'approve')).searchParams.get(
      'code',
    );
    const token = await fetch(`${stack().mcpUrl}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: code as string,
        code_verifier: verifier,
        redirect_uri: REDIRECT,
        client_id: clientId,
      }),
    });
    expect(token.status).toBe(200);
    expect(((await token.json()) as { refresh_token?: string }).refresh_token).toEqual(
      expect.any(String),
    );
  });

  it('is cached by max-age and fetched again once the cached copy expires', async () => {
    const clientId = publish('/clients/cached.json', {}, { 'cache-control': 'max-age=600' });
    expect((await authorize(clientId)).status).toBe(302);
    expect((await authorize(clientId)).status).toBe(302);
    expect(fetches.get('/clients/cached.json')).toBe(1);
    const db = new pg.Client({ connectionString: stack().dbUrl });
    await db.connect();
    try {
      await db.query(
        "update private.oauth_clients set metadata_expires_at = now() - interval '1 second' where client_id = $1",
        [clientId],
      );
    } finally {
      await db.end();
    }
    // The document changed meanwhile: the new redirect URI is what counts now.
    publish('/clients/cached.json', { redirect_uris: ['http://127.0.0.1:4321/other'] });
    const refused = await authorize(clientId);
    expect(refused.status).toBe(400);
    expect(fetches.get('/clients/cached.json')).toBe(2);
  });

  it.each([
    [
      'a document naming another client_id',
      '/clients/other-id.json',
      { client_id: 'https://elsewhere.example/c.json' },
    ],
    ['a document that carries a secret', '/clients/secret.json', { client_secret: 'x' }],
    [
      'a confidential auth method',
      '/clients/basic.json',
      { token_endpoint_auth_method: 'client_secret_basic' },
    ],
    [
      'a redirect it does not list',
      '/clients/no-redirect.json',
      { redirect_uris: ['http://127.0.0.1:4321/else'] },
    ],
    [
      'an unacceptable redirect URI',
      '/clients/bad-redirect.json',
      { redirect_uris: ['http://evil.example/cb'] },
    ],
  ])('shows an error page, never a redirect, for %s', async (_, path, fields) => {
    const clientId = publish(path, fields);
    const response = await authorize(clientId);
    expect(response.status).toBe(400);
    expect(response.headers.get('location')).toBeNull();
  });

  it('shows an error page when the document is missing, redirects elsewhere or is not JSON', async () => {
    documents.set('/clients/moved.json', {
      status: 302,
      headers: { location: '/clients/good.json' },
      body: '',
    });
    documents.set('/clients/text.json', { body: 'hello' });
    for (const path of ['/clients/absent.json', '/clients/moved.json', '/clients/text.json']) {
      const response = await authorize(`${documentBase}${path}`);
      expect(response.status).toBe(400);
      expect(response.headers.get('location')).toBeNull();
    }
  });
});

describe('the fetch guard', () => {
  it('refuses loopback and private addresses unless told otherwise', async () => {
    const guarded = new MetadataDocumentFetcher({ allowPrivateAddresses: false, extraCa: cert });
    try {
      publish('/clients/guarded.json', {});
      await expect(guarded.fetchDocument(`${documentBase}/clients/guarded.json`)).rejects.toThrow(
        /non-public address/,
      );
      await expect(
        guarded.fetchDocument('https://localhost/clients/x.json'),
      ).rejects.toBeInstanceOf(OAuthError);
      expect(fetches.get('/clients/guarded.json')).toBeUndefined();
    } finally {
      await guarded.close();
    }
  });

  it('refuses a document over 64 KiB', async () => {
    const fetcher = new MetadataDocumentFetcher({ allowPrivateAddresses: true, extraCa: cert });
    try {
      const clientId = publish('/clients/huge.json', { padding: 'x'.repeat(70_000) });
      await expect(fetcher.fetchDocument(clientId)).rejects.toThrow(/larger than/);
    } finally {
      await fetcher.close();
    }
  });
});
