// One canonical form for partner e-mails (000 §4.5; reference A6): trimmed, ASCII only, lower
// case. Non-ASCII addresses (Kelvin sign, dotless i, fullwidth letters) are not folded onto an
// ASCII account: they are unusable for matching and the user gets a synthetic address.

const ADDRESS = /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/;

/** The normalised address, or undefined when the address cannot be matched safely. */
export function normalizeEmail(raw: string | undefined | null): string | undefined {
  if (typeof raw !== 'string') return undefined;
  const trimmed = raw.replace(/^[ \t]+|[ \t]+$/g, '');
  if (trimmed.length > 254 || !ADDRESS.test(trimmed)) return undefined;
  return trimmed.toLowerCase();
}

/** RFC 2606 reserves .invalid: nothing can ever be delivered to a synthetic address. */
export function syntheticEmail(clientId: string, uniquePart: string): string {
  return `fed.${clientId}.${uniquePart}@federated.invalid`;
}
