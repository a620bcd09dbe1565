// 000 §7-§8 rate limits (per client and per IP, not bypassed by a forged X-Forwarded-For) and
// 000 §5 secret handling: the HMAC secret is shown once and appears on no read surface.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callBroker, codeOf, onboard, useBrokerStack } from './helpers/broker-stack.ts';
import {
  makePkcePair,
  type PartnerBackend,
  signHmac,
  startPartnerBackend,
  uniqueId,
} from './helpers/partners.ts';

const broker = useBrokerStack();
let backend: PartnerBackend;

beforeAll(async () => {
  backend = await startPartnerBackend();
});

afterAll(async () => {
  await backend?.close();
});

function startBody(clientId: string) {
  const pkce = makePkcePair();
  return {
    client_id: clientId,
    code_challenge: pkce.code_challenge,
    code_challenge_method: 'S256',
    backend_token: backend.signIn({ id: uniqueId('u'), email: `${uniqueId('u')}@example.com` }),
  };
}

describe('rate limits', () => {
  it('answers 429 past the per-IP limit, and a forged X-Forwarded-For does not reset it', async () => {
    await onboard(broker(), {
      client_id: 'svc_ip_limited',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      ip_limit_per_minute: 3,
    });
    const at = Date.UTC(2030, 0, 1, 0, 0, 5);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 6; attempt += 1) {
      const answer = await callBroker(broker(), 'start', startBody('svc_ip_limited'), {
        at,
        headers: {
          'x-forwarded-for': `203.0.113.${attempt}`,
          'x-real-ip': `198.51.100.${attempt}`,
        },
      });
      statuses.push(answer.status);
      if (answer.status === 429) {
        expect(answer.body.error).toBe('rate_limited');
        expect(answer.headers.get('retry-after')).toBe('60');
      }
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
  });

  it('counts a disabled client like an unknown one, so its own limits do not give it away', async () => {
    await onboard(broker(), {
      client_id: 'svc_disabled_limited',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      ip_limit_per_minute: 1,
      start_limit_per_minute: 1,
      enabled: false,
    });
    const at = Date.UTC(2030, 0, 1, 0, 4, 5);
    const disabled: unknown[] = [];
    const unknown: unknown[] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const a = await callBroker(broker(), 'start', startBody('svc_disabled_limited'), { at });
      const b = await callBroker(broker(), 'start', startBody('svc_never_onboarded'), { at });
      disabled.push([a.status, a.body]);
      unknown.push([b.status, b.body]);
    }
    expect(disabled).toEqual(unknown);
    expect(disabled.map((answer) => (answer as [number])[0])).toEqual([401, 401, 401]);
  });

  it('stops the codes a client issued once it is disabled (kill switch)', async () => {
    await onboard(broker(), {
      client_id: 'svc_killed',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
    });
    const pkce = makePkcePair();
    const start = await callBroker(broker(), 'start', {
      ...startBody('svc_killed'),
      code_challenge: pkce.code_challenge,
    });
    expect(start.status).toBe(200);
    await onboard(broker(), {
      client_id: 'svc_killed',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      enabled: false,
    });
    const exchange = await callBroker(broker(), 'exchange', {
      code: codeOf(start),
      code_verifier: pkce.code_verifier,
    });
    expect(exchange.status).toBe(410);
  });

  it('answers 429 past the per-client limit of /start', async () => {
    await onboard(broker(), {
      client_id: 'svc_client_limited',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      start_limit_per_minute: 2,
    });
    const at = Date.UTC(2030, 0, 1, 0, 1, 5);
    const statuses: number[] = [];
    for (let attempt = 0; attempt < 3; attempt += 1) {
      statuses.push(
        (await callBroker(broker(), 'start', startBody('svc_client_limited'), { at })).status,
      );
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('limits /exchange per IP too: guessing codes from one address ends in 429', async () => {
    const at = Date.UTC(2030, 0, 1, 0, 2, 5);
    let last = 0;
    for (let attempt = 0; attempt < 61; attempt += 1) {
      const pkce = makePkcePair();
      last = (
        await callBroker(
          broker(),
          'exchange',
          { code: pkce.code_challenge, code_verifier: pkce.code_verifier },
          {
            at,
            headers: { 'x-forwarded-for': `192.0.2.${attempt}` },
          },
        )
      ).status;
      if (attempt < 60) expect(last).toBe(410);
    }
    expect(last).toBe(429);
  });

  it('answers 429 past the per-client limit of /exchange', async () => {
    await onboard(broker(), {
      client_id: 'svc_exchange_limited',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      exchange_limit_per_minute: 1,
    });
    const at = Date.UTC(2030, 0, 1, 0, 3, 5);
    const pairs = [makePkcePair(), makePkcePair()];
    const codes: string[] = [];
    for (const pkce of pairs) {
      const body = { ...startBody('svc_exchange_limited'), code_challenge: pkce.code_challenge };
      codes.push(codeOf(await callBroker(broker(), 'start', body, { at })));
    }
    const first = await callBroker(
      broker(),
      'exchange',
      { code: codes[0], code_verifier: pairs[0]?.code_verifier },
      { at },
    );
    const second = await callBroker(
      broker(),
      'exchange',
      { code: codes[1], code_verifier: pairs[1]?.code_verifier },
      { at },
    );
    expect([first.status, second.status]).toEqual([200, 429]);
  });
});

describe('the HMAC secret (000 §5)', () => {
  it('is returned once at minting and found on no read surface afterwards', async () => {
    const minted = await onboard(broker(), { client_id: 'svc_secretive', verify_mode: 'hmac' });
    const secret = String(minted.hmac_secret);
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);

    // A hand-off with it works, so the sealed copy really is the secret.
    const pkce = makePkcePair();
    const payload = {
      sub: 'secretive-user',
      email: 'secretive@example.com',
      iat: Math.floor(Date.now() / 1000),
      jti: uniqueId('jti'),
    };
    const start = await callBroker(broker(), 'start', {
      client_id: 'svc_secretive',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      payload,
      signature: signHmac(secret, payload),
    });
    expect(start.status).toBe(200);

    const surfaces: unknown[] = [];
    surfaces.push((await broker().service.from('federation_clients').select('*')).data);
    surfaces.push((await broker().service.rpc('list_federation_clients', { confirm: true })).data);
    surfaces.push(
      (
        await broker().service.rpc('upsert_federation_client', {
          client_id: 'svc_secretive',
          client_name: 'again',
          verify_mode: 'hmac',
          capped_role: 'member',
          confirm: true,
        })
      ).data,
    );
    for (const table of [
      'federation_client_secrets',
      'federation_codes',
      'federation_identities',
    ]) {
      const { data, error } = await broker().service.from(table).select('*');
      surfaces.push(data);
      expect(error).not.toBeNull();
    }
    surfaces.push(broker().logs.join('\n'));
    const db = new pg.Client({ connectionString: broker().stack.dbUrl });
    await db.connect();
    try {
      const { rows } = await db.query(
        `select count(*)::int as n from private.federation_client_secrets
         where position(convert_to($1, 'UTF8') in sealed_secret) > 0`,
        [secret],
      );
      expect(rows[0].n).toBe(0);
    } finally {
      await db.end();
    }
    for (const surface of surfaces) expect(JSON.stringify(surface ?? null)).not.toContain(secret);
  });

  it('is never readable again: re-minting replaces it and the old one stops verifying', async () => {
    const first = String(
      (await onboard(broker(), { client_id: 'svc_rotating', verify_mode: 'hmac' })).hmac_secret,
    );
    const second = String(
      (await onboard(broker(), { client_id: 'svc_rotating', verify_mode: 'hmac' })).hmac_secret,
    );
    expect(second).not.toBe(first);
    const payload = {
      sub: 'rotating-user',
      email: 'rotating@example.com',
      iat: Math.floor(Date.now() / 1000),
      jti: uniqueId('jti'),
    };
    const pkce = makePkcePair();
    const withOld = await callBroker(broker(), 'start', {
      client_id: 'svc_rotating',
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      payload,
      signature: signHmac(first, payload),
    });
    expect(withOld.status).toBe(401);
  });
});
