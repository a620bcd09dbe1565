// The tool server's side of the shared redaction module (one module, imported by this Node
// service and by the assistant's Deno function alike): captured payloads and URLs leave the tool
// server with secrets replaced by stable placeholders. The placeholder key is derived from the
// project's JWT secret, so placeholders stay the same across instances and restarts.
import { createHash } from 'node:crypto';
import { createRedactor as createSharedRedactor } from '../../../../supabase/functions/_shared/redaction.ts';

export type Redact = (value: unknown) => Promise<unknown>;

export function createRedactor(jwtSecret: string): Redact {
  const key = new Uint8Array(
    createHash('sha256').update(`redaction-placeholders|${jwtSecret}`).digest(),
  );
  const redactor = createSharedRedactor({ key });
  return (value) =>
    typeof value === 'string' ? redactor.redactText(value) : redactor.redactCapture(value);
}
