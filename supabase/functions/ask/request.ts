// The ask request (001 §2.3) validated with zod: `question` is the only required field (else 400
// bad_request, 001 §7); malformed `history` entries are dropped one by one (the turn degrades
// towards single-turn, never an error); `context`, `priorAnswer` and history are capped here.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';

/** The caps (docs/assistant.md): what a client may send the model through us. */
export const LIMITS = {
  /** The whole JSON body, read before parsing. */
  bodyBytes: 64 * 1024,
  questionChars: 4_000,
  /** 001 §2.3 "short note of what the user is viewing": longer notes are cut, not refused. */
  contextChars: 1_000,
  priorAnswerChars: 8_000,
  historyEntries: 20,
  historyEntryChars: 4_000,
} as const;

export interface HistoryTurn {
  role: 'user' | 'assistant';
  text: string;
}

export interface AskRequest {
  question: string;
  history: HistoryTurn[];
  context: string | undefined;
  priorAnswer: string | undefined;
}

export class BadRequest extends Error {
  readonly code = 'bad_request';
}

const historyTurn = z.object({
  role: z.enum(['user', 'assistant']),
  text: z.string().min(1),
});

const bodySchema = z.object({
  question: z
    .string({ error: 'question is required and must be a string' })
    .trim()
    .min(1, 'question must not be empty')
    .max(LIMITS.questionChars, `question is at most ${LIMITS.questionChars} characters`),
  history: z.unknown().optional(),
  context: z.unknown().optional(),
  priorAnswer: z.unknown().optional(),
});

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

function optionalText(value: unknown, max: number): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? cut(value.trim(), max) : undefined;
}

/** Valid turns only, the newest kept when there are too many. */
function historyOf(value: unknown): HistoryTurn[] {
  if (!Array.isArray(value)) return [];
  const turns: HistoryTurn[] = [];
  for (const entry of value) {
    const parsed = historyTurn.safeParse(entry);
    if (parsed.success) {
      turns.push({ role: parsed.data.role, text: cut(parsed.data.text, LIMITS.historyEntryChars) });
    }
  }
  return turns.slice(-LIMITS.historyEntries);
}

export function parseAskRequest(body: unknown): AskRequest {
  const parsed = bodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message = issue?.path[0] === 'question' || issue?.path.length === 0
      ? issue.message
      : 'the body must be a JSON object with a string question';
    throw new BadRequest(
      body && typeof body === 'object' && !Array.isArray(body)
        ? message
        : 'the body must be a JSON object with a string question',
    );
  }
  return {
    question: parsed.data.question,
    history: historyOf(parsed.data.history),
    context: optionalText(parsed.data.context, LIMITS.contextChars),
    priorAnswer: optionalText(parsed.data.priorAnswer, LIMITS.priorAnswerChars),
  };
}

/** The body as JSON, refusing more than LIMITS.bodyBytes without reading it all. */
export async function readJsonBody(request: Request): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? 'NaN');
  if (declared > LIMITS.bodyBytes) throw new BadRequest('the body is larger than 64 KiB');
  const reader = request.body?.getReader();
  if (!reader) throw new BadRequest('a JSON body is required');
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > LIMITS.bodyBytes) {
      await reader.cancel();
      throw new BadRequest('the body is larger than 64 KiB');
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new BadRequest('the body is not valid JSON');
  }
}
