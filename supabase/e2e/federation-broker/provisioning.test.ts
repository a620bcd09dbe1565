// 000 §4.5 provisioning end to end: identity by (client_id, partner sub) first, unused e-mails
// provisioned, collisions (case and Unicode variants included) never taken over, trusted
// linking with its refusals, and the capped role clamp surviving a refresh.
import { createClient } from '@supabase/supabase-js';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrokerStack,
  callBroker,
  codeOf,
  onboard,
  useBrokerStack,
} from './helpers/broker-stack.ts';
import {
  makePkcePair,
  type PartnerBackend,
  startPartnerBackend,
  uniqueId,
} from './helpers/partners.ts';

const broker = useBrokerStack();
let backend: PartnerBackend;

beforeAll(async () => {
  backend = await startPartnerBackend();
  const { data: role, error } = await broker()
    .service.from('roles')
    .insert({ slug: 'fed_viewer', name: 'Federated viewer' })
    .select('id')
    .single();
  if (error) throw error;
  await broker()
    .service.from('role_capabilities')
    .insert({ role_id: role.id, section: 'devices', action: 'view' });
  await onboard(broker(), {
    client_id: 'svc_plain',
    verify_mode: 'backend_bearer',
    backend_base_url: backend.url,
    capped_role: 'fed_viewer',
  });
  await onboard(broker(), {
    client_id: 'svc_trusted',
    verify_mode: 'backend_bearer',
    backend_base_url: backend.url,
    email_linking_trusted: true,
  });
  await onboard(broker(), {
    client_id: 'svc_unvouched',
    verify_mode: 'backend_bearer',
    backend_base_url: backend.url,
    emails_verified_by_partner: false,
  });
});

afterAll(async () => {
  await backend?.close();
});

async function handOff(clientId: string, user: { id: string; email?: string }) {
  const pkce = makePkcePair();
  const start = await callBroker(broker(), 'start', {
    client_id: clientId,
    code_challenge: pkce.code_challenge,
    code_challenge_method: 'S256',
    backend_token: backend.signIn(user),
  });
  expect(start.status).toBe(200);
  const exchange = await callBroker(broker(), 'exchange', {
    code: codeOf(start),
    code_verifier: pkce.code_verifier,
  });
  expect(exchange.status).toBe(200);
  return exchange.body as {
    user_id: string;
    email: string;
    access_token: string;
    refresh_token: string;
  };
}

async function existingAccount(
  fixture: BrokerStack,
  email: string,
  options: { confirmed?: boolean; admin?: boolean } = {},
) {
  const { data, error } = await fixture.service.auth.admin.createUser({
    email,
    password: 'existing-pass-1',
    email_confirm: options.confirmed ?? true,
  });
  if (error || !data.user) throw error ?? new Error('no user');
  if (options.admin) {
    const { data: admin } = await fixture.service
      .from('roles')
      .select('id')
      .eq('slug', 'admin')
      .single();
    await fixture.service.from('user_roles').insert({ user_id: data.user.id, role_id: admin?.id });
  }
  return data.user.id;
}

async function accountEmail(userId: string) {
  const { data } = await broker().service.auth.admin.getUserById(userId);
  return data.user?.email;
}

describe('provisioning rules (000 §4.5)', () => {
  it('rule 1: provisions an unused e-mail under that address', async () => {
    const email = `${uniqueId('fresh')}@example.com`;
    const session = await handOff('svc_plain', { id: uniqueId('sub'), email });
    expect(await accountEmail(session.user_id)).toBe(email);
    expect(session.email).toBe(email);
  });

  it('resolves the partner identity first: the same sub with a new e-mail keeps its account', async () => {
    const sub = uniqueId('stable');
    const first = await handOff('svc_plain', { id: sub, email: `${uniqueId('old')}@example.com` });
    const second = await handOff('svc_plain', { id: sub, email: `${uniqueId('new')}@example.com` });
    expect(second.user_id).toBe(first.user_id);
  });

  it.each([
    ['the same address', (email: string) => email],
    ['a case variant', (email: string) => email.toUpperCase()],
    ['a variant with surrounding spaces', (email: string) => `  ${email} `],
  ])('rule 2: a collision with %s creates a fresh synthetic account', async (_name, variant) => {
    const email = `${uniqueId('victim')}@example.com`;
    const victimId = await existingAccount(broker(), email);
    const session = await handOff('svc_plain', { id: uniqueId('sub'), email: variant(email) });
    expect(session.user_id).not.toBe(victimId);
    expect(await accountEmail(session.user_id)).toMatch(
      /^fed\.svc_plain\.[0-9a-f]{32}@federated\.invalid$/,
    );
    expect(await accountEmail(victimId)).toBe(email);
  });

  it.each([
    ['a Kelvin sign', (email: string) => email.replace(/^k/, '\u212a')],
    ['a dotless i', (email: string) => email.replace('i', '\u0131')],
    ['fullwidth letters', (email: string) => email.replace(/^k/, '\uff4b')],
  ])(
    'never links a Unicode look-alike with %s, even for a trusted client',
    async (_name, variant) => {
      const email = `kim${uniqueId('').replace(/_/g, '')}@example.com`;
      const victimId = await existingAccount(broker(), email);
      const session = await handOff('svc_trusted', { id: uniqueId('sub'), email: variant(email) });
      expect(session.user_id).not.toBe(victimId);
      expect(await accountEmail(session.user_id)).toMatch(/@federated\.invalid$/);
    },
  );

  it('rule 3: a trusted client links a collision to the existing confirmed member account', async () => {
    const email = `${uniqueId('linkme')}@example.com`;
    const memberId = await existingAccount(broker(), email);
    const session = await handOff('svc_trusted', {
      id: uniqueId('sub'),
      email: email.toUpperCase(),
    });
    expect(session.user_id).toBe(memberId);
  });

  it('rule 3: never links an admin account', async () => {
    const email = `${uniqueId('admin')}@example.com`;
    const adminId = await existingAccount(broker(), email, { admin: true });
    const session = await handOff('svc_trusted', { id: uniqueId('sub'), email });
    expect(session.user_id).not.toBe(adminId);
  });

  it("rule 3: never links another partner's federated account", async () => {
    const email = `${uniqueId('other-partner')}@example.com`;
    const theirs = await handOff('svc_plain', { id: uniqueId('sub'), email });
    const session = await handOff('svc_trusted', { id: uniqueId('sub'), email });
    expect(session.user_id).not.toBe(theirs.user_id);
  });

  it('rule 3: a linked account made an admin later is no longer reachable through the partner', async () => {
    const email = `${uniqueId('promoted')}@example.com`;
    const memberId = await existingAccount(broker(), email);
    const sub = uniqueId('sub');
    expect((await handOff('svc_trusted', { id: sub, email })).user_id).toBe(memberId);
    const { data: admin } = await broker()
      .service.from('roles')
      .select('id')
      .eq('slug', 'admin')
      .single();
    const { error } = await broker()
      .service.from('user_roles')
      .insert({ user_id: memberId, role_id: admin?.id });
    expect(error).toBeNull();
    const again = await handOff('svc_trusted', { id: sub, email });
    expect(again.user_id).not.toBe(memberId);
    expect(await accountEmail(again.user_id)).toMatch(/@federated\.invalid$/);
  });

  it('rule 3: never links an account whose address was never confirmed (pre-hijack)', async () => {
    const email = `${uniqueId('unconfirmed')}@example.com`;
    const squatter = await existingAccount(broker(), email, { confirmed: false });
    const session = await handOff('svc_trusted', { id: uniqueId('sub'), email });
    expect(session.user_id).not.toBe(squatter);
  });

  it('treats an e-mail the partner marks unverified as absent (synthetic address)', async () => {
    const session = await handOff('svc_plain', {
      id: uniqueId('sub'),
      email: `${uniqueId('unverified')}@example.com`,
      email_verified: false,
    } as never);
    expect(await accountEmail(session.user_id)).toMatch(/@federated\.invalid$/);
  });
});

describe('which e-mails count as verified (reference A)', () => {
  it('ignores an e-mail without email_verified from a client not marked as verifying e-mails', async () => {
    const email = `${uniqueId('unclaimed')}@example.com`;
    const session = await handOff('svc_unvouched', { id: uniqueId('sub'), email });
    expect(await accountEmail(session.user_id)).toMatch(/@federated\.invalid$/);
  });

  it('uses an e-mail the partner marks email_verified: true', async () => {
    const email = `${uniqueId('claimed')}@example.com`;
    const session = await handOff('svc_unvouched', {
      id: uniqueId('sub'),
      email,
      email_verified: true,
    } as never);
    expect(await accountEmail(session.user_id)).toBe(email);
  });
});

describe('capped role (000 §4.5 rule 4)', () => {
  it('clamps a provisioned user to capped_role, and the clamp holds after a refresh', async () => {
    const session = await handOff('svc_plain', {
      id: uniqueId('capped'),
      email: `${uniqueId('capped')}@example.com`,
    });
    const { data: roles } = await broker()
      .service.from('user_roles')
      .select('roles(slug)')
      .eq('user_id', session.user_id);
    expect(roles?.map((row) => (row.roles as unknown as { slug: string }).slug)).toEqual([
      'fed_viewer',
    ]);

    const app = createClient(broker().stack.apiUrl, broker().stack.keys.anonKey, {
      auth: { persistSession: false, autoRefreshToken: false },
    });
    await app.auth.setSession({
      access_token: session.access_token,
      refresh_token: session.refresh_token,
    });
    const { data: refreshed, error } = await app.auth.refreshSession();
    expect(error).toBeNull();
    const claims = decodeJwt(String(refreshed.session?.access_token));
    expect(claims.app_metadata).toMatchObject({
      federation: { login_source: 'svc_plain', capped_role: 'fed_viewer' },
    });
    expect(claims.role).toBe('authenticated');
    const canEdit = await app.rpc('has_capability', { section: 'devices', action: 'edit' });
    const canView = await app.rpc('has_capability', { section: 'devices', action: 'view' });
    expect([canView.data, canEdit.data]).toEqual([true, false]);
  });

  it('refuses to grant a provisioned user any role but its capped role', async () => {
    const session = await handOff('svc_plain', {
      id: uniqueId('escalate'),
      email: `${uniqueId('escalate')}@example.com`,
    });
    const { data: admin } = await broker()
      .service.from('roles')
      .select('id')
      .eq('slug', 'admin')
      .single();
    const { error } = await broker()
      .service.from('user_roles')
      .insert({ user_id: session.user_id, role_id: admin?.id });
    expect(error?.code).toBe('42501');
  });
});
