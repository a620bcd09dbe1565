// End to end through the broker on a started stack (docs/federation.md "Cascade revocation",
// "Verify modes"): cascade revocation (a partner disabled or deleted, or one partner user revoked,
// signs out exactly the sessions minted through it: refresh refused, GET /auth/v1/user answers 403
// session_not_found) and HMAC assertions bound to the PKCE challenge (hmac_binds_challenge).
import { beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokerAnswer,
  callBroker,
  codeOf,
  onboard,
  useBrokerStack,
} from './helpers/broker-stack.ts';
import {
  makePkcePair,
  type PartnerBackend,
  type PartnerUser,
  type PkcePair,
  signHmac,
  startPartnerBackend,
  uniqueId,
} from './helpers/partners.ts';

const broker = useBrokerStack();
let backend: PartnerBackend;

beforeAll(async () => {
  backend = await startPartnerBackend();
  return () => backend.close();
});

interface Minted {
  access_token: string;
  refresh_token: string;
  user_id: string;
}

const newPartnerUser = (email = `${uniqueId('rev')}@example.com`): PartnerUser => ({
  id: uniqueId('partner-user'),
  email,
});

/** 000 §1 steps 2 and 4 for a backend_bearer client: /start, then /exchange with the verifier. */
async function handOff(clientId: string, user: PartnerUser): Promise<Minted> {
  const pkce = makePkcePair();
  const start = await callBroker(broker(), 'start', {
    client_id: clientId,
    code_challenge: pkce.code_challenge,
    code_challenge_method: 'S256',
    backend_token: backend.signIn(user),
  });
  expect(start.status).toBe(200);
  const exchange = await callBroker(broker(), 'exchange', {
    code: codeOf(start),
    code_verifier: pkce.code_verifier,
  });
  expect(exchange.status).toBe(200);
  return exchange.body as unknown as Minted;
}

/** GET /auth/v1/user with the access token: 200, or GoTrue's error status and code. */
async function userEndpoint(accessToken: string): Promise<{ status: number; code?: string }> {
  const { stack } = broker();
  const response = await fetch(`${stack.apiUrl}/auth/v1/user`, {
    headers: { apikey: stack.keys.publishableKey, authorization: `Bearer ${accessToken}` },
  });
  const body = (await response.json()) as { error_code?: string };
  return { status: response.status, code: body.error_code };
}

/** POST /auth/v1/token?grant_type=refresh_token; the new pair, or the error code. */
async function refresh(
  refreshToken: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const { stack } = broker();
  const response = await fetch(`${stack.apiUrl}/auth/v1/token?grant_type=refresh_token`, {
    method: 'POST',
    headers: { apikey: stack.keys.publishableKey, 'content-type': 'application/json' },
    body: JSON.stringify({ refresh_token: refreshToken }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** What a session signed out by revocation looks like, as GoTrue answers for a deleted session. */
async function expectSignedOut(session: Minted) {
  expect(await userEndpoint(session.access_token)).toEqual({
    status: 403,
    code: 'session_not_found',
  });
  const refused = await refresh(session.refresh_token);
  expect(refused.status).toBe(400);
  expect(refused.body.error_code).toBe('refresh_token_not_found');
}

async function expectSignedIn(session: Minted) {
  expect((await userEndpoint(session.access_token)).status).toBe(200);
}

async function rpc(name: string, args: Record<string, unknown>) {
  const { data, error } = await broker().service.rpc(name, args);
  if (error) throw new Error(`${name} failed: ${error.message}`);
  return data;
}

describe('cascade revocation', () => {
  it('disabling a partner signs out every session minted through it, and only those', async () => {
    const clientId = 'svc_rev_disable';
    await onboard(broker(), {
      client_id: clientId,
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      email_linking_trusted: true,
    });
    await onboard(broker(), {
      client_id: 'svc_rev_bystander',
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
    });
    // An existing account with its own password session, then linked to the partner (rule 3).
    const email = `${uniqueId('linked')}@example.com`;
    const { data: created, error } = await broker().service.auth.admin.createUser({
      email,
      password: 'own-password-1',
      email_confirm: true,
    });
    expect(error).toBeNull();
    const { stack } = broker();
    const signIn = await fetch(`${stack.apiUrl}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: stack.keys.publishableKey, 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: 'own-password-1' }),
    });
    const own = (await signIn.json()) as Minted;
    const linked = await handOff(clientId, newPartnerUser(email));
    expect(linked.user_id).toBe(created.user?.id);
    const provisioned = await handOff(clientId, newPartnerUser());
    // A refreshed session is the same session: its new tokens go too.
    const rotated = await refresh(provisioned.refresh_token);
    expect(rotated.status).toBe(200);
    const provisionedNow = rotated.body as unknown as Minted;
    const elsewhere = await handOff('svc_rev_bystander', newPartnerUser());
    for (const session of [own, linked, provisionedNow, elsewhere]) await expectSignedIn(session);

    await onboard(broker(), {
      client_id: clientId,
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
      email_linking_trusted: true,
      enabled: false,
    });

    await expectSignedOut(linked);
    await expectSignedOut(provisionedNow);
    // The account's own session and another partner's sessions are untouched.
    await expectSignedIn(own);
    expect((await refresh(own.refresh_token)).status).toBe(200);
    await expectSignedIn(elsewhere);
    expect((await refresh(elsewhere.refresh_token)).status).toBe(200);
  });

  it('deleting a partner signs out every session minted through it', async () => {
    const clientId = 'svc_rev_delete';
    await onboard(broker(), {
      client_id: clientId,
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
    });
    const sessions = [
      await handOff(clientId, newPartnerUser()),
      await handOff(clientId, newPartnerUser()),
    ];
    for (const session of sessions) await expectSignedIn(session);

    expect(await rpc('delete_federation_client', { client_id: clientId, confirm: true })).toBe(
      true,
    );

    for (const session of sessions) await expectSignedOut(session);
  });

  it('revoking one partner user signs out all of their sessions and no one else', async () => {
    const clientId = 'svc_rev_user';
    await onboard(broker(), {
      client_id: clientId,
      verify_mode: 'backend_bearer',
      backend_base_url: backend.url,
    });
    const target = newPartnerUser();
    const first = await handOff(clientId, target);
    const second = await handOff(clientId, target);
    const neighbour = await handOff(clientId, newPartnerUser());

    // A signed-in user of the platform (the neighbour: capped to member) may not revoke anyone.
    const { stack } = broker();
    const denied = await fetch(`${stack.apiUrl}/rest/v1/rpc/revoke_federation_user_sessions`, {
      method: 'POST',
      headers: {
        apikey: stack.keys.publishableKey,
        authorization: `Bearer ${neighbour.access_token}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({ client_id: clientId, partner_sub: target.id, confirm: true }),
    });
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { code: string }).code).toBe('42501');
    await expectSignedIn(first);

    expect(
      await rpc('revoke_federation_user_sessions', {
        client_id: clientId,
        partner_sub: target.id,
        confirm: true,
      }),
    ).toBe(2);

    await expectSignedOut(first);
    await expectSignedOut(second);
    await expectSignedIn(neighbour);
    // A sign-out, not a ban: the partner may hand the user over again.
    await expectSignedIn(await handOff(clientId, target));
  });
});

describe('HMAC assertions bound to the PKCE challenge', () => {
  const secrets: Record<string, string> = {};
  beforeAll(async () => {
    for (const [clientId, binds] of [
      ['svc_bind_on', true],
      ['svc_bind_off', false],
    ] as const) {
      const answer = await onboard(broker(), {
        client_id: clientId,
        verify_mode: 'hmac',
        hmac_binds_challenge: binds,
      });
      expect(answer.hmac_binds_challenge).toBe(binds);
      secrets[clientId] = String(answer.hmac_secret);
    }
  });

  function assertion(extra: Record<string, unknown> = {}) {
    return {
      sub: uniqueId('hmac-user'),
      email: `${uniqueId('h')}@example.com`,
      iat: Math.floor(Date.now() / 1000),
      jti: uniqueId('jti'),
      ...extra,
    };
  }

  function start(clientId: string, pkce: PkcePair, payload: Record<string, unknown>) {
    return callBroker(broker(), 'start', {
      client_id: clientId,
      code_challenge: pkce.code_challenge,
      code_challenge_method: 'S256',
      payload,
      signature: signHmac(secrets[clientId] as string, payload),
    });
  }

  /** The one opaque 401 of /start (000 §7): the same answer an unknown client gets. */
  async function expectOpaque401(answer: BrokerAnswer) {
    const unknown = await callBroker(broker(), 'start', {
      client_id: 'svc_nobody_here',
      code_challenge: makePkcePair().code_challenge,
      code_challenge_method: 'S256',
      backend_token: 'x',
    });
    expect(answer.status).toBe(401);
    expect(answer.body).toEqual(unknown.body);
  }

  it('a binding client refuses the four-field payload and a payload bound to another challenge', async () => {
    const pkce = makePkcePair();
    await expectOpaque401(await start('svc_bind_on', pkce, assertion()));
    await expectOpaque401(
      await start(
        'svc_bind_on',
        pkce,
        assertion({ code_challenge: makePkcePair().code_challenge }),
      ),
    );
  });

  it('a binding client hands off a payload carrying the /start challenge', async () => {
    const pkce = makePkcePair();
    const payload = assertion({ code_challenge: pkce.code_challenge });
    const started = await start('svc_bind_on', pkce, payload);
    expect(started.status).toBe(200);
    const exchanged = await callBroker(broker(), 'exchange', {
      code: codeOf(started),
      code_verifier: pkce.code_verifier,
    });
    expect(exchanged.status).toBe(200);
    expect(exchanged.body).toMatchObject({ email: payload.email, login_source: 'svc_bind_on' });
  });

  it('a leaked bound assertion is useless with another PKCE pair', async () => {
    const victim = makePkcePair();
    const leaked = assertion({ code_challenge: victim.code_challenge });
    const thief = makePkcePair();
    // With the thief's own pair: refused, and the jti is not burned by the attempt.
    await expectOpaque401(await start('svc_bind_on', thief, leaked));
    // With the victim's challenge the thief gets a code, but cannot redeem it without the
    // victim's verifier, which never left the victim's device.
    const started = await start('svc_bind_on', victim, leaked);
    expect(started.status).toBe(200);
    const stolen = await callBroker(broker(), 'exchange', {
      code: codeOf(started),
      code_verifier: thief.code_verifier,
    });
    expect(stolen.status).toBe(401);
    expect(stolen.body.error).toBe('verifier_mismatch');
  });

  it('a client that does not bind keeps 000 §2.4 and still checks a challenge that is signed', async () => {
    const pkce = makePkcePair();
    expect((await start('svc_bind_off', pkce, assertion())).status).toBe(200);
    expect(
      (await start('svc_bind_off', pkce, assertion({ code_challenge: pkce.code_challenge })))
        .status,
    ).toBe(200);
    await expectOpaque401(
      await start(
        'svc_bind_off',
        pkce,
        assertion({ code_challenge: makePkcePair().code_challenge }),
      ),
    );
  });

  it('turning the binding on takes effect at the next /start', async () => {
    const clientId = 'svc_bind_later';
    const answer = await onboard(broker(), { client_id: clientId, verify_mode: 'hmac' });
    secrets[clientId] = String(answer.hmac_secret);
    const pkce = makePkcePair();
    expect((await start(clientId, pkce, assertion())).status).toBe(200);
    await onboard(broker(), {
      client_id: clientId,
      verify_mode: 'hmac',
      mint_hmac_secret: false,
      hmac_binds_challenge: true,
    });
    await expectOpaque401(await start(clientId, pkce, assertion()));
    expect(
      (await start(clientId, pkce, assertion({ code_challenge: pkce.code_challenge }))).status,
    ).toBe(200);
  });
});
