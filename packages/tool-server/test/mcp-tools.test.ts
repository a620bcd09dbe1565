// The data tools through the official SDK clients of both eras (v1; v2 legacy; v2 modern), each
// connected with a token from the real OAuth flow, as admin, member and viewer, on both hosts:
// what each role sees in tools/list, which calls succeed and which are refused with a permission
// error as a tool error (002 §7, 001 §4.1), and that both hosts answer identically.
import { beforeAll, describe, expect, it } from 'vitest';
import {
  CLIENT_KINDS,
  type ConnectedClient,
  connectClient,
  resultJson,
} from './helpers/mcp-clients.ts';
import { authorizeAndExchange, DEMO, useOAuthStack } from './helpers/oauth-stack.ts';

const stack = useOAuthStack();

const MEMBER_DEVICE = 'd0000000-0000-4000-8000-000000000001';
const VIEWER_DEVICE = 'd0000000-0000-4000-8000-000000000006';
const ALL_TOOLS = [
  'list_devices',
  'summarize_device_traffic',
  'inspect_requests',
  'get_stats',
  'get_status',
  'list_breakpoints',
  'resume_breakpoint',
  'list_workspaces',
  'list_tags',
];

/** Valid arguments for every tool; resume names no held breakpoint, so it changes nothing. */
const ARGUMENTS: Record<string, Record<string, unknown>> = {
  list_devices: {},
  summarize_device_traffic: {
    device_uuid: MEMBER_DEVICE,
    since: new Date(Date.now() - 7 * 86_400_000).toISOString(),
  },
  inspect_requests: { limit: 5 },
  get_stats: {},
  get_status: {},
  list_breakpoints: {},
  resume_breakpoint: { id: 999_999_999, resolution: 'continue' },
  list_workspaces: {},
  list_tags: {},
};

const ROLES: Record<
  'admin' | 'member' | 'viewer',
  { login: { email: string; password: string }; refused: string[] }
> = {
  admin: { login: DEMO.admin, refused: [] },
  member: { login: DEMO.member, refused: ['get_stats', 'get_status'] },
  viewer: { login: DEMO.viewer, refused: ['resume_breakpoint'] },
};
type Role = keyof typeof ROLES;

/** Access tokens per role and host (a token is for the host that issued it). */
const tokens = new Map<string, string>();
const tokenFor = (role: Role, base: string) => tokens.get(`${role}|${base}`) as string;

beforeAll(async () => {
  for (const [role, { login }] of Object.entries(ROLES)) {
    for (const base of [stack().mcpUrl, stack().mcpLegacyUrl]) {
      tokens.set(
        `${role}|${base}`,
        (await authorizeAndExchange(stack(), login, base)).access_token,
      );
    }
  }
  // get_status reads the row the status service writes about every 10 s.
  const deadline = Date.now() + 20_000;
  const admin = await connectClient('v1', stack().mcpUrl, tokenFor('admin', stack().mcpUrl));
  try {
    while (Date.now() < deadline && (await admin.callTool('get_status')).isError) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  } finally {
    await admin.close();
  }
}, 60_000);

async function withClient<T>(
  kind: (typeof CLIENT_KINDS)[number],
  role: Role,
  base: string,
  work: (client: ConnectedClient) => Promise<T>,
) {
  const client = await connectClient(kind, base, tokenFor(role, base));
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

describe.each(Object.keys(ROLES) as Role[])('as %s', (role) => {
  const refused = ROLES[role].refused;
  const allowed = ALL_TOOLS.filter((name) => !refused.includes(name));

  it.each(CLIENT_KINDS)(
    '%s lists exactly the tools the role may use, on both hosts',
    async (kind) => {
      for (const base of [stack().mcpUrl, stack().mcpLegacyUrl]) {
        await withClient(kind, role, base, async (client) => {
          expect(client.serverVersion?.name).toBe('capture-platform');
          expect(await client.listToolNames()).toEqual(allowed);
        });
      }
    },
  );

  it.each(CLIENT_KINDS)('%s calls every allowed tool and is refused the others', async (kind) => {
    await withClient(kind, role, stack().mcpUrl, async (client) => {
      for (const name of ALL_TOOLS) {
        const args =
          name === 'summarize_device_traffic' && role === 'viewer'
            ? { ...ARGUMENTS[name], device_uuid: VIEWER_DEVICE }
            : ARGUMENTS[name];
        const result = await client.callTool(name, args);
        const body = resultJson(result);
        if (refused.includes(name)) {
          expect(result.isError, `${name} as ${role}`).toBe(true);
          expect(body).toMatchObject({
            error: 'permission_denied',
            message: expect.stringMatching(/capability/),
          });
        } else if (name === 'resume_breakpoint') {
          // Allowed, and nothing to resume under that id.
          expect(body).toMatchObject({ error: 'not_found' });
        } else {
          expect(result.isError ?? false, `${name} as ${role}: ${JSON.stringify(body)}`).toBe(
            false,
          );
          expect(result.structuredContent).toEqual(body);
        }
      }
    });
  });

  it('answers the same on both hosts', async () => {
    for (const name of ['list_devices', 'inspect_requests', 'list_workspaces', 'list_tags']) {
      const [canonical, legacy] = await Promise.all(
        [stack().mcpUrl, stack().mcpLegacyUrl].map((base) =>
          withClient('v2-legacy', role, base, (client) => client.callTool(name, ARGUMENTS[name])),
        ),
      );
      expect(legacy?.structuredContent, name).toEqual(canonical?.structuredContent);
    }
  });
});

describe('what each role sees', () => {
  it('shows a member only their devices and every device to an admin', async () => {
    const owners = async (role: Role) =>
      withClient('v1', role, stack().mcpUrl, async (client) => {
        const { devices } = resultJson(await client.callTool('list_devices')) as {
          devices: Array<{ owner_user_id: string; online: boolean; port: number | null }>;
        };
        return new Set(devices.map((device) => device.owner_user_id));
      });
    expect(await owners('member')).toEqual(new Set(['a0000000-0000-4000-8000-000000000002']));
    expect((await owners('admin')).size).toBe(3);
  });

  it("refuses a member's summary of a device that is not theirs", async () => {
    await withClient('v2-legacy', 'member', stack().mcpUrl, async (client) => {
      const result = await client.callTool('summarize_device_traffic', {
        device_uuid: 'd0000000-0000-4000-8000-000000000004',
      });
      expect(result.isError).toBe(true);
      expect(resultJson(result).error).toMatch(/not_found|permission_denied/);
    });
  });

  it('names the field a bad argument fails on', async () => {
    await withClient('v2-modern', 'admin', stack().mcpUrl, async (client) => {
      const result = await client.callTool('summarize_device_traffic', {
        device_uuid: 'not-a-uuid',
      });
      expect(result.isError).toBe(true);
      expect(resultJson(result)).toMatchObject({
        error: 'invalid_arguments',
        message: expect.stringMatching(/^device_uuid: /),
      });
      const limit = await client.callTool('inspect_requests', { limit: 10_000 });
      expect(resultJson(limit).message).toMatch(/^limit: /);
    });
  });
});
