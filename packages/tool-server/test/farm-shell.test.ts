// farm_run_shell end to end: the official MCP SDK client with tokens from the real OAuth flow,
// against the repo stack with its capture proxy and a farm. The gate (who may call, the pending
// action a person approves in the dashboard, bound to the client's grant, tool and exact
// arguments, run once, before expiry; elicitation where the client asks its user), the audit row
// of every case, the sandbox reached through MCP, and its proxied network captured with source
// farm. The agent's own attempts to approve are farm-approval-attacks.test.ts.
import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { StreamableHTTPClientTransport, Client as V2Client } from '@modelcontextprotocol/client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvedCall, askFor, decideAsPerson } from './helpers/farm-approvals.ts';
import { type ConnectedClient, connectClient, resultJson } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, signIn, useOAuthStack } from './helpers/oauth-stack.ts';

// The origin the farm fetches from listens on 127.0.0.2, the one destination the proxy is told
// to allow beyond public ones; the stack's own services on 127.0.0.1 stay out of reach.
const ORIGIN_HOST = '127.0.0.2';
/** This farm host's configured name, unlike the machine's hostname. */
const FARM_HOST = 'farm-shell-test';
const stack = useOAuthStack({
  proxy: true,
  proxyDestinations: ['public', `${ORIGIN_HOST}/32`],
  toolServerSettings: { farm: { enabled: true, hostName: FARM_HOST } },
});

let db: pg.Client;
let admin: ConnectedClient;
let member: ConnectedClient;
let viewer: ConnectedClient;
let origin: Server;
let originPort = 0;

async function connectAs(login: { email: string; password: string }): Promise<ConnectedClient> {
  const { access_token } = await authorizeAndExchange(stack(), login);
  return connectClient('v2-modern', stack().mcpUrl, access_token);
}

async function auditRows(email: string) {
  const { rows } = await db.query<{
    event: string;
    outcome: Record<string, unknown>;
    arguments: Record<string, unknown>;
    duration_ms: number | null;
    confirmation_id: string | null;
    token_jti: string | null;
    client_id: string | null;
  }>(
    `select event, outcome, arguments, duration_ms, confirmation_id, token_jti, client_id
       from public.farm_audit where user_email = $1 order by id`,
    [email],
  );
  return rows;
}

/** The pending action a first call answers, after checking it ran nothing and what it shows. */
async function pendingActionFor(client: ConnectedClient, args: Record<string, unknown>) {
  const answer = await askFor(client, 'farm_run_shell', args);
  expect(answer.would_run).toContain(String(args.command));
  // Regression: would_run named os.hostname(), not the farm host the tool server is configured as.
  expect(answer.would_run).toContain(`on farm host ${FARM_HOST} (`);
  return answer.pending_action_id;
}

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  admin = await connectAs(DEMO.admin);
  member = await connectAs(DEMO.member);
  viewer = await connectAs(DEMO.viewer);
  origin = createServer((request, response) => {
    response.end(`origin saw ${request.url}`);
  });
  await new Promise<void>((resolve) => origin.listen(0, ORIGIN_HOST, resolve));
  originPort = (origin.address() as { port: number }).port;
}, 60_000);

afterAll(async () => {
  await Promise.all([admin?.close(), member?.close(), viewer?.close()]);
  origin?.close();
  await db?.end();
});

describe('who may use the farm', () => {
  it('lists farm_run_shell for an admin, with the pending action argument, and not for others', async () => {
    const tools = await admin.listTools();
    const shell = tools.find((tool) => tool.name === 'farm_run_shell') as {
      inputSchema?: { properties?: Record<string, unknown> };
      annotations?: { destructiveHint?: boolean };
    };
    expect(shell).toBeDefined();
    expect(Object.keys(shell.inputSchema?.properties ?? {})).toContain('pending_action_id');
    expect(shell.annotations?.destructiveHint).toBe(true);
    expect(await member.listToolNames()).not.toContain('farm_run_shell');
    expect(await viewer.listToolNames()).not.toContain('farm_run_shell');
  });

  it.each([
    ['member', DEMO.member.email],
    ['viewer', DEMO.viewer.email],
  ])('refuses a %s and records the refusal', async (role, email) => {
    const client = role === 'member' ? member : viewer;
    const result = await client.callTool('farm_run_shell', { command: 'id' });
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'permission_denied' });
    const rows = await auditRows(email);
    expect(rows.at(-1)).toMatchObject({
      event: 'refused',
      outcome: { reason: 'permission_denied' },
      arguments: { command: 'id' },
    });
  });
});

describe('the approval', () => {
  it('first runs nothing and answers a pending action a person approves in the dashboard', async () => {
    const args = { command: 'touch /scratch/asked; echo asked' };
    const answer = await askFor(admin, 'farm_run_shell', args);
    expect(answer).toMatchObject({
      status: 'approval_required',
      would_run: `Run \`${args.command}\` in a sandbox on farm host ${FARM_HOST} (no network).`,
      approve_at: `${stack().dashboardUrl}/approvals`,
    });
    expect(answer.message).toContain('A person must approve this call in the dashboard');
    expect(answer.message).toContain(answer.pending_action_id);
    expect(Date.parse(answer.expires_at) - Date.now()).toBeGreaterThan(200_000);
    const { rows } = await db.query(
      `select tool, would_run, decision, used_at, client_id, client_name
         from public.farm_pending_actions where id = $1`,
      [answer.pending_action_id],
    );
    expect(rows).toEqual([
      {
        tool: 'farm_run_shell',
        would_run: answer.would_run,
        decision: null,
        used_at: null,
        client_id: expect.any(String),
        client_name: 'Test client',
      },
    ]);
    expect((await auditRows(DEMO.admin.email)).at(-1)).toMatchObject({
      event: 'asked',
      outcome: { via: 'dashboard' },
      confirmation_id: answer.pending_action_id,
    });
  });

  it('runs the call a person approved, once', async () => {
    const args = { command: 'echo ran > /scratch/marker; cat /scratch/marker; id -u' };
    const id = await pendingActionFor(admin, args);
    await decideAsPerson(stack(), id);
    const second = await admin.callTool('farm_run_shell', { ...args, pending_action_id: id });
    expect(second.isError).toBeFalsy();
    expect(second.structuredContent).toMatchObject({
      exit_code: 0,
      stdout: 'ran\n1000\n',
      stdout_truncated: false,
      terminated: null,
      network: 'none',
    });
    const rows = await auditRows(DEMO.admin.email);
    const ran = rows.at(-1);
    expect(ran).toMatchObject({
      event: 'ran',
      outcome: { status: 'ok', exit_code: 0, approved: { via: 'dashboard' } },
      confirmation_id: id,
    });
    expect(ran?.duration_ms).toBeGreaterThanOrEqual(0);
    expect(ran?.token_jti).toBeTruthy();
    expect(ran?.client_id).toBeTruthy();

    const again = await admin.callTool('farm_run_shell', { ...args, pending_action_id: id });
    expect(again.isError).toBe(true);
    expect(resultJson(again)).toMatchObject({ error: 'confirmation_refused' });
    expect((await auditRows(DEMO.admin.email)).at(-1)).toMatchObject({
      event: 'refused',
      outcome: { reason: 'confirmation_used' },
    });
  });

  it('runs only the exact arguments a person approved', async () => {
    const id = await pendingActionFor(admin, { command: 'echo harmless' });
    await decideAsPerson(stack(), id);
    const swapped = await admin.callTool('farm_run_shell', {
      command: 'echo something else',
      pending_action_id: id,
    });
    expect(swapped.isError).toBe(true);
    expect(resultJson(swapped).message).toMatch(/other arguments/);
    const widened = await admin.callTool('farm_run_shell', {
      command: 'echo harmless',
      network: 'proxy',
      pending_action_id: id,
    });
    expect(widened.isError).toBe(true);
    expect((await auditRows(DEMO.admin.email)).at(-1)).toMatchObject({
      event: 'refused',
      outcome: { reason: 'confirmation_other_arguments' },
    });
    // The mismatches did not spend it: the exact call still runs.
    const exact = await admin.callTool('farm_run_shell', {
      command: 'echo harmless',
      pending_action_id: id,
    });
    expect(exact.structuredContent).toMatchObject({ stdout: 'harmless\n' });
  });

  it('runs nothing once a person denied it', async () => {
    const args = { command: 'touch /scratch/denied' };
    const id = await pendingActionFor(admin, args);
    await decideAsPerson(stack(), id, 'denied');
    const denied = await admin.callTool('farm_run_shell', { ...args, pending_action_id: id });
    expect(denied.isError).toBe(true);
    expect(resultJson(denied)).toMatchObject({
      error: 'confirmation_refused',
      message: 'A person denied this call; nothing ran.',
    });
    expect((await auditRows(DEMO.admin.email)).at(-1)).toMatchObject({
      event: 'refused',
      outcome: { reason: 'confirmation_denied' },
    });
  });

  it('is refused after its expiry, approved or not', async () => {
    const args = { command: 'echo late' };
    const id = await pendingActionFor(admin, args);
    await decideAsPerson(stack(), id);
    // The clock of a few minutes, moved: the row's expiry is put in the past.
    await db.query(
      `update public.farm_pending_actions set created_at = now() - interval '10 minutes',
              expires_at = now() - interval '1 second'
        where id = $1`,
      [id],
    );
    const late = await admin.callTool('farm_run_shell', { ...args, pending_action_id: id });
    expect(late.isError).toBe(true);
    expect(resultJson(late).message).toMatch(/expired/);
    expect((await auditRows(DEMO.admin.email)).at(-1)).toMatchObject({
      outcome: { reason: 'confirmation_expired' },
    });
  });

  it('is refused to another user holding the farm capability, and an unknown id too', async () => {
    const args = { command: 'echo mine' };
    const id = await pendingActionFor(admin, args);
    await decideAsPerson(stack(), id);
    await db.query(
      `insert into public.roles (slug, name) values ('farm_test', 'Farm test') on conflict do nothing;
       insert into public.role_capabilities (role_id, section, action)
         select id, 'farm', 'edit' from public.roles where slug = 'farm_test' on conflict do nothing;
       insert into public.user_roles (user_id, role_id)
         select u.id, r.id from auth.users u, public.roles r
          where u.email = '${DEMO.member.email}' and r.slug = 'farm_test' on conflict do nothing;`,
    );
    const farmer = await connectAs(DEMO.member);
    try {
      expect(await farmer.listToolNames()).toContain('farm_run_shell');
      const stolen = await farmer.callTool('farm_run_shell', { ...args, pending_action_id: id });
      expect(stolen.isError).toBe(true);
      expect(resultJson(stolen)).toMatchObject({ error: 'confirmation_refused' });
      const unknown = await farmer.callTool('farm_run_shell', {
        ...args,
        pending_action_id: randomUUID(),
      });
      expect(unknown.isError).toBe(true);
      expect(resultJson(unknown).message).toBe(resultJson(stolen).message);
      const rows = await auditRows(DEMO.member.email);
      expect(rows.slice(-2).map((row) => row.outcome.reason)).toEqual([
        'confirmation_other_user',
        'confirmation_unknown',
      ]);
      // The owner's client can still run it: the thief's attempt did not spend it.
      const mine = await admin.callTool('farm_run_shell', { ...args, pending_action_id: id });
      expect(mine.structuredContent).toMatchObject({ stdout: 'mine\n' });
    } finally {
      await farmer.close();
      await db.query(
        `delete from public.user_roles where role_id = (select id from public.roles where slug = 'farm_test')`,
      );
    }
  });
});

describe('elicitation, where the client can ask its user', () => {
  /** A 2026-07-28 client that answers elicitations as its user would. */
  async function elicitingClient(answer: 'accept' | 'decline', seen: string[]) {
    const { access_token } = await authorizeAndExchange(stack(), DEMO.admin);
    const client = new V2Client(
      { name: 'tests-eliciting', version: '1.0.0' },
      { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
    );
    client.setRequestHandler('elicitation/create', async (request) => {
      seen.push(String(request.params.message));
      return answer === 'accept'
        ? { action: 'accept', content: { confirm: true } }
        : { action: 'decline' };
    });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(stack().mcpUrl), {
        requestInit: { headers: { authorization: `Bearer ${access_token}` } },
      }),
    );
    return client;
  }

  it('asks the person directly and runs once they accept', async () => {
    const seen: string[] = [];
    const client = await elicitingClient('accept', seen);
    try {
      const result = (await client.callTool({
        name: 'farm_run_shell',
        arguments: { command: 'echo asked-first' },
      })) as { isError?: boolean; structuredContent?: Record<string, unknown> };
      expect(seen).toHaveLength(1);
      expect(seen[0]).toContain('echo asked-first');
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toMatchObject({ stdout: 'asked-first\n' });
      const rows = await auditRows(DEMO.admin.email);
      expect(rows.slice(-2)).toMatchObject([
        { event: 'asked', outcome: { via: 'elicitation' } },
        { event: 'ran', outcome: { status: 'ok', approved: { via: 'elicitation' } } },
      ]);
      expect(rows.at(-1)?.confirmation_id).toBe(rows.at(-2)?.confirmation_id);
      const { rows: actions } = await db.query(
        `select decision, decided_via, used_at is not null as used
           from public.farm_pending_actions where id = $1`,
        [rows.at(-1)?.confirmation_id],
      );
      expect(actions).toEqual([{ decision: 'approved', decided_via: 'elicitation', used: true }]);
    } finally {
      await client.close();
    }
  });

  it('runs nothing when the person declines', async () => {
    const seen: string[] = [];
    const client = await elicitingClient('decline', seen);
    try {
      const result = (await client.callTool({
        name: 'farm_run_shell',
        arguments: { command: 'touch /scratch/declined' },
      })) as { isError?: boolean; content: Array<{ text?: string }> };
      expect(seen).toHaveLength(1);
      expect(result.isError).toBe(true);
      expect(JSON.parse(String(result.content[0]?.text))).toMatchObject({
        error: 'confirmation_refused',
      });
      const rows = await auditRows(DEMO.admin.email);
      expect(rows.at(-1)).toMatchObject({ event: 'refused', outcome: { reason: 'declined' } });
      const { rows: actions } = await db.query(
        `select decision, decided_via, used_at from public.farm_pending_actions where id = $1`,
        [rows.at(-2)?.confirmation_id],
      );
      expect(actions).toEqual([{ decision: 'denied', decided_via: 'elicitation', used_at: null }]);
    } finally {
      await client.close();
    }
  });
});

describe('the sandbox through MCP', () => {
  async function confirmedRun(args: Record<string, unknown>) {
    const result = await approvedCall(stack(), admin, 'farm_run_shell', args);
    expect(result.isError).toBeFalsy();
    return result.structuredContent as Record<string, unknown>;
  }

  it('cannot read the stack data directory or reach its database and API directly', async () => {
    const { ports, dataDir } = stack();
    // The directory is there on the host (with the stack's keys), so its absence inside is the
    // sandbox's doing.
    expect(existsSync(dataDir)).toBe(true);
    const command =
      `ls -d ${dataDir} 2>&1; echo ls=$?; ` +
      `if [ -e ${dataDir} ]; then echo data-dir-present; else echo data-dir-absent; fi; ` +
      `cat ${dataDir}/*/*.key 2>&1; ` +
      `curl -sS --max-time 2 http://127.0.0.1:${ports.api}/rest/v1/ 2>&1; echo rc=$?; ` +
      `socat -T1 - TCP:127.0.0.1:${ports.db} </dev/null 2>&1; echo rc=$?`;
    const output = await confirmedRun({ command });
    const stdout = String(output.stdout);
    expect(stdout).toContain(`ls: cannot access '${dataDir}': No such file or directory\nls=2\n`);
    expect(stdout).toContain('data-dir-absent\n');
    expect(stdout).not.toContain('data-dir-present');
    expect(stdout).not.toMatch(/BEGIN [A-Z ]*PRIVATE KEY/);
    expect(stdout).not.toMatch(/rc=0/);
    const rows = await auditRows(DEMO.admin.email);
    const [asked, ran] = rows.slice(-2);
    expect(asked).toMatchObject({ event: 'asked', arguments: { command } });
    expect(ran).toMatchObject({
      event: 'ran',
      arguments: { command },
      outcome: { status: 'ok', exit_code: 0, terminated: null, network: 'none' },
      confirmation_id: asked?.confirmation_id,
    });
  });

  it('keeps none of what a command printed in the audit, only its length and digest', async () => {
    // The command puts the marker together, so it is in no argument: only in the output.
    const printed = `printed-${randomUUID()}`;
    const [head, tail] = [printed.slice(0, 10), printed.slice(10)];
    const output = await confirmedRun({
      command: `printf '%s%s' '${head}' '${tail}'; echo; printf '%s%s' '${head}' '${tail}' >&2`,
    });
    expect(output).toMatchObject({ stdout: `${printed}\n`, stderr: printed });
    const { rows: leaks } = await db.query(
      'select id from public.farm_audit a where strpos(a::text, $1) > 0',
      [printed],
    );
    expect(leaks).toEqual([]);
    expect((await auditRows(DEMO.admin.email)).at(-1)?.outcome).toMatchObject({
      status: 'ok',
      exit_code: 0,
      stdout: {
        omitted: 'kept as a digest',
        length: printed.length + 1,
        sha256: createHash('sha256').update(`${printed}\n`).digest('hex'),
      },
    });
  });

  it('allocates its farm device again when the port is bound to another address', async () => {
    // The admin's farm shell device, with its port bound elsewhere: the farm host's address
    // changed, or another client allocated the new device first. The proxy refuses /allocate
    // from here (403 farm_device); the farm gives the port up and allocates it again.
    const { rows } = await db.query<{ uuid: string }>(
      `insert into public.devices (name, os, owner_user_id)
       select 'Farm shell on ${FARM_HOST}', 'linux', id from auth.users where email = $1
       returning uuid`,
      [DEMO.admin.email],
    );
    const deviceUuid = rows[0]?.uuid as string;
    await db.query(
      `insert into private.farm_devices (device_uuid, source, farm_host) values ($1, 'farm', $2)`,
      [deviceUuid, FARM_HOST],
    );
    await db.query(
      `insert into public.device_ports (device_uuid, port, allocated_from)
       select $1, coalesce(max(port), 20000) + 1, '127.0.0.9' from public.device_ports
       on conflict (device_uuid) do update set allocated_from = excluded.allocated_from`,
      [deviceUuid],
    );
    const marker = `farm-rebound-${Date.now()}`;
    const output = await confirmedRun({
      command: `curl -sS --max-time 10 http://${ORIGIN_HOST}:${originPort}/${marker}`,
      network: 'proxy',
    });
    expect(output.stdout).toBe(`origin saw /${marker}`);
    expect(output.device_uuid).toBe(deviceUuid);
    const bound = await db.query<{ allocated_from: string }>(
      'select host(allocated_from) as allocated_from from public.device_ports where device_uuid = $1',
      [deviceUuid],
    );
    expect(bound.rows).toEqual([{ allocated_from: '127.0.0.1' }]);
  });

  it('fetches through the capture proxy with network proxy, captured with source farm', async () => {
    const marker = `farm-${Date.now()}`;
    const output = await confirmedRun({
      command:
        `curl -sS --max-time 10 http://${ORIGIN_HOST}:${originPort}/${marker}; echo; ` +
        `curl -sS --max-time 10 -o /dev/null -w '%{http_code}' http://127.0.0.1:${stack().ports.api}/rest/v1/`,
      network: 'proxy',
    });
    const [fetched, ownApi] = String(output.stdout).split('\n');
    expect(fetched).toBe(`origin saw /${marker}`);
    // The stack's own API, through the same proxy: refused (loopback is not allowed).
    expect(ownApi).toBe('403');
    const deviceUuid = String(output.device_uuid);
    const deadline = Date.now() + 10_000;
    let rows: Array<{ source: string; device_uuid: string }> = [];
    while (Date.now() < deadline && rows.length === 0) {
      ({ rows } = await db.query(
        `select payload ->> 'source' as source, device_uuid::text from public.entries
          where url like $1`,
        [`%${marker}`],
      ));
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(rows).toEqual([{ source: 'farm', device_uuid: deviceUuid }]);
  });

  it('reports a runaway command stopped at its limit', async () => {
    const output = await confirmedRun({ command: 'sleep 60', timeout_seconds: 1 });
    expect(output).toMatchObject({ terminated: 'wall_time', exit_code: null });
  });
});

describe('the audit over REST', () => {
  it('is readable by an admin and by no one else', async () => {
    const read = async (login: { email: string; password: string }) => {
      const response = await fetch(`${stack().apiUrl}/rest/v1/farm_audit?select=event,tool`, {
        headers: {
          apikey: stack().keys.publishableKey,
          authorization: `Bearer ${await signIn(stack(), login)}`,
        },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as Array<{ event: string; tool: string }>;
    };
    const adminView = await read(DEMO.admin);
    expect(adminView.map((row) => row.event)).toEqual(
      expect.arrayContaining(['asked', 'refused', 'ran']),
    );
    expect(new Set(adminView.map((row) => row.tool))).toEqual(new Set(['farm_run_shell']));
    expect(await read(DEMO.member)).toEqual([]);
  });
});
