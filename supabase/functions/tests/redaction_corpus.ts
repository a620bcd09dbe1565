// Redaction corpus: fabricated secrets in the real formats of their issuers (JWT, GitHub,
// Stripe, AWS, PEM, Slack, Google, OpenAI, Anthropic, npm, Supabase, Basic, cookies, URL
// passwords…), each inside a realistic capture payload, plus the leak checks both test runners
// (Deno: redaction_test.ts, Node: packages/tool-server/test/redaction.test.ts) apply to it.
// Values are generated from fixed seeds, and vendor prefixes are joined at run time, so this
// file holds no literal that a secret scanner would take for a live credential.
import type { RedactionKind } from '../_shared/redaction.ts';

export interface CorpusCase {
  /** What the case shows; the test name. */
  name: string;
  /** The capture's `entries.kind`. */
  kind: 'http' | 'websocket' | 'error';
  payload: Record<string, unknown>;
  /** Fabricated secrets that must not survive, in any encoding. */
  secrets: string[];
  /** Kinds that must name at least one placeholder. */
  kinds: RedactionKind[];
  /** Text the redacted JSON must still contain (non-secrets, structure, placeholders' context). */
  present: string[];
}

/** A header every case sends and no redaction may touch. */
export const HARMLESS_HEADER: [string, string] = ['Accept', 'application/json'];

const UPPER = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = '0123456789abcdef';
const BASE64 = `${ALNUM}+/`;
const BASE64URL = `${ALNUM}-_`;

/** Deterministic fake characters (mulberry32 seeded by the label). */
export function fake(alphabet: string, length: number, label: string): string {
  let seed = 2166136261;
  for (const char of label) seed = Math.imul(seed ^ char.charCodeAt(0), 16777619);
  let out = '';
  for (let index = 0; index < length; index += 1) {
    seed = (seed + 0x6d2b79f5) | 0;
    let value = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    out += alphabet[((value ^ (value >>> 14)) >>> 0) % alphabet.length];
  }
  return out;
}

const utf8 = new TextEncoder();

function base64(text: string): string {
  let binary = '';
  for (const byte of utf8.encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

function base64url(text: string): string {
  return base64(text).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function jwt(claims: Record<string, unknown>, label: string): string {
  const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  return `${header}.${base64url(JSON.stringify(claims))}.${fake(BASE64URL, 43, label)}`;
}

function pem(label: string, prefix: string, lines: number, label2: string): string {
  const body = (prefix + fake(BASE64, lines * 64 - prefix.length - 20, label2)).match(/.{1,64}/g);
  return `-----BEGIN ${label}-----\n${body?.join('\n')}\n-----END ${label}-----\n`;
}

/** The second base64 line of a PEM block: key material only a leak would show. */
function pemLine(block: string): string {
  return block.split('\n')[2] ?? '';
}

const join = (...parts: string[]) => parts.join('');

// The fabricated secrets.
const SUPABASE_REF = 'qzkfhwubmlcnxoaeyrtd';
const ACCESS_JWT = jwt({
  aud: 'authenticated',
  exp: 1893456000,
  iat: 1893452400,
  iss: `https://${SUPABASE_REF}.supabase.co/auth/v1`,
  sub: 'a0000000-0000-4000-8000-000000000002',
  email: 'user@demo.local',
  role: 'authenticated',
  session_id: '5f0c4f3e-8f6b-4e1a-9d2c-7b3a1e9f0c42',
}, 'access-jwt');
const ID_JWT = jwt(
  { iss: 'https://accounts.shop.example', sub: '2481', aud: 'shop-ios', nonce: 'n-0S6_WzA2Mj' },
  'id-jwt',
);
const REALTIME_JWT = jwt({ role: 'authenticated', sub: 'u-77', exp: 1893459999 }, 'realtime-jwt');
const SUPABASE_REFRESH = fake(LOWER + DIGITS, 12, 'supabase-refresh');
const GITHUB_CLASSIC = join('gh', 'p_', fake(ALNUM, 36, 'ghp'));
const GITHUB_OAUTH = join('gh', 'o_', fake(ALNUM, 36, 'gho'));
const GITHUB_USER = join('gh', 'u_', fake(ALNUM, 36, 'ghu'));
const GITHUB_SERVER = join('gh', 's_', fake(ALNUM, 36, 'ghs'));
const GITHUB_REFRESH = join('gh', 'r_', fake(ALNUM, 76, 'ghr'));
const GITHUB_FINE = join('github', '_pat_', fake(ALNUM, 22, 'pat1'), '_', fake(ALNUM, 59, 'pat2'));
const STRIPE_LIVE = join('sk', '_live_', fake(ALNUM, 99, 'sk-live'));
const STRIPE_TEST = join('sk', '_test_', fake(ALNUM, 24, 'sk-test'));
const STRIPE_RESTRICTED = join('rk', '_live_', fake(ALNUM, 99, 'rk-live'));
const STRIPE_WEBHOOK = join('wh', 'sec_', fake(ALNUM, 32, 'whsec'));
const STRIPE_CLIENT_SECRET = join(
  'pi_3',
  fake(ALNUM, 24, 'pi'),
  '_secret_',
  fake(ALNUM, 25, 'pis'),
);
const STRIPE_PUBLISHABLE = join('pk', '_live_', fake(ALNUM, 99, 'pk-live'));
const AWS_KEY_ID = join('AK', 'IA', fake(UPPER + '234567', 16, 'akia'));
const AWS_SECRET = fake(BASE64, 40, 'aws-secret');
const AWS_TEMP_ID = join('AS', 'IA', fake(UPPER + '234567', 16, 'asia'));
const AWS_TEMP_SECRET = fake(BASE64, 40, 'aws-temp-secret');
const AWS_SESSION_TOKEN = join('IQoJb3JpZ2luX2VjE', fake(BASE64, 380, 'aws-session'));
const AWS_SIGNATURE = fake(HEX, 64, 'sigv4');
const RSA_KEY = pem('RSA PRIVATE KEY', 'MIIEowIBAAKCAQEA', 25, 'rsa');
const EC_KEY = pem('EC PRIVATE KEY', 'MHcCAQEEI', 3, 'ec');
const OPENSSH_KEY = pem(
  'OPENSSH PRIVATE KEY',
  'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
  7,
  'openssh',
);
const PKCS8_KEY = pem('PRIVATE KEY', 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC', 26, 'pkcs8');
const SLACK_BOT = join(
  'xo',
  'xb-',
  fake(DIGITS, 12, 'sb1'),
  '-',
  fake(DIGITS, 13, 'sb2'),
  '-',
  fake(ALNUM, 24, 'sb3'),
);
const SLACK_USER = join(
  'xo',
  'xp-',
  fake(DIGITS, 12, 'su1'),
  '-',
  fake(DIGITS, 12, 'su2'),
  '-',
  fake(DIGITS, 13, 'su3'),
  '-',
  fake(HEX, 32, 'su4'),
);
const SLACK_HOOK_SECRET = join(
  'T0',
  fake(UPPER + DIGITS, 8, 'ht'),
  '/B0',
  fake(UPPER + DIGITS, 8, 'hb'),
  '/',
  fake(ALNUM, 24, 'hs'),
);
const GOOGLE_KEY = join('AI', 'za', 'Sy', fake(BASE64URL, 33, 'google'));
const OPENAI_KEY = join(
  'sk',
  '-proj-',
  fake(BASE64URL, 74, 'oa1'),
  'T3BlbkFJ',
  fake(BASE64URL, 74, 'oa2'),
);
const ANTHROPIC_KEY = join('sk', '-ant-api03-', fake(BASE64URL, 93, 'anthropic'), 'AA');
const NPM_TOKEN = join('np', 'm_', fake(ALNUM, 36, 'npm'));
const GITLAB_TOKEN = join('gl', 'pat-', fake(BASE64URL, 20, 'gitlab'));
const SUPABASE_SECRET = join('sb', '_secret_', fake(BASE64URL, 32, 'sb-secret'));
const SUPABASE_PUBLISHABLE = join('sb', '_publishable_', fake(BASE64URL, 32, 'sb-publishable'));
const SUPABASE_PERSONAL = join('sb', 'p_', fake(HEX, 40, 'sbp'));
const BASIC_PASSWORD = 'Tr0ub4dor&3-horse-staple';
const BASIC_CREDENTIAL = base64(`svc-reporter:${BASIC_PASSWORD}`);
const PROXY_PASSWORD = 'Pr0xy-Pa55-Corvid';
const PROXY_CREDENTIAL = base64(`proxyuser:${PROXY_PASSWORD}`);
const STRIPE_BASIC = base64(`${STRIPE_RESTRICTED}:`);
const SESSION_COOKIE = fake(LOWER + DIGITS, 32, 'django-session');
const SESSION_COOKIE_NEW = fake(LOWER + DIGITS, 32, 'django-session-2');
const CSRF_COOKIE = fake(ALNUM, 64, 'csrf-cookie');
const SUPABASE_COOKIE = `base64-${
  base64(JSON.stringify({ access_token: ACCESS_JWT, refresh_token: SUPABASE_REFRESH }))
}`;
const URL_PASSWORD = 'Pl4in-Pass-In-Url-42';
const PG_PASSWORD = 'pg-S3cret-Walrus-99';
const REDIS_PASSWORD = 'r3dis-Pass-Heron-7';
const MONGO_PASSWORD = 'm0ngo-Pass-Otter-3';
const ACCOUNT_PASSWORD = 'Sup3r-S3cret-Pw!-Quokka';
const OTP = 'otp-482913-x';
const NESTED_API_KEY = `shop_live_k3y_${fake(ALNUM, 24, 'nested-api')}`;
const CARD_NUMBER = '4111 1111 1111 1111';
const CRM_SECRET = `crm-cl1ent-s3cret-${fake(ALNUM, 12, 'crm')}`;
const CRM_REFRESH = `1//0g${fake(BASE64URL, 40, 'crm-refresh')}`;
const SESSION_ID = `sess_${fake(HEX, 24, 'session-id')}`;
const FORM_PASSWORD = 'P@ss w0rd!? Lynx';
const FORM_CLIENT_SECRET = `cs_${fake(ALNUM, 32, 'form-client-secret')}`;
const BODY_ACCESS_TOKEN = `at_${fake(ALNUM, 40, 'body-access')}`;
const BODY_REFRESH_TOKEN = `rt_${fake(ALNUM, 40, 'body-refresh')}`;
const GZIP_SECRET = `gz_${fake(ALNUM, 30, 'gzip-secret')}`;
const MULTIPART_API_KEY = `mp_k3y_${fake(ALNUM, 28, 'multipart-key')}`;
const MULTIPART_PASSWORD = 'Multipart-Pa55-Gecko';
const OAUTH_CODE = fake(BASE64URL, 22, 'oauth-code');
const IMPLICIT_TOKEN = jwt({ sub: 'implicit', scope: 'openid' }, 'implicit-jwt');
const API_KEY_HEADER = `k_${fake(HEX, 32, 'x-api-key')}`;
const AUTH_TOKEN_HEADER = `at-${fake(HEX, 32, 'x-auth-token')}`;
const CSRF_HEADER = fake(BASE64URL, 43, 'x-csrf');
const VAULT_TOKEN = `hvs.${fake(BASE64URL, 90, 'vault')}`;
const APIM_KEY = fake(HEX, 32, 'apim');
const CHAT_BEARER = fake(BASE64URL, 40, 'chat-bearer');
const HTML_CSRF = fake(BASE64, 86, 'html-csrf');
const HTML_AUTHENTICITY = fake(BASE64, 86, 'authenticity');
const HTML_API_TOKEN = `tok_${fake(ALNUM, 32, 'html-api-token')}`;
const LOG_URL_PASSWORD = 'p4ss-in-log-Marmot';
const LOG_PASSWORD = 'hunter-two-22-Ibis';
const LOG_ENV_KEY = fake(ALNUM, 40, 'env-api-key');
const SENDGRID_KEY = join('SG', '.', fake(BASE64URL, 22, 'sg1'), '.', fake(BASE64URL, 43, 'sg2'));
const HF_TOKEN = join('hf', '_', fake(ALNUM, 34, 'hf'));
const JWK_D = fake(BASE64URL, 342, 'jwk-d');
const JWK_P = fake(BASE64URL, 171, 'jwk-p');
const JWK_Q = fake(BASE64URL, 171, 'jwk-q');
const JWK_N = fake(BASE64URL, 342, 'jwk-n');
const DIGEST_RESPONSE = fake(HEX, 32, 'digest');
const HAR_TOKEN = `har_${fake(ALNUM, 30, 'har-token')}`;
const HAR_COOKIE = fake(ALNUM, 30, 'har-cookie');
const PNG_BYTES = [
  0x89,
  0x50,
  0x4e,
  0x47,
  0x0d,
  0x0a,
  0x1a,
  0x0a,
  0x00,
  0x00,
  0x00,
  0x0d,
  0xff,
  0x00,
];
const BINARY_MESSAGE = [0x00, 0x01, 0xfe, 0xff, 0x10, 0x80, 0x7f, 0x00, 0x42];

/** A capture payload as the proxy writes it (docs/proxy.md "The capture row"). */
function capture(overrides: Record<string, unknown>): Record<string, unknown> {
  const url = String(overrides.url ?? 'https://api.shop.example/v1/cart?page=2');
  const parsed = /^(\w+):\/\/(?:[^@/]*@)?([^/:?#]+)(?::(\d+))?([^?#]*)(?:\?([^#]*))?/.exec(url);
  const host = parsed?.[2] ?? 'api.shop.example';
  const extraRequest = (overrides.requestHeaders ?? []) as [string, string][];
  const extraResponse = (overrides.responseHeaders ?? []) as [string, string][];
  return {
    method: 'GET',
    scheme: parsed?.[1] ?? 'https',
    host,
    port: Number(parsed?.[3] ?? 443),
    path: parsed?.[4] || '/',
    query: parsed?.[5] ?? '',
    url,
    httpVersion: 'HTTP/1.1',
    statusCode: 200,
    statusText: 'OK',
    requestBody: null,
    responseBody: null,
    sizes: { requestBody: 0, responseBody: 0 },
    timings: { connect: 0, tls: -1, send: 0.2, wait: 40, receive: 3, total: 43.4 },
    tls: {
      sni: host,
      alpn: 'h2',
      version: 'TLSv1.3',
      cipher: 'TLS_AES_256_GCM_SHA384',
      intercepted: true,
    },
    upstreamTls: { version: 'TLSv1.3', cipher: 'TLS_AES_256_GCM_SHA384', authorized: true },
    client: { ip: '10.20.0.11', port: 51234 },
    listenerPort: 20004,
    attribution: { rule: 'port', device_uuid: 'd0000000-0000-4000-8000-000000000001' },
    source: 'pac',
    ...overrides,
    requestHeaders: [
      ['Host', host],
      ['User-Agent', 'ShopApp/5.2.1 (iPhone; iOS 18.1; Scale/3.00)'],
      HARMLESS_HEADER,
      ...extraRequest,
    ],
    responseHeaders: [
      ['Content-Type', 'application/json; charset=utf-8'],
      ['X-Request-Id', 'req_7f3a9c21'],
      ...extraResponse,
    ],
  };
}

function textBody(text: string, contentType: string): Record<string, unknown> {
  return {
    text,
    encoding: 'utf8',
    size: utf8.encode(text).length,
    truncated: false,
    contentType,
  };
}

function base64Body(bytes: Uint8Array, contentType: string, extra = {}): Record<string, unknown> {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return {
    base64: btoa(binary),
    encoding: 'base64',
    size: bytes.length,
    truncated: false,
    contentType,
    ...extra,
  };
}

const json = (value: unknown) => textBody(JSON.stringify(value), 'application/json');
const MULTIPART_BOUNDARY = '----WebKitFormBoundary7MA4YWxkTrZu0gW';

function multipartBytes(): Uint8Array {
  const text = (part: string) => Array.from(utf8.encode(part));
  const crlf = '\r\n';
  const head = (disposition: string, type?: string) =>
    `--${MULTIPART_BOUNDARY}${crlf}Content-Disposition: form-data; ${disposition}${crlf}` +
    (type ? `Content-Type: ${type}${crlf}` : '') + crlf;
  return new Uint8Array([
    ...text(`${head('name="title"')}Holiday photo${crlf}`),
    ...text(`${head('name="api_key"')}${MULTIPART_API_KEY}${crlf}`),
    ...text(
      `${head('name="metadata"', 'application/json')}${
        JSON.stringify({ album: 'Summer', owner: { password: MULTIPART_PASSWORD } })
      }${crlf}`,
    ),
    ...text(head('name="file"; filename="photo.png"', 'image/png')),
    ...PNG_BYTES,
    ...text(`${crlf}--${MULTIPART_BOUNDARY}--${crlf}`),
  ]);
}

export const MULTIPART_FILE_BYTES: readonly number[] = PNG_BYTES;
export const BINARY_MESSAGE_BYTES: readonly number[] = BINARY_MESSAGE;

export const REDACTION_CORPUS: CorpusCase[] = [
  {
    name: 'a Supabase sign-in: JWT pair in the JSON answer, the JWT as Bearer on the next call',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: `https://${SUPABASE_REF}.supabase.co/auth/v1/token?grant_type=password`,
      requestHeaders: [['Authorization', `Bearer ${ACCESS_JWT}`], ['apikey', SUPABASE_PUBLISHABLE]],
      responseBody: json({
        access_token: ACCESS_JWT,
        token_type: 'bearer',
        expires_in: 3600,
        expires_at: 1893456000,
        refresh_token: SUPABASE_REFRESH,
        user: { id: 'a0000000-0000-4000-8000-000000000002', email: 'user@demo.local' },
      }),
    }),
    secrets: [ACCESS_JWT, SUPABASE_REFRESH],
    kinds: ['jwt'],
    present: [
      '"token_type\\":\\"bearer\\"',
      '"expires_in\\":3600',
      'user@demo.local',
      'grant_type=password',
      SUPABASE_PUBLISHABLE,
      'Bearer [redacted:jwt:',
    ],
  },
  {
    name: 'GitHub tokens: classic PAT in Authorization, fine-grained, OAuth, user, server, refresh',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://ci.shop.example/api/v2/pipelines',
      requestHeaders: [['Authorization', `token ${GITHUB_CLASSIC}`]],
      requestBody: json({
        repository_url: `https://x-access-token:${GITHUB_SERVER}@github.com/acme/shop.git`,
        refresh: GITHUB_REFRESH,
        oauth: GITHUB_OAUTH,
        user_token: GITHUB_USER,
        fine_grained: GITHUB_FINE,
        branch: 'main',
      }),
    }),
    secrets: [
      GITHUB_CLASSIC,
      GITHUB_SERVER,
      GITHUB_REFRESH,
      GITHUB_OAUTH,
      GITHUB_USER,
      GITHUB_FINE,
    ],
    kinds: ['github-token'],
    present: [
      'token [redacted:github-token:',
      '@github.com/acme/shop.git',
      '"branch\\":\\"main\\"',
    ],
  },
  {
    name: 'Stripe: secret key as Bearer, card fields in a form body, a PaymentIntent client secret',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.stripe.com/v1/payment_intents',
      requestHeaders: [
        ['Authorization', `Bearer ${STRIPE_LIVE}`],
        ['Content-Type', 'application/x-www-form-urlencoded'],
      ],
      requestBody: textBody(
        `amount=2000&currency=usd&payment_method_data[type]=card&card[number]=${
          CARD_NUMBER.replace(/ /g, '')
        }&card[cvc]=731&card[exp_month]=12`,
        'application/x-www-form-urlencoded',
      ),
      responseBody: json({
        id: 'pi_3Mt0000000000000',
        object: 'payment_intent',
        client_secret: STRIPE_CLIENT_SECRET,
        amount: 2000,
      }),
    }),
    secrets: [STRIPE_LIVE, CARD_NUMBER.replace(/ /g, ''), STRIPE_CLIENT_SECRET],
    kinds: ['stripe-key', 'card', 'secret'],
    present: [
      'amount=2000&currency=usd',
      'card[cvc]=[redacted:card:',
      'card[exp_month]=12',
      '"object\\":\\"payment_intent\\"',
    ],
  },
  {
    name: 'Stripe: restricted key as Basic user name, webhook secret, test key in a log line',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.stripe.com/v1/webhook_endpoints',
      requestHeaders: [['Authorization', `Basic ${STRIPE_BASIC}`]],
      responseBody: json({
        id: 'we_1Mr5jULkdIwHu7ix1ZgXvGcM',
        secret: STRIPE_WEBHOOK,
        url: 'https://shop.example/hooks/stripe',
        enabled_events: ['payment_intent.succeeded'],
      }),
      error: `retrying with fallback key ${STRIPE_TEST} after 401`,
    }),
    secrets: [STRIPE_RESTRICTED, STRIPE_BASIC, STRIPE_WEBHOOK, STRIPE_TEST],
    kinds: ['basic-auth', 'stripe-key'],
    present: [
      'Basic [redacted:basic-auth:',
      'payment_intent.succeeded',
      'retrying with fallback key',
    ],
  },
  {
    name: 'AWS: SigV4 Authorization, session token header, presigned URL in JSON',
    kind: 'http',
    payload: capture({
      method: 'PUT',
      url: 'https://shop-assets.s3.us-east-1.amazonaws.com/uploads/photo.png',
      requestHeaders: [
        [
          'Authorization',
          `AWS4-HMAC-SHA256 Credential=${AWS_TEMP_ID}/20261121/us-east-1/s3/aws4_request, ` +
          `SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=${AWS_SIGNATURE}`,
        ],
        ['X-Amz-Security-Token', AWS_SESSION_TOKEN],
        ['X-Amz-Date', '20261121T101500Z'],
      ],
      responseBody: json({
        download_url:
          `https://shop-assets.s3.amazonaws.com/uploads/photo.png?X-Amz-Algorithm=AWS4-HMAC-SHA256` +
          `&X-Amz-Credential=${AWS_KEY_ID}%2F20261121%2Fus-east-1%2Fs3%2Faws4_request` +
          `&X-Amz-Date=20261121T101500Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host` +
          `&X-Amz-Signature=${fake(HEX, 64, 'presigned')}`,
      }),
    }),
    secrets: [
      AWS_TEMP_ID,
      AWS_SIGNATURE,
      AWS_SESSION_TOKEN,
      AWS_KEY_ID,
      fake(HEX, 64, 'presigned'),
    ],
    kinds: ['authorization', 'token', 'signature'],
    present: ['AWS4-HMAC-SHA256 [redacted:', '20261121T101500Z', 'X-Amz-Expires=900'],
  },
  {
    name: 'AWS: STS credentials in XML, an access key pair in a CSV and an ini file',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://sts.amazonaws.com/',
      responseHeaders: [['Content-Type', 'text/xml']],
      responseBody: textBody(
        '<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult>' +
          `<Credentials><AccessKeyId>${AWS_TEMP_ID}</AccessKeyId>` +
          `<SecretAccessKey>${AWS_TEMP_SECRET}</SecretAccessKey>` +
          `<SessionToken>${AWS_SESSION_TOKEN}</SessionToken>` +
          '<Expiration>2026-11-21T11:15:00Z</Expiration></Credentials></AssumeRoleResult>' +
          '</AssumeRoleResponse>',
        'text/xml',
      ),
      requestBody: textBody(
        `User name,Access key ID,Secret access key\ndeploy-bot,${AWS_KEY_ID},${AWS_SECRET}\n\n` +
          `[default]\naws_access_key_id = ${AWS_KEY_ID}\naws_secret_access_key = ${AWS_SECRET}\n` +
          'region = eu-west-1\n',
        'text/plain',
      ),
    }),
    secrets: [AWS_TEMP_ID, AWS_TEMP_SECRET, AWS_SESSION_TOKEN, AWS_KEY_ID, AWS_SECRET],
    kinds: ['aws-key', 'aws-secret-key', 'token'],
    present: ['<Expiration>2026-11-21T11:15:00Z</Expiration>', 'region = eu-west-1', 'deploy-bot,'],
  },
  {
    name: 'PEM private keys: PKCS#8 in a service-account JSON, RSA in text, EC and OpenSSH in JSON',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://deploy.shop.example/v1/keys',
      requestBody: json({
        type: 'service_account',
        project_id: 'shop-prod-4821',
        private_key: PKCS8_KEY,
        client_email: 'deployer@shop-prod-4821.iam.gserviceaccount.com',
        deploy_key: OPENSSH_KEY,
        tls: {
          certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----',
          key: EC_KEY,
        },
      }),
      responseHeaders: [['Content-Type', 'text/plain']],
      responseBody: textBody(`generated:\n${RSA_KEY}\nstore it safely`, 'text/plain'),
    }),
    secrets: [
      PKCS8_KEY.trim(),
      pemLine(PKCS8_KEY),
      pemLine(OPENSSH_KEY),
      pemLine(EC_KEY),
      pemLine(RSA_KEY),
      RSA_KEY.trim(),
    ],
    kinds: ['private-key'],
    present: [
      'deployer@shop-prod-4821.iam.gserviceaccount.com',
      'BEGIN CERTIFICATE',
      'store it safely',
    ],
  },
  {
    name: 'Slack: bot token as Bearer, user token in a form, an incoming-webhook URL',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://slack.com/api/chat.postMessage',
      requestHeaders: [['Authorization', `Bearer ${SLACK_BOT}`]],
      requestBody: textBody(
        `token=${SLACK_USER}&channel=C0123ABCD&text=deploy+finished`,
        'application/x-www-form-urlencoded',
      ),
      responseBody: json({
        ok: true,
        notify: `https://hooks.slack.com/services/${SLACK_HOOK_SECRET}`,
      }),
    }),
    secrets: [SLACK_BOT, SLACK_USER, SLACK_HOOK_SECRET],
    kinds: ['slack-token'],
    present: ['channel=C0123ABCD', 'text=deploy+finished', 'https://hooks.slack.com/services/'],
  },
  {
    name: 'Google API key in the URL and the query',
    kind: 'http',
    payload: capture({
      url:
        `https://maps.googleapis.com/maps/api/geocode/json?address=1600+Amphitheatre+Parkway&key=${GOOGLE_KEY}`,
      requestHeaders: [['X-Goog-Api-Key', GOOGLE_KEY]],
    }),
    secrets: [GOOGLE_KEY],
    kinds: ['google-api-key'],
    present: ['address=1600+Amphitheatre+Parkway', '/maps/api/geocode/json'],
  },
  {
    name: 'OpenAI and Anthropic keys in headers, token counts kept',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.anthropic.com/v1/messages',
      requestHeaders: [
        ['x-api-key', ANTHROPIC_KEY],
        ['anthropic-version', '2023-06-01'],
        ['X-Fallback-Authorization', `Bearer ${OPENAI_KEY}`],
      ],
      requestBody: json({ model: 'claude-sonnet-4', max_tokens: 1024, messages: [] }),
      responseBody: json({ usage: { input_tokens: 12, output_tokens: 48 } }),
    }),
    secrets: [ANTHROPIC_KEY, OPENAI_KEY],
    kinds: ['anthropic-key', 'openai-key'],
    present: ['2023-06-01', '"max_tokens\\":1024', '"input_tokens\\":12', '"output_tokens\\":48'],
  },
  {
    name: 'npm token as Bearer and in an .npmrc body',
    kind: 'http',
    payload: capture({
      method: 'PUT',
      url: 'https://registry.npmjs.org/@acme%2fshop',
      requestHeaders: [['Authorization', `Bearer ${NPM_TOKEN}`]],
      requestBody: textBody(
        `registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n`,
        'text/plain',
      ),
    }),
    secrets: [NPM_TOKEN],
    kinds: ['npm-token'],
    present: ['registry=https://registry.npmjs.org/', ':_authToken=[redacted:npm-token:'],
  },
  {
    name: 'Basic and Digest credentials, Proxy-Authorization, a Basic challenge kept',
    kind: 'http',
    payload: capture({
      url: 'https://intranet.shop.example/reports/q3',
      statusCode: 401,
      statusText: 'Unauthorized',
      requestHeaders: [
        ['Authorization', `Basic ${BASIC_CREDENTIAL}`],
        ['Proxy-Authorization', `Basic ${PROXY_CREDENTIAL}`],
        [
          'X-Legacy-Authorization',
          `Digest username="ada", realm="reports", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", ` +
          `uri="/reports/q3", qop=auth, nc=00000001, cnonce="0a4f113b", response="${DIGEST_RESPONSE}"`,
        ],
      ],
      responseHeaders: [['WWW-Authenticate', 'Basic realm="reports", charset="UTF-8"']],
    }),
    secrets: [BASIC_CREDENTIAL, BASIC_PASSWORD, PROXY_CREDENTIAL, PROXY_PASSWORD, DIGEST_RESPONSE],
    kinds: ['basic-auth', 'authorization'],
    present: ['Basic realm=\\"reports\\"', 'Digest [redacted:authorization:', 'Unauthorized'],
  },
  {
    name: 'cookies: every Cookie value, the Set-Cookie value, names and attributes kept',
    kind: 'http',
    payload: capture({
      url: 'https://shop.example/account',
      requestHeaders: [
        [
          'Cookie',
          `sessionid=${SESSION_COOKIE}; csrftoken=${CSRF_COOKIE}; theme=dark; ` +
          `sb-${SUPABASE_REF}-auth-token=${SUPABASE_COOKIE}`,
        ],
      ],
      responseHeaders: [
        [
          'Set-Cookie',
          `sessionid=${SESSION_COOKIE_NEW}; expires=Sat, 05 Dec 2026 10:00:00 GMT; HttpOnly; ` +
          'Max-Age=1209600; Path=/; SameSite=Lax; Secure',
        ],
      ],
    }),
    secrets: [SESSION_COOKIE, CSRF_COOKIE, SUPABASE_COOKIE, ACCESS_JWT, SESSION_COOKIE_NEW],
    kinds: ['cookie', 'set-cookie'],
    present: [
      'sessionid=[redacted:cookie:',
      'csrftoken=[redacted:cookie:',
      'theme=[redacted:cookie:',
      `sb-${SUPABASE_REF}-auth-token=[redacted:cookie:`,
      'sessionid=[redacted:set-cookie:',
      'HttpOnly; Max-Age=1209600; Path=/; SameSite=Lax; Secure',
    ],
  },
  {
    name: 'passwords in URLs and connection strings',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: `https://deploy:${URL_PASSWORD}@ci.shop.example/api/v1/trigger`,
      requestHeaders: [['Referer', `https://deploy:${URL_PASSWORD}@ci.shop.example/ui`]],
      requestBody: json({
        DATABASE_URL: `postgres://app:${PG_PASSWORD}@db.internal:5432/shop`,
        REDIS_URL: `rediss://:${REDIS_PASSWORD}@cache.internal:6380/0`,
        MONGO:
          `mongodb+srv://shop:${MONGO_PASSWORD}@cluster0.abcde.mongodb.net/shop?retryWrites=true`,
      }),
    }),
    secrets: [URL_PASSWORD, PG_PASSWORD, REDIS_PASSWORD, MONGO_PASSWORD],
    kinds: ['password', 'connection-string'],
    present: [
      'https://deploy:[redacted:password:',
      '@db.internal:5432/shop',
      'retryWrites=true',
      '@ci.shop.example/api/v1/trigger',
    ],
  },
  {
    name: 'a JSON body with secrets at every depth, in arrays and inside a JSON string',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/account',
      requestBody: json({
        user: { email: 'ada@shop.example', credentials: { password: ACCOUNT_PASSWORD, otp: OTP } },
        settings: { theme: 'dark', api: { key: NESTED_API_KEY } },
        payment: { card: { number: CARD_NUMBER, cvv: '957', exp_month: '09' } },
        integrations: [{
          name: 'crm',
          config: JSON.stringify({
            client_id: 'crm-app',
            client_secret: CRM_SECRET,
            refresh_token: CRM_REFRESH,
          }),
        }],
        session: SESSION_ID,
        pin: 7351,
        id_token: ID_JWT,
      }),
    }),
    secrets: [
      ACCOUNT_PASSWORD,
      OTP,
      NESTED_API_KEY,
      CARD_NUMBER,
      CRM_SECRET,
      CRM_REFRESH,
      SESSION_ID,
      ID_JWT,
    ],
    kinds: ['password', 'api-key', 'card', 'secret', 'token', 'session', 'jwt'],
    present: [
      'ada@shop.example',
      '\\"theme\\":\\"dark\\"',
      '\\"exp_month\\":\\"09\\"',
      '\\"name\\":\\"crm\\"',
      'client_id\\\\\\":\\\\\\"crm-app',
      '\\"pin\\":\\"[redacted:password:',
      '\\"cvv\\":\\"[redacted:card:',
    ],
  },
  {
    name: 'an OAuth token request as a form body, percent-encoded secrets',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://auth.shop.example/oauth/token',
      requestBody: textBody(
        `grant_type=password&username=ada%40shop.example&password=${
          encodeURIComponent(FORM_PASSWORD).replace(/%20/g, '+')
        }&client_id=shop-ios&client_secret=${FORM_CLIENT_SECRET}&scope=openid+profile`,
        'application/x-www-form-urlencoded',
      ),
    }),
    secrets: [FORM_PASSWORD, FORM_CLIENT_SECRET],
    kinds: ['password', 'secret'],
    present: [
      'grant_type=password',
      'username=ada%40shop.example',
      'client_id=shop-ios',
      'scope=openid+profile',
    ],
  },
  {
    name: 'base64 bodies: JSON with U+0000 kept as base64, a gzip body stored decoded',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/session/refresh',
      requestBody: base64Body(
        utf8.encode(JSON.stringify({ device: 'ios', secret: GZIP_SECRET })),
        'application/json',
        { contentEncoding: 'gzip', decoded: true, decodedSize: 60 },
      ),
      responseBody: base64Body(
        utf8.encode(
          `{"note":"a\u0000b","access_token":"${BODY_ACCESS_TOKEN}",` +
            `"refresh_token":"${BODY_REFRESH_TOKEN}","scope":"orders:read"}`,
        ),
        'application/json',
      ),
    }),
    secrets: [GZIP_SECRET, BODY_ACCESS_TOKEN, BODY_REFRESH_TOKEN],
    kinds: ['secret', 'token'],
    present: ['"contentEncoding":"gzip"'],
  },
  {
    name: 'a multipart upload stored as base64: secret fields redacted, the PNG part untouched',
    kind: 'http',
    payload: capture({
      method: 'POST',
      url: 'https://api.shop.example/v1/uploads',
      requestBody: base64Body(
        multipartBytes(),
        `multipart/form-data; boundary=${MULTIPART_BOUNDARY}`,
      ),
    }),
    secrets: [MULTIPART_API_KEY, MULTIPART_PASSWORD],
    kinds: ['api-key', 'password'],
    present: [],
  },
  {
    name: 'OAuth redirects: the code next to state, an implicit token in a Location fragment',
    kind: 'http',
    payload: capture({
      url: `https://app.shop.example/callback?code=${OAUTH_CODE}&state=af0ifjsldkj`,
      statusCode: 302,
      statusText: 'Found',
      responseHeaders: [[
        'Location',
        `https://app.shop.example/cb#access_token=${IMPLICIT_TOKEN}&token_type=bearer&expires_in=3600&state=xyz`,
      ]],
    }),
    secrets: [OAUTH_CODE, IMPLICIT_TOKEN],
    kinds: ['token', 'jwt'],
    present: ['state=af0ifjsldkj', 'token_type=bearer&expires_in=3600&state=xyz'],
  },
  {
    name: 'Supabase keys: the secret key redacted, the publishable key kept, a personal token',
    kind: 'http',
    payload: capture({
      url: `https://${SUPABASE_REF}.supabase.co/rest/v1/orders?select=id,total&limit=20`,
      requestHeaders: [
        ['apikey', SUPABASE_SECRET],
        ['Authorization', `Bearer ${SUPABASE_SECRET}`],
        ['X-Client-Apikey', SUPABASE_PUBLISHABLE],
        ['X-Management-Authorization', `Bearer ${SUPABASE_PERSONAL}`],
      ],
    }),
    secrets: [SUPABASE_SECRET, SUPABASE_PERSONAL],
    kinds: ['supabase-key'],
    present: [SUPABASE_PUBLISHABLE, 'select=id,total&limit=20'],
  },
  {
    name: 'secret-named headers with opaque values',
    kind: 'http',
    payload: capture({
      url: 'https://api.partner.example/v3/orders',
      requestHeaders: [
        ['X-Api-Key', API_KEY_HEADER],
        ['X-Auth-Token', AUTH_TOKEN_HEADER],
        ['X-CSRF-Token', CSRF_HEADER],
        ['X-Vault-Token', VAULT_TOKEN],
        ['Ocp-Apim-Subscription-Key', APIM_KEY],
        ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
      ],
    }),
    secrets: [API_KEY_HEADER, AUTH_TOKEN_HEADER, CSRF_HEADER, VAULT_TOKEN, APIM_KEY],
    kinds: ['api-key', 'token'],
    present: ['dGhlIHNhbXBsZSBub25jZQ==', 'req_7f3a9c21'],
  },
  {
    name: 'WebSocket messages: a token in a join message and in chat, a binary frame untouched',
    kind: 'websocket',
    payload: capture({
      scheme: 'wss',
      url:
        `wss://${SUPABASE_REF}.supabase.co/realtime/v1/websocket?apikey=${SUPABASE_PUBLISHABLE}&vsn=1.0.0`,
      statusCode: 101,
      statusText: 'Switching Protocols',
      phase: 'closed',
      messages: [
        {
          direction: 'send',
          opcode: 1,
          at: 3.1,
          size: 180,
          text: JSON.stringify({
            topic: 'realtime:public:orders',
            event: 'phx_join',
            payload: { access_token: REALTIME_JWT },
            ref: '1',
          }),
          truncated: false,
        },
        {
          direction: 'send',
          opcode: 1,
          at: 9.4,
          size: 60,
          text: `/login Bearer ${CHAT_BEARER}`,
          truncated: false,
        },
        {
          direction: 'receive',
          opcode: 2,
          at: 12.5,
          size: BINARY_MESSAGE.length,
          base64: btoa(String.fromCharCode(...BINARY_MESSAGE)),
          truncated: false,
        },
      ],
      messageCounts: { send: 2, receive: 1 },
    }),
    secrets: [REALTIME_JWT, CHAT_BEARER],
    kinds: ['jwt', 'bearer'],
    present: [
      'realtime:public:orders',
      'phx_join',
      '/login Bearer [redacted:bearer:',
      SUPABASE_PUBLISHABLE,
    ],
  },
  {
    name: 'an HTML page: CSRF meta tag, hidden authenticity token, a token in inline config',
    kind: 'http',
    payload: capture({
      url: 'https://shop.example/login',
      responseHeaders: [['Content-Type', 'text/html; charset=utf-8']],
      responseBody: textBody(
        '<!doctype html><html><head><title>Sign in</title>' +
          `<meta name="csrf-token" content="${HTML_CSRF}"></head><body>` +
          '<form action="/session" method="post">' +
          `<input type="hidden" name="authenticity_token" value="${HTML_AUTHENTICITY}">` +
          '<input type="password" name="password"></form><script>window.__CONFIG__ = ' +
          JSON.stringify({ stripeKey: STRIPE_PUBLISHABLE, apiToken: HTML_API_TOKEN }) +
          ';</script></body></html>',
        'text/html; charset=utf-8',
      ),
    }),
    secrets: [HTML_CSRF, HTML_AUTHENTICITY, HTML_API_TOKEN],
    kinds: ['token'],
    present: [
      '<title>Sign in</title>',
      '<input type=\\"password\\" name=\\"password\\">',
      STRIPE_PUBLISHABLE,
    ],
  },
  {
    name: 'a failed exchange: secrets in the error text and in a plain-text log body',
    kind: 'error',
    payload: capture({
      method: 'POST',
      url: 'https://logs.shop.example/ingest',
      statusCode: 502,
      statusText: 'Bad Gateway',
      error:
        `upstream auth.shop.example unreachable: POST https://svc:${LOG_URL_PASSWORD}@auth.shop.example/token ` +
        `failed, Authorization: Bearer ${GITHUB_OAUTH}`,
      requestBody: textBody(
        `2026-11-21T10:15:00Z INFO login user=ada password=${LOG_PASSWORD} ip=10.20.0.11\n` +
          `export API_KEY=${LOG_ENV_KEY}\nexport GITLAB_TOKEN=${GITLAB_TOKEN}\n` +
          `sendgrid=${SENDGRID_KEY} hf=${HF_TOKEN}\n`,
        'text/plain',
      ),
    }),
    secrets: [
      LOG_URL_PASSWORD,
      GITHUB_OAUTH,
      LOG_PASSWORD,
      LOG_ENV_KEY,
      GITLAB_TOKEN,
      SENDGRID_KEY,
      HF_TOKEN,
    ],
    kinds: ['password', 'github-token', 'api-key', 'gitlab-token'],
    present: ['INFO login user=ada', 'ip=10.20.0.11', 'upstream auth.shop.example unreachable'],
  },
  {
    name: 'a JSON Web Key Set with private members: d, p, q redacted, n and kid kept',
    kind: 'http',
    payload: capture({
      url: 'https://idp.shop.example/admin/signing-keys',
      responseBody: json({
        keys: [{
          kty: 'RSA',
          kid: 'sig-2026-11',
          use: 'sig',
          n: JWK_N,
          e: 'AQAB',
          d: JWK_D,
          p: JWK_P,
          q: JWK_Q,
        }],
      }),
    }),
    secrets: [JWK_D, JWK_P, JWK_Q],
    kinds: ['private-key'],
    present: ['sig-2026-11', JWK_N, '\\"e\\":\\"AQAB\\"'],
  },
  {
    name: 'an imported capture with HAR-style name/value headers',
    kind: 'http',
    payload: capture({
      url: 'https://api.shop.example/v1/me',
      har: {
        headers: [
          { name: 'Authorization', value: `Bearer ${HAR_TOKEN}` },
          { name: 'Cookie', value: `sid=${HAR_COOKIE}; lang=en` },
          { name: 'Accept-Language', value: 'en-GB' },
        ],
      },
    }),
    secrets: [HAR_TOKEN, HAR_COOKIE],
    kinds: ['bearer', 'cookie'],
    present: ['"value":"en-GB"', 'sid=[redacted:cookie:', 'lang=[redacted:cookie:'],
  },
];

/** Every way a secret could still show: as is, JSON-escaped, percent-encoded, in base64. */
export function secretForms(secret: string): string[] {
  const forms = new Set([
    secret,
    JSON.stringify(secret).slice(1, -1),
    JSON.stringify(JSON.stringify(secret).slice(1, -1)).slice(1, -1),
    encodeURIComponent(secret),
    encodeURIComponent(secret).replace(/%20/g, '+'),
  ]);
  if (secret.length >= 16) {
    // Base64 at each of the three alignments, without the edge characters that depend on the
    // neighbouring bytes: what any base64 text holding the secret must contain.
    const bytes = utf8.encode(secret);
    for (let shift = 0; shift < 3; shift += 1) {
      let binary = '\0'.repeat(shift);
      for (const byte of bytes) binary += String.fromCharCode(byte);
      const encoded = btoa(binary);
      const core = encoded.slice(Math.ceil((shift * 4) / 3) + 1, -4);
      if (core.length >= 12) {
        forms.add(core);
        forms.add(core.replace(/\+/g, '-').replace(/\//g, '_'));
      }
    }
  }
  return [...forms].filter((form) => form.length > 0);
}

/** The texts a reader of the redacted value sees: its JSON and every base64 string decoded. */
export function readableTexts(value: unknown): string[] {
  const texts = [JSON.stringify(value)];
  const visit = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node && typeof node === 'object') {
      for (const [key, child] of Object.entries(node)) {
        if (key === 'base64' && typeof child === 'string') {
          const binary = atob(child);
          texts.push(
            binary,
            new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0))),
          );
        } else {
          visit(child);
        }
      }
    }
  };
  visit(value);
  return texts;
}

/** All the readable texts as one, to search for placeholders and survivors. */
export function readableText(value: unknown): string {
  return readableTexts(value).join('\n');
}

/** The secrets (with the form they took) that a redacted value still shows. */
export function findLeaks(redacted: unknown, secrets: string[]): string[] {
  const texts = readableTexts(redacted);
  const leaks: string[] = [];
  for (const secret of secrets) {
    for (const form of secretForms(secret)) {
      if (texts.some((text) => text.includes(form))) {
        leaks.push(`${secret.slice(0, 12)}… as ${form.slice(0, 24)}…`);
      }
    }
  }
  return leaks;
}

/** The fingerprints of every placeholder in a text. */
export function placeholderPrints(text: string): string[] {
  return [...text.matchAll(/\[redacted:[a-z0-9-]+:([0-9a-f]{8})\]/g)].map((match) =>
    match[1] ?? ''
  );
}
