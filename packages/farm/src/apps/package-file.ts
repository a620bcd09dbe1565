// Brings a package file (APK, later IPA) onto the farm host before it is inspected and installed:
// fetched from a URL through the capture proxy on the caller's farm device (so the download is
// captured like any farm traffic, source `farm`), decoded from an upload, or read from a Storage
// object as the caller. Each is size-capped while it streams and hashed, so the report can name
// exactly what was installed.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { ProxyAgent, request } from 'undici';
import type { FarmEgress } from '../farm-egress.ts';
import { AppInstallerError } from './app-installer.ts';

export interface PackageFile {
  bytes: number;
  sha256: string;
  /** The URL the bytes came from after redirects; null for an upload or a Storage object. */
  url: string | null;
  /** The Storage object the bytes came from; null for a URL or an upload. */
  object: { bucket: string; path: string } | null;
}

/**
 * A package in Supabase Storage, read as the caller (RLS on storage.objects decides) by whoever
 * holds their token: the farm only streams what `open` answers into its own file, capped.
 */
export interface PackageObject {
  bucket: string;
  path: string;
  /** Lowercase hex SHA-256 the bytes must have (what the person approved); none: not pinned. */
  sha256: string | undefined;
  /**
   * The object's bytes and their declared length, or throws (FarmError not_found when the caller
   * may not read it: Storage answers a missing and a forbidden object alike).
   */
  open(signal: AbortSignal): Promise<{ body: AsyncIterable<Uint8Array>; bytes: number | null }>;
}

export interface DownloadLimits {
  maxBytes: number;
  timeoutMs: number;
}

const MAX_REDIRECTS = 5;
const STANDARD_BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** http and https only: nothing else is fetched through the proxy (no file:, data:, ftp:). */
export function parsePackageUrl(value: string): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
}

export async function downloadPackage(
  url: URL,
  egress: FarmEgress,
  file: string,
  limits: DownloadLimits,
): Promise<PackageFile> {
  // http targets go to the proxy in absolute form, https through CONNECT with the project CA
  // trusted (the proxy intercepts and captures them).
  const dispatcher = new ProxyAgent({
    uri: `http://${egress.proxyHost}:${egress.proxyPort}`,
    requestTls: { ca: egress.caCertificatePem },
  });
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    let current = url;
    for (let hop = 0; ; hop++) {
      const response = await request(current, { dispatcher, signal, method: 'GET' }).catch(
        (error: unknown) => {
          throw new AppInstallerError(
            signal.aborted ? 'timeout' : 'tool_failed',
            signal.aborted
              ? `the download took longer than ${limits.timeoutMs} ms`
              : `the download failed: ${(error as Error).message}`,
            { cause: error },
          );
        },
      );
      const location = response.headers.location;
      if (response.statusCode >= 300 && response.statusCode < 400 && location) {
        await response.body.dump();
        const next = parsePackageUrl(new URL(String(location), current).href);
        if (!next || hop >= MAX_REDIRECTS) {
          throw new AppInstallerError(
            'bad_package',
            `the download redirected to ${String(location)}`,
          );
        }
        current = next;
        continue;
      }
      if (response.statusCode !== 200) {
        await response.body.dump();
        throw new AppInstallerError(
          'bad_package',
          `the download answered HTTP ${response.statusCode}`,
        );
      }
      const declared = Number(response.headers['content-length'] ?? Number.NaN);
      if (declared > limits.maxBytes) {
        await response.body.dump();
        throw tooLarge(limits.maxBytes);
      }
      const written = await writeCapped(response.body, file, limits.maxBytes).catch(
        (error: unknown) => {
          response.body.destroy();
          throw signal.aborted
            ? new AppInstallerError(
                'timeout',
                `the download took longer than ${limits.timeoutMs} ms`,
              )
            : error;
        },
      );
      return { ...written, url: current.href, object: null };
    }
  } finally {
    await dispatcher.close();
  }
}

/** Decodes an upload (standard base64) into `file`, refusing more than maxBytes. */
export async function writeUploadedPackage(
  base64: string,
  file: string,
  maxBytes: number,
): Promise<PackageFile> {
  const compact = base64.replace(/\s+/g, '');
  // Node's decoder skips what is not base64; a typo must not become a silently shorter file.
  if (!STANDARD_BASE64.test(compact) || compact.length % 4 === 1) {
    throw new AppInstallerError('bad_package', 'the upload is not standard base64');
  }
  if (Math.floor((compact.length * 3) / 4) > maxBytes + 2) throw tooLarge(maxBytes);
  const bytes = Buffer.from(compact, 'base64');
  if (bytes.length > maxBytes) throw tooLarge(maxBytes);
  const handle = await open(file, 'wx', 0o600);
  try {
    await handle.writeFile(bytes);
  } finally {
    await handle.close();
  }
  return {
    bytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    url: null,
    object: null,
  };
}

/**
 * Streams a Storage object into `file`, refusing more than maxBytes and, when the approval pinned
 * one, any other SHA-256 than the approved (nothing unapproved reaches the device).
 */
export async function readPackageObject(
  object: PackageObject,
  file: string,
  limits: DownloadLimits,
): Promise<PackageFile> {
  const signal = AbortSignal.timeout(limits.timeoutMs);
  const timedOut = () =>
    new AppInstallerError('timeout', `the download took longer than ${limits.timeoutMs} ms`);
  let opened: Awaited<ReturnType<PackageObject['open']>>;
  try {
    opened = await object.open(signal);
  } catch (error) {
    throw signal.aborted ? timedOut() : error;
  }
  if (opened.bytes !== null && opened.bytes > limits.maxBytes) {
    await opened.body[Symbol.asyncIterator]().return?.();
    throw tooLarge(limits.maxBytes);
  }
  const written = await writeCapped(opened.body, file, limits.maxBytes).catch((error: unknown) => {
    throw signal.aborted ? timedOut() : error;
  });
  if (object.sha256 !== undefined && written.sha256 !== object.sha256.toLowerCase()) {
    throw new AppInstallerError(
      'bad_package',
      `${object.bucket}/${object.path} has sha256 ${written.sha256}, not the approved ` +
        `${object.sha256.toLowerCase()}; nothing was installed`,
    );
  }
  return { ...written, url: null, object: { bucket: object.bucket, path: object.path } };
}

async function writeCapped(
  body: AsyncIterable<Uint8Array>,
  file: string,
  maxBytes: number,
): Promise<Omit<PackageFile, 'url' | 'object'>> {
  const hash = createHash('sha256');
  const handle = await open(file, 'wx', 0o600);
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > maxBytes) throw tooLarge(maxBytes);
      hash.update(chunk);
      await handle.write(chunk);
    }
  } finally {
    await handle.close();
  }
  return { bytes, sha256: hash.digest('hex') };
}

function tooLarge(maxBytes: number): AppInstallerError {
  return new AppInstallerError('bad_package', `the package is larger than ${maxBytes} bytes`);
}
