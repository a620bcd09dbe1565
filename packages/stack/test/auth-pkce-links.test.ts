// E-mail links of PKCE flows (supabase-js `flowType: 'pkce'`), as GoTrue makes them (api/pkce.go
// addFlowPrefixToToken, api/verify.go verifyGet): the token is `pkce_` + the hash, following the
// link redirects with `?code=`, and the code is exchanged for a session. Implicit-flow tokens stay
// unprefixed, and neither kind passes for the other.
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MailMessage, readMailbox } from '../src/index.ts';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';

const stack = useFixtureStack();
let db: pg.Pool;
let admin: SupabaseClient;

beforeAll(() => {
  db = new pg.Pool({ connectionString: stack().dbUrl, max: 2 });
  admin = clientFor(stack(), stack().keys.secretKey);
});

afterAll(async () => {
  await db?.end();
});

const PASSWORD = 'pkce-links-user-1';
const SITE_URL = 'http://127.0.0.1:3000';

/** A supabase-js client in the PKCE flow; it keeps its code verifier in memory. */
function pkceClient(): SupabaseClient {
  return createClient(stack().apiUrl, stack().keys.publishableKey, {
    auth: {
      flowType: 'pkce',
      persistSession: false,
      autoRefreshToken: false,
      detectSessionInUrl: false,
    },
  });
}

/** The newest message to `to` in the stack's mailbox. */
function lastMail(to: string): MailMessage {
  const message = readMailbox(stack().mailboxDir, to).at(-1);
  if (!message) throw new Error(`no mail to ${to}`);
  return message;
}

function linkToken(message: MailMessage): string {
  return new URL(message.actionLink).searchParams.get('token') ?? '';
}

/** The action link with its token replaced. */
function withToken(message: MailMessage, token: string): string {
  const link = new URL(message.actionLink);
  link.searchParams.set('token', token);
  return link.toString();
}

/** Follows a link as a browser would, up to the first redirect. */
async function follow(link: string): Promise<URL> {
  const response = await fetch(link, { redirect: 'manual' });
  expect(response.status).toBe(303);
  return new URL(response.headers.get('location') as string);
}

function fragmentOf(location: URL): URLSearchParams {
  return new URLSearchParams(location.hash.slice(1));
}

/** A code redirect: `?code=` and nothing in the fragment (no session in the browser's URL). */
function expectCodeRedirect(location: URL): string {
  expect(`${location.origin}${location.pathname}`).toBe(`${SITE_URL}/`);
  expect(location.hash).toBe('');
  const code = location.searchParams.get('code');
  expect(code).toMatch(/^[0-9a-f-]{36}$/);
  return code as string;
}

/** A refused link: GoTrue's error in the fragment, and for a PKCE flow in the query as well. */
function expectRefusal(location: URL, flow: 'pkce' | 'implicit', errorCode = 'otp_expired') {
  const expected = {
    error: 'access_denied',
    error_code: errorCode,
    error_description: 'Email link is invalid or has expired',
  };
  const fragment = fragmentOf(location);
  expect(Object.fromEntries(fragment)).toEqual({ ...expected, sb: '' });
  expect(location.searchParams.get('code')).toBeNull();
  if (flow === 'pkce') {
    expect(Object.fromEntries(location.searchParams)).toEqual(expected);
  } else {
    expect(location.search).toBe('');
  }
}

describe('PKCE e-mail links carry the pkce_ prefix', () => {
  it('mails a pkce_ magic link whose redirect carries ?code=, exchanged for a session', async () => {
    const email = uniqueEmail('pkce-otp');
    const client = pkceClient();
    expect((await client.auth.signInWithOtp({ email })).error).toBeNull();
    const message = lastMail(email);
    expect(linkToken(message)).toMatch(/^pkce_[0-9a-f]{56}$/);
    expect(message.tokenHash).toBe(linkToken(message));
    const code = expectCodeRedirect(await follow(message.actionLink));
    const { data, error } = await client.auth.exchangeCodeForSession(code);
    expect(error).toBeNull();
    expect(data.session?.user.email).toBe(email);
    expect(data.user?.email_confirmed_at).toBeTruthy();
  });

  it('mails a pkce_ recovery link; its code gives a session marked as a recovery', async () => {
    const email = uniqueEmail('pkce-recover');
    await admin.auth.admin.createUser({ email, password: PASSWORD, email_confirm: true });
    const client = pkceClient();
    expect((await client.auth.resetPasswordForEmail(email)).error).toBeNull();
    const message = lastMail(email);
    expect(message.kind).toBe('recovery');
    expect(linkToken(message)).toMatch(/^pkce_/);
    const code = expectCodeRedirect(await follow(message.actionLink));
    const events: string[] = [];
    client.auth.onAuthStateChange((event) => {
      events.push(event);
    });
    const { data, error } = await client.auth.exchangeCodeForSession(code);
    expect(error).toBeNull();
    expect(data.session?.user.email).toBe(email);
    expect(events).toContain('PASSWORD_RECOVERY');
  });

  it('mails a pkce_ sign-up confirmation on resend; its code confirms and signs in', async () => {
    const email = uniqueEmail('pkce-resend');
    await admin.auth.admin.createUser({ email, password: PASSWORD, email_confirm: false });
    const client = pkceClient();
    expect((await client.auth.resend({ type: 'signup', email })).error).toBeNull();
    const message = lastMail(email);
    expect(message.kind).toBe('signup');
    expect(linkToken(message)).toMatch(/^pkce_/);
    const code = expectCodeRedirect(await follow(message.actionLink));
    const { data, error } = await client.auth.exchangeCodeForSession(code);
    expect(error).toBeNull();
    expect(data.user?.email).toBe(email);
    expect(data.user?.email_confirmed_at).toBeTruthy();
  });

  it('mails pkce_ links to both addresses of a change; the second one redirects with ?code=', async () => {
    const email = uniqueEmail('pkce-change-old');
    const newEmail = uniqueEmail('pkce-change-new');
    const client = pkceClient();
    expect((await client.auth.signUp({ email, password: PASSWORD })).error).toBeNull();
    expect((await client.auth.updateUser({ email: newEmail })).error).toBeNull();
    const toNew = lastMail(newEmail);
    const toCurrent = lastMail(email);
    expect(linkToken(toNew)).toMatch(/^pkce_/);
    expect(linkToken(toCurrent)).toMatch(/^pkce_/);
    // The first confirmation answers with GoTrue's message, in the query too for a PKCE flow.
    const first = await follow(toCurrent.actionLink);
    expect(first.searchParams.get('message')).toMatch(/^Confirmation link accepted/);
    expect(fragmentOf(first).get('message')).toBe(first.searchParams.get('message'));
    expect(first.searchParams.get('code')).toBeNull();
    const code = expectCodeRedirect(await follow(toNew.actionLink));
    const { data, error } = await client.auth.exchangeCodeForSession(code);
    expect(error).toBeNull();
    expect(data.user?.email).toBe(newEmail);
  });
});

describe('implicit-flow links stay unprefixed', () => {
  it('mails magic link, recovery and admin-generated tokens without the prefix', async () => {
    const email = uniqueEmail('implicit');
    const client = clientFor(stack());
    await client.auth.signInWithOtp({ email });
    const magicLink = lastMail(email);
    // The magic link of a new (unconfirmed) user is its confirmation; the recovery has its own
    // token, so max_frequency does not hold it back.
    await client.auth.resetPasswordForEmail(email);
    const recovery = lastMail(email);
    const generated = await admin.auth.admin.generateLink({ type: 'magiclink', email });
    for (const token of [
      linkToken(magicLink),
      magicLink.tokenHash,
      linkToken(recovery),
      generated.data.properties?.hashed_token,
    ]) {
      expect(token).toMatch(/^[0-9a-f]{56}$/);
    }
    const session = fragmentOf(await follow(recovery.actionLink));
    expect(session.get('token_type')).toBe('bearer');
    expect(session.get('type')).toBe('recovery');
  });
});

describe('a token of one flow does not pass for the other', () => {
  it('refuses a pkce_ token stripped of its prefix, by link and by token_hash, and leaves it usable', async () => {
    const email = uniqueEmail('pkce-stripped');
    const client = pkceClient();
    await client.auth.signInWithOtp({ email });
    const message = lastMail(email);
    const token = linkToken(message);
    expect(token).toMatch(/^pkce_/);
    const bare = token.slice('pkce_'.length);
    expectRefusal(await follow(withToken(message, bare)), 'implicit');
    const posted = await clientFor(stack()).auth.verifyOtp({
      token_hash: bare,
      type: 'magiclink',
    });
    expect(posted.error).toMatchObject({ status: 403, code: 'otp_expired' });
    // Neither refusal spent the real link.
    const code = expectCodeRedirect(await follow(message.actionLink));
    expect((await client.auth.exchangeCodeForSession(code)).error).toBeNull();
  });

  it('refuses a tampered pkce_ token, with the error in the query and the fragment', async () => {
    const email = uniqueEmail('pkce-tampered');
    await pkceClient().auth.signInWithOtp({ email });
    const message = lastMail(email);
    const token = linkToken(message);
    expect(token).toMatch(/^pkce_/);
    const tampered = `${token.slice(0, -1)}${token.endsWith('0') ? '1' : '0'}`;
    expectRefusal(await follow(withToken(message, tampered)), 'pkce');
  });

  it('refuses an implicit token given the pkce_ prefix', async () => {
    const email = uniqueEmail('implicit-forged');
    await clientFor(stack()).auth.signInWithOtp({ email });
    const message = lastMail(email);
    expectRefusal(await follow(withToken(message, `pkce_${linkToken(message)}`)), 'pkce');
  });

  it('refuses a pkce_ link whose flow is gone, unspent (flow_state_not_found)', async () => {
    const email = uniqueEmail('pkce-no-flow');
    await pkceClient().auth.signInWithOtp({ email });
    const message = lastMail(email);
    expect(linkToken(message)).toMatch(/^pkce_/);
    await db.query(
      'delete from auth.flow_state where user_id = (select id from auth.users where email = $1)',
      [email],
    );
    const location = await follow(message.actionLink);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('error_code')).toBe('flow_state_not_found');
    expect(fragmentOf(location).get('error_code')).toBe('flow_state_not_found');
    const { rows } = await db.query<{ recovery_token: string; confirmation_token: string }>(
      'select recovery_token, confirmation_token from auth.users where email = $1',
      [email],
    );
    expect([rows[0]?.recovery_token, rows[0]?.confirmation_token]).toContain(linkToken(message));
  });

  it('accepts the pkce_ token_hash and the typed code by POST /verify, as GoTrue does', async () => {
    const email = uniqueEmail('pkce-post');
    await pkceClient().auth.signInWithOtp({ email });
    const first = lastMail(email);
    expect(first.tokenHash).toMatch(/^pkce_/);
    const byHash = await clientFor(stack()).auth.verifyOtp({
      token_hash: first.tokenHash,
      type: 'magiclink',
    });
    expect(byHash.error).toBeNull();
    expect(byHash.data.session?.user.email).toBe(email);
    // Now confirmed, the user's next magic link is a recovery token: no max_frequency wait.
    await pkceClient().auth.signInWithOtp({ email });
    const second = lastMail(email);
    expect(second.tokenHash).toMatch(/^pkce_/);
    const byCode = await clientFor(stack()).auth.verifyOtp({
      email,
      token: second.otp,
      type: 'email',
    });
    expect(byCode.error).toBeNull();
    expect(byCode.data.session?.user.email).toBe(email);
  });
});
