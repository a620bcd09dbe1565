// LAN mode end to end: the whole stack serving a simulated Wi-Fi LAN (helpers/lan-namespace.ts)
// whose phones are network namespaces. A phone sets itself up from the QR link by IP alone, its
// Chromium's HTTPS is captured under its device and shows live on the dashboard, the set-up page's
// live check follows it, and the LAN reaches the proxy and nothing else of the stack.
// Needs root, iproute2, curl, certutil and Debian's Chromium.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUpBrowser } from '../../dashboard/test/helpers/browser.ts';
import { signInAs } from '../../dashboard/test/helpers/console.ts';
import { ensureDashboardBuilt } from '../../dashboard/test/helpers/dashboard-build.ts';
import { type RunningStack, type StackPorts, startStack } from '../src/index.ts';
import { LAN_PHONE_NAME } from '../src/lan-phone.ts';
import { createLan, type Lan, type Phone } from './helpers/lan-namespace.ts';
import { launchPhoneBrowser, type PhoneBrowser } from './helpers/phone-browser.ts';
import { createTestCa, issueServerCertificate } from './helpers/test-ca.ts';
import { until } from './helpers/until.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const MutationObserver: any;

/** The device the stack makes for the demo member's phone (packages/stack/src/lan-phone.ts). */
const PHONE_DEVICE_NAME = LAN_PHONE_NAME;
/** curl's exit code for "could not connect" (a refused connection, not a timeout: that is 28). */
const CURL_COULD_NOT_CONNECT = 7;
/** Effects that cross processes (a capture written, a Realtime event, a page update). */
const EFFECT_TIMEOUT_MS = 30_000;
/** Tests with browsers: a launch, a navigation and an effect, each with room on a busy machine. */
const BROWSER_TEST = { timeout: 90_000 };

const browsers = setUpBrowser();

let lan: Lan;
let phone: Phone;
let stranger: Phone;
let stack: RunningStack;
let pool: pg.Pool;
let scratch: string;
let dataDir: string;
let origin: https.Server;
let originPort: number;
/** TCP connections the origin accepted and the paths it was asked for, all through the proxy. */
let originConnections = 0;
const originPaths: string[] = [];

/** What the first phone learns from its set-up link (the first test), for the later ones. */
let pacUrl: string;
let caDer: Buffer;
let caPemFile: string;
let devicePort: number;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lan-phone-'));
  // Its own, not under scratch: Postgres's system user must reach it.
  dataDir = await mkdtemp(join(tmpdir(), 'stack-test-'));
  lan = await createLan({ phones: 2 });
  [phone, stranger] = lan.phones as [Phone, Phone];
  const ca = createTestCa();
  const leaf = issueServerCertificate(ca, lan.hostAddress);
  origin = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, (request, response) => {
    originPaths.push(request.url ?? '');
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(`<title>LAN origin</title><p>${request.url}</p>`);
  });
  origin.on('connection', () => {
    originConnections += 1;
  });
  origin.listen(0, lan.hostAddress);
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
  await ensureDashboardBuilt();
  stack = await startStack({
    dataDir,
    ports: 'free',
    ephemeral: true,
    lan: { address: lan.hostAddress },
    // The origin and nothing else, not even `public`: Chromium's own background requests (updates,
    // accounts, connectivity checks) come through the PAC too, and are refused here instead of
    // leaving the machine or, without the CA, reporting CA problems for hosts of their own.
    proxyDestinations: [`${lan.hostAddress}/32`],
    proxyUpstreamCa: [ca.certPem],
    logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
  });
  pool = new pg.Pool({ connectionString: stack.dbUrl, max: 2 });
});

afterAll(async () => {
  try {
    await pool?.end();
    await stack?.stop();
  } finally {
    await lan?.destroy();
    origin?.closeAllConnections();
    origin?.close();
    for (const made of [scratch, dataDir]) {
      if (made) await rm(made, { recursive: true, force: true });
    }
  }
});

interface CurlResult {
  /** curl's exit code: 0, or why it failed (7: refused, 28: timed out, 56: CONNECT refused). */
  exit: number | null;
  /** The HTTP status, or for `--proxy` to an https URL the CONNECT's; 0 when there was none. */
  status: number;
  body: string;
}

/** curl inside a phone, at most `maxTimeS` seconds. */
async function curlIn(
  inPhone: Phone,
  url: string,
  extra: string[] = [],
  maxTimeS = 10,
): Promise<CurlResult> {
  const writeOut =
    url.startsWith('https:') && extra.includes('--proxy') ? 'http_connect' : 'http_code';
  const result = await inPhone.exec(
    'curl',
    ['-sS', '--max-time', String(maxTimeS), '-w', `\n%{${writeOut}}`, ...extra, url],
    { timeoutMs: (maxTimeS + 5) * 1000 },
  );
  const cut = result.stdout.lastIndexOf('\n');
  return {
    exit: result.code,
    status: Number(result.stdout.slice(cut + 1)),
    body: result.stdout.slice(0, cut),
  };
}

/** A path no other request of this run has. */
function uniquePath(label: string): string {
  return `/lan-phone-${label}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
}

async function phoneDeviceUuid(): Promise<string> {
  const { rows } = await pool.query<{ uuid: string }>(
    'select uuid from public.devices where name = $1',
    [PHONE_DEVICE_NAME],
  );
  expect(rows).toHaveLength(1);
  return (rows[0] as { uuid: string }).uuid;
}

/** The captured rows of one path, once at least one is written. */
function capturedAt(path: string) {
  return until(async () => {
    const { rows } = await pool.query<{ device_uuid: string | null; rule: string | null }>(
      `select device_uuid, payload -> 'attribution' ->> 'rule' as rule
       from public.entries where path = $1`,
      [path],
    );
    return rows.length > 0 ? rows : undefined;
  }, EFFECT_TIMEOUT_MS);
}

/** Runs `use` with Chromium in `phone`, closed whatever happens. */
async function withPhoneBrowser<T>(
  inPhone: Phone,
  options: { caDer?: Buffer },
  use: (browser: PhoneBrowser) => Promise<T>,
): Promise<T> {
  const browser = await launchPhoneBrowser(inPhone, { pacUrl, ...options });
  try {
    return await use(browser);
  } finally {
    await browser.close();
  }
}

interface LiveCheckView {
  state: string;
  summary: string;
  detail: string;
  /** The CA warning's text while it is shown, else ''. */
  warning: string;
}

/**
 * Records every view the set-up page's live check shows from now on, in order, as its script
 * renders them: a later request of the page itself (its favicon) may replace a view before a poll
 * would see it.
 */
async function recordLiveCheck(page: Page): Promise<() => Promise<LiveCheckView[]>> {
  await page.evaluate(() => {
    const section = document.getElementById('live-check');
    const text = (selector: string) => section.querySelector(selector).textContent.trim();
    const shown: LiveCheckView[] = [];
    window.liveCheckShown = shown;
    const note = () => {
      const warning = section.querySelector('.live-warning');
      shown.push({
        state: section.dataset.state,
        summary: text('.live-summary'),
        detail: text('.live-detail'),
        warning: warning.hidden ? '' : warning.textContent.trim(),
      });
    };
    note();
    new MutationObserver(note).observe(section, {
      subtree: true,
      attributes: true,
      childList: true,
      characterData: true,
    });
  });
  return () => page.evaluate(() => window.liveCheckShown as LiveCheckView[]);
}

/** Opens the phone's set-up link in `page` and waits for the live check's first event. */
async function openSetupPage(page: Page) {
  const response = await page.goto(stack.phoneSetupUrl as string);
  expect(response?.status()).toBe(200);
  const shown = await recordLiveCheck(page);
  // The page's own requests came through the device's port (the PAC), so the first event
  // already says the device is seen.
  await expect
    .poll(async () => (await shown()).at(-1)?.summary, { timeout: EFFECT_TIMEOUT_MS })
    .toBe('We see this device');
  return shown;
}

describe('a phone on the LAN', () => {
  it('opens its QR link by IP: its set-up page, its PAC file and the CA', async () => {
    const setupBase = `http://${lan.hostAddress}:${stack.ports.proxyManagement}`;
    expect(stack.proxySetupUrl).toBe(setupBase);
    expect(stack.phoneSetupUrl).toMatch(new RegExp(`^${setupBase}/setup/[A-Za-z0-9_-]{32}$`));

    const page = await curlIn(phone, stack.phoneSetupUrl as string);
    expect(page.status).toBe(200);
    expect(page.body).toContain(`<h1>Set up ${PHONE_DEVICE_NAME}</h1>`);
    const copyable = [...page.body.matchAll(/data-copy="([^"]*)"/g)].map((match) => match[1]);
    const pac = copyable.find((value) => value?.endsWith('.pac'));
    expect(pac).toMatch(new RegExp(`^${setupBase}/\\d+\\.pac$`));
    pacUrl = pac as string;
    devicePort = Number(/\/(\d+)\.pac$/.exec(pacUrl)?.[1]);
    expect(copyable).toContain(`${lan.hostAddress}:${devicePort}`);
    // Opening the link gave the device its port, bound to the phone's address.
    const { rows } = await pool.query<{ port: number; allocated_from: string }>(
      'select port, host(allocated_from) as allocated_from from public.device_ports ' +
        'where device_uuid = $1',
      [await phoneDeviceUuid()],
    );
    expect(rows).toEqual([{ port: devicePort, allocated_from: phone.address }]);
    expect(devicePort).toBeGreaterThanOrEqual(stack.ports.devicePorts.start);
    expect(devicePort).toBeLessThanOrEqual(stack.ports.devicePorts.end);

    const pacFile = await curlIn(phone, pacUrl);
    expect(pacFile.status).toBe(200);
    expect(pacFile.body).toContain(`return "PROXY ${lan.hostAddress}:${devicePort}; DIRECT";`);

    // The certificate links, relative to the page, as its browser would follow them.
    for (const name of ['ca.der', 'ca.pem']) {
      expect(page.body).toContain(`href="/${name}"`);
      const saved = await curlIn(phone, `${setupBase}/${name}`, ['-o', join(scratch, name)]);
      expect(saved.status).toBe(200);
    }
    caDer = await readFile(join(scratch, 'ca.der'));
    caPemFile = join(scratch, 'ca.pem');
    const certificate = new X509Certificate(caDer);
    expect(certificate.ca).toBe(true);
    expect(new X509Certificate(await readFile(caPemFile)).raw).toEqual(caDer);
  });

  it(
    'loads HTTPS through its port, captured under its device and live on the Captures page',
    BROWSER_TEST,
    async () => {
      const { page: dashboard } = await browsers.openPage();
      await signInAs(dashboard, stack.dashboardUrl, 'user', '/captures');
      await expect
        .poll(() => dashboard.getByTestId('tail-state').getAttribute('data-state'), {
          timeout: EFFECT_TIMEOUT_MS,
        })
        .toBe('live');
      // Gone if the page reloads: the row must arrive on the page as it is.
      await dashboard.evaluate(() => {
        window.loadedBeforeTheRequest = true;
      });

      const path = uniquePath('capture');
      await withPhoneBrowser(phone, { caDer }, async (browser) => {
        const page = await browser.page();
        const response = await page.goto(`https://${lan.hostAddress}:${originPort}${path}`);
        expect(response?.status()).toBe(200);
        expect(await page.textContent('p')).toBe(path);
      });

      const captured = await capturedAt(path);
      expect(captured).toEqual([{ device_uuid: await phoneDeviceUuid(), rule: 'port' }]);
      await dashboard
        .locator('[data-testid="captures-table"] tbody tr', { hasText: path })
        .waitFor({ timeout: EFFECT_TIMEOUT_MS });
      expect(await dashboard.evaluate(() => window.loadedBeforeTheRequest)).toBe(true);
    },
  );
});

describe('what the LAN reaches', () => {
  const loopbackOnly: Exclude<keyof StackPorts, 'devicePorts'>[] = [
    'api',
    'db',
    'mcp',
    'mcpLegacy',
    'dashboard',
    'rest',
    'restAdmin',
    'auth',
    'storage',
  ];

  it.each(loopbackOnly)(
    'refuses a phone at once on the %s port of the LAN address',
    async (name) => {
      const port = stack.ports[name];
      const fromPhone = await curlIn(phone, `http://${lan.hostAddress}:${port}/`, [], 3);
      expect(fromPhone.exit).toBe(CURL_COULD_NOT_CONNECT);
      // It is there, on loopback: the refusal is the binding's, not an absent service.
      const onHost = net.connect(port, '127.0.0.1');
      try {
        await once(onHost, 'connect');
      } finally {
        onHost.destroy();
      }
    },
  );

  it.each([
    ['shared', 'proxy'],
    ['management', 'proxyManagement'],
  ] as const)("serves a phone on the proxy's %s port of the LAN address", async (_label, name) => {
    const page = await curlIn(phone, `http://${lan.hostAddress}:${stack.ports[name]}/setup`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('<h1>Set up a device</h1>');
  });

  it("answers another phone on this phone's port 407: no origin hit, no capture", async () => {
    const proxy = ['--proxy', `http://${lan.hostAddress}:${devicePort}`];
    const path = uniquePath('stranger');
    const connectionsBefore = originConnections;
    for (const url of [
      `https://${lan.hostAddress}:${originPort}${path}`,
      `http://${lan.hostAddress}:${originPort}${path}`,
    ]) {
      const refused = await curlIn(stranger, url, proxy);
      expect(refused.status).toBe(407);
    }
    // Refused before anything is forwarded: no connection was even opened.
    expect(originConnections).toBe(connectionsBefore);
    // The phone itself, after the stranger: once its capture is written, the stranger's would
    // have been too.
    const after = uniquePath('after-stranger');
    const own = await curlIn(phone, `https://${lan.hostAddress}:${originPort}${after}`, [
      ...proxy,
      '--cacert',
      caPemFile,
      '-o',
      '/dev/null',
    ]);
    expect(own.exit).toBe(0);
    await capturedAt(after);
    expect(originPaths).toContain(after);
    expect(originPaths).not.toContain(path);
    const { rows } = await pool.query('select id from public.entries where url like $1', [
      `%${path}%`,
    ]);
    expect(rows).toEqual([]);
  });
});

describe("the set-up page's live check in the phone's browser", () => {
  it('says decrypted HTTPS once the phone loads a page in another tab', BROWSER_TEST, async () => {
    await withPhoneBrowser(phone, { caDer }, async (browser) => {
      const setup = await browser.page();
      const shown = await openSetupPage(setup);
      expect((await shown()).at(-1)?.detail).toMatch(/^Last request: plain HTTP, .*own port\.$/);

      const other = await browser.page();
      const response = await other.goto(`https://${lan.hostAddress}:${originPort}/`);
      expect(response?.status()).toBe(200);
      await expect.poll(shown, { timeout: EFFECT_TIMEOUT_MS }).toContainEqual(
        expect.objectContaining({
          state: 'seen',
          detail: expect.stringContaining('HTTPS, decrypted: the CA is trusted'),
        }),
      );
    });
  });

  // Last in the file: after a refused certificate the proxy passes this phone's tunnels to the
  // host through for an hour (proxy/src/tls/passthrough-policy.ts), so nothing after it could
  // be decrypted. The browser runs in the same phone, the one address its port admits.
  it(
    'warns of the CA, naming the host, when a browser without it opens an HTTPS page',
    BROWSER_TEST,
    async () => {
      await withPhoneBrowser(phone, {}, async (browser) => {
        const setup = await browser.page();
        const shown = await openSetupPage(setup);
        expect((await shown()).at(-1)?.state).toBe('seen');

        const other = await browser.page();
        await expect(other.goto(`https://${lan.hostAddress}:${originPort}/`)).rejects.toThrow(
          /ERR_CERT_AUTHORITY_INVALID/,
        );
        await expect
          .poll(async () => (await shown()).at(-1), { timeout: EFFECT_TIMEOUT_MS })
          .toMatchObject({
            state: 'ca-problem',
            warning: expect.stringContaining(`HTTPS to ${lan.hostAddress} failed`),
          });
      });
    },
  );
});
