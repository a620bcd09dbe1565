// The authorization response: the registered redirect URI with our parameters appended to its
// query (RFC 6749 §4.1.2, keeping any query it already has), `state` echoed and `iss` always set
// (RFC 9207 §2: on success and on error).

export function buildRedirectUrl(
  redirectUri: string,
  parameters: Record<string, string | null | undefined>,
): string {
  const url = new URL(redirectUri);
  for (const [name, value] of Object.entries(parameters)) {
    if (value !== undefined && value !== null) url.searchParams.append(name, value);
  }
  return url.toString();
}
