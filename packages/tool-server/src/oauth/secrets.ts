// Random bearer values (request ids, codes, refresh tokens, client secrets) and the one hash they
// are stored under: 256 bits from the CSPRNG, base64url; SHA-256 hex at rest, so a copy of the
// database hands out nothing usable.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function generateSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function hashSecret(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function matchesHash(value: string, storedHash: string): boolean {
  const presented = Buffer.from(hashSecret(value), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
