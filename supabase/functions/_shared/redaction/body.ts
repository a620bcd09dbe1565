// Bodies as the proxy stores them (docs/proxy.md "The capture row"): `{text | base64, encoding,
// size, truncated, contentType, contentEncoding?, decoded?}`, and WebSocket messages `{opcode,
// text | base64, compressed?}`. Text is read by its media type; base64 is decoded when it holds
// text (a textual media type, or bytes that are valid UTF-8 without control characters), then
// encoded again, and left alone when binary or still compressed.
import {
  binaryOfBytes,
  bytesOfBinary,
  decodeBase64,
  decodeTextBytes,
  decodeUtf8,
  encodeBase64,
  encodeUtf8,
} from './bytes.ts';
import { boundaryOf, hintForContentType, mayBeText } from './content-types.ts';
import { BINARY_CODEC, type PartCodec, planMultipart, TEXT_CODEC } from './multipart.ts';
import { type Context, type Plan, unchangedPlan, type ValuePlan } from './plan.ts';
import { planString } from './text.ts';

/** True for a stored body or a WebSocket message. */
export function isBodyShaped(value: Record<string, unknown>): boolean {
  return (typeof value.text === 'string' || typeof value.base64 === 'string') &&
    (typeof value.encoding === 'string' || typeof value.opcode === 'number');
}

/**
 * The redaction of a body object. `headerContentType` comes from the capture's headers, for a
 * body without `contentType`; `planOther` copies the members that are not the content.
 */
export function planBody(
  body: Record<string, unknown>,
  headerContentType: string | undefined,
  context: Context,
  planOther: (member: string, value: unknown) => ValuePlan,
): ValuePlan {
  const contentMember = typeof body.base64 === 'string' ? 'base64' : 'text';
  const content = String(body[contentMember]);
  const contentType = typeof body.contentType === 'string' ? body.contentType : headerContentType;
  const plan = contentMember === 'base64' || body.encoding === 'base64'
    ? planBase64(content, body, contentType, context)
    : planText(content, contentType, context, TEXT_CODEC);
  const members = Object.keys(body).map((member): [string, ValuePlan] => [
    member,
    member === contentMember ? (lookup) => plan.render(lookup) : planOther(member, body[member]),
  ]);
  return (lookup) =>
    Object.fromEntries(members.map(([member, render]) => [member, render(lookup)]));
}

function planText(
  text: string,
  contentType: string | undefined,
  context: Context,
  codec: PartCodec,
): Plan {
  const hint = hintForContentType(contentType);
  const boundary = contentType ? boundaryOf(contentType) : undefined;
  if (hint === 'multipart' && boundary && text.length <= context.limits.maxStringChars) {
    // Each part is a string of the input of its own: counted and bounded as such (depth 0).
    const nested = (inner: string, innerHint: Parameters<typeof planString>[1]) =>
      planString(inner, innerHint, context, 0);
    return planMultipart(text, boundary, codec, context, 0, nested);
  }
  return planString(text, hint === undefined || hint === 'multipart' ? 'auto' : hint, context, 0);
}

function planBase64(
  content: string,
  body: Record<string, unknown>,
  contentType: string | undefined,
  context: Context,
): Plan {
  // Bytes still in their Content-Encoding (truncated or undecodable) are not text.
  const coding = typeof body.contentEncoding === 'string' ? body.contentEncoding : 'identity';
  if ((coding !== 'identity' && body.decoded !== true) || body.compressed === true) {
    return unchangedPlan(content);
  }
  const opcode = typeof body.opcode === 'number' ? body.opcode : undefined;
  if (opcode !== undefined && opcode !== 1 && opcode !== 2) return unchangedPlan(content);
  const bytes = decodeBase64(content);
  if (!bytes) return unchangedPlan(content);
  const hint = hintForContentType(contentType);
  if (hint === 'multipart') {
    const plan = planText(binaryOfBytes(bytes), contentType, context, BINARY_CODEC);
    return reencoded(content, plan, (rendered) => encodeBase64(bytesOfBinary(rendered)));
  }
  const text = hint !== undefined || opcode === 1
    ? decodeUtf8(bytes)
    : mayBeText(contentType)
    ? decodeTextBytes(bytes)
    : undefined;
  if (text === undefined) return unchangedPlan(content);
  const plan = planText(text, contentType, context, TEXT_CODEC);
  return reencoded(content, plan, (rendered) => encodeBase64(encodeUtf8(rendered)));
}

/** Encodes a changed plan's output again; an unchanged body keeps its exact original bytes. */
function reencoded(original: string, plan: Plan, encode: (rendered: string) => string): Plan {
  if (!plan.changed) return unchangedPlan(original);
  return { changed: true, render: (lookup) => encode(plan.render(lookup)) };
}
