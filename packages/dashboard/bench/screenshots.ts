// Screenshots of every console page in light and dark, for the docs, taken in Debian's Chromium from a throwaway stack with the
// seed data, signed in as the demo admin. Writes packages/dashboard/docs/screenshots/*.png.
//   node packages/dashboard/bench/screenshots.ts
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { chromium, type Page } from 'playwright-core';
import { startStack } from '../../stack/src/index.ts';
import { DASHBOARD_DIR, ensureDashboardBuilt } from '../test/helpers/dashboard-build.ts';

const OUT = join(DASHBOARD_DIR, 'docs', 'screenshots');
mkdirSync(OUT, { recursive: true });
await ensureDashboardBuilt();
const dataDir = mkdtempSync(join(tmpdir(), 'dashboard-shots-'));
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

/** What each page shows before its picture: a capture opened, a device set up. */
const PAGES: { name: string; path: string; prepare?: (page: Page) => Promise<void> }[] = [
  { name: 'overview', path: '/' },
  {
    name: 'devices',
    path: '/devices',
    prepare: (page) => page.getByTestId('device-setup').waitFor(),
  },
  {
    name: 'captures',
    path: '/captures',
    prepare: async (page) => {
      await page.locator('.capture-open').first().click();
      await page.getByTestId('request-view').waitFor();
    },
  },
  { name: 'breakpoints', path: '/breakpoints' },
  { name: 'assistant', path: '/assistant' },
  {
    name: 'access',
    path: '/access',
    prepare: (page) => page.getByTestId('admin-users-section').waitFor(),
  },
];

try {
  await db.query('select private.refresh_service_stats()');
  for (const theme of ['light', 'dark'] as const) {
    const context = await browser.newContext({
      viewport: { width: 1366, height: 900 },
      colorScheme: theme,
    });
    const page = await context.newPage();
    await page.goto(`${stack.dashboardUrl}/sign-in?next=%2F`);
    await page.getByLabel('Email').fill('admin@demo.local');
    await page.getByLabel('Password').fill('demo-admin-pass');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByTestId('nav-overview').waitFor();
    for (const item of PAGES) {
      await page.getByTestId(`nav-${item.name}`).click();
      await page.waitForTimeout(800);
      await item.prepare?.(page);
      await page.screenshot({ path: join(OUT, `${item.name}-${theme}.png`) });
    }
    // One phone-width picture per theme.
    await page.setViewportSize({ width: 390, height: 844 });
    await page.getByTestId('nav-overview').click();
    await page.waitForTimeout(800);
    await page.screenshot({ path: join(OUT, `overview-phone-${theme}.png`) });
    await context.close();
  }
} finally {
  await browser.close();
  await db.end();
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
