// The parts of worker processes that need no daemon (docs/proxy.md "Worker processes"): the
// spools of an earlier run gathered into the daemon's own, so each capture is replayed once, and
// the set-up pages' device activity relayed to sibling workers at once for news, at most once a
// second when only the last-seen time moved.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Capture } from '../src/capture/capture.ts';
import { DeviceActivity, type DeviceSetupStatus } from '../src/setup/device-activity.ts';
import { gatherWorkerSpools, workerSpoolDir } from '../src/workers/worker-spools.ts';

const DEVICE = 'de000000-0000-4000-8000-0000000f0001';

describe('worker spools', () => {
  let spool: string;
  afterEach(() => rmSync(spool, { recursive: true, force: true }));

  it('keeps worker 0 in the daemon spool and gives each other worker its own folder', () => {
    spool = mkdtempSync(join(tmpdir(), 'spool-'));
    expect(workerSpoolDir(spool, 0)).toBe(spool);
    expect(workerSpoolDir(spool, 3)).toBe(join(spool, 'worker-3'));
  });

  it('moves every worker file into the daemon spool once, after what it already held', () => {
    spool = mkdtempSync(join(tmpdir(), 'spool-'));
    writeFileSync(join(spool, 'captures.jsonl'), '{"n":0}\n');
    for (const [worker, file, lines] of [
      [1, 'captures.jsonl', '{"n":1}\n{"n":2}\n'],
      [1, 'captures.jsonl.replaying', '{"n":3}\n'],
      [5, 'captures.jsonl', '{"n":4}\n\n'],
    ] as const) {
      mkdirSync(join(spool, `worker-${worker}`), { recursive: true });
      writeFileSync(join(spool, `worker-${worker}`, file), lines);
    }
    // Not a worker's folder: left alone.
    mkdirSync(join(spool, 'other'));
    writeFileSync(join(spool, 'other', 'captures.jsonl'), '{"n":9}\n');

    expect(gatherWorkerSpools(spool)).toBe(4);
    const gathered = readFileSync(join(spool, 'captures.jsonl'), 'utf8').trim().split('\n');
    expect(gathered[0]).toBe('{"n":0}');
    expect(gathered.map((line) => (JSON.parse(line) as { n: number }).n).sort()).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(existsSync(join(spool, 'worker-1', 'captures.jsonl'))).toBe(false);
    expect(existsSync(join(spool, 'worker-1', 'captures.jsonl.replaying'))).toBe(false);
    expect(existsSync(join(spool, 'other', 'captures.jsonl'))).toBe(true);
    // A second start finds nothing more to move.
    expect(gatherWorkerSpools(spool)).toBe(0);
  });

  it('does nothing without a spool folder', () => {
    spool = join(tmpdir(), `no-spool-${process.pid}`);
    expect(gatherWorkerSpools(spool)).toBe(0);
  });
});

describe('device activity relayed to sibling workers', () => {
  afterEach(() => vi.useRealTimers());

  const capture = (kind: Capture['kind'], intercepted: boolean): Capture => ({
    request_id: `r-${Math.random()}`,
    ts: new Date().toISOString(),
    kind,
    device_uuid: DEVICE,
    payload: { attribution: { rule: 'port', device_uuid: DEVICE }, tls: { intercepted } },
  });

  it('relays news at once and a later last-seen time at most once a second', () => {
    vi.useFakeTimers();
    const relayed: DeviceSetupStatus[] = [];
    const activity = new DeviceActivity((_, status) => relayed.push(status));
    activity.observe(capture('http', false));
    expect(relayed).toHaveLength(1);
    expect(relayed[0]).toMatchObject({ seen: true, connection: 'http' });
    // The same again within the second: the page's news is unchanged, nothing is sent.
    vi.advanceTimersByTime(200);
    activity.observe(capture('http', false));
    expect(relayed).toHaveLength(1);
    // A new kind of connection is news: sent at once.
    activity.observe(capture('http', true));
    expect(relayed).toHaveLength(2);
    expect(relayed[1]).toMatchObject({ connection: 'https' });
    // A second later, the last-seen time goes too.
    vi.advanceTimersByTime(1_000);
    activity.observe(capture('http', true));
    expect(relayed).toHaveLength(3);
  });

  it("takes a sibling's status as it is, tells its watchers, and relays nothing back", () => {
    const relayed: DeviceSetupStatus[] = [];
    const activity = new DeviceActivity((_, status) => relayed.push(status));
    const watched: DeviceSetupStatus[] = [];
    activity.watch(DEVICE, (status) => watched.push(status));
    const sibling: DeviceSetupStatus = {
      seen: true,
      lastSeenAt: '2026-11-28T12:00:00.000Z',
      connection: 'tunnel',
      listener: 'shared-port',
      caProblem: null,
    };
    activity.adopt(DEVICE, sibling);
    expect(activity.status(DEVICE)).toEqual(sibling);
    expect(watched).toEqual([sibling]);
    expect(relayed).toHaveLength(0);
  });
});
