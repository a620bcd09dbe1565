// Edge functions behind the gateway: supabase-js functions.invoke, verify_jwt, unknown names,
// and the relay's own refusals in hosted Supabase's shapes (docs/local-stack.md "Functions").
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, FunctionsHttpError, type SupabaseClient } from '@supabase/supabase-js';
import { SignJWT } from 'jose';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientFor,
  FIXTURE_PROJECT,
  type FixtureStack,
  startFixtureStack,
  uniqueEmail,
  useFixtureStack,
} from './helpers/fixture-stack.ts';

const stack = useFixtureStack();

/** What supabase-js hands back for a refusal: a FunctionsHttpError whose context is the Response. */
async function refusalOf(error: unknown) {
  expect(error).toBeInstanceOf(FunctionsHttpError);
  const response = (error as FunctionsHttpError).context as Response;
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    sbErrorCode: response.headers.get('sb-error-code'),
    body: await response.json(),
  };
}

/** A refusal as hosted Supabase sends it: `{code, message}`, the code also in `sb-error-code`. */
function hostedRefusal(status: number, code: string, message: string) {
  return {
    status,
    contentType: 'application/json',
    sbErrorCode: code,
    body: { code, message },
  };
}

/** A caller that sends no credentials at all (a webhook, curl), still through functions.invoke. */
function clientWithoutCredentials(): SupabaseClient {
  return createClient(stack().apiUrl, stack().keys.publishableKey, {
    auth: { persistSession: false, autoRefreshToken: false, detectSessionInUrl: false },
    global: {
      fetch: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.delete('apikey');
        headers.delete('authorization');
        return fetch(input, { ...init, headers });
      },
    },
  });
}

/** A JWT with this header and an unchecked signature. */
function unsignedJwt(header: Record<string, unknown>): string {
  const encode = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${encode(header)}.${encode({ role: 'anon' })}.c2lnbmF0dXJl`;
}

describe('functions', () => {
  it('invokes a function with the anon key and gives it the edge runtime environment', async () => {
    const { data, error } = await clientFor(stack()).functions.invoke('echo', {
      body: { hello: 'world' },
    });
    expect(error).toBeNull();
    expect(data).toMatchObject({
      greeting: 'hello from _shared',
      method: 'POST',
      path: '/echo',
      authorization: `Bearer ${stack().keys.anonKey}`,
      body: '{"hello":"world"}',
      env: {
        SUPABASE_URL: stack().apiUrl,
        has_anon_key: true,
        has_service_role_key: true,
        has_db_url: true,
        publishable_keys: JSON.stringify({ default: stack().keys.publishableKey }),
        FIXTURE_SECRET: 'from-dotenv',
      },
    });
  });

  it("passes a signed-in user's JWT through to the function", async () => {
    const client = clientFor(stack());
    const { data: signedUp } = await client.auth.signUp({
      email: uniqueEmail('fn'),
      password: 'function-user-1',
    });
    const { data } = await client.functions.invoke('echo', { method: 'GET' });
    expect(data.authorization).toBe(`Bearer ${signedUp.session?.access_token}`);
    expect(data.path).toBe('/echo');
  });

  it('runs a verify_jwt = false function with no token, keeping the sub-path', async () => {
    const response = await fetch(`${stack().apiUrl}/functions/v1/open-echo/deeper/path?x=1`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ open: true, path: '/open-echo/deeper/path' });
  });

  it.each(['nope', '_shared'])(
    'answers 404 NOT_FOUND in JSON for the unknown function %s, as hosted does',
    async (name) => {
      const { data, error } = await clientFor(stack()).functions.invoke(name);
      expect(data).toBeNull();
      expect(await refusalOf(error)).toEqual(
        hostedRefusal(404, 'NOT_FOUND', 'Requested function was not found'),
      );
    },
  );
});

describe('verify_jwt refusals, as hosted Supabase words them', () => {
  it('answers 401 UNAUTHORIZED_NO_AUTH_HEADER to a call with no credentials', async () => {
    const { error } = await clientWithoutCredentials().functions.invoke('echo');
    expect(await refusalOf(error)).toEqual(
      hostedRefusal(401, 'UNAUTHORIZED_NO_AUTH_HEADER', 'Missing authorization header'),
    );
  });

  it.each([
    {
      what: 'a scheme other than Bearer',
      authorization: () => `Basic ${Buffer.from('user:pass').toString('base64')}`,
      code: 'UNAUTHORIZED_INVALID_JWT_FORMAT',
      message: "Auth header is not 'Bearer {token}'",
    },
    {
      what: 'a malformed JWT',
      authorization: () => 'Bearer not-a-jwt',
      code: 'UNAUTHORIZED_INVALID_JWT_FORMAT',
      message: 'Invalid JWT',
    },
    {
      what: 'a JWT whose header names no algorithm',
      authorization: () => `Bearer ${unsignedJwt({ typ: 'JWT' })}`,
      code: 'UNAUTHORIZED_INVALID_JWT_FORMAT',
      message: 'Invalid JWT',
    },
    {
      what: 'an HS256 JWT with a bad signature',
      authorization: () => `Bearer ${stack().keys.anonKey.slice(0, -4)}AAAA`,
      code: 'UNAUTHORIZED_LEGACY_JWT',
      message: 'Invalid JWT',
    },
    {
      what: 'an ES256 JWT (the stack has no asymmetric keys)',
      authorization: () => `Bearer ${unsignedJwt({ alg: 'ES256', typ: 'JWT' })}`,
      code: 'UNAUTHORIZED_ASYMMETRIC_JWT',
      message: 'Invalid JWT',
    },
    {
      what: 'an unsigned alg=none JWT',
      authorization: () => `Bearer ${unsignedJwt({ alg: 'none', typ: 'JWT' })}`,
      code: 'UNAUTHORIZED_UNSUPPORTED_TOKEN_ALGORITHM',
      message: 'Unsupported JWT algorithm none',
    },
  ])('answers 401 $code to $what', async ({ authorization, code, message }) => {
    const { error } = await clientFor(stack()).functions.invoke('echo', {
      headers: { Authorization: authorization() },
    });
    expect(await refusalOf(error)).toEqual(hostedRefusal(401, code, message));
  });

  it('answers 401 UNAUTHORIZED_LEGACY_JWT to an expired JWT signed with the project secret', async () => {
    const expired = await new SignJWT({ role: 'anon', iss: 'supabase-demo' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(new TextEncoder().encode(stack().keys.jwtSecret));
    const { error } = await clientFor(stack()).functions.invoke('echo', {
      headers: { Authorization: `Bearer ${expired}` },
    });
    expect(await refusalOf(error)).toEqual(
      hostedRefusal(401, 'UNAUTHORIZED_LEGACY_JWT', 'Invalid JWT'),
    );
  });

  it('lets a browser read sb-error-code on a refusal', async () => {
    const { error } = await clientFor(stack()).functions.invoke('echo', {
      headers: { Authorization: 'Bearer not-a-jwt' },
    });
    const response = (error as FunctionsHttpError).context as Response;
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expect(response.headers.get('access-control-expose-headers')).toBe('sb-error-code');
  });
});

describe('a function that fails at boot', () => {
  // Its own project (the fixture plus one broken function), so the shared fixture stack does not
  // log a boot failure on every start.
  let projectDir: string;
  let fixture: FixtureStack | undefined;

  beforeAll(async () => {
    projectDir = mkdtempSync(join(tmpdir(), 'stack-fn-boot-'));
    cpSync(FIXTURE_PROJECT, projectDir, { recursive: true });
    const dir = join(projectDir, 'supabase', 'functions', 'boot-crash');
    mkdirSync(dir);
    writeFileSync(
      join(dir, 'index.ts'),
      "// Test function: throws before it serves.\nthrow new Error('fails at boot');\n",
    );
    // Its boot failure is logged at error level by design; keep the test output quiet.
    fixture = await startFixtureStack({
      projectDir,
      logger: pino({ level: process.env.STACK_LOG_LEVEL ?? 'fatal' }),
    });
  });

  afterAll(async () => {
    await fixture?.dispose();
    rmSync(projectDir, { recursive: true, force: true });
  });

  it('answers 503 BOOT_ERROR in JSON, as hosted does', async () => {
    const client = clientFor((fixture as FixtureStack).stack);
    const { data, error } = await client.functions.invoke('boot-crash');
    expect(data).toBeNull();
    expect(await refusalOf(error)).toEqual(
      hostedRefusal(503, 'BOOT_ERROR', 'Function failed to start (please check logs)'),
    );
  });
});
