// The capture path through the whole local stack, with the clients users use: member A gets a
// certificate bundle over REST (supabase-js), allocates a device port at the stack's proxy with
// it, sends traffic through that port, and then finds the capture and the online device over REST
// under RLS, while member B sees neither; and revoke_proxy_bundle answers 404 for a bundle the
// caller cannot see.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../../../packages/stack/test/helpers/until.ts';
import { useActors } from './helpers/actors.ts';

const actors = useActors();
const DEVICE = 'de000000-0000-4000-8000-0000000ca9e0';
let origin: http.Server;
let originPort = 0;

beforeAll(async () => {
  origin = http.createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end(`origin saw ${request.url}`);
  });
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
  originPort = (origin.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => origin?.close(resolve));
});

function request(port: number, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const outgoing = http.request(
      { host: '127.0.0.1', port, path, method: body ? 'POST' : 'GET', headers, agent: false },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    outgoing.on('error', reject);
    outgoing.end(body);
  });
}

describe('capture through the stack', () => {
  it('lands a device’s traffic in entries, visible to its owner only', async () => {
    const { stack, A, B } = actors();
    const { data: bundle, error } = await A.client.rpc('issue_proxy_bundle', { label: 'my phone' });
    expect(error).toBeNull();
    expect(bundle.ca_certificate).toMatch(/^-----BEGIN CERTIFICATE-----/);

    const basic = Buffer.from(`${bundle.username}:${bundle.password}`).toString('base64');
    const allocated = await request(
      stack.ports.proxyManagement,
      '/allocate',
      { authorization: `Basic ${basic}`, 'content-type': 'application/json' },
      JSON.stringify({ uuid: DEVICE, deviceName: 'Stack phone', country: 'FR' }),
    );
    expect(allocated.status).toBe(200);
    const { port, baseDomain } = JSON.parse(allocated.body);
    expect(baseDomain).toBe(stack.proxyDomain);

    const proxied = await request(port, `http://127.0.0.1:${originPort}/through/stack?x=1`);
    expect(proxied).toEqual({ status: 200, body: 'origin saw /through/stack?x=1' });

    const entries = await until(async () => {
      const { data } = await A.client
        .from('entries')
        .select('device_uuid, host, path, payload->attribution, payload->source')
        .eq('path', '/through/stack');
      return data?.length ? data : undefined;
    });
    expect(entries).toEqual([
      {
        device_uuid: DEVICE,
        host: '127.0.0.1',
        path: '/through/stack',
        attribution: { rule: 'port', device_uuid: DEVICE },
        source: 'pac',
      },
    ]);
    const { data: device } = await A.client
      .from('devices')
      .select('name, country, online, device_ports(port)')
      .eq('uuid', DEVICE)
      .single();
    expect(device).toEqual({
      name: 'Stack phone',
      country: 'FR',
      online: true,
      device_ports: { port }, // one-to-one: device_ports is keyed by the device
    });

    const seenByB = await B.client.from('entries').select('id').eq('path', '/through/stack');
    expect(seenByB.data).toEqual([]);
    const portsOfB = await B.client.from('device_ports').select('port');
    expect(portsOfB.data).toEqual([]);
  });
});

describe('revoke_proxy_bundle over REST', () => {
  it("answers 404, not 500, for another user's bundle or none, and revokes nothing", async () => {
    const { A, B } = actors();
    const { data: bundleOfB, error } = await B.client.rpc('issue_proxy_bundle', { label: 'b' });
    expect(error).toBeNull();
    for (const bundleId of [bundleOfB.bundle_id, '00000000-0000-4000-8000-000000000000']) {
      const attempt = await A.client.rpc('revoke_proxy_bundle', { bundle_id: bundleId });
      expect(attempt.status, bundleId).toBe(404);
      expect(attempt.error).toMatchObject({ code: 'P0002', message: 'no such bundle' });
    }
    const { data: stillLive } = await B.client
      .from('proxy_bundles')
      .select('revoked_at')
      .eq('id', bundleOfB.bundle_id)
      .single();
    expect(stillLive).toEqual({ revoked_at: null });
    const own = await B.client.rpc('revoke_proxy_bundle', { bundle_id: bundleOfB.bundle_id });
    expect(own.status).toBe(204);
  });
});
