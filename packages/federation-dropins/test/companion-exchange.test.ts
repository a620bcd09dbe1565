// The companion side's /exchange call against a stand-in broker on loopback (000 §4.3): the body,
// the 2.5 session it returns, and every 000 §7 status of /exchange as a typed error.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createPkcePair,
  exchangeHandoffCode,
  type HandoffSession,
  requestHandoffCode,
} from '../src/index.ts';
import { type StandInBroker, startStandInBroker } from './helpers/stand-in-broker.ts';

const SESSION: HandoffSession = {
  access_token: 'access',
  refresh_token: 'refresh',
  expires_in: 3600,
  user_id: '7b0e7a2e-0000-4000-8000-000000000001',
  email: 'partner.user@example.com',
  login_source: 'svc_partner_app',
};

let broker: StandInBroker;
beforeAll(async () => {
  broker = await startStandInBroker();
  broker.session = () => SESSION;
});
afterAll(async () => {
  await broker.close();
});
afterEach(() => {
  broker.requests.length = 0;
  broker.failWith = {};
});

/** A code issued by /start for a fresh pair, as the partner side would get it. */
async function issueCode() {
  const pair = await createPkcePair();
  const { code } = await requestHandoffCode(
    { brokerUrl: broker.brokerUrl, clientId: 'svc_partner_app' },
    pair,
    { hosted_token: 't' },
  );
  broker.requests.length = 0;
  return { code, code_verifier: pair.code_verifier };
}

describe('exchangeHandoffCode', () => {
  it('posts exactly { code, code_verifier } and returns the 000 §2.5 session', async () => {
    const issued = await issueCode();
    const session = await exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued });
    expect(session).toEqual(SESSION);
    expect(broker.requests).toHaveLength(1);
    expect(broker.requests[0]?.url).toBe('/functions/v1/federation-broker/exchange');
    expect(broker.requests[0]?.body).toEqual(issued);
    expect(broker.requests[0]?.headers.authorization).toBeUndefined();
  });

  it('answers verifier_mismatch for a wrong verifier and leaves the code usable (000 §3)', async () => {
    const issued = await issueCode();
    const wrong = (await createPkcePair()).code_verifier;
    await expect(
      exchangeHandoffCode({ brokerUrl: broker.brokerUrl, code: issued.code, code_verifier: wrong }),
    ).rejects.toMatchObject({
      name: 'CompanionHandoffError',
      code: 'verifier_mismatch',
      status: 401,
    });
    await expect(exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued })).resolves.toEqual(
      SESSION,
    );
  });

  it('answers code_expired for a code that was already exchanged', async () => {
    const issued = await issueCode();
    await exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued });
    await expect(
      exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued }),
    ).rejects.toMatchObject({ code: 'code_expired', status: 410 });
  });

  it.each([
    [400, 'invalid_request'],
    [401, 'verifier_mismatch'],
    [410, 'code_expired'],
    [429, 'rate_limited'],
    [500, 'broker_unavailable'],
    [302, 'broker_unavailable'],
  ])('turns a %i into %s', async (status, code) => {
    broker.failWith.exchange = status;
    const issued = await issueCode();
    const error = await exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code });
    expect(String(error)).not.toContain(issued.code_verifier);
  });

  it.each([
    ['a missing refresh_token', { ...SESSION, refresh_token: undefined }],
    ['a non-integer expires_in', { ...SESSION, expires_in: '3600' }],
    ['an empty user_id', { ...SESSION, user_id: '' }],
  ])('refuses a 200 with %s as invalid_response', async (_, body) => {
    broker.session = () => body as unknown as HandoffSession;
    try {
      const issued = await issueCode();
      await expect(
        exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued }),
      ).rejects.toMatchObject({ code: 'invalid_response' });
    } finally {
      broker.session = () => SESSION;
    }
  });

  it('keeps only the 000 §2.5 fields of the answer', async () => {
    broker.session = () => ({ ...SESSION, extra: 'ignored' }) as HandoffSession;
    try {
      const issued = await issueCode();
      expect(await exchangeHandoffCode({ brokerUrl: broker.brokerUrl, ...issued })).toEqual(
        SESSION,
      );
    } finally {
      broker.session = () => SESSION;
    }
  });

  it('reports an unreachable broker as broker_unavailable', async () => {
    await expect(
      exchangeHandoffCode({
        brokerUrl: 'http://127.0.0.1:1/functions/v1/federation-broker',
        code: 'c',
        code_verifier: 'v',
      }),
    ).rejects.toMatchObject({ code: 'broker_unavailable' });
  });
});
