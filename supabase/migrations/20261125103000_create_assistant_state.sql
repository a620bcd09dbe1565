-- The assistant's state (001 §4.3): a per-user rate limit on questions, and write proposals the
-- client must confirm. A proposal is bound to the user and the model's tool call id (idempotent
-- on it), applied at most once, and only to captures of a device the caller owns, whatever role.

create table private.assistant_turns (
  user_id uuid primary key references auth.users (id) on delete cascade,
  window_start timestamptz not null,
  hits integer not null
);
comment on table private.assistant_turns is
  'Questions asked by each user in their current one-minute window (one row per user).';

create table private.assistant_proposals (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references auth.users (id) on delete cascade,
  call_id text not null,
  action text not null,
  arguments jsonb not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null default now() + interval '15 minutes',
  applied_at timestamptz,
  constraint assistant_proposals_user_id_call_id_key unique (user_id, call_id),
  constraint assistant_proposals_action_check check (action in ('tag_request')),
  constraint assistant_proposals_call_id_check check (char_length(call_id) between 1 and 200)
);
comment on table private.assistant_proposals is
  'Writes the assistant proposed and the user may confirm once (the id is the confirmation).';
-- Serves: the sweep of expired proposals in assistant_propose_tag.
create index assistant_proposals_expires_at_idx on private.assistant_proposals (expires_at);

-- Security definer: the counter table is private (no API role may reset its own count). The
-- caller is auth.uid(); per_minute comes from the function's configuration, and a client calling
-- this itself only adds to its own count.
create function public.assistant_take_turn(per_minute integer)
returns integer
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  caller uuid := auth.uid();
  current_window timestamptz := date_trunc('minute', now());
  used integer;
begin
  if caller is null then
    raise exception 'a signed-in user is required' using errcode = '42501';
  end if;
  if per_minute is null or per_minute < 1 then
    raise exception 'per_minute must be positive' using errcode = '22023';
  end if;
  insert into private.assistant_turns as t (user_id, window_start, hits)
  values (caller, current_window, 1)
  on conflict (user_id) do update
    set hits = case when t.window_start = current_window then t.hits + 1 else 1 end,
        window_start = current_window
  returning hits into used;
  if used > per_minute then
    raise sqlstate 'PT429' using message = 'too many questions',
      detail = format('At most %s questions a minute; try again shortly.', per_minute);
  end if;
  return per_minute - used;
end
$$;
comment on function public.assistant_take_turn(integer) is
  'Counts one question of the caller in the current minute; 429 (PT429) past per_minute. '
  'Returns how many remain in this minute.';
revoke execute on function public.assistant_take_turn(integer) from public, anon;
grant execute on function public.assistant_take_turn(integer) to authenticated;

-- Security invoker: the entry and the tag are read under the caller's RLS. The proposal row is
-- written by the definer helper below.
create function private.insert_assistant_proposal(call_id text, action text, arguments jsonb)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  proposal uuid;
begin
  delete from private.assistant_proposals p where p.expires_at < now() - interval '1 day';
  insert into private.assistant_proposals (user_id, call_id, action, arguments)
  values (auth.uid(), call_id, action, arguments)
  on conflict on constraint assistant_proposals_user_id_call_id_key do nothing
  returning id into proposal;
  if proposal is null then
    -- 001 §4.3 idempotence: the same tool call proposes the same write, never a second one.
    select p.id into proposal from private.assistant_proposals p
    where p.user_id = auth.uid() and p.call_id = insert_assistant_proposal.call_id;
  end if;
  return proposal;
end
$$;
comment on function private.insert_assistant_proposal(text, text, jsonb) is
  'Security definer: assistant_proposals is private. Records a proposal of auth.uid().';
revoke execute on function private.insert_assistant_proposal(text, text, jsonb)
  from public, anon;
grant execute on function private.insert_assistant_proposal(text, text, jsonb) to authenticated;

-- The entry, if it is a capture of a device the caller owns (admins included: 001 §4.3 writes
-- only on the caller's own devices).
create function private.own_entry_ts(target_entry bigint)
returns timestamptz
language sql
stable
set search_path = ''
as $$
  select e.ts from public.entries e
  where e.id = target_entry
    and e.device_uuid = any ((select private.owned_device_uuids())::uuid[])
  limit 1
$$;
grant execute on function private.own_entry_ts(bigint) to authenticated;

create function public.assistant_propose_tag(entry_id bigint, tag_name text, call_id text)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  label text := btrim(coalesce(tag_name, ''));
begin
  if not public.has_capability('tags', 'edit') then
    raise exception 'permission denied: tagging needs tags:edit' using errcode = '42501';
  end if;
  if char_length(label) not between 1 and 100 then
    raise exception 'tag_name must be 1 to 100 characters' using errcode = '22023';
  end if;
  if private.own_entry_ts(entry_id) is null then
    raise sqlstate 'PT404' using message = 'request not found',
      detail = format('No captured request %s on a device you own.', entry_id);
  end if;
  return jsonb_build_object(
    'confirmation', private.insert_assistant_proposal(call_id, 'tag_request',
      jsonb_build_object('entry_id', entry_id, 'tag_name', label)),
    'action', 'tag_request', 'entry_id', entry_id, 'tag_name', label);
end
$$;
comment on function public.assistant_propose_tag(bigint, text, text) is
  'Proposes tagging one captured request of a device the caller owns (needs tags:edit); returns '
  'the confirmation id. Nothing is written to tags or entry_tags until it is confirmed.';
revoke execute on function public.assistant_propose_tag(bigint, text, text) from public, anon;
grant execute on function public.assistant_propose_tag(bigint, text, text) to authenticated;

-- Security definer: marks the proposal applied (private table) in the caller's transaction; the
-- write itself is done by the invoker below under RLS, so a failed write rolls the mark back.
create function private.claim_assistant_proposal(proposal uuid)
returns jsonb
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  found_row private.assistant_proposals%rowtype;
begin
  select * into found_row from private.assistant_proposals p
  where p.id = proposal and p.user_id = auth.uid()
  for update;
  -- Another user's proposal answers exactly like one that does not exist.
  if not found or found_row.expires_at < now() then
    raise sqlstate 'PT404' using message = 'confirmation not found',
      detail = 'No pending proposal with this confirmation for you (unknown or expired).';
  end if;
  if found_row.applied_at is not null then
    raise sqlstate 'PT409' using message = 'confirmation already used',
      detail = format('This write was applied at %s; it is not applied twice.',
        found_row.applied_at);
  end if;
  update private.assistant_proposals set applied_at = now() where id = proposal;
  return jsonb_build_object('action', found_row.action, 'arguments', found_row.arguments);
end
$$;
comment on function private.claim_assistant_proposal(uuid) is
  'Security definer: assistant_proposals is private. Claims a pending proposal of auth.uid().';
revoke execute on function private.claim_assistant_proposal(uuid) from public, anon;
grant execute on function private.claim_assistant_proposal(uuid) to authenticated;

create function public.assistant_confirm_write(confirmation uuid)
returns jsonb
language plpgsql
volatile
set search_path = ''
as $$
declare
  claimed jsonb := private.claim_assistant_proposal(confirmation);
  target_entry bigint := (claimed #>> '{arguments,entry_id}')::bigint;
  label text := claimed #>> '{arguments,tag_name}';
  target_ts timestamptz := private.own_entry_ts(target_entry);
  tag uuid;
begin
  if target_ts is null then
    raise sqlstate 'PT404' using message = 'request not found',
      detail = format('No captured request %s on a device you own.', target_entry);
  end if;
  select t.id into tag from public.tags t
  where t.owner_user_id = auth.uid() and lower(t.name) = lower(label);
  if tag is null then
    insert into public.tags (name) values (label) returning id into tag;
  end if;
  insert into public.entry_tags (tag_id, entry_id, entry_ts)
  values (tag, target_entry, target_ts)
  on conflict on constraint entry_tags_pkey do nothing;
  return jsonb_build_object('applied', true, 'action', 'tag_request', 'entry_id', target_entry,
    'tag_id', tag, 'tag_name', label);
end
$$;
comment on function public.assistant_confirm_write(uuid) is
  'Applies a write the assistant proposed to the caller, once: 404 (PT404) for an unknown, '
  'expired or another user''s confirmation, 409 (PT409) for one already used. Runs under the '
  'caller''s RLS and capabilities (tags:edit).';
revoke execute on function public.assistant_confirm_write(uuid) from public, anon;
grant execute on function public.assistant_confirm_write(uuid) to authenticated;
