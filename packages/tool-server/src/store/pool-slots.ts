// The fair queue in front of the tool pool (docs/tool-server.md "Fair use"): a connection is taken
// only once a slot is granted, and slots go round-robin across users (start-time fair queueing,
// one grant per turn), so one user's many waiting calls never starve another's one. The search
// lane (trigram search over captures) may hold only its own smaller share, so expensive searches
// can never occupy the whole pool.

/** Which share of the pool a checkout counts against. */
export type PoolLane = 'standard' | 'search';

export interface PoolSlotsOptions {
  /** Slots in all: the pool's size, so the pool's own queue is never used. */
  slots: number;
  /** At most this many slots held by the search lane at once (fewer than `slots`). */
  searchSlots: number;
  /** A checkout that waits longer is refused with PoolBusyError. */
  waitMs: number;
}

/** Every slot stayed taken for the whole wait: the server is saturated, not the caller at fault. */
export class PoolBusyError extends Error {
  readonly code = 'pool_busy';

  constructor(waitMs: number) {
    super(`no database connection became free within ${waitMs} ms`);
    this.name = 'PoolBusyError';
  }
}

interface Waiter {
  lane: PoolLane;
  grant(release: () => void): void;
  timer: NodeJS.Timeout;
}

/** One user's waiters, and their turn: the virtual time of their next grant. */
interface UserQueue {
  turn: number;
  waiters: Waiter[];
}

export class PoolSlots {
  private readonly options: PoolSlotsOptions;
  private held = 0;
  private searchHeld = 0;
  /** Users with waiters; among equal turns, map order decides. */
  private readonly queues = new Map<string, UserQueue>();
  /** The turn of the latest grant. A user who starts waiting joins at it, never behind it. */
  private virtualTime = 0;
  /**
   * Users served at the current virtual time whose queues then emptied, with their next turn: a
   * flood that drains and comes back rejoins behind a newcomer, not level with it. Cleared when
   * the clock moves on, as every turn it holds is then in the past.
   */
  private readonly idleTurns = new Map<string, number>();

  constructor(options: PoolSlotsOptions) {
    if (options.searchSlots >= options.slots) {
      throw new RangeError('the search lane must have fewer slots than the pool');
    }
    this.options = options;
  }

  /** Waits for a slot for `user` in `lane`; the answer frees it (once, however often called). */
  acquire(user: string, lane: PoolLane = 'standard'): Promise<() => void> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        lane,
        grant: (release) => {
          clearTimeout(waiter.timer);
          resolve(release);
        },
        timer: setTimeout(() => {
          this.withdraw(user, waiter);
          reject(new PoolBusyError(this.options.waitMs));
        }, this.options.waitMs),
      };
      const queue = this.queues.get(user);
      if (queue) queue.waiters.push(waiter);
      else {
        const turn = Math.max(this.virtualTime, this.idleTurns.get(user) ?? 0);
        this.idleTurns.delete(user);
        this.queues.set(user, { turn, waiters: [waiter] });
      }
      this.dispatch();
    });
  }

  private eligible(waiter: Waiter): boolean {
    return waiter.lane === 'standard' || this.searchHeld < this.options.searchSlots;
  }

  /** Grants free slots one at a time, each to the waiting user whose turn comes first. */
  private dispatch(): void {
    while (this.held < this.options.slots) {
      const next = this.nextGrant();
      if (!next) return;
      const { user, queue, index } = next;
      const [waiter] = queue.waiters.splice(index, 1) as [Waiter];
      const turn = this.turnOf(queue);
      if (turn > this.virtualTime) this.idleTurns.clear();
      this.virtualTime = turn;
      queue.turn = turn + 1;
      // Equal turns are served in map order: the user just served goes behind the others.
      this.queues.delete(user);
      if (queue.waiters.length > 0) this.queues.set(user, queue);
      else this.idleTurns.set(user, queue.turn);
      this.held += 1;
      if (waiter.lane === 'search') this.searchHeld += 1;
      waiter.grant(this.releaser(waiter.lane));
    }
  }

  /** The user with the earliest turn among those with a waiter the lanes allow; their oldest. */
  private nextGrant(): { user: string; queue: UserQueue; index: number } | undefined {
    let best: { user: string; queue: UserQueue; index: number } | undefined;
    for (const [user, queue] of this.queues) {
      if (best && this.turnOf(queue) >= this.turnOf(best.queue)) continue;
      const index = queue.waiters.findIndex((waiter) => this.eligible(waiter));
      if (index >= 0) best = { user, queue, index };
    }
    return best;
  }

  /**
   * A user's turn, never earlier than the clock: one whose search calls were held back by the
   * search share banks no credit to spend later ahead of everyone else.
   */
  private turnOf(queue: UserQueue): number {
    return Math.max(queue.turn, this.virtualTime);
  }

  private releaser(lane: PoolLane): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.held -= 1;
      if (lane === 'search') this.searchHeld -= 1;
      this.dispatch();
    };
  }

  private withdraw(user: string, waiter: Waiter): void {
    const queue = this.queues.get(user);
    if (!queue) return;
    const index = queue.waiters.indexOf(waiter);
    if (index >= 0) queue.waiters.splice(index, 1);
    if (queue.waiters.length === 0) this.queues.delete(user);
  }
}
