// Named log events as one JSON line each. Callers pass only non-secret fields: never tokens,
// codes, verifiers, secrets or e-mail addresses.

export function logEvent(event: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ component: 'federation-broker', event, ...fields }));
}
