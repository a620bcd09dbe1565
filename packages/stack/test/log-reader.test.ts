// `npm run stack -- logs [service] [--follow]` (docs/local-stack.md "Logs") on log files written by
// hand: every service's lines merged in time order, one service's alone, and --follow printing what
// is appended (a half-written line waits for its end) until it is stopped.
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { showLogs } from '../src/logging/log-reader.ts';
import { logsDir } from '../src/logging/stack-logger.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'stack-logs-test-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const line = (time: number, component: string, msg: string) =>
  `${JSON.stringify({ level: 30, time, component, msg })}\n`;

mkdirSync(logsDir(dataDir), { recursive: true });
writeFileSync(join(logsDir(dataDir), 'postgres.log'), line(3, 'postgres', 'third'));
writeFileSync(
  join(logsDir(dataDir), 'auth.log'),
  line(1, 'auth', 'first') + line(2, 'auth', 'second'),
);

async function collect(options: { service?: string; follow?: boolean; signal?: AbortSignal }) {
  const out: string[] = [];
  const done = showLogs({
    dataDir,
    service: options.service,
    follow: options.follow ?? false,
    colorize: false,
    write: (text) => out.push(text),
    signal: options.signal,
  });
  return { out, done };
}

describe('stack logs', () => {
  it("merges every service's lines in time order", async () => {
    const { out, done } = await collect({});
    await done;
    const text = out.join('');
    expect(text.indexOf('first')).toBeLessThan(text.indexOf('second'));
    expect(text.indexOf('second')).toBeLessThan(text.indexOf('third'));
    expect(text).not.toContain('{"level"');
  });

  it('shows one service alone', async () => {
    const { out, done } = await collect({ service: 'auth' });
    await done;
    expect(out.join('')).toContain('first');
    expect(out.join('')).not.toContain('third');
  });

  it('follows what is appended, a line once it is whole, until stopped', async () => {
    const controller = new AbortController();
    const { out, done } = await collect({
      service: 'postgres',
      follow: true,
      signal: controller.signal,
    });
    const seen = (word: string) => out.join('').includes(word);
    const waitFor = async (word: string) => {
      const deadline = Date.now() + 5_000;
      while (!seen(word) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      return seen(word);
    };
    expect(await waitFor('third')).toBe(true);
    const appended = line(4, 'postgres', 'fourth');
    appendFileSync(join(logsDir(dataDir), 'postgres.log'), appended.slice(0, 10));
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(seen('fourth')).toBe(false);
    appendFileSync(join(logsDir(dataDir), 'postgres.log'), appended.slice(10));
    expect(await waitFor('fourth')).toBe(true);
    controller.abort();
    await done;
  });
});
