// Tests for the shared redaction module (001 §4.3) under Deno: the corpus of real-format secrets
// in realistic captures, then the rules one by one, each with inputs that try to break them.
// The same module and corpus run under Node in packages/tool-server/test/redaction.test.ts.
import { deepStrictEqual as assertEquals, ok as assert } from 'node:assert/strict';
import {
  classifyHeaderName,
  classifyName,
  createRedactor,
  redactCapture,
  REDACTION_KINDS,
  redactText,
} from './redaction.ts';
import {
  BINARY_MESSAGE_BYTES,
  findLeaks,
  HARMLESS_HEADER,
  MULTIPART_FILE_BYTES,
  placeholderPrints,
  readableText,
  REDACTION_CORPUS,
} from '../tests/redaction_corpus.ts';
import {
  ENCODED_CORPUS,
  findEncodedLeaks,
  readableEncodedText,
} from '../tests/redaction_encoded_corpus.ts';

const KEY = new TextEncoder().encode('redaction-test-key-0123456789abcdef');
const OTHER_KEY = new TextEncoder().encode('another-redaction-key-fedcba9876543210');
const options = { key: KEY };
const assertFalse = (value: boolean, message?: string) => assert(!value, message);

async function hmacPrint(key: Uint8Array, secret: string): Promise<string> {
  const cryptoKey = await crypto.subtle.importKey(
    'raw',
    new Uint8Array(key),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(
    await crypto.subtle.sign('HMAC', cryptoKey, new TextEncoder().encode(secret)),
  );
  return [...mac.subarray(0, 4)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

type Payload = Record<string, unknown>;
type Pair = [string, string];

// --- The corpus ---------------------------------------------------------------------------

for (const example of REDACTION_CORPUS) {
  Deno.test(`corpus: ${example.name}: no secret survives in any encoding`, async () => {
    const redacted = await redactCapture(example.payload, options);
    assertEquals(findLeaks(redacted, example.secrets), []);
    // The check itself can fail: the unredacted payload shows every secret.
    assertEquals(
      example.secrets.filter((secret) => findLeaks(example.payload, [secret]).length === 0),
      [],
    );
  });

  Deno.test(`corpus: ${example.name}: placeholders name the kinds, non-secrets survive`, async () => {
    const before = JSON.stringify(example.payload);
    const redacted = (await redactCapture(example.payload, options)) as Payload;
    const text = readableText(redacted);
    for (const kind of example.kinds) assert(text.includes(`[redacted:${kind}:`), kind);
    for (const survivor of example.present) assert(text.includes(survivor), survivor);
    assertEquals(redacted.method, example.payload.method);
    assertEquals(redacted.host, example.payload.host);
    assertEquals(redacted.statusCode, example.payload.statusCode);
    assertEquals(redacted.timings, example.payload.timings);
    const headers = redacted.requestHeaders as Pair[];
    assert(
      headers.some(([name, value]) => name === HARMLESS_HEADER[0] && value === HARMLESS_HEADER[1]),
    );
    assertEquals(headers.length, (example.payload.requestHeaders as Pair[]).length);
    assertEquals(JSON.stringify(example.payload), before, 'the input is not modified');
    for (const body of [redacted.requestBody, redacted.responseBody]) {
      const { text: bodyText, contentType } = (body ?? {}) as Payload;
      if (typeof bodyText === 'string' && /json/.test(String(contentType))) JSON.parse(bodyText);
    }
  });

  Deno.test(`corpus: ${example.name}: placeholders are stable per key, differ across keys`, async () => {
    const first = JSON.stringify(await redactCapture(example.payload, options));
    const again = JSON.stringify(await redactCapture(example.payload, options));
    const other = JSON.stringify(await redactCapture(example.payload, { key: OTHER_KEY }));
    assertEquals(again, first);
    const prints = placeholderPrints(first);
    const otherPrints = placeholderPrints(other);
    assertEquals(otherPrints.length, prints.length);
    assertEquals(prints.filter((print) => otherPrints.includes(print)), []);
  });

  Deno.test(`corpus: ${example.name}: redacting the redacted copy changes nothing`, async () => {
    const redacted = await redactCapture(example.payload, options);
    assertEquals(await redactCapture(redacted, options), redacted);
  });
}

Deno.test('corpus: every placeholder names a kind of the closed set', async () => {
  const kinds = new Set<string>();
  for (const example of REDACTION_CORPUS) {
    const text = readableText(await redactCapture(example.payload, options));
    for (const match of text.matchAll(/\[redacted:([a-z0-9-]+):[0-9a-f]{8}\]/g)) {
      kinds.add(match[1] ?? '');
    }
  }
  assertEquals(
    [...kinds].filter((kind) => !(REDACTION_KINDS as readonly string[]).includes(kind)),
    [],
  );
  assert(kinds.size >= 20, `only ${kinds.size} kinds seen`);
});

Deno.test('corpus: the file part of a multipart upload and a binary frame keep their bytes', async () => {
  const upload = REDACTION_CORPUS.find((example) => example.name.startsWith('a multipart upload'));
  const socket = REDACTION_CORPUS.find((example) => example.name.startsWith('WebSocket'));
  const redactedUpload = (await redactCapture(upload?.payload, options)) as Payload;
  const body = atob(String((redactedUpload.requestBody as Payload).base64));
  assert(body.includes(String.fromCharCode(...MULTIPART_FILE_BYTES)));
  assert(body.includes('filename="photo.png"') && body.includes('Holiday photo'));
  const redactedSocket = (await redactCapture(socket?.payload, options)) as Payload;
  const binary = (redactedSocket.messages as Payload[])[2];
  assertEquals(binary?.base64, btoa(String.fromCharCode(...BINARY_MESSAGE_BYTES)));
});

// --- Encoded secrets (docs/redaction.md "Encoded secrets") --------------------------------

for (const example of ENCODED_CORPUS) {
  Deno.test(`encoded: ${example.name}: no secret survives, the kinds are named`, async () => {
    // The check itself can fail: the unredacted payload shows every secret.
    assertEquals(
      example.secrets.filter((secret) => findEncodedLeaks(example.payload, [secret]).length === 0),
      [],
    );
    const redacted = await redactCapture(example.payload, options);
    assertEquals(findEncodedLeaks(redacted, example.secrets), []);
    const text = readableEncodedText(redacted);
    for (const kind of example.kinds) assert(text.includes(`[redacted:${kind}:`), kind);
    for (const survivor of example.present) assert(text.includes(survivor), survivor);
  });

  Deno.test(`encoded: ${example.name}: redacting the redacted copy changes nothing`, async () => {
    const redacted = await redactCapture(example.payload, options);
    assertEquals(await redactCapture(redacted, options), redacted);
  });
}

Deno.test('base64 runs: the decoded secret names the kind, the whole run is one placeholder', async () => {
  const run = base64Of('user=ada&password=b64-run-pass');
  const redacted = await redactText(`{"a":"${run}","b":"before ${run} after"}`, options);
  const print = await hmacPrint(KEY, run);
  assertEquals(
    redacted,
    `{"a":"[redacted:password:${print}]","b":"before [redacted:password:${print}] after"}`,
  );
});

Deno.test('base64 runs: base64url, missing padding and a path prefix are read too', async () => {
  const token = 'sk_live_' + 'Q7rT2mX9vB4nK8pL3sW6yZ1c';
  for (
    const text of [
      base64Of(token).replace(/=+$/, ''),
      base64Of(`{"t":"${token}"}`).replace(/\+/g, '-').replace(/\//g, '_'),
      `/api/${base64Of(`Bearer ${token}`).replace(/\+/g, '-').replace(/\//g, '_')}/x`,
    ]
  ) {
    const redacted = await redactText(text, options);
    assert(redacted.includes('[redacted:stripe-key:'), `${text} -> ${redacted}`);
  }
});

Deno.test('base64 runs: base64 that decodes to no secret is left byte for byte', async () => {
  const bytes = Array.from({ length: 3000 }, (_, index) => (index * 7919 + 13) % 256);
  const text = JSON.stringify({
    image: btoa(String.fromCharCode(...bytes)),
    sha256: '47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=',
    words: base64Of('the password policy asks for 12 characters'),
    nonce: 'dGhlIHNhbXBsZSBub25jZQ==',
    id: 'getElementsByClassNameAndTagName',
  });
  assertEquals(await redactText(text, options), text);
});

Deno.test('base64 runs: base64 nested past the decoding depth is withheld, not echoed', async () => {
  let shallow = 'password=nested-b64-secret';
  for (let level = 0; level < 3; level += 1) shallow = base64Of(shallow);
  assert((await redactText(shallow, options)).startsWith('[redacted:password:'));
  let deep = 'password=nested-b64-secret';
  for (let level = 0; level < 12; level += 1) deep = base64Of(deep);
  // Over-redacted: one placeholder (kind `secret` when the depth hid what it was) or a marker.
  const redacted = await redactText(deep, options);
  assert(
    /^\[redact(?:ed:[a-z-]+:[0-9a-f]{8}|ion-limit: \d+ characters not scanned)\]$/.test(redacted),
    redacted.slice(0, 60),
  );
});

Deno.test('percent runs: a token decoded from the path or a query fingerprints as itself', async () => {
  const token = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwY3QifQ.c2lnbmF0dXJlLWJ5dGVzLXBjdA';
  const redacted = await redactText(
    `https://api.example/a/${token.replace(/\./g, '%2E')}/b?t=Bearer%2520${
      token.replace(/\./g, '%252E')
    }&n=1 Authorization: Bearer ${token}`,
    options,
  );
  const print = await hmacPrint(KEY, token);
  assertEquals(
    redacted,
    `https://api.example/a/[redacted:jwt:${print}]/b?t=Bearer%2520[redacted:jwt:${print}]&n=1 ` +
      `Authorization: Bearer [redacted:jwt:${print}]`,
  );
});

Deno.test('percent runs: ordinary encoded text is left alone', async () => {
  for (
    const text of [
      'https://shop.example/search?q=red%2520shoes%20size%2042&page=2#top',
      '/files/r%C3%A9sum%C3%A9%20final.pdf',
      'discount 50% off, 100%25 cotton',
    ]
  ) {
    assertEquals(await redactText(text, options), text);
  }
});

Deno.test('headers: a name ending in -key or _key holds a credential unless it is public', () => {
  const cases: [string, string | undefined][] = [
    ['x-functions-key', 'api-key'],
    ['X-Mashape-Key', 'api-key'],
    ['x_tenant_key', 'api-key'],
    ['X-Parse-Javascript-Key', 'api-key'],
    ['X-Amz-Server-Side-Encryption-Customer-Key', 'api-key'],
    ['X-Device-Keys', 'api-key'],
    ['X-Access-Token', 'token'],
    ['X-Webhook-Secret', 'secret'],
    ['X-Hub-Signature-256', 'signature'],
    ['Sec-WebSocket-Key', undefined],
    ['Idempotency-Key', undefined],
    ['X-Public-Key', undefined],
    ['X-Key-Id', undefined],
    ['Keep-Alive', undefined],
  ];
  for (const [name, kind] of cases) assertEquals(classifyHeaderName(name), kind, name);
});

Deno.test('headers: the -key rule is for headers, not JSON keys or form fields', async () => {
  const text = '{"sort_key":"created_at","primary_key":"id","cache-key":"v1"}';
  assertEquals(await redactText(text, options), text);
  assertEquals(await redactText('order_key=ab-12&page=2', options), 'order_key=ab-12&page=2');
  const har = (await redactCapture({
    requestHeaders: [{ name: 'X-Functions-Key', value: 'har-fn-key-1234' }],
  }, options)) as Payload;
  assertFalse(JSON.stringify(har).includes('har-fn-key-1234'));
});

Deno.test('multipart: a quoted-printable part is encoded again with its placeholders whole', async () => {
  const boundary = 'qpBoundary';
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="password"\r\n` +
    `Content-Transfer-Encoding: quoted-printable\r\n\r\nqp-pass=3D=\r\nword\r\n` +
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n` +
    `Content-Transfer-Encoding: base64\r\n\r\n${btoa('\x00\x01\xff\xfe')}\r\n--${boundary}--\r\n`;
  const redacted = (await redactCapture({
    requestBody: {
      text: body,
      encoding: 'utf8',
      contentType: `multipart/form-data; boundary=${boundary}`,
    },
  }, options)) as Payload;
  const text = String((redacted.requestBody as Payload).text);
  assert(
    text.includes(`\r\n\r\n[redacted:password:${await hmacPrint(KEY, 'qp-pass=word')}]\r\n`),
    text,
  );
  assert(text.includes(`\r\n\r\n${btoa('\x00\x01\xff\xfe')}\r\n`));
});

Deno.test('multipart: a transfer-encoding label does not hide a part that does not decode to text', async () => {
  const boundary = 'labelBoundary';
  const part = (name: string, content: string) =>
    `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n` +
    `Content-Transfer-Encoding: base64\r\n\r\n${content}\r\n`;
  const body = part('note', 'AKIAIOSFODNN7EXAMPLE') +
    part('other', 'not base64: token=label-hidden-1') + `--${boundary}--\r\n`;
  const redacted = (await redactCapture({
    requestBody: {
      text: body,
      encoding: 'utf8',
      contentType: `multipart/form-data; boundary=${boundary}`,
    },
  }, options)) as Payload;
  const text = String((redacted.requestBody as Payload).text);
  assertFalse(text.includes('AKIAIOSFODNN7EXAMPLE'), text);
  assertFalse(text.includes('label-hidden-1'), text);
});

// --- Placeholders ---------------------------------------------------------------------------

Deno.test('a placeholder is [redacted:<kind>:<first 8 hex of HMAC-SHA256(key, secret)>]', async () => {
  const token = 'abcdefghij0123456789';
  const print = await hmacPrint(KEY, token);
  assertEquals(
    await redactText(`Authorization: Bearer ${token}`, options),
    `Authorization: Bearer [redacted:bearer:${print}]`,
  );
  // Fixed across runtimes: the Node test expects the very same string.
  assertEquals(print, '6bd7bd54');
});

Deno.test('one secret has one fingerprint in a header, a JSON body, a query and a form', async () => {
  const token = 'tok_9f8e7d6c5b4a39281706';
  const redacted = await redactCapture({
    url: `https://api.example/v1?access_token=${token}`,
    requestHeaders: [['Authorization', `Bearer ${token}`]],
    requestBody: {
      text: `{"token":"${token}"}`,
      encoding: 'utf8',
      contentType: 'application/json',
    },
    responseBody: { text: `api_key=${token}`, encoding: 'utf8', contentType: 'text/plain' },
  }, options);
  const prints = new Set(placeholderPrints(JSON.stringify(redacted)));
  assertEquals([...prints], [await hmacPrint(KEY, token)]);
});

Deno.test('a percent-encoded field fingerprints as its decoded value', async () => {
  const form = await redactText('password=a%2Bb%20c', options);
  const json = await redactText('{"password":"a+b c"}', options);
  assertEquals(placeholderPrints(form), placeholderPrints(json));
});

Deno.test('refuses a key shorter than 16 bytes', async () => {
  for (
    const key of [new Uint8Array(0), new Uint8Array(15), 'a string key' as unknown as Uint8Array]
  ) {
    let error: unknown;
    try {
      await redactText('x', { key });
    } catch (caught) {
      error = caught;
    }
    assert(error instanceof TypeError);
  }
});

Deno.test('a redactor imports its key once and serves many calls', async () => {
  const redactor = createRedactor(options);
  assertEquals(
    await redactor.redactText('password=hunter2'),
    await redactText('password=hunter2', options),
  );
  assertEquals(await redactor.redactCapture({ a: 1 }), { a: 1 });
});

// --- Free text ------------------------------------------------------------------------------

const FREE_TEXT: [string, string, string][] = [
  ['a JWT anywhere', 'id=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJlX2J5dGVz ok', 'jwt'],
  ['an unsigned JWT', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.', 'jwt'],
  ['Bearer in prose', 'then send Bearer 7f9c2ba4e88f827d616045507605853e to it', 'bearer'],
  ['Basic in a log line', 'header Basic dXNlcjpwYXNzd29yZA== rejected', 'basic-auth'],
  ['a URL password', 'ftp://mirror:s3cr3t-pw@ftp.example/pub', 'password'],
  ['a JDBC URL', 'jdbc:postgresql://app:pg-p4ss@db:5432/app', 'connection-string'],
  ['an ADO.NET string', 'Server=db;Database=shop;User Id=app;Password=Ad0-P4ss;', 'password'],
  ['a YAML password', 'db:\n  password: yaml-p4ssw0rd\n  host: db', 'password'],
  ['an env file', 'STRIPE_SECRET=abcdef123456\nPORT=3000', 'secret'],
  ['escaped JSON in a log', 'body={\\"client_secret\\":\\"cs-123456789\\"}', 'secret'],
  ['a curl -v header line', '> X-Auth-Token: a1b2c3d4e5f6\n> Accept: */*', 'token'],
  ['a cookie line', 'Cookie: session=abcdef; theme=dark', 'cookie'],
  ['an XML password', '<wsse:Password Type="PasswordText">xml-p4ss</wsse:Password>', 'password'],
  [
    'a Slack webhook',
    'https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX',
    'slack-token',
  ],
  ['an OAuth code with state', 'https://app.example/cb?code=Spl-xlOBeZQQYbY&state=xyz', 'token'],
  ['a jsessionid path parameter', '/shop/cart;jsessionid=0AAB6C8DE415E2E5 HTTP/1.1', 'session'],
  [
    'Authorization mid-line',
    'sent Authorization: Token 9944b09199c62bcf9418ad846dd0e4bb',
    'authorization',
  ],
];

for (const [what, text, kind] of FREE_TEXT) {
  Deno.test(`free text: redacts ${what}`, async () => {
    const redacted = await redactText(text, options);
    assert(redacted.includes(`[redacted:${kind}:`), redacted);
    assert(redacted.length > 0 && redacted !== text);
  });
}

Deno.test('free text: the parts around a secret are kept', async () => {
  assertEquals(
    await redactText('Server=db;Database=shop;User Id=app;Password=Ad0-P4ss;Pooling=true', options),
    `Server=db;Database=shop;User Id=app;Password=[redacted:password:${await hmacPrint(
      KEY,
      'Ad0-P4ss',
    )}];Pooling=true`,
  );
  const yaml = await redactText('db:\n  password: yaml-p4ssw0rd\n  host: db', options);
  assert(yaml.startsWith('db:\n  password: [redacted:password:') && yaml.endsWith('\n  host: db'));
});

Deno.test('free text: every value of a cookie list in a trace or a log line is redacted', async () => {
  for (
    const text of [
      '> GET / HTTP/1.1\n> Cookie: a=1st-crumb; b=2nd-crumb\n> Accept: */*',
      'request failed (headers: Cookie: a=1st-crumb; b=2nd-crumb)',
    ]
  ) {
    const redacted = await redactText(text, options);
    assertFalse(redacted.includes('crumb'), redacted);
    assert(redacted.includes('a=[redacted:cookie:') && redacted.includes('b=[redacted:cookie:'));
  }
});

Deno.test('free text: a look-alike placeholder in front of a secret does not hide it', async () => {
  for (
    const text of [
      'token=[redacted:token:00000000]look-alike-1',
      'send Bearer [redacted:bearer:00000000]look-alike-2 now',
      '{"password":"[redacted:password:00000000]look-alike-3"}',
    ]
  ) {
    assertFalse((await redactText(text, options)).includes('look-alike'), text);
  }
});

const HARMLESS: [string, string][] = [
  ['token metadata', '{"token_type":"Bearer","expires_in":3600,"refresh_token_expires_in":7200}'],
  ['token counts', '{"max_tokens":256,"usage":{"input_tokens":12,"total_tokens":40}}'],
  ['flags and policies', '{"otp_enabled":true,"password_policy":"min 12","password":null}'],
  ['public material', '{"public_key":"MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE","kid":"k1"}'],
  ['words that contain secret words', '{"secretary":"Ada","shipping":"pin-free","compass":"N"}'],
  [
    'prose about auth',
    'Use Basic authentication or the bearer of this letter; see password rules.',
  ],
  ['a WebSocket key', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='],
  [
    'publishable keys',
    'sb_publishable_ACJWlzQHlZjBrEguHvfOxg_3BJgxAaH pk_live_51HqLyjWDarjtT1zdp7dc',
  ],
  ['CSS custom properties', '.a{color:var(--sk-primary-color-very-long-name)}'],
  [
    'a UUID and a hash',
    'id=5f0c4f3e-8f6b-4e1a-9d2c-7b3a1e9f0c42 sha=e3b0c44298fc1c149afbf4c8996fb924',
  ],
  ['a URL with a port and no user', 'https://example.com:8443/path?page=2&sort=desc#top'],
  ['placeholders', 'key: [redacted:jwt:abcd1234], token=[redacted:token:0000ffff]'],
  ['big numbers and spacing in JSON', '{ "n": 12345678901234567890,\n  "f": 1.50e+3 }'],
];

for (const [what, text] of HARMLESS) {
  Deno.test(`free text: leaves ${what} alone`, async () => {
    assertEquals(await redactText(text, options), text);
  });
}

// --- JSON, forms, names ---------------------------------------------------------------------

Deno.test('JSON: the text outside the secrets is kept byte for byte', async () => {
  const text = '{\n  "a": 12345678901234567890,\n  "password": "pw-1",\n  "b": [1, 2.50]\n}';
  const redacted = await redactText(text, options);
  assertEquals(
    redacted,
    text.replace('pw-1', `[redacted:password:${await hmacPrint(KEY, 'pw-1')}]`),
  );
});

Deno.test('JSON: a body cut by the capture cap is read up to the cut', async () => {
  const redacted = await redactText(
    '{"user":"ada","password":"cut-pass","token":"abc123de',
    options,
  );
  assert(redacted.includes('"user":"ada"'));
  assertFalse(redacted.includes('cut-pass'));
  assertFalse(redacted.includes('abc123de'));
});

Deno.test('JSON: NDJSON lines and a value under a secret key that is an object', async () => {
  const redacted = await redactText(
    '{"token":"t-1-abcdef"}\n{"credentials":{"user":"u-x","sig":"s-2"},"ok":true}\n',
    options,
  );
  for (const secret of ['t-1-abcdef', 'u-x', 's-2']) assertFalse(redacted.includes(secret), secret);
  assert(redacted.includes('"ok":true') && redacted.includes('"user":"[redacted:secret:'));
});

Deno.test('JSON: name/value lists hide the value of a secret-named field', async () => {
  const redacted = await redactText(
    '[{"name":"password","value":"nv-pass-1"},{"name":"email","value":"a@b.example"}]',
    options,
  );
  assertFalse(redacted.includes('nv-pass-1'));
  assert(redacted.includes('"value":"a@b.example"'));
});

Deno.test('names: secret names are recognised by their words', () => {
  const cases: [string, string | undefined][] = [
    ['Authorization', 'authorization'],
    ['Proxy-Authorization', 'authorization'],
    ['X-Amz-Security-Token', 'token'],
    ['accessToken', 'token'],
    ['client_secret', 'secret'],
    ['APIKey', 'api-key'],
    ['x-goog-api-key', 'api-key'],
    ['card[number]', 'card'],
    ['PHPSESSID', 'session'],
    ['privateKey', 'private-key'],
    ['Set-Cookie', 'set-cookie'],
    ['mfa_code', 'token'],
    ['token_type', undefined],
    ['expires_in', undefined],
    ['Sec-WebSocket-Key', undefined],
    ['shipping_address', undefined],
    ['public_key', undefined],
    ['author', undefined],
    ['max_tokens', undefined],
  ];
  for (const [name, kind] of cases) assertEquals(classifyName(name), kind, name);
});

// --- Bodies -----------------------------------------------------------------------------------

function base64Of(text: string): string {
  let binary = '';
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

Deno.test('bodies: binary base64 is left byte for byte, text base64 is redacted', async () => {
  const png = btoa(String.fromCharCode(0x89, 0x50, 0x4e, 0x47, 0, 0, 0xff, 0xfe));
  const redacted = (await redactCapture({
    requestBody: { base64: png, encoding: 'base64', contentType: 'image/png' },
    responseBody: {
      base64: base64Of('{"password":"b64-pass"}'),
      encoding: 'base64',
      contentType: null,
    },
  }, options)) as Payload;
  assertEquals((redacted.requestBody as Payload).base64, png);
  const decoded = atob(String((redacted.responseBody as Payload).base64));
  assert(decoded.startsWith('{"password":"[redacted:password:'));
});

Deno.test('bodies: a body still in its Content-Encoding is not decoded', async () => {
  const wire = base64Of('{"password":"still-compressed"}');
  const body = {
    base64: wire,
    encoding: 'base64',
    contentType: 'application/json',
    contentEncoding: 'gzip',
    decoded: false,
  };
  const redacted = (await redactCapture({ responseBody: body }, options)) as Payload;
  assertEquals((redacted.responseBody as Payload).base64, wire);
});

Deno.test('bodies: base64 held in `text` with encoding base64 is decoded too', async () => {
  const redacted = (await redactCapture({
    requestBody: {
      text: base64Of('secret=abc-123-xyz'),
      encoding: 'base64',
      contentType: 'text/plain',
    },
  }, options)) as Payload;
  assertFalse(atob(String((redacted.requestBody as Payload).text)).includes('abc-123-xyz'));
});

Deno.test('bodies: the content type can come from the headers', async () => {
  const redacted = (await redactCapture({
    requestHeaders: [['content-type', 'application/x-www-form-urlencoded']],
    requestBody: { text: 'user=ada&pin=4321&pin_required=true', encoding: 'utf8' },
  }, options)) as Payload;
  const text = String((redacted.requestBody as Payload).text);
  assert(
    text.startsWith('user=ada&pin=[redacted:password:') && text.endsWith('&pin_required=true'),
  );
});

// --- Odd input and limits -----------------------------------------------------------------

Deno.test('odd input never throws and comes back as JSON would see it', async () => {
  const cyclic: Record<string, unknown> = { name: 'loop' };
  cyclic.self = cyclic;
  const throwing = Object.defineProperty({}, 'boom', {
    enumerable: true,
    get() {
      throw new Error('getter');
    },
  });
  let deep: unknown = 'bottom';
  for (let level = 0; level < 5000; level += 1) deep = [deep];
  const inputs: unknown[] = [
    null,
    undefined,
    42,
    true,
    'plain',
    [],
    {},
    cyclic,
    throwing,
    deep,
    new Date(0),
    { big: 10n, fn: () => 1, sym: Symbol('s') },
    { requestHeaders: 'not a list', responseHeaders: [['only-one'], 7, null] },
    { requestBody: { base64: '%%%not base64', encoding: 'base64', contentType: 'text/plain' } },
    { url: 42, query: null, messages: [{ opcode: 1 }, { opcode: 2, base64: '' }] },
    '\ud800 lone surrogate password=\udfff',
  ];
  for (const input of inputs) {
    const redacted = await redactCapture(input, options);
    JSON.stringify(redacted, (_key, value) => (typeof value === 'bigint' ? String(value) : value));
  }
  assertEquals(await redactCapture(null, options), null);
  assertEquals(await redactCapture(42, options), 42);
  assertEquals(await redactCapture(new Date(0), options), '1970-01-01T00:00:00.000Z');
  assertEquals(
    (await redactCapture(cyclic, options) as Payload).self,
    '[redaction-failed: circular reference withheld]',
  );
  assertEquals(await redactText(null as unknown as string, options), '');
});

Deno.test('limits: a long string is scanned up to the limit, the rest replaced by a marker', async () => {
  const secret = 'ghp_' + 'A1b2C3d4E5'.repeat(4);
  const text = `password=first-pass ${'x '.repeat(500)}${secret} ${'y'.repeat(2000)}`;
  const redacted = await redactText(text, { key: KEY, maxStringChars: 1030 });
  assert(redacted.startsWith('password=[redacted:password:'));
  assert(/\[redaction-limit: \d+ characters not scanned\]$/.test(redacted), redacted.slice(-80));
  // The cut fell inside the token: no part of it is echoed.
  assertFalse(redacted.includes('ghp_'));
  assertFalse(redacted.includes('yyy'));
});

Deno.test('limits: past the per-call budget, strings are withheld, not echoed', async () => {
  const redacted = (await redactCapture(
    { a: 'x'.repeat(100), b: 'unscanned secret-ish text' },
    { key: KEY, maxTotalChars: 100 },
  )) as Payload;
  assertEquals(redacted.a, 'x'.repeat(100));
  assertEquals(redacted.b, '[redaction-limit: 25 characters not scanned]');
});

Deno.test('limits: 2 MB of adversarial text is handled in linear time', async () => {
  const inputs = [
    'eyJ'.repeat(600_000),
    'AKIAIOSFODNN7EXAMPLE '.repeat(90_000),
    '-----BEGIN RSA PRIVATE KEY-----\n'.repeat(60_000),
    'password='.repeat(200_000),
    '{"a":['.repeat(300_000),
    'http://a:b'.repeat(200_000),
    // Encoded runs: every one decoded, percent-encoding nested, base64 of base64.
    'cGFzc3dvcmQ9eA== '.repeat(120_000),
    '%2525'.repeat(400_000),
    'a%2Eb'.repeat(400_000),
    base64Of(base64Of(base64Of('the words of a long letter, '.repeat(40_000)))),
  ];
  for (const input of inputs) {
    const started = performance.now();
    await redactText(input, options);
    const elapsed = performance.now() - started;
    assert(elapsed < 5000, `${input.slice(0, 20)}… took ${Math.round(elapsed)} ms`);
  }
});
