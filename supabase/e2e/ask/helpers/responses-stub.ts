// A small stand-in for an OpenAI-compatible Responses API on a loopback socket: POST
// /v1/responses answered with the exact SSE event shapes of the API (event + data lines, the
// openai SDK parses them unchanged), scripted turn by turn, or forwarded to another double
// (aimock). It records every request body and whether the client went away before the end, so
// tests can see an abort reach the provider.
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StubRequest {
  body: Record<string, unknown>;
  /** The raw body text, as the provider received it. */
  text: string;
  /** The client closed the connection before the stub finished answering. */
  closedEarly: boolean;
  finished: boolean;
}

export interface StubReply {
  /** Response events without sequence_number (added here). */
  events?: Array<Record<string, unknown>>;
  /** Pause before each event. */
  delayMs?: number;
  /** An HTTP error instead of a stream. */
  status?: number;
  /** Drop the connection after this many events (a mid-stream disconnect). */
  disconnectAfter?: number;
}

export type Turn = (request: StubRequest, index: number) => StubReply | Promise<StubReply>;

let counter = 0;
function nextId(prefix: string): string {
  counter += 1;
  return `${prefix}_${Date.now().toString(36)}${counter}`;
}

function responseObject(status: string, output: unknown[]) {
  return {
    id: nextId('resp'),
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    model: 'stub-model',
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    error: null,
    incomplete_details: null,
    usage: null,
  };
}

export interface Citation {
  url: string;
  title: string;
}

/** A message answer streamed in chunks, with url_citation annotations if given. */
export function textTurn(
  text: string,
  options: { chunks?: string[]; citations?: Citation[] } = {},
) {
  const id = nextId('msg');
  const chunks = options.chunks ?? text.match(/[\s\S]{1,12}/g) ?? [];
  const annotations = (options.citations ?? []).map((citation) => ({
    type: 'url_citation',
    url: citation.url,
    title: citation.title,
    start_index: 0,
    end_index: 1,
  }));
  const place = { item_id: id, output_index: 0, content_index: 0 };
  const item = {
    type: 'message',
    id,
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text, annotations, logprobs: [] }],
  };
  return [
    { type: 'response.created', response: responseObject('in_progress', []) },
    {
      type: 'response.output_item.added',
      output_index: 0,
      item: { ...item, status: 'in_progress', content: [] },
    },
    {
      type: 'response.content_part.added',
      ...place,
      part: { type: 'output_text', text: '', annotations: [] },
    },
    ...chunks.map((delta) => ({
      type: 'response.output_text.delta',
      ...place,
      delta,
      logprobs: [],
    })),
    ...annotations.map((annotation, index) => ({
      type: 'response.output_text.annotation.added',
      ...place,
      annotation_index: index,
      annotation,
    })),
    { type: 'response.output_text.done', ...place, text, logprobs: [] },
    { type: 'response.content_part.done', ...place, part: item.content[0] },
    { type: 'response.output_item.done', output_index: 0, item },
    { type: 'response.completed', response: responseObject('completed', [item]) },
  ];
}

export interface StubCall {
  name: string;
  arguments: Record<string, unknown>;
  call_id?: string;
}

/** Function calls, as the API streams them. */
export function toolTurn(calls: StubCall[]) {
  const items = calls.map((call) => ({
    type: 'function_call',
    id: nextId('fc'),
    call_id: call.call_id ?? nextId('call'),
    name: call.name,
    arguments: JSON.stringify(call.arguments),
    status: 'completed',
  }));
  return [
    { type: 'response.created', response: responseObject('in_progress', []) },
    ...items.flatMap((item, index) => [
      {
        type: 'response.output_item.added',
        output_index: index,
        item: { ...item, arguments: '', status: 'in_progress' },
      },
      {
        type: 'response.function_call_arguments.delta',
        item_id: item.id,
        output_index: index,
        delta: item.arguments,
      },
      {
        type: 'response.function_call_arguments.done',
        item_id: item.id,
        output_index: index,
        arguments: item.arguments,
      },
      { type: 'response.output_item.done', output_index: index, item },
    ]),
    { type: 'response.completed', response: responseObject('completed', items) },
  ];
}

/** The fenced tool outputs the request carries (function_call_output items), in order. */
export function toolOutputsOf(request: StubRequest): string[] {
  const input = request.body.input;
  return Array.isArray(input)
    ? input
        .filter((item) => (item as { type?: string }).type === 'function_call_output')
        .map((item) => String((item as { output?: unknown }).output))
    : [];
}

export class ResponsesStub {
  readonly requests: StubRequest[] = [];
  private readonly turns: Turn[] = [];
  private server: Server | undefined;
  /** Requests no scripted turn answers go here (aimock), or get a plain text answer. */
  forwardTo: string | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((request, response) => {
      this.handle(request, response).catch(() => response.destroy());
    });
    this.server.listen(0, '127.0.0.1');
    await once(this.server, 'listening');
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** Scripts the next requests' answers, in order. */
  enqueue(...turns: Turn[]): void {
    this.turns.push(...turns);
  }

  reset(): void {
    this.turns.length = 0;
    this.requests.length = 0;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const record: StubRequest = {
      body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
      text,
      closedEarly: false,
      finished: false,
    };
    this.requests.push(record);
    response.on('close', () => {
      if (!response.writableFinished) record.closedEarly = true;
    });
    const turn = this.turns.shift();
    if (!turn && this.forwardTo) return this.forward(request, text, response, record);
    const reply: StubReply = turn
      ? await turn(record, this.requests.length - 1)
      : { events: textTurn('stub answer') };
    if (reply.status) {
      response.writeHead(reply.status, {
        'content-type': 'application/json',
        ...(reply.status === 429 ? { 'retry-after': '1' } : {}),
      });
      response.end(JSON.stringify({ error: { message: 'stub failure', type: 'server_error' } }));
      record.finished = true;
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const events = reply.events ?? [];
    for (const [index, event] of events.entries()) {
      if (reply.disconnectAfter !== undefined && index >= reply.disconnectAfter) {
        response.destroy();
        return;
      }
      if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
      if (response.destroyed) return;
      const data = { ...event, sequence_number: index };
      response.write(`event: ${String(event.type)}\ndata: ${JSON.stringify(data)}\n\n`);
    }
    response.end();
    record.finished = true;
  }

  private async forward(
    request: IncomingMessage,
    text: string,
    response: ServerResponse,
    record: StubRequest,
  ): Promise<void> {
    const upstream = await fetch(`${this.forwardTo}${request.url}`, {
      method: request.method,
      headers: {
        'content-type': 'application/json',
        authorization: String(request.headers.authorization ?? ''),
      },
      body: text,
    });
    response.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
    });
    if (upstream.body) {
      for await (const chunk of upstream.body) {
        if (response.destroyed) return;
        response.write(chunk);
      }
    }
    response.end();
    record.finished = true;
  }
}
