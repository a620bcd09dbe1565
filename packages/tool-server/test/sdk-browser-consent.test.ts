// The whole flow with the official v2 SDK client once more, but with the user's part done in
// Debian's Chromium on the real dashboard: the SDK's authorization URL is opened in the browser,
// which is sent to the consent page, signs in there, presses Allow and is redirected back to the
// client's loopback redirect URI with the code, which the SDK then exchanges.
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO, useOAuthStack } from './helpers/oauth-stack.ts';
import { runV2Flow } from './helpers/sdk-flows.ts';

const stack = useOAuthStack();
let browser: Browser | undefined;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
  });
});

afterAll(async () => {
  await browser?.close();
});

/** The user in Chromium: authorize → sign in on the dashboard → Allow → back to the client. */
async function approveOnConsentPage(authorizationUrl: URL): Promise<URL> {
  if (!browser) throw new Error('the browser is not started');
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    // The client's redirect URI is a loopback port nobody listens on: answer it here, as the
    // client's own callback listener would.
    let callback: URL | undefined;
    await page.route('http://127.0.0.1:9/callback**', async (route) => {
      callback = new URL(route.request().url());
      await route.fulfill({ status: 200, contentType: 'text/plain', body: 'signed in' });
    });
    await page.goto(authorizationUrl.toString());
    await page.waitForURL((url) => url.pathname === '/sign-in');
    await page.getByLabel('Email').fill(DEMO.member.email);
    await page.getByLabel('Password').fill(DEMO.member.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.pathname === '/mcp/consent');
    expect(await page.getByTestId('role-badge').textContent()).toMatch(/Member/);
    await page.getByRole('button', { name: 'Allow', exact: true }).click();
    await page.waitForURL((url) => url.href.startsWith('http://127.0.0.1:9/callback'));
    if (!callback) throw new Error('the browser never reached the redirect URI');
    return callback;
  } finally {
    await context.close();
  }
}

describe('the v2 SDK client with consent in the browser', () => {
  it('authorizes through the real consent page, then initializes and lists tools', async () => {
    const { provider, client, clientId } = await runV2Flow(stack(), stack().mcpUrl, 'legacy', {
      approve: approveOnConsentPage,
    });
    try {
      expect(provider.callbackUrl?.searchParams.get('iss')).toBe(stack().mcpUrl);
      expect(client.getServerVersion()?.name).toBe('capture-platform');
      expect(Array.isArray((await client.listTools()).tools)).toBe(true);
      expect(clientId).not.toBe('');
    } finally {
      await client.close();
    }
  });
});
