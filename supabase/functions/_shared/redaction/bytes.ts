// Conversions between base64, bytes, UTF-8 text and binary strings (one character per byte),
// with web APIs only (atob, btoa, TextDecoder), so Node and Deno behave the same.

const utf8 = new TextDecoder('utf-8');
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const encoder = new TextEncoder();
const CHUNK = 0x8000;

/** The bytes of a base64 text, or undefined when it is not base64. */
export function decodeBase64(text: string): Uint8Array | undefined {
  try {
    return bytesOfBinary(atob(text.replace(/\s+/g, '')));
  } catch {
    return undefined;
  }
}

export function encodeBase64(bytes: Uint8Array): string {
  return btoa(binaryOfBytes(bytes));
}

export function bytesOfBinary(binary: string): Uint8Array {
  const bytes = new Uint8Array(binary.length);
  for (let index = 0; index < binary.length; index += 1) bytes[index] = binary.charCodeAt(index);
  return bytes;
}

export function binaryOfBytes(bytes: Uint8Array): string {
  let binary = '';
  for (let start = 0; start < bytes.length; start += CHUNK) {
    binary += String.fromCharCode(...bytes.subarray(start, start + CHUNK));
  }
  return binary;
}

/** Lenient UTF-8: bytes that are not UTF-8 become U+FFFD. */
export function decodeUtf8(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}

/**
 * Strict UTF-8 that also refuses control characters other than tab, CR, LF and form feed:
 * undefined means the bytes are binary, not text.
 */
export function decodeTextBytes(bytes: Uint8Array): string | undefined {
  try {
    const text = strictUtf8.decode(bytes);
    // deno-lint-ignore no-control-regex -- control characters are what marks bytes as binary
    return /[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(text) ? undefined : text;
  } catch {
    return undefined;
  }
}

export function encodeUtf8(text: string): Uint8Array {
  return encoder.encode(text);
}
