// Named log events as one JSON line each. Callers pass only non-secret fields: never tokens or
// e-mail addresses.

export function logEvent(event: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ component: 'whoami', event, ...fields }));
}
