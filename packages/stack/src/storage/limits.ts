// What the storage API accepts as names, sizes and MIME types. The character sets are the
// protocol's (storage-api src/storage/limits.ts: S3's safe characters), so a name valid here is
// valid on hosted Supabase and the other way round.
import { storageErrors } from './storage-error.ts';

/** S3's safe key characters plus those storage-api handles specially; `/` separates folders. */
const OBJECT_KEY = /^[A-Za-z0-9_/!.*'() &$=@;:+,?-]+$/;
/** The same without `/`, 1 to 100 characters. */
const BUCKET_NAME = /^[A-Za-z0-9_!.*'() &$=@;:+,?-]{1,100}$/;

/** Objects under this name may only be empty: storage-js's folder placeholder. */
export const EMPTY_FOLDER_PLACEHOLDER = '.emptyFolderPlaceholder';

export function assertValidKey(key: string): void {
  if (!OBJECT_KEY.test(key)) throw storageErrors.invalidKey(key);
}

export function assertValidBucketName(name: string): void {
  if (!BUCKET_NAME.test(name) || name.trim() !== name) throw storageErrors.invalidBucketName();
}

export function isEmptyFolderPlaceholder(key: string): boolean {
  return key.endsWith(EMPTY_FOLDER_PLACEHOLDER);
}

/**
 * A bucket's `file_size_limit` given as text, as storage-api reads it: a decimal number (three
 * significant digits) with a unit of B, KB, MB or GB in powers of 1000 ("20MB", "1.5GB").
 */
export function parseBucketSizeLimit(text: string): number {
  const match = /^([0-9]+(?:\.[0-9]+)?)(gb|mb|kb|b)$/i.exec(text);
  if (!match) throw storageErrors.invalidFileSizeLimit();
  const value = Number(Number.parseFloat(match[1] as string).toPrecision(3));
  const unit = (match[2] as string).toLowerCase();
  const factor = { gb: 1e9, mb: 1e6, kb: 1e3, b: 1 }[unit as 'gb' | 'mb' | 'kb' | 'b'];
  return Math.round(value * factor);
}

/** A MIME type, optionally with a charset parameter, as a bucket's allow list may hold. */
const MIME_TYPE = /^[A-Za-z0-9.+-]+\/[A-Za-z0-9.+-]+(?:;\s*charset=[A-Za-z0-9-]+)?$/;

/** Each entry a MIME type or a wildcard ending in `*` (`image/*`), at most 1000 characters. */
export function assertValidAllowedMimeTypes(types: string[]): void {
  for (const type of types) {
    if (type.length > 1000 || !(MIME_TYPE.test(type) || type.endsWith('*'))) {
      throw storageErrors.invalidMimeType(type);
    }
  }
}

/**
 * Whether a bucket's allow list admits an upload's MIME type. Compared as storage-api compares
 * (src/storage/uploader.ts validateMimeType): the type before the first `/` must equal, and what
 * follows it must equal too (parameters included) unless the entry is `type/*`.
 */
export function assertMimeTypeAllowed(mimeType: string, allowed: string[] | null): void {
  if (!allowed || allowed.length === 0) return;
  const [type, subtype, ...rest] = mimeType.split('/');
  if (subtype === undefined) throw storageErrors.invalidMimeType(mimeType);
  const requestedSubtype = [subtype, ...rest].join('/');
  for (const entry of allowed) {
    const [allowedType, ...allowedRest] = entry.split('/');
    const allowedSubtype = allowedRest.join('/');
    if (allowedType !== type) continue;
    if (allowedSubtype === '*' || allowedSubtype === requestedSubtype) return;
  }
  throw storageErrors.invalidMimeType(mimeType);
}

/** RFC 4122 form, as storage-api tests a JWT `sub` before using it as the uuid `owner`. */
export function isUuid(value: string | undefined): value is string {
  return (
    value !== undefined &&
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)
  );
}
