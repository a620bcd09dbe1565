// Address changes with supabase-js (GoTrue's secure e-mail change): a session alone never moves
// the account's address; the new address, and with double_confirm_changes the current one too,
// must confirm, by link or typed code, in either order. Most tests run on the fixture stack
// (autoconfirm, double_confirm_changes on); settings the fixture does not have run on an
// in-process service over the same database.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuthApp } from '../src/auth/app.ts';
import { type AuthConfig, authConfigFrom } from '../src/auth/auth-config.ts';
import { Mailbox, type MailMessage, readMailbox } from '../src/auth/mailbox.ts';
import { loadProjectConfig } from '../src/project-config.ts';
import {
  clientFor,
  FIXTURE_PROJECT,
  uniqueEmail,
  useFixtureStack,
} from './helpers/fixture-stack.ts';

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

const PASSWORD = 'change-me-not-1';
const ACCEPTED =
  'Confirmation link accepted. Please proceed to confirm link sent to the other email';

/** `[auth.email] max_frequency` of the fixture is one second. */
const waitOutMaxFrequency = () => new Promise((resolve) => setTimeout(resolve, 1100));

/** A signed-up (autoconfirm: signed-in) client and its address. */
async function signedInUser(prefix = 'owner'): Promise<{ client: SupabaseClient; email: string }> {
  const email = uniqueEmail(prefix);
  const client = clientFor(stack());
  const { error } = await client.auth.signUp({ email, password: PASSWORD });
  expect(error).toBeNull();
  return { client, email };
}

/** The newest message to `to` in the stack's mailbox. */
function lastMail(to: string, mailboxDir = stack().mailboxDir): MailMessage {
  const messages = readMailbox(mailboxDir, to);
  const message = messages[messages.length - 1];
  if (!message) throw new Error(`no mail to ${to}`);
  return message;
}

/** Follows an e-mail link as a browser would and returns the redirect's fragment. */
async function follow(link: string): Promise<URLSearchParams> {
  const response = await fetch(link, { redirect: 'manual' });
  expect(response.status).toBe(303);
  return new URLSearchParams(new URL(response.headers.get('location') as string).hash.slice(1));
}

/** The pending change as stored (GoTrue's JSON never shows `email_change_confirm_status`). */
async function storedChange(email: string) {
  const { rows } = await db.query<{
    email: string;
    email_change: string;
    email_change_confirm_status: number;
  }>('select email, email_change, email_change_confirm_status from auth.users where email = $1', [
    email,
  ]);
  return rows[0];
}

const decodeClaims = (token: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());

describe('a change asked for with only a session', () => {
  it('leaves the address as it is: a stolen session cannot take over the account', async () => {
    const { client, email } = await signedInUser('victim');
    const attacker = uniqueEmail('attacker');
    const { data, error } = await client.auth.updateUser({ email: attacker });
    expect(error).toBeNull();
    expect(data.user).toMatchObject({ email, new_email: attacker });
    expect(data.user?.email_change_sent_at).toBeTruthy();
    const shown = await client.auth.getUser();
    expect(shown.data.user).toMatchObject({ email, new_email: attacker });

    // The attacker completes the half they control: the new address's code gives no session.
    const code = lastMail(attacker).otp;
    const half = await clientFor(stack()).auth.verifyOtp({
      email: attacker,
      token: code,
      type: 'email_change',
    });
    expect(half).toMatchObject({ data: { user: null, session: null }, error: null });
    expect(await storedChange(email)).toMatchObject({ email, email_change: attacker });

    const asAttacker = await clientFor(stack()).auth.signInWithPassword({
      email: attacker,
      password: PASSWORD,
    });
    expect(asAttacker.error?.code).toBe('invalid_credentials');
    const asOwner = await clientFor(stack()).auth.signInWithPassword({
      email,
      password: PASSWORD,
    });
    expect(asOwner.error).toBeNull();
    expect(asOwner.data.user?.email).toBe(email);
  });

  it('mails the current address too, naming neither code in the answer', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    const { data } = await client.auth.updateUser({ email: next });
    expect(readMailbox(stack().mailboxDir, email)).toHaveLength(1);
    expect(readMailbox(stack().mailboxDir, next)).toHaveLength(1);
    expect(lastMail(email)).toMatchObject({ kind: 'email_change', to: email });
    expect(lastMail(email).otp).not.toBe(lastMail(next).otp);
    const answer = JSON.stringify(data.user);
    expect(answer).not.toContain(lastMail(email).otp);
    expect(answer).not.toContain(lastMail(next).tokenHash);
  });
});

describe('double confirmation (double_confirm_changes = true)', () => {
  it.each(['the new address', 'the current address'])(
    'moves the address only once both links are followed, %s first',
    async (first) => {
      const { client, email } = await signedInUser();
      const next = uniqueEmail('next');
      await client.auth.updateUser({ email: next });
      const [firstLink, secondLink] =
        first === 'the new address'
          ? [lastMail(next).actionLink, lastMail(email).actionLink]
          : [lastMail(email).actionLink, lastMail(next).actionLink];

      const accepted = await follow(firstLink);
      expect(Object.fromEntries(accepted)).toEqual({ message: ACCEPTED, sb: '' });
      expect(await storedChange(email)).toMatchObject({
        email,
        email_change: next,
        email_change_confirm_status: 1,
      });
      expect((await client.auth.getUser()).data.user).toMatchObject({ email, new_email: next });

      const done = await follow(secondLink);
      expect(done.get('type')).toBe('email_change');
      expect(decodeClaims(done.get('access_token') as string).email).toBe(next);
      const user = (await client.auth.getUser()).data.user;
      expect(user?.email).toBe(next);
      expect(user?.new_email).toBeUndefined();
      expect(user?.identities?.[0]?.identity_data).toMatchObject({
        email: next,
        email_verified: true,
      });
      expect(await storedChange(next)).toMatchObject({
        email_change: '',
        email_change_confirm_status: 0,
      });
      const { rows } = await db.query(
        `select token_type from auth.one_time_tokens t join auth.users u on u.id = t.user_id
       where u.email = $1`,
        [next],
      );
      expect(rows).toEqual([]);
      const old = await clientFor(stack()).auth.signInWithPassword({ email, password: PASSWORD });
      expect(old.error?.code).toBe('invalid_credentials');
      const moved = await clientFor(stack()).auth.signInWithPassword({
        email: next,
        password: PASSWORD,
      });
      expect(moved.error).toBeNull();
    },
  );

  it('answers the first of two confirmations by POST /verify with GoTrue msg and no session', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    await client.auth.updateUser({ email: next });
    const response = await fetch(`${stack().apiUrl}/auth/v1/verify`, {
      method: 'POST',
      headers: { apikey: stack().keys.publishableKey, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'email_change', token_hash: lastMail(email).tokenHash }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ msg: ACCEPTED, code: '200' });
    const last = await clientFor(stack()).auth.verifyOtp({
      token_hash: lastMail(next).tokenHash,
      type: 'email_change',
    });
    expect(last.error).toBeNull();
    expect(last.data.session?.user.email).toBe(next);
  });

  it('confirms with typed codes, each typed with its own address', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    await client.auth.updateUser({ email: next });
    const currentCode = lastMail(email).otp;
    const newCode = lastMail(next).otp;
    const verify = (address: string, token: string) =>
      clientFor(stack()).auth.verifyOtp({ email: address, token, type: 'email_change' });

    expect((await verify(next, currentCode)).error).toMatchObject({
      status: 403,
      code: 'otp_expired',
    });
    expect((await verify(email, newCode)).error).toMatchObject({
      status: 403,
      code: 'otp_expired',
    });
    const first = await verify(email, currentCode);
    expect(first).toMatchObject({ data: { user: null, session: null }, error: null });
    expect((await verify(email, currentCode)).error?.code).toBe('otp_expired');
    const second = await verify(next, newCode);
    expect(second.error).toBeNull();
    expect(second.data.session?.user.email).toBe(next);
  });

  it('burns the current address code after five wrong guesses, so the new link alone never completes', async () => {
    const { client, email } = await signedInUser();
    const attacker = uniqueEmail('attacker');
    await client.auth.updateUser({ email: attacker });
    const currentCode = lastMail(email).otp;
    for (let i = 0; i < 5; i += 1) {
      const wrong = String((Number(currentCode) + 1 + i) % 1_000_000).padStart(6, '0');
      const guess = await clientFor(stack()).auth.verifyOtp({
        email,
        token: wrong,
        type: 'email_change',
      });
      expect(guess.error?.code).toBe('otp_expired');
    }
    const right = await clientFor(stack()).auth.verifyOtp({
      email,
      token: currentCode,
      type: 'email_change',
    });
    expect(right.error?.code).toBe('otp_expired');
    const accepted = await follow(lastMail(attacker).actionLink);
    expect(accepted.get('message')).toBe(ACCEPTED);
    expect(await storedChange(email)).toMatchObject({ email, email_change_confirm_status: 1 });
    const spent = await follow(lastMail(email).actionLink);
    expect(spent.get('error_code')).toBe('otp_expired');
    expect((await client.auth.getUser()).data.user?.email).toBe(email);
  });
});

describe('pending changes', () => {
  it('refuses the links and codes of a change a newer request replaced', async () => {
    const { client, email } = await signedInUser();
    const first = uniqueEmail('first');
    await client.auth.updateUser({ email: first });
    const stale = { current: lastMail(email), next: lastMail(first) };
    await waitOutMaxFrequency();
    const second = uniqueEmail('second');
    const { data } = await client.auth.updateUser({ email: second });
    expect(data.user).toMatchObject({ email, new_email: second });

    for (const message of [stale.current, stale.next]) {
      expect((await follow(message.actionLink)).get('error_code')).toBe('otp_expired');
    }
    const typed = await clientFor(stack()).auth.verifyOtp({
      email: first,
      token: stale.next.otp,
      type: 'email_change',
    });
    expect(typed.error?.code).toBe('otp_expired');
    expect(await storedChange(email)).toMatchObject({
      email_change: second,
      email_change_confirm_status: 0,
    });

    await follow(lastMail(email).actionLink);
    const done = await follow(lastMail(second).actionLink);
    expect(decodeClaims(done.get('access_token') as string).email).toBe(second);
  });

  it('refuses expired links and codes', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    await client.auth.updateUser({ email: next });
    // Past [auth.email] otp_expiry (the default hour).
    await db.query(
      `update auth.users set email_change_sent_at = now() - interval '61 minutes' where email = $1`,
      [email],
    );
    const link = await follow(lastMail(next).actionLink);
    expect(link.get('error_code')).toBe('otp_expired');
    const typed = await clientFor(stack()).auth.verifyOtp({
      email,
      token: lastMail(email).otp,
      type: 'email_change',
    });
    expect(typed.error).toMatchObject({ status: 403, code: 'otp_expired' });
    expect(await storedChange(email)).toMatchObject({ email, email_change_confirm_status: 0 });
  });

  it('resends to both addresses within max_frequency only, voiding the earlier tokens', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    await client.auth.updateUser({ email: next });
    const earlier = lastMail(next);
    const tooSoon = await clientFor(stack()).auth.resend({ type: 'email_change', email });
    expect(tooSoon.error).toMatchObject({ status: 429, code: 'over_email_send_rate_limit' });
    await waitOutMaxFrequency();
    const resent = await clientFor(stack()).auth.resend({ type: 'email_change', email });
    expect(resent.error).toBeNull();
    expect(readMailbox(stack().mailboxDir, email)).toHaveLength(2);
    expect(readMailbox(stack().mailboxDir, next)).toHaveLength(2);
    expect((await follow(earlier.actionLink)).get('error_code')).toBe('otp_expired');
    await follow(lastMail(next).actionLink);
    const done = await follow(lastMail(email).actionLink);
    expect(decodeClaims(done.get('access_token') as string).email).toBe(next);
  });

  it('answers 429 to a second change within max_frequency', async () => {
    const { client } = await signedInUser();
    await client.auth.updateUser({ email: uniqueEmail('first') });
    const again = await client.auth.updateUser({ email: uniqueEmail('second') });
    expect(again.error).toMatchObject({ status: 429, code: 'over_email_send_rate_limit' });
  });

  it("refuses another user's address (422 email_exists) and takes its own as no change", async () => {
    const { client, email } = await signedInUser();
    const other = await signedInUser('other');
    const taken = await client.auth.updateUser({ email: other.email });
    expect(taken.error).toMatchObject({ status: 422, code: 'email_exists' });
    const same = await client.auth.updateUser({ email });
    expect(same.error).toBeNull();
    expect(same.data.user?.new_email).toBeUndefined();
    expect(readMailbox(stack().mailboxDir, email)).toHaveLength(0);
  });

  it('refuses to complete a change to an address someone signed up with meanwhile', async () => {
    const { client, email } = await signedInUser();
    const next = uniqueEmail('next');
    await client.auth.updateUser({ email: next });
    await clientFor(stack()).auth.signUp({ email: next, password: PASSWORD });
    await follow(lastMail(email).actionLink);
    const refused = await follow(lastMail(next).actionLink);
    expect(refused.get('error_code')).toBe('email_exists');
    expect((await client.auth.getUser()).data.user?.email).toBe(email);
  });
});

describe('the admin API', () => {
  it('changes an address at once (updateUserById)', async () => {
    const { client, email } = await signedInUser();
    const id = (await client.auth.getUser()).data.user?.id as string;
    const next = uniqueEmail('admin-moved');
    const { data, error } = await admin.auth.admin.updateUserById(id, { email: next });
    expect(error).toBeNull();
    expect(data.user?.email).toBe(next);
    const moved = await clientFor(stack()).auth.signInWithPassword({
      email: next,
      password: PASSWORD,
    });
    expect(moved.error).toBeNull();
    expect(readMailbox(stack().mailboxDir, email)).toHaveLength(0);
  });

  it('generates a link for each address of a change, which together complete it', async () => {
    const { email } = await signedInUser();
    const next = uniqueEmail('next');
    const current = await admin.auth.admin.generateLink({
      type: 'email_change_current',
      email,
      newEmail: next,
    });
    const fresh = await admin.auth.admin.generateLink({
      type: 'email_change_new',
      email,
      newEmail: next,
    });
    expect(current.error).toBeNull();
    expect(fresh.error).toBeNull();
    expect(current.data.properties?.verification_type).toBe('email_change_current');
    expect(fresh.data.user?.new_email).toBe(next);
    const first = await clientFor(stack()).auth.verifyOtp({
      email,
      token: current.data.properties?.email_otp as string,
      type: 'email_change',
    });
    expect(first).toMatchObject({ data: { session: null }, error: null });
    const done = await follow(fresh.data.properties?.action_link as string);
    expect(decodeClaims(done.get('access_token') as string).email).toBe(next);
  });
});

describe('settings the fixture does not have (in-process service)', () => {
  const mailboxDirs: string[] = [];
  afterAll(() => {
    for (const dir of mailboxDirs) rmSync(dir, { recursive: true, force: true });
  });

  /** supabase-js against an auth service with these settings, on the fixture's database. */
  function serviceClient(overrides: Partial<AuthConfig>) {
    const config = {
      ...authConfigFrom(loadProjectConfig(FIXTURE_PROJECT), stack().apiUrl, stack().keys.jwtSecret),
      rateLimits: undefined,
      ...overrides,
    };
    const mailboxDir = mkdtempSync(join(tmpdir(), 'auth-email-change-mail-'));
    mailboxDirs.push(mailboxDir);
    const app = createAuthApp(
      { pool: db, config, mailbox: new Mailbox(mailboxDir) },
      pino({ level: 'silent' }),
    );
    const prefix = `${stack().apiUrl}/auth/v1`;
    const client = createClient(stack().apiUrl, stack().keys.publishableKey, {
      auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
      global: {
        // auth-js passes the URL as a string; the gateway would strip /auth/v1.
        fetch: async (input, init) => {
          const request = new Request(String(input).replace(prefix, 'http://auth.local'), init);
          request.headers.set('x-forwarded-for', '198.51.100.20');
          return app.fetch(request);
        },
      },
    });
    return { client, mailboxDir };
  }

  it('without double_confirm_changes mails only the new address, whose code completes it', async () => {
    const { client, mailboxDir } = serviceClient({ doubleConfirmEmailChanges: false });
    const email = uniqueEmail('single');
    expect((await client.auth.signUp({ email, password: PASSWORD })).error).toBeNull();
    const next = uniqueEmail('next');
    const { data } = await client.auth.updateUser({ email: next });
    expect(data.user).toMatchObject({ email, new_email: next });
    expect(readMailbox(mailboxDir, email)).toHaveLength(0);
    const done = await client.auth.verifyOtp({
      email: next,
      token: lastMail(next, mailboxDir).otp,
      type: 'email_change',
    });
    expect(done.error).toBeNull();
    expect(done.data.session?.user.email).toBe(next);
  });

  it('lets an anonymous user add an address only through its confirmation', async () => {
    const { client, mailboxDir } = serviceClient({ anonymousSignInsEnabled: true });
    expect((await client.auth.signInAnonymously()).error).toBeNull();
    const email = uniqueEmail('upgraded');
    const { data } = await client.auth.updateUser({ email });
    expect(data.user).toMatchObject({ email: '', new_email: email, is_anonymous: true });
    const done = await client.auth.verifyOtp({
      email,
      token: lastMail(email, mailboxDir).otp,
      type: 'email_change',
    });
    expect(done.error).toBeNull();
    expect(done.data.user).toMatchObject({
      email,
      is_anonymous: false,
      app_metadata: { provider: 'email', providers: ['email'] },
    });
    expect(done.data.user?.identities?.[0]).toMatchObject({
      provider: 'email',
      identity_data: { email, email_verified: true },
    });
  });
});
