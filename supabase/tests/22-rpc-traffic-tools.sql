-- pgTAP: the traffic-tool RPCs summarize_device_traffic and inspect_entries (caller scope per
-- acting user, argument validation, windows, keyset paging, status-class, method and search
-- filters) and the generated exchange columns of entries they read.
begin;
create extension if not exists pgtap with schema extensions;
select plan(85);

\ir helpers/actors.psql

do $$ begin
  perform private.create_entries_partitions(now() - interval '11 days', now());
end $$;
insert into public.devices (uuid, name, owner_user_id) values
  ('de000000-0000-4000-8000-0000000000a1', 'pgtap a1', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000a2', 'pgtap a2', pg_temp.uid('a')),
  ('de000000-0000-4000-8000-0000000000b1', 'pgtap b1', pg_temp.uid('b')),
  ('de000000-0000-4000-8000-0000000000e1', 'pgtap v1', pg_temp.uid('viewer')),
  ('de000000-0000-4000-8000-0000000000f1', 'pgtap n1', pg_temp.uid('none'));
-- a1 holds one of each kind in the last 24 hours (ids 990401..990406), one 30 hours old and one
-- 10 days old. The payloads carry the fields the proxy writes (docs/proxy.md).
insert into public.entries (id, ts, kind, device_uuid, payload)
select e.id, now() - e.age, e.kind, e.device_uuid::uuid,
  jsonb_strip_nulls(jsonb_build_object('method', e.method, 'host', e.host, 'path', e.path,
    'url', coalesce(e.url, 'https://' || e.host || e.path), 'statusCode', e.status,
    'timings', jsonb_build_object('total', e.total), 'sizes', e.sizes, 'error', e.error))
from (values
  (990401, interval '2 hours', 'http', 'de000000-0000-4000-8000-0000000000a1', 'GET', 'api.t.test', '/v1/a', null, 200, 100, '{"requestBody": 10, "responseBody": 1000}'::jsonb, null),
  (990402, interval '3 hours', 'http', 'de000000-0000-4000-8000-0000000000a1', 'POST', 'api.t.test', '/v1/a', null, 201, 300, '{"requestBody": 20, "responseBody": 2000}', null),
  (990403, interval '4 hours', 'http', 'de000000-0000-4000-8000-0000000000a1', 'GET', 'api.t.test', '/v1/a', null, 503, 50, '{"requestBody": 0, "responseBody": 100}', null),
  (990404, interval '5 hours', 'error', 'de000000-0000-4000-8000-0000000000a1', 'GET', 'cdn.t.test', '/img/x.png', null, 502, 5000, null, 'upstream cdn.t.test unreachable: ECONNREFUSED'),
  (990405, interval '6 hours', 'tunnel', 'de000000-0000-4000-8000-0000000000a1', 'CONNECT', 'tunnel.t.test', null, 'tunnel.t.test:443', null, 1200, '{"clientToServer": 500, "serverToClient": 7000}', null),
  (990406, interval '7 hours', 'websocket', 'de000000-0000-4000-8000-0000000000a1', 'GET', 'ws.t.test', '/socket', 'wss://ws.t.test/socket', 101, 20, null, null),
  (990407, interval '30 hours', 'http', 'de000000-0000-4000-8000-0000000000a1', 'DELETE', 'api.t.test', '/v1/a/1', null, 404, 10, null, null),
  (990408, interval '10 days', 'http', 'de000000-0000-4000-8000-0000000000a1', 'GET', 'old.t.test', '/old', null, 200, 10, null, null),
  (990409, interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000000a2', 'GET', 'api.t.test', '/v1/b', 'https://api.t.test/v1/b?q=Needle', 200, 10, null, null),
  (990410, interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000000b1', 'GET', 'api.t.test', '/v1/b', null, 500, 10, null, null),
  (990411, interval '1 hour', 'http', null, 'GET', 'api.t.test', '/v1/unattributed', null, 200, 10, null, null),
  (990412, interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000000f1', 'GET', 'api.t.test', '/v1/n', null, 200, 10, null, null),
  (990413, interval '1 hour', 'http', 'de000000-0000-4000-8000-0000000000e1', 'GET', 'api.t.test', '/v1/v', null, 200, 10, null, null)
) as e (id, age, kind, device_uuid, method, host, path, url, status, total, sizes, error);

create function pg_temp.json(value text) returns jsonb language sql immutable
as $$ select case when value like 'error:%' then jsonb_build_object('error', value) else value::jsonb end $$;
-- The summary `who` gets for the given arguments, as jsonb ({"error": …} for an error).
create function pg_temp.summary(who text, args text) returns jsonb language sql
as $$ select pg_temp.json(pg_temp.value_as(who,
  format('select public.summarize_device_traffic(%s)::text', args))) $$;
-- The ids inspect_entries returns to `who` for the given arguments, in result order.
create function pg_temp.ids(who text, args text) returns text language sql
as $$ select pg_temp.value_as(who, format(
  $q$select coalesce(string_agg(l.id::text, ',' order by l.ordinality), '')
     from public.inspect_entries(%s) with ordinality as l$q$, args)) $$;
create function pg_temp.ts_of(entry_id bigint) returns jsonb language sql stable
as $$ select to_jsonb(ts) from public.entries where id = entry_id $$;

-- Generated columns
select is((select array[method, status_code::text, duration_ms::text, request_bytes::text,
                        response_bytes::text] from public.entries where id = 990405),
  array['CONNECT', null, '1200', '500', '7000'],
  'a tunnel''s method, duration and both directions'' bytes are native columns, its status null');
select is((select status_code from public.entries where id = 990404), 502::smallint,
  'an error row carries the proxy''s 502 in status_code');
select lives_ok($$insert into public.entries (id, device_uuid, payload) values
  (990414, 'de000000-0000-4000-8000-0000000000a2', '{"host": "odd.t.test", "path": "/", "statusCode": "200",
    "timings": {"total": -1}, "sizes": {"requestBody": 1e30, "responseBody": 12.9}}'),
  (990415, 'de000000-0000-4000-8000-0000000000a2', '{"host": "odd.t.test", "path": "/", "method": "GET",
    "statusCode": 99, "timings": {"total": "fast"}, "sizes": "none"}'),
  (990416, 'de000000-0000-4000-8000-0000000000a2', '{"host": "odd.t.test", "path": "/", "method": "GET",
    "statusCode": 200.7, "timings": {"total": 1e300}, "sizes": {"responseBody": -5}}')$$,
  'a capture whose fields have odd types or sizes is still stored');
select is((select array_agg(array[coalesce(method, '-'), coalesce(status_code::text, '-'),
                  coalesce(duration_ms::text, '-'), coalesce(request_bytes::text, '-'),
                  coalesce(response_bytes::text, '-')] order by id)
           from public.entries where id between 990414 and 990416),
  array[array['-', '-', '-', '-', '12'], array['GET', '-', '-', '-', '-'], array['GET', '200', '-', '-', '-']],
  'odd fields become null (a string status, -1, 1e30, 99, 1e300, negative bytes); whole numbers are truncated');

select is(pg_temp.try_as('service', $$insert into public.entries (id, ts, device_uuid, payload) values
    (990417, now() - interval '12 days', 'de000000-0000-4000-8000-0000000000b1',
     '{"host": "p.t.test", "method": "PUT", "statusCode": 204, "timings": {"total": 7.5}}')$$), 'ok:1',
  'the proxy (service role) writes a capture');
select is(pg_temp.try_as('a', $$insert into public.entries (ts, device_uuid, payload) values
    (now() - interval '12 days', 'de000000-0000-4000-8000-0000000000a2',
     '{"host": "import.t.test", "method": "PATCH", "statusCode": 418, "sizes": {"requestBody": 3}}')$$), 'ok:1',
  'a member imports a capture');
select is((select array_agg(concat_ws(' ', method, status_code, coalesce(duration_ms::text, '-'),
                  coalesce(request_bytes::text, '-')) order by host)
           from public.entries where host in ('p.t.test', 'import.t.test')),
  array['PATCH 418 - 3', 'PUT 204 7.5 -'],
  'both get their exchange columns, computed under the writer''s rights');
delete from public.entries where host in ('p.t.test', 'import.t.test');

-- summarize_device_traffic: scope
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1'$$) -> 'requests', '6',
  'a member summarizes their own device over the last 24 hours by default');
select is(pg_temp.summary('admin', $$'de000000-0000-4000-8000-0000000000a1'$$) -> 'requests', '6',
  'an admin summarizes any user''s device');
select is(pg_temp.summary('admin', $$'de000000-0000-4000-8000-0000000000b1'$$) -> 'requests', '1',
  'an admin summarizes another user''s device too');
select is(pg_temp.summary('service', $$'de000000-0000-4000-8000-0000000000a1'$$) -> 'requests', '6',
  'the service role summarizes any device');
select is(pg_temp.summary('viewer', $$'de000000-0000-4000-8000-0000000000e1'$$) -> 'requests', '1',
  'a viewer (entries:view) summarizes their own device');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000b1'$$) ->> 'error', 'error:PT404',
  'a member asking for another user''s device gets 404');
select is(pg_temp.summary('b', $$'de000000-0000-4000-8000-0000000000a1'$$) ->> 'error', 'error:PT404',
  'and so does the other member');
select is(pg_temp.summary('viewer', $$'de000000-0000-4000-8000-0000000000a1'$$) ->> 'error', 'error:PT404',
  'a viewer asking for someone else''s device gets 404');
select is(pg_temp.summary('admin', $$'de000000-0000-4000-8000-0000000000ff'$$) ->> 'error', 'error:PT404',
  'a device that does not exist is 404 for an admin');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000ff'$$) ->> 'error', 'error:PT404',
  'and the same 404 for a member: another user''s device and no device look alike');
select is(pg_temp.summary('none', $$'de000000-0000-4000-8000-0000000000a1'$$) ->> 'error', 'error:PT404',
  'a user without entries:view asking for another user''s device gets 404');
select is(pg_temp.summary('none', $$'de000000-0000-4000-8000-0000000000f1'$$)
    - 'device_uuid' - 'from' - 'to',
  '{"requests": 0, "errors": {"transport": 0, "http_5xx": 0, "total": 0}, "error_rate": null,
    "status_classes": {"1xx": 0, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0, "none": 0},
    "methods": {}, "top_hosts": [], "top_endpoints": [], "slowest": [],
    "bytes": {"request": 0, "response": 0}, "first_seen": null, "last_seen": null}'::jsonb,
  'a user without entries:view gets an empty summary of their own device, not an error');
select is(pg_temp.summary('anon', $$'de000000-0000-4000-8000-0000000000a1'$$) ->> 'error', 'error:42501',
  'anon may not execute summarize_device_traffic');

-- summarize_device_traffic: the figures
create temporary table a1_summary as
select pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1'$$) as s;
select is((select s -> 'errors' from a1_summary), '{"transport": 1, "http_5xx": 1, "total": 2}',
  'errors: kind error counts as transport, a 5xx answer from the origin as http_5xx');
select is((select s -> 'error_rate' from a1_summary), '0.3333', 'error_rate is errors / requests, 4 decimals');
select is((select s -> 'status_classes' from a1_summary),
  '{"1xx": 1, "2xx": 2, "3xx": 0, "4xx": 0, "5xx": 2, "none": 1}',
  'status_classes count the status the client saw (the error row''s 502 in 5xx), none for a tunnel');
select is((select s -> 'methods' from a1_summary), '{"GET": 4, "POST": 1, "CONNECT": 1}',
  'methods count each method');
select is((select s -> 'top_hosts' from a1_summary),
  '[{"host": "api.t.test", "requests": 3, "errors": 1}, {"host": "cdn.t.test", "requests": 1, "errors": 1},
    {"host": "tunnel.t.test", "requests": 1, "errors": 0}, {"host": "ws.t.test", "requests": 1, "errors": 0}]',
  'top_hosts: busiest first, then by name, with their errors');
select is((select s -> 'top_endpoints' -> 0 from a1_summary),
  '{"method": "GET", "host": "api.t.test", "path": "/v1/a", "requests": 2, "errors": 1,
    "avg_ms": 75.00, "p50_ms": 75.00}',
  'top_endpoints: method, host and path with requests, errors, mean and median duration');
select is((select jsonb_agg(x -> 'path') from a1_summary, jsonb_array_elements(s -> 'top_endpoints') x),
  '["/v1/a", "/v1/a", "/img/x.png", null, "/socket"]',
  'every endpoint of the window is listed, a tunnel''s without a path');
select is((select jsonb_agg(x -> 'id') from a1_summary, jsonb_array_elements(s -> 'slowest') x),
  '[990404, 990405, 990402, 990401, 990403, 990406]', 'slowest: longest duration first');
select is((select s -> 'slowest' -> 0 from a1_summary),
  jsonb_build_object('id', 990404, 'ts', pg_temp.ts_of(990404), 'method', 'GET',
    'url', 'https://cdn.t.test/img/x.png', 'status', 502, 'duration_ms', 5000),
  'a slow request names its id, time, method, url, status and duration');
select is((select s -> 'bytes' from a1_summary), '{"request": 530, "response": 10100}',
  'bytes sum request and response bodies (tunnel directions included)');
select is((select array[s -> 'first_seen', s -> 'last_seen'] from a1_summary),
  array[pg_temp.ts_of(990406), pg_temp.ts_of(990401)], 'first_seen and last_seen bound the window''s captures');
select is((select array[s ->> 'device_uuid', ((s ->> 'to')::timestamptz - (s ->> 'from')::timestamptz)::text]
           from a1_summary),
  array['de000000-0000-4000-8000-0000000000a1', '1 day'], 'the summary names the device and its window');

-- summarize_device_traffic: windows and arguments
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', now() - interval '7 days'$$) -> 'requests',
  '7', 'from_ts widens the window (to_ts defaults to now)');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', to_ts => now() - interval '4.5 hours'$$)
    -> 'requests', '3', 'with only to_ts the window is the 24 hours before it');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', now() - interval '31 days', now()$$)
    -> 'requests', '8', 'a 31-day window is allowed');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1',
    (select ts from public.entries where id = 990401), (select ts from public.entries where id = 990401) + interval '1 microsecond'$$)
    -> 'requests', '1', 'from_ts is inclusive');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1',
    (select ts from public.entries where id = 990401) - interval '1 minute', (select ts from public.entries where id = 990401)$$)
    -> 'requests', '0', 'to_ts is exclusive');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', now(), now()$$) -> 'requests', '0',
  'an empty window is allowed');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', now() - interval '31 days 1 second', now()$$)
    ->> 'error', 'error:22023', 'a window over 31 days is refused');
select is(pg_temp.summary('a', $$'de000000-0000-4000-8000-0000000000a1', now(), now() - interval '1 hour'$$)
    ->> 'error', 'error:22023', 'from_ts after to_ts is refused');
select is(pg_temp.summary('a', 'null') ->> 'error', 'error:22004', 'a null target_uuid is refused');
select is(pg_temp.summary('none', $$'de000000-0000-4000-8000-0000000000f1', now(), now() - interval '1 hour'$$)
    ->> 'error', 'error:22023', 'arguments are checked even for a caller who sees nothing');

-- inspect_entries: scope
select is(pg_temp.ids('a', ''), '990416,990415,990414,990409,990408,990407,990406,990405,990404,990403,990402,990401',
  'a member inspects the captures of their own devices, newest first');
select is(pg_temp.ids('b', ''), '990410', 'another member inspects only their device''s captures');
select is(pg_temp.ids('viewer', ''), '990413', 'a viewer inspects their own device''s captures');
select is(pg_temp.ids('none', ''), '', 'a user without entries:view gets nothing, without an error');
select is(pg_temp.ids('admin', $$hosts => '{api.t.test}', from_ts => now() - interval '90 minutes'$$),
  '990413,990412,990411,990410,990409', 'an admin inspects every device''s captures, unattributed ones included');
select is(pg_temp.ids('service', $$hosts => '{api.t.test}', from_ts => now() - interval '90 minutes'$$),
  '990413,990412,990411,990410,990409', 'the service role inspects every capture');
select is(pg_temp.ids('anon', ''), 'error:42501', 'anon may not execute inspect_entries');
select is(pg_temp.ids('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000b1}'$$), '',
  'device_uuids naming another user''s device adds nothing');
select is(pg_temp.ids('a', $$device_uuids => '{de000000-0000-4000-8000-0000000000a2}'$$), '990416,990415,990414,990409',
  'device_uuids keeps only those devices');

-- inspect_entries: rows and paging
select is(pg_temp.value_as('a', $$select row(l.*)::text from public.inspect_entries(methods => '{CONNECT}') l$$),
  format('(990405,"%s",tunnel,de000000-0000-4000-8000-0000000000a1,CONNECT,tunnel.t.test,tunnel.t.test:443,,1200,500,7000)',
    (select ts from public.entries where id = 990405)),
  'a row is id, ts, kind, device_uuid, method, host, url, status_code, duration_ms, request_bytes, response_bytes');
select is(pg_temp.ids('a', 'lim => 3'), '990416,990415,990414', 'lim caps the page size');
select is(pg_temp.ids('a', 'before_id => 990414, lim => 3'), '990409,990408,990407', 'before_id continues after the given id');
select is(pg_temp.ids('a', 'before_id => 990407, lim => 3'), '990406,990405,990404', 'each page continues the last');
select is(pg_temp.ids('a', 'before_id => 990404, lim => 3'), '990403,990402,990401', 'until the last page');
select is(pg_temp.ids('a', 'before_id => 990401, lim => 3'), '', 'after which the list is empty');
select is(pg_temp.ids('a', $$status_classes => '{2,4}', before_id => 990409, lim => 1$$), '990408',
  'paging applies with a filter');
select is(pg_temp.ids('a', 'lim => 0'), 'error:22023', 'lim 0 is refused');
select is(pg_temp.ids('a', 'lim => 201'), 'error:22023', 'lim 201 is refused');
select is(pg_temp.ids('a', 'lim => null'), 'error:22023', 'a null lim is refused');
select is(pg_temp.value_as('a', 'select count(*)::text from public.inspect_entries(lim => 200)'), '12',
  'lim 200 is allowed');

-- inspect_entries: filters
select is(pg_temp.ids('a', $$status_classes => '{5}'$$), '990404,990403',
  'status class 5 keeps 5xx answers, the proxy''s 502 for a failed exchange included');
select is(pg_temp.ids('a', $$status_classes => '{1}'$$), '990406', 'status class 1 keeps a websocket''s 101');
select is(pg_temp.ids('a', $$status_classes => '{0}'$$), '990415,990414,990405',
  'status class 0 keeps captures without a status');
select is(pg_temp.ids('a', $$status_classes => '{2,4}'$$), '990416,990409,990408,990407,990402,990401',
  'several classes combine with or');
select is(pg_temp.ids('a', $$status_classes => '{}'$$), '', 'no status class keeps nothing (as hosts => {})');
select is(pg_temp.ids('a', $$status_classes => '{6}'$$), 'error:22023', 'status class 6 is refused');
select is(pg_temp.ids('a', $$status_classes => '{-1}'$$), 'error:22023', 'a negative status class is refused');
select is(pg_temp.ids('a', $$status_classes => '{2,null}'$$), 'error:22023', 'a null status class is refused');
select is(pg_temp.ids('a', $$methods => '{post}'$$), '990402', 'methods match upper-cased');
select is(pg_temp.ids('a', $$methods => '{GET,DELETE}', hosts => '{api.t.test}'$$), '990409,990407,990403,990401',
  'several methods combine with or, and with other filters with and');
select is(pg_temp.ids('a', format('methods => %L', array(select 'M' || n from generate_series(1, 21) n))),
  'error:22023', 'more than 20 methods are refused');
select is(pg_temp.ids('a', $$methods => '{""}'$$), 'error:22023', 'an empty method name is refused');
select is(pg_temp.ids('a', $$search_q => 'needle'$$), '990409', 'search matches the url, any case');
select is(pg_temp.ids('a', $$search_q => 'T.TEST/v1', status_classes => '{5}'$$), '990403',
  'search combines with the status class');
select is(pg_temp.ids('a', $$search_q => 'v1/b'$$), '990409', 'search never reaches another user''s captures');
select is(pg_temp.ids('a', format('search_q => %L', repeat('x', 201))), 'error:22023',
  'a search term over 200 characters is refused');
select is(pg_temp.ids('a', $$from_ts => now() - interval '24 hours', hosts => '{api.t.test}'$$), '990409,990403,990402,990401',
  'from_ts keeps captures at or after it');
select is(pg_temp.ids('a', $$to_ts => now() - interval '24 hours'$$), '990408,990407', 'to_ts keeps captures before it');
select is(pg_temp.ids('a', $$from_ts => now() - interval '8 days', to_ts => now() - interval '24 hours'$$), '990407',
  'from_ts and to_ts together bound a window');
select is(pg_temp.ids('a', $$from_ts => now(), to_ts => now() - interval '1 hour'$$), 'error:22023',
  'from_ts after to_ts is refused');
select is(pg_temp.ids('none', 'lim => 0'), 'error:22023', 'arguments are checked even for a caller who sees nothing');

-- The shared search design still serves entries_filtered_list, and its builder is not an API.
select is(pg_temp.value_as('a', $$select string_agg(id::text, ',' order by id desc)
    from public.entries_filtered_list(search_q => 'T.TEST/v1/A')$$), '990407,990403,990402,990401',
  'entries_filtered_list still searches through the shared page builder');
select is(pg_temp.value_as('a', $$select private.entries_page_sql('true', null, null, 1, 'e.*')$$), 'error:42501',
  'an API role may not call the page builder, which executes the fragments it is given');

select * from finish();
rollback;
