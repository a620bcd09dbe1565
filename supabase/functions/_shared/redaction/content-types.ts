// What a body's media type says about how to read it: JSON, a form, multipart, other text, or
// binary (left alone). Matches the proxy's idea of textual bodies (proxy/src/capture/body-tap.ts).

/** How a string is read: `auto` looks at the text itself. */
export type TextHint = 'auto' | 'json' | 'form' | 'url' | 'text';

export type BodyHint = TextHint | 'multipart';

/** The reading of a media type, or undefined when it does not say the body is text. */
export function hintForContentType(contentType: string | undefined): BodyHint | undefined {
  if (!contentType) return undefined;
  const type = contentType.toLowerCase();
  if (/^multipart\//.test(type)) return boundaryOf(contentType) ? 'multipart' : 'text';
  if (/json/.test(type)) return 'json';
  if (/^application\/x-www-form-urlencoded/.test(type)) return 'form';
  if (
    /^text\/|xml|javascript|ecmascript|graphql|yaml|toml|csv|x-sh\b|sql|event-stream/
      .test(type)
  ) {
    return 'text';
  }
  return undefined;
}

/** Bodies of these types may be text even without saying so; their bytes are looked at. */
export function mayBeText(contentType: string | undefined): boolean {
  return !contentType || /^application\/octet-stream\b/i.test(contentType.trim());
}

/** RFC 2046 §5.1.1: the boundary parameter of a multipart media type. */
export function boundaryOf(contentType: string): string | undefined {
  const match = /;\s*boundary=(?:"([^"]{1,200})"|([^;\s]{1,200}))/i.exec(contentType);
  return match?.[1] ?? match?.[2];
}
