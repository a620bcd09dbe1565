// The partner helper's four steps against a stand-in broker on loopback (000 §1 steps 1-3, §4.1):
// what goes over the wire, the link that is opened, and the 000 §7 statuses as typed errors.
// Runs as a React Native app would: injected opener and random source, no WebCrypto.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  canonicalJson,
  credentialFromPartnerBackend,
  type HandoffOptions,
  handOffToCompanion,
  parseHandoffLink,
  signHmacPayload,
} from '../src/index.ts';
import { type StandInBroker, startStandInBroker } from './helpers/stand-in-broker.ts';

let broker: StandInBroker;
beforeAll(async () => {
  broker = await startStandInBroker();
});
afterAll(async () => {
  await broker.close();
});
afterEach(() => {
  broker.requests.length = 0;
  broker.failWith = {};
  broker.startBody = undefined;
  vi.unstubAllGlobals();
});

function options(overrides: Partial<HandoffOptions> = {}): HandoffOptions & { opened: string[] } {
  const opened: string[] = [];
  return {
    brokerUrl: broker.brokerUrl,
    clientId: 'svc_partner_app',
    credential: () => ({ backend_token: 'partner-user-token' }),
    openLink: (link) => {
      opened.push(link);
    },
    opened,
    ...overrides,
  };
}

const linkConfig = () => ({
  schemes: ['com.example.companion', 'companion-alias'],
  appLinkBase: broker.appLinkBase,
});

describe('handOffToCompanion', () => {
  it('sends /start the 000 §4.1 body and opens a universal link with the verifier in the fragment', async () => {
    const o = options();
    const started = await handOffToCompanion(o);
    expect(started).toEqual({ target: 'universal', expires_in: 60 });
    const [start] = broker.requests;
    expect(start?.url).toBe('/functions/v1/federation-broker/start');
    expect(start?.headers['content-type']).toBe('application/json');
    expect(start?.headers.authorization).toBeUndefined();
    expect(start?.body).toEqual({
      client_id: 'svc_partner_app',
      code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      code_challenge_method: 'S256',
      target: 'universal',
      backend_token: 'partner-user-token',
    });
    expect(o.opened).toHaveLength(1);
    const link = parseHandoffLink(o.opened[0] as string, linkConfig());
    expect(link.form).toBe('universal');
    // 000 §1 rule 3: the challenge sent to /start is S256 of the verifier in the fragment.
    expect(createHash('sha256').update(link.code_verifier).digest('base64url')).toBe(
      start?.body.code_challenge,
    );
    // 000 §1 rule 2: the verifier went to no server.
    expect(JSON.stringify(broker.requests)).not.toContain(link.code_verifier);
  });

  it('opens the custom-scheme link for target ios', async () => {
    const o = options({ target: 'ios', appScheme: 'com.example.companion' });
    expect(await handOffToCompanion(o)).toEqual({ target: 'ios', expires_in: 60 });
    expect(broker.requests[0]?.body.target).toBe('ios');
    expect(o.opened[0]).toMatch(
      /^com\.example\.companion:\/\/auth\/federation\?code=[^#&]+#fed_verifier=[A-Za-z0-9_-]{43}$/,
    );
  });

  it('pins the universal link to appLinkBase when set, taking only the code from /start', async () => {
    const o = options({ appLinkBase: 'https://app.example.com' });
    await handOffToCompanion(o);
    expect(o.opened[0]).toMatch(/^https:\/\/app\.example\.com\/app\/auth\/federation\?code=/);
  });

  it.each([
    ['hmac', { payload: { sub: 'u1', email: 'u@example.com', iat: 1, jti: 'j1' }, signature: 's' }],
    ['hosted_jwt', { hosted_token: 'eyJ.hosted.token' }],
  ])('sends the %s credential fields in the body', async (_, credential) => {
    await handOffToCompanion(options({ credential: () => credential }));
    expect(broker.requests[0]?.body).toMatchObject(credential);
  });

  it('runs without WebCrypto given a random source, as on React Native', async () => {
    const getRandomValues = (bytes: Uint8Array) => {
      bytes.set(randomBytes(bytes.length));
      return bytes;
    };
    vi.stubGlobal('crypto', undefined);
    const o = options({ getRandomValues });
    await handOffToCompanion(o);
    const { code_verifier } = parseHandoffLink(o.opened[0] as string, linkConfig());
    expect(createHash('sha256').update(code_verifier).digest('base64url')).toBe(
      broker.requests[0]?.body.code_challenge,
    );
  });

  it.each([
    [400, 'invalid_request'],
    [401, 'unauthorized'],
    [429, 'rate_limited'],
    [500, 'broker_unavailable'],
    [503, 'broker_unavailable'],
  ])('turns a %i from /start into %s and opens nothing', async (status, code) => {
    broker.failWith.start = status;
    const o = options();
    await expect(handOffToCompanion(o)).rejects.toMatchObject({
      name: 'HandoffError',
      code,
      status,
    });
    expect(o.opened).toEqual([]);
  });

  it.each([
    ['no link', () => ({ expires_in: 60, target: 'universal' })],
    [
      'a link without a code',
      () => ({
        link: 'https://a.example/app/auth/federation',
        expires_in: 60,
        target: 'universal',
      }),
    ],
    [
      'another target',
      (code: string) => ({
        link: `https://a.example/app/auth/federation?code=${code}`,
        expires_in: 60,
        target: 'ios',
      }),
    ],
    [
      'a link elsewhere',
      (code: string) => ({
        link: `https://a.example/login?code=${code}`,
        expires_in: 60,
        target: 'universal',
      }),
    ],
  ])('refuses a /start answer with %s', async (_, body) => {
    broker.startBody = body;
    const o = options();
    await expect(handOffToCompanion(o)).rejects.toMatchObject({ code: 'invalid_response' });
    expect(o.opened).toEqual([]);
  });

  it.each([
    ['a client_id without the svc_ prefix', { clientId: 'partner' }],
    ['a plain-http broker on a public host', { brokerUrl: 'http://broker.example.com' }],
    ['target ios without appScheme', { target: 'ios' as const }],
  ])('refuses %s before minting anything', async (_, overrides) => {
    await expect(handOffToCompanion(options(overrides))).rejects.toMatchObject({
      code: 'invalid_options',
    });
    expect(broker.requests).toEqual([]);
  });

  it('reports a missing credential as credential_failed without calling the broker', async () => {
    const o = options({
      credential: () => {
        throw new Error('the user is signed out');
      },
    });
    await expect(handOffToCompanion(o)).rejects.toMatchObject({ code: 'credential_failed' });
    await expect(
      handOffToCompanion(options({ credential: () => ({}) as never })),
    ).rejects.toMatchObject({ code: 'credential_failed' });
    expect(broker.requests).toEqual([]);
  });

  it('reports an unreachable broker as broker_unavailable', async () => {
    const o = options({ brokerUrl: 'http://127.0.0.1:1/functions/v1/federation-broker' });
    await expect(handOffToCompanion(o)).rejects.toMatchObject({ code: 'broker_unavailable' });
  });

  it('needs an opener outside a browser and says so before calling the broker', async () => {
    await expect(handOffToCompanion(options({ openLink: undefined }))).rejects.toMatchObject({
      code: 'open_failed',
    });
    expect(broker.requests).toEqual([]);
  });

  it('wraps an opener failure as open_failed without the link in the message', async () => {
    const o = options({
      openLink: () => {
        throw new Error('no app handles this link');
      },
    });
    const error = await handOffToCompanion(o).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'open_failed' });
    expect(String(error)).not.toContain('fed_verifier');
  });
});

describe('the partner backend credential (hmac mode)', () => {
  let backend: Server;
  let backendUrl: string;
  const secret = 'partner-hmac-secret';
  const seen: { authorization?: string; body: unknown }[] = [];
  beforeAll(async () => {
    // The partner's own backend: signs a payload for its signed-in user (000 §2.4, §4.1).
    backend = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (c: Buffer) => chunks.push(c));
      request.on('end', async () => {
        seen.push({
          authorization: request.headers.authorization,
          body: JSON.parse(Buffer.concat(chunks).toString()),
        });
        if (request.headers.authorization !== 'Bearer partner-session') {
          response.writeHead(401).end();
          return;
        }
        const signed = await signHmacPayload(secret, {
          sub: 'u-1',
          email: 'u1@example.com',
          iat: 1_700_000_000,
          jti: 'jti-1',
        });
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify(signed));
      });
    });
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    backendUrl = `http://127.0.0.1:${(backend.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => backend.close(resolve));
  });

  it('fetches a signed payload from the partner backend and sends it to /start', async () => {
    const credential = credentialFromPartnerBackend({
      backendBaseUrl: backendUrl,
      headers: () => ({ authorization: 'Bearer partner-session' }),
    });
    await handOffToCompanion(options({ credential }));
    const body = broker.requests[0]?.body as Record<string, unknown>;
    expect(seen.at(-1)?.body).toEqual({ code_challenge: body.code_challenge });
    const canonical = '{"email":"u1@example.com","iat":1700000000,"jti":"jti-1","sub":"u-1"}';
    expect(canonicalJson(body.payload)).toBe(canonical);
    expect(body.signature).toBe(createHmac('sha256', secret).update(canonical).digest('base64url'));
  });

  it('reports a partner backend refusal as credential_failed', async () => {
    const credential = credentialFromPartnerBackend({ backendBaseUrl: backendUrl });
    await expect(handOffToCompanion(options({ credential }))).rejects.toMatchObject({
      code: 'credential_failed',
    });
    expect(broker.requests).toEqual([]);
  });
});

describe('canonicalJson (000 §4.1)', () => {
  it('sorts keys at every depth and drops undefined values', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: 'é' }, e: [2, undefined] })).toBe(
      '{"a":{"c":"é"},"b":1,"e":[2,null]}',
    );
  });
});
