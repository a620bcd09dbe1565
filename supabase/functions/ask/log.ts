// Named log events as one JSON line each. Callers pass only non-secret fields: never tokens,
// questions, answers or captured data.

export function logEvent(event: string, fields: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ component: 'ask', event, ...fields }));
}
