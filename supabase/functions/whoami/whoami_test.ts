// Unit tests for the whoami function's answers: preflight, methods, the caller, and the error
// bodies with their headers. A stub fetch stands in for PostgREST.
import { deepStrictEqual as assertEquals } from 'node:assert/strict';
import type { Caller } from '../_shared/caller.ts';
import { readConfig } from './config.ts';
import { handleWhoami } from './handler.ts';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl';
const CALLER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  roles: [{ slug: 'member', name: 'Member', is_admin: false }],
  capabilities: ['devices:view', 'devices:edit'],
  is_admin: false,
  token: { jti: '0b7c7a51-2f0e-4c1e-9a57-0f6c8e1d9a10', client_id: 'c1', label: 'oauth' },
};

function envAnswering(answer: () => Response | Promise<Response>) {
  let calls = 0;
  const fetch = (() => {
    calls += 1;
    return Promise.resolve(answer());
  }) as typeof globalThis.fetch;
  return { env: { supabaseUrl: 'http://api.test', fetch }, calls: () => calls };
}

function call(method: string, authorization: string | null = `Bearer ${TOKEN}`): Request {
  const headers = new Headers();
  if (authorization) headers.set('authorization', authorization);
  return new Request('http://functions.test/whoami', { method, headers });
}

Deno.test('answers a CORS preflight itself, without asking PostgREST', async () => {
  const { env, calls } = envAnswering(() => Response.json(CALLER));
  const response = await handleWhoami(call('OPTIONS', null), env);
  assertEquals(response.status, 200);
  assertEquals(response.headers.get('access-control-allow-origin'), '*');
  assertEquals(response.headers.get('access-control-allow-methods'), 'GET, POST, OPTIONS');
  assertEquals(
    response.headers.get('access-control-allow-headers'),
    'authorization, x-client-info, apikey, content-type',
  );
  await response.body?.cancel();
  assertEquals(calls(), 0);
});

for (const method of ['GET', 'POST']) {
  Deno.test(`answers ${method} with the caller, uncached and with CORS`, async () => {
    const { env } = envAnswering(() => Response.json(CALLER));
    const response = await handleWhoami(call(method), env);
    assertEquals(response.status, 200);
    assertEquals(await response.json(), CALLER);
    assertEquals(response.headers.get('cache-control'), 'no-store');
    assertEquals(response.headers.get('access-control-allow-origin'), '*');
  });
}

Deno.test('answers 405 with Allow for another method', async () => {
  const { env, calls } = envAnswering(() => Response.json(CALLER));
  const response = await handleWhoami(call('DELETE'), env);
  assertEquals(response.status, 405);
  assertEquals(response.headers.get('allow'), 'GET, POST, OPTIONS');
  assertEquals((await response.json()).error, 'method_not_allowed');
  assertEquals(calls(), 0);
});

Deno.test('answers 401 unauthorized with a Bearer challenge for a refused token', async () => {
  const { env } = envAnswering(() =>
    Response.json({ code: 'PGRST301', message: 'JWT revoked' }, { status: 401 })
  );
  const response = await handleWhoami(call('GET'), env);
  assertEquals(response.status, 401);
  assertEquals(await response.json(), { error: 'unauthorized', message: 'JWT revoked' });
  assertEquals(response.headers.get('www-authenticate'), 'Bearer error="invalid_token"');
  assertEquals(response.headers.get('access-control-allow-origin'), '*');
});

Deno.test('answers 401 unauthorized without a bearer token', async () => {
  const { env, calls } = envAnswering(() => Response.json(CALLER));
  const response = await handleWhoami(call('POST', null), env);
  assertEquals(response.status, 401);
  assertEquals((await response.json()).error, 'unauthorized');
  assertEquals(calls(), 0);
});

Deno.test('answers 503 unavailable with Retry-After when PostgREST fails', async () => {
  const { env } = envAnswering(() => new Response('Bad Gateway', { status: 502 }));
  const response = await handleWhoami(call('GET'), env);
  assertEquals(response.status, 503);
  assertEquals((await response.json()).error, 'unavailable');
  assertEquals(response.headers.get('retry-after'), '5');
});

Deno.test('reads SUPABASE_URL without its trailing slash, and refuses a bad one', () => {
  assertEquals(readConfig({ SUPABASE_URL: 'http://127.0.0.1:54321/' }), {
    supabaseUrl: 'http://127.0.0.1:54321',
    timeoutMs: 5_000,
  });
  let refused = false;
  try {
    readConfig({ SUPABASE_URL: 'not a url' });
  } catch {
    refused = true;
  }
  assertEquals(refused, true);
});
