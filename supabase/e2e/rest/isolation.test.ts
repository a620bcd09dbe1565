// 001 §5 rule 5 and §7 through supabase-js: for every table, what an admin, scoped members A and B,
// a user without capabilities and anon may read, insert, update and delete. A missing view
// capability reads [] (200); a missing edit capability is a 403 with code 42501; rows outside the
// caller's scope are invisible (writes touch 0 rows); anon is refused with 401.
import type { SupabaseClient } from '@supabase/supabase-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Actor, useActors } from './helpers/actors.ts';
import {
  createOwnedGraph,
  insertAsService,
  type OwnedGraph,
  type Row,
  unique,
} from './helpers/fixtures.ts';

interface TableSpec {
  table: string;
  /** A row the owner of `graph` holds in this table, written by the service. */
  fixture(service: SupabaseClient, graph: OwnedGraph): Promise<Row>;
  /** A new row for this table inside `graph` (to insert through the API). */
  candidate(graph: OwnedGraph): Row;
  /** The columns that identify a row. */
  key: string[];
  /** A change an editor may make, or null when the table is immutable over the API. */
  patch: Row | null;
  /** For immutable tables: a well-formed change that must still be refused. */
  refusedPatch?: Row;
}

const pick = (row: Row, columns: string[]) =>
  Object.fromEntries(columns.map((column) => [column, row[column]]));

const tables: TableSpec[] = [
  {
    table: 'devices',
    fixture: (service, g) =>
      insertAsService(service, 'devices', {
        name: unique('d'),
        owner_user_id: g.device.owner_user_id,
      }),
    candidate: (g) => ({ name: unique('d'), owner_user_id: g.device.owner_user_id }),
    key: ['uuid'],
    patch: { name: 'renamed' },
  },
  {
    table: 'device_status',
    fixture: async (service, g) => {
      const device = await insertAsService(service, 'devices', {
        name: unique('d'),
        owner_user_id: g.device.owner_user_id,
      });
      return insertAsService(service, 'device_status', { device_uuid: device.uuid, source: 'pac' });
    },
    candidate: (g) => ({ device_uuid: g.device.uuid, vpn_state: 'connected', source: 'vpn' }),
    key: ['device_uuid'],
    patch: { vpn_state: 'disconnected' },
  },
  {
    table: 'entries',
    fixture: (service, g) =>
      insertAsService(service, 'entries', {
        device_uuid: g.device.uuid,
        payload: { host: 'fixture.example', path: '/', url: 'https://fixture.example/' },
      }),
    candidate: (g) => ({
      device_uuid: g.device.uuid,
      payload: { host: 'import.example', path: '/har', url: 'https://import.example/har' },
    }),
    key: ['id', 'ts'],
    patch: null,
    refusedPatch: { kind: 'error' },
  },
  {
    table: 'settings_device',
    fixture: async (service, g) => {
      const device = await insertAsService(service, 'devices', {
        name: unique('d'),
        owner_user_id: g.device.owner_user_id,
      });
      return insertAsService(service, 'settings_device', { device_uuid: device.uuid, data: {} });
    },
    candidate: (g) => ({ device_uuid: g.device.uuid, data: { env: { A: '1' } } }),
    key: ['device_uuid'],
    patch: { data: { env: { CHANGED: '1' } } },
  },
  {
    table: 'breakpoint_events',
    fixture: (service, g) =>
      insertAsService(service, 'breakpoint_events', {
        device_uuid: g.device.uuid,
        phase: 'request',
        pattern: '*',
      }),
    candidate: (g) => ({ device_uuid: g.device.uuid, phase: 'response', pattern: 'api.*' }),
    key: ['id'],
    patch: { resolution: 'continue' },
  },
  {
    table: 'workspaces',
    fixture: (service, g) =>
      insertAsService(service, 'workspaces', {
        name: unique('w'),
        owner_user_id: g.workspace.owner_user_id,
      }),
    candidate: (g) => ({ name: unique('w'), owner_user_id: g.workspace.owner_user_id }),
    key: ['id'],
    patch: { description: 'changed' },
  },
  {
    table: 'workspace_tabs',
    fixture: (service, g) =>
      insertAsService(service, 'workspace_tabs', { workspace_id: g.workspace.id, title: 'tab' }),
    candidate: (g) => ({ workspace_id: g.workspace.id, title: 'new tab', position: 3 }),
    key: ['id'],
    patch: { title: 'renamed tab' },
  },
  {
    table: 'workspace_entries',
    fixture: async (service, g) => {
      const workspace = await insertAsService(service, 'workspaces', {
        name: unique('w'),
        owner_user_id: g.workspace.owner_user_id,
      });
      return insertAsService(service, 'workspace_entries', {
        workspace_id: workspace.id,
        entry_id: g.entry.id,
        entry_ts: g.entry.ts,
      });
    },
    candidate: (g) => ({
      workspace_id: g.workspace.id,
      entry_id: g.entry.id,
      entry_ts: g.entry.ts,
    }),
    key: ['workspace_id', 'entry_id'],
    patch: { note: 'why this one' },
  },
  {
    table: 'tags',
    fixture: (service, g) =>
      insertAsService(service, 'tags', { name: unique('t'), owner_user_id: g.tag.owner_user_id }),
    candidate: (g) => ({ name: unique('t'), owner_user_id: g.tag.owner_user_id }),
    key: ['id'],
    patch: { color: '#123456' },
  },
  {
    table: 'entry_tags',
    fixture: async (service, g) => {
      const tag = await insertAsService(service, 'tags', {
        name: unique('t'),
        owner_user_id: g.tag.owner_user_id,
      });
      return insertAsService(service, 'entry_tags', {
        tag_id: tag.id,
        entry_id: g.entry.id,
        entry_ts: g.entry.ts,
      });
    },
    candidate: (g) => ({ tag_id: g.tag.id, entry_id: g.entry.id, entry_ts: g.entry.ts }),
    key: ['tag_id', 'entry_id'],
    patch: null,
    refusedPatch: { tagged_at: new Date(0).toISOString() },
  },
  {
    table: 'service_groups',
    fixture: (service, g) =>
      insertAsService(service, 'service_groups', {
        name: unique('g'),
        owner_user_id: g.group.owner_user_id,
      }),
    candidate: (g) => ({ name: unique('g'), owner_user_id: g.group.owner_user_id }),
    key: ['id'],
    patch: { ssl_proxy_domains: ['*.changed.example'] },
  },
  {
    table: 'service_group_agents',
    fixture: async (service, g) => {
      const group = await insertAsService(service, 'service_groups', {
        name: unique('g'),
        owner_user_id: g.group.owner_user_id,
      });
      return insertAsService(service, 'service_group_agents', {
        group_id: group.id,
        agent_id: g.agent.id,
        is_primary: true,
      });
    },
    candidate: (g) => ({ group_id: g.group.id, agent_id: g.agent.id, is_primary: true }),
    key: ['id'],
    patch: { position: 4 },
  },
  {
    table: 'assistant_agents',
    fixture: (service, g) =>
      insertAsService(service, 'assistant_agents', {
        slug: unique('a'),
        label: 'x',
        model: 'm',
        owner_user_id: g.agent.owner_user_id,
      }),
    candidate: (g) => ({
      slug: unique('a'),
      label: 'x',
      model: 'm',
      owner_user_id: g.agent.owner_user_id,
    }),
    key: ['id'],
    patch: { label: 'changed' },
  },
];

const actors = useActors();
const graphs = {} as Record<'A' | 'B' | 'admin', OwnedGraph>;

beforeAll(async () => {
  const { service, A, B, admin } = actors();
  graphs.A = await createOwnedGraph(service, A.id as string);
  graphs.B = await createOwnedGraph(service, B.id as string);
  graphs.admin = await createOwnedGraph(service, admin.id as string);
});

async function readKeys(actor: Actor, spec: TableSpec, rows: Row[]) {
  const { client } = actor;
  let query = client.from(spec.table).select(spec.key.join(','));
  // Narrow to the fixtures so the answer does not depend on other rows.
  const first = spec.key[0] as string;
  query = query.in(
    first,
    rows.map((row) => row[first] as string),
  );
  return query;
}

function expectPermissionError(result: { status: number; error: { code: string } | null }) {
  expect(result.status).toBe(403);
  expect(result.error?.code).toBe('42501');
}

function expectAnonRefused(result: { status: number; error: { code: string } | null }) {
  expect(result.status).toBe(401);
  expect(result.error?.code).toBe('42501');
}

describe.each(tables)('table $table', (spec) => {
  let rowOfA: Row;
  let rowOfB: Row;
  beforeAll(async () => {
    const { service } = actors();
    rowOfA = await spec.fixture(service, graphs.A);
    rowOfB = await spec.fixture(service, graphs.B);
  });

  it('shows members only their own rows and the admin every row', async () => {
    const { A, B, admin } = actors();
    const both = [rowOfA, rowOfB];
    const seenBy = async (actor: Actor) => {
      const result = await readKeys(actor, spec, both);
      expect(result.status).toBe(200);
      return (result.data as unknown as Row[]).map((row) => JSON.stringify(pick(row, spec.key)));
    };
    const keyOf = (row: Row) => JSON.stringify(pick(row, spec.key));
    expect(await seenBy(A)).toEqual([keyOf(rowOfA)]);
    expect(await seenBy(B)).toEqual([keyOf(rowOfB)]);
    expect((await seenBy(admin)).sort()).toEqual([keyOf(rowOfA), keyOf(rowOfB)].sort());
  });

  it('reads [] with 200 for a user without the view capability', async () => {
    const result = await readKeys(actors().nocap, spec, [rowOfA, rowOfB]);
    expect(result.status).toBe(200);
    expect(result.data).toEqual([]);
  });

  it('refuses anon reads with 401', async () => {
    expectAnonRefused(await readKeys(actors().anon, spec, [rowOfA]));
  });

  it("lets a member insert into their own scope and refuses a row in another user's scope", async () => {
    const { A } = actors();
    const own = await A.client.from(spec.table).insert(spec.candidate(graphs.A)).select();
    expect(own.error).toBeNull();
    expect(own.status).toBe(201);
    expectPermissionError(await A.client.from(spec.table).insert(spec.candidate(graphs.B)));
  });

  it('refuses inserts without the edit capability (403) and from anon (401)', async () => {
    const { nocap, anon } = actors();
    expectPermissionError(await nocap.client.from(spec.table).insert(spec.candidate(graphs.A)));
    expectAnonRefused(await anon.client.from(spec.table).insert(spec.candidate(graphs.A)));
  });

  if (spec.patch) {
    const patch = spec.patch;
    it("lets a member update their own row; another user's row is untouched", async () => {
      const { A, B } = actors();
      const own = await A.client
        .from(spec.table)
        .update(patch)
        .match(pick(rowOfA, spec.key))
        .select();
      expect(own.error).toBeNull();
      expect(own.data).toHaveLength(1);
      const other = await B.client
        .from(spec.table)
        .update(patch)
        .match(pick(rowOfA, spec.key))
        .select();
      expect(other.status).toBe(200);
      expect(other.data).toEqual([]);
    });

    it('refuses updates without the edit capability (403) and from anon (401)', async () => {
      const { nocap, anon } = actors();
      expectPermissionError(
        await nocap.client.from(spec.table).update(patch).match(pick(rowOfB, spec.key)),
      );
      expectAnonRefused(
        await anon.client.from(spec.table).update(patch).match(pick(rowOfB, spec.key)),
      );
    });
  } else {
    it('refuses updates from everyone but the service: the rows are immutable', async () => {
      const { A, admin } = actors();
      for (const actor of [A, admin]) {
        expectPermissionError(
          await actor.client
            .from(spec.table)
            .update(spec.refusedPatch ?? {})
            .match(pick(rowOfA, spec.key)),
        );
      }
    });
  }

  it("lets a member delete only their own rows; the admin deletes anyone's", async () => {
    const { A, admin } = actors();
    const notMine = await A.client.from(spec.table).delete().match(pick(rowOfB, spec.key)).select();
    expect(notMine.status).toBe(200);
    expect(notMine.data).toEqual([]);
    const mine = await A.client.from(spec.table).delete().match(pick(rowOfA, spec.key)).select();
    expect(mine.data).toHaveLength(1);
    const byAdmin = await admin.client
      .from(spec.table)
      .delete()
      .match(pick(rowOfB, spec.key))
      .select();
    expect(byAdmin.data).toHaveLength(1);
  });

  it('refuses deletes without the edit capability (403) and from anon (401)', async () => {
    const { nocap, anon } = actors();
    expectPermissionError(
      await nocap.client.from(spec.table).delete().match(pick(rowOfA, spec.key)),
    );
    expectAnonRefused(await anon.client.from(spec.table).delete().match(pick(rowOfA, spec.key)));
  });
});
