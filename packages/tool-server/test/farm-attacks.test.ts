// The farm gate tried as an attacker would, through the MCP SDK client with real OAuth tokens on
// the repo stack: a command whose pending action reads as something other than what runs (padded
// with newlines, reversed by a bidi override), and secrets that reach the audit past the
// redaction its arguments get (in what would run), and a farm user whose role loses the farm
// while their token (and its cached profile) lives on; a page that sizes
// itself to make a full-page screenshot exhaust the farm host's memory. (A sandbox holding
// thousands of connections open through its egress bridge is the farm's own test,
// packages/farm/test/farm-egress-bridge.test.ts.)
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { approvedCall, type PendingActionAnswer } from './helpers/farm-approvals.ts';
import { type ConnectedClient, connectClient } from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

// The page the farm browser loads is served on 127.0.0.2, the one destination beyond public ones
// the proxy is told to allow; every shell command here runs with network none.
const SITE_HOST = '127.0.0.2';
const stack = useOAuthStack({ proxy: true, proxyDestinations: [`${SITE_HOST}/32`] });

let db: pg.Client;
let admin: ConnectedClient;
let site: Server;
let siteUrl = '';

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  const { access_token } = await authorizeAndExchange(stack(), DEMO.admin);
  admin = await connectClient('v2-modern', stack().mcpUrl, access_token);
  // A page that makes itself far wider than any screen.
  site = createServer((_request, response) => {
    response.setHeader('content-type', 'text/html');
    response.end('<div style="width:60000px;height:40px;background:red"></div>');
  });
  await new Promise<void>((resolve) => site.listen(0, SITE_HOST, resolve));
  siteUrl = `http://${SITE_HOST}:${(site.address() as { port: number }).port}/wide`;
}, 60_000);

afterAll(async () => {
  await admin?.close();
  site?.close();
  await db?.end();
});

async function ask(args: Record<string, unknown>) {
  const first = await admin.callTool('farm_run_shell', args);
  expect(first.isError).toBeFalsy();
  return first.structuredContent as unknown as PendingActionAnswer;
}

async function auditRowsSince(id: number) {
  const { rows } = await db.query<{
    id: string;
    event: string;
    arguments: Record<string, unknown>;
    outcome: Record<string, unknown>;
  }>(
    `select id, event, arguments, outcome from public.farm_audit
      where user_email = $1 and id > $2 order by id`,
    [DEMO.admin.email, id],
  );
  return rows;
}

async function lastAuditId(): Promise<number> {
  const { rows } = await db.query<{ id: string | null }>(
    'select max(id)::text as id from public.farm_audit',
  );
  return Number(rows[0]?.id ?? 0);
}

describe('what a pending action shows', () => {
  it('shows a command padded with newlines on one line, so its tail is not hidden', async () => {
    const command = `echo harmless${'\n'.repeat(40)}touch /scratch/evil`;
    const { would_run } = await ask({ command });
    expect(would_run).not.toContain('\n');
    expect(would_run).toContain(`echo harmless${'\\n'.repeat(40)}touch /scratch/evil`);
  });

  it('shows bidi overrides and zero-width characters as escapes, and a literal \\n apart from a newline', async () => {
    const command = 'echo "\u202Eftp.exe"\u200B; printf "a\\nb"';
    const { would_run } = await ask({ command });
    expect(would_run).not.toMatch(/[\u202E\u200B]/);
    expect(would_run).toContain('echo "\\u{202E}ftp.exe"\\u{200B}; printf "a\\\\nb"');
  });

  it('still runs exactly the command that was approved', async () => {
    const command = 'printf "%s|" one\nprintf "%s|" two';
    const result = await approvedCall(stack(), admin, 'farm_run_shell', { command });
    expect(result.isError).toBeFalsy();
    expect((result.structuredContent as { stdout: string }).stdout).toBe('one|two|');
  });
});

describe('what the audit keeps', () => {
  const secret = `ghp_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`;

  it('keeps no secret of the command, in what would run or in the arguments', async () => {
    const since = await lastAuditId();
    const command = `echo "Authorization: token ${secret}" > /dev/null`;
    const { would_run } = await ask({ command });
    // The caller is shown what runs, whole.
    expect(would_run).toContain(secret);
    const result = await approvedCall(stack(), admin, 'farm_run_shell', { command });
    expect(result.isError).toBeFalsy();
    const rows = await auditRowsSince(since);
    expect(rows.map((row) => row.event)).toEqual(['asked', 'asked', 'ran']);
    expect(JSON.stringify(rows)).not.toContain(secret.slice(4));
    expect(JSON.stringify(rows[0]?.outcome.would_run)).toContain('[redacted');
  });

  it('keeps credential flags, assignments and URL user information only redacted, with the digest of the exact command', async () => {
    // Regression: the redactor knows token formats, not flags, so `curl -u user:password` and
    // the rest were stored in clear.
    const password = `pw-${Date.now()}-hunter2`;
    const command = [
      `curl -u admin:${password} https://api.example/`,
      `wget --password=${password} https://api.example/`,
      `mysql -uroot -p${password} shop`,
      `sshpass -p ${password} ssh me@host`,
      `PGPASSWORD=${password} psql -h db`,
      `git clone https://admin:${password}@git.example/repo`,
      `curl -H 'Authorization: Bearer ${password}' https://api.example/`,
    ].join('; ');
    const since = await lastAuditId();
    const { would_run } = await ask({ command });
    expect(would_run).toContain(password);
    const [asked] = await auditRowsSince(since);
    expect(asked?.event).toBe('asked');
    expect(JSON.stringify(asked)).not.toContain(password);
    expect(asked?.arguments.command).toMatchObject({
      omitted: 'credentials redacted',
      length: command.length,
      sha256: createHash('sha256').update(command).digest('hex'),
    });
    const preview = (asked?.arguments.command as { preview?: string } | undefined)?.preview;
    expect(preview).toContain('curl -u [redacted] https://api.example/');
    expect(preview).toContain('git clone https://[redacted]@git.example/repo');
    expect(JSON.stringify(asked?.outcome.would_run)).toContain('sshpass -p [redacted] ssh');
  });

  it('keeps a long command in what would run by digest, as in the arguments', async () => {
    const since = await lastAuditId();
    const command = `: ${'x'.repeat(4_000)}`;
    await ask({ command });
    const [asked] = await auditRowsSince(since);
    expect(asked?.event).toBe('asked');
    expect(asked?.arguments.command).toMatchObject({ omitted: 'long string', length: 4_002 });
    expect(asked?.outcome.would_run).toMatchObject({ omitted: 'long string' });
    expect(JSON.stringify(asked).length).toBeLessThan(2_000);
  });
});

describe('the audit against bulk', () => {
  it('keeps arguments padded with thousands of short strings by digest, not as megabytes', async () => {
    const since = await lastAuditId();
    const padding = Array.from({ length: 20_000 }, (_, i) => `pad-${i}-${'y'.repeat(100)}`);
    await ask({ command: 'true', padding });
    const [asked] = await auditRowsSince(since);
    expect(asked?.event).toBe('asked');
    expect(asked?.arguments).toMatchObject({ omitted: 'large arguments' });
    expect(JSON.stringify(asked).length).toBeLessThan(2_000);
  });
});

describe('a capability taken away', () => {
  it('stops the next farm call at once, though the token and its cached profile live on', async () => {
    const { rows } = await db.query<{ id: string }>('select id from auth.users where email = $1', [
      DEMO.member.email,
    ]);
    const memberId = rows[0]?.id;
    const {
      rows: [role],
    } = await db.query<{ id: string }>(
      `with role as (insert into public.roles (slug, name) values ('farm_attack', 'Farm attack')
                     returning id),
            cap as (insert into public.role_capabilities (role_id, section, action)
                    select id, 'farm', 'edit' from role)
       insert into public.user_roles (user_id, role_id) select $1, id from role
       returning role_id as id`,
      [memberId],
    );
    const { access_token } = await authorizeAndExchange(stack(), DEMO.member);
    const farmer = await connectClient('v2-modern', stack().mcpUrl, access_token);
    try {
      const args = { command: 'echo still-here' };
      const first = await farmer.callTool('farm_run_shell', args);
      expect(first.isError).toBeFalsy();
      const { pending_action_id } = first.structuredContent as { pending_action_id: string };
      await db.query('delete from public.role_capabilities where role_id = $1', [role?.id]);
      const second = await farmer.callTool('farm_run_shell', { ...args, pending_action_id });
      expect(second.isError).toBe(true);
      expect(JSON.stringify(second.content)).toContain('permission_denied');
      const { rows: last } = await db.query<{ event: string; outcome: Record<string, unknown> }>(
        `select event, outcome from public.farm_audit where user_email = $1
          order by id desc limit 1`,
        [DEMO.member.email],
      );
      expect(last[0]).toMatchObject({ event: 'refused', outcome: { reason: 'permission_denied' } });
    } finally {
      await farmer.close();
      await db.query('delete from public.roles where id = $1', [role?.id]);
    }
  });
});

describe('a page against the farm host', () => {
  it('cannot size a full-page screenshot past the pixel budget', async () => {
    const opened = await admin.callTool('browser_cdp', { action: 'open', url: siteUrl });
    expect(opened.isError).toBeFalsy();
    const { session_id } = opened.structuredContent as { session_id: string };
    try {
      const shot = await admin.callTool('browser_cdp', {
        action: 'screenshot',
        session_id,
        full_page: true,
      });
      expect(shot.isError).toBeFalsy();
      const { screenshot } = shot.structuredContent as {
        screenshot: { width: number; height: number };
      };
      expect(screenshot.width).toBeLessThanOrEqual(16_384);
      expect(screenshot.width * screenshot.height).toBeLessThanOrEqual(1280 * 16_384);
      expect(screenshot.height).toBeGreaterThan(0);
    } finally {
      await admin.callTool('browser_cdp', { action: 'close', session_id });
    }
  });
});
