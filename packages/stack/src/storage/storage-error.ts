// The storage service's one error type, rendered as storage-api renders its errors: a body
// `{statusCode, error, message, code}` whose `statusCode` is the logical status as a string, sent
// with HTTP 400 unless it is a server fault (storage-api src/http/error-handler.ts: its
// `userStatusCode` is 400 for every client error). storage-js reads `message` and `statusCode`,
// and `exists()` branches on `code` (NoSuchKey).

/** The public codes (storage-api src/internal/errors/codes.ts spells them the same). */
export type StorageErrorCode =
  | 'AccessDenied'
  | 'BucketAlreadyExists'
  | 'DatabaseError'
  | 'DatabaseTimeout'
  | 'EntityTooLarge'
  | 'FeatureNotEnabled'
  | 'InternalError'
  | 'InvalidBucketName'
  | 'InvalidJWT'
  | 'InvalidKey'
  | 'InvalidMimeType'
  | 'InvalidParameter'
  | 'InvalidRange'
  | 'InvalidRequest'
  | 'InvalidSignature'
  | 'ExpiredToken'
  | 'KeyAlreadyExists'
  | 'NoSuchBucket'
  | 'NoSuchKey'
  | 'ResourceAlreadyExists'
  | 'ResourceLocked'
  | 'ResourceNotEmpty'
  | 'ResourceReferenced';

export class StorageError extends Error {
  readonly code: StorageErrorCode;
  /** The status the body names (`"statusCode": "404"`). */
  readonly statusCode: number;
  /** The body's `error` label; storage-api's legacy field, the code when it has none. */
  readonly label: string;
  /** The HTTP status actually sent: 400 for client errors, as storage-api sends them. */
  readonly httpStatus: number;

  constructor(
    code: StorageErrorCode,
    statusCode: number,
    message: string,
    options: { label?: string; httpStatus?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'StorageError';
    this.code = code;
    this.statusCode = statusCode;
    this.label = options.label ?? code;
    this.httpStatus = options.httpStatus ?? (statusCode >= 500 ? 500 : 400);
  }
}

export function renderStorageError(error: StorageError): Response {
  const body = {
    statusCode: String(error.statusCode),
    error: error.label,
    message: error.message,
    code: error.code,
  };
  return new Response(JSON.stringify(body), {
    status: error.httpStatus,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

// Constructors; messages and labels are storage-api's, verbatim, since clients show them.
export const storageErrors = {
  noSuchBucket: () =>
    new StorageError('NoSuchBucket', 404, 'Bucket not found', { label: 'Bucket not found' }),
  noSuchKey: () => new StorageError('NoSuchKey', 404, 'Object not found', { label: 'not_found' }),
  accessDenied: (message = 'Access denied', cause?: unknown) =>
    new StorageError('AccessDenied', 403, message, { label: 'Unauthorized', cause }),
  keyAlreadyExists: (cause?: unknown) =>
    new StorageError('KeyAlreadyExists', 409, 'The resource already exists', {
      label: 'Duplicate',
      cause,
    }),
  bucketAlreadyExists: (cause?: unknown) =>
    new StorageError('BucketAlreadyExists', 409, 'The resource already exists', {
      label: 'Duplicate',
      cause,
    }),
  resourceAlreadyExists: (cause?: unknown) =>
    new StorageError('ResourceAlreadyExists', 409, 'The resource already exists', {
      label: 'Duplicate',
      cause,
    }),
  bucketNotEmpty: () =>
    new StorageError('ResourceNotEmpty', 409, 'The bucket you tried to delete is not empty'),
  entityTooLarge: () =>
    new StorageError('EntityTooLarge', 413, 'The object exceeded the maximum allowed size', {
      label: 'Payload too large',
    }),
  userMetadataTooLarge: () =>
    new StorageError('EntityTooLarge', 413, 'The user_metadata exceeded the maximum allowed size', {
      label: 'Payload too large',
    }),
  invalidMimeType: (mimeType: string) =>
    new StorageError('InvalidMimeType', 415, `mime type ${mimeType} is not supported`, {
      label: 'invalid_mime_type',
    }),
  invalidBucketName: () =>
    new StorageError('InvalidBucketName', 400, 'Bucket name invalid', { label: 'Invalid Input' }),
  invalidKey: (key: string) => new StorageError('InvalidKey', 400, `Invalid key: ${key}`),
  invalidRequest: (message: string) => new StorageError('InvalidRequest', 400, message),
  noContent: (message = 'No content provided') => new StorageError('InvalidRequest', 400, message),
  invalidFileSizeLimit: () =>
    new StorageError(
      'InvalidRequest',
      400,
      'Invalid file size format, hint: use 20GB / 20MB / 30KB / 3B',
    ),
  invalidJwt: (message: string) => new StorageError('InvalidJWT', 400, message || 'Invalid JWT'),
  invalidSignature: (message = 'Invalid signature') =>
    new StorageError('InvalidSignature', 400, message),
  invalidRange: () =>
    new StorageError('InvalidRange', 400, 'invalid range provided', {
      label: 'invalid_range',
      httpStatus: 416,
    }),
  featureNotEnabled: (feature: string) =>
    new StorageError(
      'FeatureNotEnabled',
      409,
      `The feature ${feature} is not enabled for this resource`,
    ),
  internal: (cause?: unknown) =>
    new StorageError('InternalError', 500, 'Internal server error', { cause }),
};

interface PgErrorLike {
  code?: unknown;
  message?: unknown;
  detail?: unknown;
}

function isPgError(error: unknown): error is PgErrorLike & { code: string; message: string } {
  return (
    error instanceof Error &&
    typeof (error as PgErrorLike).code === 'string' &&
    /^[0-9A-Z]{5}$/.test((error as PgErrorLike).code as string)
  );
}

/**
 * A database refusal as storage-api reports it (src/storage/database/errors.ts DBError): RLS and
 * privileges → 403, unique → 409, foreign key → 409/404, lock → 423, timeout → 544. Other
 * errors pass through unchanged (server faults).
 */
export function fromDatabaseError(error: unknown): unknown {
  if (error instanceof StorageError || !isPgError(error)) return error;
  switch (error.code) {
    case '42501':
      return storageErrors.accessDenied(
        error.message.includes('row-level security')
          ? 'new row violates row-level security policy'
          : error.message,
        error,
      );
    case '23505':
      return storageErrors.resourceAlreadyExists(error);
    case '23503':
      return String(error.detail ?? '').includes('is still referenced from table')
        ? new StorageError(
            'ResourceReferenced',
            409,
            'The resource could not be updated or removed due to a foreign key constraint',
            { cause: error },
          )
        : new StorageError('InvalidRequest', 404, 'The related resource does not exist', {
            cause: error,
          });
    case '55P03':
      return new StorageError('ResourceLocked', 423, 'The resource is locked', { cause: error });
    case '57014':
      return new StorageError('DatabaseTimeout', 544, 'The connection to the database timed out', {
        httpStatus: 544,
        cause: error,
      });
    case '22P02':
      return new StorageError('InvalidParameter', 400, error.message, { cause: error });
    default:
      return new StorageError('DatabaseError', 500, `database error, code: ${error.code}`, {
        cause: error,
      });
  }
}
