// The status service's parts without a stack: the roll-up rule of 002 §2.2, host samples that
// satisfy the shared schema, and each probe kind against real loopback sockets.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HostSampler } from '../src/host-metrics.ts';
import { runProbe } from '../src/probes.ts';
import { StatusSnapshot } from '../src/snapshot-schemas.ts';
import { rollUpOverall } from '../src/status-service.ts';

const component = (key: string, up: boolean, unitState = up ? 'active' : 'failed') => ({
  key,
  label: key,
  probe: { up, httpStatus: up ? 200 : 0, latencyMs: 1 },
  unitState,
});

describe('rollUpOverall', () => {
  it.each([
    [
      'ok when every component is up and active',
      [component('postgres', true), component('rest', true)],
      'ok',
    ],
    [
      'degraded when one is down',
      [component('postgres', true), component('rest', false)],
      'degraded',
    ],
    [
      'degraded when one is up but its unit is not active',
      [component('postgres', true), component('rest', true, 'reloading')],
      'degraded',
    ],
    [
      'down when the database is down',
      [component('postgres', false), component('rest', true)],
      'down',
    ],
    [
      'down when every component is down',
      [component('rest', false), component('auth', false)],
      'down',
    ],
  ])('is %s', (_case, components, expected) => {
    expect(rollUpOverall(components)).toBe(expected);
  });
});

describe('HostSampler', () => {
  it('yields the host block of the status schema', () => {
    const sampler = new HostSampler();
    const host = sampler.sample();
    const parsed = StatusSnapshot.shape.host.parse(host);
    expect(parsed.mem.usedMb).toBeLessThanOrEqual(parsed.mem.totalMb);
    expect(parsed.cpu).toBeGreaterThanOrEqual(0);
    expect(parsed.cpu).toBeLessThanOrEqual(1);
  });
});

describe('probes', () => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((request, response) => {
      response.writeHead(request.url === '/broken' ? 503 : 200);
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('calls a component up when it answers below 500 and down on a server error', async () => {
    const up = await runProbe({ kind: 'http', url: `http://127.0.0.1:${port}/ok` }, 1_000);
    expect(up).toMatchObject({ up: true, httpStatus: 200 });
    const broken = await runProbe({ kind: 'http', url: `http://127.0.0.1:${port}/broken` }, 1_000);
    expect(broken).toMatchObject({ up: false, httpStatus: 503 });
  });

  it('calls a closed port down with status 0, for every probe kind', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    for (const probe of [
      { kind: 'http' as const, url: `http://127.0.0.1:${closed}/` },
      { kind: 'websocket' as const, url: `ws://127.0.0.1:${closed}/` },
      { kind: 'postgres' as const, url: `postgresql://postgres:x@127.0.0.1:${closed}/postgres` },
    ]) {
      expect(await runProbe(probe, 1_000)).toMatchObject({ up: false, httpStatus: 0 });
    }
  });
});
