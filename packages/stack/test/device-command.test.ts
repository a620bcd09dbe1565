// `npm run stack -- device android` as deviceAndroid() runs it: against this repository's stack
// (its database: the device, its port, a set-up link), Debian's real adb client talking to the
// tool server's adb server double, and a stand-in proxy for the CA and the set-up status. The
// state file is written here with the proxy variables pointing at the stand-in.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AdbHostDouble } from '../../farm/test/helpers/adb-host-double.ts';
import {
  type SetupProxyStandIn,
  STAND_IN_CA_DER,
  startSetupProxyStandIn,
} from '../../farm/test/helpers/setup-proxy-stand-in.ts';
import { deviceAndroid } from '../src/device-command.ts';
import { StackError } from '../src/errors.ts';
import { LAN_PHONE_NAME } from '../src/lan-phone.ts';
import { REPO_ROOT, type RunningStack, startStack } from '../src/stack.ts';
import { writeState } from '../src/state-file.ts';

const ADB_PATH = '/usr/bin/adb';
const MEMBER = 'a0000000-0000-4000-8000-000000000002';
const SERIAL = '0A1B2C3D4E5F';

describe.skipIf(!existsSync(ADB_PATH))(`stack device android with ${ADB_PATH}`, () => {
  let stack: RunningStack;
  /** The CLI's --data-dir: only the state file; the stack's database lives in its own. */
  let dataDir: string;
  let stackDir: string;
  let adb: AdbHostDouble;
  let proxy: SetupProxyStandIn;
  let db: pg.Client;
  let phoneUuid: string;
  const previousAdbPort = process.env.ANDROID_ADB_SERVER_PORT;
  let lines: string[] = [];

  const run = (options: { serial?: string; deviceUuid?: string; revert?: boolean } = {}) =>
    deviceAndroid({ dataDir, revert: false, log: (line) => lines.push(line), ...options });

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'device-command-'));
    stackDir = mkdtempSync(join(tmpdir(), 'device-command-stack-'));
    stack = await startStack({
      projectDir: REPO_ROOT,
      dataDir: stackDir,
      ports: 'free',
      ephemeral: true,
      proxy: false,
      toolServer: false,
      logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'warn' }),
    });
    adb = await new AdbHostDouble().start();
    process.env.ANDROID_ADB_SERVER_PORT = String(adb.port);
    proxy = await startSetupProxyStandIn();
    db = new pg.Client({ connectionString: stack.dbUrl });
    await db.connect();
    // The stack's own "Phone (LAN)", with the stand-in's device port as its capture port.
    await db.query('delete from public.devices where name = $1', [LAN_PHONE_NAME]);
    const { rows } = await db.query<{ uuid: string }>(
      `insert into public.devices (name, os, owner_user_id) values ($1, 'android', $2)
       returning uuid`,
      [LAN_PHONE_NAME, MEMBER],
    );
    phoneUuid = rows[0]?.uuid as string;
    await db.query(
      `insert into public.device_ports (device_uuid, port) values ($1, $2)
       on conflict (device_uuid) do update set port = excluded.port`,
      [phoneUuid, proxy.devicePort],
    );
    // The running stack's record, its proxy variables pointing at the stand-in (no LAN mode).
    writeState(dataDir, {
      pid: process.pid,
      startedAt: new Date().toISOString(),
      variables: {
        ...stack.status(),
        PROXY_MANAGEMENT_URL: proxy.managementUrl,
        PROXY_SETUP_URL: proxy.managementUrl,
        PROXY_LAN_ADDRESS: '',
      },
    });
  });
  afterAll(async () => {
    if (previousAdbPort === undefined) delete process.env.ANDROID_ADB_SERVER_PORT;
    else process.env.ANDROID_ADB_SERVER_PORT = previousAdbPort;
    await db?.end();
    await adb?.stop();
    await proxy?.close();
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(stackDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    for (const serial of [...adb.phones.keys()]) adb.detach(serial);
    adb.commands.length = 0;
    proxy.reset();
    lines = [];
  });

  it('points the phone at "Phone (LAN)" through adb reverse and sees its traffic', async () => {
    const phone = adb.attach(SERIAL, { model: 'Pixel 7' });
    await run();
    const P = proxy.devicePort;
    const M = proxy.managementPort;
    const [token] = [...proxy.seenTokens];
    expect(adb.commandsOf(SERIAL)).toEqual([
      `reverse tcp:${P} tcp:${P}`,
      `reverse tcp:${M} tcp:${M}`,
      `shell settings put global http_proxy 127.0.0.1:${P}`,
      'push /sdcard/Download/capture-ca.der',
      'shell am start -a android.settings.SECURITY_SETTINGS',
      `shell am start -a android.intent.action.VIEW -d ${proxy.managementUrl}/setup/${token}`,
    ]);
    expect(phone.files.get('/sdcard/Download/capture-ca.der')).toEqual(STAND_IN_CA_DER);
    expect(lines[0]).toBe(`Device "${LAN_PHONE_NAME}" (${phoneUuid}) captures on port ${P}.`);
    expect(lines).toContain(`adb -s ${SERIAL} reverse tcp:${P} tcp:${P}`);
    expect(lines).toContain(
      `Phone ${SERIAL} (Pixel 7) now uses the proxy 127.0.0.1:${P} through adb reverse.`,
    );
    expect(lines.at(-1)).toBe('Traffic from the phone arrived over http.');
    // The set-up link's token is a credential: printed nowhere.
    expect(lines.join('\n')).not.toContain(token);
  });

  it('reverts the phone chosen by --serial, for the device chosen by --device', async () => {
    adb.attach(SERIAL);
    const other = adb.attach('R58M123ABC');
    await run({ serial: 'R58M123ABC', deviceUuid: phoneUuid, revert: true });
    expect(adb.commandsOf('R58M123ABC')).toEqual([
      'shell settings put global http_proxy :0',
      'shell settings delete global global_http_proxy_host',
      'shell settings delete global global_http_proxy_port',
      `reverse --remove tcp:${proxy.devicePort}`,
      `reverse --remove tcp:${proxy.managementPort}`,
    ]);
    expect(other.settings.get('http_proxy')).toBe(':0');
    expect(lines.at(-1)).toBe('Phone R58M123ABC no longer uses a proxy.');
  });

  async function stackError(work: Promise<unknown>): Promise<StackError> {
    const error = await work.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(StackError);
    return error as StackError;
  }

  it('names the serials and --serial when several phones are attached', async () => {
    adb.attach(SERIAL);
    adb.attach('R58M123ABC');
    const error = await stackError(run());
    expect(error.code).toBe('bad_option');
    expect(error.message).toContain(`${SERIAL}, R58M123ABC`);
    expect(error.message).toContain('--serial');
    expect(adb.commands).toEqual([]);
  });

  it('says to accept the USB debugging prompt for an unauthorized phone', async () => {
    adb.attach(SERIAL, { state: 'unauthorized' });
    const error = await stackError(run());
    expect(error.message).toContain('Allow USB debugging');
  });

  it('refuses a --device that is not a uuid, or not in the stack', async () => {
    expect((await stackError(run({ deviceUuid: 'phone' }))).code).toBe('bad_option');
    const missing = await stackError(run({ deviceUuid: 'd0000000-0000-4000-8000-0000000000ff' }));
    expect(missing.message).toContain('no device d0000000-0000-4000-8000-0000000000ff');
  });

  it('fails clearly when no stack is running for the data dir', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'device-command-empty-'));
    try {
      const error = await stackError(
        deviceAndroid({ dataDir: empty, revert: false, log: () => {} }),
      );
      expect(error.code).toBe('not_running');
      expect(error.message).toContain('no stack is running');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
