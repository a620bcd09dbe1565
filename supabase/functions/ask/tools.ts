// The assistant's tools (001 §4.3): narrow, parameterised reads of the MCP server's data tools
// (devices, traffic summary, request inspection, stats, status) and the search RPCs, each run as
// the caller under RLS, plus one write that only proposes (tagging a request, tags:edit, own
// devices only). Queries follow 001 §4.2: native columns, narrow projections, a payload only
// for one row by id, search through the RPCs. Offered per the caller's capabilities; the
// database checks again on every call.
// deno-lint-ignore no-import-prefix -- pinned npm: specifiers are the project's import rule
import { z } from 'npm:zod@4.6.7';
import type { Caller } from '../_shared/caller.ts';
import { deviceLink, requestLink } from './dashboard-links.ts';
import { type CallerClient, dataOf } from './data-api.ts';

export interface ToolContext {
  db: CallerClient;
  caller: Caller;
  /** The model's tool call id: the idempotency key of a proposal. */
  callId: string;
  dashboardUrl: string;
  /** {base_url}/functions/v1/ask, where a proposal is confirmed (+ /confirm). */
  askUrl: string;
  signal: AbortSignal;
}

/** A row an answer rests on, with its dashboard link. */
export interface DataRef {
  label: string;
  url: string;
}

export interface ToolResult {
  output: unknown;
  refs: DataRef[];
  /** True when the read found nothing (the answer then says the data does not hold it). */
  empty: boolean;
  artifact?: Record<string, unknown>;
}

export interface AssistantTool {
  name: string;
  description: string;
  /** Capability the caller must hold for the tool to be offered (001 §5.5). */
  requires: `${string}:${'view' | 'edit'}`;
  write: boolean;
  args: z.ZodObject;
  label(args: Record<string, unknown>): string;
  run(context: ToolContext, args: Record<string, unknown>): Promise<ToolResult>;
}

const STATUS_CLASSES: Record<string, number> = {
  '1xx': 1,
  '2xx': 2,
  '3xx': 3,
  '4xx': 4,
  '5xx': 5,
  none: 0,
};

const deviceUrl = (context: ToolContext, uuid: string) => deviceLink(context.dashboardUrl, uuid);
const requestUrl = (context: ToolContext, id: number | string) =>
  requestLink(context.dashboardUrl, id);

const isoDate = z.iso.datetime({ offset: true });

const listDevices: AssistantTool = {
  name: 'list_devices',
  description: 'The devices the user can see (their own; every device for administrators): ' +
    'uuid, name, OS, whether online (seen within 150 s), last seen, live status.',
  requires: 'devices:view',
  write: false,
  args: z.object({ online_only: z.boolean().optional() }),
  label: () => 'Listing devices',
  async run(context, args) {
    let query = context.db
      .from('devices')
      .select(
        'uuid, name, os, os_version, model, owner_user_id, last_seen_at, online, ' +
          'device_status(ip, vpn_state, source, country, updated_at)',
      )
      .order('last_seen_at', { ascending: false, nullsFirst: false })
      .order('name')
      .limit(200);
    if (args.online_only === true) query = query.eq('online', true);
    const rows = dataOf(await query.abortSignal(context.signal)) as unknown as Array<
      { uuid: string; name: string }
    >;
    const devices = rows.map((row) => ({ ...row, dashboard_url: deviceUrl(context, row.uuid) }));
    return {
      output: { devices },
      refs: devices.map((d) => ({ label: `Device ${d.name}`, url: d.dashboard_url })),
      empty: devices.length === 0,
    };
  },
};

const summarizeTraffic: AssistantTool = {
  name: 'summarize_device_traffic',
  description: "One device's captured traffic over a window (default last 24 h, at most 31 " +
    'days): requests, errors, status and method mix, top hosts and endpoints, slowest requests.',
  requires: 'entries:view',
  write: false,
  args: z.object({ device_uuid: z.uuid(), since: isoDate.optional(), until: isoDate.optional() }),
  label: () => 'Summarizing device traffic',
  async run(context, args) {
    const summary = dataOf(
      await context.db
        .rpc('summarize_device_traffic', {
          target_uuid: args.device_uuid,
          from_ts: args.since ?? null,
          to_ts: args.until ?? null,
        })
        .abortSignal(context.signal),
    ) as Record<string, unknown>;
    const uuid = String(args.device_uuid);
    const requests = Number(summary.requests ?? 0);
    return {
      output: { device_uuid: uuid, dashboard_url: deviceUrl(context, uuid), summary },
      refs: [{ label: `Device ${uuid}`, url: deviceUrl(context, uuid) }],
      empty: requests === 0,
    };
  },
};

const inspectRequests: AssistantTool = {
  name: 'inspect_requests',
  description: 'Captured requests, newest first, filtered by device, exact host, a substring ' +
    'search in host/path/url, method, status class and time window (page with before_id); or ' +
    'one request in full by id (headers, bodies, timings). Secrets appear as placeholders.',
  requires: 'entries:view',
  write: false,
  args: z.object({
    id: z.number().int().positive().optional(),
    device_uuid: z.uuid().optional(),
    host: z.string().min(1).max(253).optional(),
    search: z.string().min(1).max(200).optional(),
    method: z.string().regex(/^[A-Za-z]{1,16}$/).optional(),
    status_class: z.enum(['1xx', '2xx', '3xx', '4xx', '5xx', 'none']).optional(),
    since: isoDate.optional(),
    until: isoDate.optional(),
    before_id: z.number().int().positive().optional(),
    limit: z.number().int().min(1).max(50).optional(),
  }),
  label: (args) =>
    args.id !== undefined ? `Inspecting request ${args.id}` : 'Searching captured requests',
  async run(context, args) {
    if (args.id !== undefined) {
      // 001 §4.2 rule 2: the full payload only for one row, by id.
      const rows = dataOf(
        await context.db
          .from('entries')
          .select('id, ts, kind, request_id, device_uuid, host, url, payload')
          .eq('id', args.id as number)
          .limit(1)
          .abortSignal(context.signal),
      ) as Array<{ id: number; device_uuid: string | null }>;
      const row = rows[0];
      if (!row) {
        return {
          output: { request: null, note: 'No such request that you can see.' },
          refs: [],
          empty: true,
        };
      }
      return {
        output: { request: { ...row, dashboard_url: requestUrl(context, row.id) } },
        refs: [{ label: `Request ${row.id}`, url: requestUrl(context, row.id) }],
        empty: false,
      };
    }
    const limit = (args.limit as number | undefined) ?? 20;
    const rows = dataOf(
      await context.db
        .rpc('inspect_entries', {
          device_uuids: args.device_uuid ? [args.device_uuid] : null,
          hosts: args.host ? [args.host] : null,
          search_q: args.search ?? null,
          methods: args.method ? [String(args.method).toUpperCase()] : null,
          status_classes: args.status_class ? [STATUS_CLASSES[String(args.status_class)]] : null,
          // 001 §4.2 rule 3: a ts floor by default (the last 7 days) so old partitions are skipped.
          from_ts: args.since ?? new Date(Date.now() - 7 * 86_400_000).toISOString(),
          to_ts: args.until ?? null,
          before_id: args.before_id ?? null,
          lim: limit,
        })
        .abortSignal(context.signal),
    ) as Array<{ id: number }>;
    const requests = rows.map((row) => ({ ...row, dashboard_url: requestUrl(context, row.id) }));
    return {
      output: {
        requests,
        next_before_id: requests.length === limit ? requests.at(-1)?.id ?? null : null,
        window: args.since ? undefined : 'last 7 days (pass since for older captures)',
      },
      refs: requests.slice(0, 5).map((r) => ({ label: `Request ${r.id}`, url: r.dashboard_url })),
      empty: requests.length === 0,
    };
  },
};

const countRequests: AssistantTool = {
  name: 'count_requests',
  description: 'How many captured requests match a device, exact host and/or a substring ' +
    'search in host/path/url (all time).',
  requires: 'entries:view',
  write: false,
  args: z.object({
    device_uuid: z.uuid().optional(),
    host: z.string().min(1).max(253).optional(),
    search: z.string().min(1).max(200).optional(),
  }),
  label: () => 'Counting captured requests',
  async run(context, args) {
    const count = dataOf(
      await context.db
        .rpc('entries_filtered_count', {
          target_workspace: null,
          device_uuids: args.device_uuid ? [args.device_uuid] : null,
          hosts: args.host ? [args.host] : null,
          search_q: args.search ?? null,
        })
        .abortSignal(context.signal),
    ) as number;
    return { output: { count: Number(count) }, refs: [], empty: Number(count) === 0 };
  },
};

const getStats: AssistantTool = {
  name: 'get_stats',
  description: 'The fleet statistics snapshot (devices, online devices, captures by period, ' +
    'top hosts), computed fresh.',
  requires: 'stats:view',
  write: false,
  args: z.object({}),
  label: () => 'Reading fleet statistics',
  async run(context) {
    const snapshot = dataOf(await context.db.rpc('get_stats').abortSignal(context.signal));
    return { output: { snapshot }, refs: [], empty: snapshot === null };
  },
};

const getStatus: AssistantTool = {
  name: 'get_status',
  description: 'The service status snapshot: components with their probes, host metrics, and ' +
    'when it was written (older than about 30 s means the status service is down).',
  requires: 'status:view',
  write: false,
  args: z.object({}),
  label: () => 'Reading service status',
  async run(context) {
    const rows = dataOf(
      await context.db
        .from('service_status')
        .select('snapshot, updated_at')
        .eq('id', 1)
        .limit(1)
        .abortSignal(context.signal),
    ) as unknown[];
    return { output: { status: rows[0] ?? null }, refs: [], empty: rows.length === 0 };
  },
};

const listTags: AssistantTool = {
  name: 'list_tags',
  description: 'The tags (labels on captured requests) the user can see.',
  requires: 'tags:view',
  write: false,
  args: z.object({}),
  label: () => 'Listing tags',
  async run(context) {
    const rows = dataOf(
      await context.db.from('tags').select('id, name, color').order('name').limit(500)
        .abortSignal(context.signal),
    ) as unknown[];
    return { output: { tags: rows }, refs: [], empty: rows.length === 0 };
  },
};

const proposeTag: AssistantTool = {
  name: 'propose_tag_request',
  description: 'Proposes tagging one captured request (of a device the user owns) with a tag ' +
    'name. Nothing changes until the user confirms it in the app; say that it awaits their ' +
    'confirmation. Only when the user asked for it.',
  requires: 'tags:edit',
  write: true,
  args: z.object({
    request_id: z.number().int().positive(),
    tag_name: z.string().trim().min(1).max(100),
  }),
  label: () => 'Proposing a tag',
  async run(context, args) {
    const proposal = dataOf(
      await context.db
        .rpc('assistant_propose_tag', {
          entry_id: args.request_id,
          tag_name: args.tag_name,
          call_id: context.callId,
        })
        .abortSignal(context.signal),
    ) as { confirmation: string; entry_id: number; tag_name: string };
    const artifact = {
      type: 'confirmation',
      action: 'tag_request',
      title: `Tag request ${proposal.entry_id} as "${proposal.tag_name}"`,
      request_id: proposal.entry_id,
      tag_name: proposal.tag_name,
      confirmation: proposal.confirmation,
      confirm_url: `${context.askUrl}/confirm`,
      call_id: context.callId,
    };
    return {
      output: {
        proposed: true,
        applied: false,
        note: 'Shown to the user for confirmation; not applied unless they confirm.',
      },
      refs: [{
        label: `Request ${proposal.entry_id}`,
        url: requestUrl(context, proposal.entry_id),
      }],
      empty: false,
      artifact,
    };
  },
};

export const ASSISTANT_TOOLS: readonly AssistantTool[] = [
  listDevices,
  summarizeTraffic,
  inspectRequests,
  countRequests,
  getStats,
  getStatus,
  listTags,
  proposeTag,
];

/**
 * The tools a caller is offered: those whose capability they hold. A write only proposes, and only
 * a person in the dashboard confirms it (docs/assistant.md "Writes"), so a token issued to an OAuth
 * client (an agent's: it names its client, or is one of the recorded API tokens) is offered none:
 * it could never see one confirmed (OWASP LLM06, excessive agency).
 */
export function toolsFor(caller: Caller): AssistantTool[] {
  const held = new Set(caller.capabilities);
  const clientToken = caller.token.client_id !== null || caller.token.label !== null;
  return ASSISTANT_TOOLS.filter((tool) => held.has(tool.requires) && !(tool.write && clientToken));
}
