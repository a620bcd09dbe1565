// bench:dashboard: the console measured in Debian's Chromium against a throwaway
// stack holding N generated captures (default 1M):
// - time to interactive of the Overview (status board and fleet tiles drawn) and of Captures
//   (first page of 50 rows and the count drawn), from navigation start, cold and warm;
// - Realtime-to-screen latency: single captures inserted one at a time, from the INSERT's
//   commit to the row in the live tail (the page's own clock, same machine);
// - memory of the Captures page while its live tail receives R captures/s for M minutes (JS heap
//   after a forced GC and DOM nodes, sampled every 30 s): it must stay flat;
// - the bundle (bytes and gzip) and first contentful paint.
//   node packages/dashboard/bench/console-bench.ts [--entries 1000000] [--runs 5]
//     [--latency-samples 100] [--rate 200] [--minutes 10]
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import pino from 'pino';
import { chromium } from 'playwright-core';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { createBenchDevices, insertBenchEntries } from '../../../bench/entries-generator.ts';
import { percentile } from '../../../bench/percentile.ts';
import { startStack } from '../../stack/src/index.ts';
import { DASHBOARD_DIR, ensureDashboardBuilt } from '../test/helpers/dashboard-build.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const MutationObserver: any;

const { values } = parseBenchArgs({
  name: 'bench:dashboard',
  measures: `The console in Debian's Chromium (1366x768, the demo admin) against a throwaway stack
    with the seed plus N generated captures: time to interactive of Overview and Captures from
    navigation start, first load and warm loads, with first contentful paint; Realtime to screen
    (from a single capture's INSERT commit to its row in the live tail); the Captures page's JS
    heap after a forced GC and DOM nodes every 30 s under a sustained live tail; and the bundle's
    bytes and gzip.`,
  comparedWith: `no second implementation: warm loads beside the first one, and each memory
    sample beside the one taken before the tail started (it must stay flat). For what the data
    size costs, run again with --entries 0, the seed's 4000 captures (packages/dashboard/README.md,
    "Benchmark").`,
  flags: {
    entries: {
      type: 'string',
      value: 'N',
      description: "captures generated beside the seed's 4000 (50 devices over 26 weeks)",
      default: '1000000',
    },
    runs: {
      type: 'string',
      value: 'N',
      description: 'warm loads of each page after its first load, for TTI and FCP',
      default: '5',
    },
    'latency-samples': {
      type: 'string',
      value: 'N',
      description: 'single captures inserted at 5/s for the Realtime-to-screen latency',
      default: '100',
    },
    rate: {
      type: 'string',
      value: 'R',
      description: "captures per second inserted while the live tail's memory is sampled",
      default: '200',
    },
    minutes: {
      type: 'string',
      value: 'M',
      description: 'minutes the live tail runs, memory sampled every 30 s',
      default: '10',
    },
  },
});
const ADMIN = { email: 'admin@demo.local', password: 'demo-admin-pass' };
const log = (line: string) => process.stderr.write(`${line}\n`);
const round = (value: number) => Math.round(value * 10) / 10;

await ensureDashboardBuilt();
const assets = join(DASHBOARD_DIR, 'dist', 'assets');
const bundle = readdirSync(assets).map((name) => {
  const bytes = readFileSync(join(assets, name));
  return { name, bytes: bytes.length, gzip: gzipSync(bytes).length };
});

const dataDir = mkdtempSync(join(tmpdir(), 'bench-dashboard-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox'],
});

try {
  const entries = Number(values.entries);
  const started = performance.now();
  const { deviceUuids } = await createBenchDevices(db, { users: 10, devicesPerUser: 5, weeks: 26 });
  await insertBenchEntries(db, deviceUuids, {
    entries,
    weeks: 26,
    onProgress: (done) => log(`  ${done} captures`),
  });
  await db.query('select private.refresh_service_stats()');
  await db.query('vacuum analyze public.entries');
  log(`${entries} captures generated in ${((performance.now() - started) / 1000).toFixed(0)} s`);

  // One signed-in context (its storage holds the session), a new page per measurement.
  const context = await browser.newContext({ viewport: { width: 1366, height: 768 } });
  const signIn = await context.newPage();
  await signIn.goto(`${stack.dashboardUrl}/sign-in?next=%2F`);
  await signIn.getByLabel('Email').fill(ADMIN.email);
  await signIn.getByLabel('Password').fill(ADMIN.password);
  await signIn.getByRole('button', { name: 'Sign in', exact: true }).click();
  await signIn.getByTestId('nav-overview').waitFor();
  await signIn.close();

  // Functions, not strings: the page's CSP has no 'unsafe-eval'. Each returns the time (ms from
  // navigation start) once its page is usable, and false before.
  const overviewReady = () =>
    !!document.querySelector('[data-testid="stats-tiles"]') &&
    !!document.querySelector('[data-testid="status-components"]') &&
    performance.now();
  const capturesReady = () =>
    document.querySelectorAll('[data-testid="captures-table"] tbody tr').length === 50 &&
    /matching/.test(document.querySelector('[data-testid="capture-count"]')?.textContent ?? '') &&
    performance.now();

  async function timeToInteractive(path: string, ready: () => number | false) {
    const page = await context.newPage();
    await page.goto(`${stack.dashboardUrl}${path}`, { waitUntil: 'commit' });
    // performance.now() is measured from navigation start.
    const tti = (await page
      .waitForFunction(ready, undefined, {
        timeout: 30_000,
        polling: 'raf',
      })
      .then((handle) => handle.jsonValue())) as number;
    const fcp = (await page.evaluate(
      () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1,
    )) as number;
    await page.close();
    return { tti, fcp };
  }

  const ttiRows: string[] = [];
  for (const [name, path, ready] of [
    ['Overview', '/', overviewReady],
    ['Captures', '/captures', capturesReady],
  ] as const) {
    const samples: { tti: number; fcp: number }[] = [];
    for (let run = 0; run < Number(values.runs) + 1; run += 1)
      samples.push(await timeToInteractive(path, ready));
    const [first, ...warm] = samples;
    const tti = warm.map((sample) => sample.tti).sort((a, b) => a - b);
    const fcp = warm.map((sample) => sample.fcp).sort((a, b) => a - b);
    ttiRows.push(
      `| ${name} | ${round(first?.tti ?? 0)} | ${round(percentile(tti, 50))} / ${round(percentile(tti, 95))} | ${round(percentile(fcp, 50))} |`,
    );
  }

  // Realtime to screen: the live tail of all devices (an admin sees every capture).
  const tail = await context.newPage();
  await tail.goto(`${stack.dashboardUrl}/captures`);
  await tail.waitForFunction(
    () =>
      document.querySelector('[data-testid="tail-state"]')?.getAttribute('data-state') === 'live',
  );
  await tail.evaluate(() => {
    const seen: Record<string, number> = {};
    (window as unknown as { seen: Record<string, number> }).seen = seen;
    new MutationObserver(
      (
        records: { addedNodes: { dataset?: { host?: string }; textContent: string | null }[] }[],
      ) => {
        const now = Date.now();
        for (const record of records) {
          for (const node of record.addedNodes) {
            const id = node.dataset?.host;
            const text = node.textContent ?? '';
            const marker = /lat-(\d+)\//.exec(text)?.[1];
            if (id !== undefined && marker && !(marker in seen)) seen[marker] = now;
          }
        }
      },
    ).observe(document.body, { subtree: true, childList: true });
  });
  const insertOne = (path: string, device: string) =>
    db.query(
      `insert into public.entries (ts, kind, request_id, device_uuid, payload)
       values (now(), 'http', gen_random_uuid()::text, $1, jsonb_build_object('method', 'GET',
         'host', 'bench.example', 'path', $2::text, 'url', 'https://bench.example' || $2::text,
         'statusCode', 200, 'timings', jsonb_build_object('total', 1)))`,
      [device, path],
    );
  const committed: number[] = [];
  const samples = Number(values['latency-samples']);
  for (let i = 0; i < samples; i += 1) {
    await insertOne(`/lat-${i}/`, deviceUuids[i % deviceUuids.length] as string);
    committed.push(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const seen = (await tail.evaluate(
    () => (window as unknown as { seen: Record<string, number> }).seen,
  )) as Record<string, number>;
  const latencies = committed
    .map((at, i) => (seen[String(i)] === undefined ? Number.NaN : (seen[String(i)] as number) - at))
    .filter((value) => Number.isFinite(value))
    .sort((a, b) => a - b);
  const lost = samples - latencies.length;

  // Memory under a sustained live tail.
  const cdp = await context.newCDPSession(tail);
  await cdp.send('Performance.enable');
  async function memory() {
    await cdp.send('HeapProfiler.collectGarbage');
    const { metrics } = await cdp.send('Performance.getMetrics');
    const metric = (name: string) => metrics.find((item) => item.name === name)?.value ?? 0;
    return { heapMb: metric('JSHeapUsedSize') / 1048576, nodes: metric('Nodes') };
  }
  const rate = Number(values.rate);
  const minutes = Number(values.minutes);
  const memorySamples: { minute: number; heapMb: number; nodes: number }[] = [
    { minute: 0, ...(await memory()) },
  ];
  const end = Date.now() + minutes * 60_000;
  let nextSample = Date.now() + 30_000;
  let sent = 0;
  while (Date.now() < end) {
    const tick = Date.now();
    const count = Math.round(rate / 10);
    await db.query(
      `insert into public.entries (ts, kind, request_id, device_uuid, payload)
       select now(), 'http', gen_random_uuid()::text, ($1::uuid[])[1 + n % array_length($1::uuid[], 1)],
         jsonb_build_object('method', 'GET', 'host', 'tail.example', 'path', '/t/' || n,
           'url', 'https://tail.example/t/' || n, 'statusCode', 200,
           'timings', jsonb_build_object('total', 1))
       from generate_series(1, $2) n`,
      [deviceUuids, count],
    );
    sent += count;
    if (Date.now() >= nextSample) {
      memorySamples.push({
        minute: round((Date.now() - (end - minutes * 60_000)) / 60_000),
        ...(await memory()),
      });
      nextSample += 30_000;
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 100 - (Date.now() - tick))));
  }
  const rowsShown = await tail.locator('[data-testid="captures-table"] tbody tr').count();
  memorySamples.push({ minute: minutes, ...(await memory()) });

  const out: string[] = [];
  out.push(
    `machine: ${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, ${new Date().toISOString()}`,
  );
  out.push(`captures in the database: ${entries.toLocaleString('en')} (+ the seed's 4000)`);
  out.push('');
  out.push('| bundle file | bytes | gzip |');
  out.push('|---|---|---|');
  for (const file of bundle) out.push(`| ${file.name} | ${file.bytes} | ${file.gzip} |`);
  out.push('');
  out.push(`| page | TTI first load ms | TTI p50 / p95 ms (${values.runs} warm) | FCP p50 ms |`);
  out.push('|---|---|---|---|');
  out.push(...ttiRows);
  out.push('');
  out.push(
    `Realtime to screen (${samples} single inserts, 5/s): p50 ${round(percentile(latencies, 50))} ms, p95 ${round(percentile(latencies, 95))} ms, max ${round(latencies.at(-1) ?? Number.NaN)} ms, not shown ${lost}`,
  );
  out.push('');
  out.push(
    `Live tail at ${rate}/s for ${minutes} min (${sent} captures sent; ${rowsShown} rows on the page at the end):`,
  );
  out.push('| minute | JS heap MB (after GC) | DOM nodes |');
  out.push('|---|---|---|');
  for (const sample of memorySamples)
    out.push(`| ${sample.minute} | ${round(sample.heapMb)} | ${sample.nodes} |`);
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  await browser.close();
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
