// The web drop-in as shipped (web/federation-handoff.js), loaded with a <script type="module"> tag
// in headless Chromium from a loopback page: RFC 7636's vector and random verifiers against
// node:crypto, and the whole hand-off through a stand-in broker on another loopback origin.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_SCRIPT_PATH } from '../src/build/build-web-script.ts';
import { parseHandoffLink } from '../src/index.ts';
import { RFC7636_CHALLENGE, RFC7636_VERIFIER } from './helpers/rfc7636.ts';
import { type StandInBroker, startStandInBroker } from './helpers/stand-in-broker.ts';

const PAGE = `<!doctype html>
<title>partner</title>
<button id="open-in-companion">Open in companion</button>
<script type="module">
  import * as handoff from '/federation-handoff.js';
  window.handoff = handoff;
  document.body.dataset.ready = 'yes';
</script>`;

/** The partner's page origin: serves the page and the drop-in exactly as shipped. */
async function startPartnerSite(): Promise<{ url: string; server: Server }> {
  const script = await readFile(WEB_SCRIPT_PATH, 'utf8');
  const server = createServer((request, response) => {
    if (request.url === '/federation-handoff.js') {
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
    } else {
      response.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

/** The page's globals; the repo compiles without the DOM lib, and evaluate() bodies run in the page. */
interface PartnerPage {
  handoff: typeof import('../src/index.ts');
  opened?: string;
  document: {
    querySelector(
      selector: string,
    ): { addEventListener(type: string, listener: () => void): void } | null;
  };
}

let browser: Browser;
let page: Page;
let site: { url: string; server: Server };
let broker: StandInBroker;

beforeAll(async () => {
  [site, broker] = await Promise.all([startPartnerSite(), startStandInBroker()]);
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox'],
  });
  page = await browser.newPage();
  page.setDefaultTimeout(10_000);
});

afterAll(async () => {
  await browser?.close();
  await broker?.close();
  await new Promise((resolve) => site?.server.close(resolve));
});

async function openPartnerPage() {
  await page.goto(site.url);
  await page.waitForSelector('body[data-ready="yes"]');
}

const nodeChallenge = (verifier: string) =>
  createHash('sha256').update(verifier, 'ascii').digest('base64url');

describe('PKCE in Chromium', () => {
  it('derives the RFC 7636 Appendix B challenge', async () => {
    await openPartnerPage();
    const challenge = await page.evaluate(
      (v) => (globalThis as unknown as PartnerPage).handoff.computeCodeChallenge(v),
      RFC7636_VERIFIER,
    );
    expect(challenge).toBe(RFC7636_CHALLENGE);
  });

  it('mints random pairs whose challenges node:crypto reproduces byte for byte', async () => {
    await openPartnerPage();
    const pairs = await page.evaluate(() =>
      Promise.all(
        Array.from({ length: 100 }, () =>
          (globalThis as unknown as PartnerPage).handoff.createPkcePair(),
        ),
      ),
    );
    expect(new Set(pairs.map((p) => p.code_verifier)).size).toBe(100);
    for (const pair of pairs) {
      expect(pair.code_verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(pair.code_challenge).toBe(nodeChallenge(pair.code_verifier));
    }
  });

  it('gives the same challenge from its pure SHA-256 as from WebCrypto', async () => {
    await openPartnerPage();
    const [viaSubtle, viaPure] = await page.evaluate(async (v) => {
      const h = (globalThis as unknown as PartnerPage).handoff;
      return [
        await h.computeCodeChallenge(v),
        await h.computeCodeChallenge(v, { sha256: async (bytes: Uint8Array) => h.sha256(bytes) }),
      ];
    }, RFC7636_VERIFIER);
    expect(viaPure).toBe(viaSubtle);
  });
});

describe('the hand-off from a partner web page', () => {
  it('navigates to the universal link whose fragment no server ever sees', async () => {
    await openPartnerPage();
    broker.requests.length = 0;
    await page.evaluate((brokerUrl) => {
      (globalThis as unknown as PartnerPage).document
        .querySelector('#open-in-companion')
        ?.addEventListener('click', () => {
          void (globalThis as unknown as PartnerPage).handoff.handOffToCompanion({
            brokerUrl,
            clientId: 'svc_partner_web',
            credential: () => ({ hosted_token: 'partner.jwt.token' }),
          });
        });
    }, broker.brokerUrl);
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/app/auth/federation'),
      page.click('#open-in-companion'),
    ]);

    const link = parseHandoffLink(page.url(), {
      schemes: ['com.example.companion'],
      appLinkBase: broker.appLinkBase,
    });
    const start = broker.requests.find((r) => r.url.endsWith('/start'));
    expect(start?.body).toMatchObject({
      client_id: 'svc_partner_web',
      code_challenge_method: 'S256',
      target: 'universal',
      hosted_token: 'partner.jwt.token',
    });
    expect(start?.body.code_challenge).toBe(nodeChallenge(link.code_verifier));
    // 000 §1 rule 2: the browser fetched the link with the code only; the fragment stayed local.
    const landing = broker.requests.find((r) => r.url.startsWith('/app/auth/federation'));
    expect(landing?.url).toBe(`/app/auth/federation?code=${encodeURIComponent(link.code)}`);
    expect(JSON.stringify(broker.requests)).not.toContain(link.code_verifier);
  });

  it('opens the custom-scheme link through the given opener', async () => {
    await openPartnerPage();
    await page.evaluate(
      (brokerUrl) =>
        (globalThis as unknown as PartnerPage).handoff.handOffToCompanion({
          brokerUrl,
          clientId: 'svc_partner_web',
          target: 'ios',
          appScheme: 'com.example.companion',
          credential: () => ({ backend_token: 'partner-user-token' }),
          openLink: (link: string) => {
            (globalThis as unknown as PartnerPage).opened = link;
          },
        }),
      broker.brokerUrl,
    );
    const opened = await page.evaluate(
      () => (globalThis as unknown as PartnerPage).opened as string,
    );
    expect(
      parseHandoffLink(opened, {
        schemes: ['com.example.companion'],
        appLinkBase: broker.appLinkBase,
      }),
    ).toMatchObject({ form: 'scheme' });
  });

  it('rejects with a typed error the page can branch on', async () => {
    await openPartnerPage();
    broker.failWith.start = 401;
    try {
      const result = await page.evaluate(
        (brokerUrl) =>
          (globalThis as unknown as PartnerPage).handoff
            .handOffToCompanion({
              brokerUrl,
              clientId: 'svc_partner_web',
              credential: () => ({ backend_token: 'expired' }),
            })
            .then(
              () => 'resolved',
              (error: { name: string; code: string; status: number }) =>
                `${error.name}:${error.code}:${error.status}`,
            ),
        broker.brokerUrl,
      );
      expect(result).toBe('HandoffError:unauthorized:401');
      expect(page.url()).toBe(site.url);
    } finally {
      broker.failWith = {};
    }
  });
});
