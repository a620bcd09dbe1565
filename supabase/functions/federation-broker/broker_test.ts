// Unit tests for the broker's pure parts: the iat window, HMAC verification, client-IP choice,
// account choice (000 §4.5), the link, the minted session's owner, the test-clock gate, partner-URL guards and the
// bounded body reader. Frozen clocks only, no network.
import {
  deepStrictEqual as assertEquals,
  ok as assert,
  rejects,
  throws as assertThrows,
} from 'node:assert/strict';
import { encodeBase64Url } from '../_shared/federation/base64url.ts';
import { chooseAccount } from './account-choice.ts';
import { settleAccount } from './account-provisioning.ts';
import { BrokerError } from './broker-error.ts';
import { clientIpOf, rateLimitKeyOf } from './client-ip.ts';
import { readConfig } from './config.ts';
import { buildHandoffLink } from './handoff-link.ts';
import { exchangeBodySchema, readJsonBody } from './request-body.ts';
import { mintSession } from './session-minting.ts';
import { sessionIdOf } from './session-recording.ts';
import type { SupabaseApi } from './supabase-api.ts';
import { isPublicPartnerHost } from './verify/partner-address.ts';
import {
  assertPartnerAddresses,
  assertPartnerUrl,
  PartnerFetchError,
} from './verify/partner-fetch.ts';
import { isIatWithinWindow, signHmacPayload, verifyHmacAssertion } from './verify/hmac.ts';

const NOW_MS = 1_800_000_000_500;
const NOW = Math.floor(NOW_MS / 1000);

Deno.test('the iat window is [now - 120 s, now + 30 s], edges included', () => {
  assert(isIatWithinWindow(NOW - 120, NOW_MS));
  assert(isIatWithinWindow(NOW + 30, NOW_MS));
  assert(!isIatWithinWindow(NOW - 121, NOW_MS));
  assert(!isIatWithinWindow(NOW + 31, NOW_MS));
});

const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
const UNBOUND = { required: false, codeChallenge: CHALLENGE };
const BOUND = { required: true, codeChallenge: CHALLENGE };

Deno.test('an hmac assertion verifies and yields the jti to burn until iat + 150 s', async () => {
  const payload = { sub: 'u1', email: 'u1@example.com', iat: NOW, jti: 'j1' };
  const signature = encodeBase64Url(await signHmacPayload('s3cret', payload));
  const identity = await verifyHmacAssertion(payload, signature, 's3cret', NOW_MS, UNBOUND);
  assertEquals(identity.sub, 'u1');
  assertEquals(identity.jti?.expiresAt.getTime(), (NOW + 150) * 1000);
  await rejects(
    () => verifyHmacAssertion(payload, signature, 'other', NOW_MS, UNBOUND),
    BrokerError,
  );
  await rejects(
    () => verifyHmacAssertion({ ...payload, iat: NOW - 121 }, signature, 's3cret', NOW_MS, UNBOUND),
    BrokerError,
  );
});

Deno.test('a client that binds the challenge refuses the four-field payload', async () => {
  const payload = { sub: 'u1', email: 'u1@example.com', iat: NOW, jti: 'j1' };
  const signature = encodeBase64Url(await signHmacPayload('s3cret', payload));
  await rejects(
    () => verifyHmacAssertion(payload, signature, 's3cret', NOW_MS, BOUND),
    (error: unknown) => error instanceof BrokerError && error.code === 'access_denied',
  );
});

Deno.test('a bound payload passes only with the /start challenge it was signed for', async () => {
  const payload = {
    sub: 'u1',
    email: 'u1@example.com',
    iat: NOW,
    jti: 'j1',
    code_challenge: CHALLENGE,
  };
  const signature = encodeBase64Url(await signHmacPayload('s3cret', payload));
  assertEquals((await verifyHmacAssertion(payload, signature, 's3cret', NOW_MS, BOUND)).sub, 'u1');
  // Unbound clients accept it too (a partner may sign the challenge before the switch)...
  assertEquals(
    (await verifyHmacAssertion(payload, signature, 's3cret', NOW_MS, UNBOUND)).sub,
    'u1',
  );
  // ...but never with another challenge, bound client or not.
  const other = { required: true, codeChallenge: `${CHALLENGE.slice(0, -1)}A` };
  for (const binding of [other, { ...other, required: false }]) {
    await rejects(
      () => verifyHmacAssertion(payload, signature, 's3cret', NOW_MS, binding),
      (error: unknown) => error instanceof BrokerError && error.code === 'access_denied',
    );
  }
  // A challenge that is not a string, or a sixth key, is refused even when correctly signed.
  for (const variant of [{ ...payload, code_challenge: 1 }, { ...payload, aud: 'x' }]) {
    const signed = encodeBase64Url(await signHmacPayload('s3cret', variant));
    await rejects(() => verifyHmacAssertion(variant, signed, 's3cret', NOW_MS, BOUND), BrokerError);
  }
});

Deno.test('the session id is read from the minted access token, or not at all', () => {
  const token = (claims: unknown) =>
    `e30.${encodeBase64Url(new TextEncoder().encode(JSON.stringify(claims)))}.sig`;
  const id = '6f1c2b3a-1d2e-4f5a-8b9c-0d1e2f3a4b5c';
  assertEquals(sessionIdOf(token({ session_id: id })), id);
  assertEquals(sessionIdOf(token({ session_id: 'not-a-uuid' })), undefined);
  assertEquals(sessionIdOf(token({})), undefined);
  assertEquals(sessionIdOf('not.a+jwt.at-all'), undefined);
  assertEquals(sessionIdOf(''), undefined);
});

Deno.test('the client IP is read from the right of the trusted header, never the left', () => {
  const headers = new Headers({ 'x-forwarded-for': '6.6.6.6, 10.1.2.3' });
  assertEquals(clientIpOf(headers, 'x-forwarded-for', 1), '10.1.2.3');
  assertEquals(clientIpOf(headers, 'x-forwarded-for', 2), '6.6.6.6');
  assertEquals(clientIpOf(new Headers(), 'x-forwarded-for', 1), 'unknown');
  assertEquals(clientIpOf(headers, 'x-forwarded-for', 3), 'unknown');
});

Deno.test('IPv6 addresses share one rate-limit key per /64', () => {
  assertEquals(rateLimitKeyOf('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  assertEquals(rateLimitKeyOf('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
  assertEquals(rateLimitKeyOf('::ffff:192.0.2.1'), '192.0.2.1');
  assertEquals(rateLimitKeyOf('not an ip'), 'unknown');
});

Deno.test('account choice follows 000 §4.5 in order', () => {
  const base = {
    email_linking_trusted: false,
    email_normalized: 'a@x.com',
    mapped: null,
    collision: null,
  };
  const mapped = { user_id: 'm', email: 'm@x.com', provisioned: true };
  const collision = { user_id: 'c', email: 'a@x.com', linkable: true };
  assertEquals(chooseAccount({ ...base, mapped, collision }).kind, 'mapped');
  assertEquals(chooseAccount(base), { kind: 'provision', email: 'a@x.com' });
  assertEquals(chooseAccount({ ...base, collision }).kind, 'provision_synthetic');
  assertEquals(chooseAccount({ ...base, collision, email_linking_trusted: true }).kind, 'link');
  assertEquals(
    chooseAccount({
      ...base,
      email_linking_trusted: true,
      collision: { ...collision, linkable: false },
    }).kind,
    'provision_synthetic',
  );
  assertEquals(chooseAccount({ ...base, email_normalized: null }).kind, 'provision_synthetic');
});

Deno.test('the link is the app link with the code in the query only (000 §4.1)', () => {
  assertEquals(
    buildHandoffLink({ appLinkBase: 'https://app.example' }, 'a b'),
    'https://app.example/app/auth/federation?code=a%20b',
  );
});

Deno.test('test switches are ignored unless SUPABASE_URL is a loopback address', () => {
  const env = {
    SUPABASE_ANON_KEY: 'a',
    SUPABASE_SERVICE_ROLE_KEY: 's',
    FEDERATION_TEST_CLOCK: '1',
    FEDERATION_ALLOW_HTTP_PARTNERS: '1',
  };
  const hosted = readConfig({ ...env, SUPABASE_URL: 'https://abc.supabase.co' });
  const local = readConfig({ ...env, SUPABASE_URL: 'http://127.0.0.1:54321' });
  assertEquals([hosted.testClock, hosted.allowHttpPartners], [false, false]);
  assertEquals([local.testClock, local.allowHttpPartners], [true, true]);
});

Deno.test('partner hosts must be public: private, link-local and metadata addresses are refused', () => {
  const refused = [
    '10.0.0.1',
    '172.16.5.4',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '127.0.0.1',
    '224.0.0.1',
    '[::1]',
    '[::]',
    '[::ffff:7f00:1]',
    '[::ffff:a9fe:a9fe]',
    '[64:ff9b::a00:1]',
    '[fd00::1]',
    '[fe80::1]',
    'localhost',
    'api.localhost',
    'metadata.google.internal',
    'printer.local',
    'partner.example.',
  ];
  for (const host of refused) assert(!isPublicPartnerHost(host, false), host);
  for (const host of ['partner.example', '203.0.113.7', '[2001:db8::1]', '[::ffff:cb00:7107]']) {
    assert(isPublicPartnerHost(host, false), host);
  }
  // The local stack's exception admits loopback stand-ins, never private networks.
  for (const host of ['127.0.0.1', '[::1]', 'localhost']) assert(isPublicPartnerHost(host, true));
  for (const host of ['10.0.0.1', '169.254.169.254', '[fd00::1]', 'x.internal']) {
    assert(!isPublicPartnerHost(host, true), host);
  }
});

Deno.test('partner URLs: https to a public host, no credentials; the URL parser normalises IPv4', () => {
  const refuses = (url: string, allowLocal = false) =>
    assertThrows(() => assertPartnerUrl(new URL(url), allowLocal), PartnerFetchError);
  refuses('http://partner.example/users/me');
  refuses('https://2130706433/users/me'); // 127.0.0.1 spelled as one number
  refuses('https://0xa9.0xfe.0xa9.0xfe/latest/meta-data'); // 169.254.169.254 in hex
  refuses('https://user:pw@partner.example/');
  refuses('http://10.1.2.3:8080/', true);
  assertPartnerUrl(new URL('https://partner.example/users/me'), false);
  assertPartnerUrl(new URL('http://127.0.0.1:4000/users/me'), true);
});

Deno.test('a partner name resolving to a private address is refused before any fetch', async () => {
  const url = new URL('https://rebound.example/jwks.json');
  const resolver = (answers: Record<string, string[]>) => (_host: string, type: 'A' | 'AAAA') =>
    Promise.resolve(answers[type] ?? []);
  await rejects(
    () => assertPartnerAddresses(url, false, resolver({ A: ['203.0.113.9', '10.0.0.8'] })),
    PartnerFetchError,
  );
  await rejects(
    () => assertPartnerAddresses(url, false, resolver({ AAAA: ['::ffff:169.254.169.254'] })),
    PartnerFetchError,
  );
  await assertPartnerAddresses(url, false, resolver({ A: ['203.0.113.9'], AAAA: ['2001:db8::9'] }));
});

Deno.test('a body streamed without Content-Length is cut off past 16 KiB, not buffered whole', async () => {
  let pulled = 0;
  const endless = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulled += 1;
      controller.enqueue(new Uint8Array(1024).fill(0x20));
    },
  });
  const request = new Request('http://broker.test/start', { method: 'POST', body: endless });
  const error = await readJsonBody(request, exchangeBodySchema).catch((caught) => caught);
  assert(error instanceof BrokerError);
  assertEquals(error.code, 'payload_too_large');
  assert(pulled <= 20, `pulled ${pulled} chunks`);
  const small = new Request('http://broker.test/exchange', {
    method: 'POST',
    body: new Blob(['{"code":"c","code_verifier":"v"}']).stream(),
  });
  assertEquals(await readJsonBody(small, exchangeBodySchema), { code: 'c', code_verifier: 'v' });
});

Deno.test('a minted session for any user but the chosen account is never handed out', async () => {
  const answers: Record<string, unknown> = {
    '/admin/generate_link': { hashed_token: 'h' },
    '/verify': {
      access_token: 'a',
      refresh_token: 'r',
      expires_in: 3600,
      user: { id: 'other', email: 'x@example.com' },
    },
  };
  const api = { auth: (path: string) => Promise.resolve(answers[path]) } as unknown as SupabaseApi;
  await rejects(
    () => mintSession(api, { userId: 'chosen', email: 'x@example.com' }),
    (error) => error instanceof BrokerError && error.code === 'server_error',
  );
  const minted = await mintSession(api, { userId: 'other', email: 'x@example.com' });
  assertEquals(minted.access_token, 'a');
});

Deno.test('an account whose identity cannot be bound is deleted again, not left orphaned', async () => {
  const calls: string[] = [];
  const api = {
    auth: (path: string, method: string) => {
      calls.push(`${method} ${path}`);
      return Promise.resolve(method === 'POST' ? { id: 'new-user' } : {});
    },
    rpc: () => Promise.reject(new Error('bind failed')),
  } as unknown as SupabaseApi;
  const subject = { clientId: 'svc_x', partnerSub: 'sub-1', cappedRole: 'member' };
  await rejects(() => settleAccount(api, subject, { kind: 'provision', email: 'a@example.com' }));
  assertEquals(calls, ['POST /admin/users', 'DELETE /admin/users/new-user']);
});

Deno.test('a link refused when it is made gets a fresh synthetic account, never the existing one', async () => {
  const created: string[] = [];
  const binds: unknown[] = [];
  const api = {
    auth: (path: string, method: string, body: { email?: string }) => {
      if (method === 'POST' && path === '/admin/users') created.push(body.email ?? '');
      return Promise.resolve({ id: 'fresh-user' });
    },
    rpc: (_name: string, args: { user_id: string; provisioned: boolean }) => {
      binds.push(args);
      return Promise.resolve(
        args.provisioned
          ? { refused: false, user_id: args.user_id, email: created[0], provisioned: true }
          : { refused: true },
      );
    },
  } as unknown as SupabaseApi;
  const subject = { clientId: 'svc_x', partnerSub: 'sub-1', cappedRole: 'member' };
  const account = await settleAccount(api, subject, {
    kind: 'link',
    userId: 'existing-user',
    email: 'victim@example.com',
  });
  assertEquals(account.userId, 'fresh-user');
  assertEquals(created.length, 1);
  assert(/^fed\.svc_x\.[0-9a-f]{32}@federated\.invalid$/.test(created[0] ?? ''));
  assertEquals(binds.length, 2);
});
