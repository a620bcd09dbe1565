// Realtime test helpers: signed-up supabase-js clients, subscribing as an app does, and a raw
// Phoenix vsn 2.0.0 socket for what realtime-js does not show (frames the client drops).
import type { RealtimeChannel, SupabaseClient } from '@supabase/supabase-js';
import WebSocket from 'ws';
import type { RunningStack } from '../../src/index.ts';
import { clientFor, uniqueEmail } from './fixture-stack.ts';
import { until } from './until.ts';

export async function signedInClient(
  stack: RunningStack,
): Promise<{ client: SupabaseClient; id: string }> {
  const client = clientFor(stack);
  const { data, error } = await client.auth.signUp({
    email: uniqueEmail('rt'),
    password: 'rt-password-1',
  });
  if (error || !data.user) throw new Error(`sign-up failed: ${error?.message}`);
  return { client, id: data.user.id };
}

/** Resolves at SUBSCRIBED; rejects on CHANNEL_ERROR or TIMED_OUT. */
export function subscribe(channel: RealtimeChannel): Promise<void> {
  return new Promise((resolve, reject) => {
    channel.subscribe((status, error) => {
      if (status === 'SUBSCRIBED') resolve();
      else if (status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') {
        reject(new Error(`${status}: ${error?.message}`));
      }
    });
  });
}

/** The join's error reason, or 'SUBSCRIBED' if it was accepted. */
export function subscribeError(channel: RealtimeChannel): Promise<string> {
  return new Promise((resolve) => {
    channel.subscribe((status, error) => {
      if (status === 'CHANNEL_ERROR') resolve(error?.message ?? '');
      if (status === 'SUBSCRIBED') resolve('SUBSCRIBED');
    });
  });
}

/** Lets the service poll and fan out a few times, for "receives nothing" checks. */
export const settle = (ms = 400) => new Promise((resolve) => setTimeout(resolve, ms));

export type RawFrame = [string | null, string | null, string, string, Record<string, unknown>];

/** A raw vsn 2.0.0 socket that records every text frame it receives. */
export async function openRawSocket(
  stack: RunningStack,
): Promise<{ socket: WebSocket; frames: RawFrame[] }> {
  const socket = new WebSocket(
    `${stack.apiUrl.replace('http', 'ws')}/realtime/v1/websocket?apikey=${stack.keys.anonKey}&vsn=2.0.0`,
  );
  const frames: RawFrame[] = [];
  socket.on('message', (data, isBinary) => {
    if (!isBinary) frames.push(JSON.parse(data.toString()) as RawFrame);
  });
  await new Promise((resolve, reject) => {
    socket.once('open', resolve);
    socket.once('error', reject);
  });
  return { socket, frames };
}

/** Sends a push and waits for its phx_reply. */
export async function push(
  raw: { socket: WebSocket; frames: RawFrame[] },
  frame: RawFrame,
): Promise<Record<string, unknown>> {
  raw.socket.send(JSON.stringify(frame));
  const reply = await until(() =>
    raw.frames.find((candidate) => candidate[3] === 'phx_reply' && candidate[1] === frame[1]),
  );
  return reply[4];
}
