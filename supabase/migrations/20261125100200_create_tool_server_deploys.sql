-- Builds of the tool server that have started (001 §9: the build number advances on every
-- deploy). Each instance records its build at start and announces it with NOTIFY on channel
-- tool_server_deploys; instances that see a newer build tell their MCP clients that the tool and
-- resource lists changed (001 §6). A listener that reconnects compares the newest row.
create table private.tool_server_deploys (
  build_number text primary key,
  started_at timestamptz not null default now(),
  constraint tool_server_deploys_build_number_check check (char_length(build_number) between 1 and 100)
);
comment on table private.tool_server_deploys is
  'Tool-server builds by the time they (last) started; the newest is the one serving.';
-- Serves: "the newest build" on listener reconnect.
create index tool_server_deploys_started_at_idx on private.tool_server_deploys (started_at desc);
alter table private.tool_server_deploys enable row level security;
revoke all on private.tool_server_deploys from public, anon, authenticated, service_role;
