-- A proposal's tool call id names one write (001 §4.3 idempotence), never two: a second proposal
-- under a call id already used for other arguments answered the earlier proposal's confirmation
-- while assistant_propose_tag described the new one, so the artifact the user confirmed ("Tag
-- request 7 as bug") applied a different write (request 9 as whatever the first call said). Call
-- ids come from the model provider and are not ours to trust unique (OpenAI-compatible servers
-- that number calls per response repeat them). The same call id with the same write still
-- answers the same proposal; with another write it is refused (22023), and nothing is proposed.
create or replace function private.insert_assistant_proposal(call_id text, action text, arguments jsonb)
returns uuid
language plpgsql
volatile
security definer
set search_path = ''
as $$
declare
  existing private.assistant_proposals%rowtype;
  proposal uuid;
begin
  delete from private.assistant_proposals p where p.expires_at < now() - interval '1 day';
  insert into private.assistant_proposals (user_id, call_id, action, arguments)
  values (auth.uid(), call_id, action, arguments)
  on conflict on constraint assistant_proposals_user_id_call_id_key do nothing
  returning id into proposal;
  if proposal is null then
    select p.* into existing from private.assistant_proposals p
    where p.user_id = auth.uid() and p.call_id = insert_assistant_proposal.call_id;
    if existing.action is distinct from insert_assistant_proposal.action
       or existing.arguments is distinct from insert_assistant_proposal.arguments then
      raise exception 'this tool call id already proposed another write'
        using errcode = '22023',
          hint = 'Each proposal needs its own tool call; nothing was proposed.';
    end if;
    proposal := existing.id;
  end if;
  return proposal;
end
$$;
