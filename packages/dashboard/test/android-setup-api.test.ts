// The Android-over-USB client with a scripted fetch: what it sends (bearer only, no cookies, the
// chosen serial) and how the tool server's answers map onto its closed error set.
import { describe, expect, it } from 'vitest';
import {
  AndroidSetupApiError,
  connectAndroidPhone,
  listAdbPhones,
  revertAndroidPhone,
} from '../src/console/android-setup-api.ts';

type Call = { url: string; init: RequestInit };

function scriptedFetch(status: number, body: unknown, calls: Call[] = []): typeof fetch {
  return (async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    });
  }) as typeof fetch;
}

const base = { mcpUrl: 'https://mcp.example.com/', accessToken: 'session-token' };
const DEVICE = 'd0000000-0000-4000-8000-000000000001';

async function failureOf(work: Promise<unknown>): Promise<AndroidSetupApiError> {
  const error = await work.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(AndroidSetupApiError);
  return error as AndroidSetupApiError;
}

describe('android setup api', () => {
  it('lists phones with the bearer token and no cookies', async () => {
    const calls: Call[] = [];
    const phones = [{ serial: 'A1', state: 'device', model: 'Pixel 7' }];
    const listed = await listAdbPhones({
      ...base,
      fetch: scriptedFetch(200, { devices: phones }, calls),
    });
    expect(listed).toEqual(phones);
    expect(calls[0]?.url).toBe('https://mcp.example.com/dashboard/android/devices');
    expect(calls[0]?.init.method).toBe('GET');
    expect(calls[0]?.init.credentials).toBe('omit');
    expect((calls[0]?.init.headers as Record<string, string> | undefined)?.Authorization).toBe(
      'Bearer session-token',
    );
  });

  it('posts the device and the chosen serial to connect and revert', async () => {
    const calls: Call[] = [];
    const fetch = scriptedFetch(200, { serial: 'A1', commands: [] }, calls);
    await connectAndroidPhone({ ...base, fetch, deviceUuid: DEVICE, serial: 'A1' });
    await revertAndroidPhone({ ...base, fetch, deviceUuid: DEVICE, serial: null });
    expect(calls.map((call) => [call.url.split('/').at(-1), call.init.body])).toEqual([
      ['connect', JSON.stringify({ device_uuid: DEVICE, serial: 'A1' })],
      ['revert', JSON.stringify({ device_uuid: DEVICE })],
    ]);
  });

  it.each([
    [401, { error: 'invalid_token' }, 'signed_out'],
    [403, { error: 'access_denied' }, 'forbidden'],
    [404, { error: 'not_found' }, 'not_found'],
    [409, { error: 'device_unauthorized' }, 'phone_not_ready'],
    [503, { error: 'adb_unavailable' }, 'adb_unavailable'],
    [503, { error: 'proxy_unavailable' }, 'unavailable'],
    [502, { error: 'command_failed' }, 'failed'],
  ])('maps HTTP %i %j of connect to %s', async (status, body, code) => {
    const error = await failureOf(
      connectAndroidPhone({
        ...base,
        fetch: scriptedFetch(status, { ...body, error_description: 'why' }),
        deviceUuid: DEVICE,
        serial: null,
      }),
    );
    expect(error.code).toBe(code);
    expect(error.message).toBe('why');
  });

  it('reads a listing without an adb server as adb_unavailable, with the reason', async () => {
    const error = await failureOf(
      listAdbPhones({
        ...base,
        fetch: scriptedFetch(200, { devices: [], adb_unavailable: 'no adb server on 5037' }),
      }),
    );
    expect(error.code).toBe('adb_unavailable');
    expect(error.message).toBe('no adb server on 5037');
  });

  it('reads a 404 of the listing as a tool server without adb', async () => {
    const error = await failureOf(
      listAdbPhones({ ...base, fetch: scriptedFetch(404, { error: 'not_found' }) }),
    );
    expect(error.code).toBe('not_configured');
  });

  it('keeps the serials of a several_devices refusal', async () => {
    const error = await failureOf(
      connectAndroidPhone({
        ...base,
        fetch: scriptedFetch(409, { error: 'several_devices', serials: ['A1', 'B2'] }),
        deviceUuid: DEVICE,
        serial: null,
      }),
    );
    expect(error.serials).toEqual(['A1', 'B2']);
  });

  it('reports an unreachable tool server as unavailable', async () => {
    const error = await failureOf(
      listAdbPhones({
        ...base,
        fetch: (async () => {
          throw new TypeError('fetch failed');
        }) as typeof fetch,
      }),
    );
    expect(error.code).toBe('unavailable');
  });
});
