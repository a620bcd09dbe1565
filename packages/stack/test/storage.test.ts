// Storage at /storage/v1 through the gateway, driven by the real storage-js inside supabase-js
// (docs/local-stack.md "Storage"): buckets, public and private objects, uploads (raw and
// multipart), listing, move/copy/remove, info/exists, signed download and upload URLs, bucket
// limits, and RLS on storage.objects with the policies hosted Supabase's docs show, including
// that a refused upload leaves no file behind.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningStack } from '../src/index.ts';
import { multipartBoundary, readMultipartHead } from '../src/storage/multipart.ts';
import { parseConfigSize } from '../src/storage/storage-config.ts';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';

const stack = useFixtureStack();
let admin: SupabaseClient;
let db: pg.Pool;

/** Policies an app's migration would add, as in Supabase's storage access-control guide. */
const POLICIES = `
  create policy "users upload into their own folder" on storage.objects
    for insert to authenticated
    with check (bucket_id = 'user-files' and (storage.foldername(name))[1] = (select auth.uid()::text));
  create policy "users read their own folder" on storage.objects
    for select to authenticated
    using (bucket_id = 'user-files' and (storage.foldername(name))[1] = (select auth.uid()::text));
  create policy "users replace in their own folder" on storage.objects
    for update to authenticated
    using (bucket_id = 'user-files' and (storage.foldername(name))[1] = (select auth.uid()::text));
  create policy "users remove from their own folder" on storage.objects
    for delete to authenticated
    using (bucket_id = 'user-files' and (storage.foldername(name))[1] = (select auth.uid()::text));
  create policy "pdf documents only, never secret.pdf" on storage.objects
    for insert to authenticated
    with check (bucket_id = 'documents' and storage.extension(name) = 'pdf'
                and storage.filename(name) <> 'secret.pdf');
  create policy "small files only" on storage.objects
    for insert to authenticated
    with check (bucket_id = 'small-only' and coalesce((metadata ->> 'size')::int, 0) <= 8);
`;

async function signedIn(running: RunningStack): Promise<{ client: SupabaseClient; id: string }> {
  const client = clientFor(running);
  const { data, error } = await client.auth.signUp({
    email: uniqueEmail('storage'),
    password: 'storage-password-1',
  });
  if (error || !data.user) throw new Error(`sign-up failed: ${error?.message}`);
  return { client, id: data.user.id };
}

async function createBucket(
  id: string,
  options: { public: boolean; fileSizeLimit?: number | string; allowedMimeTypes?: string[] },
) {
  const { error } = await admin.storage.createBucket(id, options);
  expect(error).toBeNull();
}

/** Every file under the storage root, temp files included. */
function storedFiles(running: RunningStack): string[] {
  const root = join(running.dataDir, 'storage');
  return readdirSync(root, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
}

beforeAll(async () => {
  admin = clientFor(stack(), stack().keys.secretKey);
  db = new pg.Pool({ connectionString: stack().dbUrl, max: 2 });
  await db.query(POLICIES);
  for (const [id, isPublic] of [
    ['user-files', false],
    ['documents', false],
    ['small-only', false],
  ] as const) {
    await createBucket(id, { public: isPublic });
  }
});

afterAll(async () => {
  await db?.end();
});

describe('buckets', () => {
  it('creates, lists, gets, updates, empties and deletes a bucket as the service role', async () => {
    const created = await admin.storage.createBucket('lifecycle', {
      public: false,
      fileSizeLimit: '1MB',
      allowedMimeTypes: ['text/plain'],
    });
    expect(created).toEqual({ data: { name: 'lifecycle' }, error: null });

    const listed = await admin.storage.listBuckets({ search: 'lifecyc' });
    expect(listed.error).toBeNull();
    expect(listed.data?.map((bucket) => bucket.id)).toEqual(['lifecycle']);

    const fetched = await admin.storage.getBucket('lifecycle');
    expect(fetched.data).toMatchObject({
      id: 'lifecycle',
      name: 'lifecycle',
      public: false,
      file_size_limit: 1_000_000,
      allowed_mime_types: ['text/plain'],
    });

    const updated = await admin.storage.updateBucket('lifecycle', {
      public: true,
      fileSizeLimit: 2048,
      allowedMimeTypes: null,
    });
    expect(updated).toEqual({ data: { message: 'Successfully updated' }, error: null });
    expect((await admin.storage.getBucket('lifecycle')).data).toMatchObject({
      public: true,
      file_size_limit: 2048,
      allowed_mime_types: null,
    });

    const files = admin.storage.from('lifecycle');
    expect((await files.upload('a.txt', 'a')).error).toBeNull();
    const notEmpty = await admin.storage.deleteBucket('lifecycle');
    expect(notEmpty.error).toMatchObject({
      statusCode: '409',
      message: 'The bucket you tried to delete is not empty',
    });

    expect((await admin.storage.emptyBucket('lifecycle')).error).toBeNull();
    expect((await files.list()).data).toEqual([]);
    const deleted = await admin.storage.deleteBucket('lifecycle');
    expect(deleted).toEqual({ data: { message: 'Successfully deleted' }, error: null });
    const gone = await admin.storage.getBucket('lifecycle');
    expect(gone.error).toMatchObject({ statusCode: '404', message: 'Bucket not found' });
  });

  it('refuses a duplicate bucket, a bad name and a size limit over the global limit', async () => {
    await createBucket('twice', { public: false });
    const again = await admin.storage.createBucket('twice', { public: false });
    expect(again.error).toMatchObject({
      statusCode: '409',
      message: 'The resource already exists',
    });
    const badName = await admin.storage.createBucket('no/slashes', { public: false });
    expect(badName.error).toMatchObject({ statusCode: '400', message: 'Bucket name invalid' });
    // The fixture keeps the CLI's default [storage] file_size_limit of 50 MiB.
    const tooLarge = await admin.storage.createBucket('huge', {
      public: false,
      fileSizeLimit: '60MB',
    });
    expect(tooLarge.error).toMatchObject({ statusCode: '413' });
  });

  it('refuses anon a bucket: RLS on storage.buckets has no policy', async () => {
    const anon = clientFor(stack());
    const created = await anon.storage.createBucket('anon-bucket', { public: true });
    expect(created.error).toMatchObject({
      statusCode: '403',
      message: 'new row violates row-level security policy',
    });
    expect((await anon.storage.listBuckets()).data).toEqual([]);
    expect((await anon.storage.getBucket('user-files')).error).toMatchObject({
      statusCode: '404',
    });
  });
});

describe('public and private buckets', () => {
  beforeAll(async () => {
    await createBucket('avatars', { public: true });
    await createBucket('private-notes', { public: false });
    await admin.storage.from('avatars').upload('people/ann.txt', 'hello ann', {
      contentType: 'text/plain',
    });
    await admin.storage.from('private-notes').upload('note.txt', 'private');
  });

  it("serves a public bucket's public URL to a request with no token at all", async () => {
    const { data } = clientFor(stack()).storage.from('avatars').getPublicUrl('people/ann.txt');
    expect(data.publicUrl).toBe(
      `${stack().apiUrl}/storage/v1/object/public/avatars/people/ann.txt`,
    );
    const response = await fetch(data.publicUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain');
    expect(response.headers.get('etag')).toMatch(/^"[0-9a-f]{32}"$/);
    expect(await response.text()).toBe('hello ann');

    const ranged = await fetch(data.publicUrl, { headers: { Range: 'bytes=0-4' } });
    expect(ranged.status).toBe(206);
    expect(ranged.headers.get('content-range')).toBe('bytes 0-4/9');
    expect(await ranged.text()).toBe('hello');

    const download = clientFor(stack())
      .storage.from('avatars')
      .getPublicUrl('people/ann.txt', { download: 'ann.txt' });
    const attachment = await fetch(download.data.publicUrl);
    expect(attachment.headers.get('content-disposition')).toBe(
      "attachment; filename=ann.txt; filename*=UTF-8''ann.txt",
    );
  });

  it('refuses anon a private bucket object, with a key and without one', async () => {
    const anon = clientFor(stack()).storage.from('private-notes');
    const download = await anon.download('note.txt');
    expect(download.data).toBeNull();
    expect(download.error).toMatchObject({ statusCode: '404', message: 'Object not found' });
    expect(await anon.exists('note.txt')).toMatchObject({ data: false });

    const bare = await fetch(`${stack().apiUrl}/storage/v1/object/private-notes/note.txt`);
    expect(bare.status).toBe(400);
    expect(await bare.json()).toEqual({
      statusCode: '404',
      error: 'Bucket not found',
      message: 'Bucket not found',
      code: 'NoSuchBucket',
    });
    const publicRoute = await fetch(
      `${stack().apiUrl}/storage/v1/object/public/private-notes/note.txt`,
    );
    expect(await publicRoute.json()).toMatchObject({ statusCode: '404', code: 'NoSuchBucket' });

    const asService = await admin.storage.from('private-notes').download('note.txt');
    expect(await asService.data?.text()).toBe('private');
  });
});

describe('objects', () => {
  beforeAll(async () => {
    await createBucket('objects', { public: false });
  });

  it('uploads, refuses a second upload without upsert, replaces with upsert and downloads', async () => {
    const files = admin.storage.from('objects');
    const first = await files.upload('docs/readme.txt', 'first version', {
      contentType: 'text/plain',
      cacheControl: '60',
    });
    expect(first.error).toBeNull();
    expect(first.data).toMatchObject({
      path: 'docs/readme.txt',
      fullPath: 'objects/docs/readme.txt',
      id: expect.any(String),
    });

    const duplicate = await files.upload('docs/readme.txt', 'again');
    expect(duplicate.error).toMatchObject({
      statusCode: '409',
      message: 'The resource already exists',
    });

    const replaced = await files.upload('docs/readme.txt', 'second version', { upsert: true });
    expect(replaced.error).toBeNull();
    const downloaded = await files.download('docs/readme.txt');
    expect(await downloaded.data?.text()).toBe('second version');

    const updated = await files.update('docs/readme.txt', 'third version');
    expect(updated.error).toBeNull();
    expect(await (await files.download('docs/readme.txt')).data?.text()).toBe('third version');
    // Each write replaced the last: one file on disk for the object.
    const objectFiles = storedFiles(stack()).filter((path) => path.includes('/objects/'));
    expect(objectFiles).toHaveLength(1);
  });

  it('uploads a Blob as multipart with its type, cache control and user metadata', async () => {
    const files = admin.storage.from('objects');
    const blob = new Blob(['{"a":1}'], { type: 'application/json' });
    const uploaded = await files.upload('blob.json', blob, {
      cacheControl: '120',
      metadata: { origin: 'test' },
    });
    expect(uploaded.error).toBeNull();
    const info = await files.info('blob.json');
    expect(info.error).toBeNull();
    expect(info.data).toMatchObject({
      name: 'blob.json',
      bucketId: 'objects',
      size: 7,
      contentType: 'application/json',
      cacheControl: 'max-age=120',
      metadata: { origin: 'test' },
    });
    expect(await files.exists('blob.json')).toEqual({ data: true, error: null });
    expect(await files.exists('missing.json')).toMatchObject({ data: false });
  });

  it('lists a folder with prefix, search, sort, limit and offset', async () => {
    const files = admin.storage.from('objects');
    for (const name of ['list/b.txt', 'list/a.txt', 'list/c.md', 'list/sub/deep.txt']) {
      expect((await files.upload(name, name)).error).toBeNull();
    }
    const names = async (...args: Parameters<typeof files.list>) => {
      const { data, error } = await files.list(...args);
      expect(error).toBeNull();
      return data?.map((entry) => entry.name);
    };
    expect(await names('list')).toEqual(['a.txt', 'b.txt', 'c.md', 'sub']);
    expect(await names('list', { sortBy: { column: 'name', order: 'desc' } })).toEqual([
      'sub',
      'c.md',
      'b.txt',
      'a.txt',
    ]);
    expect(await names('list', { search: 'b' })).toEqual(['b.txt']);
    expect(await names('list', { limit: 2, offset: 1 })).toEqual(['b.txt', 'c.md']);
    // By a time column folders come first; files in upload order.
    expect(await names('list', { sortBy: { column: 'created_at', order: 'asc' } })).toEqual([
      'sub',
      'b.txt',
      'a.txt',
      'c.md',
    ]);
    const { data } = await files.list('list');
    expect(data?.find((entry) => entry.name === 'sub')).toMatchObject({ id: null, metadata: null });
    expect(data?.find((entry) => entry.name === 'a.txt')).toMatchObject({
      id: expect.any(String),
      metadata: { size: 10, mimetype: 'text/plain;charset=UTF-8' },
    });
  });

  it('moves, copies and removes objects', async () => {
    const files = admin.storage.from('objects');
    await files.upload('move/from.txt', 'moving');
    const moved = await files.move('move/from.txt', 'move/to.txt');
    expect(moved.data).toMatchObject({ message: 'Successfully moved' });
    expect((await files.download('move/from.txt')).error).toMatchObject({ statusCode: '404' });
    expect(await (await files.download('move/to.txt')).data?.text()).toBe('moving');

    await createBucket('archive', { public: false });
    const across = await files.move('move/to.txt', 'kept.txt', { destinationBucket: 'archive' });
    expect(across.error).toBeNull();
    expect(await (await admin.storage.from('archive').download('kept.txt')).data?.text()).toBe(
      'moving',
    );

    await files.upload('copy/source.txt', 'copied content');
    const copied = await files.copy('copy/source.txt', 'copy/target.txt');
    expect(copied).toEqual({ data: { path: 'objects/copy/target.txt' }, error: null });
    const again = await files.copy('copy/source.txt', 'copy/target.txt');
    expect(again.error).toMatchObject({ statusCode: '409' });
    expect(await (await files.download('copy/target.txt')).data?.text()).toBe('copied content');

    const removed = await files.remove(['copy/source.txt', 'copy/target.txt', 'copy/none.txt']);
    expect(removed.error).toBeNull();
    expect(removed.data?.map((row) => row.name).sort()).toEqual([
      'copy/source.txt',
      'copy/target.txt',
    ]);
    expect((await files.list('copy')).data).toEqual([]);
  });

  it('refuses an invalid key and a missing bucket', async () => {
    const invalid = await admin.storage.from('objects').upload('bad{name}.txt', 'x');
    expect(invalid.error).toMatchObject({ statusCode: '400' });
    const missing = await admin.storage.from('no-such-bucket').upload('a.txt', 'x');
    expect(missing.error).toMatchObject({ statusCode: '404', message: 'Bucket not found' });
  });
});

describe('signed URLs', () => {
  beforeAll(async () => {
    await createBucket('signed', { public: false });
    await admin.storage.from('signed').upload('report.txt', 'signed content');
  });

  it('serves an object through a signed URL without a token, until it expires', async () => {
    const files = admin.storage.from('signed');
    const { data, error } = await files.createSignedUrl('report.txt', 60);
    expect(error).toBeNull();
    const response = await fetch(data?.signedUrl as string);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('signed content');
    expect(response.headers.get('expires')).toBeTruthy();

    const short = await files.createSignedUrl('report.txt', 1);
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const expired = await fetch(short.data?.signedUrl as string);
    expect(expired.status).toBe(400);
    expect(await expired.json()).toMatchObject({
      statusCode: '400',
      code: 'InvalidJWT',
      message: '"exp" claim timestamp check failed',
    });
  });

  it('binds a signed URL to its object and to downloading', async () => {
    const files = admin.storage.from('signed');
    const { data } = await files.createSignedUrl('report.txt', 60);
    const token = new URL(data?.signedUrl as string).searchParams.get('token');
    const other = await fetch(
      `${stack().apiUrl}/storage/v1/object/sign/signed/other.txt?token=${token}`,
    );
    expect(await other.json()).toMatchObject({ statusCode: '400', code: 'InvalidSignature' });
    const asUpload = await files.uploadToSignedUrl('report.txt', token as string, 'overwrite');
    expect(asUpload.error).toMatchObject({ message: 'Token is not scoped for upload' });

    const many = await files.createSignedUrls(['report.txt', 'missing.txt'], 60);
    expect(many.data?.[0]).toMatchObject({ path: 'report.txt', error: null });
    expect(many.data?.[1]).toMatchObject({
      path: 'missing.txt',
      signedUrl: null,
      error: 'Either the object does not exist or you do not have access to it',
    });
  });

  it('accepts an upload to a signed upload URL, once without upsert', async () => {
    const files = admin.storage.from('signed');
    const signed = await files.createSignedUploadUrl('uploads/by-link.txt');
    expect(signed.error).toBeNull();
    const anon = clientFor(stack()).storage.from('signed');
    const uploaded = await anon.uploadToSignedUrl(
      'uploads/by-link.txt',
      signed.data?.token as string,
      'sent by link',
    );
    expect(uploaded).toEqual({
      data: { path: 'uploads/by-link.txt', fullPath: 'signed/uploads/by-link.txt' },
      error: null,
    });
    expect(await (await files.download('uploads/by-link.txt')).data?.text()).toBe('sent by link');
    const replay = await anon.uploadToSignedUrl(
      'uploads/by-link.txt',
      signed.data?.token as string,
      'again',
    );
    expect(replay.error).toMatchObject({ statusCode: '409' });
  });
});

describe('bucket limits', () => {
  it('refuses an object over the bucket size limit with 413, raw or multipart', async () => {
    await createBucket('tiny', { public: false, fileSizeLimit: 10 });
    const files = admin.storage.from('tiny');
    expect((await files.upload('ok.txt', '0123456789')).error).toBeNull();
    const raw = await files.upload('big.txt', '0123456789+');
    expect(raw.error).toMatchObject({
      statusCode: '413',
      message: 'The object exceeded the maximum allowed size',
    });
    const multipart = await files.upload('big.bin', new Blob(['x'.repeat(64 * 1024)]));
    expect(multipart.error).toMatchObject({ statusCode: '413' });
    expect((await files.list()).data?.map((entry) => entry.name)).toEqual(['ok.txt']);
  });

  it('refuses a MIME type the bucket does not allow', async () => {
    await createBucket('images', {
      public: false,
      allowedMimeTypes: ['image/png', 'image/svg+xml'],
    });
    const files = admin.storage.from('images');
    const text = await files.upload('note.txt', 'not an image', { contentType: 'text/plain' });
    expect(text.error).toMatchObject({
      statusCode: '415',
      message: 'mime type text/plain is not supported',
    });
    const png = await files.upload('pixel.png', new Uint8Array([137, 80, 78, 71]), {
      contentType: 'image/png',
    });
    expect(png.error).toBeNull();
  });
});

describe('RLS on storage.objects', () => {
  let ann: { client: SupabaseClient; id: string };
  let bob: { client: SupabaseClient; id: string };

  beforeAll(async () => {
    ann = await signedIn(stack());
    bob = await signedIn(stack());
  });

  it("lets a user upload into their own folder and refuses another user's folder", async () => {
    const files = ann.client.storage.from('user-files');
    const own = await files.upload(`${ann.id}/avatar.txt`, 'ann');
    expect(own.error).toBeNull();
    const row = await db.query('select owner, owner_id from storage.objects where name = $1', [
      `${ann.id}/avatar.txt`,
    ]);
    expect(row.rows[0]).toEqual({ owner: ann.id, owner_id: ann.id });

    const theirs = await files.upload(`${bob.id}/avatar.txt`, 'not ann');
    expect(theirs.data).toBeNull();
    expect(theirs.error).toMatchObject({
      name: 'StorageApiError',
      statusCode: '403',
      message: 'new row violates row-level security policy',
    });
    const signedForTheirs = await files.createSignedUploadUrl(`${bob.id}/planted.txt`);
    expect(signedForTheirs.error).toMatchObject({ statusCode: '403' });
  });

  it("refuses a user another user's private object and lists only their own", async () => {
    await bob.client.storage.from('user-files').upload(`${bob.id}/secret.txt`, 'bob only');
    const files = ann.client.storage.from('user-files');
    const download = await files.download(`${bob.id}/secret.txt`);
    expect(download.error).toMatchObject({ statusCode: '404', message: 'Object not found' });
    const signed = await files.createSignedUrl(`${bob.id}/secret.txt`, 60);
    expect(signed.error).toMatchObject({ statusCode: '404' });
    expect((await files.list(bob.id)).data).toEqual([]);
    const removed = await files.remove([`${bob.id}/secret.txt`]);
    expect(removed.data).toEqual([]);
    const moved = await files.move(`${bob.id}/secret.txt`, `${ann.id}/stolen.txt`);
    expect(moved.error).toMatchObject({ statusCode: '404' });

    const bobsOwn = await bob.client.storage.from('user-files').download(`${bob.id}/secret.txt`);
    expect(await bobsOwn.data?.text()).toBe('bob only');
  });

  it('applies storage.filename() and storage.extension() in a policy', async () => {
    const files = ann.client.storage.from('documents');
    expect((await files.upload('reports/q1.pdf', 'pdf')).error).toBeNull();
    expect((await files.upload('reports/q1.txt', 'txt')).error).toMatchObject({
      statusCode: '403',
    });
    expect((await files.upload('reports/secret.pdf', 'pdf')).error).toMatchObject({
      statusCode: '403',
    });
  });

  it('leaves no file on disk when the caller is refused, before or after the content arrives', async () => {
    const before = storedFiles(stack());
    // Refused by the probe before any byte is stored.
    const early = await ann.client.storage.from('user-files').upload(`${bob.id}/x.txt`, 'x');
    expect(early.error).toMatchObject({ statusCode: '403' });
    // Admitted by the probe (the size is not known yet), refused once the row names its size.
    const late = await ann.client.storage
      .from('small-only')
      .upload('big.txt', 'more than eight bytes');
    expect(late.error).toMatchObject({
      statusCode: '403',
      message: 'new row violates row-level security policy',
    });
    expect(storedFiles(stack())).toEqual(before);
    const rows = await db.query(
      "select count(*)::int as n from storage.objects where bucket_id = 'small-only'",
    );
    expect(rows.rows[0]).toEqual({ n: 0 });
    expect((await ann.client.storage.from('small-only').upload('ok.txt', 'tiny')).error).toBeNull();
  });
});

describe('multipart reader (no network)', () => {
  const boundary = '----formdata-undici-0123456789';
  const file = Buffer.from(`line one\r\n--${boundary.slice(0, 10)} not a delimiter\r\n`.repeat(50));
  const body = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="cacheControl"\r\n\r\n3600\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"a":"b"}\r\n` +
        `--${boundary}\r\nContent-Disposition: form-data; name=""; filename="blob"\r\n` +
        'Content-Type: image/png\r\n\r\n',
    ),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);

  async function* chunked(size: number): AsyncGenerator<Uint8Array> {
    for (let at = 0; at < body.length; at += size) yield body.subarray(at, at + size);
  }

  it.each([1, 2, 7, 64, 1000, body.length])(
    'reads the fields and the exact file content with the body cut every %i bytes',
    async (size) => {
      const head = await readMultipartHead(chunked(size), boundary, {
        fieldBytes: 1024,
        fields: 10,
        fieldTooLong: () => new Error('too long'),
      });
      expect(Object.fromEntries(head.fields)).toEqual({
        cacheControl: '3600',
        metadata: '{"a":"b"}',
      });
      expect(head.file?.contentType).toBe('image/png');
      const parts: Buffer[] = [];
      for await (const chunk of head.file?.content ?? []) parts.push(Buffer.from(chunk));
      expect(Buffer.concat(parts).equals(file)).toBe(true);
    },
  );

  it('finds the boundary of a multipart Content-Type, quoted or not, and no other', () => {
    expect(multipartBoundary(`multipart/form-data; boundary=${boundary}`)).toBe(boundary);
    expect(multipartBoundary('multipart/form-data; boundary="a b"')).toBe('a b');
    expect(multipartBoundary('text/plain; boundary=x')).toBeUndefined();
  });

  it.each([
    ['50MiB', 50 * 1024 * 1024],
    ['50MB', 50 * 1024 * 1024],
    ['512KiB', 512 * 1024],
    ['1.5GB', 1.5 * 1024 ** 3],
    [1000, 1000],
    ['lots', undefined],
  ] as const)('reads config.toml size %s as the Supabase CLI does', (text, bytes) => {
    expect(parseConfigSize(text)).toBe(bytes);
  });
});
