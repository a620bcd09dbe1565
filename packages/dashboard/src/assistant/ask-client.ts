// POST /functions/v1/ask with `Accept: text/event-stream` (docs/assistant.md): streams tool
// labels, text deltas, artifacts, and ends with `done` (the full answer, which replaces the
// deltas) or `error`. Stopping aborts the fetch, which the function sees as the client leaving.
import { SseParser } from './sse.ts';

/** An `artifact` event: the known fields of a proposal; the function may add others. */
export type AskArtifact = {
  type: string;
  action?: string;
  title?: string;
  confirmation?: string;
  confirm_url?: string;
  request_id?: number;
  tag_name?: string;
  [extra: string]: unknown;
};

export type AskHandlers = {
  onTool(label: string): void;
  onText(delta: string): void;
  onArtifact(artifact: AskArtifact): void;
  onDone(answer: string): void;
  onError(message: string): void;
};

export type AskRequest = {
  question: string;
  history: { role: 'user' | 'assistant'; text: string }[];
  context?: string;
};

export async function ask(
  options: { url: string; apiKey: string; accessToken: string; signal: AbortSignal },
  request: AskRequest,
  handlers: AskHandlers,
): Promise<void> {
  const response = await fetch(options.url, {
    method: 'POST',
    headers: {
      accept: 'text/event-stream',
      'content-type': 'application/json',
      authorization: `Bearer ${options.accessToken}`,
      apikey: options.apiKey,
    },
    body: JSON.stringify(request),
    signal: options.signal,
  });
  if (!response.ok || !response.body) {
    let message = `The assistant answered ${response.status}.`;
    try {
      const body = (await response.json()) as { message?: string };
      if (body.message) message = body.message;
    } catch {
      // Not JSON: the status says enough.
    }
    handlers.onError(message);
    return;
  }
  const parser = new SseParser();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const event of parser.push(value)) {
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(event.data) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (event.event === 'tool') handlers.onTool(String(data.label ?? ''));
      else if (event.event === 'text') handlers.onText(String(data.delta ?? ''));
      else if (event.event === 'artifact') handlers.onArtifact(data as AskArtifact);
      else if (event.event === 'done') handlers.onDone(String(data.answer ?? ''));
      else if (event.event === 'error')
        handlers.onError(String(data.message ?? 'The assistant failed.'));
    }
  }
}
