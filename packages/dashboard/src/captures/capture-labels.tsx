// A capture's tags and workspaces: the tags on it (add one of the account's tags, remove one) and
// adding it to a workspace. Links carry the capture's `ts` too, the partition key the foreign key
// needs (docs/data-model.md). Shown only to roles that may edit tags / entries.
import { useEffect, useState } from 'react';
import { useAccess } from '../access.tsx';
import { can } from '../access-rules.ts';
import { useAppServices } from '../app-context.tsx';

type Tag = { id: string; name: string; color: string };
type Workspace = { id: string; name: string };

export function CaptureLabels(props: { id: number; ts: string }) {
  const { supabase } = useAppServices();
  const access = useAccess();
  const [tags, setTags] = useState<Tag[]>([]);
  const [onCapture, setOnCapture] = useState<Tag[]>([]);
  const [workspaces, setWorkspaces] = useState<Workspace[]>([]);
  const [inWorkspaces, setInWorkspaces] = useState<string[]>([]);
  const [tagChoice, setTagChoice] = useState('');
  const [workspaceChoice, setWorkspaceChoice] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const [generation, setGeneration] = useState(0);
  const canTag = can(access, 'tags', 'edit');
  const canFile = can(access, 'entries', 'edit');

  // biome-ignore lint/correctness/useExhaustiveDependencies: generation asks for a fresh read
  useEffect(() => {
    let current = true;
    void Promise.all([
      supabase.from('tags').select('id,name,color').order('name'),
      supabase.from('entry_tags').select('tags(id,name,color)').eq('entry_id', props.id),
      supabase.from('workspaces').select('id,name').order('name'),
      supabase.from('workspace_entries').select('workspace_id').eq('entry_id', props.id),
    ]).then(([all, linked, spaces, filed]) => {
      if (!current) return;
      setTags((all.data ?? []) as Tag[]);
      setOnCapture(
        ((linked.data ?? []) as unknown as { tags: Tag | null }[]).flatMap((row) =>
          row.tags ? [row.tags] : [],
        ),
      );
      setWorkspaces((spaces.data ?? []) as Workspace[]);
      setInWorkspaces(
        ((filed.data ?? []) as { workspace_id: string }[]).map((row) => row.workspace_id),
      );
    });
    return () => {
      current = false;
    };
  }, [supabase, props.id, generation]);

  async function run(write: PromiseLike<{ error: { message: string } | null }>) {
    const { error } = await write;
    setMessage(error ? error.message : null);
    setGeneration((value) => value + 1);
  }

  const free = tags.filter((tag) => !onCapture.some((item) => item.id === tag.id));
  return (
    <section data-testid="capture-labels">
      <h3>Tags</h3>
      {onCapture.length === 0 && <p className="muted">No tags.</p>}
      <ul className="legend" data-testid="capture-tags">
        {onCapture.map((tag) => (
          <li key={tag.id} data-tag={tag.name}>
            {tag.name}
            {canTag && (
              <button
                type="button"
                className="button--link"
                aria-label={`Remove tag ${tag.name}`}
                onClick={() =>
                  run(
                    supabase
                      .from('entry_tags')
                      .delete()
                      .eq('tag_id', tag.id)
                      .eq('entry_id', props.id),
                  )
                }
              >
                ×
              </button>
            )}
          </li>
        ))}
      </ul>
      {canTag && free.length > 0 && (
        <div className="toolbar">
          <label>
            Tag
            <select value={tagChoice} onChange={(event) => setTagChoice(event.target.value)}>
              <option value="">Choose a tag</option>
              {free.map((tag) => (
                <option key={tag.id} value={tag.id}>
                  {tag.name}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            className="button--small"
            disabled={!tagChoice}
            onClick={() =>
              run(
                supabase
                  .from('entry_tags')
                  .insert({ tag_id: tagChoice, entry_id: props.id, entry_ts: props.ts }),
              )
            }
          >
            Add tag
          </button>
        </div>
      )}
      <h3>Workspaces</h3>
      <p className="muted" data-testid="capture-workspaces">
        {workspaces
          .filter((workspace) => inWorkspaces.includes(workspace.id))
          .map((workspace) => workspace.name)
          .join(', ') || 'In no workspace.'}
      </p>
      {canFile && workspaces.length > 0 && (
        <div className="toolbar">
          <label>
            Workspace
            <select
              value={workspaceChoice}
              onChange={(event) => setWorkspaceChoice(event.target.value)}
              data-testid="add-to-workspace-select"
            >
              <option value="">Choose a workspace</option>
              {workspaces
                .filter((workspace) => !inWorkspaces.includes(workspace.id))
                .map((workspace) => (
                  <option key={workspace.id} value={workspace.id}>
                    {workspace.name}
                  </option>
                ))}
            </select>
          </label>
          <button
            type="button"
            className="button--small"
            disabled={!workspaceChoice}
            onClick={() =>
              run(
                supabase.from('workspace_entries').insert({
                  workspace_id: workspaceChoice,
                  entry_id: props.id,
                  entry_ts: props.ts,
                }),
              )
            }
          >
            Add to workspace
          </button>
        </div>
      )}
      {message && <p className="error">{message}</p>}
    </section>
  );
}
