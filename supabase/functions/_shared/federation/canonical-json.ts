// The canonical form the HMAC mode signs (000 §4.1): JSON with object keys sorted and undefined
// values dropped, no whitespace.

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError('canonicalJson: value has no JSON form');
    return text;
  }
  if (Array.isArray(value)) {
    // JSON.stringify writes undefined array slots as null; keep that rule.
    return `[${
      value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')
    }]`;
  }
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, item]) => item !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${
    entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')
  }}`;
}
