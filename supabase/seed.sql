-- Demo data for local runs; `npm start` applies it once, to a new database. Never applied in
-- production. The demo-login lines are what the stack prints after it starts.
-- demo-login: admin@demo.local demo-admin-pass  administrator (every capability, every row)
-- demo-login: user@demo.local demo-user-pass  member (own devices, captures, settings, services, tags)
-- demo-login: viewer@demo.local demo-viewer-pass  viewer (read-only, own rows)

insert into auth.users (
  instance_id, id, aud, role, email, encrypted_password, email_confirmed_at,
  raw_app_meta_data, raw_user_meta_data, created_at, updated_at)
select '00000000-0000-0000-0000-000000000000', u.id, 'authenticated', 'authenticated', u.email,
  extensions.crypt(u.password, extensions.gen_salt('bf', 10)), now(),
  '{"provider":"email","providers":["email"]}', jsonb_build_object('name', u.name), now(), now()
from (values
  ('a0000000-0000-4000-8000-000000000001'::uuid, 'admin@demo.local', 'demo-admin-pass', 'Demo Admin'),
  ('a0000000-0000-4000-8000-000000000002'::uuid, 'user@demo.local', 'demo-user-pass', 'Demo User'),
  ('a0000000-0000-4000-8000-000000000003'::uuid, 'viewer@demo.local', 'demo-viewer-pass', 'Demo Viewer')
) as u (id, email, password, name)
on conflict (id) do nothing;

insert into auth.identities (provider_id, user_id, identity_data, provider, last_sign_in_at, created_at, updated_at)
select id::text, id, jsonb_build_object('sub', id::text, 'email', email, 'email_verified', true, 'phone_verified', false),
       'email', now(), now(), now()
from auth.users
where id in ('a0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002',
             'a0000000-0000-4000-8000-000000000003')
on conflict (provider_id, provider) do nothing;

-- Roles: the new-user trigger gave everyone `member`; the admin becomes admin, the viewer gets a
-- read-only role instead.
insert into public.roles (slug, name, description)
values ('viewer', 'Viewer', 'Reads own devices, captures, settings, services, tags; stats and status.')
on conflict (slug) do nothing;
insert into public.role_capabilities (role_id, section, action)
select r.id, s, 'view' from public.roles r,
  unnest(array['devices', 'entries', 'settings', 'services', 'tags', 'stats', 'status']) as s
where r.slug = 'viewer'
on conflict do nothing;
delete from public.user_roles
where user_id in ('a0000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000003');
insert into public.user_roles (user_id, role_id, granted_by)
select u.id, r.id, null
from (values ('a0000000-0000-4000-8000-000000000001'::uuid, 'admin'),
             ('a0000000-0000-4000-8000-000000000003'::uuid, 'viewer')) as u (id, slug)
join public.roles r on r.slug = u.slug
on conflict do nothing;

-- Devices: three for the member, two for the admin, one for the viewer.
insert into public.devices (uuid, name, os, os_version, model, app_version, country, owner_user_id, setup, last_seen_at)
values
  ('d0000000-0000-4000-8000-000000000001', 'Pixel 8', 'android', '15', 'Pixel 8', '2.4.0', 'DE',
   'a0000000-0000-4000-8000-000000000002', '{"ca_installed":true,"proxy":"pac"}', now() - interval '20 seconds'),
  ('d0000000-0000-4000-8000-000000000002', 'iPhone 15', 'ios', '18.1', 'iPhone15,4', '2.4.0', 'DE',
   'a0000000-0000-4000-8000-000000000002', '{"ca_installed":true,"proxy":"vpn"}', now() - interval '3 hours'),
  ('d0000000-0000-4000-8000-000000000003', 'Work laptop', 'macos', '15.1', 'MacBookPro18,3', null, 'NL',
   'a0000000-0000-4000-8000-000000000002', '{"ca_installed":false,"proxy":"manual"}', null),
  ('d0000000-0000-4000-8000-000000000004', 'Lab iPad', 'ios', '17.6', 'iPad13,18', '2.3.9', 'US',
   'a0000000-0000-4000-8000-000000000001', '{"ca_installed":true,"proxy":"pac"}', now() - interval '5 seconds'),
  ('d0000000-0000-4000-8000-000000000005', 'QA Windows', 'windows', '11', null, null, 'US',
   'a0000000-0000-4000-8000-000000000001', '{"ca_installed":true,"proxy":"cdp"}', now() - interval '2 days'),
  ('d0000000-0000-4000-8000-000000000006', 'Viewer phone', 'android', '14', 'SM-S918B', '2.4.0', 'FR',
   'a0000000-0000-4000-8000-000000000003', '{"ca_installed":true,"proxy":"vpn"}', now() - interval '1 minute')
on conflict (uuid) do nothing;

insert into public.device_status (device_uuid, ip, vpn_state, source, country)
values
  ('d0000000-0000-4000-8000-000000000001', '10.20.0.11', 'disconnected', 'pac', 'DE'),
  ('d0000000-0000-4000-8000-000000000002', '10.8.0.2', 'connected', 'vpn', 'DE'),
  ('d0000000-0000-4000-8000-000000000004', '10.20.0.14', 'disconnected', 'pac', 'US'),
  ('d0000000-0000-4000-8000-000000000005', '10.20.0.15', 'unknown', 'cdp', 'US'),
  ('d0000000-0000-4000-8000-000000000006', '10.8.0.6', 'connected', 'vpn', 'FR')
on conflict (device_uuid) do nothing;

-- Services: a shared agent registry, an admin group referenced by the global settings and a
-- member's own group referenced by one device.
insert into public.assistant_agents (id, owner_user_id, slug, label, instructions, model)
values
  ('a9000000-0000-4000-8000-000000000001', null, 'traffic-analyst', 'Traffic analyst',
   'Explain captured exchanges: status, timing, headers. Never echo secrets.', 'gpt-4.1-mini'),
  ('a9000000-0000-4000-8000-000000000002', null, 'security-reviewer', 'Security reviewer',
   'Look for tokens, cookies and keys sent in clear or to third parties.', 'gpt-4.1'),
  ('a9000000-0000-4000-8000-000000000003', 'a0000000-0000-4000-8000-000000000002', 'api-helper',
   'My API helper', 'Knows the demo shop API.', 'gpt-4.1-mini')
on conflict (id) do nothing;

insert into public.service_groups (id, owner_user_id, name, description, ssl_proxy_domains)
values
  ('50000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000001', 'Payments',
   'Payment providers intercepted on every device.', '{"*.stripe.com","api.paypal.com"}'),
  ('50000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000002', 'Demo shop',
   'The shop API under test.', '{"api.shop.example","*.cdn.shop.example"}')
on conflict (id) do nothing;

insert into public.service_group_agents (group_id, agent_id, is_primary, position)
values
  ('50000000-0000-4000-8000-000000000001', 'a9000000-0000-4000-8000-000000000002', true, 0),
  ('50000000-0000-4000-8000-000000000001', 'a9000000-0000-4000-8000-000000000001', false, 1),
  ('50000000-0000-4000-8000-000000000002', 'a9000000-0000-4000-8000-000000000003', true, 0),
  ('50000000-0000-4000-8000-000000000002', 'a9000000-0000-4000-8000-000000000001', false, 1)
on conflict (group_id, agent_id) do nothing;

update public.settings_global
set data = '{"breakpoints":[],"env":{"LOG_LEVEL":"info"},"ssl_proxy_domains":["*.demo.local"],
             "service_groups":["50000000-0000-4000-8000-000000000001"]}'
where id = 1;
insert into public.settings_device (device_uuid, data)
values
  ('d0000000-0000-4000-8000-000000000001',
   '{"breakpoints":[{"pattern":"api.shop.example/v1/checkout*","phase":"request"}],
     "env":{"SHOP_ENV":"staging"},
     "service_groups":["50000000-0000-4000-8000-000000000001","50000000-0000-4000-8000-000000000002"]}')
on conflict (device_uuid) do nothing;

-- Captures: 4000 exchanges over the last six weeks, newest ids newest in time.
select private.create_entries_partitions(now() - interval '6 weeks', now());
select setseed(0.42);
insert into public.entries (ts, kind, request_id, device_uuid, payload)
select ts, 'http', 'seed-' || n, device_uuid,
  jsonb_build_object(
    'method', method, 'scheme', 'https', 'host', host, 'path', path,
    'url', 'https://' || host || path || case when n % 5 = 0 then '?page=' || (n % 7) else '' end,
    'httpVersion', 'HTTP/1.1', 'statusCode', status,
    'requestHeaders', jsonb_build_array(jsonb_build_array('host', host),
      jsonb_build_array('user-agent', 'DemoApp/2.4'), jsonb_build_array('accept', 'application/json')),
    'responseHeaders', jsonb_build_array(jsonb_build_array('content-type', 'application/json'),
      jsonb_build_array('content-length', '27')),
    'requestBody', null,
    'responseBody', jsonb_build_object('text', '{"ok":true,"items":[1,2,3]}', 'encoding', 'utf8',
      'size', 27, 'truncated', false, 'contentType', 'application/json'),
    'sizes', jsonb_build_object('requestWire', 180, 'responseWire', 240),
    'timings', jsonb_build_object('connect', 12, 'tls', 30, 'send', 1, 'wait', 40 + n % 200,
      'receive', 3),
    'tls', jsonb_build_object('version', 'TLSv1.3', 'sni', host, 'intercepted', true),
    'client', jsonb_build_object('ip', '10.20.0.' || (10 + n % 5), 'port', 40000 + n % 20000),
    'attribution', jsonb_build_object('rule', 'port'),
    'source', source)
from (
  select n,
    now() - interval '6 weeks' + (interval '6 weeks' * n / 4000.0) as ts,
    (array['d0000000-0000-4000-8000-000000000001', 'd0000000-0000-4000-8000-000000000002',
           'd0000000-0000-4000-8000-000000000004', 'd0000000-0000-4000-8000-000000000005',
           'd0000000-0000-4000-8000-000000000006'])[1 + floor(random() * 5)::int]::uuid as device_uuid,
    (array['api.shop.example', 'cdn.shop.example', 'www.google-analytics.com', 'api.stripe.com',
           'graph.facebook.com', 'firebaseinstallations.googleapis.com', 'api.github.com',
           'static.demo.local'])[1 + floor(random() * 8)::int] as host,
    (array['/v1/products', '/v1/cart', '/v1/checkout', '/collect', '/v1/payment_intents',
           '/graphql', '/v1/users/me', '/assets/app.js'])[1 + floor(random() * 8)::int] as path,
    (array['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE'])[1 + floor(random() * 6)::int] as method,
    (array[200, 200, 200, 200, 201, 204, 301, 304, 401, 404, 500])[1 + floor(random() * 11)::int] as status,
    (array['pac', 'vpn', 'cdp'])[1 + floor(random() * 3)::int] as source
  from generate_series(1, 4000) as n
) as generated
order by ts;

insert into public.tags (id, owner_user_id, name, color)
values ('7a000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002', 'checkout bug', '#d9480f'),
       ('7a000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000001', 'reviewed', '#2f9e44')
on conflict (id) do nothing;
insert into public.entry_tags (tag_id, entry_id, entry_ts, tagged_by)
select '7a000000-0000-4000-8000-000000000001', e.id, e.ts, 'a0000000-0000-4000-8000-000000000002'
from public.entries e
where e.path = '/v1/checkout' and e.device_uuid = 'd0000000-0000-4000-8000-000000000001'
order by e.id desc limit 10
on conflict do nothing;

insert into public.workspaces (id, owner_user_id, name, description)
values ('3b000000-0000-4000-8000-000000000001', 'a0000000-0000-4000-8000-000000000002',
        'Checkout investigation', 'Failed checkouts on the Pixel.')
on conflict (id) do nothing;
insert into public.workspace_tabs (workspace_id, title, position, state)
values ('3b000000-0000-4000-8000-000000000001', 'Checkout calls', 0, '{"hosts":["api.shop.example"],"search":"checkout"}'),
       ('3b000000-0000-4000-8000-000000000001', 'Errors', 1, '{"status":"5xx"}');
insert into public.workspace_entries (workspace_id, entry_id, entry_ts, added_by)
select '3b000000-0000-4000-8000-000000000001', e.id, e.ts, 'a0000000-0000-4000-8000-000000000002'
from public.entries e
where e.device_uuid = 'd0000000-0000-4000-8000-000000000001' and e.host = 'api.shop.example'
order by e.id desc limit 25
on conflict do nothing;

insert into public.breakpoint_events (device_uuid, request_id, phase, pattern, method, url, message, held_at)
values ('d0000000-0000-4000-8000-000000000001', 'seed-bp-1', 'request', 'api.shop.example/v1/checkout*',
        'POST', 'https://api.shop.example/v1/checkout', '{"method":"POST","url":"https://api.shop.example/v1/checkout"}',
        now() - interval '2 minutes');

-- Federation broker: the well-known DEVELOPMENT sealing key (public half; the private half is
-- supabase/functions/federation-broker/dev-sealing-key.ts). Local only: production sets its own,
-- see docs/federation.md "Secret storage".
insert into private.federation_sealing_key (id, public_key)
values (1, extensions.dearmor($key$
-----BEGIN PGP PUBLIC KEY BLOCK-----

mQGNBGsBTJsBDAC8e8f7fzrSjG9Sss2dvLtjjRjm8OYz7ZG4tLX0mjRTi0XJD0pK
Piv9YZu83apiFzvc32DKnHcNAol0kUpyAwvk2A0Lga9/kDdbPSVDddqjSCDwSPh+
GEAquCXRgV5bHdAXD1xlVc14pWdsxU9P+y4M6UbVSUA6SBP/Ni462TXQ3IbZfs39
atqqcmAJH70KYdb9VQlIsakPeNdcua5UbJVoncSq5E3+hj8s9W3SZ5cdgjBnCzE1
/RNa0mSH3BpB9DV3aRiqS+vsNOizkFQNJeOgnuNZ1kaQYc1aYTX2uUs+GP8avlWZ
lqobAFqMjWpFIyVm09+hdQRJRaRk1yofGgOAyDBpXzDrU6PlZm+W3TWUh7fbV42u
t0UWQvzXoG01nYmc31R7xIMXcmbjR7FBzME343d7+QntFpnsFvIeWsEIQIPmtV90
NueQmcOwojdYWUt1Gl9aq786qkFGxHNC/Z81i9Fxug/u/AoOvv9s3FZXhIbJmsE4
B4/LfxGR3vxCM3MAEQEAAbRMZmVkZXJhdGlvbi1icm9rZXIgbG9jYWwgZGV2ZWxv
cG1lbnQgc2VhbGluZyBrZXkgPHNlYWxpbmdAZmVkZXJhdGlvbi5pbnZhbGlkPokB
zgQTAQoAOBYhBFL0B/QyZHRM928zO43QzGVHY4tSBQJrAUybAhsvBQsJCAcCBhUK
CQgLAgQWAgMBAh4BAheAAAoJEI3QzGVHY4tSxJ0L/1AK9J732QQvEEVrX6RbzaGw
Y7osLG44htXXirJcGKdfy498hX14laZxGytF+rDDWhrI8nnH86eU8qKmGhShDS8E
tu5JEtA468zhOkvO1PrzIcoW5qAdUe6nL5MHDU/Cl6ZSOPEw7H2T4KPK1cd2y5Zf
0JbNyCyC8wWHnfp4n5q+URPo0NhJAx1OJQR/Ek7YczDsQnyUy/vH+JAivtgiwLhe
ZSa3QLrwMMiebsOnEp51szvCUUsD81EWFfZU1N8GNCUMLjm3lmPRdLd9gFTHa/Uq
4GLwO7zsrdX4GXUbJyiDvR+u4zpqbstqoRdFjlbkK84dch8FK8iyn9nhHEHAcThx
3defHDt7JBljrUAxqT1loOsbieKqlMarwcR2cpTs6j/ob+bvKYbc3vjmL5bo2Tv9
3FmXpPuoZL/UDYHVl2mkZGBn1EiBvZ/K8WtQPjnnItoV04NuVetiL3tTpFNmqjY7
kfiKHzg2BnGjqPc1fj/bqs7THku1J9c2UMgUBInEH7kBjQRrAUybAQwAum0cIkUs
lr/EpiTML9VGQan9TFcHoW40zr1VwyxE3LhhL9TJbdXDB1B+sI4MIVFBtiWjPF6d
8HgETgZMmo32r1WYkeTnphw6YXlcnlpVoLX0zNCZDUVhyqX+4tj0oIj4cI0Qp3PP
capTbMLdZ0l1zz4p5yXaoJ/46DZjIqJNZ6b8JHi8SXJvRKa2bh5q8iqKxljngFHJ
BpjPYzouzlCfdyEIDv2QRzyaN1xatORpSTFcMeanpmj2VDnnRahFbN0SxBL3czhg
wPZtzDyWMG5/Xt0hQXnAnDc609HPaLjntfpt9QyYVqAlMwlFJty4hd3AjVJ8wv1Z
WRVA4GQdtdEEINDTaeqQcNgsTQHLF0LOpfNmaqqiyIaZbT3k8PXI0/ChvMzj/0s5
la9o4qJy1l8Gv+p6soQ5C3L7NYIm8IGV1Ruaw49qhhOLo7SG80YSnrP3mfNqwBy4
5HCy2UUDNLQSLg0jPqP82+Ut20f+6dXTxEfk/5Vlcdhiu6kIMnaGf0SHABEBAAGJ
A2wEGAEKACAWIQRS9Af0MmR0TPdvMzuN0MxlR2OLUgUCawFMmwIbLgHACRCN0Mxl
R2OLUsD0IAQZAQoAHRYhBD2yAWFcdHWM9S6BL2cn//Rpk6KFBQJrAUybAAoJEGcn
//Rpk6KFr78MAIHLV+lQ065aLiHZuFSgBmIusuZPWRX3GB/CRDu0pqkdB/+X7IXu
Z93qLUdB0M8Mdb6WNxlK14obH5ud+wllxjljY+03pGI7LSq6Pt499GaQ1CUX46cb
di/gOwo9kQlETf+xLYWYTJBtpLWktkfBtmXaYKxrhPKCrqKNY1p4PALMfMFVCSc8
hsWHNtKpXwAJ1ZE40TBKNLQcQtzmut0ftmXo6eRDOwSEY3vBb0qRM4SEfJDw7UVq
31WsO4BOsGl3sVel71BPBoH+zLrPwF3WvD1ztRuSQmRsAPGeyzhgYCYibQujxDMV
znP5ggF4QyD6isBm9BLcz4D+6Cmwq2+gnByKNy1yh5TzxKIWkjW3mLpQfFLNBXLR
bsFPZpuvRhYubelNXF+ofVD4qNoU+Ijxc3Ext8YGVnadKCQY9Sv5+meYoEIhDp/+
BbWsVy1BKhZse+dy+74LxNpiWnTstYtE3TBRVwQ+63YJJJtj5DNpBRvXwBYX1lxN
0yW+IUbaaQtN7pF5C/91vGdmZTvw4hD90KaLbZThXuPb7xLJ1eYls3OvYeGlZApR
UM5vzTrG0OzVCVucFKt49fNeRh9Kx1lMd14bGfmKIJDS+0/JnWMll9UE9ZXKp9hu
Lf/criU+Y9JiqIJ5DAzYRBHTsGlv2/HwHB+XMzmN2iGqik0ZsFZd3ce/8qNziI7U
HrlU+iw5s/CtV243HmTaW3phXkFLYvWJK2RVLQWYdoNfQUOQsEujwOCnXE/EHTyS
IpTdYnMzW4lMhFLUQ3oX7VB+R6yrdNveBySSVAa89j8Wz2GO61zSj3OpVQGkBdFe
ylC0AykDhFDJORWlLX3BkJ8n44xgAvJDYcClCPnNQfWVNCCs9qDTZe7oU1NOU0hf
HR6l4/TWWtRVfh39w4K05MYPdAFD5nh447hQJ0ems2ZjmjrJ0BeKD69W58f3Qg9i
YML/3p41ahlfabO7pLfAprXT+Mf2vF9QMabeGA9DvtI+XdAHtTwaSgpWM0Au6vYg
uAwIN7MbDF5HDv4kR+w=
=9lq8
-----END PGP PUBLIC KEY BLOCK-----
$key$))
on conflict (id) do nothing;
