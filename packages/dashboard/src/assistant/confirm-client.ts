// POST /functions/v1/ask/confirm {confirmation} (docs/assistant.md "Writes"): applies a write the
// assistant proposed, once, as the signed-in user. The answers are mapped to what the page says:
// 200 applied, 409 already applied (a replay), any other refusal with the function's message.

export type ConfirmOutcome =
  | { kind: 'applied'; tagName: string | null; entryId: number | null }
  | { kind: 'already_applied' }
  | { kind: 'refused'; status: number; code: string; message: string };

/** The confirmation id of a proposal artifact, or null when it carries none (nothing to press). */
export function confirmationIdOf(artifact: Record<string, unknown>): string | null {
  const value = artifact.confirmation;
  return artifact.type === 'confirmation' &&
    typeof value === 'string' &&
    /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value)
    ? value
    : null;
}

/**
 * Confirms one proposal. The URL is built from the configured API origin, never taken from the
 * artifact's `confirm_url`: the session token goes only to this deployment's own function.
 */
export async function confirmProposal(
  options: { supabaseUrl: string; apiKey: string; accessToken: string },
  confirmation: string,
  fetcher: typeof fetch = fetch,
): Promise<ConfirmOutcome> {
  let response: Response;
  try {
    response = await fetcher(`${options.supabaseUrl}/functions/v1/ask/confirm`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${options.accessToken}`,
        apikey: options.apiKey,
      },
      body: JSON.stringify({ confirmation }),
    });
  } catch {
    return {
      kind: 'refused',
      status: 0,
      code: 'network',
      message: 'The change could not be sent; nothing was applied.',
    };
  }
  let body: Record<string, unknown> = {};
  try {
    body = (await response.json()) as Record<string, unknown>;
  } catch {
    // Not JSON: the status decides.
  }
  if (response.status === 200 && body.applied === true) {
    return {
      kind: 'applied',
      tagName: typeof body.tag_name === 'string' ? body.tag_name : null,
      entryId: typeof body.entry_id === 'number' ? body.entry_id : null,
    };
  }
  if (response.status === 409) return { kind: 'already_applied' };
  return {
    kind: 'refused',
    status: response.status,
    code: typeof body.error === 'string' ? body.error : 'unknown',
    message:
      typeof body.message === 'string'
        ? body.message
        : `The assistant answered ${response.status}.`,
  };
}
