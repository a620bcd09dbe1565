// The console's frame and overview in Chromium against a started stack, as admin, member and
// viewer: which pages and sections each role gets (and that the others are absent), keyboard
// navigation, both themes, phone and laptop widths, no console errors, and the overview following
// the stats and status rows over Realtime with no polling.
import { describe, expect, it } from 'vitest';
import { setUpBrowser } from './helpers/browser.ts';
import { collectErrors, type Role, setUpDatabase, signInAs } from './helpers/console.ts';
import { setUpDashboardStack } from './helpers/dashboard-stack.ts';

// page.evaluate callbacks run in the browser; this program's Node typings have no DOM, so the
// few page globals they touch are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, checked by the page at run time
declare const document: any;
// biome-ignore lint/suspicious/noExplicitAny: as above
declare const getComputedStyle: any;

// The status service writes its first snapshot at start and then waits an hour: the status test
// writes the row itself, and a cycle landing between its write and its check (every 10 s by
// default) would put the components back up or the row back in date under it.
const dashboard = setUpDashboardStack(() => ({ statusIntervalMs: 3_600_000 }));
const browsers = setUpBrowser();
const database = setUpDatabase(() => dashboard().stack);

const ALL_PAGES = ['overview', 'devices', 'captures', 'breakpoints', 'assistant', 'access'];
/** The admin's: every page, Approvals too (farm:edit, docs/farm.md "Gating"). */
const ADMIN_PAGES = [
  'overview',
  'devices',
  'captures',
  'breakpoints',
  'assistant',
  'approvals',
  'access',
];

// seedHold: the seed's held breakpoint (on the member's Pixel 8) is readable by its owner and
// the admin (RLS on breakpoint_events), with Resume for entries:edit; adminAccess: the roles
// section of Access (admin with users:view).
const EXPECTED: Record<
  Role,
  {
    pages: string[];
    stats: boolean;
    status: boolean;
    addDevice: boolean;
    seedHold: boolean;
    adminAccess: boolean;
  }
> = {
  admin: {
    pages: ADMIN_PAGES,
    stats: true,
    status: true,
    addDevice: true,
    seedHold: true,
    adminAccess: true,
  },
  // member: devices and entries view+edit, no stats or status (docs/feeds.md)
  user: {
    pages: ALL_PAGES,
    stats: false,
    status: false,
    addDevice: true,
    seedHold: true,
    adminAccess: false,
  },
  // viewer: view only, plus stats and status; owns none of the seed's held devices
  viewer: {
    pages: ALL_PAGES,
    stats: true,
    status: true,
    addDevice: false,
    seedHold: false,
    adminAccess: false,
  },
};

/** supabase/seed.sql: the held breakpoint's URL. */
const SEED_HOLD_URL = 'https://api.shop.example/v1/checkout';

async function navIds(page: import('playwright-core').Page): Promise<string[]> {
  const ids = await page
    .locator('[data-testid^="nav-"]')
    .evaluateAll((links) => links.map((link) => (link.getAttribute('data-testid') ?? '').slice(4)));
  return ids;
}

describe('what each role sees', () => {
  for (const role of ['admin', 'user', 'viewer'] as const) {
    it(`${role}: the pages and overview sections of the role, and nothing else`, async () => {
      const { page, cspViolations } = await browsers.openPage();
      const errors = collectErrors(page);
      await signInAs(page, dashboard().dashboardUrl, role);
      const expected = EXPECTED[role];
      expect(await navIds(page)).toEqual(expected.pages);
      await page.getByTestId('own-devices-section').waitFor();
      // Absent, not broken: no section at all, rather than an error or an empty frame.
      expect(await page.getByTestId('stats-section').count()).toBe(expected.stats ? 1 : 0);
      expect(await page.getByTestId('status-section').count()).toBe(expected.status ? 1 : 0);
      expect(await page.locator('.error').count()).toBe(0);

      await page.getByTestId('nav-devices').click();
      await page.waitForURL((url) => url.pathname === '/devices');
      await page.getByTestId('devices-table').waitFor();
      expect(await page.getByRole('button', { name: 'Add device' }).count()).toBe(
        expected.addDevice ? 1 : 0,
      );

      await page.getByTestId('nav-breakpoints').click();
      await page.waitForURL((url) => url.pathname === '/breakpoints');
      const seedHold = page.locator('[data-testid="held-breakpoint"]', { hasText: SEED_HOLD_URL });
      if (expected.seedHold) {
        await seedHold.waitFor();
        expect(await seedHold.getByRole('button', { name: 'Resume' }).count()).toBe(1);
      } else {
        // The list has loaded (not the loading line) and holds nothing this role may read.
        await page.getByTestId('no-held').waitFor();
        expect(await seedHold.count()).toBe(0);
      }

      await page.getByTestId('nav-access').click();
      await page.waitForURL((url) => url.pathname === '/access');
      await page.getByTestId('grants-section').waitFor();
      if (expected.adminAccess) await page.getByTestId('admin-users-section').waitFor();
      else expect(await page.getByTestId('admin-users-section').count()).toBe(0);
      expect(await page.locator('.error').count()).toBe(0);
      expect(errors).toEqual([]);
      expect(cspViolations).toEqual([]);
    });
  }

  it('member: the admin sections of Access are absent', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'user');
    await page.getByTestId('nav-access').click();
    await page.getByTestId('grants-section').waitFor();
    expect(await page.getByTestId('admin-users-section').count()).toBe(0);
    expect(await page.getByTestId('farm-audit-section').count()).toBe(0);
    expect(await page.getByTestId('federation-section').count()).toBe(0);
  });
});

describe('keyboard, themes and widths', () => {
  it('moves between pages with g + key, skips to content, and follows Tab order', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'admin');
    await page.keyboard.press('g');
    await page.keyboard.press('c');
    await page.waitForURL((url) => url.pathname === '/captures');
    await page.keyboard.press('g');
    await page.keyboard.press('d');
    await page.waitForURL((url) => url.pathname === '/devices');
    await page.keyboard.press('?');
    await page.getByTestId('shortcut-help').waitFor();
    // The first Tab stop is the skip link, and it lands on the main region.
    await page.goto(`${dashboard().dashboardUrl}/`);
    await page.getByTestId('nav-overview').waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('console-main');
    // Nav links are links: Enter on a focused one navigates.
    await page.getByTestId('nav-access').focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((url) => url.pathname === '/access');
  });

  it('switches to dark and back, keeps the choice across a reload', async () => {
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'viewer');
    const background = () =>
      page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const theme = () => page.evaluate(() => document.documentElement.dataset.theme);
    expect(await theme()).toBe('light');
    const light = await background();
    await page.getByTestId('theme-toggle').click();
    expect(await theme()).toBe('dark');
    expect(await background()).not.toBe(light);
    await page.reload();
    await page.getByTestId('nav-overview').waitFor();
    expect(await theme()).toBe('dark');
  });

  it('follows a dark system preference until a choice is made', async () => {
    const { page } = await browsers.openPage();
    await page.emulateMedia({ colorScheme: 'dark' });
    await signInAs(page, dashboard().dashboardUrl, 'viewer');
    expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
  });

  for (const [name, width, height] of [
    ['phone', 390, 844],
    ['laptop', 1366, 768],
  ] as const) {
    it(`fits a ${name} width (${width} px) without sideways scrolling on every page`, async () => {
      const { page } = await browsers.openPage();
      await page.setViewportSize({ width, height });
      const errors = collectErrors(page);
      await signInAs(page, dashboard().dashboardUrl, 'admin');
      for (const id of ADMIN_PAGES) {
        await page.getByTestId(`nav-${id}`).click();
        await page.waitForTimeout(300);
        const { overflow, culprits } = await page.evaluate(() => {
          const width = document.documentElement.clientWidth;
          const wide = [...document.querySelectorAll('body *')]
            .filter((element) => element.getBoundingClientRect().right > width + 0.5)
            .slice(0, 3)
            .map((element) => `${element.tagName}.${element.className}`);
          return { overflow: document.documentElement.scrollWidth - width, culprits: wide };
        });
        expect(
          overflow,
          `${id} overflows by ${overflow} px: ${culprits.join(', ')}`,
        ).toBeLessThanOrEqual(0);
        expect(await page.getByTestId(`nav-${id}`).isVisible()).toBe(true);
      }
      expect(errors).toEqual([]);
    });
  }
});

describe('overview, live over Realtime', () => {
  it('redraws the fleet charts when service_stats changes, without polling', async () => {
    const { page } = await browsers.openPage();
    const requests: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    await signInAs(page, dashboard().dashboardUrl, 'admin');
    await page.getByTestId('stats-section').waitFor();
    await page.getByTestId('live-badge').first().waitFor();
    await expect
      .poll(() => page.locator('[data-testid="stats-section"] [data-state="live"]').count())
      .toBe(1);

    const host = `changed-${Date.now()}.example`;
    const generatedAt = new Date().toISOString();
    const snapshot = {
      total_devices: 6,
      online_devices: 5,
      total_entries: 123456,
      entries_1h: 10,
      entries_24h: 20,
      requests_per_sec: 4.5,
      status_class_mix: { '2': 90, '5': 10 },
      source_mix: { pac: 70, vpn: 30 },
      connection_type_mix: { pac: 4, unknown: 2 },
      top_domains: [{ host, count: 77 }],
      top_devices: [],
      generated_at: generatedAt,
    };
    const readsBefore = requests.filter((url) => url.includes('/rest/v1/service_stats')).length;
    await database().query(
      `insert into public.service_stats (id, snapshot, updated_at) values (1, $1, now())
       on conflict (id) do update set snapshot = excluded.snapshot, updated_at = now()`,
      [snapshot],
    );
    await expect
      .poll(
        () => page.locator(`[data-testid="chart-top-domains"] li[data-label="${host}"]`).count(),
        {
          timeout: 3000,
        },
      )
      .toBe(1);
    expect(await page.getByTestId('stat-total').textContent()).toBe('123,456');
    expect(
      await page
        .locator('[data-testid="chart-status-mix"] li[data-key="5"]')
        .getAttribute('data-value'),
    ).toBe('10');
    expect(await page.getByTestId('chart-throughput').getAttribute('data-latest')).toBe('4.5');
    // It arrived over Realtime: the REST read happened once, on load.
    expect(requests.filter((url) => url.includes('/rest/v1/service_stats')).length).toBe(
      readsBefore,
    );
  });

  it('shows a component going down, then the status as stale when the row stops updating', async () => {
    // In date before the page reads it: the service's one snapshot may be older than 30 s by now.
    await database().query('update public.service_status set updated_at = now() where id = 1');
    const { page } = await browsers.openPage();
    await signInAs(page, dashboard().dashboardUrl, 'viewer');
    await page.getByTestId('status-components').waitFor({ timeout: 15_000 });
    // A change made before the channel has joined is never sent: wait until the page is live.
    await expect
      .poll(() => page.locator('[data-testid="status-section"] [data-state="live"]').count(), {
        timeout: 10_000,
      })
      .toBe(1);
    const { rows } = await database().query(
      'select snapshot from public.service_status where id = 1',
    );
    const snapshot = rows[0].snapshot;
    snapshot.overall = 'degraded';
    snapshot.components[0].probe.up = false;
    const key = snapshot.components[0].key;
    await database().query(
      'update public.service_status set snapshot = $1, updated_at = now() where id = 1',
      [snapshot],
    );
    await expect
      .poll(
        () =>
          page
            .locator(`[data-testid="status-components"] tr[data-key="${key}"]`)
            .getAttribute('data-healthy'),
        {
          timeout: 3000,
        },
      )
      .toBe('false');
    expect(await page.getByTestId('status-overall').getAttribute('data-overall')).toBe('degraded');
    await database().query(
      `update public.service_status set updated_at = now() - interval '45 seconds' where id = 1`,
    );
    await page.getByTestId('status-stale').waitFor({ timeout: 3000 });
    expect(await page.getByTestId('status-components').count()).toBe(0);
  });
});
