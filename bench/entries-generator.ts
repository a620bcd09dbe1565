// Synthetic captures for benchmarks: N entries with realistic hosts (a skewed mix of ~200 API,
// CDN and tracker hosts) and paths (templated with ids, so most are distinct), methods, statuses,
// timings with a long tail, body sizes and about 1 % upstream failures, spread evenly over the
// last W weeks and over U users' devices. Runs as one INSERT … SELECT per batch on the server.

import type { Client } from 'pg';
import type { BenchFlags } from './bench-cli.ts';

/** The --entries and --weeks flags of every bench that times reads over generated captures. */
export const GENERATED_CAPTURE_FLAGS = {
  entries: {
    type: 'string',
    value: 'N',
    description: 'captures generated before timing by bench/entries-generator.ts',
    default: '1000000',
  },
  weeks: {
    type: 'string',
    value: 'W',
    description: 'weeks the captures are spread over, evenly, one weekly partition each',
    default: '26',
  },
} as const satisfies BenchFlags;

export interface BenchDataOptions {
  entries: number;
  weeks: number;
  users: number;
  devicesPerUser: number;
  /** Bytes of incompressible response-body text per capture (default 0: no body). Above about
   *  2 kB the payload is stored out of line (TOAST), as real captures with bodies are. */
  bodyBytes?: number;
  batchSize?: number;
  onProgress?: (inserted: number) => void;
}

export interface BenchData {
  userIds: string[];
  deviceUuids: string[];
}

const SUBDOMAINS = ['api', 'cdn', 'www', 'static', 'graph', 'auth', 'events', 'img'];
const DOMAINS = [
  'shop.example',
  'stripe.com',
  'google-analytics.com',
  'facebook.com',
  'github.com',
  'apple.com',
  'icloud.com',
  'googleapis.com',
  'amazonaws.com',
  'cloudfront.net',
  'sentry.io',
  'segment.io',
  'mixpanel.com',
  'doubleclick.net',
  'twitter.com',
  'tiktokv.com',
  'spotify.com',
  'netflix.com',
  'whatsapp.net',
  'slack.com',
  'zoom.us',
  'dropbox.com',
  'paypal.com',
  'adjust.com',
  'branch.io',
];
const PATH_TEMPLATES = [
  '/v1/users/{id}',
  '/v1/orders/{id}/items',
  '/api/v2/products/{id}',
  '/collect',
  '/graphql',
  '/assets/{hex}.js',
  '/track',
  '/v1/checkout/sessions/{id}',
  '/oauth/token',
  '/v2/events/batch',
  '/img/{hex}.webp',
  '/v1/invoices/{id}/pdf',
  '/health',
  '/v1/cart',
  '/search',
];

export const BENCH_HOSTS = SUBDOMAINS.flatMap((sub) => DOMAINS.map((domain) => `${sub}.${domain}`));

/** Creates the bench users and devices, the partitions, then the entries in batches. */
export async function generateBenchData(db: Client, options: BenchDataOptions): Promise<BenchData> {
  const data = await createBenchDevices(db, options);
  await insertBenchEntries(db, data.deviceUuids, options);
  await db.query('analyze public.entries');
  return data;
}

/** U users with D devices each, and the weekly partitions of the last W weeks. */
export async function createBenchDevices(
  db: Client,
  options: Pick<BenchDataOptions, 'users' | 'devicesPerUser' | 'weeks'>,
): Promise<BenchData> {
  const userIds = Array.from(
    { length: options.users },
    (_, i) => `b0000000-0000-4000-8000-${String(i + 1).padStart(12, '0')}`,
  );
  await db.query(
    `insert into auth.users (instance_id, id, aud, role, email, created_at, updated_at)
     select '00000000-0000-0000-0000-000000000000', id, 'authenticated', 'authenticated',
            'bench-' || ordinality || '@bench.local', now(), now()
     from unnest($1::uuid[]) with ordinality as id
     on conflict (id) do nothing`,
    [userIds],
  );
  const { rows } = await db.query<{ uuid: string }>(
    `insert into public.devices (name, os, owner_user_id, last_seen_at)
     select 'bench device ' || u.ordinality || '.' || d, (array['ios','android','macos'])[1 + d % 3],
            u.id, now() - (d * interval '1 minute')
     from unnest($1::uuid[]) with ordinality as u (id, ordinality), generate_series(1, $2) as d
     returning uuid`,
    [userIds, options.devicesPerUser],
  );
  await db.query(
    `select private.create_entries_partitions(now() - make_interval(weeks => $1), now())`,
    [options.weeks],
  );
  return { userIds, deviceUuids: rows.map((row) => row.uuid) };
}

/** N entries over the last W weeks on the given devices, in batches of one INSERT … SELECT. */
export async function insertBenchEntries(
  db: Client,
  deviceUuids: string[],
  options: Pick<BenchDataOptions, 'entries' | 'weeks' | 'bodyBytes' | 'batchSize' | 'onProgress'>,
): Promise<void> {
  const batchSize = options.batchSize ?? 100_000;
  for (let start = 0; start < options.entries; start += batchSize) {
    const count = Math.min(batchSize, options.entries - start);
    await db.query(
      `insert into public.entries (ts, kind, request_id, device_uuid, payload)
       select ts, kind, 'bench-' || n, device_uuid, jsonb_build_object(
           'method', method, 'scheme', 'https', 'host', host, 'path', path,
           'url', 'https://' || host || path || query,
           'statusCode', case kind when 'error' then 502 else status end,
           'requestHeaders', jsonb_build_array(jsonb_build_array('host', host),
             jsonb_build_array('user-agent', 'BenchApp/1.0')),
           'responseHeaders', jsonb_build_array(jsonb_build_array('content-type', 'application/json')),
           'timings', jsonb_build_object('wait', n % 300, 'receive', n % 7,
             -- The long tail: random() below about 2e-8 would underflow float8 at the 40th power
             -- (SQLSTATE 22003, once in about 50M rows), so it is floored at 1e-6 (1e-240).
             'total', round((n % 300 + n % 7 + 1
               + power(greatest(random(), 1e-6), 40) * 30000)::numeric, 2)),
           'sizes', jsonb_build_object(
             'requestBody', case when method in ('POST', 'PUT') then 64 + n % 4000 else 0 end,
             'responseBody', case kind when 'error' then 0 else (n * 7919) % 65536 end),
           'source', (array['pac','vpn','cdp'])[1 + n % 3])
         || case kind when 'error' then jsonb_build_object('error', 'upstream unreachable')
            else '{}' end
         || case when $8::int > 0 then jsonb_build_object('responseBody', jsonb_build_object(
              'text', (select string_agg(md5(n::text || '.' || b), '')
                       from generate_series(1, ceil($8::int / 32.0)::int) as b),
              'encoding', 'utf8', 'size', $8::int, 'truncated', false))
            else '{}' end
       from (
         select n,
           -- About 1 in 100 exchanges failed upstream (kind error, the proxy's 502).
           case when n % 101 = 0 then 'error' else 'http' end as kind,
           now() - make_interval(weeks => $3) + make_interval(weeks => $3) * (n::float8 / $4) as ts,
           ($5::uuid[])[1 + floor(random() * cardinality($5::uuid[]))::int] as device_uuid,
           ($6::text[])[1 + floor(power(random(), 3) * cardinality($6::text[]))::int] as host,
           replace(replace(($7::text[])[1 + floor(random() * cardinality($7::text[]))::int],
             '{id}', (floor(random() * 1000000))::text),
             '{hex}', substr(md5(n::text), 1, 12)) as path,
           case when n % 4 = 0 then '?page=' || (n % 50) else '' end as query,
           (array['GET','GET','GET','POST','PUT','DELETE'])[1 + n % 6] as method,
           (array[200,200,200,201,204,301,304,401,404,500])[1 + n % 10] as status
         from generate_series($1::bigint, $2::bigint) as n
       ) as g
       order by ts`,
      [
        start + 1,
        start + count,
        options.weeks,
        options.entries,
        deviceUuids,
        BENCH_HOSTS,
        PATH_TEMPLATES,
        options.bodyBytes ?? 0,
      ],
    );
    options.onProgress?.(start + count);
  }
}

export interface PreparedBenchEntries {
  data: BenchData;
  /** The last generated user, given the admin role: the benchmarks' unscoped caller. */
  adminId: string;
  generationSeconds: number;
}

/**
 * The benchmarks' common start: `entries` captures over `weeks` for 10 users × 5 devices, with
 * progress on stderr, vacuumed and analyzed (the steady state autovacuum reaches: GIN pending
 * lists merged, statistics fresh), and the last user made an admin.
 */
export async function prepareBenchEntries(
  db: Client,
  options: { entries: number; weeks: number },
): Promise<PreparedBenchEntries> {
  const started = performance.now();
  const data = await generateBenchData(db, {
    entries: options.entries,
    weeks: options.weeks,
    users: 10,
    devicesPerUser: 5,
    onProgress: (inserted) =>
      process.stderr.write(`\rgenerated ${inserted}/${options.entries} entries`),
  });
  process.stderr.write('\n');
  await db.query('vacuum analyze public.entries');
  const generationSeconds = (performance.now() - started) / 1000;
  const adminId = data.userIds.at(-1) as string;
  await db.query(
    `insert into public.user_roles (user_id, role_id) select $1, id from public.roles where slug = 'admin'`,
    [adminId],
  );
  return { data, adminId, generationSeconds };
}
