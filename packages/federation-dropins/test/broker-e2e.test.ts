// End to end through the real federation broker on a started stack: the partner helper (Node, as
// on React Native) and the web script (Chromium) do 000 §1 steps 1-3 against the real /start, the
// companion side does step 4 against the real /exchange and installs the session in supabase-js.
// Partner stand-ins (backend /users/me, JWKS and token issuer, HMAC signer) are real and on loopback.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_SCRIPT_PATH } from '../src/build/build-web-script.ts';
import {
  buildHandoffLink,
  completeHandoff,
  createHmacPayload,
  credentialFromPartnerBackend,
  exchangeHandoffCode,
  type HandoffOptions,
  handOffToCompanion,
  parseHandoffLink,
  requestHandoffCode,
  type StartCredential,
  signHmacPayload,
} from '../src/index.ts';
import {
  type PartnerStandIns,
  type PartnerUser,
  startPartnerStandIns,
} from './helpers/partner-stand-ins.ts';
import { RFC7636_CHALLENGE, RFC7636_VERIFIER } from './helpers/rfc7636.ts';
import {
  appClient,
  signUpUser,
  uniqueEmail,
  useThrowawayStack,
} from './helpers/throwaway-stack.ts';

// The broker's default custom scheme (docs/federation.md) and an alias the companion also accepts.
const APP_SCHEME = 'capturecompanion';
const ALIAS_SCHEME = 'capturecompanion-alias';

let partners: PartnerStandIns;
beforeAll(async () => {
  partners = await startPartnerStandIns();
});
afterAll(async () => {
  await partners?.close();
});

const stack = useThrowawayStack(() => ({
  // Local-stack-only switches of the broker: loopback http partners, and universal links that
  // land on the stand-in companion page so a browser can follow them.
  FEDERATION_ALLOW_HTTP_PARTNERS: '1',
  FEDERATION_APP_LINK_BASE: partners.url,
}));

const brokerUrl = () => `${stack().apiUrl}/functions/v1/federation-broker`;
const suffix = `${process.pid}_${Date.now()}`;
const CLIENTS = {
  backend_bearer: `svc_dropins_bearer_${suffix}`,
  hmac: `svc_dropins_hmac_${suffix}`,
  hosted_jwt: `svc_dropins_jwt_${suffix}`,
};
// An hmac client onboarded as the docs recommend: assertions bound to the PKCE challenge.
const BOUND_HMAC_CLIENT = `svc_dropins_hmac_bound_${suffix}`;
let hmacSecret = '';

beforeAll(async () => {
  const service = createClient(stack().apiUrl, stack().keys.serviceRoleKey, {
    auth: { persistSession: false, autoRefreshToken: false },
  });
  // 000 §4.5: onboarding is one admin action per partner.
  const onboard = async (fields: Record<string, unknown>) => {
    const { data, error } = await service.rpc('upsert_federation_client', {
      client_name: String(fields.client_id),
      capped_role: 'member',
      start_limit_per_minute: 10_000,
      exchange_limit_per_minute: 10_000,
      ip_limit_per_minute: 10_000,
      confirm: true,
      ...fields,
    });
    if (error) throw new Error(`onboarding failed: ${error.message}`);
    return data as Record<string, unknown>;
  };
  await onboard({
    client_id: CLIENTS.backend_bearer,
    verify_mode: 'backend_bearer',
    backend_base_url: partners.url,
  });
  const hmac = await onboard({
    client_id: CLIENTS.hmac,
    verify_mode: 'hmac',
    mint_hmac_secret: true,
  });
  hmacSecret = String(hmac.hmac_secret ?? '');
  const bound = await onboard({
    client_id: BOUND_HMAC_CLIENT,
    verify_mode: 'hmac',
    mint_hmac_secret: true,
    hmac_binds_challenge: true,
  });
  partners.hmacSecret = String(bound.hmac_secret ?? '');
  await onboard({
    client_id: CLIENTS.hosted_jwt,
    verify_mode: 'hosted_jwt',
    jwks_url: partners.jwksUrl,
    issuer: partners.issuer,
    audience: partners.audience,
  });
});

const newPartnerUser = (): PartnerUser => ({
  sub: `partner-${crypto.randomUUID()}`,
  email: uniqueEmail('partner'),
});

/** The partner's credential for its signed-in user, per verify mode (000 §4.1). */
async function credentialFor(
  mode: keyof typeof CLIENTS,
  user: PartnerUser,
): Promise<StartCredential> {
  if (mode === 'backend_bearer') return { backend_token: partners.signIn(user) };
  if (mode === 'hosted_jwt') return { hosted_token: await partners.hostedToken(user) };
  // The partner backend signs; the secret never reaches the device.
  return signHmacPayload(hmacSecret, createHmacPayload(user));
}

/** Runs the partner helper's four steps; returns the link the OS hands to the companion app. */
async function partnerOpensLink(
  mode: keyof typeof CLIENTS,
  user: PartnerUser,
  extra: Partial<HandoffOptions> = {},
): Promise<string> {
  const opened: string[] = [];
  await handOffToCompanion({
    brokerUrl: brokerUrl(),
    clientId: CLIENTS[mode],
    credential: () => credentialFor(mode, user),
    openLink: (link) => {
      opened.push(link);
    },
    ...extra,
  });
  expect(opened).toHaveLength(1);
  return opened[0] as string;
}

const companionConfig = () => ({
  schemes: [APP_SCHEME, ALIAS_SCHEME],
  appLinkBase: partners.url,
  brokerUrl: brokerUrl(),
});

/** A companion app already signed in as someone else, the case 000 §1 switches in place. */
async function appSignedInAsSomeoneElse(): Promise<{
  app: SupabaseClient;
  other: Awaited<ReturnType<typeof signUpUser>>;
  oldRefresh: string;
}> {
  const other = await signUpUser(stack(), 'other');
  const app = appClient(stack());
  await app.auth.signInWithPassword(other);
  const oldRefresh = (await app.auth.getSession()).data.session?.refresh_token as string;
  return { app, other, oldRefresh };
}

async function refreshWorks(refresh_token: string): Promise<boolean> {
  const { error } = await appClient(stack()).auth.refreshSession({ refresh_token });
  return !error;
}

describe('all three verify modes, partner helper to companion app', () => {
  it.each([
    ['backend_bearer', 'universal', APP_SCHEME],
    ['hmac', 'ios', APP_SCHEME],
    ['hmac', 'ios', ALIAS_SCHEME],
    ['hosted_jwt', 'universal', APP_SCHEME],
  ] as const)(
    'signs a %s user in over a %s link (%s), replacing the active account',
    async (mode, target, appScheme) => {
      const user = newPartnerUser();
      const { app, other, oldRefresh } = await appSignedInAsSomeoneElse();
      const link = await partnerOpensLink(mode, user, { target, appScheme });
      expect(parseHandoffLink(link, companionConfig()).form).toBe(
        target === 'ios' ? 'scheme' : 'universal',
      );

      const done = await completeHandoff({
        ...companionConfig(),
        url: link,
        supabase: app,
        confirm: () => true,
      });

      expect(done).toMatchObject({
        email: user.email,
        login_source: CLIENTS[mode],
        replaced: { user_id: other.user_id },
      });
      const { data } = await app.auth.getUser();
      expect(data.user?.email).toBe(user.email);
      expect(data.user?.id).not.toBe(other.user_id);
      expect(await refreshWorks(oldRefresh)).toBe(false);
    },
  );
});

describe('no silent switch of users (login CSRF)', () => {
  it('ends as confirmation_required without a confirm step, the minted session revoked', async () => {
    // The attacker's own partner account, handed to the victim's signed-in companion app.
    const attacker = newPartnerUser();
    const { app, other, oldRefresh } = await appSignedInAsSomeoneElse();
    const link = await partnerOpensLink('backend_bearer', attacker);
    const minted: string[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).endsWith('/exchange') && response.status === 200) {
        minted.push(((await response.clone().json()) as { refresh_token: string }).refresh_token);
      }
      return response;
    };

    await expect(
      completeHandoff({ ...companionConfig(), url: link, supabase: app, fetch: recordingFetch }),
    ).rejects.toMatchObject({ name: 'CompanionHandoffError', code: 'confirmation_required' });

    // The victim stays signed in as themselves; the attacker's session is dead on the server.
    expect((await app.auth.getSession()).data.session?.user.id).toBe(other.user_id);
    expect((await app.auth.getUser()).data.user?.id).toBe(other.user_id);
    expect(await refreshWorks(oldRefresh)).toBe(true);
    expect(minted).toHaveLength(1);
    expect(await refreshWorks(minted[0] as string)).toBe(false);
  });

  it('signs in without a confirm step when no account is active', async () => {
    const user = newPartnerUser();
    const app = appClient(stack());
    const done = await completeHandoff({
      ...companionConfig(),
      url: await partnerOpensLink('hosted_jwt', user),
      supabase: app,
    });
    expect(done).toMatchObject({ email: user.email, replaced: null });
  });
});

describe('HMAC assertions bound to the challenge, through the drop-ins', () => {
  it('the partner backend signs the device challenge and the binding client accepts it', async () => {
    const user = newPartnerUser();
    const token = partners.signIn(user);
    const opened: string[] = [];
    await handOffToCompanion({
      brokerUrl: brokerUrl(),
      clientId: BOUND_HMAC_CLIENT,
      credential: credentialFromPartnerBackend({
        backendBaseUrl: partners.url,
        headers: () => ({ authorization: `Bearer ${token}` }),
      }),
      openLink: (link) => {
        opened.push(link);
      },
    });
    const link = parseHandoffLink(opened[0] as string, companionConfig());
    // The challenge the backend signed is the one of the verifier in the opened link.
    const challenge = createHash('sha256').update(link.code_verifier).digest('base64url');
    expect(partners.signedChallenges.at(-1)).toBe(challenge);
    const done = await completeHandoff({
      ...companionConfig(),
      url: opened[0] as string,
      supabase: appClient(stack()),
    });
    expect(done).toMatchObject({ email: user.email, login_source: BOUND_HMAC_CLIENT });
  });

  it('the binding client refuses the four-field assertion the unbound signer makes', async () => {
    await expect(
      handOffToCompanion({
        brokerUrl: brokerUrl(),
        clientId: BOUND_HMAC_CLIENT,
        credential: () => signHmacPayload(partners.hmacSecret, createHmacPayload(newPartnerUser())),
        openLink: () => expect.unreachable(),
      }),
    ).rejects.toMatchObject({ name: 'HandoffError', code: 'unauthorized', status: 401 });
  });

  it('an assertion bound to one tap is refused on another', async () => {
    const user = newPartnerUser();
    let first: StartCredential | undefined;
    await handOffToCompanion({
      brokerUrl: brokerUrl(),
      clientId: BOUND_HMAC_CLIENT,
      credential: async ({ code_challenge }) => {
        first = await signHmacPayload(
          partners.hmacSecret,
          createHmacPayload(user, { codeChallenge: code_challenge }),
        );
        // Leaked before it was used: a fresh jti, replayed below with a new PKCE pair.
        return signHmacPayload(
          partners.hmacSecret,
          createHmacPayload(user, { codeChallenge: code_challenge }),
        );
      },
      openLink: () => undefined,
    });
    await expect(
      handOffToCompanion({
        brokerUrl: brokerUrl(),
        clientId: BOUND_HMAC_CLIENT,
        credential: () => first as StartCredential,
        openLink: () => expect.unreachable(),
      }),
    ).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
  });
});

describe('PKCE through the drop-ins and the broker', () => {
  it('redeems a code issued for the RFC 7636 Appendix B challenge with its verifier', async () => {
    const user = newPartnerUser();
    const started = await requestHandoffCode(
      { brokerUrl: brokerUrl(), clientId: CLIENTS.backend_bearer },
      {
        code_verifier: RFC7636_VERIFIER,
        code_challenge: RFC7636_CHALLENGE,
        code_challenge_method: 'S256',
      },
      { backend_token: partners.signIn(user) },
    );
    const link = buildHandoffLink({
      target: 'universal',
      code: started.code,
      code_verifier: RFC7636_VERIFIER,
      appLinkBase: partners.url,
    });
    const app = appClient(stack());
    const done = await completeHandoff({ ...companionConfig(), url: link, supabase: app });
    expect(done.email).toBe(user.email);
  });

  it('redeems 10 random verifiers minted by the partner helper', async () => {
    const user = newPartnerUser();
    for (let i = 0; i < 10; i++) {
      const link = parseHandoffLink(await partnerOpensLink('hmac', user), companionConfig());
      const session = await exchangeHandoffCode({ brokerUrl: brokerUrl(), ...link });
      expect(session).toMatchObject({ email: user.email, login_source: CLIENTS.hmac });
    }
  });

  it('answers verifier_mismatch to a wrong verifier and still redeems the code with the right one', async () => {
    const user = newPartnerUser();
    const url = await partnerOpensLink('backend_bearer', user);
    const link = parseHandoffLink(url, companionConfig());
    const wrong = `${link.code_verifier.slice(0, -1)}${link.code_verifier.endsWith('A') ? 'B' : 'A'}`;
    await expect(
      exchangeHandoffCode({ brokerUrl: brokerUrl(), code: link.code, code_verifier: wrong }),
    ).rejects.toMatchObject({
      name: 'CompanionHandoffError',
      code: 'verifier_mismatch',
      status: 401,
    });
    const done = await completeHandoff({ ...companionConfig(), url, supabase: appClient(stack()) });
    expect(done.email).toBe(user.email);
  });

  it('answers code_expired when the same link is opened a second time', async () => {
    const url = await partnerOpensLink('hosted_jwt', newPartnerUser());
    await completeHandoff({ ...companionConfig(), url, supabase: appClient(stack()) });
    const app = appClient(stack());
    await expect(
      completeHandoff({ ...companionConfig(), url, supabase: app }),
    ).rejects.toMatchObject({ code: 'code_expired', status: 410 });
    expect((await app.auth.getSession()).data.session).toBeNull();
  });
});

describe('/start refusals as the partner sees them', () => {
  it('reports a credential the partner backend does not know as unauthorized', async () => {
    await expect(
      handOffToCompanion({
        brokerUrl: brokerUrl(),
        clientId: CLIENTS.backend_bearer,
        credential: () => ({ backend_token: 'not-a-partner-session' }),
        openLink: () => expect.unreachable(),
      }),
    ).rejects.toMatchObject({ name: 'HandoffError', code: 'unauthorized', status: 401 });
  });

  it('reports an unknown client as unauthorized', async () => {
    await expect(
      handOffToCompanion({
        brokerUrl: brokerUrl(),
        clientId: `svc_unknown_${suffix}`,
        credential: () => ({ backend_token: 'x' }),
        openLink: () => expect.unreachable(),
      }),
    ).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
  });

  it('reports a credential of the wrong mode as invalid_request', async () => {
    await expect(
      handOffToCompanion({
        brokerUrl: brokerUrl(),
        clientId: CLIENTS.hmac,
        credential: () => ({ hosted_token: 'eyJ.not.hmac' }),
        openLink: () => expect.unreachable(),
      }),
    ).rejects.toMatchObject({ code: 'invalid_request', status: 400 });
  });
});

describe('the web script in Chromium through the real broker', () => {
  let browser: Browser;
  let site: Server;
  let siteUrl = '';
  beforeAll(async () => {
    const script = await readFile(WEB_SCRIPT_PATH, 'utf8');
    site = createServer((request, response) => {
      if (request.url === '/federation-handoff.js') {
        response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
        return;
      }
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(`<!doctype html><script type="module">
        import * as handoff from '/federation-handoff.js';
        window.handoff = handoff;
        document.body.dataset.ready = 'yes';
      </script>`);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}/`;
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox'],
    });
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => site?.close(resolve));
  });

  it('hands a partner web user to the companion, the verifier never reaching a server', async () => {
    const user = newPartnerUser();
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(siteUrl);
    await page.waitForSelector('body[data-ready="yes"]', { state: 'attached' });
    const token = partners.signIn(user);
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/app/auth/federation'),
      page.evaluate(
        ([url, clientId, backendToken]) => {
          const h = (globalThis as unknown as { handoff: typeof import('../src/index.ts') })
            .handoff;
          void h.handOffToCompanion({
            brokerUrl: url as string,
            clientId: clientId as string,
            credential: () => ({ backend_token: backendToken as string }),
          });
        },
        [brokerUrl(), CLIENTS.backend_bearer, token],
      ),
    ]);
    const link = parseHandoffLink(page.url(), companionConfig());
    // 000 §1 rule 2: the universal link's landing page saw the code and nothing else.
    const landing = partners.landings.filter((path) => path.startsWith('/app/auth/federation'));
    expect(landing.at(-1)).toBe(`/app/auth/federation?code=${encodeURIComponent(link.code)}`);
    expect(partners.landings.join('\n')).not.toContain(link.code_verifier);

    const { app, other } = await appSignedInAsSomeoneElse();
    const done = await completeHandoff({
      ...companionConfig(),
      url: page.url(),
      supabase: app,
      confirm: () => true,
    });
    expect(done).toMatchObject({ email: user.email, replaced: { user_id: other.user_id } });
    expect((await app.auth.getUser()).data.user?.email).toBe(user.email);
    await page.close();
  });

  it('gets codes for the RFC 7636 Appendix B pair and random pairs that the broker redeems', async () => {
    const user = newPartnerUser();
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(siteUrl);
    await page.waitForSelector('body[data-ready="yes"]', { state: 'attached' });
    const tokens = Array.from({ length: 6 }, () => partners.signIn(user));
    const issued = await page.evaluate(
      async ({ url, clientId, backendTokens, rfcPair }) => {
        const h = (globalThis as unknown as { handoff: typeof import('../src/index.ts') }).handoff;
        const options = { brokerUrl: url, clientId };
        const pairs = [
          rfcPair,
          ...(await Promise.all([1, 2, 3, 4, 5].map(() => h.createPkcePair()))),
        ];
        return Promise.all(
          pairs.map(async (pair, i) => {
            const started = await h.requestHandoffCode(options, pair, {
              backend_token: backendTokens[i] as string,
            });
            return { code: started.code, code_verifier: pair.code_verifier };
          }),
        );
      },
      {
        url: brokerUrl(),
        clientId: CLIENTS.backend_bearer,
        backendTokens: tokens,
        rfcPair: {
          code_verifier: RFC7636_VERIFIER,
          code_challenge: RFC7636_CHALLENGE,
          code_challenge_method: 'S256' as const,
        },
      },
    );
    expect(issued[0]?.code_verifier).toBe(RFC7636_VERIFIER);
    for (const { code, code_verifier } of issued) {
      const session = await exchangeHandoffCode({ brokerUrl: brokerUrl(), code, code_verifier });
      expect(session.email).toBe(user.email);
    }
    await page.close();
  });
});
