// supabase-js auth and admin APIs against the stack's GoTrue-compatible service.
import { createHash, randomBytes } from 'node:crypto';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { readMailbox } from '../src/index.ts';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';

const stack = useFixtureStack();
let admin: SupabaseClient;

beforeAll(async () => {
  admin = clientFor(stack(), stack().keys.secretKey);
});

function decodeClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] as string, 'base64url').toString());
}

describe('sign-up, sign-in, refresh, user, sign-out', () => {
  it('signs up with autoconfirm and returns a session with GoTrue claims', async () => {
    const email = uniqueEmail();
    const { data, error } = await clientFor(stack()).auth.signUp({
      email,
      password: 'long-enough-1',
      options: { data: { display_name: 'Ann' } },
    });
    expect(error).toBeNull();
    expect(data.user).toMatchObject({
      email,
      aud: 'authenticated',
      role: 'authenticated',
      app_metadata: { provider: 'email', providers: ['email'] },
      user_metadata: { display_name: 'Ann' },
      is_anonymous: false,
    });
    expect(data.user?.identities?.[0]).toMatchObject({
      provider: 'email',
      identity_data: { email, email_verified: true },
    });
    const claims = decodeClaims(data.session?.access_token as string);
    for (const claim of [
      'iss',
      'sub',
      'aud',
      'exp',
      'iat',
      'email',
      'phone',
      'app_metadata',
      'user_metadata',
      'role',
      'aal',
      'amr',
      'session_id',
      'is_anonymous',
    ]) {
      expect(claims).toHaveProperty(claim);
    }
    expect(claims.iss).toBe(`${stack().apiUrl}/auth/v1`);
    expect(claims.amr).toEqual([{ method: 'password', timestamp: expect.any(Number) }]);
  });

  it('refuses a duplicate sign-up, a short password and a malformed address', async () => {
    const client = clientFor(stack());
    const email = uniqueEmail();
    await client.auth.signUp({ email, password: 'long-enough-1' });
    const duplicate = await client.auth.signUp({ email, password: 'long-enough-1' });
    expect(duplicate.error).toMatchObject({ status: 422, code: 'user_already_exists' });
    const weak = await client.auth.signUp({ email: uniqueEmail(), password: '123' });
    expect(weak.error).toMatchObject({
      status: 422,
      code: 'weak_password',
      name: 'AuthWeakPasswordError',
    });
    const malformed = await client.auth.signUp({
      email: 'not-an-address',
      password: 'long-enough-1',
    });
    expect(malformed.error).toMatchObject({ status: 400, code: 'validation_failed' });
  });

  it('signs in with a password, refuses a wrong one, and gets the user', async () => {
    const email = uniqueEmail();
    await clientFor(stack()).auth.signUp({ email, password: 'right-password-1' });
    const client = clientFor(stack());
    const wrong = await client.auth.signInWithPassword({ email, password: 'wrong-password-1' });
    expect(wrong.error).toMatchObject({
      status: 400,
      code: 'invalid_credentials',
      message: 'Invalid login credentials',
    });
    const unknown = await client.auth.signInWithPassword({
      email: uniqueEmail(),
      password: 'right-password-1',
    });
    expect(unknown.error).toMatchObject({ status: 400, code: 'invalid_credentials' });
    const signedIn = await client.auth.signInWithPassword({ email, password: 'right-password-1' });
    expect(signedIn.error).toBeNull();
    const { data } = await client.auth.getUser();
    expect(data.user?.email).toBe(email);
    expect(data.user?.last_sign_in_at).toBeTruthy();
  });

  it('rotates refresh tokens and refuses a rotated token presented again (reuse detection)', async () => {
    const email = uniqueEmail();
    const client = clientFor(stack());
    const first = (await client.auth.signUp({ email, password: 'rotate-me-123' })).data.session;
    const second = (
      await client.auth.refreshSession({ refresh_token: first?.refresh_token as string })
    ).data.session;
    expect(second?.refresh_token).toBeTruthy();
    expect(second?.refresh_token).not.toBe(first?.refresh_token);
    expect(decodeClaims(second?.access_token as string).session_id).toBe(
      decodeClaims(first?.access_token as string).session_id,
    );
    const third = (
      await client.auth.refreshSession({ refresh_token: second?.refresh_token as string })
    ).data.session;
    expect(third?.refresh_token).toBeTruthy();
    // The first token's successor was rotated too: presenting it now is a replay.
    const replay = await clientFor(stack()).auth.refreshSession({
      refresh_token: first?.refresh_token as string,
    });
    expect(replay.error).toMatchObject({ status: 400, code: 'refresh_token_already_used' });
    // Reuse detection ended the session (GoTrue's LogoutSession): its newest token is gone too.
    const afterReplay = await clientFor(stack()).auth.refreshSession({
      refresh_token: third?.refresh_token as string,
    });
    expect(afterReplay.error).toMatchObject({ status: 400, code: 'refresh_token_not_found' });
  });

  it('answers a retried refresh of the just-rotated token with the same successor', async () => {
    const client = clientFor(stack());
    const first = (await client.auth.signUp({ email: uniqueEmail(), password: 'retry-me-123' }))
      .data.session;
    const refresh = (token: string) =>
      fetch(`${stack().apiUrl}/auth/v1/token?grant_type=refresh_token`, {
        method: 'POST',
        headers: { apikey: stack().keys.publishableKey, 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: token }),
      }).then((response) => response.json() as Promise<{ refresh_token: string }>);
    const a = await refresh(first?.refresh_token as string);
    const b = await refresh(first?.refresh_token as string);
    expect(b.refresh_token).toBe(a.refresh_token);
  });

  it('refuses an unknown refresh token', async () => {
    const { error } = await clientFor(stack()).auth.refreshSession({
      refresh_token: 'not-a-token',
    });
    expect(error).toMatchObject({ status: 400, code: 'refresh_token_not_found' });
  });

  it('signs out: the session and its tokens stop working', async () => {
    const email = uniqueEmail();
    const client = clientFor(stack());
    const session = (await client.auth.signUp({ email, password: 'sign-out-123' })).data.session;
    expect((await client.auth.signOut()).error).toBeNull();
    const response = await fetch(`${stack().apiUrl}/auth/v1/user`, {
      headers: {
        apikey: stack().keys.publishableKey,
        Authorization: `Bearer ${session?.access_token}`,
      },
    });
    expect(response.status).toBe(403);
    expect(response.headers.get('x-sb-error-code')).toBe('session_not_found');
    const refresh = await clientFor(stack()).auth.refreshSession({
      refresh_token: session?.refresh_token as string,
    });
    expect(refresh.error?.status).toBe(400);
  });

  it('updates the password and metadata of the signed-in user', async () => {
    const email = uniqueEmail();
    const client = clientFor(stack());
    await client.auth.signUp({
      email,
      password: 'old-password-1',
      options: { data: { a: 1, b: 2 } },
    });
    const { data, error } = await client.auth.updateUser({
      password: 'new-password-1',
      data: { b: null, c: 3 },
    });
    expect(error).toBeNull();
    expect(data.user?.user_metadata).toEqual({ a: 1, c: 3 });
    const old = await clientFor(stack()).auth.signInWithPassword({
      email,
      password: 'old-password-1',
    });
    expect(old.error?.code).toBe('invalid_credentials');
    const fresh = await clientFor(stack()).auth.signInWithPassword({
      email,
      password: 'new-password-1',
    });
    expect(fresh.error).toBeNull();
  });

  it('refuses GET /user without a token and with a forged one', async () => {
    const missing = await fetch(`${stack().apiUrl}/auth/v1/user`, {
      headers: { 'X-Supabase-Api-Version': '2024-01-01' },
    });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toEqual({ code: 'no_authorization', message: expect.any(String) });
    const forged = await fetch(`${stack().apiUrl}/auth/v1/user`, {
      headers: { Authorization: 'Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl' },
    });
    expect(forged.status).toBe(403);
  });
});

describe('e-mail one-time codes and links', () => {
  it('signs in with an e-mail OTP read from the local mailbox', async () => {
    const email = uniqueEmail('otp');
    const client = clientFor(stack());
    expect((await client.auth.signInWithOtp({ email })).error).toBeNull();
    const [message] = readMailbox(stack().mailboxDir, email);
    expect(message?.otp).toMatch(/^\d{6}$/);
    const wrong = await client.auth.verifyOtp({ email, token: '000000', type: 'email' });
    expect(wrong.error).toMatchObject({ status: 403, code: 'otp_expired' });
    const { data, error } = await client.auth.verifyOtp({
      email,
      token: message?.otp as string,
      type: 'email',
    });
    expect(error).toBeNull();
    expect(data.session?.user.email).toBe(email);
    expect(data.user?.email_confirmed_at).toBeTruthy();
    const again = await clientFor(stack()).auth.verifyOtp({
      email,
      token: message?.otp as string,
      type: 'email',
    });
    expect(again.error?.code).toBe('otp_expired');
  });

  it('follows a magic link: 303 to the redirect with the session in the fragment', async () => {
    const email = uniqueEmail('link');
    await clientFor(stack()).auth.signInWithOtp({ email });
    const [message] = readMailbox(stack().mailboxDir, email);
    const response = await fetch(message?.actionLink as string, { redirect: 'manual' });
    expect(response.status).toBe(303);
    const location = new URL(response.headers.get('location') as string);
    expect(location.origin).toBe('http://127.0.0.1:3000');
    const fragment = new URLSearchParams(location.hash.slice(1));
    expect(fragment.get('token_type')).toBe('bearer');
    expect(decodeClaims(fragment.get('access_token') as string).email).toBe(email);
    const reused = await fetch(message?.actionLink as string, { redirect: 'manual' });
    const reusedFragment = new URLSearchParams(
      new URL(reused.headers.get('location') as string).hash.slice(1),
    );
    expect(reusedFragment.get('error')).toBe('access_denied');
    expect(reusedFragment.get('error_code')).toBe('otp_expired');
  });

  it('completes a PKCE magic link: ?code= then the code exchanged with the verifier', async () => {
    const email = uniqueEmail('pkce');
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const otp = await fetch(`${stack().apiUrl}/auth/v1/otp`, {
      method: 'POST',
      headers: { apikey: stack().keys.publishableKey, 'content-type': 'application/json' },
      body: JSON.stringify({ email, code_challenge: challenge, code_challenge_method: 's256' }),
    });
    expect(otp.status).toBe(200);
    const [message] = readMailbox(stack().mailboxDir, email);
    const followed = await fetch(message?.actionLink as string, { redirect: 'manual' });
    const code = new URL(followed.headers.get('location') as string).searchParams.get(
      'code',
    ) as string;
    expect(code).toBeTruthy();
    const exchange = (body: object) =>
      fetch(`${stack().apiUrl}/auth/v1/token?grant_type=pkce`, {
        method: 'POST',
        headers: { apikey: stack().keys.publishableKey, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const wrongVerifier = await exchange({ auth_code: code, code_verifier: `${verifier}x` });
    expect(wrongVerifier.status).toBe(403);
    const session = (await (
      await exchange({ auth_code: code, code_verifier: verifier })
    ).json()) as {
      user: { email: string };
    };
    expect(session.user.email).toBe(email);
    const replay = await exchange({ auth_code: code, code_verifier: verifier });
    expect(replay.status).toBe(404);
  });
});

describe('admin API', () => {
  it('is refused to an anon or user token', async () => {
    const { error } = await clientFor(stack()).auth.admin.listUsers();
    expect(error).toMatchObject({ status: 403, code: 'not_admin' });
  });

  it('creates a user and pages through users with GoTrue pagination headers', async () => {
    const created = await admin.auth.admin.createUser({
      email: uniqueEmail('admin-made'),
      password: 'admin-made-1',
      email_confirm: true,
      app_metadata: { plan: 'pro' },
    });
    expect(created.error).toBeNull();
    expect(created.data.user?.app_metadata).toMatchObject({ provider: 'email', plan: 'pro' });
    expect(created.data.user?.email_confirmed_at).toBeTruthy();
    for (let index = 0; index < 3; index += 1) {
      await admin.auth.admin.createUser({ email: uniqueEmail('paged'), password: 'paged-user-1' });
    }
    const response = await fetch(`${stack().apiUrl}/auth/v1/admin/users?page=1&per_page=2`, {
      headers: {
        apikey: stack().keys.secretKey,
        Authorization: `Bearer ${stack().keys.secretKey}`,
      },
    });
    const total = Number(response.headers.get('x-total-count'));
    expect(total).toBeGreaterThanOrEqual(4);
    expect(response.headers.get('link')).toContain('</admin/users?page=2&per_page=2>; rel="next"');
    expect(response.headers.get('link')).toContain(`rel="last"`);
    const page = await admin.auth.admin.listUsers({ page: 1, perPage: 2 });
    expect(page.error).toBeNull();
    expect(page.data.users).toHaveLength(2);
    expect(page.data).toMatchObject({ total, nextPage: 2 });
  });

  it('gets, updates and deletes a user by id', async () => {
    const email = uniqueEmail('crud');
    const { data } = await admin.auth.admin.createUser({
      email,
      password: 'crud-user-1',
      email_confirm: true,
    });
    const id = data.user?.id as string;
    expect((await admin.auth.admin.getUserById(id)).data.user?.email).toBe(email);
    const updated = await admin.auth.admin.updateUserById(id, {
      user_metadata: { team: 'blue' },
      ban_duration: '1h',
    });
    expect(updated.data.user?.user_metadata).toEqual({ team: 'blue' });
    const banned = await clientFor(stack()).auth.signInWithPassword({
      email,
      password: 'crud-user-1',
    });
    expect(banned.error).toMatchObject({ code: 'user_banned' });
    expect((await admin.auth.admin.deleteUser(id)).error).toBeNull();
    expect((await admin.auth.admin.getUserById(id)).error).toMatchObject({
      status: 404,
      code: 'user_not_found',
    });
  });

  it('refuses a second user with the same address', async () => {
    const email = uniqueEmail('dup');
    await admin.auth.admin.createUser({ email, password: 'dup-user-1' });
    const again = await admin.auth.admin.createUser({ email, password: 'dup-user-1' });
    expect(again.error).toMatchObject({ status: 422, code: 'email_exists' });
  });

  it('generates a magic link whose token_hash verifies into a working session', async () => {
    const email = uniqueEmail('generated');
    await admin.auth.admin.createUser({ email, password: 'generated-1', email_confirm: true });
    const { data, error } = await admin.auth.admin.generateLink({ type: 'magiclink', email });
    expect(error).toBeNull();
    expect(data.properties).toMatchObject({
      verification_type: 'magiclink',
      email_otp: expect.stringMatching(/^\d{6}$/),
    });
    expect(data.properties?.action_link).toContain(
      `/auth/v1/verify?token=${data.properties?.hashed_token}`,
    );
    const client = clientFor(stack());
    const verified = await client.auth.verifyOtp({
      token_hash: data.properties?.hashed_token as string,
      type: 'magiclink',
    });
    expect(verified.error).toBeNull();
    expect(verified.data.session?.user.email).toBe(email);
    // The session works against REST under RLS.
    const who = await client.rpc('whoami');
    expect(who.data).toMatchObject({ role: 'authenticated', email });
  });

  it('generates a recovery link only for an existing user', async () => {
    const missing = await admin.auth.admin.generateLink({
      type: 'recovery',
      email: uniqueEmail('nobody'),
    });
    expect(missing.error).toMatchObject({ status: 404, code: 'user_not_found' });
  });
});

describe('service endpoints', () => {
  it('serves /health and /settings', async () => {
    const health = (await (await fetch(`${stack().apiUrl}/auth/v1/health`)).json()) as {
      name: string;
    };
    expect(health.name).toBe('GoTrue');
    const settings = await (await fetch(`${stack().apiUrl}/auth/v1/settings`)).json();
    expect(settings).toMatchObject({
      mailer_autoconfirm: true,
      disable_signup: false,
      external: { email: true },
    });
  });

  it('accepts the well-known legacy anon key as supabase-js does', async () => {
    const legacy = createClient(stack().apiUrl, stack().keys.anonKey, {
      auth: { persistSession: false },
    });
    const { data, error } = await legacy.auth.signUp({
      email: uniqueEmail('legacy'),
      password: 'legacy-key-1',
    });
    expect(error).toBeNull();
    expect(data.session).toBeTruthy();
  });
});
