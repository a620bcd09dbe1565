// Confirming an assistant proposal (docs/assistant.md "Writes"): one POST to this deployment's
// /functions/v1/ask/confirm with the session token and {confirmation}, and its answers as the page
// shows them. Regression: the page showed the artifact's confirm_url as a link, which a browser
// follows with a GET and no token, so no write could ever be confirmed.
import { describe, expect, it } from 'vitest';
import { confirmationIdOf, confirmProposal } from '../src/assistant/confirm-client.ts';

const CONFIRMATION = '0f6a4f3e-4a4b-4c1d-9e2f-1a2b3c4d5e6f';
const OPTIONS = {
  supabaseUrl: 'http://127.0.0.1:54321',
  apiKey: 'sb_publishable_test',
  accessToken: 'session-token',
};

function answering(status: number, body: unknown) {
  const seen: { url: string; init: RequestInit }[] = [];
  const fetcher = (async (url: string, init: RequestInit) => {
    seen.push({ url, init });
    return new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json' },
    });
  }) as unknown as typeof fetch;
  return { seen, fetcher };
}

describe('confirming a proposed write', () => {
  it('POSTs {confirmation} with the bearer token to this deployment, whatever confirm_url says', async () => {
    const { seen, fetcher } = answering(200, {
      applied: true,
      action: 'tag_request',
      entry_id: 42,
      tag_id: 't',
      tag_name: 'checkout-bug',
    });
    expect(await confirmProposal(OPTIONS, CONFIRMATION, fetcher)).toEqual({
      kind: 'applied',
      entryId: 42,
      tagName: 'checkout-bug',
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe('http://127.0.0.1:54321/functions/v1/ask/confirm');
    expect(seen[0]?.init.method).toBe('POST');
    expect(seen[0]?.init.headers).toMatchObject({ authorization: 'Bearer session-token' });
    expect(JSON.parse(String(seen[0]?.init.body))).toEqual({ confirmation: CONFIRMATION });
  });

  it.each([
    [
      409,
      { error: 'already_applied', message: 'This confirmation was already used.' },
      'already_applied',
    ],
    [
      404,
      { error: 'not_found', message: 'No pending proposal with this confirmation for you.' },
      'refused',
    ],
    [403, { error: 'forbidden', message: 'Your role may not make this change.' }, 'refused'],
    [
      503,
      { error: 'unavailable', message: 'The change could not be applied just now.' },
      'refused',
    ],
  ])('maps %i to %s', async (status, body, kind) => {
    const outcome = await confirmProposal(OPTIONS, CONFIRMATION, answering(status, body).fetcher);
    expect(outcome.kind).toBe(kind);
    if (outcome.kind === 'refused') expect(outcome.message).toBe(body.message);
  });

  it('says a network failure applied nothing', async () => {
    const failing = (async () => {
      throw new TypeError('Failed to fetch');
    }) as unknown as typeof fetch;
    expect(await confirmProposal(OPTIONS, CONFIRMATION, failing)).toMatchObject({
      kind: 'refused',
      code: 'network',
    });
  });

  it('offers Confirm only for a confirmation artifact with a well-formed id', () => {
    expect(confirmationIdOf({ type: 'confirmation', confirmation: CONFIRMATION })).toBe(
      CONFIRMATION,
    );
    // Extra fields (the function may add more, e.g. untrusted_context) change nothing.
    expect(
      confirmationIdOf({
        type: 'confirmation',
        confirmation: CONFIRMATION,
        untrusted_context: '<b>x</b>',
      }),
    ).toBe(CONFIRMATION);
    expect(confirmationIdOf({ type: 'note', confirmation: CONFIRMATION })).toBeNull();
    expect(confirmationIdOf({ type: 'confirmation', confirmation: 'javascript:x' })).toBeNull();
  });
});
