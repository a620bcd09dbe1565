// Unit tests of fair use (docs/tool-server.md "Fair use"), on a frozen clock: the pool's fair queue
// (round-robin across users, the search lane's smaller share, the wait limit), admission per token
// and account (concurrency, the token bucket, tickets), and the 429 a refused request gets.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { readMcpBody } from '../src/mcp/mcp-body.ts';
import { AdmissionTicket, ToolCallAdmission } from '../src/mcp/tool-call-admission.ts';
import { admitToolCalls, tooManyToolCalls } from '../src/mcp/tool-call-gate.ts';
import { PoolBusyError, type PoolLane, PoolSlots } from '../src/store/pool-slots.ts';

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

interface Asked {
  granted: boolean;
  released: boolean;
  refused?: unknown;
  release(): void;
}

/** One checkout; `order` records who was granted, in order. */
function ask(slots: PoolSlots, user: string, lane: PoolLane, order: string[] = []): Asked {
  const asked: Asked = {
    granted: false,
    released: false,
    release: () => {
      throw new Error(`${user}'s ${lane} checkout was not granted`);
    },
  };
  slots.acquire(user, lane).then(
    (release) => {
      asked.granted = true;
      asked.release = () => {
        asked.released = true;
        release();
      };
      order.push(user);
    },
    (error: unknown) => {
      asked.refused = error;
    },
  );
  return asked;
}

/** Lets granted checkouts' promises settle (no time passes). */
const settle = () => vi.advanceTimersByTimeAsync(0);

const granted = (asked: Asked[]) => asked.filter((one) => one.granted);
const holding = (asked: Asked[]) => asked.filter((one) => one.granted && !one.released);

describe('the fair queue of the tool pool', () => {
  it("serves another user's one call at the next free slot, ahead of one user's 500 waiting", async () => {
    const slots = new PoolSlots({ slots: 10, searchSlots: 3, waitMs: 60_000 });
    const order: string[] = [];
    const running = Array.from({ length: 10 }, () => ask(slots, 'flooder', 'standard'));
    await settle();
    expect(granted(running)).toHaveLength(10);
    const waiting = Array.from({ length: 500 }, () => ask(slots, 'flooder', 'standard', order));
    const admin = ask(slots, 'admin', 'standard', order);
    await settle();
    expect(order).toEqual([]);

    running[0]?.release();
    await settle();
    expect(admin.granted).toBe(true);
    expect(order).toEqual(['admin']);

    running[1]?.release();
    await settle();
    expect(order).toEqual(['admin', 'flooder']);
    expect(granted(waiting)).toHaveLength(1);
  });

  it('takes turns across users with waiting calls, the one served already going last', async () => {
    const slots = new PoolSlots({ slots: 1, searchSlots: 0, waitMs: 60_000 });
    const order: string[] = [];
    const first = ask(slots, 'a', 'standard');
    await settle();
    const queued = ['a', 'b', 'c'].flatMap((user) =>
      Array.from({ length: 3 }, () => ask(slots, user, 'standard', order)),
    );
    first.release();
    await settle();
    while (holding(queued).length > 0) {
      holding(queued)[0]?.release();
      await settle();
    }
    expect(order).toEqual(['b', 'c', 'a', 'b', 'c', 'a', 'b', 'c', 'a']);
  });

  it('never lets the search lane hold more than its share, whatever waits', async () => {
    const slots = new PoolSlots({ slots: 10, searchSlots: 3, waitMs: 60_000 });
    const searches = ['a', 'b', 'c', 'd'].flatMap((user) =>
      Array.from({ length: 10 }, () => ask(slots, user, 'search')),
    );
    await settle();
    expect(granted(searches)).toHaveLength(3);

    // The other seven slots stay for everything else, at once.
    const others = Array.from({ length: 7 }, (_, index) => ask(slots, `user-${index}`, 'standard'));
    await settle();
    expect(granted(others)).toHaveLength(7);

    // A freed standard slot goes to a standard call, never to a waiting search.
    const late = ask(slots, 'late', 'standard');
    others[0]?.release();
    await settle();
    expect(late.granted).toBe(true);
    expect(granted(searches)).toHaveLength(3);

    // A freed search slot goes to the next search, and the share stays at three.
    holding(searches)[0]?.release();
    await settle();
    expect(granted(searches)).toHaveLength(4);
    expect(holding(searches)).toHaveLength(3);
  });

  it("serves a user's standard call while its own searches wait for the search share", async () => {
    const slots = new PoolSlots({ slots: 4, searchSlots: 1, waitMs: 60_000 });
    const first = ask(slots, 'a', 'search');
    const secondSearch = ask(slots, 'a', 'search');
    const standard = ask(slots, 'a', 'standard');
    await settle();
    expect([first.granted, secondSearch.granted, standard.granted]).toEqual([true, false, true]);
  });

  it('refuses a checkout that waited longer than the limit, and forgets it', async () => {
    const slots = new PoolSlots({ slots: 2, searchSlots: 1, waitMs: 5_000 });
    const held = [ask(slots, 'a', 'standard'), ask(slots, 'a', 'standard')];
    const waiting = ask(slots, 'b', 'standard');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(waiting.refused).toBeInstanceOf(PoolBusyError);
    const next = ask(slots, 'c', 'standard');
    held[0]?.release();
    await settle();
    expect(waiting.granted).toBe(false);
    expect(next.granted).toBe(true);
  });

  it('frees one slot however often a release is called', async () => {
    const slots = new PoolSlots({ slots: 1, searchSlots: 0, waitMs: 60_000 });
    const first = ask(slots, 'a', 'standard');
    await settle();
    const second = ask(slots, 'b', 'standard');
    const third = ask(slots, 'c', 'standard');
    first.release();
    first.release();
    await settle();
    expect([second.granted, third.granted]).toEqual([true, false]);
  });

  it('refuses a search share as large as the pool', () => {
    expect(() => new PoolSlots({ slots: 4, searchSlots: 4, waitMs: 1_000 })).toThrow(RangeError);
  });
});

const LIMITS = { perTokenConcurrency: 2, perUserConcurrency: 3, perUserRate: 2, perUserBurst: 5 };

/** Admission on a clock the test moves by hand. */
function admissionAt(start = 0) {
  const clock = { now: start };
  return { clock, admission: new ToolCallAdmission(LIMITS, () => clock.now) };
}

function ticketOf(outcome: ReturnType<ToolCallAdmission['admit']>): AdmissionTicket {
  if (!(outcome instanceof AdmissionTicket)) throw new Error(`refused: ${outcome.limit}`);
  return outcome;
}

/** Admits one call and lets it run to its end. */
function runOne(admission: ToolCallAdmission, token: string, user: string) {
  const ticket = ticketOf(admission.admit(token, user, 1));
  expect(ticket.begin()).toBe(true);
  ticket.end();
  ticket.close();
}

describe('admission of tool calls', () => {
  it('refuses a token its third call in flight, and the account its fourth', () => {
    const { admission } = admissionAt();
    ticketOf(admission.admit('t1', 'u', 1));
    ticketOf(admission.admit('t1', 'u', 1));
    expect(admission.admit('t1', 'u', 1)).toMatchObject({
      limit: 'token_concurrency',
      retryAfterSeconds: 1,
    });
    ticketOf(admission.admit('t2', 'u', 1));
    expect(admission.admit('t2', 'u', 1)).toMatchObject({ limit: 'user_concurrency' });
    // Another account is not affected.
    ticketOf(admission.admit('t3', 'other', 1));
  });

  it('refuses calls beyond the burst until the bucket has refilled, naming the wait', () => {
    const { clock, admission } = admissionAt();
    for (let call = 0; call < 5; call += 1) runOne(admission, 't', 'u');
    expect(admission.admit('t', 'u', 1)).toMatchObject({
      limit: 'user_rate',
      retryAfterSeconds: 1,
    });
    clock.now += 250;
    // Half a call earned at 2 a second: the rest takes 0.25 s, said as a whole second.
    expect(admission.admit('t', 'u', 1)).toMatchObject({
      limit: 'user_rate',
      retryAfterSeconds: 1,
    });
    clock.now += 250;
    runOne(admission, 't', 'u');
    expect(admission.admit('t', 'u', 2)).toMatchObject({
      limit: 'user_rate',
      retryAfterSeconds: 1,
    });
    clock.now += 10_000;
    // Never more than the burst, however long the quiet.
    for (let call = 0; call < 5; call += 1) runOne(admission, 't', 'u');
    expect(admission.admit('t', 'u', 1)).toMatchObject({ limit: 'user_rate' });
  });

  it('does not spend the rate of calls refused for concurrency', () => {
    const { admission } = admissionAt();
    const held = [ticketOf(admission.admit('t', 'u', 1)), ticketOf(admission.admit('t', 'u', 1))];
    for (let call = 0; call < 100; call += 1) {
      expect(admission.admit('t', 'u', 1)).toMatchObject({ limit: 'token_concurrency' });
    }
    for (const ticket of held) ticket.close();
    // Two spent of five: three more at once.
    runOne(admission, 't', 'u');
    runOne(admission, 't', 'u');
    runOne(admission, 't', 'u');
    expect(admission.admit('t', 'u', 1)).toMatchObject({ limit: 'user_rate' });
  });

  it('counts a call in flight from its admission until it has run', () => {
    const { admission } = admissionAt();
    const ticket = ticketOf(admission.admit('t', 'u', 2));
    expect(ticket.begin()).toBe(true);
    // The exchange ends (the client left): the call that never began stops counting at once,
    ticket.close();
    expect(ticket.begin()).toBe(false);
    ticketOf(admission.admit('t', 'u', 1));
    expect(admission.admit('t', 'u', 1)).toMatchObject({ limit: 'token_concurrency' });
    // and the one still running counts until it ends.
    ticket.end();
    ticketOf(admission.admit('t', 'u', 1));
  });

  it("gives back the rate of a request refused before it ran (a revoked token's)", () => {
    const { admission } = admissionAt();
    for (let request = 0; request < 50; request += 1) {
      ticketOf(admission.admit('revoked', 'u', 1)).cancel();
    }
    for (let call = 0; call < 5; call += 1) runOne(admission, 'live', 'u');
  });

  it('admits or refuses a batch as a whole', () => {
    const { admission } = admissionAt();
    expect(admission.admit('t', 'u', 3)).toMatchObject({ limit: 'token_concurrency' });
    const batch = ticketOf(admission.admit('t', 'u', 2));
    batch.close();
    expect(admission.admit('t', 'u', 4)).toMatchObject({ limit: 'token_concurrency' });
  });
});

function toolCallPost(body: unknown): Request {
  return new Request('http://127.0.0.1/', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

const CALL = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'list_tags' } };
const CLAIMS = { jti: 'token', sub: 'user' };

describe('the gate on POST /', () => {
  it('answers 429 with Retry-After and a JSON-RPC error naming the limit and the wait', async () => {
    const response = tooManyToolCalls(
      { limit: 'user_rate', retryAfterSeconds: 3, message: 'This account may make 2 calls.' },
      7,
    );
    expect(response.status).toBe(429);
    expect(response.headers.get('retry-after')).toBe('3');
    expect(await response.json()).toEqual({
      jsonrpc: '2.0',
      id: 7,
      error: {
        code: -32029,
        message: 'Too many tool calls: This account may make 2 calls. Retry after 3 s.',
        data: { error: 'too_many_requests', limit: 'user_rate', retry_after: 3 },
      },
    });
  });

  it('counts each tools/call of a batch, and lets other methods and bad JSON through', async () => {
    const { admission } = admissionAt();
    const bodyOf = async (request: Request) => (await readMcpBody(request)).parsedBody;
    const batch = [CALL, { ...CALL, id: 8 }, { jsonrpc: '2.0', id: 9, method: 'tools/list' }];
    const admitted = admitToolCalls(admission, await bodyOf(toolCallPost(batch)), CLAIMS);
    expect(admitted).toBeInstanceOf(AdmissionTicket);
    const refused = admitToolCalls(admission, await bodyOf(toolCallPost(CALL)), CLAIMS);
    expect((refused as Response).status).toBe(429);
    expect(await (refused as Response).json()).toMatchObject({ id: 7 });
    for (const other of [
      toolCallPost({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      toolCallPost({ jsonrpc: '2.0', method: 'tools/call' }),
      new Request('http://127.0.0.1/', { method: 'POST', body: '{not json' }),
      new Request('http://127.0.0.1/', { method: 'GET' }),
    ]) {
      expect(admitToolCalls(admission, await bodyOf(other), CLAIMS)).toBeNull();
    }
    expect(admitToolCalls(null, await bodyOf(toolCallPost(CALL)), CLAIMS)).toBeNull();
  });
});

describe("an MCP POST's body, read once", () => {
  it('is parsed for the SDK; one that is not JSON is handed on as a copy the SDK can read', async () => {
    const json = await readMcpBody(toolCallPost(CALL));
    expect(json.parsedBody).toEqual(CALL);
    const broken = await readMcpBody(
      new Request('http://127.0.0.1/', { method: 'POST', body: '{not json' }),
    );
    expect(broken.parsedBody).toBeUndefined();
    expect(await broken.request.text()).toBe('{not json');
    const get = new Request('http://127.0.0.1/', { method: 'GET' });
    expect(await readMcpBody(get)).toEqual({ request: get });
  });
});
