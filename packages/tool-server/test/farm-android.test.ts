// The Android app tools end to end: the official MCP SDK client with tokens from the real OAuth
// flow, against the repo stack with its capture proxy and a farm whose adb server (Debian's, on a
// private port) reaches the adb device double over loopback TCP. An APK is installed from a URL
// (fetched through the proxy: the download is in entries) and from an upload, each approved by a
// person, and from a Storage object read as the caller (RLS on farm-apps decides);
// listed; uninstalled. Refusals: callers without the farm capability, a device the caller may not
// see, a device attached to another farm host, a bad APK, the device's own failure, an object
// whose bytes are not the approved ones or that the caller may not read.
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createClient } from '@supabase/supabase-js';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdbDeviceDouble } from '../../farm/test/helpers/adb-device-double.ts';
import {
  freeLoopbackPort,
  type PrivateAdbServer,
  startPrivateAdbServer,
} from '../../farm/test/helpers/adb-server.ts';
import { buildTestApk } from '../../farm/test/helpers/test-apk.ts';
import { decideAsPerson } from './helpers/farm-approvals.ts';
import {
  type ConnectedClient,
  connectClient,
  resultJson,
  type ToolResult,
} from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const FARM_HOST = 'farm-test-1';
const adbPort = await freeLoopbackPort();
// The stack's proxy refuses loopback destinations by default; this test serves its APK there.
const LOOPBACK_ORIGINS = { proxyDestinations: ['public', '127.0.0.0/8', 'localhost'] };
const stack = useOAuthStack({
  proxy: true,
  ...LOOPBACK_ORIGINS,
  toolServerSettings: {
    farm: {
      enabled: true,
      adbServerPort: adbPort,
      hostName: FARM_HOST,
      // Small enough to test the cap with a few KiB; the test APKs are under 1 KiB.
      android: { packageMaxBytes: 4096 },
    },
  },
});

const HELLO = { package: 'com.example.hello', versionCode: 3, versionName: '1.0.3' };
const UPLOADED = { package: 'org.example.uploaded', versionCode: 12, versionName: '2.1' };
const STORED = { package: 'org.example.stored', versionCode: 7, versionName: '0.7' };
const APK_TYPE = 'application/vnd.android.package-archive';
const ADMIN_PHONE = 'a0000000-0000-4000-8000-00000000a0a1';
const MEMBER_PHONE = 'a0000000-0000-4000-8000-00000000a0b1';
const ELSEWHERE_PHONE = 'a0000000-0000-4000-8000-00000000a0c1';

let db: pg.Client;
let adb: PrivateAdbServer;
let device: AdbDeviceDouble;
let elsewhere: AdbDeviceDouble;
let admin: ConnectedClient;
let member: ConnectedClient;
let viewer: ConnectedClient;
let origin: Server;
let originUrl = '';
const apkDownloads: string[] = [];

async function connectAs(login: { email: string; password: string }): Promise<ConnectedClient> {
  const { access_token } = await authorizeAndExchange(stack(), login);
  return connectClient('v2-modern', stack().mcpUrl, access_token);
}

/** Asks, checks the answer ran nothing and described what would, approves as the person, runs. */
async function confirmed(
  client: ConnectedClient,
  tool: string,
  args: Record<string, unknown>,
  expectWouldRun: string[],
  person: { email: string; password: string } = DEMO.admin,
): Promise<ToolResult> {
  const first = await client.callTool(tool, args);
  expect(first.isError).toBeFalsy();
  const body = first.structuredContent as Record<string, unknown>;
  expect(body.status).toBe('approval_required');
  for (const part of expectWouldRun) expect(String(body.would_run)).toContain(part);
  const pending_action_id = String(body.pending_action_id);
  await decideAsPerson(stack(), pending_action_id, 'approved', person);
  return client.callTool(tool, { ...args, pending_action_id });
}

/** Storage (storage-js) as a demo user signed in with their password, or as the service role. */
async function storageAs(login: { email: string; password: string } | 'service_role') {
  const keys = stack().keys;
  const client = createClient(
    stack().apiUrl,
    login === 'service_role' ? keys.serviceRoleKey : keys.publishableKey,
    { auth: { persistSession: false, autoRefreshToken: false } },
  );
  if (login !== 'service_role') {
    const { error } = await client.auth.signInWithPassword(login);
    if (error) throw error;
  }
  return client.storage.from('farm-apps');
}

function sha256Of(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

async function auditEvents(tool: string): Promise<string[]> {
  const { rows } = await db.query<{ event: string }>(
    'select event from public.farm_audit where tool = $1 order by id',
    [tool],
  );
  return rows.map((row) => row.event);
}

async function userId(email: string): Promise<string> {
  const { rows } = await db.query<{ id: string }>('select id from auth.users where email = $1', [
    email,
  ]);
  return rows[0]?.id as string;
}

beforeAll(async () => {
  db = new pg.Client({ connectionString: stack().dbUrl });
  await db.connect();
  device = await new AdbDeviceDouble().start();
  elsewhere = await new AdbDeviceDouble().start();
  adb = await startPrivateAdbServer(adbPort);
  await adb.attach(device.serial);
  await adb.attach(elsewhere.serial);

  // Our devices rows: the admin's phone (the double) and the member's (a serial the adb server
  // does not know) attached to this farm host, and a phone attached to another host.
  await db.query(
    `insert into public.devices (uuid, name, os, owner_user_id) values
       ($1, 'Admin farm phone', 'android', $4), ($2, 'Member farm phone', 'android', $5),
       ($3, 'Phone on another host', 'android', $4)`,
    [
      ADMIN_PHONE,
      MEMBER_PHONE,
      ELSEWHERE_PHONE,
      await userId(DEMO.admin.email),
      await userId(DEMO.member.email),
    ],
  );
  await db.query(
    `insert into public.farm_attached_devices (device_uuid, farm_host, serial) values
       ($1, $4, $5), ($2, $4, 'member-phone-serial'), ($3, 'farm-test-2', $6)`,
    [ADMIN_PHONE, MEMBER_PHONE, ELSEWHERE_PHONE, FARM_HOST, device.serial, elsewhere.serial],
  );

  const apk = buildTestApk(HELLO);
  origin = createServer((request, response) => {
    apkDownloads.push(request.url ?? '');
    if (request.url?.startsWith('/apps/hello.apk')) {
      response.writeHead(200, { 'content-type': 'application/vnd.android.package-archive' });
      response.end(apk);
    } else if (request.url === '/apps/moved.apk') {
      response.writeHead(302, { location: '/apps/hello.apk?via=redirect' });
      response.end();
    } else if (request.url === '/apps/to-file.apk') {
      response.writeHead(302, { location: 'file:///etc/passwd' });
      response.end();
    } else if (request.url === '/apps/big.apk') {
      response.end(Buffer.alloc(5000));
    } else if (request.url === '/apps/big-chunked.apk') {
      // No Content-Length: the cap is enforced while the body streams.
      response.write(Buffer.alloc(3000));
      response.end(Buffer.alloc(3000));
    } else if (request.url === '/apps/broken.apk') {
      response.end('this is not an APK');
    } else {
      response.writeHead(404);
      response.end();
    }
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originUrl = `http://127.0.0.1:${(origin.address() as { port: number }).port}`;

  admin = await connectAs(DEMO.admin);
  member = await connectAs(DEMO.member);
  viewer = await connectAs(DEMO.viewer);
}, 120_000);

afterAll(async () => {
  await Promise.all([admin?.close(), member?.close(), viewer?.close()]);
  origin?.close();
  await adb?.stop();
  await device?.stop();
  await elsewhere?.stop();
  await db?.end();
});

const ANDROID_TOOLS = ['android_install_app', 'android_list_packages', 'android_uninstall_app'];

describe('who may use the Android tools', () => {
  it('lists the three tools for an admin (install and uninstall destructive) and none for others', async () => {
    const tools = (await admin.listTools()) as Array<{
      name: string;
      annotations?: { destructiveHint?: boolean; readOnlyHint?: boolean };
    }>;
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    for (const name of ANDROID_TOOLS) expect(byName.has(name)).toBe(true);
    expect(byName.get('android_install_app')?.annotations?.destructiveHint).toBe(true);
    expect(byName.get('android_uninstall_app')?.annotations?.destructiveHint).toBe(true);
    expect(byName.get('android_list_packages')?.annotations?.readOnlyHint).toBe(true);
    for (const client of [member, viewer]) {
      const names = await client.listToolNames();
      for (const name of ANDROID_TOOLS) expect(names).not.toContain(name);
    }
  });

  it.each([
    ['member', () => member],
    ['viewer', () => viewer],
  ])('refuses a %s on call, installs nothing and records the refusal', async (role, client) => {
    const before = device.services.length;
    const callerId = await userId(role === 'member' ? DEMO.member.email : DEMO.viewer.email);
    const { rows: last } = await db.query<{ id: string | null }>(
      'select max(id)::text as id from public.farm_audit',
    );
    const since = last[0]?.id ?? '0';
    for (const [tool, args] of [
      ['android_install_app', { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}/apps/hello.apk` }],
      ['android_list_packages', { device_uuid: MEMBER_PHONE }],
      ['android_uninstall_app', { device_uuid: MEMBER_PHONE, package: HELLO.package }],
    ] as const) {
      const result = await client().callTool(tool, args);
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({ error: 'permission_denied' });
      // The refusal is recorded as this caller's, for this tool and these arguments.
      const { rows } = await db.query(
        `select event, outcome ->> 'reason' as reason, arguments from public.farm_audit
          where user_id = $1 and tool = $2 and id > $3`,
        [callerId, tool, since],
      );
      expect(rows).toEqual([{ event: 'refused', reason: 'permission_denied', arguments: args }]);
    }
    expect(device.services.length).toBe(before);
  });
});

describe('installing, listing and uninstalling on a farm device', () => {
  it('installs from a URL fetched through the capture proxy, once a person approved', async () => {
    const url = `${originUrl}/apps/hello.apk?build=${Date.now()}`;
    const downloadsBefore = apkDownloads.length;
    const args = { device_uuid: ADMIN_PHONE, apk_url: url };
    const first = await admin.callTool('android_install_app', args);
    // The first call ran nothing: no download, no adb.
    expect(apkDownloads.length).toBe(downloadsBefore);
    expect(device.packages.has(HELLO.package)).toBe(false);
    const pending_action_id = (first.structuredContent as { pending_action_id: string })
      .pending_action_id;
    expect((first.structuredContent as { would_run: string }).would_run).toContain(url);

    await decideAsPerson(stack(), pending_action_id);
    const result = await admin.callTool('android_install_app', { ...args, pending_action_id });
    expect(result.isError).toBeFalsy();
    const output = result.structuredContent as Record<string, unknown>;
    expect(output).toMatchObject({
      device_uuid: ADMIN_PHONE,
      device_name: 'Admin farm phone',
      serial: device.serial,
      package: HELLO.package,
      version_code: '3',
      version_name: '1.0.3',
      outcome: 'Success',
      replace: false,
      source: { url, bytes: buildTestApk(HELLO).length },
    });
    expect(device.packages.get(HELLO.package)).toEqual({
      name: HELLO.package,
      versionCode: 3,
      versionName: '1.0.3',
    });
    expect(device.services.at(-1)).toMatch(/^exec:cmd package 'install' -S \d+$/);

    // The download is captured: an entry for that URL under the caller's farm device, source farm.
    const capturedUnder = String(output.captured_under_device_uuid);
    let rows: Array<{ source: string; device_uuid: string; status: number }> = [];
    for (let attempt = 0; attempt < 50 && rows.length === 0; attempt++) {
      ({ rows } = await db.query(
        `select payload ->> 'source' as source, device_uuid::text, status_code as status
           from public.entries where url = $1`,
        [url],
      ));
      if (rows.length === 0) await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(rows).toEqual([{ source: 'farm', device_uuid: capturedUnder, status: 200 }]);
    expect(await auditEvents('android_install_app')).toEqual(
      expect.arrayContaining(['asked', 'ran']),
    );
    const { rows: audit } = await db.query<{ outcome: Record<string, unknown> }>(
      `select outcome from public.farm_audit
        where tool = 'android_install_app' and event = 'ran' order by id desc limit 1`,
    );
    expect(audit[0]?.outcome).toMatchObject({
      status: 'ok',
      package: HELLO.package,
      version_code: '3',
      outcome: 'Success',
    });
  });

  it('does not run an approval for another URL or twice', async () => {
    // replace: the package is installed by the test above, and this run must succeed.
    const args = {
      device_uuid: ADMIN_PHONE,
      apk_url: `${originUrl}/apps/hello.apk?a`,
      replace: true,
    };
    const first = await admin.callTool('android_install_app', args);
    const pending_action_id = (first.structuredContent as { pending_action_id: string })
      .pending_action_id;
    await decideAsPerson(stack(), pending_action_id);
    const other = await admin.callTool('android_install_app', {
      ...args,
      apk_url: `${originUrl}/apps/hello.apk?b`,
      pending_action_id,
    });
    expect(other.isError).toBe(true);
    expect(resultJson(other)).toMatchObject({ error: 'confirmation_refused' });
    expect(apkDownloads).not.toContain('/apps/hello.apk?b');

    const ran = await admin.callTool('android_install_app', { ...args, pending_action_id });
    expect(ran.isError).toBeFalsy();
    expect(ran.structuredContent).toMatchObject({ package: HELLO.package, outcome: 'Success' });
    const downloads = apkDownloads.length;
    const installs = device.services.length;
    const twice = await admin.callTool('android_install_app', { ...args, pending_action_id });
    expect(twice.isError).toBe(true);
    expect(resultJson(twice)).toMatchObject({ error: 'confirmation_refused' });
    expect(String(resultJson(twice).message)).toMatch(/already ran/);
    expect(apkDownloads.length).toBe(downloads);
    expect(device.services.length).toBe(installs);
    const { rows } = await db.query(
      `select event, outcome ->> 'reason' as reason from public.farm_audit
        where tool = 'android_install_app' order by id desc limit 1`,
    );
    expect(rows).toEqual([{ event: 'refused', reason: 'confirmation_used' }]);
  });

  it("reports the device's refusal to install over an installed package, and replaces with replace", async () => {
    const args = { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}/apps/moved.apk` };
    const refused = await confirmed(admin, 'android_install_app', args, [ADMIN_PHONE]);
    expect(refused.isError).toBe(true);
    const body = resultJson(refused);
    expect(body.error).toBe('failed');
    expect(String(body.message)).toContain('INSTALL_FAILED_ALREADY_EXISTS');
    expect(String(body.message)).toContain('replace: true');

    const replaced = await confirmed(admin, 'android_install_app', { ...args, replace: true }, [
      'adb install -r',
    ]);
    expect(replaced.isError).toBeFalsy();
    expect(replaced.structuredContent).toMatchObject({
      package: HELLO.package,
      replace: true,
      // The redirect was followed, through the proxy too.
      source: { url: `${originUrl}/apps/hello.apk?via=redirect` },
    });
  });

  it('installs an uploaded APK, after confirmation naming its hash', async () => {
    const apk = buildTestApk(UPLOADED);
    const result = await confirmed(
      admin,
      'android_install_app',
      { device_uuid: ADMIN_PHONE, apk_base64: apk.toString('base64') },
      ['uploaded APK', 'sha256'],
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      package: UPLOADED.package,
      version_code: '12',
      version_name: '2.1',
      outcome: 'Success',
      source: { url: null, bytes: apk.length },
      captured_under_device_uuid: null,
    });
    expect(device.packages.has(UPLOADED.package)).toBe(true);
  });

  it('lists the installed packages without confirmation', async () => {
    const result = await admin.callTool('android_list_packages', { device_uuid: ADMIN_PHONE });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      device_uuid: ADMIN_PHONE,
      filter: 'third_party',
      packages: [HELLO.package, UPLOADED.package],
    });
    const all = await admin.callTool('android_list_packages', {
      device_uuid: ADMIN_PHONE,
      filter: 'all',
    });
    expect((all.structuredContent as { packages: string[] }).packages).toContain('android');
  });

  it('uninstalls after confirmation; the package is then gone from the list', async () => {
    const result = await confirmed(
      admin,
      'android_uninstall_app',
      { device_uuid: ADMIN_PHONE, package: UPLOADED.package },
      [UPLOADED.package, ADMIN_PHONE],
    );
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({
      package: UPLOADED.package,
      outcome: 'Success',
    });
    expect(device.packages.has(UPLOADED.package)).toBe(false);
    const listed = await admin.callTool('android_list_packages', { device_uuid: ADMIN_PHONE });
    expect((listed.structuredContent as { packages: string[] }).packages).toEqual([HELLO.package]);

    const again = await confirmed(
      admin,
      'android_uninstall_app',
      { device_uuid: ADMIN_PHONE, package: UPLOADED.package },
      [UPLOADED.package],
    );
    expect(again.isError).toBe(true);
    expect(resultJson(again)).toMatchObject({ error: 'not_found' });
  });
});

describe('installing from a Storage object (farm-apps, read as the caller)', () => {
  const apk = buildTestApk(STORED);

  it('installs an APK its caller uploaded to their own folder, approved with and without a sha256', async () => {
    const adminId = await userId(DEMO.admin.email);
    const path = `${adminId}/app.apk`;
    const uploaded = await (await storageAs(DEMO.admin)).upload(path, apk, {
      contentType: APK_TYPE,
      upsert: true,
    });
    expect(uploaded.error).toBeNull();

    // Without sha256 the person is told the content is not pinned; the result names the bytes.
    const unpinned = await confirmed(
      admin,
      'android_install_app',
      { device_uuid: ADMIN_PHONE, apk_object: { bucket: 'farm-apps', path } },
      ['Storage bucket farm-apps', path, 'not pinned'],
    );
    expect(unpinned.isError).toBeFalsy();
    expect(unpinned.structuredContent).toMatchObject({
      package: STORED.package,
      version_code: '7',
      version_name: '0.7',
      outcome: 'Success',
      source: {
        url: null,
        object: { bucket: 'farm-apps', path },
        bytes: apk.length,
        sha256: sha256Of(apk),
      },
      captured_under_device_uuid: null,
    });
    expect(device.packages.get(STORED.package)).toMatchObject({ versionCode: 7 });

    // With the matching sha256 (any case), which the approval shows.
    const pinned = await confirmed(
      admin,
      'android_install_app',
      {
        device_uuid: ADMIN_PHONE,
        apk_object: { bucket: 'farm-apps', path, sha256: sha256Of(apk).toUpperCase() },
        replace: true,
      },
      [path, `sha256 is ${sha256Of(apk)}`],
    );
    expect(pinned.isError).toBeFalsy();
    expect(pinned.structuredContent).toMatchObject({
      package: STORED.package,
      replace: true,
      source: { object: { bucket: 'farm-apps', path }, sha256: sha256Of(apk) },
    });
  });

  it('refuses an object whose bytes are not the approved sha256 and installs nothing', async () => {
    const path = `${await userId(DEMO.admin.email)}/app.apk`;
    const before = device.services.length;
    const result = await confirmed(
      admin,
      'android_install_app',
      {
        device_uuid: ADMIN_PHONE,
        apk_object: { bucket: 'farm-apps', path, sha256: '0'.repeat(64) },
        replace: true,
      },
      [`sha256 is ${'0'.repeat(64)}`],
    );
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
    expect(String(resultJson(result).message)).toContain(
      `has sha256 ${sha256Of(apk)}, not the approved ${'0'.repeat(64)}`,
    );
    expect(device.services.length).toBe(before);
  });

  it('refuses a missing object as not found and installs nothing', async () => {
    const path = `${await userId(DEMO.admin.email)}/missing.apk`;
    const before = device.services.length;
    const result = await confirmed(
      admin,
      'android_install_app',
      { device_uuid: ADMIN_PHONE, apk_object: { bucket: 'farm-apps', path } },
      [path],
    );
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'not_found' });
    expect(String(resultJson(result).message)).toContain(`No object farm-apps/${path}`);
    expect(device.services.length).toBe(before);
  });

  it('refuses an object larger than the APK cap while it streams, installing nothing', async () => {
    const path = `${await userId(DEMO.admin.email)}/big.apk`;
    const big = await (await storageAs(DEMO.admin)).upload(path, Buffer.alloc(5000), {
      contentType: APK_TYPE,
      upsert: true,
    });
    expect(big.error).toBeNull();
    const before = device.services.length;
    const result = await confirmed(
      admin,
      'android_install_app',
      { device_uuid: ADMIN_PHONE, apk_object: { bucket: 'farm-apps', path } },
      [path],
    );
    expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
    expect(String(resultJson(result).message)).toContain('larger than 4096 bytes');
    expect(device.services.length).toBe(before);
  });

  it('refuses two sources and a path with .. segments at once, with nothing to approve', async () => {
    for (const args of [
      {
        device_uuid: ADMIN_PHONE,
        apk_base64: 'AAAA',
        apk_object: { bucket: 'farm-apps', path: 'a/app.apk' },
      },
      { device_uuid: ADMIN_PHONE, apk_object: { bucket: 'farm-apps', path: 'a/../b/app.apk' } },
    ]) {
      const result = await admin.callTool('android_install_app', args);
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
    }
  });

  it('does not let a member without farm:edit upload into farm-apps', async () => {
    const memberId = await userId(DEMO.member.email);
    const { data, error } = await (await storageAs(DEMO.member)).upload(
      `${memberId}/app.apk`,
      apk,
      { contentType: APK_TYPE },
    );
    expect(data).toBeNull();
    expect(error?.message).toMatch(/row-level security/);
  });
});

describe('refusals', () => {
  it('refuses a bad APK with a clear error and installs nothing', async () => {
    const before = device.services.length;
    for (const args of [
      { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}/apps/broken.apk` },
      { device_uuid: ADMIN_PHONE, apk_base64: Buffer.from('not an apk at all').toString('base64') },
      { device_uuid: ADMIN_PHONE, apk_base64: 'this is %% not base64' },
    ]) {
      const result = await confirmed(admin, 'android_install_app', args, []);
      expect(result.isError).toBe(true);
      const body = resultJson(result);
      expect(body.error).toBe('invalid_arguments');
      expect(String(body.message)).toMatch(/not a valid APK|not standard base64/);
    }
    expect(device.services.length).toBe(before);
  });

  it('refuses a missing page, a non-http URL and two sources without touching the device', async () => {
    const before = device.services.length;
    const missing = await confirmed(
      admin,
      'android_install_app',
      { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}/apps/nothing.apk` },
      [],
    );
    expect(resultJson(missing)).toMatchObject({ error: 'invalid_arguments' });
    expect(String(resultJson(missing).message)).toContain('HTTP 404');
    for (const [path, message] of [
      ['/apps/to-file.apk', 'redirected to file:///etc/passwd'],
      ['/apps/big.apk', 'larger than 4096 bytes'],
      ['/apps/big-chunked.apk', 'larger than 4096 bytes'],
    ]) {
      const result = await confirmed(
        admin,
        'android_install_app',
        { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}${path}` },
        [],
      );
      expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
      expect(String(resultJson(result).message)).toContain(message);
    }
    // One byte over the upload cap (3 MiB less 64 KiB), still inside the transport's 4 MiB body.
    const oversized = await confirmed(
      admin,
      'android_install_app',
      {
        device_uuid: ADMIN_PHONE,
        apk_base64: Buffer.alloc(3 * 1024 * 1024 - 64 * 1024 + 1).toString('base64'),
      },
      [],
    );
    expect(resultJson(oversized)).toMatchObject({ error: 'invalid_arguments' });
    expect(String(resultJson(oversized).message)).toContain('larger than');
    for (const args of [
      { device_uuid: ADMIN_PHONE, apk_url: 'file:///etc/passwd' },
      { device_uuid: ADMIN_PHONE },
      { device_uuid: ADMIN_PHONE, apk_url: `${originUrl}/apps/hello.apk`, apk_base64: 'AAAA' },
    ]) {
      // Arguments that cannot run are refused at once: nothing to confirm.
      const result = await admin.callTool('android_install_app', args);
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({ error: 'invalid_arguments' });
    }
    expect(device.services.length).toBe(before);
  });

  it("reports the device's own install failure with its reason", async () => {
    device.failNextInstallWith = 'INSTALL_FAILED_INSUFFICIENT_STORAGE';
    const result = await confirmed(
      admin,
      'android_install_app',
      {
        device_uuid: ADMIN_PHONE,
        apk_base64: buildTestApk({ ...UPLOADED, versionCode: 13 }).toString('base64'),
      },
      [],
    );
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'failed' });
    expect(String(resultJson(result).message)).toContain(
      `${UPLOADED.package} 2.1 (versionCode 13) on Admin farm phone (${device.serial}) failed: Failure [INSTALL_FAILED_INSUFFICIENT_STORAGE]`,
    );
    expect(device.packages.has(UPLOADED.package)).toBe(false);
    expect(await auditEvents('android_install_app')).toContain('failed');
  });

  it('finds no device attached to another farm host, nor an unknown one', async () => {
    for (const uuid of [ELSEWHERE_PHONE, 'a0000000-0000-4000-8000-0000000000ff']) {
      const result = await admin.callTool('android_list_packages', { device_uuid: uuid });
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({ error: 'not_found' });
    }
    expect(elsewhere.services).toEqual([]);
  });

  it('reports a device the adb server does not have as unavailable', async () => {
    const result = await admin.callTool('android_list_packages', { device_uuid: MEMBER_PHONE });
    expect(result.isError).toBe(true);
    expect(resultJson(result)).toMatchObject({ error: 'unavailable' });
  });

  it('finds no device of another user for a member granted the farm', async () => {
    // The member gets farm:edit through a role of their own: the gate lets them through, and
    // the lookup as the caller (RLS on devices) still finds nothing of the admin's.
    await db.query(
      `with role as (insert into public.roles (slug, name) values ('farm_test', 'Farm test')
                     returning id),
            cap as (insert into public.role_capabilities (role_id, section, action)
                    select id, 'farm', 'edit' from role)
       insert into public.user_roles (user_id, role_id) select $1, id from role`,
      [await userId(DEMO.member.email)],
    );
    const farmer = await connectAs(DEMO.member);
    try {
      expect(await farmer.listToolNames()).toEqual(expect.arrayContaining(ANDROID_TOOLS));
      const result = await farmer.callTool('android_list_packages', { device_uuid: ADMIN_PHONE });
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({ error: 'not_found' });
      const uninstall = await confirmed(
        farmer,
        'android_uninstall_app',
        { device_uuid: ADMIN_PHONE, package: HELLO.package },
        [],
        DEMO.member,
      );
      expect(resultJson(uninstall)).toMatchObject({ error: 'not_found' });
      expect(device.packages.has(HELLO.package)).toBe(true);
    } finally {
      await farmer.close();
    }
  });

  it("refuses a farm:edit member another user's Storage object (read as the caller) but reads their own", async () => {
    // The member holds farm:edit through a role of their own (as above); the admin's folder is
    // not theirs, so the read as the caller finds nothing, before any device is touched.
    await db.query(
      `with role as (insert into public.roles (slug, name)
                     values ('farm_apps_test', 'Farm apps test') returning id),
            cap as (insert into public.role_capabilities (role_id, section, action)
                    select id, 'farm', 'edit' from role)
       insert into public.user_roles (user_id, role_id) select $1, id from role`,
      [await userId(DEMO.member.email)],
    );
    const service = await storageAs('service_role');
    const theirs = `${await userId(DEMO.admin.email)}/not-yours.apk`;
    const own = `${await userId(DEMO.member.email)}/own.apk`;
    for (const path of [theirs, own]) {
      const { error } = await service.upload(path, buildTestApk(STORED), {
        contentType: APK_TYPE,
        upsert: true,
      });
      expect(error).toBeNull();
    }
    const farmer = await connectAs(DEMO.member);
    try {
      const refused = await confirmed(
        farmer,
        'android_install_app',
        { device_uuid: MEMBER_PHONE, apk_object: { bucket: 'farm-apps', path: theirs } },
        [theirs, 'not pinned'],
        DEMO.member,
      );
      expect(refused.isError).toBe(true);
      expect(resultJson(refused)).toMatchObject({ error: 'not_found' });
      expect(String(resultJson(refused).message)).toContain(`No object farm-apps/${theirs}`);
      // Their own object is read; the member's phone is not on the adb server, so it stops there.
      const readable = await confirmed(
        farmer,
        'android_install_app',
        { device_uuid: MEMBER_PHONE, apk_object: { bucket: 'farm-apps', path: own } },
        [own],
        DEMO.member,
      );
      expect(resultJson(readable)).toMatchObject({ error: 'unavailable' });
    } finally {
      await farmer.close();
    }
  });
});
