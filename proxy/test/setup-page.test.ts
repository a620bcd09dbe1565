// The set-up page's content (proxy/src/setup/): the steps per platform, the CA as an Apple
// configuration profile, and the page itself, whose script runs in headless Chromium against a
// loopback server that sends the CSP and a scripted status stream.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { caMobileconfig, MOBILECONFIG_CONTENT_TYPE } from '../src/setup/mobileconfig.ts';
import { platformSteps, type SetupLinks } from '../src/setup/platform-steps.ts';
import {
  escapeHtml,
  renderSetupPage,
  SETUP_CSP,
  SETUP_SCRIPT,
  SETUP_STYLE,
  type SetupStatus,
  type SetupView,
} from '../src/setup/setup-page.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const navigator: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const DOMParser: any;

const LINKS: SetupLinks = {
  pacUrl: 'http://20001.proxy.example:8889/proxy.pac',
  manualProxy: '192.168.1.20:8888',
  caDerUrl: 'http://192.168.1.20:8889/ca.der',
  caPemUrl: 'http://192.168.1.20:8889/ca.pem',
  mobileconfigUrl: 'http://192.168.1.20:8889/ca.mobileconfig',
};
const PLATFORM_IDS = ['ios', 'android', 'macos', 'windows', 'linux', 'chromeos', 'firefox'];
const HOSTILE_NAME = '<img src=x onerror=alert(1)>';
const CA = {
  certDer: Buffer.from('3082010a0282010100c0ffee00112233445566778899aabbccddeeff', 'hex'),
  fingerprint256: Array.from({ length: 32 }, (_, index) =>
    (index * 7).toString(16).padStart(2, '0'),
  )
    .join(':')
    .toUpperCase(),
};

function viewOf(overrides: Partial<SetupView> = {}): SetupView {
  return {
    deviceName: 'Pixel 9',
    pacUrl: LINKS.pacUrl,
    manualProxy: LINKS.manualProxy,
    caPemUrl: LINKS.caPemUrl,
    caDerUrl: LINKS.caDerUrl,
    mobileconfigUrl: LINKS.mobileconfigUrl as string,
    statusUrl: '/setup/status',
    steps: platformSteps(LINKS),
    assetBase: '/setup/assets',
    ...overrides,
  };
}

function payloadUuids(profile: string): string[] {
  return [...profile.matchAll(/<key>PayloadUUID<\/key>\s*<string>([^<]*)<\/string>/g)].map(
    (match) => match[1] as string,
  );
}

describe('platformSteps', () => {
  it('covers iOS/iPadOS, Android, macOS, Windows, Linux, ChromeOS and Firefox', () => {
    expect(platformSteps(LINKS).map((platform) => platform.id)).toEqual(PLATFORM_IDS);
  });

  it('points every platform at the PAC URL when the device has one', () => {
    for (const platform of platformSteps(LINKS)) {
      expect(platform.steps.join(' '), platform.id).toContain(LINKS.pacUrl);
    }
  });

  it('gives every platform the manual proxy host and port when there is no PAC URL', () => {
    for (const platform of platformSteps({ ...LINKS, pacUrl: null })) {
      const text = platform.steps.join(' ');
      expect(text, platform.id).toContain('192.168.1.20');
      expect(text, platform.id).toContain('8888');
      expect(text, platform.id).not.toContain('proxy.pac');
    }
  });

  it('installs the configuration profile on iOS and macOS when one is offered', () => {
    const kinds = (links: SetupLinks) =>
      Object.fromEntries(platformSteps(links).map((item) => [item.id, item.certificate]));
    expect(kinds(LINKS)).toMatchObject({ ios: 'mobileconfig', macos: 'mobileconfig' });
    expect(kinds({ ...LINKS, mobileconfigUrl: null })).toMatchObject({ ios: 'der', macos: 'pem' });
  });

  it.each([LINKS, { ...LINKS, mobileconfigUrl: null }])(
    'links the download of the certificate kind each platform uses (%#)',
    (links) => {
      const urls = {
        der: links.caDerUrl,
        pem: links.caPemUrl,
        mobileconfig: links.mobileconfigUrl,
      };
      for (const platform of platformSteps(links)) {
        expect(platform.steps.join(' '), platform.id).toContain(urls[platform.certificate]);
      }
    },
  );
});

describe('caMobileconfig', () => {
  it('holds the DER, base64 as is, in one com.apple.security.root payload', () => {
    const profile = caMobileconfig(CA);
    expect(profile).toContain(`<data>${CA.certDer.toString('base64')}</data>`);
    expect(profile.match(/<string>com\.apple\.security\.root<\/string>/g)).toHaveLength(1);
    expect(profile).toMatch(/<key>PayloadType<\/key>\s*<string>Configuration<\/string>/);
    expect(profile).toMatch(/<key>PayloadVersion<\/key>\s*<integer>1<\/integer>/);
    expect(profile).toMatch(/<key>PayloadCertificateFileName<\/key>\s*<string>capture-ca.cer</);
    expect(profile).toMatch(/<key>PayloadDisplayName<\/key>\s*<string>Capture CA<\/string>/);
    expect(MOBILECONFIG_CONTENT_TYPE).toBe('application/x-apple-aspen-config');
  });

  it('derives the same UUIDs again for the same CA, so a second install replaces the first', () => {
    const uuids = payloadUuids(caMobileconfig(CA));
    expect(uuids).toHaveLength(2);
    expect(new Set(uuids).size).toBe(2);
    for (const uuid of uuids) expect(uuid).toMatch(/^[0-9A-F]{8}-[0-9A-F]{4}-8[0-9A-F]{3}-[89AB]/);
    expect(payloadUuids(caMobileconfig({ ...CA }))).toEqual(uuids);
    const otherCa = { ...CA, fingerprint256: CA.fingerprint256.replace(/^..:/, 'FF:') };
    const otherUuids = payloadUuids(caMobileconfig(otherCa));
    expect(otherUuids.filter((uuid) => uuids.includes(uuid))).toEqual([]);
  });

  it('escapes XML in the organization it is given', () => {
    const profile = caMobileconfig(CA, { organization: 'Labs & Co <"test">' });
    expect(profile).toContain('<string>Labs &amp; Co &lt;&quot;test&quot;&gt;</string>');
    expect(profile).not.toContain('Co <');
  });
});

describe('renderSetupPage', () => {
  it.each([
    ['<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
    [`"double" and 'single'`, '&quot;double&quot; and &#39;single&#39;'],
    ['Tom & Jerry &amp;', 'Tom &amp; Jerry &amp;amp;'],
  ])('escapes %s for HTML text and attributes', (text, escaped) => {
    expect(escapeHtml(text)).toBe(escaped);
  });

  it('shows a hostile device name only escaped', () => {
    const html = renderSetupPage(viewOf({ deviceName: HOSTILE_NAME }));
    expect(html).not.toContain('<img');
    expect(html).toContain('Set up &lt;img src=x onerror=alert(1)&gt;');
  });

  it('escapes values in attributes, so a URL cannot close its attribute', () => {
    const hostile = 'http://x/"><script>alert(1)</script>';
    const html = renderSetupPage(
      viewOf({ pacUrl: hostile, caDerUrl: hostile, statusUrl: hostile, assetBase: hostile }),
    );
    expect(html).not.toContain('"><script>');
    expect(html).toContain('data-copy="http://x/&quot;&gt;&lt;script&gt;');
  });

  it('allows no inline script or style, nor anything from another origin, in its CSP', () => {
    expect(SETUP_CSP).not.toContain('unsafe-inline');
    expect(SETUP_CSP).not.toContain('unsafe-eval');
    expect(SETUP_CSP).toContain("default-src 'none'");
    expect(SETUP_CSP).toContain("script-src 'self'");
    expect(SETUP_CSP).toContain("style-src 'self'");
    expect(SETUP_CSP).toContain("frame-ancestors 'none'");
  });

  it('has no inline script body, style element or style attribute', () => {
    const html = renderSetupPage(viewOf());
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]?.[1]).toContain('src="/setup/assets/setup.js"');
    expect(scripts[0]?.[2]).toBe('');
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).toContain('<link rel="stylesheet" href="/setup/assets/setup.css">');
  });

  it('shows the PAC URL and manual proxy to copy, the downloads and every platform', () => {
    const html = renderSetupPage(viewOf());
    expect(html).toContain(`<button type="button" data-copy="${LINKS.pacUrl}">`);
    expect(html).toContain(`<button type="button" data-copy="${LINKS.manualProxy}">`);
    for (const url of [LINKS.caDerUrl, LINKS.caPemUrl, LINKS.mobileconfigUrl]) {
      expect(html).toContain(`href="${url}"`);
    }
    for (const platform of viewOf().steps) {
      expect(html).toContain(`<summary>${escapeHtml(platform.name)}</summary>`);
    }
    expect(html).toContain('<h1>Set up Pixel 9</h1>');
    expect(html).toContain('Waiting for the first request from this device…');
  });

  it('says that a page without a device attributes no traffic to one', () => {
    const html = renderSetupPage(viewOf({ deviceName: null, pacUrl: null }));
    expect(html).toContain('<h1>Set up a device</h1>');
    expect(html).toContain('attributes its traffic to it');
    expect(html).toContain('no PAC URL');
  });

  it('leaves out the live check when there is no status stream', () => {
    expect(renderSetupPage(viewOf({ statusUrl: null }))).not.toContain('live-check');
  });
});

// A loopback server for the page, its assets and a status stream the test drives.
type SetupServer = {
  url: string;
  send(status: SetupStatus): void;
  dropStream(): void;
  /** Resolves, once the next stream is asked for, to the function that starts it. */
  holdNextStream(): Promise<() => void>;
  stop(): Promise<void>;
};

const WAITING: SetupStatus = {
  seen: false,
  lastSeenAt: null,
  connection: null,
  listener: null,
  caProblem: null,
};
const SEEN: SetupStatus = {
  seen: true,
  lastSeenAt: '2026-11-28T05:00:00.000Z',
  connection: 'https',
  listener: 'device-port',
  caProblem: null,
};
const CA_PROBLEM: SetupStatus = {
  ...SEEN,
  caProblem: { host: 'api.shop.example', at: '2026-11-28T05:00:01.000Z', reason: 'unknown ca' },
};

async function startSetupServer(view: SetupView): Promise<SetupServer> {
  let latest = WAITING;
  let stream: http.ServerResponse | null = null;
  let holdNext: ((start: () => void) => void) | null = null;
  const event = (status: SetupStatus) => `data: ${JSON.stringify(status)}\n\n`;
  const pages: Record<string, { type: string; body: string }> = {
    '/': { type: 'text/html; charset=utf-8', body: renderSetupPage(view) },
    '/setup/assets/setup.js': { type: 'text/javascript', body: SETUP_SCRIPT },
    '/setup/assets/setup.css': { type: 'text/css', body: SETUP_STYLE },
  };
  const startStream = (response: http.ServerResponse) => {
    response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    // A short retry keeps reconnection inside the test's timeout.
    response.write(`retry: 100\n\n${event(latest)}`);
    stream = response;
  };
  const server = http.createServer((request, response) => {
    const page = pages[request.url ?? ''];
    if (page) {
      const headers = { 'content-type': page.type, 'content-security-policy': SETUP_CSP };
      response.writeHead(200, headers).end(page.body);
    } else if (request.url !== view.statusUrl) {
      response.writeHead(404).end();
    } else if (holdNext) {
      holdNext(() => startStream(response));
      holdNext = null;
    } else {
      startStream(response);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    send(status) {
      latest = status;
      stream?.write(event(status));
    },
    dropStream() {
      stream?.end();
      stream = null;
    },
    holdNextStream() {
      return new Promise((resolve) => {
        holdNext = resolve;
      });
    },
    async stop() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('the set-up page in Chromium', () => {
  let browser: Browser;
  let server: SetupServer;
  const closers: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
    });
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /** Serves the page and opens it; `problems` collects CSP violations and script errors. */
  async function openSetupPage(options: BrowserContextOptions = {}, initScript?: string) {
    server = await startSetupServer(viewOf({ deviceName: HOSTILE_NAME }));
    const context = await browser.newContext(options);
    closers.push(
      () => context.close(),
      () => server.stop(),
    );
    const page: Page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.text().includes('Content Security Policy')) problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    if (initScript) await page.addInitScript(initScript);
    await page.goto(`${server.url}/`);
    return { page, problems };
  }

  it('follows the status stream: waiting, then seen over HTTPS, then a CA problem', async () => {
    const { page, problems } = await openSetupPage();
    const liveCheck = page.locator('#live-check');
    await page.locator('#live-check[data-state="waiting"]', { hasText: 'Not yet' }).waitFor();

    server.send(SEEN);
    await page.locator('#live-check[data-state="seen"]').waitFor();
    expect(await liveCheck.locator('.live-summary').textContent()).toBe('We see this device');
    const detail = await liveCheck.locator('.live-detail').textContent();
    expect(detail).toContain('HTTPS, decrypted: the CA is trusted');
    expect(detail).toContain('on its own port');
    expect(await liveCheck.locator('.live-warning').isHidden()).toBe(true);

    server.send(CA_PROBLEM);
    await page.locator('#live-check[data-state="ca-problem"]').waitFor();
    expect(await liveCheck.locator('.live-warning').textContent()).toBe(
      'HTTPS to api.shop.example failed: this device does not trust the Capture CA yet. ' +
        'Install and trust the certificate above.',
    );
    expect(await liveCheck.locator('.live-warning').isVisible()).toBe(true);
    expect(problems).toEqual([]);
  });

  it('shows "reconnecting…" while the status stream is down, then the status again', async () => {
    const { page, problems } = await openSetupPage();
    await page.locator('#live-check', { hasText: 'Not yet' }).waitFor();
    const heldStream = server.holdNextStream();
    server.dropStream();
    await page.locator('.live-connection', { hasText: 'reconnecting…' }).waitFor();
    const release = await heldStream;
    server.send({ ...SEEN, connection: 'tunnel', listener: 'shared-port' });
    release();
    await page.locator('#live-check[data-state="seen"]').waitFor();
    expect(await page.locator('.live-connection').textContent()).toBe('');
    expect(await page.locator('.live-detail').textContent()).toContain(
      'HTTPS passed through without decryption',
    );
    expect(problems).toEqual([]);
  });

  it('renders a hostile device name as text, never as markup', async () => {
    const { page, problems } = await openSetupPage();
    expect(await page.locator('h1').textContent()).toBe(`Set up ${HOSTILE_NAME}`);
    expect(await page.locator('img').count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('copies the PAC URL with the Clipboard API where the page may use it', async () => {
    const { page, problems } = await openSetupPage({
      permissions: ['clipboard-read', 'clipboard-write'],
    });
    await page.locator(`button[data-copy="${LINKS.pacUrl}"]`).click();
    await page.locator(`button[data-copy="${LINKS.pacUrl}"]`, { hasText: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(LINKS.pacUrl);
    expect(problems).toEqual([]);
  });

  it('selects the manual proxy to copy without the Clipboard API, as on plain http', async () => {
    const { page, problems } = await openSetupPage(
      {},
      "Object.defineProperty(Navigator.prototype, 'clipboard', { get: () => undefined });",
    );
    await page.locator(`button[data-copy="${LINKS.manualProxy}"]`).click();
    expect(await page.evaluate(() => window.getSelection()?.toString())).toBe(LINKS.manualProxy);
    expect(problems).toEqual([]);
  });

  it.each([
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15', ['ios']],
    ['Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 Chrome/131.0', ['android']],
    ['Mozilla/5.0 (X11; CrOS x86_64 16093.68.0) AppleWebKit/537.36 Chrome/131.0', ['chromeos']],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 Safari/605.1', ['macos']],
    [
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0',
      ['windows', 'firefox'],
    ],
    ['Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/131.0', ['linux']],
  ])('opens the steps that match the user agent %s', async (userAgent, expected) => {
    const { page, problems } = await openSetupPage({ userAgent });
    await page.locator('details[open]').first().waitFor();
    const open = await page
      .locator('details[open]')
      .evaluateAll((elements) => elements.map((element) => element.getAttribute('data-platform')));
    expect(open).toEqual(expected);
    expect(problems).toEqual([]);
  });

  it('builds a configuration profile that an XML parser reads as a plist', async () => {
    const page = await browser.newPage();
    closers.push(() => page.close());
    const parsed = await page.evaluate(
      (xml) => {
        const xmlDocument = new DOMParser().parseFromString(xml, 'application/xml');
        const keys = xmlDocument.querySelectorAll('plist > dict > key');
        return {
          errors: xmlDocument.getElementsByTagName('parsererror').length,
          root: xmlDocument.documentElement.nodeName,
          keys: Array.from(keys, (key: { textContent: string }) => key.textContent),
        };
      },
      caMobileconfig(CA, { organization: 'Labs & Co <"test">' }),
    );
    expect(parsed).toEqual({
      errors: 0,
      root: 'plist',
      keys: [
        'PayloadContent',
        'PayloadDescription',
        'PayloadDisplayName',
        'PayloadIdentifier',
        'PayloadOrganization',
        'PayloadRemovalDisallowed',
        'PayloadType',
        'PayloadUUID',
        'PayloadVersion',
      ],
    });
  });
});
