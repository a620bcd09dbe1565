// /start and /exchange end to end (000 §1, §3, §4.1, §4.3, §7): the three verify modes against
// real partner stand-ins, PKCE, single use under concurrency, the 60 s lifetime (injected
// clock), HMAC and JWT attacks, the backend's failure modes, SSRF guards, oversized bodies and
// the headers on every answer (5xx and preflight included).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callBroker, codeOf, onboard, useBrokerStack } from './helpers/broker-stack.ts';
import {
  type JwksServer,
  makePkcePair,
  type PartnerBackend,
  signHmac,
  startJwksServer,
  startPartnerBackend,
  uniqueId,
} from './helpers/partners.ts';

const broker = useBrokerStack();
let backend: PartnerBackend;
let jwks: JwksServer;
let hmacSecret: string;
const now = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  backend = await startPartnerBackend();
  jwks = await startJwksServer();
  await onboard(broker(), {
    client_id: 'svc_bearer',
    verify_mode: 'backend_bearer',
    backend_base_url: backend.url,
  });
  await onboard(broker(), {
    client_id: 'svc_redirecting',
    verify_mode: 'backend_bearer',
    backend_base_url: `${backend.url}/redirect`,
  });
  await onboard(broker(), {
    client_id: 'svc_broken',
    verify_mode: 'backend_bearer',
    backend_base_url: `${backend.url}/broken`,
  });
  await onboard(broker(), {
    client_id: 'svc_huge',
    verify_mode: 'backend_bearer',
    backend_base_url: `${backend.url}/huge`,
  });
  await onboard(broker(), {
    client_id: 'svc_disabled',
    verify_mode: 'backend_bearer',
    backend_base_url: backend.url,
    enabled: false,
  });
  hmacSecret = String(
    (await onboard(broker(), { client_id: 'svc_hmac', verify_mode: 'hmac' })).hmac_secret,
  );
  await onboard(broker(), {
    client_id: 'svc_jwt',
    verify_mode: 'hosted_jwt',
    jwks_url: jwks.url,
    issuer: jwks.issuer,
    audience: 'federation-broker',
  });
});

afterAll(async () => {
  await backend?.close();
  await jwks?.close();
});

function hmacPayload(overrides: Record<string, unknown> = {}) {
  return {
    sub: uniqueId('hmac-user'),
    email: `${uniqueId('h')}@example.com`,
    iat: now(),
    jti: uniqueId('jti'),
    ...overrides,
  };
}

async function startHmac(pkce = makePkcePair(), payload = hmacPayload(), at?: number) {
  return callBroker(
    broker(),
    'start',
    {
      client_id: 'svc_hmac',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      payload,
      signature: signHmac(hmacSecret, payload),
    },
    at === undefined ? {} : { at },
  );
}

async function startBearer(
  pkce = makePkcePair(),
  clientId = 'svc_bearer',
  extra: Record<string, unknown> = {},
) {
  const token = backend.signIn({
    id: uniqueId('bearer-user'),
    email: `${uniqueId('b')}@example.com`,
  });
  return callBroker(broker(), 'start', {
    client_id: clientId,
    code_challenge: pkce.code_challenge,
    code_challenge_method: 'S256',
    backend_token: token,
    ...extra,
  });
}

async function startJwt(token: string, pkce = makePkcePair()) {
  return callBroker(broker(), 'start', {
    client_id: 'svc_jwt',
    code_challenge: pkce.code_challenge,
    code_challenge_method: 'S256',
    hosted_token: token,
  });
}

function jwtClaims(overrides: Record<string, unknown> = {}) {
  return {
    sub: uniqueId('jwt-user'),
    email: `${uniqueId('j')}@example.com`,
    iss: jwks.issuer,
    aud: 'federation-broker',
    ...overrides,
  };
}

describe('the three verify modes', () => {
  it('hands off a backend_bearer user end to end and returns the 000 §2.5 session fields', async () => {
    const pkce = makePkcePair();
    const token = backend.signIn({ id: 'bearer-e2e', email: 'Bearer.E2E@Example.com' });
    const start = await callBroker(broker(), 'start', {
      client_id: 'svc_bearer',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      backend_token: token,
      target: 'universal',
    });
    expect(start.status).toBe(200);
    expect(start.body).toEqual({
      link: expect.stringMatching(/\/app\/auth\/federation\?code=[A-Za-z0-9_-]{43}$/),
      expires_in: 60,
      target: 'universal',
    });
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.status).toBe(200);
    expect(exchange.body).toEqual({
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_in: 3600,
      user_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: 'bearer.e2e@example.com',
      login_source: 'svc_bearer',
    });
    const { data } = await broker().service.auth.getUser(String(exchange.body.access_token));
    expect(data.user?.id).toBe(exchange.body.user_id);
  });

  it('hands off an hmac user end to end', async () => {
    const pkce = makePkcePair();
    const start = await startHmac(pkce);
    expect(start.status).toBe(200);
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.status).toBe(200);
    expect(exchange.body.login_source).toBe('svc_hmac');
  });

  it('hands off a hosted_jwt user end to end', async () => {
    const pkce = makePkcePair();
    const start = await startJwt(await jwks.sign(jwtClaims()), pkce);
    expect(start.status).toBe(200);
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.status).toBe(200);
    expect(exchange.body.login_source).toBe('svc_jwt');
  });

  it('accepts the backend token as Authorization: Bearer, and the body field wins over it', async () => {
    const pkce = makePkcePair();
    const token = backend.signIn({ id: 'header-user', email: 'header-user@example.com' });
    const viaHeader = await callBroker(
      broker(),
      'start',
      {
        client_id: 'svc_bearer',
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'S256',
      },
      { headers: { authorization: `Bearer ${token}` } },
    );
    expect(viaHeader.status).toBe(200);
    const bodyWins = await callBroker(
      broker(),
      'start',
      {
        client_id: 'svc_bearer',
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'S256',
        backend_token: 'not-a-valid-token',
      },
      { headers: { authorization: `Bearer ${token}` } },
    );
    expect(bodyWins.status).toBe(401);
  });

  it('answers target ios with the same app link and ?code=, echoing the target (000 §4.1)', async () => {
    const start = await startBearer(makePkcePair(), 'svc_bearer', { target: 'ios' });
    expect(start.status).toBe(200);
    expect(start.body.target).toBe('ios');
    expect(String(start.body.link)).toMatch(
      /^https?:\/\/[^/]+\/app\/auth\/federation\?code=[A-Za-z0-9_-]{43}$/,
    );
  });
});

describe('000 §1 security rules', () => {
  it('rule 1: /start answers only a link with a code, never a token', async () => {
    const start = await startBearer();
    expect(Object.keys(start.body).sort()).toEqual(['expires_in', 'link', 'target']);
    expect(String(start.body.link)).not.toMatch(/token|eyJ/);
  });

  it('rule 3: the RFC 7636 appendix B verifier is accepted with its published challenge', async () => {
    const pkce = {
      code_verifier: 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    };
    expect(makePkcePair(pkce.code_verifier).code_challenge).toBe(pkce.code_challenge);
    const start = await startBearer(pkce);
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.status).toBe(200);
  });

  it('rule 3: random verifiers round-trip, and a wrong verifier gets 401 and leaves the code usable', async () => {
    for (let round = 0; round < 3; round += 1) {
      const pkce = makePkcePair();
      const start = await startBearer(pkce);
      const wrong = await callBroker(broker(), 'exchange', {
        code: codeOf(start),
        code_verifier: makePkcePair().code_verifier,
      });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error).toBe('verifier_mismatch');
      const right = await callBroker(broker(), 'exchange', {
        code: codeOf(start),
        code_verifier: pkce.code_verifier,
      });
      expect(right.status).toBe(200);
    }
  });

  it('rule 3: five wrong verifiers burn the code', async () => {
    const pkce = makePkcePair();
    const code = codeOf(await startBearer(pkce));
    for (let attempt = 0; attempt < 5; attempt += 1) {
      expect(
        (
          await callBroker(broker(), 'exchange', {
            code,
            code_verifier: makePkcePair().code_verifier,
          })
        ).status,
      ).toBe(401);
    }
    expect(
      (await callBroker(broker(), 'exchange', { code, code_verifier: pkce.code_verifier })).status,
    ).toBe(410);
  });

  it('rule 4: a second exchange of a used code answers 410', async () => {
    const pkce = makePkcePair();
    const code = codeOf(await startBearer(pkce));
    expect(
      (await callBroker(broker(), 'exchange', { code, code_verifier: pkce.code_verifier })).status,
    ).toBe(200);
    const again = await callBroker(broker(), 'exchange', {
      code,
      code_verifier: pkce.code_verifier,
    });
    expect(again.status).toBe(410);
    expect(again.body).toEqual({ error: 'code_gone', error_description: expect.any(String) });
  });

  it('rule 4: 50 concurrent exchanges of one code give exactly one session', async () => {
    const pkce = makePkcePair();
    const code = codeOf(await startBearer(pkce));
    const answers = await Promise.all(
      Array.from({ length: 50 }, () =>
        callBroker(broker(), 'exchange', { code, code_verifier: pkce.code_verifier }),
      ),
    );
    const statuses = answers.map((answer) => answer.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 410)).toHaveLength(49);
  });

  it('rule 4: a code still works at 59 s and answers 410 at 61 s (injected clock)', async () => {
    const t0 = Date.now();
    const early = makePkcePair();
    const late = makePkcePair();
    const earlyCode = codeOf(
      await startHmac(early, hmacPayload({ iat: Math.floor(t0 / 1000) }), t0),
    );
    const lateCode = codeOf(await startHmac(late, hmacPayload({ iat: Math.floor(t0 / 1000) }), t0));
    const at59 = await callBroker(
      broker(),
      'exchange',
      { code: earlyCode, code_verifier: early.code_verifier },
      { at: t0 + 59_000 },
    );
    expect(at59.status).toBe(200);
    const at61 = await callBroker(
      broker(),
      'exchange',
      { code: lateCode, code_verifier: late.code_verifier },
      { at: t0 + 61_000 },
    );
    expect(at61.status).toBe(410);
    expect(at61.body.error).toBe('code_gone');
  });

  it('used, expired and unknown codes get the identical 410 body', async () => {
    const unknown = await callBroker(broker(), 'exchange', {
      code: makePkcePair().code_verifier,
      code_verifier: makePkcePair().code_verifier,
    });
    const malformed = await callBroker(broker(), 'exchange', {
      code: 'nope',
      code_verifier: makePkcePair().code_verifier,
    });
    const pkce = makePkcePair();
    const code = codeOf(await startBearer(pkce));
    await callBroker(broker(), 'exchange', { code, code_verifier: pkce.code_verifier });
    const used = await callBroker(broker(), 'exchange', {
      code,
      code_verifier: pkce.code_verifier,
    });
    const t0 = Date.now();
    const late = makePkcePair();
    const lateCode = codeOf(await startHmac(late, hmacPayload({ iat: Math.floor(t0 / 1000) }), t0));
    const expired = await callBroker(
      broker(),
      'exchange',
      { code: lateCode, code_verifier: late.code_verifier },
      { at: t0 + 61_000 },
    );
    expect(unknown.status).toBe(410);
    for (const answer of [malformed, used, expired]) {
      expect(answer).toMatchObject({ status: 410, body: unknown.body });
    }
  });

  it('rule 6: /start without the credential of the client mode is rejected with 400', async () => {
    const pkce = makePkcePair();
    for (const clientId of ['svc_bearer', 'svc_hmac', 'svc_jwt']) {
      const answer = await callBroker(broker(), 'start', {
        client_id: clientId,
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'S256',
      });
      expect(answer.status, clientId).toBe(400);
      expect(answer.body.error).toBe('invalid_request');
    }
  });
});

describe('000 §7 error rows', () => {
  const pkce = makePkcePair();
  it.each([
    ['a missing client_id', { code_challenge: pkce.code_challenge, code_challenge_method: 'S256' }],
    [
      'a malformed client_id',
      { client_id: 'SVC-bad', code_challenge: pkce.code_challenge, code_challenge_method: 'S256' },
    ],
    ['a missing code_challenge', { client_id: 'svc_bearer', code_challenge_method: 'S256' }],
    [
      'a 42-character code_challenge',
      {
        client_id: 'svc_bearer',
        code_challenge: pkce.code_challenge.slice(1),
        code_challenge_method: 'S256',
      },
    ],
    [
      'a code_challenge outside base64url',
      {
        client_id: 'svc_bearer',
        code_challenge: `${pkce.code_challenge.slice(1)}+`,
        code_challenge_method: 'S256',
      },
    ],
    [
      'code_challenge_method plain',
      {
        client_id: 'svc_bearer',
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'plain',
      },
    ],
    [
      'a missing code_challenge_method',
      { client_id: 'svc_bearer', code_challenge: pkce.code_challenge },
    ],
    [
      'an unknown target',
      {
        client_id: 'svc_bearer',
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'S256',
        target: 'https://evil.example',
      },
    ],
  ])('/start answers 400 for %s', async (_name, body) => {
    const answer = await callBroker(broker(), 'start', { backend_token: 'x', ...body });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({
      error: 'invalid_request',
      error_description: expect.any(String),
    });
  });

  it.each([
    ['a missing code', { code_verifier: pkce.code_verifier }],
    ['a missing code_verifier', { code: 'abc' }],
    [
      'a verifier with illegal characters',
      { code: 'abc', code_verifier: `${pkce.code_verifier}!` },
    ],
  ])('/exchange answers 400 for %s', async (_name, body) => {
    expect((await callBroker(broker(), 'exchange', body)).status).toBe(400);
  });

  it('answers 401 with one opaque body for an unknown client, a disabled client and a bad token', async () => {
    const unknown = await startBearer(makePkcePair(), 'svc_nobody');
    const disabled = await startBearer(makePkcePair(), 'svc_disabled');
    const badToken = await callBroker(broker(), 'start', {
      client_id: 'svc_bearer',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      backend_token: 'forged',
    });
    for (const answer of [unknown, disabled, badToken]) expect(answer.status).toBe(401);
    expect(disabled.body).toEqual(unknown.body);
    expect(badToken.body).toEqual(unknown.body);
  });

  it('answers 400 for a body that is not JSON and 404 and 405 elsewhere, all with the headers', async () => {
    const notJson = await fetch(`${broker().brokerUrl}/start`, { method: 'POST', body: '{nope' });
    const unknownRoute = await callBroker(broker(), 'nothing', {});
    const getStart = await callBroker(broker(), 'start', {}, { method: 'GET' });
    // A browser's preflight (Origin and Access-Control-Request-Method): the broker answers it.
    const preflight = await fetch(`${broker().brokerUrl}/start`, {
      method: 'OPTIONS',
      headers: { origin: 'https://partner.example', 'access-control-request-method': 'POST' },
    });
    expect([notJson.status, unknownRoute.status, getStart.status]).toEqual([400, 404, 405]);
    expect(preflight.status).toBeLessThan(300);
    for (const headers of [
      notJson.headers,
      unknownRoute.headers,
      getStart.headers,
      preflight.headers,
    ]) {
      expect(headers.get('cache-control')).toBe('no-store');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it.each([
    ['a declared Content-Length', false],
    ['a chunked body without Content-Length', true],
  ])('answers 413 with the headers for a body over 16 KiB sent with %s', async (_name, chunked) => {
    const oversized = JSON.stringify({ client_id: 'svc_bearer', pad: 'x'.repeat(17 * 1024) });
    const bytes = new TextEncoder().encode(oversized);
    const body = chunked
      ? new ReadableStream<Uint8Array>({
          start(controller) {
            for (let offset = 0; offset < bytes.length; offset += 1024) {
              controller.enqueue(bytes.slice(offset, offset + 1024));
            }
            controller.close();
          },
        })
      : oversized;
    const answer = await fetch(`${broker().brokerUrl}/start`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
      ...(chunked ? { duplex: 'half' } : {}),
    } as RequestInit);
    expect(answer.status).toBe(413);
    expect(await answer.json()).toEqual({
      error: 'payload_too_large',
      error_description: expect.any(String),
    });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('answers an unexpected failure with 500 server_error and the headers, the cause only in the log', async () => {
    await onboard(broker(), { client_id: 'svc_broken_secret', verify_mode: 'hmac' });
    const db = new pg.Client({ connectionString: broker().stack.dbUrl });
    await db.connect();
    try {
      await db.query(
        `update private.federation_client_secrets set sealed_secret = '\\x00'
         where client_id = 'svc_broken_secret'`,
      );
    } finally {
      await db.end();
    }
    const payload = hmacPayload();
    const answer = await callBroker(broker(), 'start', {
      client_id: 'svc_broken_secret',
      code_challenge: makePkcePair().code_challenge,
      code_challenge_method: 'S256',
      payload,
      signature: signHmac('unknown', payload),
    });
    expect(answer.status).toBe(500);
    expect(answer.body).toEqual({ error: 'server_error', error_description: expect.any(String) });
    expect(answer.headers.get('cache-control')).toBe('no-store');
    expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
  });

  it('sends Cache-Control: no-store and Referrer-Policy: no-referrer on successes and errors', async () => {
    const pkce2 = makePkcePair();
    const start = await startBearer(pkce2);
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce2.code_verifier,
    });
    const gone = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce2.code_verifier,
    });
    for (const answer of [start, exchange, gone]) {
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(answer.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});

describe('hmac mode attacks', () => {
  it('rejects a replayed jti with 401', async () => {
    const payload = hmacPayload();
    expect((await startHmac(makePkcePair(), payload)).status).toBe(200);
    expect((await startHmac(makePkcePair(), payload)).status).toBe(401);
  });

  it.each([
    ['now - 120 s', -120, 200],
    ['now + 30 s', 30, 200],
    ['now - 121 s', -121, 401],
    ['now + 31 s', 31, 401],
  ])('iat at %s answers %i (injected clock)', async (_name, offset, status) => {
    const t0 = Date.now();
    const payload = hmacPayload({ iat: Math.floor(t0 / 1000) + offset });
    expect((await startHmac(makePkcePair(), payload, t0)).status).toBe(status);
  });

  it('rejects a bad signature, a non-canonical encoding, extra keys and a string iat', async () => {
    const pkce = makePkcePair();
    const payload = hmacPayload();
    const good = signHmac(hmacSecret, payload);
    const variants = [
      { payload, signature: signHmac('wrong-secret', payload) },
      { payload, signature: `${good}=` },
      { payload, signature: Buffer.from(good, 'base64url').toString('hex') },
      {
        payload: { ...payload, role: 'admin' },
        signature: signHmac(hmacSecret, { ...payload, role: 'admin' }),
      },
      {
        payload: { ...payload, iat: String(payload.iat) },
        signature: signHmac(hmacSecret, { ...payload, iat: String(payload.iat) }),
      },
    ];
    for (const variant of variants) {
      const answer = await callBroker(broker(), 'start', {
        client_id: 'svc_hmac',
        code_challenge: pkce.code_challenge,
        code_challenge_method: 'S256',
        ...variant,
      });
      expect(answer.status).toBe(401);
    }
  });

  it('accepts the payload whatever the key order the partner sent', async () => {
    const payload = hmacPayload();
    const reordered = {
      jti: payload.jti,
      sub: payload.sub,
      iat: payload.iat,
      email: payload.email,
    };
    expect((await startHmac(makePkcePair(), reordered)).status).toBe(200);
  });
});

describe('hosted_jwt mode attacks', () => {
  function unsigned(header: Record<string, unknown>, claims: Record<string, unknown>) {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    return `${part(header)}.${part(claims)}`;
  }

  /** How often the broker logged that jose refused a token's alg (the allowlist at work). */
  const algRefusals = () =>
    broker().logs.filter((line) => line.includes('ERR_JOSE_ALG_NOT_ALLOWED')).length;

  it('refuses alg none, by the algorithm allowlist', async () => {
    const before = algRefusals();
    const token = `${unsigned({ alg: 'none', kid: 'x' }, { ...jwtClaims(), iat: now(), exp: now() + 600 })}.`;
    expect((await startJwt(token)).status).toBe(401);
    expect(algRefusals()).toBe(before + 1);
  });

  it('refuses HS256 signed with the public key as the secret, by the algorithm allowlist', async () => {
    const before = algRefusals();
    const { createHmac } = await import('node:crypto');
    const publicJwk = jwks.publicJwk();
    const input = unsigned(
      { alg: 'HS256', kid: publicJwk.kid },
      { ...jwtClaims(), iat: now(), exp: now() + 600 },
    );
    const signature = createHmac('sha256', JSON.stringify(publicJwk))
      .update(input)
      .digest('base64url');
    expect((await startJwt(`${input}.${signature}`)).status).toBe(401);
    expect(algRefusals()).toBe(before + 1);
  });

  it('refuses a wrong audience, a wrong issuer, a missing kid and an expired token', async () => {
    expect((await startJwt(await jwks.sign(jwtClaims({ aud: 'someone-else' })))).status).toBe(401);
    expect(
      (await startJwt(await jwks.sign(jwtClaims({ iss: 'https://other-tenant.example' })))).status,
    ).toBe(401);
    expect((await startJwt(await jwks.sign(jwtClaims(), { kid: null }))).status).toBe(401);
    expect((await startJwt(await jwks.sign(jwtClaims(), { iat: now() - 7200 }))).status).toBe(401);
  });

  it('picks up a rotated key (new kid) from the JWKS', async () => {
    expect((await startJwt(await jwks.sign(jwtClaims()))).status).toBe(200);
    await jwks.rotate();
    expect((await startJwt(await jwks.sign(jwtClaims()))).status).toBe(200);
  });
});

describe('backend_bearer failure modes', () => {
  it('rejects a backend that redirects, without following the redirect', async () => {
    const answer = await startBearer(makePkcePair(), 'svc_redirecting');
    expect(answer.status).toBe(401);
    expect(backend.hits.some((hit) => hit.includes('/evil'))).toBe(false);
  });

  it('rejects a backend answering 5xx, and an oversized answer', async () => {
    expect((await startBearer(makePkcePair(), 'svc_broken')).status).toBe(401);
    expect((await startBearer(makePkcePair(), 'svc_huge')).status).toBe(401);
  });

  it('never calls a partner URL on a private network, even one written past onboarding', async () => {
    await onboard(broker(), {
      client_id: 'svc_ssrf',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
    });
    const db = new pg.Client({ connectionString: broker().stack.dbUrl });
    await db.connect();
    try {
      // Onboarding refuses such URLs (pgTAP); this checks the broker's own guard behind it.
      await db.query(
        `update public.federation_clients set backend_base_url = 'http://169.254.169.254/latest'
         where client_id = 'svc_ssrf'`,
      );
    } finally {
      await db.end();
    }
    const started = Date.now();
    const answer = await startBearer(makePkcePair(), 'svc_ssrf');
    expect(answer.status).toBe(401);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(
      broker().logs.some((line) => line.includes('partner URL host is not a public address')),
    ).toBe(true);
  });

  it('takes the identity from users/me, never from the request body', async () => {
    const pkce = makePkcePair();
    const token = backend.signIn({ id: 'real-user', email: 'real-user@example.com' });
    const start = await callBroker(broker(), 'start', {
      client_id: 'svc_bearer',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      backend_token: token,
      payload: { sub: 'attacker', email: 'victim@example.com' },
    });
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.body.email).toBe('real-user@example.com');
  });
});
