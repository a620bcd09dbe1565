// browser_cdp end to end: the official MCP SDK client with tokens from the real OAuth flow, against
// the repo stack with its capture proxy and a farm. A local site (on 127.0.0.2, the only
// destination this stack's proxy may reach) is loaded in the sandboxed Chromium, read, clicked,
// typed into and photographed; its requests are then found in `entries` with source `cdp` under
// the caller's farm browser device. Then the rules: who may call, evaluate approved by a person
// and capability-gated, sessions kept apart by user and grant, the stack out of reach, a revoked grant
// ending its browser, and (on BrowserSessions directly, with short limits) idle time, the limits,
// Chromium's own sandbox and shutdown.

import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type FarmConfig, FarmConfigSchema, FarmError } from '@capture/farm';
import { decodeJwt } from 'jose';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BrowserSessions } from '../../farm/src/browser/browser-sessions.ts';
import { ProxyFarmDevices } from '../../farm/src/farm-devices.ts';
import { CallerProfiles } from '../src/mcp/caller-profile.ts';
import type { ToolCall } from '../src/mcp/tool-definition.ts';
import { createDatabase, type Database } from '../src/store/database.ts';
import { decideAsPerson } from './helpers/farm-approvals.ts';
import { type ConnectedClient, connectClient, resultJson } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, signIn, useOAuthStack } from './helpers/oauth-stack.ts';

const SITE_HOST = '127.0.0.2';
/** This farm host's configured name, unlike the machine's hostname. */
const FARM_HOST = 'farm-browser-test';
const stack = useOAuthStack({
  proxy: true,
  proxyDestinations: [`${SITE_HOST}/32`],
  toolServerSettings: { farm: { enabled: true, hostName: FARM_HOST } },
});
const run = promisify(execFile);
/** The stack's farm browsers (the default uid base) and those of the direct tests below. */
const BROWSER_UIDS = [62_000, 62_001, 62_002, 62_003, 62_100, 62_101];

let db: pg.Client;
let admin: ConnectedClient;
let adminToken = '';
let site: Server;
let siteUrl = '';
const siteHits: string[] = [];

const PAGES: Record<string, string> = {
  '/start': `<!doctype html><title>Farm start</title><h1>Welcome to the farm</h1>
    <a href="/next">Next page</a>
    <form action="/search"><label for="q">Query</label><input id="q" name="q"><button>Search</button></form>`,
  '/next': '<!doctype html><title>Next page</title><p>You followed the link.</p>',
};

async function connectAs(login: { email: string; password: string }) {
  const tokens = await authorizeAndExchange(stack(), login);
  return { tokens, client: await connectClient('v2-modern', stack().mcpUrl, tokens.access_token) };
}

async function browse(client: ConnectedClient, args: Record<string, unknown>) {
  const result = await client.callTool('browser_cdp', args);
  if (result.isError)
    throw new Error(`browser_cdp ${args.action} failed: ${JSON.stringify(result)}`);
  return result;
}

async function browseOk(client: ConnectedClient, args: Record<string, unknown>) {
  return (await browse(client, args)).structuredContent as Record<string, unknown>;
}

/** Processes per farm-browser uid, as the host sees them. */
async function browserProcesses(): Promise<Map<number, number>> {
  const { stdout } = await run('ps', ['-eo', 'uid=']);
  const counts = new Map<number, number>();
  for (const line of stdout.split('\n')) {
    const uid = Number(line.trim());
    if (BROWSER_UIDS.includes(uid)) counts.set(uid, (counts.get(uid) ?? 0) + 1);
  }
  return counts;
}

async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The ids of farm_audit rows whose text (any column) contains `text`. */
async function auditRowsContaining(text: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    'select id::text from public.farm_audit a where strpos(a::text, $1) > 0',
    [text],
  );
  return rows.map((row) => row.id);
}

async function auditEvents(email: string): Promise<string[]> {
  const { rows } = await db.query<{ event: string; action: string }>(
    `select event, arguments ->> 'action' as action from public.farm_audit
      where user_email = $1 and tool = 'browser_cdp' order by id`,
    [email],
  );
  return rows.map((row) => `${row.event}:${row.action}`);
}

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  const connected = await connectAs(DEMO.admin);
  admin = connected.client;
  adminToken = connected.tokens.access_token;
  site = createServer((request, response) => {
    siteHits.push(request.url ?? '');
    const url = new URL(request.url ?? '/', 'http://site');
    if (url.pathname === '/search') {
      response.setHeader('content-type', 'text/html');
      response.end(
        `<!doctype html><title>Results</title><p>Searched for ${url.searchParams.get('q')}</p>`,
      );
      return;
    }
    const page = PAGES[url.pathname];
    response.statusCode = page ? 200 : 404;
    response.setHeader('content-type', 'text/html');
    response.end(page ?? '<p>not here</p>');
  });
  await new Promise<void>((resolve) => site.listen(0, SITE_HOST, resolve));
  siteUrl = `http://${SITE_HOST}:${(site.address() as { port: number }).port}`;
}, 60_000);

afterAll(async () => {
  await admin?.close();
  site?.close();
  await db?.end();
});

describe('who may drive a farm browser', () => {
  it('is listed for a farm user, and neither listed nor run for a member or a viewer', async () => {
    expect(await admin.listToolNames()).toContain('browser_cdp');
    for (const login of [DEMO.member, DEMO.viewer]) {
      const { client } = await connectAs(login);
      try {
        expect(await client.listToolNames()).not.toContain('browser_cdp');
        const refused = await client.callTool('browser_cdp', { action: 'open', url: siteUrl });
        expect(refused.isError).toBe(true);
        expect(resultJson(refused)).toMatchObject({ error: 'permission_denied' });
        expect((await auditEvents(login.email)).at(-1)).toBe('refused:open');
      } finally {
        await client.close();
      }
    }
    expect(siteHits).toEqual([]);
  });
});

/** Opens a session for `client` and answers the uid its browser runs as (no other browser's). */
async function openSessionUid(client: ConnectedClient): Promise<number> {
  const before = await browserProcesses();
  await browseOk(client, { action: 'open' });
  const after = await browserProcesses();
  const uid = [...after.keys()].find((candidate) => !before.has(candidate));
  expect(uid, 'the new session runs as a uid no other browser uses').toBeDefined();
  return uid as number;
}

describe('a session', () => {
  let sessionId = '';

  it('loads a local page through the capture proxy, captured with source cdp under the caller', async () => {
    const opened = await browseOk(admin, { action: 'open', url: `${siteUrl}/start` });
    sessionId = String(opened.session_id);
    expect(opened).toMatchObject({ status: 200, title: 'Farm start', url: `${siteUrl}/start` });
    expect(siteHits).toContain('/start');
    const entry = await waitFor(async () => {
      const { rows } = await db.query<{ source: string; device_uuid: string }>(
        `select payload ->> 'source' as source, device_uuid::text from public.entries
          where url = $1`,
        [`${siteUrl}/start`],
      );
      return rows[0];
    }, 10_000);
    expect(entry).toEqual({ source: 'cdp', device_uuid: opened.device_uuid });
    const { rows: device } = await db.query(
      `select d.name, u.email, f.source, f.farm_host from public.devices d
         join auth.users u on u.id = d.owner_user_id
         join private.farm_devices f on f.device_uuid = d.uuid
        where d.uuid = $1`,
      [opened.device_uuid],
    );
    expect(device).toEqual([
      {
        name: `Farm browser on ${FARM_HOST}`,
        email: DEMO.admin.email,
        source: 'cdp',
        farm_host: FARM_HOST,
      },
    ]);
  });

  it('reads the text and the accessibility tree, clicks by ref and types by selector', async () => {
    const text = await browseOk(admin, { action: 'read_text', session_id: sessionId });
    expect(text.text).toContain('Welcome to the farm');
    expect(text.truncated).toBe(false);
    const tree = String((await browseOk(admin, { action: 'accessibility_tree' })).tree);
    expect(tree).toContain('heading "Welcome to the farm" [level=1]');
    const ref = /link "Next page" \[ref=(n\d+)\]/.exec(tree)?.[1];
    expect(ref).toBeDefined();
    const clicked = await browseOk(admin, { action: 'click', session_id: sessionId, ref });
    expect(clicked).toMatchObject({ url: `${siteUrl}/next`, title: 'Next page' });
    await browseOk(admin, { action: 'navigate', session_id: sessionId, url: `${siteUrl}/start` });
    const typed = await browseOk(admin, {
      action: 'type',
      session_id: sessionId,
      selector: '#q',
      text: 'farm tools',
      submit: true,
    });
    expect(typed).toMatchObject({ url: `${siteUrl}/search?q=farm+tools`, title: 'Results' });
    expect((await browseOk(admin, { action: 'read_text' })).text).toBe('Searched for farm tools');
    // What was typed may be a password: the audit keeps its length and digest, not the text.
    const { rows } = await db.query<{ text: unknown }>(
      `select arguments -> 'text' as text from public.farm_audit
        where user_email = $1 and tool = 'browser_cdp' and arguments ->> 'action' = 'type'
        order by id desc limit 1`,
      [DEMO.admin.email],
    );
    expect(rows[0]?.text).toEqual({
      omitted: 'kept as a digest',
      length: 10,
      sha256: createHash('sha256').update('farm tools').digest('hex'),
    });
    // Regression: short result strings (the text read, a URL carrying what was typed, a title)
    // were kept in the audit; only allow-listed outcome fields are.
    expect(await auditRowsContaining('Welcome to the farm')).toEqual([]);
    expect(await auditRowsContaining('farm+tools')).toEqual([]);
    expect(await auditRowsContaining('Searched for')).toEqual([]);
    expect(await auditRowsContaining('Farm start')).toEqual([]);
  });

  it('answers a missing element or a bad selector as such', async () => {
    const missing = await admin.callTool('browser_cdp', { action: 'click', selector: '#nowhere' });
    expect(resultJson(missing)).toMatchObject({ error: 'not_found' });
    const bad = await admin.callTool('browser_cdp', { action: 'click', selector: 'a[' });
    expect(resultJson(bad)).toMatchObject({ error: 'invalid_arguments' });
    const noUrl = await admin.callTool('browser_cdp', { action: 'navigate' });
    expect(resultJson(noUrl)).toMatchObject({ error: 'invalid_arguments' });
    const fileUrl = await admin.callTool('browser_cdp', {
      action: 'navigate',
      url: 'file:///etc/passwd',
    });
    expect(resultJson(fileUrl)).toMatchObject({ error: 'invalid_arguments' });
  });

  it('takes a screenshot, sent as image content', async () => {
    const result = await browse(admin, { action: 'screenshot', session_id: sessionId });
    const image = result.content.find((block) => block.type === 'image') as
      | { data: string; mimeType: string }
      | undefined;
    expect(image?.mimeType).toBe('image/png');
    const png = Buffer.from(image?.data ?? '', 'base64');
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBe(800);
    const shown = result.structuredContent?.screenshot as Record<string, unknown>;
    expect(shown).toEqual({ mime_type: 'image/png', width: 1280, height: 800, bytes: png.length });
  });

  it("saves a screenshot to the caller's own exports folder as the caller, and names where", async () => {
    const path = `shots/${Date.now()}/start page.png`;
    const result = await browse(admin, {
      action: 'screenshot',
      session_id: sessionId,
      save_to: { path },
    });
    const image = result.content.find((block) => block.type === 'image') as
      | { data: string }
      | undefined;
    const png = Buffer.from(image?.data ?? '', 'base64');
    expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
    const uid = decodeJwt(adminToken).sub as string;
    expect(result.structuredContent?.saved).toEqual({ bucket: 'exports', path: `${uid}/${path}` });
    // Read back with the caller's own token: the object holds exactly the image sent.
    const objectUrl = `${stack().apiUrl}/storage/v1/object/authenticated/exports/${uid}/${path
      .split('/')
      .map(encodeURIComponent)
      .join('/')}`;
    const read = await fetch(objectUrl, {
      headers: { authorization: `Bearer ${adminToken}`, apikey: stack().keys.publishableKey },
    });
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await read.arrayBuffer()).equals(png)).toBe(true);
    // Another user's token reads nothing there (the bucket's policies, not the tool, decide).
    const member = await signIn(stack(), DEMO.member);
    const theirs = await fetch(objectUrl, {
      headers: { authorization: `Bearer ${member}`, apikey: stack().keys.publishableKey },
    });
    expect([400, 404]).toContain(theirs.status);
  });

  it.each([
    ['a .. segment', 'shots/../../other-user/x.png'],
    ['an empty segment', 'shots//x.png'],
    ['a leading slash', '/x.png'],
    ['a . segment', './x.png'],
  ])('refuses a save_to path with %s, saving nothing', async (_name, path) => {
    const result = await admin.callTool('browser_cdp', {
      action: 'screenshot',
      session_id: sessionId,
      save_to: { path },
    });
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
  });

  it('refuses save_to on an action other than screenshot', async () => {
    const result = await admin.callTool('browser_cdp', {
      action: 'read_text',
      session_id: sessionId,
      save_to: { path: 'x.png' },
    });
    expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
  });

  it('trusts the project CA: an intercepted HTTPS page is the proxy answering, not a certificate error', async () => {
    // Nothing listens there: the proxy completes TLS with its own leaf, then answers 502.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, SITE_HOST, resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const https = await browseOk(admin, {
      action: 'navigate',
      url: `https://${SITE_HOST}:${port}/tls`,
    });
    expect(https.status).toBe(502);
  });

  it('cannot reach the stack: its API and database are refused by the proxy', async () => {
    const { ports } = stack();
    for (const port of [ports.api, ports.db, ports.mcp]) {
      const answer = await browseOk(admin, {
        action: 'navigate',
        url: `http://127.0.0.1:${port}/`,
      });
      expect(answer.status, String(port)).toBe(403);
    }
  });

  it('runs evaluate only once a person approved it, for exactly the approved expression', async () => {
    await browseOk(admin, { action: 'navigate', session_id: sessionId, url: `${siteUrl}/next` });
    const args = { action: 'evaluate', session_id: sessionId, expression: 'document.title' };
    const asked = await browseOk(admin, args);
    expect(asked).toMatchObject({ status: 'approval_required' });
    expect(String(asked.would_run)).toContain('document.title');
    // Regression: would_run named os.hostname(), not the configured farm host.
    expect(String(asked.would_run)).toContain(`on farm host ${FARM_HOST}: `);
    const pending_action_id = String(asked.pending_action_id);
    const unapproved = await browseOk(admin, { ...args, pending_action_id });
    expect(unapproved).toMatchObject({ status: 'approval_pending' });
    await decideAsPerson(stack(), pending_action_id);
    const other = await admin.callTool('browser_cdp', {
      ...args,
      expression: 'document.cookie',
      pending_action_id,
    });
    expect(resultJson(other)).toMatchObject({ error: 'confirmation_refused' });
    const ran = await browseOk(admin, { ...args, pending_action_id });
    expect(ran).toMatchObject({ result: 'Next page', title: 'Next page' });
    // Neither the result nor the title is in the audit: 'Next page' is in no argument either.
    expect(await auditRowsContaining('Next page')).toEqual([]);
    const again = await admin.callTool('browser_cdp', { ...args, pending_action_id });
    expect(resultJson(again)).toMatchObject({ error: 'confirmation_refused' });
  });

  it('is out of reach of another user and of another grant of the same user', async () => {
    await db.query(
      `insert into public.roles (slug, name) values ('farm_browser_test', 'Farm browser test')
         on conflict do nothing;
       insert into public.role_capabilities (role_id, section, action)
         select id, 'farm', 'edit' from public.roles where slug = 'farm_browser_test'
         on conflict do nothing;
       insert into public.user_roles (user_id, role_id)
         select u.id, r.id from auth.users u, public.roles r
          where u.email = '${DEMO.member.email}' and r.slug = 'farm_browser_test'
         on conflict do nothing;`,
    );
    const { client: farmer } = await connectAs(DEMO.member);
    const { client: adminElsewhere } = await connectAs(DEMO.admin);
    try {
      for (const client of [farmer, adminElsewhere]) {
        const reached = await client.callTool('browser_cdp', {
          action: 'read_text',
          session_id: sessionId,
        });
        expect(resultJson(reached)).toMatchObject({ error: 'not_found' });
      }
      // A farm user without farm_scripts: evaluate is refused at once, no pending action asked.
      const refused = await farmer.callTool('browser_cdp', {
        action: 'evaluate',
        expression: '1 + 1',
      });
      expect(refused.isError).toBe(true);
      expect(resultJson(refused)).toMatchObject({ error: 'permission_denied' });
      const { rows: farmerRows } = await db.query<{ event: string; reason: string }>(
        `select event, outcome ->> 'reason' as reason from public.farm_audit
          where user_email = $1 and tool = 'browser_cdp' and arguments ->> 'action' = 'evaluate'`,
        [DEMO.member.email],
      );
      expect(farmerRows).toEqual([{ event: 'refused', reason: 'permission_denied' }]);
      expect(siteHits.filter((hit) => hit === '/start')).toHaveLength(2);
    } finally {
      await farmer.close();
      await adminElsewhere.close();
      await db.query(
        `delete from public.user_roles
          where role_id = (select id from public.roles where slug = 'farm_browser_test')`,
      );
    }
  });

  it('ends when closed: its browser is gone and its id unknown', async () => {
    const before = await browserProcesses();
    const closed = await browseOk(admin, { action: 'close', session_id: sessionId });
    expect(closed).toMatchObject({ closed: true, url: null });
    const after = await browserProcesses();
    expect([...after.values()].reduce((a, b) => a + b, 0)).toBeLessThan(
      [...before.values()].reduce((a, b) => a + b, 0),
    );
    const gone = await admin.callTool('browser_cdp', {
      action: 'read_text',
      session_id: sessionId,
    });
    expect(resultJson(gone)).toMatchObject({ error: 'not_found' });
    expect(await auditEvents(DEMO.admin.email)).toEqual(
      expect.arrayContaining([
        'ran:open',
        'ran:click',
        'asked:evaluate',
        'refused:evaluate',
        'ran:evaluate',
        'ran:close',
      ]),
    );
  });

  it('ends within 15 s of its grant being revoked', async () => {
    const { tokens, client } = await connectAs(DEMO.admin);
    try {
      const uid = await openSessionUid(client);
      const response = await fetch(
        `${stack().mcpUrl}/oauth/grants?client_id=${encodeURIComponent(tokens.client.client_id)}`,
        {
          method: 'DELETE',
          headers: { authorization: `Bearer ${await signIn(stack(), DEMO.admin)}` },
        },
      );
      expect(response.status).toBeLessThan(300);
      await waitFor(async () => ((await browserProcesses()).has(uid) ? undefined : true), 25_000);
    } finally {
      await client.close();
    }
  }, 40_000);

  // Regression: a first-party token has no grant, so its session was keyed by the user alone and
  // the liveness check never looked at the token: a revoked one's browser lived to its idle end.
  it('ends within 15 s of its first-party token being revoked', async () => {
    const exchange = await fetch(`${stack().mcpUrl}/first-party-token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${await signIn(stack(), DEMO.admin)}` },
    });
    expect(exchange.status).toBe(200);
    const { access_token } = (await exchange.json()) as { access_token: string };
    const client = await connectClient('v2-modern', stack().mcpUrl, access_token);
    try {
      const uid = await openSessionUid(client);
      // As the user revokes it over REST (api_tokens.revoked_at, docs "Identity").
      const revoked = await fetch(
        `${stack().apiUrl}/rest/v1/api_tokens?jti=eq.${String(decodeJwt(access_token).jti)}`,
        {
          method: 'PATCH',
          headers: {
            apikey: stack().keys.publishableKey,
            authorization: `Bearer ${await signIn(stack(), DEMO.admin)}`,
            'content-type': 'application/json',
            prefer: 'return=representation',
          },
          body: JSON.stringify({ revoked_at: new Date().toISOString() }),
        },
      );
      expect(revoked.status).toBe(200);
      expect(await revoked.json()).toHaveLength(1);
      await waitFor(async () => ((await browserProcesses()).has(uid) ? undefined : true), 25_000);
    } finally {
      await client.close();
    }
  }, 40_000);
});

describe('sessions on this host', () => {
  const logger = pino({ level: 'silent' });
  let toolDb: Database;
  let sessions: BrowserSessions;
  let call: ToolCall;
  let config: FarmConfig;

  beforeAll(async () => {
    config = FarmConfigSchema.parse({
      enabled: true,
      proxyManagementUrl: `http://127.0.0.1:${stack().ports.proxyManagement}`,
      browser: { idleSeconds: 5, maxSessions: 2, maxSessionsPerUser: 1, sandboxUidBase: 62_100 },
    });
    toolDb = createDatabase(stack().dbUrl, logger, { timeoutMs: 10_000 });
    const { tokens } = await connectAs(DEMO.admin);
    const caller = await new CallerProfiles(toolDb).profileOf(decodeJwt(tokens.access_token));
    call = {
      caller,
      asCaller: (work) => toolDb.asCaller(caller.claims, work),
      redact: async (payload) => payload,
      pacUrl: () => null,
      farm: null,
      storage: null,
    };
    sessions = new BrowserSessions(
      config,
      toolDb,
      new ProxyFarmDevices(config, toolDb, logger),
      logger,
    );
  });

  afterAll(async () => {
    await sessions?.closeAll();
    await toolDb?.close();
  });

  it('runs Chromium as an unprivileged uid, with its own sandbox on inside ours', async () => {
    const session = await sessions.open(call);
    const text = await session.run(async (page) => {
      await page.navigate('chrome://sandbox', 'load', 10_000);
      return (await page.readText(10_000)).text;
    });
    expect(text).toContain('Seccomp-BPF sandbox\tYes');
    expect(text).toContain('You are adequately sandboxed.');
    expect((await browserProcesses()).get(62_100)).toBeGreaterThan(1);
    // Its memory together is held by a cgroup of its own (root, cgroup v1 on this machine): the
    // one holding this session's processes (uid 62100; other sessions of the file may be open).
    if (process.getuid?.() === 0) {
      const own = readFileSync('/proc/self/cgroup', 'utf8')
        .split('\n')
        .find((line) => line.split(':')[1]?.split(',').includes('memory'))
        ?.split(':')[2];
      const parent = `/sys/fs/cgroup/memory${own}`;
      const ownedBy = (pid: string) => {
        try {
          return /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
        } catch {
          return undefined; // exited meanwhile
        }
      };
      const mine = readdirSync(parent)
        .filter((name) => name.startsWith('capture-farm-browser-'))
        .map((name) => join(parent, name))
        .filter((dir) =>
          readFileSync(join(dir, 'cgroup.procs'), 'utf8')
            .split('\n')
            .filter(Boolean)
            .some((pid) => ownedBy(pid) === '62100'),
        );
      expect(mine).toHaveLength(1);
      expect(Number(readFileSync(join(mine[0] as string, 'memory.limit_in_bytes'), 'utf8'))).toBe(
        config.browser.sandboxMemoryBytes,
      );
    }
  });

  it('holds each user to their share of browsers', async () => {
    await expect(sessions.open(call)).rejects.toMatchObject({ code: 'unavailable' });
  });

  it('ends a session nobody used for its idle time', async () => {
    const { id } = await sessions.reach(call, undefined);
    await waitFor(async () => ((await browserProcesses()).has(62_100) ? undefined : true), 12_000);
    await expect(sessions.reach(call, id)).rejects.toBeInstanceOf(FarmError);
  }, 20_000);

  it('gives another farm host its own device and port (a port follows its latest /allocate)', async () => {
    const here = await new ProxyFarmDevices(config, toolDb, logger).egressFor(call, 'cdp');
    const elsewhere = await new ProxyFarmDevices(
      { ...config, hostName: 'farm-2' },
      toolDb,
      logger,
    ).egressFor(call, 'cdp');
    expect(elsewhere.deviceUuid).not.toBe(here.deviceUuid);
    expect(elsewhere.proxyPort).not.toBe(here.proxyPort);
    const again = await new ProxyFarmDevices(config, toolDb, logger).egressFor(call, 'cdp');
    expect(again).toEqual(here);
  });

  it('closes every browser on shutdown and opens none after', async () => {
    await sessions.open(call);
    expect((await browserProcesses()).has(62_100)).toBe(true);
    await sessions.closeAll();
    expect((await browserProcesses()).has(62_100)).toBe(false);
    await expect(sessions.open(call)).rejects.toMatchObject({ code: 'unavailable' });
  });
});
