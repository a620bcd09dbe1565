// Certificate serial numbers for the CA and its leaves. RFC 5280 §4.1.2.2 wants a positive
// INTEGER, unique per issuer; DER (X.690 §8.3.2) wants it minimally encoded. node-forge writes
// the hex it is given and strips at most one leading zero byte, so random bytes starting
// 00 00 0x.. became a padded INTEGER that OpenSSL refuses ("illegal padding"), about one
// certificate in 65,536. Fixing the top two bits to 01 keeps every serial exactly 16 bytes,
// positive and minimal, with 126 random bits (CA/Browser Forum asks for at least 64).
import { randomBytes } from 'node:crypto';

const SERIAL_BYTES = 16;

/** Hex of a positive, minimally encoded, 16-byte serial drawn from `random`. */
export function certificateSerialNumber(random: Buffer = randomBytes(SERIAL_BYTES)): string {
  if (random.length !== SERIAL_BYTES) {
    throw new RangeError(`a serial needs ${SERIAL_BYTES} random bytes`);
  }
  const serial = Buffer.from(random);
  serial[0] = 0x40 | ((serial[0] as number) & 0x3f);
  return serial.toString('hex');
}
