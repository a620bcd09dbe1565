// Unit tests for resolveCaller: what it sends PostgREST and how each answer branches. A stub fetch
// stands in for PostgREST; the real round trip is in packages/tool-server/test/token-surfaces.
import { deepStrictEqual as assertEquals, ok as assert } from 'node:assert/strict';
import { type Caller, type CallerResolution, resolveCaller } from './caller.ts';

const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJl';
const CALLER: Caller = {
  user_id: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  roles: [{ slug: 'member', name: 'Member', is_admin: false }],
  capabilities: ['devices:view', 'devices:edit'],
  is_admin: false,
  token: { jti: '0b7c7a51-2f0e-4c1e-9a57-0f6c8e1d9a10', client_id: 'c1', label: 'oauth' },
};

interface Sent {
  url: string;
  init: RequestInit;
}

function stubFetch(answer: (sent: Sent) => Response | Promise<Response>) {
  const sent: Sent[] = [];
  const fetch = ((input: string | URL | Request, init?: RequestInit) => {
    const call = { url: String(input), init: init ?? {} };
    sent.push(call);
    return Promise.resolve(answer(call));
  }) as typeof globalThis.fetch;
  return { fetch, sent };
}

function requestWith(authorization?: string): Request {
  const headers = new Headers();
  if (authorization !== undefined) headers.set('authorization', authorization);
  return new Request('http://functions.test/whoami', { headers });
}

function failure(resolution: CallerResolution) {
  assert(!resolution.ok, 'expected a failure');
  return resolution.error;
}

Deno.test('calls whoami over PostgREST with the token in both headers and returns the caller', async () => {
  const { fetch, sent } = stubFetch(() => Response.json(CALLER));
  const resolution = await resolveCaller(requestWith(`Bearer ${TOKEN}`), {
    supabaseUrl: 'http://api.test/',
    fetch,
  });
  assertEquals(resolution, { ok: true, caller: CALLER, accessToken: TOKEN });
  assertEquals(sent.length, 1);
  assertEquals(sent[0]?.url, 'http://api.test/rest/v1/rpc/whoami');
  assertEquals(sent[0]?.init.method, 'POST');
  const headers = new Headers(sent[0]?.init.headers);
  assertEquals(headers.get('authorization'), `Bearer ${TOKEN}`);
  assertEquals(headers.get('apikey'), TOKEN);
});

Deno.test('keeps only the fields of the caller shape', async () => {
  const { fetch } = stubFetch(() => Response.json({ ...CALLER, extra: 'dropped' }));
  const resolution = await resolveCaller(requestWith(`Bearer ${TOKEN}`), {
    supabaseUrl: 'http://api.test',
    fetch,
  });
  assert(resolution.ok);
  assertEquals(Object.keys(resolution.caller).sort(), Object.keys(CALLER).sort());
});

for (
  const [name, header] of [
    ['is missing', undefined],
    ['is empty', ''],
    ['is not a bearer token', 'Basic dXNlcjpwYXNz'],
    ['is a bearer scheme without a token', 'Bearer '],
    ['holds two tokens', `Bearer ${TOKEN} ${TOKEN}`],
  ] as const
) {
  Deno.test(`is unauthorized without calling PostgREST when Authorization ${name}`, async () => {
    const { fetch, sent } = stubFetch(() => Response.json(CALLER));
    const error = failure(
      await resolveCaller(requestWith(header), { supabaseUrl: 'http://api.test', fetch }),
    );
    assertEquals([error.code, error.status], ['unauthorized', 401]);
    assertEquals(sent.length, 0);
  });
}

for (
  const [name, status, body, message] of [
    [
      'a revoked token (the pre-request hook)',
      401,
      { code: 'PGRST301', message: 'JWT revoked', details: null, hint: null },
      'JWT revoked',
    ],
    [
      'an expired token',
      401,
      { code: 'PGRST301', message: 'JWT expired', details: null, hint: null },
      'JWT expired',
    ],
    [
      'an anonymous key (no execute on whoami)',
      401,
      { code: '42501', message: 'permission denied for function whoami', details: null },
      "A signed-in user's access token is required.",
    ],
    [
      'a service key (no execute on whoami)',
      403,
      { code: '42501', message: 'permission denied for function whoami', details: null },
      "A signed-in user's access token is required.",
    ],
    [
      'a 401 without a JSON body',
      401,
      'Unauthorized',
      "A signed-in user's access token is required.",
    ],
  ] as const
) {
  Deno.test(`is unauthorized for ${name}`, async () => {
    const { fetch } = stubFetch(() =>
      typeof body === 'string' ? new Response(body, { status }) : Response.json(body, { status })
    );
    const error = failure(
      await resolveCaller(requestWith(`Bearer ${TOKEN}`), {
        supabaseUrl: 'http://api.test',
        fetch,
      }),
    );
    assertEquals([error.code, error.status, error.message], ['unauthorized', 401, message]);
    assert(!error.reason.includes(TOKEN), 'the reason never holds the token');
  });
}

for (
  const [name, answer] of [
    ['PostgREST answers 500', () => Response.json({ code: 'XX000' }, { status: 500 })],
    ['the gateway answers 502', () => new Response('Bad Gateway', { status: 502 })],
    ['PostgREST answers 503', () => Response.json({ code: 'PGRST000' }, { status: 503 })],
    ['whoami is not deployed (404)', () => Response.json({ code: 'PGRST202' }, { status: 404 })],
    ['the body is not JSON', () => new Response('<html>', { status: 200 })],
    ['the body has another shape', () => Response.json({ user_id: 'not-a-uuid' })],
    ['the network fails', () => Promise.reject(new TypeError('connection refused'))],
  ] as const
) {
  Deno.test(`is unavailable when ${name}`, async () => {
    const { fetch } = stubFetch(answer);
    const error = failure(
      await resolveCaller(requestWith(`Bearer ${TOKEN}`), {
        supabaseUrl: 'http://api.test',
        fetch,
      }),
    );
    assertEquals([error.code, error.status], ['unavailable', 503]);
  });
}

Deno.test('is unavailable when PostgREST does not answer in time', async () => {
  const fetch =
    ((_input: string | URL | Request, init?: RequestInit) =>
      new Promise<Response>((_resolve, reject) => {
        init?.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as typeof globalThis.fetch;
  const error = failure(
    await resolveCaller(requestWith(`Bearer ${TOKEN}`), {
      supabaseUrl: 'http://api.test',
      fetch,
      timeoutMs: 20,
    }),
  );
  assertEquals([error.code, error.reason], ['unavailable', 'whoami unreachable']);
});
