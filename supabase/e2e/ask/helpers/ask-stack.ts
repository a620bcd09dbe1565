// A throwaway stack of this repo for the assistant tests (temp data dir, free loopback ports)
// whose ask function talks to a Responses API double on loopback (the stub, which can forward
// to aimock), with a short ping interval; plus the calls a client makes: POST /ask blocking or
// as SSE (parsed frame by frame with arrival times), and POST /ask/confirm.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { type RunningStack, startStack } from '@capture/stack';
import { LLMock } from '@copilotkit/aimock';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pino from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { ResponsesStub } from './responses-stub.ts';

export const DEMO = {
  admin: { email: 'admin@demo.local', password: 'demo-admin-pass' },
  member: { email: 'user@demo.local', password: 'demo-user-pass' },
  viewer: { email: 'viewer@demo.local', password: 'demo-viewer-pass' },
} as const;

/** supabase/seed.sql: the member's Pixel 8, the admin's Lab iPad. */
export const MEMBER_DEVICE = 'd0000000-0000-4000-8000-000000000001';
export const ADMIN_DEVICE = 'd0000000-0000-4000-8000-000000000004';
export const PING_MS = 150;
/** The dashboard origin answers link rows to (ASSISTANT_DASHBOARD_URL). */
export const DASHBOARD_URL = 'https://dashboard.test';

export interface AskStack {
  stack: RunningStack;
  /** The ask function's own log events (log.ts), parsed, oldest first. */
  askLogs: Array<Record<string, unknown>>;
  /** Every line the stack and its functions logged. */
  lines: string[];
  stub: ResponsesStub;
  aimock: LLMock;
  service: SupabaseClient;
  askUrl: string;
}

export function useAskStack(secrets: Record<string, string> = {}): () => AskStack {
  let fixture: AskStack | undefined;
  let dataDir = '';
  beforeAll(async () => {
    const stub = await new ResponsesStub().start();
    const aimock = new LLMock({ port: 0, host: '127.0.0.1' });
    await aimock.start();
    dataDir = mkdtempSync(join(tmpdir(), 'assistant-test-'));
    const lines: string[] = [];
    const askLogs: Array<Record<string, unknown>> = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        const line = String(chunk);
        lines.push(line);
        const entry = JSON.parse(line) as { component?: string; msg?: string };
        if (entry.component === 'fn:ask' && entry.msg?.startsWith('{"component":"ask"')) {
          askLogs.push(JSON.parse(entry.msg) as Record<string, unknown>);
        }
        done();
      },
    });
    const stack = await startStack({
      dataDir,
      ports: 'free',
      ephemeral: true,
      proxy: false,
      logger: pino({ level: 'info' }, sink),
      toolServerSettings: { registrationsPerHour: 10_000 },
      functionSecrets: {
        OPENAI_API_KEY: 'test-provider-key',
        OPENAI_BASE_URL: `${stub.url}/v1`,
        ASSISTANT_PING_MS: String(PING_MS),
        ASSISTANT_MODEL_RETRIES: '0',
        ASSISTANT_WEB_SEARCH: '0',
        ASSISTANT_RATE_PER_MINUTE: '1000',
        ASSISTANT_DASHBOARD_URL: DASHBOARD_URL,
        ...secrets,
      },
    });
    const service = createClient(stack.apiUrl, stack.keys.secretKey, {
      auth: { persistSession: false, autoRefreshToken: false },
    });
    fixture = {
      stack,
      askLogs,
      lines,
      stub,
      aimock,
      service,
      askUrl: `${stack.apiUrl}/functions/v1/ask`,
    };
  });
  afterAll(async () => {
    await fixture?.stack.stop();
    await fixture?.stub.stop();
    await fixture?.aimock.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });
  return () => {
    if (!fixture) throw new Error('the assistant stack is not started');
    return fixture;
  };
}

export async function signIn(stack: RunningStack, login: { email: string; password: string }) {
  const response = await fetch(`${stack.apiUrl}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: stack.keys.publishableKey, 'content-type': 'application/json' },
    body: JSON.stringify(login),
  });
  const body = (await response.json()) as { access_token?: string };
  if (!body.access_token) throw new Error(`sign-in of ${login.email} failed: ${response.status}`);
  return body.access_token;
}

export function postAsk(
  url: string,
  token: string | undefined,
  body: unknown,
  options: { stream?: boolean; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      'content-type': 'application/json',
      accept: options.stream ? 'text/event-stream' : 'application/json',
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: options.signal,
  });
}

export interface Frame {
  /** 'comment' for `: ping` frames. */
  event: string;
  data: unknown;
  comment?: string;
  at: number;
}

/** Reads an SSE body frame by frame; `onFrame` may abort the request. */
export async function readFrames(
  response: Response,
  onFrame: (frame: Frame, frames: Frame[]) => void = () => {},
): Promise<Frame[]> {
  const frames: Frame[] = [];
  const decoder = new TextDecoder();
  let buffer = '';
  const reader = response.body?.getReader();
  if (!reader) return frames;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let split = buffer.indexOf('\n\n');
      while (split >= 0) {
        const block = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        split = buffer.indexOf('\n\n');
        const frame = parseFrame(block);
        frames.push(frame);
        onFrame(frame, frames);
      }
    }
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
  }
  return frames;
}

function parseFrame(block: string): Frame {
  let event = 'message';
  let data = '';
  let comment: string | undefined;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) comment = line.slice(1).trim();
    else if (line.startsWith('event: ')) event = line.slice(7);
    else if (line.startsWith('data: ')) data += line.slice(6);
  }
  if (comment !== undefined && data === '') {
    return { event: 'comment', data: null, comment, at: Date.now() };
  }
  return { event, data: JSON.parse(data), at: Date.now() };
}

/** The events without comment frames. */
export const eventsOf = (frames: Frame[]) => frames.filter((frame) => frame.event !== 'comment');
