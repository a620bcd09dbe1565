// The rules around the matrix: the global settings row, api_tokens and revocation (the PostgREST
// pre-request hook), role administration, exactly one primary agent per service group, the 8 s
// statement timeout (57014), and the Supabase advisors and linter on the migrated schema.
import { randomUUID } from 'node:crypto';
import { REPO_ROOT, runDatabaseChecks } from '@capture/stack';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { useActors } from './helpers/actors.ts';
import { createOwnedGraph, insertAsService, type OwnedGraph, unique } from './helpers/fixtures.ts';
import { clientWithToken, mintAccessToken } from './helpers/tokens.ts';

const actors = useActors();

describe('settings_global', () => {
  it('is readable with settings:view and [] without it', async () => {
    const { A, nocap } = actors();
    const read = await A.client.from('settings_global').select('id,data');
    expect(read.data).toHaveLength(1);
    expect((await nocap.client.from('settings_global').select('id')).data).toEqual([]);
  });

  it('is changed by an admin only; a member with settings:edit gets 403 42501', async () => {
    const { A, admin } = actors();
    const byMember = await A.client
      .from('settings_global')
      .update({ data: { x: 1 } })
      .eq('id', 1);
    expect(byMember.status).toBe(403);
    expect(byMember.error?.code).toBe('42501');
    const byAdmin = await admin.client
      .from('settings_global')
      .update({ data: { env: { FROM_ADMIN: '1' } } })
      .eq('id', 1)
      .select('data');
    expect(byAdmin.data).toEqual([{ data: { env: { FROM_ADMIN: '1' } } }]);
  });

  it('cannot be inserted or deleted over the API, not even by an admin', async () => {
    const { admin } = actors();
    expect((await admin.client.from('settings_global').insert({ id: 1 })).status).toBe(403);
    expect((await admin.client.from('settings_global').delete().eq('id', 1)).status).toBe(403);
  });
});

describe('api_tokens and revocation', () => {
  it('refuses a token once its jti is revoked, with 401 PGRST301', async () => {
    const { stack, service, A } = actors();
    const jti = randomUUID();
    const token = await mintAccessToken(stack, { sub: A.id as string, jti });
    await insertAsService(service, 'api_tokens', {
      jti,
      user_id: A.id,
      label: 'oauth',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    const client = clientWithToken(stack, token);
    expect((await client.from('devices').select('uuid')).status).toBe(200);

    const revoked = await A.client
      .from('api_tokens')
      .update({ revoked_at: new Date().toISOString() })
      .eq('jti', jti)
      .select('jti,revoked');
    expect(revoked.data).toEqual([{ jti, revoked: true }]);

    const refused = await client.from('devices').select('uuid');
    expect(refused.status).toBe(401);
    expect(refused.error?.code).toBe('PGRST301');
    expect(refused.error?.message).toBe('JWT revoked');
    const rpcRefused = await client.rpc('entries_filtered_count', {});
    expect(rpcRefused.status).toBe(401);
  });

  it('still accepts tokens whose jti is unknown or not revoked', async () => {
    const { stack, A } = actors();
    const token = await mintAccessToken(stack, { sub: A.id as string, jti: randomUUID() });
    expect((await clientWithToken(stack, token).from('devices').select('uuid')).status).toBe(200);
  });

  it('shows a user only their own tokens and never lets them mint or un-revoke one', async () => {
    const { service, A, B } = actors();
    const jti = randomUUID();
    await insertAsService(service, 'api_tokens', {
      jti,
      user_id: A.id,
      label: 'oauth',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
      revoked_at: new Date().toISOString(),
    });
    expect((await A.client.from('api_tokens').select('jti').eq('jti', jti)).data).toHaveLength(1);
    expect((await B.client.from('api_tokens').select('jti').eq('jti', jti)).data).toEqual([]);
    const minted = await A.client.from('api_tokens').insert({
      jti: randomUUID(),
      user_id: A.id,
      label: 'mine',
      expires_at: new Date(Date.now() + 3600_000).toISOString(),
    });
    expect(minted.status).toBe(403);
    const unrevoke = await A.client.from('api_tokens').update({ revoked_at: null }).eq('jti', jti);
    expect(unrevoke.status).toBe(400);
    expect(unrevoke.error?.message).toContain('already revoked');
  });
});

describe('roles and assignments', () => {
  it('hides roles from members and shows them to admins', async () => {
    const { A, admin } = actors();
    expect((await A.client.from('roles').select('slug')).data).toEqual([]);
    const slugs = (await admin.client.from('roles').select('slug')).data?.map((r) => r.slug);
    expect(slugs).toEqual(expect.arrayContaining(['admin', 'member']));
  });

  it('shows a member their own role assignment only', async () => {
    const { A } = actors();
    const { data } = await A.client.from('user_roles').select('user_id');
    expect(data).toEqual([{ user_id: A.id }]);
  });

  it('refuses a member who tries to make themselves admin', async () => {
    const { A, admin } = actors();
    const adminRole = (await admin.client.from('roles').select('id').eq('slug', 'admin').single())
      .data as { id: string };
    const escalation = await A.client
      .from('user_roles')
      .insert({ user_id: A.id, role_id: adminRole.id });
    expect(escalation.status).toBe(403);
    expect(escalation.error?.code).toBe('42501');
  });

  it('lets an admin create a custom role whose capabilities take effect at once', async () => {
    const { service, admin, nocap } = actors();
    const role = (
      await admin.client
        .from('roles')
        .insert({ slug: unique('auditor').replaceAll('-', '_'), name: 'Auditor' })
        .select('id')
        .single()
    ).data as { id: string };
    const granted = await admin.client
      .from('role_capabilities')
      .insert({ role_id: role.id, section: 'devices', action: 'view' });
    expect(granted.error).toBeNull();
    const probe = await createOwnedGraph(service, nocap.id as string);
    const before = await nocap.client.from('devices').select('uuid').eq('uuid', probe.device.uuid);
    expect(before.data).toEqual([]);
    await admin.client.from('user_roles').insert({ user_id: nocap.id, role_id: role.id });
    const after = await nocap.client.from('devices').select('uuid').eq('uuid', probe.device.uuid);
    expect(after.data).toEqual([{ uuid: probe.device.uuid }]);
    const edit = await nocap.client
      .from('devices')
      .update({ name: 'x' })
      .eq('uuid', probe.device.uuid);
    expect(edit.status).toBe(403);
    // Clean up so later tests see nocap without capabilities again.
    await admin.client.from('user_roles').delete().eq('user_id', nocap.id);
  });
});

describe('service_group_agents: exactly one primary per group', () => {
  let graph: OwnedGraph;
  let secondAgent: Record<string, unknown>;
  beforeAll(async () => {
    const { service, A } = actors();
    graph = await createOwnedGraph(service, A.id as string);
    secondAgent = await insertAsService(service, 'assistant_agents', {
      slug: unique('second'),
      label: 'Second',
      model: 'm',
      owner_user_id: A.id,
    });
  });

  it('refuses a second primary in the same group', async () => {
    const { A } = actors();
    const first = await A.client
      .from('service_group_agents')
      .insert({ group_id: graph.group.id, agent_id: graph.agent.id, is_primary: true });
    expect(first.error).toBeNull();
    const second = await A.client
      .from('service_group_agents')
      .insert({ group_id: graph.group.id, agent_id: secondAgent.id, is_primary: true });
    expect(second.status).toBe(400);
    expect(second.error?.code).toBe('23P01');
  });

  it('refuses agents without a primary', async () => {
    const { A } = actors();
    const group = await insertAsService(actors().service, 'service_groups', {
      name: unique('g'),
      owner_user_id: A.id,
    });
    const orphan = await A.client
      .from('service_group_agents')
      .insert({ group_id: group.id, agent_id: graph.agent.id, is_primary: false });
    expect(orphan.status).toBe(400);
    expect(orphan.error?.code).toBe('23514');
    expect(orphan.error?.message).toContain('exactly one primary');
  });

  it('moves the primary with one upsert of both rows, and refuses removing it alone', async () => {
    const { A } = actors();
    const added = await A.client
      .from('service_group_agents')
      .insert({
        group_id: graph.group.id,
        agent_id: secondAgent.id,
        is_primary: false,
        position: 1,
      })
      .select()
      .single();
    expect(added.error).toBeNull();
    const rows = (
      await A.client.from('service_group_agents').select('*').eq('group_id', graph.group.id)
    ).data as Array<{ id: string; is_primary: boolean }>;
    const swapped = await A.client
      .from('service_group_agents')
      .upsert(rows.map((row) => ({ ...row, is_primary: !row.is_primary })))
      .select('agent_id,is_primary');
    expect(swapped.error).toBeNull();
    expect(swapped.data?.find((row) => row.is_primary)?.agent_id).toBe(secondAgent.id);
    const dropPrimary = await A.client
      .from('service_group_agents')
      .delete()
      .eq('group_id', graph.group.id)
      .eq('is_primary', true);
    expect(dropPrimary.status).toBe(400);
    expect(dropPrimary.error?.code).toBe('23514');
  });
});

describe('breakpoint_events transitions', () => {
  it('stamps resumed_at and resumed_by on resume and refuses a second resume', async () => {
    const { service, A } = actors();
    const graph = await createOwnedGraph(service, A.id as string);
    const held = await insertAsService(service, 'breakpoint_events', {
      device_uuid: graph.device.uuid,
      phase: 'request',
      pattern: 'api.*',
    });
    const resumed = await A.client
      .from('breakpoint_events')
      .update({ resolution: 'abort' })
      .eq('id', held.id)
      .select('resumed_at,resumed_by,resolution')
      .single();
    expect(resumed.data?.resumed_by).toBe(A.id);
    expect(resumed.data?.resumed_at).toEqual(expect.any(String));
    const again = await A.client
      .from('breakpoint_events')
      .update({ resolution: 'continue' })
      .eq('id', held.id);
    expect(again.status).toBe(400);
    expect(again.error?.message).toContain('already resumed');
  });
});

describe('statement timeout', () => {
  it('cancels a runaway query of an authenticated caller after 8 s with 57014', async () => {
    const { stack, A } = actors();
    const db = new pg.Client({ connectionString: stack.dbUrl });
    await db.connect();
    try {
      // A query no index can help, slower than 8 s: the shape 001 §7 warns about.
      // A cheap sibling made in the same transaction shows when PostgREST's reloaded schema
      // cache has both (a reload is atomic), without running the slow one early.
      await db.query(`create function public.runaway_probe() returns integer language sql
        as 'select count(*)::integer from generate_series(1, 1000000000)';
        create function public.runaway_probe_ready() returns integer language sql as 'select 1';
        notify pgrst, 'reload schema'`);
      const deadline = Date.now() + 20_000;
      while ((await A.client.rpc('runaway_probe_ready')).error) {
        if (Date.now() > deadline) throw new Error('PostgREST never loaded the probe functions');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const started = Date.now();
      const result = await A.client.rpc('runaway_probe');
      expect(result.error?.code).toBe('57014');
      expect(result.status).toBe(500);
      expect(Date.now() - started).toBeGreaterThanOrEqual(7_900);
    } finally {
      await db.query(
        'drop function if exists public.runaway_probe(), public.runaway_probe_ready()',
      );
      await db.end();
    }
  }, 60_000);
});

describe('Supabase advisors and linter', () => {
  it('find no security issue and no lint error in the migrated schema', async () => {
    const report = await runDatabaseChecks(REPO_ROOT, actors().stack.dbUrl);
    expect(report.securityFindings).toEqual([]);
    expect(report.lintErrors).toEqual([]);
    expect(report.passed).toBe(true);
  }, 120_000);
});
