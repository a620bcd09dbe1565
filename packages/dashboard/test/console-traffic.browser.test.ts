// The console's traffic pages in Chromium against a started stack whose proxy may reach loopback
// origins (and nothing else): adding a device and the PAC URL a second Chromium then uses, rename,
// the CA download, the live tail within a second, the request view and copy as curl, HAR export
// checked by a HAR parser, search and keyset paging, breakpoints resumed, modified and aborted on
// the page, the assistant streaming from the OpenAI-compatible double and a proposed write
// confirmed once, and a revoked grant whose token stops working.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { har as validateHar } from 'har-validator';
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ResponsesStub,
  textTurn,
  toolTurn,
} from '../../../supabase/e2e/ask/helpers/responses-stub.ts';
import { setUpBrowser } from './helpers/browser.ts';
import {
  clientAs,
  collectErrors,
  DEMO_USER_IDS,
  setUpDatabase,
  signInAs,
} from './helpers/console.ts';
import { setUpDashboardStack } from './helpers/dashboard-stack.ts';
import { startStandInClient } from './helpers/oauth-client.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const window: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const MutationObserver: any;

/** supabase/seed.sql: the member's Pixel 8. */
const MEMBER_DEVICE = 'd0000000-0000-4000-8000-000000000001';
/** supabase/seed.sql: the viewer's own phone. */
const VIEWER_DEVICE = 'd0000000-0000-4000-8000-000000000006';

// Before the stack: its ask function is pointed at this double.
const stub = new ResponsesStub();
beforeAll(async () => {
  await stub.start();
});
afterAll(async () => {
  await stub.stop();
});

const dashboard = setUpDashboardStack(() => ({
  // Loopback only, as the proxy's own browser test: nothing can leave the machine.
  proxyDestinations: ['127.0.0.0/8', '0.0.0.0/32', 'localhost', '*.localhost'],
  functionSecrets: {
    OPENAI_API_KEY: 'test-provider-key',
    OPENAI_BASE_URL: `${stub.url}/v1`,
    ASSISTANT_PING_MS: '150',
    ASSISTANT_MODEL_RETRIES: '0',
    ASSISTANT_WEB_SEARCH: '0',
    ASSISTANT_RATE_PER_MINUTE: '1000',
  },
}));
const browsers = setUpBrowser();
const database = setUpDatabase(() => dashboard().stack);

// An origin on loopback answering JSON with the path it saw, and noting each request it got.
let origin: http.Server;
let originPort = 0;
const originSeen: { path: string; headers: http.IncomingHttpHeaders }[] = [];
beforeAll(async () => {
  origin = http.createServer((request, response) => {
    originSeen.push({ path: request.url ?? '', headers: request.headers });
    const body = JSON.stringify({ path: request.url, method: request.method, ok: true });
    response.writeHead(request.url?.includes('/fail') ? 503 : 200, {
      'content-type': 'application/json',
    });
    response.end(body);
  });
  origin.listen(0, '127.0.0.1');
  await once(origin, 'listening');
  originPort = (origin.address() as AddressInfo).port;
});
afterAll(async () => {
  origin?.closeAllConnections();
  await new Promise((resolve) => origin?.close(resolve));
});

const managementUrl = () => `http://127.0.0.1:${dashboard().stack.ports.proxyManagement}`;

/** What a device does with its bundle: POST /allocate (docs/proxy.md). */
async function allocate(
  credentials: { username: string; password: string },
  uuid: string,
  deviceName: string,
) {
  const response = await fetch(`${managementUrl()}/allocate`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ uuid, deviceName, country: 'NL' }),
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { port: number };
}

/** One request through a device port to the loopback origin, as the device would send it. */
function requestThroughPort(port: number, path: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const request = http.request({
      host: '127.0.0.1',
      port,
      method: 'GET',
      path: `http://127.0.0.1:${originPort}${path}`,
      headers: { 'x-dashboard-test': 'yes', accept: 'application/json', ...headers },
      agent: false,
    });
    request.on('response', (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    request.on('error', reject);
    request.end();
  });
}

async function sendThroughPort(port: number, path: string, headers: Record<string, string> = {}) {
  return (await requestThroughPort(port, path, headers)).status;
}

type DeviceUnderTest = {
  uuid: string;
  name: string;
  port: number;
  username: string;
  password: string;
};
let device: DeviceUnderTest | undefined;

/** Adds a device and issues a bundle in the page, then allocates as the device would. */
async function addDeviceInPage(page: Page, name: string): Promise<DeviceUnderTest> {
  await signInAs(page, dashboard().dashboardUrl, 'user', '/devices');
  await page.getByLabel('Device name').fill(name);
  await page.getByRole('button', { name: 'Add device' }).click();
  const row = page.locator('[data-testid="devices-table"] tbody tr', { hasText: name });
  await row.waitFor();
  const uuid = (await row.getAttribute('data-uuid')) as string;
  // 002 §4.4: a dashboard-added device has its port at once (the database gives it one from the
  // pool the proxies register), before the device itself calls /allocate.
  await expect
    .poll(() => row.getByTestId('device-port').textContent(), { timeout: 5000 })
    .toMatch(/^\d+$/);
  const portAtOnce = Number(await row.getByTestId('device-port').textContent());
  await page.getByLabel('Bundle label').fill(`bundle for ${name}`);
  await page.getByRole('button', { name: 'Issue bundle' }).click();
  const username = (await page.getByTestId('bundle-username').textContent()) as string;
  const password = (await page.getByTestId('bundle-password').textContent()) as string;
  const { port } = await allocate({ username, password }, uuid, name);
  expect(port).toBe(portAtOnce);
  return { uuid, name, port, username, password };
}

describe('devices', () => {
  it('adds a device that has its port at once; the PAC URL shown works in Chromium', async () => {
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    const name = `Test phone ${Date.now()}`;
    device = await addDeviceInPage(page, name);
    const row = page.locator(`tr[data-uuid="${device.uuid}"]`);
    // The port arrives over Realtime (the allocation upserts the device row).
    await expect
      .poll(() => row.getByTestId('device-port').textContent(), { timeout: 5000 })
      .toBe(String(device.port));
    await page.getByRole('button', { name: `Set up ${name}` }).click();
    const pacUrl = (await page.getByTestId('pac-url').textContent()) as string;
    expect(pacUrl).toBe(
      `http://${device.port}.proxy.localhost:${dashboard().stack.ports.proxyManagement}/proxy.pac`,
    );
    // The QR code is the device's set-up link (docs/devices.md), a fresh token for an editor.
    const setupLink = (await page.getByTestId('setup-link').textContent()) as string;
    expect(setupLink).toMatch(
      new RegExp(
        `^http://127\\.0\\.0\\.1:${dashboard().stack.ports.proxyManagement}/setup/[A-Za-z0-9_-]{32}$`,
      ),
    );
    expect(await page.getByTestId('qr-code').getAttribute('data-text')).toBe(setupLink);
    expect(await page.locator('[data-testid="qr-code"] path').getAttribute('d')).toMatch(/^M\d/);

    // A second browser, set up only with the PAC URL from the page, is captured under the device.
    const phone = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [
        `--proxy-pac-url=${pacUrl}`,
        '--disable-background-networking',
        '--disable-component-update',
        '--no-first-run',
      ],
    });
    try {
      const phonePage = await phone.newPage();
      const marker = `pac-${Date.now()}`;
      // Chromium sends loopback names direct whatever the PAC says; 0.0.0.0 reaches the origin.
      const response = await phonePage.goto(`http://0.0.0.0:${originPort}/${marker}`);
      expect(response?.status()).toBe(200);
      await expect
        .poll(
          async () =>
            (
              await database().query(
                `select device_uuid, payload->'attribution'->>'rule' as rule from public.entries where path = $1`,
                [`/${marker}`],
              )
            ).rows[0],
          { timeout: 5000 },
        )
        .toEqual({ device_uuid: device.uuid, rule: 'port' });
    } finally {
      await phone.close();
    }
    expect(errors).toEqual([]);
  });

  it('renames a device; its port and PAC URL stay', async () => {
    if (!device) throw new Error('needs the device of the first test');
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/devices');
    await page.getByRole('button', { name: `Set up ${device.name}` }).click();
    const pacBefore = await page.getByTestId('pac-url').textContent();
    await page.getByRole('button', { name: `Rename ${device.name}` }).click();
    const renamed = `${device.name} (renamed)`;
    await page.getByLabel('New name').fill(renamed);
    await page.getByRole('button', { name: 'Save' }).click();
    const row = page.locator(`tr[data-uuid="${device.uuid}"]`);
    await expect.poll(() => row.getByTestId('device-name').textContent()).toBe(renamed);
    expect(await row.getByTestId('device-port').textContent()).toBe(String(device.port));
    expect(await page.getByTestId('pac-url').textContent()).toBe(pacBefore);
    const { rows } = await database().query('select name from public.devices where uuid = $1', [
      device.uuid,
    ]);
    expect(rows[0].name).toBe(renamed);
    device.name = renamed;
  });

  it('links the CA as PEM and DER, with set-up steps for each platform', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/devices');
    await page.getByTestId('device-setup').waitFor();
    const pem = await fetch((await page.getByTestId('ca-pem').getAttribute('href')) as string);
    expect(await pem.text()).toMatch(/^-----BEGIN CERTIFICATE-----/);
    const der = Buffer.from(
      await (
        await fetch((await page.getByTestId('ca-der').getAttribute('href')) as string)
      ).arrayBuffer(),
    );
    expect(der[0]).toBe(0x30); // an ASN.1 SEQUENCE
    for (const platform of ['ios', 'android', 'macos', 'windows', 'linux', 'firefox']) {
      await page.getByTestId('platform-select').selectOption(platform);
      expect(await page.getByTestId('platform-steps').getAttribute('data-platform')).toBe(platform);
      expect(await page.locator('[data-testid="platform-steps"] li').count()).toBeGreaterThan(2);
    }
    expect(await page.getByTestId('manual-proxy').textContent()).toBe(
      `127.0.0.1:${dashboard().stack.ports.proxy}`,
    );
  });
});

describe('captures', () => {
  it('shows a capture sent through the proxy in the device live tail', async () => {
    if (!device) throw new Error('needs the device of the first test');
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'user', '/captures');
    // The tail of all devices first; then the device's own channel must be joined anew.
    await expect.poll(() => page.getByTestId('tail-state').getAttribute('data-state')).toBe('live');
    // Every state the badge shows from here on, in order (regression: it kept the old channel's
    // "Live" while the device's channel was still joining).
    await page.evaluate(() => {
      const badge = document.querySelector('[data-testid="tail-state"]');
      const shown: string[] = [];
      (window as unknown as { badgeShown: string[] }).badgeShown = shown;
      new MutationObserver(() => {
        const state = `${badge.getAttribute('data-state')}|${badge.textContent}`;
        if (shown.at(-1) !== state) shown.push(state);
      }).observe(badge, { subtree: true, attributes: true, childList: true, characterData: true });
    });
    await page.getByTestId('filter-device').selectOption(device.uuid);
    await page.getByRole('button', { name: 'Apply' }).click();
    const liveOnDevice = `live|Live on device:${device.uuid.slice(0, 8)}`;
    const badgeShown = () =>
      page.evaluate(() => (window as unknown as { badgeShown: string[] }).badgeShown);
    await expect
      .poll(async () => (await badgeShown()).at(-1), { timeout: 10_000 })
      .toBe(liveOnDevice);
    expect((await badgeShown())[0]).toBe('connecting|connecting');
    const marker = `tail-${Date.now()}`;
    // The page notes when the row appears.
    await page.evaluate((text) => {
      const observer = new MutationObserver(() => {
        if (document.querySelector('[data-testid="captures-table"]')?.textContent?.includes(text)) {
          (window as unknown as { seenAt: number }).seenAt = Date.now();
          observer.disconnect();
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    }, marker);
    // Nothing on the page polls for captures, so the row appearing at all is the live tail's
    // doing; how fast is `npm run bench:dashboard`'s figure (commit to row).
    expect(await sendThroughPort(device.port, `/${marker}?q=1`)).toBe(200);
    await expect
      .poll(() => page.evaluate(() => (window as unknown as { seenAt?: number }).seenAt), {
        timeout: 15_000,
      })
      .toBeTruthy();

    // The request view of that capture.
    await page.getByRole('button', { name: new RegExp(marker) }).click();
    await page.getByTestId('request-view').waitFor();
    expect(await page.getByTestId('request-headers').textContent()).toContain('x-dashboard-test');
    expect(await page.getByTestId('response-body').getAttribute('data-kind')).toBe('json');
    expect(await page.locator('[data-testid="response-body"] pre').textContent()).toContain(
      '\n  "path"',
    );
    expect(await page.getByTestId('attribution').textContent()).toContain('port');
    await page.getByTestId('timings').waitFor();
    const curl = (await page.getByTestId('curl-command').textContent()) as string;
    expect(curl).toContain(`'http://127.0.0.1:${originPort}/${marker}?q=1'`);
    expect(curl).toContain("-H 'x-dashboard-test: yes'");
    expect(errors).toEqual([]);
  });

  it('exports selected captures as HAR 1.2 that a HAR parser accepts and that matches the rows', async () => {
    if (!device) throw new Error('needs the device of the first test');
    const marker = `har-${Date.now()}`;
    expect(await sendThroughPort(device.port, `/${marker}/one`)).toBe(200);
    expect(await sendThroughPort(device.port, `/${marker}/fail`)).toBe(503);
    // The proxy writes captures in batches after answering: the list is read once per Apply, so
    // both rows must have landed first.
    await expect
      .poll(async () => {
        const { rows } = await database().query(
          'select count(*)::int as landed from public.entries where path like $1',
          [`/${marker}/%`],
        );
        return rows[0]?.landed;
      })
      .toBe(2);
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/captures');
    await page.getByLabel('Search').fill(marker);
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.getByTestId('capture-count').textContent()).toBe('2 matching');
    const boxes = page.getByRole('checkbox', { name: /Select capture/ });
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export-selection').click(),
    ]);
    const har = JSON.parse(readFileSync((await download.path()) as string, 'utf8'));
    // har-validator checks against the HAR 1.2 JSON schema and rejects what does not conform.
    await expect(validateHar(har)).resolves.toEqual(har);
    const broken = structuredClone(har);
    delete broken.log.entries[0].request.method;
    await expect(validateHar(broken)).rejects.toThrow();
    const { rows } = await database().query(
      `select id, payload->>'url' as url, (payload->>'statusCode')::int as status, payload->>'method' as method
         from public.entries where path like $1 order by id`,
      [`/${marker}/%`],
    );
    expect(har.log.version).toBe('1.2');
    expect(
      har.log.entries.map(
        (entry: { request: { url: string; method: string }; response: { status: number } }) => ({
          url: entry.request.url,
          method: entry.request.method,
          status: entry.response.status,
        }),
      ),
    ).toEqual(rows.map((row) => ({ url: row.url, method: row.method, status: row.status })));

    // Tag one capture and file it in a workspace on the page, then export the workspace.
    const member = await clientAs(dashboard().stack, 'user');
    const workspaceName = `workspace ${marker}`;
    const tagName = `tag-${marker}`;
    expect((await member.from('workspaces').insert({ name: workspaceName })).error).toBeNull();
    expect((await member.from('tags').insert({ name: tagName })).error).toBeNull();
    await page.reload();
    await page.getByLabel('Search').fill(marker);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.getByRole('button', { name: new RegExp(`${marker}/one`) }).click();
    const labels = page.getByTestId('capture-labels');
    await labels.getByLabel('Tag').selectOption({ label: tagName });
    await labels.getByRole('button', { name: 'Add tag' }).click();
    await labels.locator(`[data-tag="${tagName}"]`).waitFor();
    await page.getByTestId('add-to-workspace-select').selectOption({ label: workspaceName });
    await labels.getByRole('button', { name: 'Add to workspace' }).click();
    await expect
      .poll(() => page.getByTestId('capture-workspaces').textContent())
      .toBe(workspaceName);
    await page.getByLabel('Search').fill('');
    await page.getByTestId('filter-workspace').selectOption({ label: workspaceName });
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.getByTestId('capture-count').textContent()).toBe('1 matching');
    const [workspaceDownload] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export-workspace').click(),
    ]);
    const workspaceHar = JSON.parse(
      readFileSync((await workspaceDownload.path()) as string, 'utf8'),
    );
    await expect(validateHar(workspaceHar)).resolves.toEqual(workspaceHar);
    expect(
      workspaceHar.log.entries.map((entry: { request: { url: string } }) => entry.request.url),
    ).toEqual([rows.find((row) => row.url.endsWith('/one'))?.url]);
  });

  it("saves the HAR of a selection to Storage under the user's own folder, the same text the download gives, out of reach of another user", async () => {
    if (!device) throw new Error('needs the device of the first test');
    const marker = `saved-har-${Date.now()}`;
    expect(await sendThroughPort(device.port, `/${marker}/one`)).toBe(200);
    await expect
      .poll(async () => {
        const { rows } = await database().query(
          'select count(*)::int as landed from public.entries where path like $1',
          [`/${marker}/%`],
        );
        return rows[0]?.landed;
      })
      .toBe(1);
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'user', '/captures');
    await page.getByLabel('Search').fill(marker);
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.getByTestId('capture-count').textContent()).toBe('1 matching');
    await page
      .getByRole('checkbox', { name: /Select capture/ })
      .first()
      .check();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByTestId('export-selection').click(),
    ]);
    const downloaded = readFileSync((await download.path()) as string, 'utf8');
    await page.getByTestId('save-selection').click();
    const outcome = page.locator('[data-testid="saved-export"], [data-testid="save-export-error"]');
    await outcome.waitFor();
    // A Storage error would show here instead of the path: name it in the failure.
    const shownOutcome = (await outcome.textContent()) ?? '';
    expect(await page.getByTestId('save-export-error').count(), shownOutcome).toBe(0);
    const shownPath = (await page.getByTestId('saved-export-path').textContent()) as string;
    const folder = `exports/${DEMO_USER_IDS.user}/`;
    expect(shownPath.startsWith(folder)).toBe(true);
    expect(shownPath).toMatch(/\/captures-1-[0-9T-]+Z\.har$/);
    const objectPath = shownPath.slice('exports/'.length);

    // Read back as the user with supabase-js: exactly the text of the download.
    const member = await clientAs(dashboard().stack, 'user');
    const { data: saved, error: readError } = await member.storage
      .from('exports')
      .download(objectPath);
    expect(readError).toBeNull();
    expect(await saved?.text()).toBe(downloaded);
    const { data: listed } = await member.storage
      .from('exports')
      .list(DEMO_USER_IDS.user, { search: objectPath.split('/')[1] });
    expect(listed?.[0]?.metadata?.mimetype).toBe('application/har+json');
    // The signed link the page shows serves the same bytes without a session.
    const link = (await page.getByTestId('saved-export-link').getAttribute('href')) as string;
    const linked = await fetch(link);
    expect(linked.status).toBe(200);
    expect(await linked.text()).toBe(downloaded);

    // Another user cannot download it.
    const viewer = await clientAs(dashboard().stack, 'viewer');
    const { data: theirs, error: refused } = await viewer.storage
      .from('exports')
      .download(objectPath);
    expect(theirs).toBeNull();
    expect(refused).not.toBeNull();
    expect(errors).toEqual([]);
  });

  it('pages by keyset through the admin list with no gaps or repeats, and counts with the RPC', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'admin', '/captures');
    await page.getByTestId('live-toggle').uncheck();
    const ids = () =>
      page
        .locator('[data-testid="captures-table"] tbody tr')
        .evaluateAll((rows) => rows.map((row) => Number(row.getAttribute('data-capture-id'))));
    await expect.poll(async () => (await ids()).length).toBe(50);
    await page.getByTestId('load-older').click();
    await expect.poll(async () => (await ids()).length).toBe(100);
    await page.getByTestId('load-older').click();
    await expect.poll(async () => (await ids()).length).toBe(150);
    const seen = await ids();
    expect(new Set(seen).size).toBe(150);
    expect([...seen].sort((a, b) => b - a)).toEqual(seen);
    const admin = await clientAs(dashboard().stack, 'admin');
    const { data: expected } = await admin.rpc('entries_filtered_list', { lim: 150 }).select('id');
    expect(seen).toEqual((expected as { id: number }[]).map((row) => row.id));
    // entries_count is exact up to 1000 and may estimate above (the seed holds 4000): an
    // estimate says "about" and offers the exact figure, which is entries_filtered_count's.
    const shown = (await page.getByTestId('capture-count').textContent()) as string;
    expect(shown).toMatch(/^(about )?[\d,]+ matching$/);
    if (shown.startsWith('about'))
      await page.getByRole('button', { name: 'Count exactly' }).click();
    const { data: count } = await admin.rpc('entries_filtered_count', {});
    await expect
      .poll(() => page.getByTestId('capture-count').textContent())
      .toBe(`${Number(count).toLocaleString('en')} matching`);
  });
});

describe('breakpoints', () => {
  it('shows a held request live and resumes it over REST', async () => {
    if (!device) throw new Error('needs the device of the first test');
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/breakpoints');
    await page.getByRole('heading', { name: /Held/ }).waitFor();
    const member = await clientAs(dashboard().stack, 'user');
    const url = `https://api.example.test/hold-${Date.now()}`;
    const { data, error } = await member
      .from('breakpoint_events')
      .insert({
        device_uuid: device.uuid,
        phase: 'request',
        pattern: 'api.example.test/*',
        method: 'POST',
        url,
        message: { body: 'x' },
      })
      .select('id')
      .single();
    expect(error).toBeNull();
    const id = (data as { id: number }).id;
    const held = page.locator(`[data-testid="held-breakpoint"][data-id="${id}"]`);
    await held.waitFor({ timeout: 3000 });
    await held.getByRole('button', { name: 'Resume' }).click();
    await page
      .locator(`[data-testid="resumed-breakpoints"] tr[data-id="${id}"]`)
      .waitFor({ timeout: 3000 });
    const { rows } = await database().query(
      'select resolution, resumed_by, resumed_at from public.breakpoint_events where id = $1',
      [id],
    );
    expect(rows[0]).toMatchObject({ resolution: 'continue', resumed_by: DEMO_USER_IDS.user });
    expect(rows[0].resumed_at).toBeTruthy();
    expect(await held.count()).toBe(0);
  });

  /**
   * Sets a request breakpoint for `marker` on the test device and sends requests through its port,
   * one at a time, until the proxy holds one; returns that request's answer and the held row.
   * The hold is judged by the proxy's row rather than by the page, so a loaded machine's slower
   * page cannot pass a held request by (patterns reach the proxy within about a second,
   * proxy/test/breakpoints.test.ts times it).
   */
  async function holdRequestAtBreakpoint(marker: string) {
    if (!device) throw new Error('needs the device of the first test');
    const member = await clientAs(dashboard().stack, 'user');
    // The proxy reloads patterns on the settings change (docs/proxy.md "Breakpoints").
    const { error } = await member.from('settings_device').upsert({
      device_uuid: device.uuid,
      data: { breakpoints: [{ pattern: `127.0.0.1/${marker}*`, phase: 'request' }] },
    });
    expect(error).toBeNull();
    const heldRow = async () =>
      (
        await database().query(
          `select id from public.breakpoint_events where url like $1 and resumed_at is null`,
          [`%/${marker}%`],
        )
      ).rows[0] as { id: number } | undefined;
    // One request out at a time: the next is sent only once the last was answered unheld.
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const sent = requestThroughPort(device.port, `/${marker}`);
      let answered = false;
      void sent.then(() => {
        answered = true;
      });
      while (!answered && Date.now() < deadline) {
        const row = await heldRow();
        if (row) return { answer: sent, eventId: Number(row.id) };
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    throw new Error('no request was held');
  }

  it('holds a live request at a breakpoint; Resume on the page lets it finish', async () => {
    const marker = `bp-${Date.now()}`;
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/breakpoints');
    await page.getByRole('heading', { name: /Held/ }).waitFor();
    const held = page.locator('[data-testid="held-breakpoint"]', { hasText: marker });
    const { answer } = await holdRequestAtBreakpoint(marker);
    await held.waitFor({ timeout: 5000 });
    let finished = false;
    void answer.then(() => {
      finished = true;
    });
    await page.waitForTimeout(300);
    expect(finished).toBe(false);
    await held.getByRole('button', { name: 'Resume' }).click();
    expect((await answer).status).toBe(200);
    await expect.poll(() => held.count(), { timeout: 3000 }).toBe(0);
  });

  it('modifies a live held request on the page: the editor offers the accepted keys, a refused edit shows the database message, and the origin gets the edit', async () => {
    const marker = `bp-mod-${Date.now()}`;
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/breakpoints');
    await page.getByRole('heading', { name: /Held/ }).waitFor();
    const held = page.locator('[data-testid="held-breakpoint"]', { hasText: marker });
    const { answer } = await holdRequestAtBreakpoint(marker);
    await held.waitFor({ timeout: 5000 });
    await held.getByRole('button', { name: 'Modify' }).click();
    expect(await held.getByTestId('modifiable-keys').textContent()).toContain(
      'method, url, headers, body',
    );
    // Regression: the editor held the captured message (scheme, host, requestHeaders, …), which
    // the database refuses; now it holds the accepted shape with the held values.
    const editor = held.getByLabel('Modified message (JSON)');
    const draft = JSON.parse(await editor.inputValue()) as {
      method: string;
      url: string;
      headers: [string, string][];
    };
    expect(Object.keys(draft).sort()).toEqual(['headers', 'method', 'url']);
    expect(draft.url).toBe(`http://127.0.0.1:${originPort}/${marker}`);
    expect(draft.headers).toContainEqual(['x-dashboard-test', 'yes']);

    // A key the database does not accept: refused, its message shown, the request still held.
    await editor.fill(JSON.stringify({ ...draft, path: '/elsewhere' }));
    await held.getByRole('button', { name: 'Send modified' }).click();
    await expect
      .poll(() => held.getByTestId('breakpoint-error').textContent(), { timeout: 5000 })
      .toContain('modified_message of a request breakpoint is an object with only');

    const edited = {
      ...draft,
      url: draft.url.replace(marker, `${marker}-edited`),
      headers: [...draft.headers, ['x-edited', 'on the page']],
    };
    await editor.fill(JSON.stringify(edited, null, 2));
    await held.getByRole('button', { name: 'Send modified' }).click();
    expect((await answer).status).toBe(200);
    const seen = originSeen.find((request) => request.path === `/${marker}-edited`);
    expect(seen?.headers['x-edited']).toBe('on the page');
    const { rows } = await database().query(
      `select resolution, modified_message->>'url' as url from public.breakpoint_events
        where url like $1 and resolution is not null`,
      [`%/${marker}`],
    );
    expect(rows).toEqual([{ resolution: 'modify', url: edited.url }]);
  });

  it("aborts a live held request on the page: the client gets the proxy's error", async () => {
    const marker = `bp-abort-${Date.now()}`;
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user', '/breakpoints');
    await page.getByRole('heading', { name: /Held/ }).waitFor();
    const held = page.locator('[data-testid="held-breakpoint"]', { hasText: marker });
    const { answer, eventId } = await holdRequestAtBreakpoint(marker);
    await held.waitFor({ timeout: 5000 });
    await held.getByRole('button', { name: 'Abort' }).click();
    const { status, body } = await answer;
    expect(status).toBe(502);
    const refusal = JSON.parse(body) as { error: string; message: string };
    expect(refusal.error).toBe('breakpoint_aborted');
    expect(refusal.message).toContain(`(event ${eventId})`);
    const { rows } = await database().query(
      'select resolution, resumed_by from public.breakpoint_events where id = $1',
      [eventId],
    );
    expect(rows[0]).toEqual({ resolution: 'abort', resumed_by: DEMO_USER_IDS.user });
  });

  it('keeps an old held request listed when more than 100 newer events were resumed', async () => {
    if (!device) throw new Error('needs the device of the first test');
    const url = `https://api.example.test/old-hold-${Date.now()}`;
    const { rows } = await database().query(
      `insert into public.breakpoint_events (device_uuid, phase, pattern, method, url, message)
       values ($1, 'request', 'api.example.test/*', 'GET', $2, '{}') returning id`,
      [device.uuid, url],
    );
    const id = Number(rows[0].id);
    // Regression: the page read the newest 100 events and kept the held ones, so 120 resumes
    // after this hold pushed it off the page while the proxy still held it.
    await database().query(
      `insert into public.breakpoint_events
         (device_uuid, phase, pattern, method, url, message, resumed_at, resolution)
       select $1, 'request', 'api.example.test/*', 'GET', $2 || '/' || n, '{}', now(), 'continue'
       from generate_series(1, 120) n`,
      [device.uuid, `${url}-later`],
    );
    try {
      const { page } = await browsers.openPage();
      await signInAs(page, dashboard().dashboardUrl, 'user', '/breakpoints');
      await page.locator(`[data-testid="held-breakpoint"][data-id="${id}"]`).waitFor();
      // The recent resumed ones are still listed beside it, bounded.
      const resumed = page.locator('[data-testid="resumed-breakpoints"] tbody tr');
      await expect.poll(() => resumed.count()).toBe(50);
    } finally {
      await database().query(
        `update public.breakpoint_events set resolution = 'abort' where id = $1`,
        [id],
      );
    }
  });

  it('gives a viewer a held request of their own device without Resume, Modify or Abort', async () => {
    // supabase/seed.sql: the viewer owns this device and holds entries:view (RLS lets them read
    // its breakpoint events) but not entries:edit.
    const url = `https://api.example.test/viewer-hold-${Date.now()}`;
    const { rows } = await database().query(
      `insert into public.breakpoint_events (device_uuid, phase, pattern, method, url, message)
       values ($1, 'request', 'api.example.test/*', 'POST', $2, '{}') returning id`,
      [VIEWER_DEVICE, url],
    );
    const id = Number(rows[0].id);
    try {
      const { page } = await browsers.openPage();
      await signInAs(page, dashboard().dashboardUrl, 'viewer', '/breakpoints');
      const held = page.locator(`[data-testid="held-breakpoint"][data-id="${id}"]`);
      await held.waitFor();
      expect(await held.textContent()).toContain(url);
      expect(await held.getByRole('button').count()).toBe(0);
      for (const name of ['Resume', 'Modify', 'Send modified', 'Abort'])
        expect(await page.getByRole('button', { name }).count()).toBe(0);
    } finally {
      await database().query(
        `update public.breakpoint_events set resolution = 'abort' where id = $1`,
        [id],
      );
    }
  });
});

describe('assistant', () => {
  it('streams the answer from the OpenAI-compatible double with tool labels, and Stop ends it', async () => {
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'user', '/assistant');
    stub.reset();
    stub.enqueue(
      () => ({ events: toolTurn([{ name: 'list_devices', arguments: {} }]) }),
      () => ({ events: textTurn('You have several devices; the Pixel is online.'), delayMs: 20 }),
    );
    await page.getByLabel('Question').fill('Which of my devices are online?');
    await page.getByRole('button', { name: 'Ask' }).click();
    const turn = page.getByTestId('chat-turn').last();
    await expect.poll(() => turn.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
    const answer = turn.getByTestId('chat-answer');
    expect(await answer.locator('p').first().textContent()).toBe(
      'You have several devices; the Pixel is online.',
    );
    expect(await turn.getByTestId('tool-labels').textContent()).toContain('Listing devices');
    // The function's "Data used" links are dashboard paths: one opens that device here.
    await answer.getByRole('link', { name: 'Device Pixel 8' }).click();
    await page.waitForURL((url) => url.pathname === `/devices/${MEMBER_DEVICE}`);
    await page.getByRole('heading', { name: 'Set up Pixel 8' }).waitFor();
    await page.goBack();
    await page.getByLabel('Question').waitFor();

    // A slow answer, stopped half-way: the page says so and the provider sees the client leave.
    stub.enqueue(() => ({
      events: textTurn('word '.repeat(200), { chunks: Array(200).fill('word ') }),
      delayMs: 50,
    }));
    await page.getByLabel('Question').fill('Tell me everything.');
    await page.getByRole('button', { name: 'Ask' }).click();
    const second = page.getByTestId('chat-turn').last();
    await expect
      .poll(() => second.getByTestId('chat-answer').textContent(), { timeout: 15_000 })
      .toContain('word word');
    await page.getByRole('button', { name: 'Stop' }).click();
    await expect.poll(() => second.getAttribute('data-state')).toBe('stopped');
    await expect.poll(() => stub.requests.at(-1)?.closedEarly, { timeout: 5000 }).toBe(true);
    // An aborted fetch is not a console error.
    expect(errors).toEqual([]);
  });
});

describe('assistant links', () => {
  it('renders a link only to its own routes, with the href rebuilt from the parsed route', async () => {
    // Regression: `{dashboard_url}//evil.example/?d=…` passed as a same-origin path and was
    // rendered as href="//evil.example/…", which a ctrl-click followed off-site. The answer is
    // served here as the page receives it, so the page's own check is what is tried.
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'user', '/assistant');
    const base = dashboard().dashboardUrl;
    const escapes = [
      `${base}//evil.example/?d=secret`,
      `${base}/\\evil.example/?d=secret`,
      `${base}/..//evil.example/?d=secret`,
      `${base}/%2F%2Fevil.example/?d=secret`,
      '//evil.example/?d=secret',
      'javascript:alert(document.cookie)',
      'https://dash@evil.example/?d=secret',
    ];
    const answer =
      `${escapes.map((url, index) => `[link ${index}](${url})`).join(' ')} ` +
      `[Pixel 8](${base.toUpperCase()}/devices/${MEMBER_DEVICE}?d=secret)`;
    await page.route('**/functions/v1/ask', (route) => {
      const origin = route.request().headers().origin ?? '*';
      const cors = {
        'access-control-allow-origin': origin,
        'access-control-allow-headers': 'authorization, apikey, content-type, accept',
        'access-control-allow-methods': 'POST, OPTIONS',
      };
      if (route.request().method() === 'OPTIONS')
        return route.fulfill({ status: 204, headers: cors });
      return route.fulfill({
        status: 200,
        headers: { ...cors, 'content-type': 'text/event-stream' },
        body: `event: done\ndata: ${JSON.stringify({ answer })}\n\n`,
      });
    });
    await page.getByLabel('Question').fill('Where is my data?');
    await page.getByRole('button', { name: 'Ask' }).click();
    const turn = page.getByTestId('chat-turn').last();
    await expect.poll(() => turn.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
    const links = turn.getByTestId('chat-answer').locator('a');
    expect(await links.count()).toBe(1);
    expect(await links.first().textContent()).toBe('Pixel 8');
    expect(await links.first().getAttribute('href')).toBe(`/devices/${MEMBER_DEVICE}`);
    for (let index = 0; index < escapes.length; index += 1) {
      expect(await turn.getByTestId('chat-answer').textContent()).toContain(`link ${index}`);
    }
    expect(errors).toEqual([]);
  });
});

describe('assistant writes', () => {
  it('confirms a proposed tag once with Confirm; a replayed proposal says already applied; Dismiss sends nothing', async () => {
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'user', '/assistant');
    const confirmPosts: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/functions/v1/ask/confirm'))
        confirmPosts.push(request.postData() ?? '');
    });
    const { rows } = await database().query(
      'select id from public.entries where device_uuid = $1 order by id desc limit 1',
      [MEMBER_DEVICE],
    );
    const entry = Number(rows[0].id);
    const tagName = `confirmed-${Date.now()}`;
    const callId = `call_confirm_${Date.now()}`;
    const propose = async (question: string, tag: string, call = callId) => {
      stub.reset();
      stub.enqueue(
        () => ({
          events: toolTurn([
            {
              name: 'propose_tag_request',
              arguments: { request_id: entry, tag_name: tag },
              call_id: call,
            },
          ]),
        }),
        () => ({ events: textTurn('Proposed; it awaits your confirmation.') }),
      );
      await page.getByLabel('Question').fill(question);
      await page.getByRole('button', { name: 'Ask' }).click();
      const turn = page.getByTestId('chat-turn').last();
      await expect.poll(() => turn.getAttribute('data-state'), { timeout: 15_000 }).toBe('done');
      return turn.getByTestId('chat-artifact');
    };
    const tagRows = async () =>
      Number(
        (
          await database().query(
            `select count(*) from public.entry_tags et join public.tags t on t.id = et.tag_id
              where t.name = $1 and et.entry_id = $2`,
            [tagName, entry],
          )
        ).rows[0].count,
      );

    const artifact = await propose(`Tag request ${entry} as ${tagName}`, tagName);
    expect(await artifact.textContent()).toContain(`Tag request ${entry} as "${tagName}"`);
    expect(await tagRows()).toBe(0);
    // Pressed twice in a row: one POST, one row.
    await artifact.getByRole('button', { name: 'Confirm' }).dblclick();
    await expect
      .poll(() => artifact.getAttribute('data-outcome'), { timeout: 10_000 })
      .toBe('applied');
    expect(await artifact.getByTestId('artifact-outcome').textContent()).toBe(
      `Applied: request ${entry} is tagged "${tagName}".`,
    );
    expect(await artifact.getByRole('button').count()).toBe(0);
    expect(confirmPosts).toHaveLength(1);
    expect(Object.keys(JSON.parse(confirmPosts[0] as string))).toEqual(['confirmation']);
    expect(await tagRows()).toBe(1);

    // The same tool call again hands out the same proposal (call_id idempotence): confirming it
    // is a replay, which the page reports and the database does not apply.
    const replay = await propose(`Tag request ${entry} as ${tagName} again`, tagName);
    await replay.getByRole('button', { name: 'Confirm' }).click();
    await expect
      .poll(() => replay.getAttribute('data-outcome'), { timeout: 10_000 })
      .toBe('already_applied');
    expect(await replay.getByTestId('artifact-outcome').textContent()).toContain('Already applied');
    expect(await tagRows()).toBe(1);

    // Dismiss: nothing is sent, nothing is written.
    const other = `dismissed-${Date.now()}`;
    const dismissed = await propose(`Tag request ${entry} as ${other}`, other, `${callId}_other`);
    await dismissed.getByRole('button', { name: 'Dismiss' }).click();
    expect(await dismissed.getAttribute('data-step')).toBe('dismissed');
    expect(await dismissed.getByRole('button').count()).toBe(0);
    expect(confirmPosts).toHaveLength(2);
    expect(
      (await database().query('select 1 from public.tags where name = $1', [other])).rowCount,
    ).toBe(0);

    // After a reload the conversation (and its proposals) is gone; still one row.
    await page.reload();
    await page.getByLabel('Question').waitFor();
    expect(await page.getByTestId('chat-artifact').count()).toBe(0);
    expect(await tagRows()).toBe(1);
    // Chromium logs the expected 409 of the replay as a failed resource; nothing else.
    expect(errors.filter((error) => !error.includes('status of 409'))).toEqual([]);
  });
});

describe('access', () => {
  it('revoking a grant on the Access page makes its token fail', async () => {
    const stack = dashboard().stack;
    const client = await startStandInClient(stack.mcpUrl, 'Dashboard Test Client');
    try {
      const { page } = await browsers.openPage();
      await signInAs(page, dashboard().dashboardUrl, 'user');
      await page.goto(client.authorizationUrl('grant-state'));
      await page.getByRole('button', { name: 'Allow' }).click();
      // The stand-in sees the callback before the page has loaded it: wait for the page too, or
      // the next goto is interrupted by the callback's navigation.
      await page.waitForURL((url) => url.href.startsWith(client.redirectUri));
      expect(client.callbacks).toHaveLength(1);
      const code = client.callbacks[0]?.searchParams.get('code') as string;
      const tokenResponse = await fetch(`${stack.mcpUrl}/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code,
          code_verifier: client.verifierFor('grant-state') as string,
          redirect_uri: client.redirectUri,
          client_id: client.clientId,
        }),
      });
      expect(tokenResponse.status).toBe(200);
      const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
      const whoami = () =>
        fetch(`${stack.apiUrl}/rest/v1/rpc/whoami`, {
          method: 'POST',
          headers: {
            apikey: stack.keys.publishableKey,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
          },
          body: '{}',
        });
      expect((await whoami()).status).toBe(200);

      await page.goto(`${dashboard().dashboardUrl}/access`);
      const grant = page.locator(`[data-testid="grant"][data-client-id="${client.clientId}"]`);
      await grant.waitFor();
      expect(await grant.textContent()).toContain('Dashboard Test Client');
      await grant.getByRole('button', { name: 'Revoke' }).click();
      await expect.poll(() => grant.count()).toBe(0);
      expect((await whoami()).status).toBe(401);
    } finally {
      await client.stop();
    }
  });

  it('shows an admin the roles with capabilities, federation partners and the farm audit', async () => {
    const { page } = await browsers.openPage();
    const errors = collectErrors(page);
    await signInAs(page, dashboard().dashboardUrl, 'admin', '/access');
    const roles = page.getByTestId('admin-users-section');
    await roles.locator('tr[data-role="viewer"]').waitFor();
    expect(await roles.locator('tr[data-role="viewer"]').textContent()).toContain('stats:view');
    await page.getByTestId('federation-section').waitFor();
    await page.getByTestId('farm-audit-section').waitFor();
    expect(await page.locator('.error').count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
