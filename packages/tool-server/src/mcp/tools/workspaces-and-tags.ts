// Workspaces (capture scopes) and tags (labels on captures): what an agent needs to find the
// captures a person grouped, before inspecting them. Scoped like every other read by RLS.
import { z } from 'zod';
import { defineTool } from '../tool-definition.ts';

export const listWorkspaces = defineTool({
  name: 'list_workspaces',
  title: 'List workspaces',
  description: 'Workspaces you can see (capture scopes), with how many captures each holds.',
  input: z.object({}),
  output: z.object({
    workspaces: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        description: z.string(),
        entries: z.number().int(),
      }),
    ),
  }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'entries', action: 'view' },
  async run(call) {
    const workspaces = await call.asCaller(async (client) => {
      const { rows } = await client.query<{
        id: string;
        name: string;
        description: string;
        entries: number;
      }>(
        `select w.id, w.name, w.description,
                (select count(*) from public.workspace_entries we where we.workspace_id = w.id)::int
                  as entries
           from public.workspaces w order by w.name limit 500`,
      );
      return rows;
    });
    return { workspaces };
  },
});

export const listTags = defineTool({
  name: 'list_tags',
  title: 'List tags',
  description: 'Tags you can see, with how many captures carry each.',
  input: z.object({}),
  output: z.object({
    tags: z.array(
      z.object({ id: z.string(), name: z.string(), color: z.string(), entries: z.number().int() }),
    ),
  }),
  annotations: {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
  requires: { section: 'tags', action: 'view' },
  async run(call) {
    const tags = await call.asCaller(async (client) => {
      const { rows } = await client.query<{
        id: string;
        name: string;
        color: string;
        entries: number;
      }>(
        `select t.id, t.name, t.color,
                (select count(*) from public.entry_tags et where et.tag_id = t.id)::int as entries
           from public.tags t order by lower(t.name) limit 500`,
      );
      return rows;
    });
    return { tags };
  },
});
