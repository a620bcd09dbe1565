// The auth service tried as an attacker would: a stolen refresh token replayed after
// reuse detection, e-mail codes guessed (typed, and as GoTrue-derived token hashes), accounts
// enumerated through /otp and sign-in timing, passwords guessed from one address and from many,
// and the per-address request limits (through the gateway, which sets the client address).
// The service runs in-process on the fixture stack's database, with settings per test and
// client addresses set as the gateway sets them (X-Forwarded-For); the last part goes through
// the real gateway over real sockets from two loopback addresses.
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAuthApp } from '../src/auth/app.ts';
import { type AuthConfig, authConfigFrom } from '../src/auth/auth-config.ts';
import { Mailbox, readMailbox } from '../src/auth/mailbox.ts';
import { loadProjectConfig } from '../src/project-config.ts';
import type { RunningStack } from '../src/stack.ts';
import { FIXTURE_PROJECT, startFixtureStack, uniqueEmail } from './helpers/fixture-stack.ts';

let fixture: Awaited<ReturnType<typeof startFixtureStack>>;
let pool: pg.Pool;
const stack = (): RunningStack => fixture.stack;

beforeAll(async () => {
  // Through the gateway every /token request from one address shares a bucket of 30 that never
  // refills: the end-to-end limit test needs no waiting.
  fixture = await startFixtureStack({ authRateLimits: { token_refresh: 0 } });
  pool = new pg.Pool({
    connectionString: `postgresql://supabase_auth_admin:postgres@127.0.0.1:${stack().ports.db}/postgres`,
    max: 4,
  });
});

afterAll(async () => {
  await pool?.end();
  await fixture?.dispose();
});

/** Settings of one in-process service: no request limits, guards as in production. */
const GUARDS = {
  passwordFailuresPerAddress: 5,
  passwordFailuresFromStrangers: 20,
  passwordMaxDelaySeconds: 60,
  failureWindowSeconds: 900,
  familiarAddressSeconds: 30 * 24 * 3600,
  verificationsPerAccount: 30,
  wrongCodesBeforeBurn: 5,
};

interface Answer {
  status: number;
  body: Record<string, unknown>;
  headers: Headers;
}

/** Each service's mailbox, removed when the file is done. */
const mailboxDirs: string[] = [];
afterAll(() => {
  for (const dir of mailboxDirs) rmSync(dir, { recursive: true, force: true });
});

function authService(overrides: Record<string, unknown> = {}) {
  const base = authConfigFrom(
    loadProjectConfig(FIXTURE_PROJECT),
    stack().apiUrl,
    stack().keys.jwtSecret,
  );
  const config = {
    ...base,
    rateLimits: undefined,
    emailMaxFrequencySeconds: 0,
    guards: GUARDS,
    ...overrides,
  } as AuthConfig;
  const mailboxDir = mkdtempSync(join(tmpdir(), 'auth-attacks-mail-'));
  mailboxDirs.push(mailboxDir);
  const app = createAuthApp(
    { pool, config, mailbox: new Mailbox(mailboxDir) },
    pino({ level: 'silent' }),
  );
  async function call(
    method: string,
    path: string,
    body: unknown,
    from: string,
    headers: Record<string, string> = {},
  ): Promise<Answer> {
    const response = await app.fetch(
      new Request(`http://auth.local${path}`, {
        method,
        headers: { 'content-type': 'application/json', 'x-forwarded-for': from, ...headers },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : {},
      headers: response.headers,
    };
  }
  return {
    call,
    mailCount: (email: string) => readMailbox(mailboxDir, email).length,
    lastCode(email: string) {
      const messages = readMailbox(mailboxDir, email);
      return messages[messages.length - 1];
    },
  };
}

type Service = ReturnType<typeof authService>;

const OWNER = '198.51.100.10';

async function signUp(service: Service, email: string, password: string) {
  const answer = await service.call('POST', '/signup', { email, password }, OWNER);
  expect(answer.status).toBe(200);
  return answer.body as { access_token: string; refresh_token: string };
}

const refresh = (service: Service, token: string, from = OWNER) =>
  service.call('POST', '/token?grant_type=refresh_token', { refresh_token: token }, from);

const passwordSignIn = (service: Service, email: string, password: string, from: string) =>
  service.call('POST', '/token?grant_type=password', { email, password }, from);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function wrongCode(code: string, offset: number): string {
  return String((Number(code) + offset) % 1_000_000).padStart(code.length, '0');
}

describe('a replayed refresh token', () => {
  it('ends the whole session once reuse is detected: every token refused, the session gone', async () => {
    const service = authService({ refreshTokenReuseIntervalSeconds: 1 });
    const first = await signUp(service, uniqueEmail('reuse'), 'reuse-me-123');
    const b = (await refresh(service, first.refresh_token)).body as typeof first;
    const c = (await refresh(service, b.refresh_token)).body as typeof first;
    expect(c.refresh_token).toBeTruthy();
    const sessionId = JSON.parse(
      Buffer.from(c.access_token.split('.')[1] as string, 'base64url').toString(),
    ).session_id;
    await sleep(1200);

    const detected = await refresh(service, first.refresh_token);
    expect(detected).toMatchObject({
      status: 400,
      body: { error_code: 'refresh_token_already_used' },
    });
    // Presented again at once: detection used to put every token back inside the interval.
    const again = await refresh(service, first.refresh_token);
    expect(again.status).toBe(400);
    expect(again.body.access_token).toBeUndefined();
    for (const token of [b.refresh_token, c.refresh_token]) {
      const answer = await refresh(service, token);
      expect(answer.status).toBe(400);
      expect(answer.body.access_token).toBeUndefined();
    }
    const user = await service.call('GET', '/user', undefined, OWNER, {
      authorization: `Bearer ${c.access_token}`,
    });
    expect(user).toMatchObject({ status: 403, body: { error_code: 'session_not_found' } });
    const left = await pool.query(
      `select (select count(*) from auth.sessions where id = $1)::int as sessions,
              (select count(*) from auth.refresh_tokens where session_id = $1)::int as tokens`,
      [sessionId],
    );
    expect(left.rows[0]).toEqual({ sessions: 0, tokens: 0 });
  });
});

/** The code is burned: even the right one is refused, until a new code is sent, which works. */
async function expectBurnedUntilANewCode(
  service: ReturnType<typeof authService>,
  email: string,
  code: string,
) {
  const right = await service.call('POST', '/verify', { type: 'email', email, token: code }, OWNER);
  expect(right).toMatchObject({ status: 403, body: { error_code: 'otp_expired' } });
  expect((await service.call('POST', '/otp', { email }, OWNER)).status).toBe(200);
  const fresh = service.lastCode(email)?.otp as string;
  const signedIn = await service.call(
    'POST',
    '/verify',
    { type: 'email', email, token: fresh },
    OWNER,
  );
  expect(signedIn.status).toBe(200);
  expect(signedIn.body.access_token).toBeTruthy();
}

describe('guessing e-mail codes', () => {
  it('burns the code after five wrong tries, from whatever addresses they come', async () => {
    const service = authService();
    const email = uniqueEmail('burn');
    expect((await service.call('POST', '/otp', { email }, OWNER)).status).toBe(200);
    const code = service.lastCode(email)?.otp as string;
    for (let i = 1; i <= 5; i += 1) {
      const guess = await service.call(
        'POST',
        '/verify',
        { type: 'email', email, token: wrongCode(code, i) },
        `203.0.113.${i}`,
      );
      expect(guess).toMatchObject({ status: 403, body: { error_code: 'otp_expired' } });
    }
    await expectBurnedUntilANewCode(service, email, code);
  });

  it('checks no more than five typed codes per issued code, even sent all at once', async () => {
    const service = authService();
    const email = uniqueEmail('parallel');
    expect((await service.call('POST', '/otp', { email }, OWNER)).status).toBe(200);
    const code = service.lastCode(email)?.otp as string;
    // Twenty guesses in flight together, the right code among the last: each used to be checked
    // against the count as it stood before any answer, so all twenty were tried.
    const guesses = Array.from({ length: 20 }, (_, i) =>
      i === 15 ? code : wrongCode(code, i + 1),
    );
    const answers = await Promise.all(
      guesses.map((token, i) =>
        service.call('POST', '/verify', { type: 'email', email, token }, `203.0.113.${150 + i}`),
      ),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(403));
    expect(answers[15]?.body.access_token).toBeUndefined();
    await expectBurnedUntilANewCode(service, email, code);
  });

  it('limits typed codes per account across addresses (token_verifications, burst 30)', async () => {
    const service = authService();
    const email = uniqueEmail('per-account');
    await service.call('POST', '/otp', { email }, OWNER);
    const statuses: number[] = [];
    for (let i = 0; i < 31; i += 1) {
      const guess = await service.call(
        'POST',
        '/verify',
        { type: 'email', email, token: '000000' },
        `203.0.113.${100 + i}`,
      );
      statuses.push(guess.status);
      if (guess.status === 429) expect(guess.body.error_code).toBe('over_request_rate_limit');
    }
    expect(statuses.slice(0, 30).every((status) => status === 403)).toBe(true);
    expect(statuses[30]).toBe(429);
  });

  it('limits verifications per client address (token_verifications, burst 30)', async () => {
    const service = authService({
      rateLimits: {
        anonymous_users: 30,
        token_refresh: 150,
        sign_in_sign_ups: 30,
        token_verifications: 30,
      },
    });
    const attacker = '192.0.2.77';
    const statuses: number[] = [];
    for (let i = 0; i < 31; i += 1) {
      const guess = await service.call(
        'POST',
        '/verify',
        { type: 'email', email: uniqueEmail('per-address'), token: '123456' },
        attacker,
      );
      statuses.push(guess.status);
    }
    expect(statuses.slice(0, 30).every((status) => status === 403)).toBe(true);
    expect(statuses[30]).toBe(429);
    const other = await service.call(
      'POST',
      '/verify',
      { type: 'email', email: uniqueEmail('per-address'), token: '123456' },
      '192.0.2.78',
    );
    expect(other.status).toBe(403);
  });

  it('refuses a token_hash computed from the address and code as GoTrue derives it', async () => {
    const service = authService();
    const email = uniqueEmail('derived');
    await service.call('POST', '/otp', { email }, OWNER);
    const message = service.lastCode(email);
    const derived = createHash('sha224')
      .update(email + (message?.otp as string))
      .digest('hex');
    const forged = await service.call(
      'POST',
      '/verify',
      { type: 'email', token_hash: derived },
      OWNER,
    );
    expect(forged).toMatchObject({ status: 403, body: { error_code: 'otp_expired' } });
    const link = await service.call(
      'POST',
      '/verify',
      { type: 'email', token_hash: message?.tokenHash },
      OWNER,
    );
    expect(link.status).toBe(200);
  });
});

describe('account enumeration', () => {
  it('answers /otp with create_user false alike for a known and an unknown address', async () => {
    const service = authService();
    const known = uniqueEmail('known');
    await signUp(service, known, 'known-pass-123');
    const unknown = uniqueEmail('unknown');
    const a = await service.call('POST', '/otp', { email: known, create_user: false }, OWNER);
    const b = await service.call('POST', '/otp', { email: unknown, create_user: false }, OWNER);
    expect({ status: b.status, body: b.body }).toEqual({ status: a.status, body: a.body });
    expect(a.status).toBe(200);
    expect(service.lastCode(unknown)).toBeUndefined();
    const rows = await pool.query('select 1 from auth.users where email = $1', [unknown]);
    expect(rows.rowCount).toBe(0);
  });

  it.each([
    ['/otp', (email: string) => ({ email, create_user: false })],
    ['/recover', (email: string) => ({ email })],
  ])(
    'answers a second %s within max_frequency alike for a known and an unknown address',
    async (path, body) => {
      const service = authService({ emailMaxFrequencySeconds: 60 });
      const known = uniqueEmail('known-again');
      await signUp(service, known, 'known-pass-123');
      const unknown = uniqueEmail('unknown-again');
      const answers = [];
      for (const email of [known, unknown]) {
        const first = await service.call('POST', path, body(email), OWNER);
        const second = await service.call('POST', path, body(email), OWNER);
        answers.push({ first: first.status, second: second.status, error: second.body.error_code });
      }
      // A known address is refused a second mail within the window: so must an unknown one be.
      expect(answers[0]).toEqual({ first: 200, second: 429, error: 'over_email_send_rate_limit' });
      expect(answers[1]).toEqual(answers[0]);
    },
  );

  it('signs up a used address as GoTrue does with confirmations on: a lookalike, nothing sent', async () => {
    const service = authService({ autoconfirm: false });
    const email = uniqueEmail('used');
    const first = await service.call(
      'POST',
      '/signup',
      { email, password: 'first-pass-123' },
      OWNER,
    );
    expect(first.status).toBe(200);
    const code = service.lastCode(email)?.otp as string;
    expect(
      (await service.call('POST', '/verify', { type: 'signup', email, token: code }, OWNER)).status,
    ).toBe(200);
    const mails = () => service.mailCount(email);
    const before = mails();
    const again = await service.call(
      'POST',
      '/signup',
      { email, password: 'other-pass-123' },
      OWNER,
    );
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ email, identities: [] });
    expect(again.body.id).not.toBe(first.body.id);
    expect(again.body.email_confirmed_at).toBeUndefined();
    expect(mails()).toBe(before);
    // The account kept its password.
    expect((await passwordSignIn(service, email, 'first-pass-123', OWNER)).status).toBe(200);
  });

  it('leaves an unconfirmed account as it is when its address signs up again', async () => {
    const service = authService({ autoconfirm: false });
    const email = uniqueEmail('unconfirmed');
    await service.call('POST', '/signup', { email, password: 'owner-pass-123' }, OWNER);
    const again = await service.call(
      'POST',
      '/signup',
      { email, password: 'taker-pass-123' },
      '203.0.113.9',
    );
    expect(again.status).toBe(200);
    const taker = await passwordSignIn(service, email, 'taker-pass-123', '203.0.113.9');
    expect(taker.body.error_code).toBe('invalid_credentials');
    const owner = await passwordSignIn(service, email, 'owner-pass-123', OWNER);
    expect(owner.body.error_code).toBe('email_not_confirmed');
  });

  it('spends as long on a wrong password for an unknown address as for a known one', async () => {
    const service = authService({
      guards: { ...GUARDS, passwordFailuresPerAddress: 1000, passwordFailuresFromStrangers: 1000 },
    });
    const known = uniqueEmail('timing');
    await signUp(service, known, 'timing-pass-123');
    const unknown = uniqueEmail('timing-unknown');
    const compare = vi.spyOn(bcrypt, 'compare');
    const times: Record<'known' | 'unknown', number[]> = { known: [], unknown: [] };
    for (let i = 0; i < 20; i += 1) {
      for (const [kind, email] of [
        ['known', known],
        ['unknown', unknown],
      ] as const) {
        const started = performance.now();
        const answer = await passwordSignIn(service, email, `wrong-${i}`, OWNER);
        times[kind].push(performance.now() - started);
        expect(answer).toMatchObject({ status: 400, body: { error_code: 'invalid_credentials' } });
      }
    }
    // The same work on both paths: one bcrypt comparison per try, against a hash of GoTrue's
    // cost, whether or not the address has an account (the unknown one meets a dummy hash).
    expect(compare).toHaveBeenCalledTimes(40);
    for (const [, hash] of compare.mock.calls) expect(String(hash)).toMatch(/^\$2[aby]\$10\$/);
    compare.mockRestore();
    // And the clock agrees, within what a shared machine allows: the fastest of twenty is each
    // path's own cost (slower ones carry other work's load). Without the dummy hash an unknown
    // address answered in a few milliseconds against bcrypt's tens (63 ms against 4 ms).
    const knownCost = Math.min(...times.known);
    const unknownCost = Math.min(...times.unknown);
    expect(unknownCost).toBeGreaterThan(knownCost * 0.5);
  });
});

describe('guessing passwords', () => {
  it('slows one address down on one account, while the owner signs in from theirs', async () => {
    const service = authService();
    const email = uniqueEmail('slowed');
    await signUp(service, email, 'owner-pass-123');
    expect((await passwordSignIn(service, email, 'owner-pass-123', OWNER)).status).toBe(200);
    const attacker = '203.0.113.200';
    for (let i = 0; i < 5; i += 1) {
      const guess = await passwordSignIn(service, email, `guess-${i}`, attacker);
      expect(guess.body.error_code).toBe('invalid_credentials');
    }
    // Slowed: even the right password is not looked at until the wait is over.
    const slowed = await passwordSignIn(service, email, 'owner-pass-123', attacker);
    expect(slowed).toMatchObject({ status: 429, body: { error_code: 'over_request_rate_limit' } });
    expect(Number(slowed.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await passwordSignIn(service, email, 'owner-pass-123', OWNER)).status).toBe(200);
    // An unknown address is slowed down alike: the 429 tells nothing about the account.
    const ghost = uniqueEmail('ghost');
    for (let i = 0; i < 5; i += 1) await passwordSignIn(service, ghost, `guess-${i}`, attacker);
    expect((await passwordSignIn(service, ghost, 'x-guess', attacker)).status).toBe(429);
    // The wait is over after a second: one more try is looked at.
    await sleep(1100);
    expect((await passwordSignIn(service, email, 'guess-again', attacker)).status).toBe(400);
  });

  it('slows guessing spread over many addresses as a whole, never the owner at a familiar one', async () => {
    const service = authService();
    const email = uniqueEmail('spread');
    await signUp(service, email, 'owner-pass-456');
    expect((await passwordSignIn(service, email, 'owner-pass-456', OWNER)).status).toBe(200);
    for (let i = 0; i < 20; i += 1) {
      const guess = await passwordSignIn(service, email, `guess-${i}`, `192.0.2.${i + 1}`);
      expect(guess.status).toBe(400);
    }
    const next = await passwordSignIn(service, email, 'owner-pass-456', '192.0.2.100');
    expect(next).toMatchObject({ status: 429, body: { error_code: 'over_request_rate_limit' } });
    const owner = await passwordSignIn(service, email, 'owner-pass-456', OWNER);
    expect(owner.status).toBe(200);
    expect(owner.body.access_token).toBeTruthy();
  });
});

describe('per-address request limits through the gateway', () => {
  /** A refresh with a bogus token over a socket bound to `localAddress` (Node's http). */
  function bogusRefresh(localAddress: string, forwardedFor?: string) {
    const url = new URL(`${stack().apiUrl}/auth/v1/token?grant_type=refresh_token`);
    const body = JSON.stringify({ refresh_token: 'not-a-real-refresh-token' });
    return new Promise<{ status: number; headers: IncomingHttpHeaders; body: unknown }>(
      (resolve, reject) => {
        const outgoing = httpRequest(
          url,
          {
            method: 'POST',
            localAddress,
            agent: false,
            headers: {
              apikey: stack().keys.publishableKey,
              'content-type': 'application/json',
              'x-supabase-api-version': '2024-01-01',
              ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}),
            },
          },
          (response) => {
            let text = '';
            response.setEncoding('utf8');
            response.on('data', (chunk) => {
              text += chunk;
            });
            response.on('end', () =>
              resolve({
                status: response.statusCode ?? 0,
                headers: response.headers,
                body: JSON.parse(text),
              }),
            );
          },
        );
        outgoing.on('error', reject);
        outgoing.end(body);
      },
    );
  }

  it('answers 429 over_request_rate_limit per client address, which a client cannot forge', async () => {
    for (let i = 0; i < 30; i += 1) {
      expect((await bogusRefresh('127.0.0.1')).status).toBe(400);
    }
    const limited = await bogusRefresh('127.0.0.1');
    expect(limited.status).toBe(429);
    expect(limited.headers['x-sb-error-code']).toBe('over_request_rate_limit');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(limited.body).toEqual({
      code: 'over_request_rate_limit',
      message: 'Request rate limit reached',
    });
    // The gateway replaces a client's X-Forwarded-For with the socket's address.
    expect((await bogusRefresh('127.0.0.1', '198.51.100.99')).status).toBe(429);
    const elsewhere = await bogusRefresh('127.0.0.2');
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.headers['x-sb-error-code']).toBe('refresh_token_not_found');
  });

  it('refills at the configured rate', async () => {
    const service = authService({
      rateLimits: {
        anonymous_users: 30,
        token_refresh: 600,
        sign_in_sign_ups: 30,
        token_verifications: 30,
      },
    });
    let answer: Answer | undefined;
    let sent = 0;
    do {
      answer = await refresh(service, 'not-a-real-refresh-token', '192.0.2.200');
      sent += 1;
    } while (answer.status !== 429 && sent < 40);
    expect(answer.status).toBe(429);
    expect(answer.body).toEqual({
      code: 429,
      error_code: 'over_request_rate_limit',
      msg: 'Request rate limit reached',
    });
    // 600 per five minutes: one every half second.
    await sleep(600);
    expect((await refresh(service, 'not-a-real-refresh-token', '192.0.2.200')).status).toBe(400);
  });
});
