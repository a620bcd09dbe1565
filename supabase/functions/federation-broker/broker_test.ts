// Unit tests for the broker's pure parts: the iat window, HMAC verification, client-IP choice,
// account choice (000 §4.5), the link templates and the test-clock gate. Frozen clocks only.
import { deepStrictEqual as assertEquals, ok as assert, rejects } from 'node:assert/strict';
import { encodeBase64Url } from '../_shared/federation/base64url.ts';
import { chooseAccount } from './account-choice.ts';
import { BrokerError } from './broker-error.ts';
import { clientIpOf, rateLimitKeyOf } from './client-ip.ts';
import { readConfig } from './config.ts';
import { buildHandoffLink } from './handoff-link.ts';
import { isIatWithinWindow, signHmacPayload, verifyHmacAssertion } from './verify/hmac.ts';

const NOW_MS = 1_800_000_000_500;
const NOW = Math.floor(NOW_MS / 1000);

Deno.test('the iat window is [now - 120 s, now + 30 s], edges included', () => {
  assert(isIatWithinWindow(NOW - 120, NOW_MS));
  assert(isIatWithinWindow(NOW + 30, NOW_MS));
  assert(!isIatWithinWindow(NOW - 121, NOW_MS));
  assert(!isIatWithinWindow(NOW + 31, NOW_MS));
});

Deno.test('an hmac assertion verifies and yields the jti to burn until iat + 150 s', async () => {
  const payload = { sub: 'u1', email: 'u1@example.com', iat: NOW, jti: 'j1' };
  const signature = encodeBase64Url(await signHmacPayload('s3cret', payload));
  const identity = await verifyHmacAssertion(payload, signature, 's3cret', NOW_MS);
  assertEquals(identity.sub, 'u1');
  assertEquals(identity.jti?.expiresAt.getTime(), (NOW + 150) * 1000);
  await rejects(() => verifyHmacAssertion(payload, signature, 'other', NOW_MS), BrokerError);
  await rejects(
    () => verifyHmacAssertion({ ...payload, iat: NOW - 121 }, signature, 's3cret', NOW_MS),
    BrokerError,
  );
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

Deno.test('links carry the code in the query only, per target', () => {
  const config = { appLinkBase: 'https://app.example', appScheme: 'companion' };
  assertEquals(
    buildHandoffLink(config, 'universal', 'abc'),
    'https://app.example/app/auth/federation?code=abc',
  );
  assertEquals(buildHandoffLink(config, 'ios', 'abc'), 'companion://auth/federation?code=abc');
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
