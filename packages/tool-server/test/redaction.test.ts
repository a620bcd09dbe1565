// 001 §4.3 under Node: the tool server loads the very redaction module and corpus the assistant
// runs under Deno (supabase/functions/_shared/redaction.ts, tested there by redaction_test.ts),
// and gets the same placeholders: no secret of the corpus survives, non-secrets do, and the
// fingerprints match the Deno run byte for byte.
import { describe, expect, it } from 'vitest';
import {
  createRedactor,
  REDACTION_KINDS,
  redactCapture,
  redactText,
} from '../../../supabase/functions/_shared/redaction.ts';
import {
  findLeaks,
  HARMLESS_HEADER,
  MULTIPART_FILE_BYTES,
  placeholderPrints,
  REDACTION_CORPUS,
  readableText,
} from '../../../supabase/functions/tests/redaction_corpus.ts';
import {
  ENCODED_CORPUS,
  findEncodedLeaks,
  readableEncodedText,
} from '../../../supabase/functions/tests/redaction_encoded_corpus.ts';

const KEY = new TextEncoder().encode('redaction-test-key-0123456789abcdef');
const OTHER_KEY = new TextEncoder().encode('another-redaction-key-fedcba9876543210');
const options = { key: KEY };

type Payload = Record<string, unknown>;
type Pair = [string, string];

describe('the redaction corpus under Node', () => {
  it.each(REDACTION_CORPUS.map((example) => [example.name, example] as const))(
    'leaves no secret of %s, in any encoding',
    async (_name, example) => {
      const redacted = await redactCapture(example.payload, options);
      expect(findLeaks(redacted, example.secrets)).toEqual([]);
      expect(
        example.secrets.filter((secret) => findLeaks(example.payload, [secret]).length === 0),
      ).toEqual([]);
    },
  );

  it.each(REDACTION_CORPUS.map((example) => [example.name, example] as const))(
    'keeps the non-secrets of %s and names the kinds',
    async (_name, example) => {
      const before = JSON.stringify(example.payload);
      const redacted = (await redactCapture(example.payload, options)) as Payload;
      const text = readableText(redacted);
      for (const kind of example.kinds) expect(text).toContain(`[redacted:${kind}:`);
      for (const survivor of example.present) expect(text).toContain(survivor);
      expect(redacted.method).toBe(example.payload.method);
      expect(redacted.host).toBe(example.payload.host);
      expect(redacted.statusCode).toBe(example.payload.statusCode);
      expect(redacted.requestHeaders as Pair[]).toContainEqual(HARMLESS_HEADER);
      expect(JSON.stringify(example.payload)).toBe(before);
    },
  );

  it.each(REDACTION_CORPUS.map((example) => [example.name, example] as const))(
    'gives %s stable placeholders per key, other ones under another key',
    async (_name, example) => {
      const first = JSON.stringify(await redactCapture(example.payload, options));
      expect(JSON.stringify(await redactCapture(example.payload, options))).toBe(first);
      const prints = placeholderPrints(first);
      const otherPrints = placeholderPrints(
        JSON.stringify(await redactCapture(example.payload, { key: OTHER_KEY })),
      );
      expect(otherPrints).toHaveLength(prints.length);
      expect(prints.filter((print) => otherPrints.includes(print))).toEqual([]);
    },
  );

  it('names only kinds of the closed set', async () => {
    const seen = new Set<string>();
    for (const example of REDACTION_CORPUS) {
      const text = readableText(await redactCapture(example.payload, options));
      for (const match of text.matchAll(/\[redacted:([a-z0-9-]+):[0-9a-f]{8}\]/g)) {
        seen.add(match[1] ?? '');
      }
    }
    expect(
      [...seen].filter((kind) => !(REDACTION_KINDS as readonly string[]).includes(kind)),
    ).toEqual([]);
  });

  it('keeps the bytes of a multipart file part', async () => {
    const upload = REDACTION_CORPUS.find((example) => example.name.startsWith('a multipart'));
    const redacted = (await redactCapture(upload?.payload, options)) as Payload;
    const body = atob(String((redacted.requestBody as Payload).base64));
    expect(body).toContain(String.fromCharCode(...MULTIPART_FILE_BYTES));
  });
});

describe('secrets in encodings under Node (docs/redaction.md "Encoded secrets")', () => {
  it.each(ENCODED_CORPUS.map((example) => [example.name, example] as const))(
    'leaves no secret of %s and names the kinds',
    async (_name, example) => {
      expect(
        example.secrets.filter(
          (secret) => findEncodedLeaks(example.payload, [secret]).length === 0,
        ),
      ).toEqual([]);
      const redacted = await redactCapture(example.payload, options);
      expect(findEncodedLeaks(redacted, example.secrets)).toEqual([]);
      const text = readableEncodedText(redacted);
      for (const kind of example.kinds) expect(text).toContain(`[redacted:${kind}:`);
      for (const survivor of example.present) expect(text).toContain(survivor);
    },
  );
});

describe('the same placeholders as under Deno', () => {
  it('fingerprints with HMAC-SHA256 exactly as the Deno test expects', async () => {
    // supabase/functions/_shared/redaction_test.ts asserts the same string.
    expect(await redactText('Authorization: Bearer abcdefghij0123456789', options)).toBe(
      'Authorization: Bearer [redacted:bearer:6bd7bd54]',
    );
  });

  it('never throws on odd input', async () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const input of [null, undefined, 7, 'text', [], cyclic, { requestHeaders: 5 }]) {
      await expect(redactCapture(input, options)).resolves.not.toThrow();
    }
  });

  it('refuses a short key', async () => {
    await expect(redactText('x', { key: new Uint8Array(8) })).rejects.toBeInstanceOf(TypeError);
  });

  it('serves many calls from one redactor', async () => {
    const redactor = createRedactor(options);
    const first = await redactor.redactText('{"password":"node-side-pw"}');
    expect(first).toMatch(/^\{"password":"\[redacted:password:[0-9a-f]{8}\]"\}$/);
    expect(await redactor.redactText('{"password":"node-side-pw"}')).toBe(first);
  });
});
