// Object contents on disk: `<root>/<bucket>/<version>`, one immutable file per version (a write
// makes a new version; the row's `version` names the current one), and `<root>/.tmp/` for uploads
// in progress. Object names never reach the file system, so no name can escape the root; bucket
// ids are percent-encoded, dots included, so none reads as `.`, `..` or `.tmp`.
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, type ReadStream } from 'node:fs';
import { copyFile, link, mkdir, open, rename, rm, rmdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { storageErrors } from './storage-error.ts';

export interface WrittenFile {
  tempPath: string;
  size: number;
  /** S3's form: the quoted hex MD5 of the content. */
  eTag: string;
}

/** Versions are UUIDs the service makes; a row written by other means may hold anything. */
const VERSION = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function isVersion(version: string | null | undefined): version is string {
  return typeof version === 'string' && VERSION.test(version);
}

function isMissing(error: unknown): boolean {
  return (error as { code?: unknown }).code === 'ENOENT';
}

export class ObjectFiles {
  readonly root: string;
  private readonly tempDir: string;

  constructor(root: string) {
    this.root = root;
    this.tempDir = join(root, '.tmp');
  }

  /** Creates the folders; uploads a crash left half-written are removed. */
  async prepare(): Promise<void> {
    await rm(this.tempDir, { recursive: true, force: true });
    await mkdir(this.tempDir, { recursive: true, mode: 0o700 });
  }

  bucketDir(bucketId: string): string {
    return join(this.root, encodeURIComponent(bucketId).replaceAll('.', '%2E'));
  }

  pathOf(bucketId: string, version: string): string {
    if (!isVersion(version)) throw storageErrors.noSuchKey();
    return join(this.bucketDir(bucketId), version);
  }

  /**
   * Streams `body` into a new temp file, hashing it, and refuses past `maxBytes` (the temp file
   * is removed then). Each chunk is written before the next is read: the body's backpressure.
   */
  async writeTemp(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<WrittenFile> {
    const tempPath = join(this.tempDir, randomUUID());
    const handle = await open(tempPath, 'wx', 0o600);
    const hash = createHash('md5');
    let size = 0;
    try {
      for await (const chunk of body) {
        size += chunk.byteLength;
        if (size > maxBytes) throw storageErrors.entityTooLarge();
        hash.update(chunk);
        await handle.write(chunk);
      }
    } catch (error) {
      await handle.close().catch(() => undefined);
      await unlink(tempPath).catch(() => undefined);
      throw error;
    }
    await handle.close();
    return { tempPath, size, eTag: `"${hash.digest('hex')}"` };
  }

  async discardTemp(tempPath: string): Promise<void> {
    await unlink(tempPath).catch(() => undefined);
  }

  /** Moves a finished temp file to its version's place (a rename: same file system). */
  async place(tempPath: string, bucketId: string, version: string): Promise<void> {
    await mkdir(this.bucketDir(bucketId), { recursive: true, mode: 0o700 });
    await rename(tempPath, this.pathOf(bucketId, version));
  }

  /** A second name for existing content (copy, move between buckets): files never change. */
  async duplicate(
    from: { bucketId: string; version: string },
    to: { bucketId: string; version: string },
  ): Promise<void> {
    await mkdir(this.bucketDir(to.bucketId), { recursive: true, mode: 0o700 });
    const source = this.pathOf(from.bucketId, from.version);
    const target = this.pathOf(to.bucketId, to.version);
    try {
      await link(source, target);
    } catch (error) {
      if (isMissing(error)) throw storageErrors.noSuchKey();
      await copyFile(source, target);
    }
  }

  async remove(bucketId: string, version: string | null | undefined): Promise<void> {
    if (!isVersion(version)) return;
    try {
      await unlink(this.pathOf(bucketId, version));
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
  }

  /** Removes a deleted bucket's folder when it is empty (it is, once its objects are gone). */
  async removeBucketDir(bucketId: string): Promise<void> {
    await rmdir(this.bucketDir(bucketId)).catch(() => undefined);
  }

  /** The file of a version with its size, or undefined when it is not on disk. */
  async statVersion(
    bucketId: string,
    version: string | null,
  ): Promise<{ path: string; size: number; modified: Date } | undefined> {
    if (!isVersion(version)) return undefined;
    const path = this.pathOf(bucketId, version);
    try {
      const info = await stat(path);
      return { path, size: info.size, modified: info.mtime };
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  read(path: string, range?: { start: number; end: number }): ReadStream {
    return createReadStream(path, range);
  }
}
