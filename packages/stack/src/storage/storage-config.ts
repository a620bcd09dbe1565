// The storage service's settings: where files live, the project's JWT secret, and the limits
// the Supabase CLI's `[storage]` section of config.toml sets.

export interface StorageConfig {
  /** Files live under `<rootDir>/<bucket>/<version>` (object-files.ts). */
  rootDir: string;
  /** HS256 secret of access tokens and of signed-URL tokens (the project's JWT secret). */
  jwtSecret: string;
  /** Largest upload in bytes, whatever a bucket allows (`[storage] file_size_limit`). */
  fileSizeLimit: number;
  /** How long a signed upload URL is valid (storage-api's UPLOAD_SIGNED_URL_EXPIRATION_TIME). */
  signedUploadExpirySeconds: number;
}

/** The CLI's default `[storage] file_size_limit = "50MiB"`. */
export const DEFAULT_FILE_SIZE_LIMIT = 50 * 1024 * 1024;

/** Supabase documents signed upload URLs as valid for two hours. */
export const SIGNED_UPLOAD_EXPIRY_SECONDS = 2 * 60 * 60;

const BINARY_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  k: 1024,
  kb: 1024,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
};

/**
 * A size from config.toml ("50MiB", "5GB", "512KiB", or a number of bytes), read as the Supabase
 * CLI reads it (docker/go-units RAMInBytes): units in powers of 1024 whether written MB or MiB.
 * Undefined when the text is not a size.
 */
export function parseConfigSize(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0 ? value : undefined;
  const match = /^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$/i.exec(value);
  const factor = match ? BINARY_UNITS[(match[2] as string).toLowerCase()] : undefined;
  if (!match || factor === undefined) return undefined;
  return Math.floor(Number(match[1]) * factor);
}
