// The form body of /token and /revoke (RFC 6749 §3.2: application/x-www-form-urlencoded, each
// parameter at most once).
import { OAuthError } from './oauth-error.ts';

const MAX_FORM_BYTES = 16 * 1024;

export async function readForm(request: Request): Promise<URLSearchParams> {
  const type = request.headers.get('content-type') ?? '';
  if (!/^application\/x-www-form-urlencoded\b/i.test(type)) {
    throw new OAuthError('invalid_request', 'The body must be application/x-www-form-urlencoded.');
  }
  const text = await request.text();
  if (text.length > MAX_FORM_BYTES)
    throw new OAuthError('invalid_request', 'The body is too large.');
  const form = new URLSearchParams(text);
  const seen = new Set<string>();
  for (const name of form.keys()) {
    if (seen.has(name)) {
      throw new OAuthError('invalid_request', `The parameter ${name} is repeated (RFC 6749 §3.2).`);
    }
    seen.add(name);
  }
  return form;
}
