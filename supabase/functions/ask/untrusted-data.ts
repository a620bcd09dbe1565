// Fencing of untrusted input (OWASP LLM01, indirect prompt injection): captured traffic, tool
// results, web pages and client-sent history reach the model only inside boundaries named with a
// per-question random nonce, as Supabase's MCP server wraps SQL results in
// <untrusted-data-UUID>. Data cannot close a fence it cannot name; the instructions say that
// nothing inside one is ever an instruction.

export interface Fence {
  readonly tag: string;
  wrap(source: string, text: string): string;
}

export function createFence(): Fence {
  const nonce = Array.from(
    crypto.getRandomValues(new Uint8Array(12)),
    (byte) => byte.toString(16).padStart(2, '0'),
  ).join('');
  const tag = `untrusted-data-${nonce}`;
  return {
    tag,
    wrap(source, text) {
      // Defence in depth: a lookalike of any fence tag inside the data is defused.
      const defused = text.replace(/untrusted-data/gi, 'untrusted_data');
      return `<${tag} source="${source.replace(/[^a-z0-9_ -]/gi, '')}">\n${defused}\n</${tag}>`;
    },
  };
}
