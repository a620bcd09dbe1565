// Sign-in in headless Chromium against a started stack and the built dashboard: password and
// magic link (PKCE), the return to a validated `next`, and the detour a signed-out visitor of
// the consent page takes (001 §3 "normal sign-in first, then back to the same consent request").
import { readMailbox } from '@capture/stack';
import { describe, expect, it } from 'vitest';
import { consentPath, signInPath } from '../src/next-path.ts';
import { pathOf, setUpBrowser, submitPasswordSignIn } from './helpers/browser.ts';
import {
  createAccount,
  DEMO,
  setUpDashboardStack,
  waitForMagicLink,
} from './helpers/dashboard-stack.ts';

const dashboard = setUpDashboardStack();
const browsers = setUpBrowser();
const RID = 'test_request_0123456789';

describe('password sign-in', () => {
  it('takes a signed-out visitor of / to sign-in and back home with the account shown', async () => {
    const { page, cspViolations } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}/`);
    await page.waitForURL((url) => url.pathname === '/sign-in');
    expect(pathOf(page)).toBe(signInPath('/'));
    await submitPasswordSignIn(page, DEMO.user.email, DEMO.user.password);
    await page.waitForURL((url) => url.pathname === '/');
    await expect.poll(() => page.getByTestId('account-email').textContent()).toBe(DEMO.user.email);
    expect(cspViolations).toEqual([]);
  });

  it('shows the admin role badge, styled as admin, on home', async () => {
    const { page } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    await submitPasswordSignIn(page, DEMO.admin.email, DEMO.admin.password);
    const badge = page.getByTestId('role-badge');
    await expect.poll(() => badge.getAttribute('data-admin'), { timeout: 5000 }).toBe('true');
    expect(await badge.getAttribute('class')).toContain('role-badge--admin');
  });

  it('says the password is wrong and stays on sign-in', async () => {
    const { page } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    await submitPasswordSignIn(page, DEMO.user.email, 'not-the-password');
    await expect
      .poll(() => page.getByTestId('sign-in-error').textContent())
      .toBe('Wrong email or password.');
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    expect(await page.evaluate(() => Object.keys(localStorage))).toEqual([]);
  });

  it('signs out back to sign-in, after which / asks for sign-in again', async () => {
    const { page } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    await submitPasswordSignIn(page, DEMO.viewer.email, DEMO.viewer.password);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await expect
      .poll(() => page.getByTestId('sign-in-notice').textContent())
      .toContain('signed out');
    await page.goto(`${dashboard().dashboardUrl}/`);
    await page.waitForURL((url) => url.pathname === '/sign-in');
  });

  it('ignores an outside next and lands on the dashboard home', async () => {
    const { page } = await browsers.openPage();
    const hostile = `/sign-in?next=${encodeURIComponent('https://evil.example/')}`;
    await page.goto(`${dashboard().dashboardUrl}${hostile}`);
    await submitPasswordSignIn(page, DEMO.user.email, DEMO.user.password);
    await page.waitForURL((url) => url.pathname === '/');
    expect(new URL(page.url()).origin).toBe(dashboard().dashboardUrl);
  });
});

describe('the consent route signed out', () => {
  it('goes to sign-in and, after signing in, back to the same request', async () => {
    const { page } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}${consentPath(RID)}`);
    await page.waitForURL((url) => url.pathname === '/sign-in');
    expect(pathOf(page)).toBe(signInPath(consentPath(RID)));
    await submitPasswordSignIn(page, DEMO.user.email, DEMO.user.password);
    await page.waitForURL((url) => url.pathname === '/mcp/consent');
    expect(pathOf(page)).toBe(consentPath(RID));
  });

  it('shows a malformed request link as invalid without asking to sign in', async () => {
    const { page } = await browsers.openPage();
    await page.goto(`${dashboard().dashboardUrl}/mcp/consent?rid=short`);
    await expect
      .poll(() => page.getByTestId('consent-error').getAttribute('data-code'))
      .toBe('invalid_link');
    expect(new URL(page.url()).pathname).toBe('/mcp/consent');
    expect(await page.getByRole('button').count()).toBe(0);
  });
});

describe('magic link sign-in', () => {
  it('returns through the mailed link to the consent request it started from', async () => {
    const { page, cspViolations } = await browsers.openPage();
    const account = await createAccount(dashboard().stack, 'magic');
    await page.goto(`${dashboard().dashboardUrl}${signInPath(consentPath(RID))}`);
    const since = new Date();
    await page.getByLabel('Email').fill(account.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await expect
      .poll(() => page.getByTestId('magic-link-sent').textContent())
      .toContain(account.email);

    const link = await waitForMagicLink(dashboard().stack, account.email, since);
    await page.goto(link);
    await page.waitForURL((url) => url.pathname === '/mcp/consent');
    // Exactly the request: the PKCE code and flow id are gone from the URL.
    expect(pathOf(page)).toBe(consentPath(RID));
    expect(cspViolations).toEqual([]);
  });

  it('lands on home when next is /', async () => {
    const { page } = await browsers.openPage();
    const account = await createAccount(dashboard().stack, 'magic-home');
    await page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    const since = new Date();
    await page.getByLabel('Email').fill(account.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.getByTestId('magic-link-sent').waitFor();
    await page.goto(await waitForMagicLink(dashboard().stack, account.email, since));
    await page.waitForURL((url) => url.pathname === '/');
    await expect.poll(() => page.getByTestId('account-email').textContent()).toBe(account.email);
  });

  it('signs nobody in when the link is opened in another browser (PKCE)', async () => {
    const asker = await browsers.openPage();
    const other = await browsers.openPage();
    const account = await createAccount(dashboard().stack, 'magic-elsewhere');
    await asker.page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    const since = new Date();
    await asker.page.getByLabel('Email').fill(account.email);
    await asker.page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await asker.page.getByTestId('magic-link-sent').waitFor();

    await other.page.goto(await waitForMagicLink(dashboard().stack, account.email, since));
    await other.page.waitForURL((url) => url.pathname === '/sign-in');
    await expect
      .poll(() => other.page.getByTestId('sign-in-error').textContent())
      .toContain('another browser');
    expect(await other.page.evaluate(() => Object.keys(localStorage))).toEqual([]);
  });

  it('answers an address without an account as if it had one, and sends nothing', async () => {
    const { page } = await browsers.openPage();
    const nobody = `nobody-${Date.now()}@example.com`;
    await page.goto(`${dashboard().dashboardUrl}${signInPath('/')}`);
    await page.getByLabel('Email').fill(nobody);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await expect.poll(() => page.getByTestId('magic-link-sent').textContent()).toContain(nobody);
    // The auth service writes mail before it answers, so by now any mail would be there.
    expect(readMailbox(dashboard().stack.mailboxDir, nobody)).toEqual([]);
  });
});
