import { beforeAll, describe, expect, it } from 'vitest';
import { decideRestCredentials, translateAuthorization } from '../src/gateway/credentials.ts';
import { createProjectKeys, type ProjectKeys } from '../src/keys.ts';

let keys: ProjectKeys;
beforeAll(async () => {
  keys = await createProjectKeys();
});

const USER_TOKEN = 'eyJ.user.token';

describe('REST credentials (001 §5.3)', () => {
  it('accepts an access token sent in both headers', () => {
    expect(decideRestCredentials(USER_TOKEN, `Bearer ${USER_TOKEN}`, keys)).toEqual({
      ok: true,
      authorization: `Bearer ${USER_TOKEN}`,
    });
  });

  it.each([
    ['only in Authorization', undefined, `Bearer ${USER_TOKEN}`],
    ['only in apikey', USER_TOKEN, undefined],
    ['different tokens in the two headers', USER_TOKEN, 'Bearer eyJ.other.token'],
    ['an unknown sb_ key alone', 'sb_publishable_wrong', undefined],
  ])('refuses an access token %s', (_case, apikey, authorization) => {
    const decision = decideRestCredentials(apikey, authorization, keys);
    expect(decision.ok).toBe(false);
  });

  it('lets the anon key in apikey carry a user token in Authorization', () => {
    expect(decideRestCredentials(keys.anonKey, `Bearer ${USER_TOKEN}`, keys)).toEqual({
      ok: true,
      authorization: `Bearer ${USER_TOKEN}`,
    });
  });

  it.each([
    ['publishable key', () => keys.publishableKey, () => keys.anonKey],
    ['secret key', () => keys.secretKey, () => keys.serviceRoleKey],
    ['legacy anon key', () => keys.anonKey, () => keys.anonKey],
    ['legacy service key', () => keys.serviceRoleKey, () => keys.serviceRoleKey],
  ])('maps a lone %s in apikey to its role JWT', (_case, apikey, expected) => {
    expect(decideRestCredentials(apikey(), undefined, keys)).toEqual({
      ok: true,
      authorization: `Bearer ${expected()}`,
    });
  });
});

describe('Kong authorization translation', () => {
  it('keeps a JWT already in Authorization', () => {
    expect(translateAuthorization(keys.publishableKey, `Bearer ${USER_TOKEN}`, keys)).toBe(
      `Bearer ${USER_TOKEN}`,
    );
  });

  it('replaces an sb_ bearer with the JWT of the apikey', () => {
    expect(translateAuthorization(keys.secretKey, `Bearer ${keys.secretKey}`, keys)).toBe(
      `Bearer ${keys.serviceRoleKey}`,
    );
  });

  it('copies a legacy JWT apikey into a missing Authorization', () => {
    expect(translateAuthorization(USER_TOKEN, undefined, keys)).toBe(`Bearer ${USER_TOKEN}`);
  });

  it('adds nothing when there is no key at all', () => {
    expect(translateAuthorization(undefined, undefined, keys)).toBeUndefined();
  });
});
