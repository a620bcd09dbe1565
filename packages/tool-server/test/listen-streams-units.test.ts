// Unit tests of the 2025 GET listen streams (docs/tool-server.md "Listen streams"), on a frozen
// clock: how many one token and one account hold, which stream makes room for a new one and what
// it is told, and one liveness check per token at each keep-alive.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  ListenStreams,
  REPLACED_RETRY_MS,
  STREAMS_PER_TOKEN,
  STREAMS_PER_USER,
} from '../src/mcp/listen-streams.ts';

beforeEach(() => {
  // setImmediate stays real: settle() lets the readers below take what was written.
  vi.useFakeTimers({
    toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
  });
});

afterEach(() => {
  vi.useRealTimers();
});

const settle = () => new Promise((resolve) => setImmediate(resolve));

interface Read {
  status: number;
  text: string;
  ended: boolean;
}

/** Opens a stream for `token` of `user` and keeps reading it. */
function openAs(streams: ListenStreams, token: string, user = 'user-1'): Read {
  const expiresAt = Math.floor(Date.now() / 1000) + 3_600;
  const response = streams.open({ token, user }, expiresAt, {});
  const read: Read = { status: response.status, text: '', ended: false };
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  void (async () => {
    for (;;) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      read.text += decoder.decode(chunk.value, { stream: true });
    }
    read.ended = true;
  })();
  return read;
}

describe('listen streams', () => {
  it('keeps five streams of one token open, as five apps behind one mcp-remote token need', async () => {
    const streams = new ListenStreams(async () => true);
    const apps = Array.from({ length: 5 }, () => openAs(streams, 'token-a'));
    streams.broadcast('notifications/tools/list_changed');
    await settle();
    expect(apps.map((app) => app.status)).toEqual([200, 200, 200, 200, 200]);
    for (const app of apps) {
      expect(app.ended).toBe(false);
      expect(app.text).toContain('"method":"notifications/tools/list_changed"');
    }
    streams.closeAll();
  });

  it(`never refuses a stream past ${STREAMS_PER_TOKEN} per token: it closes the oldest, telling it when to reconnect`, async () => {
    const streams = new ListenStreams(async () => true);
    const opened = Array.from({ length: STREAMS_PER_TOKEN + 3 }, () => openAs(streams, 'token-a'));
    const other = openAs(streams, 'token-b');
    await settle();
    expect(opened.every((read) => read.status === 200)).toBe(true);
    expect(opened.map((read) => read.ended)).toEqual([
      ...Array(3).fill(true),
      ...Array(STREAMS_PER_TOKEN).fill(false),
    ]);
    for (const closed of opened.slice(0, 3)) {
      expect(closed.text).toContain(`retry: ${REPLACED_RETRY_MS}\n`);
      expect(closed.text).toContain(`more than ${STREAMS_PER_TOKEN} listen streams`);
    }
    expect(streams.count('token-a')).toBe(STREAMS_PER_TOKEN);
    expect(other.ended).toBe(false);
    streams.closeAll();
  });

  it(`holds at most ${STREAMS_PER_USER} streams per account across its tokens, closing its oldest`, async () => {
    const streams = new ListenStreams(async () => true);
    const tokens = Array.from({ length: 3 }, (_, index) => `token-${index}`);
    const opened = tokens.flatMap((token) =>
      Array.from({ length: STREAMS_PER_TOKEN }, () => openAs(streams, token)),
    );
    const stranger = openAs(streams, 'token-of-another', 'user-2');
    await settle();
    // 96 opened, 64 kept: the first token's 32 went first.
    expect(streams.count()).toBe(STREAMS_PER_USER + 1);
    expect(opened.filter((read) => read.ended)).toHaveLength(
      3 * STREAMS_PER_TOKEN - STREAMS_PER_USER,
    );
    expect(opened.slice(0, STREAMS_PER_TOKEN).every((read) => read.ended)).toBe(true);
    expect(opened.at(-1)?.text).not.toContain('retry:');
    expect(opened[0]?.text).toContain(`more than ${STREAMS_PER_USER} listen streams`);
    expect(stranger.ended).toBe(false);
    streams.closeAll();
  });

  it('checks each token once per keep-alive however many streams it holds, and ends them all when it is revoked', async () => {
    const checked: string[] = [];
    let revoked = false;
    const streams = new ListenStreams(async (token) => {
      checked.push(token);
      return !(revoked && token === 'token-a');
    });
    const held = Array.from({ length: 10 }, () => openAs(streams, 'token-a'));
    const other = openAs(streams, 'token-b');
    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    expect(checked.sort()).toEqual(['token-a', 'token-b']);
    expect(held.every((read) => read.text.includes(': ping'))).toBe(true);
    revoked = true;
    await vi.advanceTimersByTimeAsync(15_000);
    await settle();
    expect(held.every((read) => read.ended)).toBe(true);
    expect(other.ended).toBe(false);
    streams.closeAll();
    await settle();
    expect(other.ended).toBe(true);
  });

  it("ends a stream at its token's expiry", async () => {
    const streams = new ListenStreams(async () => true);
    const read = openAs(streams, 'token-a');
    await vi.advanceTimersByTimeAsync(3_600_000);
    await settle();
    expect(read.ended).toBe(true);
    expect(streams.count()).toBe(0);
  });
});
