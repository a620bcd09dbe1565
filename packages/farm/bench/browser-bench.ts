// Benchmark of browser_cdp: navigate + screenshot of a small local page on a warm
// session (the browser already running) and on a cold one (browser start included), through MCP,
// beside the same actions on our sandboxed browser driven directly (no MCP) and with Playwright on
// the same Debian Chromium, without and with the capture proxy, in one run, so each layer shows:
// Chromium → + capture proxy → + our sandbox (bwrap, uid, bridge, NSS database) → + MCP (bearer
// auth, audit rows, one call per action).
// Run: npm run bench:browser -- [--runs 20]
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { type Browser, chromium } from 'playwright-core';
import { parseBenchArgs } from '../../../bench/bench-cli.ts';
import { percentile } from '../../../bench/percentile.ts';
import { startStack } from '../../stack/src/index.ts';
import { mintAccessToken } from '../../tool-server/bench/bench-tokens.ts';
import { postToolCall, toolCallMessageOf } from '../../tool-server/bench/mcp-post.ts';
import { CallerProfiles } from '../../tool-server/src/mcp/caller-profile.ts';
import { createDatabase } from '../../tool-server/src/store/database.ts';
import type { ActingCaller } from '../src/acting-caller.ts';
import { BrowserSessions } from '../src/browser/browser-sessions.ts';
import { FarmConfigSchema } from '../src/farm-config.ts';
import { ProxyFarmDevices } from '../src/farm-devices.ts';

const { values } = parseBenchArgs({
  name: 'bench:browser',
  measures: `browser_cdp: navigate + screenshot of a small local page on a warm session (the browser
    already running) and on a cold one (browser start included), through MCP, beside the same
    actions on our sandboxed browser driven directly (no MCP) and with Playwright through the
    capture proxy, so each layer shows: Chromium, + capture proxy, + our sandbox (bwrap, uid,
    bridge, NSS database), + MCP (bearer auth, audit rows, one call per action). p50/p95 of each.`,
  comparedWith: `Playwright on the same Debian Chromium, direct (no proxy), warm and cold, in the
    same run: every row's p50 is given as a ratio to it (docs/farm.md).`,
  flags: {
    runs: {
      type: 'string',
      value: 'N',
      description: `warm runs of each layer, after 2 warm-ups; cold runs (a browser start each) are
        half as many, at least 5`,
      default: '20',
    },
  },
});
const runs = Number(values.runs);
/** Cold runs start a browser each: fewer of them. */
const coldRuns = Math.max(5, Math.round(runs / 2));
const SITE_HOST = '127.0.0.2';
const CHROMIUM = '/usr/bin/chromium';

interface Measured {
  name: string;
  p50: number;
  p95: number;
}

/** `action` timed `count` times after two untimed warm-ups; `after` runs untimed after each. */
async function measure(
  name: string,
  count: number,
  action: () => Promise<unknown>,
  after: (value: unknown) => Promise<void> = async () => undefined,
): Promise<Measured> {
  for (let warm = 0; warm < 2; warm += 1) await after(await action());
  const times: number[] = [];
  for (let run = 0; run < count; run += 1) {
    const started = performance.now();
    const value = await action();
    times.push(performance.now() - started);
    await after(value);
  }
  times.sort((a, b) => a - b);
  return { name, p50: percentile(times, 50), p95: percentile(times, 95) };
}

/** One tools/call of browser_cdp; fails unless the tool answered. */
async function browserCall(url: string, token: string, args: Record<string, unknown>) {
  const text = await (await postToolCall(url, token, 'browser_cdp', args)).text();
  const { result } = toolCallMessageOf(text);
  if (!result || result.isError) throw new Error(`browser_cdp failed: ${text}`);
  return result;
}

const page =
  '<!doctype html><title>Bench</title><h1>Farm bench</h1><p>A small page, one request.</p>';
const site = createServer((_request, response) => {
  response.setHeader('content-type', 'text/html');
  response.end(page);
});
await new Promise<void>((resolve) => site.listen(0, SITE_HOST, resolve));
const siteUrl = `http://${SITE_HOST}:${(site.address() as { port: number }).port}/`;

const dataDir = mkdtempSync(join(tmpdir(), 'browser-bench-'));
const stack = await startStack({
  dataDir,
  ports: 'free',
  ephemeral: true,
  proxy: true,
  proxyDestinations: [`${SITE_HOST}/32`],
  logger: pino({ level: 'error' }),
});
const db = new pg.Client({ connectionString: stack.dbUrl });
await db.connect();
const logger = pino({ level: 'silent' });
const toolDb = createDatabase(stack.dbUrl, logger, { timeoutMs: 10_000 });
const config = FarmConfigSchema.parse({
  enabled: true,
  proxyManagementUrl: `http://127.0.0.1:${stack.ports.proxyManagement}`,
  browser: { sandboxUidBase: 62_300, maxSessions: 2, maxSessionsPerUser: 2 },
});
const devices = new ProxyFarmDevices(config, toolDb, logger);
const sessions = new BrowserSessions(config, toolDb, devices, logger);
const browsers: Browser[] = [];
try {
  const { rows } = await db.query<{ id: string }>(
    `select id from auth.users where email = 'admin@demo.local'`,
  );
  const token = await mintAccessToken(db, stack, rows[0]?.id as string);
  const url = `${stack.mcpUrl}/`;
  const caller = await new CallerProfiles(toolDb).profileOf(
    JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString('utf8')),
  );
  const call: ActingCaller = {
    caller,
    asCaller: (work) => toolDb.asCaller(caller.claims, work),
  };
  // Playwright through the capture proxy uses the admin's farm browser device port, as ours does.
  const egress = await devices.egressFor(call, 'cdp');
  const proxied = {
    server: `http://${egress.proxyHost}:${egress.proxyPort}`,
    bypass: '<-loopback>',
  };
  const launch = async (proxy?: { server: string; bypass: string }) => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      ...(proxy ? { proxy } : {}),
      args: ['--disable-background-networking', '--disable-component-update', '--no-first-run'],
    });
    browsers.push(browser);
    return browser;
  };
  const playwrightOnce = async (browser: Browser) => {
    const tab = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await tab.goto(siteUrl, { waitUntil: 'load' });
    await tab.screenshot({ type: 'png' });
    return tab;
  };

  const results: Measured[] = [];
  // Warm: one browser (or session) for every run.
  const warmDirect = await launch();
  const warmTab = await warmDirect.newPage({ viewport: { width: 1280, height: 800 } });
  results.push(
    await measure('Playwright, direct (no proxy), warm', runs, async () => {
      await warmTab.goto(siteUrl, { waitUntil: 'load' });
      await warmTab.screenshot({ type: 'png' });
    }),
  );
  const warmProxied = await launch(proxied);
  const warmProxiedTab = await warmProxied.newPage({ viewport: { width: 1280, height: 800 } });
  results.push(
    await measure('Playwright through the capture proxy, warm', runs, async () => {
      await warmProxiedTab.goto(siteUrl, { waitUntil: 'load' });
      await warmProxiedTab.screenshot({ type: 'png' });
    }),
  );
  await warmDirect.close();
  await warmProxied.close();
  const session = await sessions.open(call);
  results.push(
    await measure('our sandboxed browser, direct (no MCP), warm', runs, () =>
      session.run(async (tab) => {
        await tab.navigate(siteUrl, 'load', 10_000);
        await tab.screenshot(false);
      }),
    ),
  );
  await sessions.closeFor(call, session.id);
  const opened = await browserCall(url, token, { action: 'open' });
  const sessionId = String(opened.structuredContent?.session_id);
  results.push(
    await measure('browser_cdp over MCP, warm: navigate + screenshot calls', runs, async () => {
      await browserCall(url, token, { action: 'navigate', session_id: sessionId, url: siteUrl });
      const shot = await browserCall(url, token, { action: 'screenshot', session_id: sessionId });
      if (!shot.content?.some((block) => block.type === 'image')) throw new Error('no image');
    }),
  );
  await browserCall(url, token, { action: 'close', session_id: sessionId });

  // Cold: a browser started for each run (closed untimed).
  results.push(
    await measure(
      'Playwright, direct (no proxy), cold: launch + goto + screenshot',
      coldRuns,
      async () => (await playwrightOnce(await launch())).context().browser(),
      async (browser) => (browser as Browser).close(),
    ),
  );
  results.push(
    await measure(
      'Playwright through the capture proxy, cold',
      coldRuns,
      async () => (await playwrightOnce(await launch(proxied))).context().browser(),
      async (browser) => (browser as Browser).close(),
    ),
  );
  results.push(
    await measure(
      'our sandboxed browser, direct (no MCP), cold',
      coldRuns,
      async () => {
        const fresh = await sessions.open(call);
        await fresh.run(async (tab) => {
          await tab.navigate(siteUrl, 'load', 10_000);
          await tab.screenshot(false);
        });
        return fresh.id;
      },
      async (id) => {
        await sessions.closeFor(call, id as string);
      },
    ),
  );
  results.push(
    await measure(
      'browser_cdp over MCP, cold: open (with url) + screenshot calls',
      coldRuns,
      async () => {
        const first = await browserCall(url, token, { action: 'open', url: siteUrl });
        const id = String(first.structuredContent?.session_id);
        await browserCall(url, token, { action: 'screenshot', session_id: id });
        return id;
      },
      async (id) => {
        await browserCall(url, token, { action: 'close', session_id: id as string });
      },
    ),
  );
  const floor = results[0]?.p50 ?? NaN;
  const coldFloor = results[4]?.p50 ?? NaN;
  console.log(
    `browser bench: ${runs} warm and ${coldRuns} cold runs each, ${cpus().length} CPUs (${cpus()[0]?.model})`,
  );
  console.log('| what | p50 ms | p95 ms | p50 / Playwright direct (same warmth) |');
  console.log('|---|---|---|---|');
  results.forEach((result, index) => {
    const base = index < 4 ? floor : coldFloor;
    console.log(
      `| ${result.name} | ${result.p50.toFixed(1)} | ${result.p95.toFixed(1)} | ${(result.p50 / base).toFixed(2)}x |`,
    );
  });
} finally {
  for (const browser of browsers) await browser.close().catch(() => undefined);
  await sessions.closeAll();
  await toolDb.close();
  await db.end();
  await stack.stop();
  site.close();
  rmSync(dataDir, { recursive: true, force: true });
}
