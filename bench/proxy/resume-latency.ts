// Resume-to-release latency of breakpoints, for bench:proxy: `count` exchanges held at
// once on the running proxy (a device allocated from this host, a request pattern in its
// settings), then resumed one by one with a REST PATCH through stock PostgREST, as the dashboard
// does. For each: from sending the PATCH, and from PostgREST's answer, to the client's answer.

import { SignJWT } from 'jose';
import pg from 'pg';
import type { Logger } from 'pino';
import { ProxyAgent, request } from 'undici';
import { WELL_KNOWN_JWT_SECRET } from '../../packages/stack/src/keys.ts';
import { findFreePort, waitUntil } from '../../packages/stack/src/ports.ts';
import { startPostgrest } from '../../packages/stack/src/postgrest.ts';

export interface ResumeLatency {
  count: number;
  /** PATCH sent → client answered. */
  fromPatch: { p50: number; p95: number; max: number };
  /** PATCH answered (the row is resumed) → client answered. */
  fromCommit: { p50: number; p95: number; max: number };
  errors: number;
}

const OWNER = 'ad000000-0000-4000-8000-0000000be001';
const DEVICE = 'de000000-0000-4000-8000-0000000be001';

function percentiles(values: number[]): { p50: number; p95: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
  return { p50: at(0.5), p95: at(0.95), max: sorted.at(-1) ?? Number.NaN };
}

export async function measureResumeLatency(options: {
  databaseUrl: string;
  proxyPort: number;
  managementPort: number;
  originHttpPort: number;
  count: number;
  logger: Logger;
}): Promise<ResumeLatency> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 2 });
  const port = await findFreePort();
  const rest = await startPostgrest({
    dbPort: Number(new URL(options.databaseUrl).port),
    port,
    adminPort: await findFreePort(),
    jwtSecret: WELL_KNOWN_JWT_SECRET,
    schemas: ['public'],
    extraSearchPath: ['public', 'extensions'],
    maxRows: 1000,
    logger: options.logger,
  });
  const dispatcher = new ProxyAgent({
    uri: `http://127.0.0.1:${options.proxyPort}`,
    connections: options.count + 8,
  });
  try {
    await pool.query(
      `insert into auth.users (instance_id, id, aud, role, email)
       values ('00000000-0000-0000-0000-000000000000', $1, 'authenticated', 'authenticated',
               'bench@breakpoints.test')`,
      [OWNER],
    );
    const client = await pool.connect();
    let bundle: { bundle_id: string; password: string };
    try {
      await client.query('begin');
      await client.query(`select set_config('request.jwt.claims', $1, true)`, [
        JSON.stringify({ sub: OWNER, role: 'authenticated' }),
      ]);
      await client.query('set local role authenticated');
      bundle = (await client.query(`select public.issue_proxy_bundle('bench') as b`)).rows[0].b;
      await client.query('commit');
    } finally {
      client.release();
    }
    // The device allocates from this host, so the shared port attributes this traffic to it.
    const allocated = await fetch(`http://127.0.0.1:${options.managementPort}/allocate`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${bundle.bundle_id}:${bundle.password}`).toString('base64')}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ uuid: DEVICE, deviceName: 'bench phone' }),
    });
    if (!allocated.ok) throw new Error(`allocate failed: ${allocated.status}`);
    await pool.query(`insert into public.settings_device (device_uuid, data) values ($1, $2)`, [
      DEVICE,
      JSON.stringify({ breakpoints: [{ pattern: '127.0.0.1/held/*' }] }),
    ]);
    const token = await new SignJWT({ role: 'authenticated', aud: 'authenticated', sub: OWNER })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt()
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(WELL_KNOWN_JWT_SECRET));
    const patch = (id: string) =>
      fetch(`${rest.url}/breakpoint_events?id=eq.${id}`, {
        method: 'PATCH',
        headers: {
          authorization: `Bearer ${token}`,
          apikey: token,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ resolution: 'continue' }),
      });
    const heldIds = async () =>
      (
        await pool.query<{ id: string; url: string }>(
          `select id, url from public.breakpoint_events
           where device_uuid = $1 and resumed_at is null order by id`,
          [DEVICE],
        )
      ).rows;
    // The pattern reaches the proxy by NOTIFY a few ms after the insert: probes go until one is
    // held (an earlier one passes unheld), then it is released.
    for (let attempt = 0; ; attempt += 1) {
      if (attempt === 50) throw new Error('the breakpoint pattern never reached the proxy');
      let passed = false;
      const probe = request(`http://127.0.0.1:${options.originHttpPort}/held/probe-${attempt}`, {
        dispatcher,
      }).then(async (answer) => {
        await answer.body.text();
        passed = true;
      });
      let held: Array<{ id: string }> = [];
      await waitUntil(
        'a probe held or answered',
        async () => {
          held = await heldIds();
          return held.length > 0 || passed;
        },
        10_000,
        10,
      );
      for (const row of held) await patch(row.id);
      await probe;
      if (held.length > 0) break;
    }

    const answered = new Map<string, number>();
    let errors = 0;
    const clients = Array.from({ length: options.count }, (_, index) => {
      const url = `http://127.0.0.1:${options.originHttpPort}/held/${index}`;
      return request(url, { dispatcher }).then(
        async (answer) => {
          await answer.body.text();
          if (answer.statusCode !== 200) errors += 1;
          answered.set(url, performance.now());
        },
        () => {
          errors += 1;
          answered.set(url, performance.now());
        },
      );
    });
    await waitUntil(
      `${options.count} held`,
      async () => (await heldIds()).length >= options.count,
      30_000,
      50,
    );
    const fromPatch: number[] = [];
    const fromCommit: number[] = [];
    for (const row of await heldIds()) {
      const sent = performance.now();
      const response = await patch(row.id);
      const committed = performance.now();
      if (!response.ok) errors += 1;
      await waitUntil('release', async () => answered.has(row.url), 10_000, 1);
      const released = answered.get(row.url) as number;
      fromPatch.push(released - sent);
      fromCommit.push(Math.max(0, released - committed));
    }
    await Promise.all(clients);
    return {
      count: fromPatch.length,
      fromPatch: percentiles(fromPatch),
      fromCommit: percentiles(fromCommit),
      errors,
    };
  } finally {
    await dispatcher.close();
    await rest.stop();
    await pool.end();
  }
}
