// The consent page in headless Chromium against the stack's tool server (001 §3, §5 rule 2): a
// real client registers by DCR, the browser opens /authorize, signs in on the dashboard, sees who
// asks for what as whom, and Allow, Deny or Switch account move the request as the spec says.
import { afterEach, describe, expect, it } from 'vitest';
import { consentPath, signInPath } from '../src/next-path.ts';
import {
  type DashboardPage,
  pathOf,
  setUpBrowser,
  submitPasswordSignIn,
} from './helpers/browser.ts';
import {
  createAccount,
  DEMO,
  removeRoles,
  setUpDashboardStack,
} from './helpers/dashboard-stack.ts';
import { type StandInClient, startStandInClient } from './helpers/oauth-client.ts';

const dashboard = setUpDashboardStack();
const browsers = setUpBrowser();
const clients: StandInClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.stop()));
});

/** A registered client, stopped after the test; `null` registers it without a client_name. */
async function registerClient(name: string | null = 'Test Assistant') {
  const client = await startStandInClient(dashboard().stack.mcpUrl, name ?? undefined);
  clients.push(client);
  return client;
}

/** Opens /authorize signed out and signs in on the way: returns on the consent page. */
async function reachConsent(
  { page }: DashboardPage,
  client: StandInClient,
  login: { email: string; password: string },
  state = 'state-1',
): Promise<string> {
  await page.goto(client.authorizationUrl(state));
  await page.waitForURL((url) => url.pathname === '/sign-in');
  const next = new URL(page.url()).searchParams.get('next') ?? '';
  const rid = new URLSearchParams(next.split('?')[1]).get('rid') ?? '';
  expect(pathOf(page)).toBe(signInPath(consentPath(rid)));
  await submitPasswordSignIn(page, login.email, login.password);
  await page.waitForURL((url) => url.pathname === '/mcp/consent');
  expect(pathOf(page)).toBe(consentPath(rid));
  await page.getByTestId('consent-heading').waitFor();
  return rid;
}

const button = (page: DashboardPage['page'], name: string) =>
  page.getByRole('button', { name, exact: true });

describe('the consent page', () => {
  it('asks to allow the application, names where it returns and the scope, and shows the account', async () => {
    const opened = await browsers.openPage();
    const client = await registerClient('Test Assistant');
    await reachConsent(opened, client, DEMO.user);
    const { page, cspViolations } = opened;
    expect(await page.getByTestId('consent-heading').textContent()).toBe(
      'Allow Test Assistant to access your account?',
    );
    expect(await page.getByTestId('redirect-host').textContent()).toBe(
      new URL(client.redirectUri).host,
    );
    expect(await page.getByTestId('scope-description').textContent()).toMatch(
      /^Full dashboard access/,
    );
    expect(await page.getByTestId('account-email').textContent()).toBe(DEMO.user.email);
    const badge = page.getByTestId('role-badge');
    expect(await badge.textContent()).toBe('Member');
    expect(await badge.getAttribute('data-admin')).toBe('false');
    for (const name of ['Allow', 'Deny', 'Switch account']) {
      expect(await button(page, name).isEnabled()).toBe(true);
    }
    expect(cspViolations).toEqual([]);
  });

  it('badges an admin account as admin, and an account without a role as "no role"', async () => {
    const client = await registerClient();
    const admin = await browsers.openPage();
    await reachConsent(admin, client, DEMO.admin);
    const adminBadge = admin.page.getByTestId('role-badge');
    expect(await adminBadge.getAttribute('data-admin')).toBe('true');
    expect(await adminBadge.getAttribute('class')).toContain('role-badge--admin');

    const account = await createAccount(dashboard().stack, 'no-role');
    await removeRoles(dashboard().stack, account.userId);
    const roleless = await browsers.openPage();
    await reachConsent(roleless, client, account);
    expect(await roleless.page.getByTestId('role-badge').textContent()).toBe('no role');
  });

  it('names the application by client_id when it registered no name', async () => {
    const client = await registerClient(null);
    const opened = await browsers.openPage();
    await reachConsent(opened, client, DEMO.viewer);
    expect(await opened.page.getByTestId('consent-heading').textContent()).toBe(
      `Allow ${client.clientId} to access your account?`,
    );
  });
});

describe('Allow and Deny', () => {
  it('Allow returns to the client with a code, the state and the issuer', async () => {
    const client = await registerClient();
    const opened = await browsers.openPage();
    await reachConsent(opened, client, DEMO.user, 'state-allow');
    await button(opened.page, 'Allow').click();
    await opened.page.waitForURL((url) => url.href.startsWith(client.redirectUri));
    const callback = client.callbacks.at(-1);
    expect(callback?.searchParams.get('code')).toBeTruthy();
    expect(callback?.searchParams.get('state')).toBe('state-allow');
    expect(callback?.searchParams.get('iss')).toBe(dashboard().stack.mcpUrl);
    expect(callback?.searchParams.has('error')).toBe(false);
  });

  it('Deny returns access_denied to the client', async () => {
    const client = await registerClient();
    const opened = await browsers.openPage();
    await reachConsent(opened, client, DEMO.user, 'state-deny');
    await button(opened.page, 'Deny').click();
    await opened.page.waitForURL((url) => url.href.startsWith(client.redirectUri));
    const callback = client.callbacks.at(-1);
    expect(callback?.searchParams.get('error')).toBe('access_denied');
    expect(callback?.searchParams.get('state')).toBe('state-deny');
    expect(callback?.searchParams.has('code')).toBe(false);
  });

  it('shows an answered request as answered, with no buttons', async () => {
    const client = await registerClient();
    const opened = await browsers.openPage();
    const rid = await reachConsent(opened, client, DEMO.user);
    await button(opened.page, 'Deny').click();
    await opened.page.waitForURL((url) => url.href.startsWith(client.redirectUri));
    await opened.page.goto(`${dashboard().dashboardUrl}${consentPath(rid)}`);
    const problem = opened.page.getByTestId('consent-error');
    await expect.poll(() => problem.getAttribute('data-code')).toBe('already_decided');
    expect(await opened.page.getByRole('button').count()).toBe(0);
  });

  it('shows an unknown request as not found, with no buttons', async () => {
    const { page } = await browsers.openPage();
    const unknown = 'unknown_request_0123456789abcdef0123456789';
    await page.goto(`${dashboard().dashboardUrl}${signInPath(consentPath(unknown))}`);
    await submitPasswordSignIn(page, DEMO.user.email, DEMO.user.password);
    const problem = page.getByTestId('consent-error');
    await expect.poll(() => problem.getAttribute('data-code')).toBe('not_found');
    expect(await page.getByRole('button').count()).toBe(0);
  });
});

describe('Switch account', () => {
  it('signs out and returns to the same request, which the other account then allows', async () => {
    const client = await registerClient();
    const opened = await browsers.openPage();
    const { page } = opened;
    const rid = await reachConsent(opened, client, DEMO.user, 'state-switch');
    await button(page, 'Switch account').click();
    await page.waitForURL((url) => url.pathname === '/sign-in');
    expect(pathOf(page)).toBe(signInPath(consentPath(rid)));
    expect(
      await page.evaluate(() => Object.keys(localStorage).filter((key) => key.startsWith('sb-'))),
    ).toEqual([]);

    await submitPasswordSignIn(page, DEMO.admin.email, DEMO.admin.password);
    await page.waitForURL((url) => url.pathname === '/mcp/consent');
    expect(pathOf(page)).toBe(consentPath(rid));
    await expect.poll(() => page.getByTestId('account-email').textContent()).toBe(DEMO.admin.email);
    await button(page, 'Allow').click();
    await page.waitForURL((url) => url.href.startsWith(client.redirectUri));
    expect(client.callbacks.at(-1)?.searchParams.get('state')).toBe('state-switch');
    expect(client.callbacks.at(-1)?.searchParams.get('code')).toBeTruthy();
  });
});

describe('a session the tool server no longer accepts', () => {
  it('is signed out here and sent to sign-in for the same request', async () => {
    const client = await registerClient();
    const opened = await browsers.openPage();
    const { page } = opened;
    const rid = await reachConsent(opened, client, DEMO.viewer);
    // End every session of the account on the server; this browser still holds its token.
    const token = await page.evaluate(() => {
      const key = Object.keys(localStorage).find((name) => name.endsWith('-auth-token'));
      return key ? (JSON.parse(localStorage.getItem(key) ?? '{}').access_token as string) : '';
    });
    const { stack } = dashboard();
    const logout = await fetch(`${stack.apiUrl}/auth/v1/logout?scope=global`, {
      method: 'POST',
      headers: { apikey: stack.keys.publishableKey, authorization: `Bearer ${token}` },
    });
    expect(logout.status).toBe(204);

    await page.reload();
    await page.waitForURL((url) => url.pathname === '/sign-in');
    expect(pathOf(page)).toBe(signInPath(consentPath(rid)));
    await expect
      .poll(() => page.getByTestId('sign-in-notice').textContent())
      .toContain('not accepted');
  });
});
