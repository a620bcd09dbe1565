// Headless Chromium (Debian's /usr/bin/chromium) for the dashboard's browser tests: one browser
// per file, a fresh context (own storage, so own session) per page, CSP violations collected.
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';

export type DashboardPage = { page: Page; context: BrowserContext; cspViolations: string[] };

export type Browsers = { openPage(): Promise<DashboardPage> };

/** Registers hooks for one browser per file; pages opened in a test are closed after it. */
export function setUpBrowser(): Browsers {
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  beforeAll(async () => {
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox'],
    });
  });
  afterEach(async () => {
    await Promise.all(contexts.splice(0).map((context) => context.close()));
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    async openPage() {
      if (!browser) throw new Error('the browser is not started');
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(10_000);
      const cspViolations: string[] = [];
      page.on('console', (message) => {
        if (message.text().includes('Content Security Policy')) cspViolations.push(message.text());
      });
      return { page, context, cspViolations };
    },
  };
}

/** Fills the sign-in form by its labels and presses "Sign in". */
export async function submitPasswordSignIn(page: Page, email: string, password: string) {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

/** The path and query the page is on, as the app routes it. */
export function pathOf(page: Page): string {
  const url = new URL(page.url());
  return `${url.pathname}${url.search}`;
}
