// What happens between a proxy's first load and its first LISTEN: the breakpoints are
// loaded by start(), and only then does the notification connection listen. A pattern written,
// a held row resumed or a held row deleted in that window sends a NOTIFY nobody hears; the first
// LISTEN connection reloads and re-checks instead, and DatabaseEvents.start() waits for it, so
// all three are applied once start resolves. No timing: each change is made, and committed,
// strictly between the two starts.
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../packages/stack/test/helpers/until.ts';
import { Breakpoints } from '../src/breakpoints/breakpoints.ts';
import { compileBreakpoints } from '../src/breakpoints/patterns.ts';
import { DatabaseEvents } from '../src/database-events.ts';
import { createUser } from './helpers/bundles.ts';
import { type CaptureDatabase, startCaptureDatabase } from './helpers/capture-database.ts';

const logger = pino({ level: process.env.STACK_LOG_LEVEL ?? 'silent' });
const OWNER = 'ad000000-0000-4000-8000-0000000e0001';
const DEVICE = 'de000000-0000-4000-8000-0000000e0001';
const INSTANCE = 'bp-listen-race';

let database: CaptureDatabase;
let pool: pg.Pool;

beforeAll(async () => {
  database = await startCaptureDatabase(logger);
  pool = new pg.Pool({ connectionString: database.url, max: 4 });
  pool.on('error', () => undefined);
  await createUser(pool, OWNER, 'owner@listen.test');
  await database.query(
    `insert into public.devices (uuid, name, owner_user_id) values ($1, 'listen phone', $2)`,
    [DEVICE, OWNER],
  );
}, 60_000);

afterAll(async () => {
  await pool?.end();
  await database?.stop();
});

describe('changes between the first load and the first LISTEN', () => {
  it('are applied once events.start() resolves: a new pattern, a resumed row, a deleted row', async () => {
    const events = new DatabaseEvents(pool, logger);
    const breakpoints = new Breakpoints({ pool, events, instanceId: INSTANCE, logger });
    try {
      await breakpoints.start();
      const target = { method: 'GET', url: new URL('http://127.0.0.1/race/x') };
      expect(breakpoints.match(DEVICE, 'request', target)).toBeUndefined();

      // Two exchanges held before anyone listens (their rows are written at once).
      const [pattern] = compileBreakpoints(['127.0.0.1/held/*']).patterns;
      const hold = (path: string) =>
        breakpoints.hold({
          deviceUuid: DEVICE,
          requestId: path,
          phase: 'request',
          pattern: pattern as NonNullable<typeof pattern>,
          method: 'GET',
          url: `http://127.0.0.1${path}`,
          message: { method: 'GET', path },
          signal: new AbortController().signal,
        });
      const resumedHold = hold('/held/resumed');
      const deletedHold = hold('/held/deleted');
      const rows = await until(async () => {
        const found = await database.query<{ id: string; url: string }>(
          `select id, url from public.breakpoint_events where proxy_instance = $1 order by url`,
          [INSTANCE],
        );
        return found.length === 2 && breakpoints.heldCount === 2 ? found : undefined;
      });
      const byPath = new Map(rows.map((row) => [new URL(row.url).pathname, row.id]));

      // The window: each NOTIFY goes out with nobody listening.
      await database.query(
        `update public.settings_global set data = data || '{"breakpoints": ["127.0.0.1/race/*"]}'`,
      );
      await database.query(
        `update public.breakpoint_events set resolution = 'continue' where id = $1`,
        [byPath.get('/held/resumed')],
      );
      await database.query('delete from public.breakpoint_events where id = $1', [
        byPath.get('/held/deleted'),
      ]);
      expect(breakpoints.match(DEVICE, 'request', target)).toBeUndefined();
      expect(breakpoints.heldCount).toBe(2);

      await events.start();
      // Regression (2e58e49): before it, the first connection reloaded nothing, so the pattern
      // waited for the next settings change and both clients for the 5 min hold limit.
      expect(breakpoints.match(DEVICE, 'request', target)?.source).toBe('127.0.0.1/race/*');
      expect(breakpoints.heldCount).toBe(0);
      expect((await resumedHold).outcome).toEqual({ resolution: 'continue' });
      expect((await deletedHold).outcome).toEqual({ resolution: 'abort', eventDeleted: true });
      expect((await deletedHold).record).toMatchObject({
        eventId: Number(byPath.get('/held/deleted')),
        resolution: 'abort',
        eventDeleted: true,
      });
    } finally {
      await events.stop();
      await breakpoints.stop();
    }
  });
});
