// Edge functions behind the gateway: supabase-js functions.invoke, verify_jwt, unknown names.
import { describe, expect, it } from 'vitest';
import { clientFor, uniqueEmail, useFixtureStack } from './helpers/fixture-stack.ts';

const stack = useFixtureStack();

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

  it('answers 401 without a JWT when verify_jwt is on, as the edge runtime does', async () => {
    const response = await fetch(`${stack().apiUrl}/functions/v1/echo`, { method: 'POST' });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ msg: 'Error: Missing authorization header' });
  });

  it('answers 401 for a JWT with a bad signature', async () => {
    const forged = `${stack().keys.anonKey.slice(0, -4)}AAAA`;
    const response = await fetch(`${stack().apiUrl}/functions/v1/echo`, {
      headers: { Authorization: `Bearer ${forged}` },
    });
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ msg: 'Invalid JWT' });
  });

  it('runs a verify_jwt = false function with no token, keeping the sub-path', async () => {
    const response = await fetch(`${stack().apiUrl}/functions/v1/open-echo/deeper/path?x=1`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ open: true, path: '/open-echo/deeper/path' });
  });

  it('answers 404 Function not found for an unknown name and for _shared', async () => {
    for (const name of ['nope', '_shared']) {
      const response = await fetch(`${stack().apiUrl}/functions/v1/${name}`, {
        headers: {
          apikey: stack().keys.anonKey,
          Authorization: `Bearer ${stack().keys.anonKey}`,
        },
      });
      expect(response.status).toBe(404);
      expect(await response.text()).toBe('Function not found');
    }
  });
});
