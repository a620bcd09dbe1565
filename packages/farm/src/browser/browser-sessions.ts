// browser_cdp's sessions on this farm host (docs/farm.md "Browser"): each is one sandboxed
// Chromium with one tab, owned by the user and the OAuth grant that opened it (a first-party
// token, which has no grant, binds it to the user), and reachable only by calls under that same
// grant. A session ends when its owner closes it, after `idleSeconds` without a call, when the
// browser dies, on server shutdown, and within LIVENESS_MS of its grant being revoked (for a
// first-party token: of a token that acted in it being revoked), its account suspended or
// deleted, or its role losing farm:edit: no browser outlives its owner's grant or token. Actions
// on one session run one at a time.
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActingCaller } from '../acting-caller.ts';
import type { FarmConfig } from '../farm-config.ts';
import type { FarmDatabase } from '../farm-database.ts';
import type { FarmDevices } from '../farm-egress.ts';
import { FarmError } from '../farm-error.ts';
import { BrowserPage } from './browser-page.ts';
import { type SandboxedBrowser, startSandboxedBrowser } from './chromium-sandbox.ts';

/** How often every session's owner is checked (the listen streams use the same period). */
const LIVENESS_MS = 15_000;

/** Who a session belongs to: the user, and the grant its calls must come under. */
interface Owner {
  userId: string;
  /** `grant:<id>` for an OAuth token, `user:<id>` for a first-party token (no grant). */
  key: string;
  grantId: string | null;
}

export class BrowserSession {
  readonly id = randomUUID();
  readonly owner: Owner;
  readonly deviceUuid: string;
  readonly page: BrowserPage;
  readonly createdAt = new Date();
  lastUsedAt = new Date();
  /**
   * First-party sessions (no grant): the jti of every token that opened or reached it. The
   * dashboard exchanges its session for a new token as the old one expires, so several may act in
   * one session; the revocation of any of them ends it (api_tokens.revoked_at).
   */
  readonly tokenJtis = new Set<string>();
  private readonly browser: SandboxedBrowser;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(owner: Owner, deviceUuid: string, browser: SandboxedBrowser, page: BrowserPage) {
    this.owner = owner;
    this.deviceUuid = deviceUuid;
    this.browser = browser;
    this.page = page;
  }

  /** Runs `work` after the session's earlier actions. */
  run<T>(work: (page: BrowserPage) => Promise<T>): Promise<T> {
    const next = this.queue.then(() => work(this.page));
    this.queue = next.catch(() => undefined);
    return next;
  }

  get alive(): boolean {
    return !this.browser.cdp.closed;
  }

  onBrowserExit(handler: (reason: string) => void): void {
    this.browser.cdp.onClose(handler);
  }

  close(): Promise<void> {
    return this.browser.close();
  }
}

export class BrowserSessions {
  private readonly config: FarmConfig;
  private readonly db: FarmDatabase;
  private readonly devices: FarmDevices;
  private readonly logger: Logger;
  private readonly sessions = new Map<string, BrowserSession>();
  /** Sandbox uid slots in use, each by a session or a session being opened. */
  private readonly slots = new Map<number, string>();
  private readonly idleTimers = new Map<string, NodeJS.Timeout>();
  private readonly ownerByToken = new Map<string, Owner>();
  private readonly liveness: NodeJS.Timeout;
  private closed = false;

  constructor(config: FarmConfig, db: FarmDatabase, devices: FarmDevices, logger: Logger) {
    this.config = config;
    this.db = db;
    this.devices = devices;
    this.logger = logger;
    this.liveness = setInterval(() => void this.checkOwners(), LIVENESS_MS);
    this.liveness.unref();
  }

  /** A new session for the caller: their farm browser device, a sandboxed Chromium, its tab. */
  async open(call: ActingCaller): Promise<BrowserSession> {
    if (this.closed) throw new FarmError('unavailable', 'The farm is shutting down.');
    const owner = await this.ownerOf(call);
    const jti = String(call.caller.claims.jti ?? '');
    const own = [...this.sessions.values()].filter((s) => s.owner.userId === owner.userId);
    const opening = [...this.slots.values()].filter((user) => user === `opening:${owner.userId}`);
    if (own.length + opening.length >= this.config.browser.maxSessionsPerUser) {
      throw new FarmError(
        'unavailable',
        `You already have ${this.config.browser.maxSessionsPerUser} browser sessions open ` +
          `(${own.map((s) => s.id).join(', ') || 'being opened'}); close one first.`,
      );
    }
    const slot = this.reserveSlot(`opening:${owner.userId}`);
    try {
      const egress = await this.devices.egressFor(call, 'cdp');
      const browser = await startSandboxedBrowser(this.config, slot, egress);
      let page: BrowserPage;
      try {
        page = await BrowserPage.attach(browser.cdp);
      } catch (error) {
        await browser.close();
        throw error;
      }
      const session = new BrowserSession(owner, egress.deviceUuid, browser, page);
      if (owner.grantId === null) session.tokenJtis.add(jti);
      if (this.closed) {
        await session.close();
        throw new FarmError('unavailable', 'The farm is shutting down.');
      }
      this.sessions.set(session.id, session);
      this.slots.set(slot, session.id);
      session.onBrowserExit((reason) => {
        if (this.sessions.has(session.id)) {
          this.logger.warn({ sessionId: session.id, reason }, 'farm browser ended on its own');
          void this.end(session.id, 'browser exited');
        }
      });
      this.touch(session);
      this.logger.info(
        { sessionId: session.id, userId: owner.userId, deviceUuid: session.deviceUuid },
        'farm browser opened',
      );
      return session;
    } catch (error) {
      if (this.slots.get(slot) === `opening:${owner.userId}`) this.slots.delete(slot);
      throw error;
    }
  }

  /**
   * The caller's session `id`, or without an id the one they used last (a new one when they have
   * none). Another owner's session is as unknown as one that never was.
   */
  async reach(call: ActingCaller, id: string | undefined): Promise<BrowserSession> {
    const owner = await this.ownerOf(call);
    const mine = [...this.sessions.values()].filter((s) => s.owner.key === owner.key && s.alive);
    const session = id
      ? mine.find((candidate) => candidate.id === id)
      : mine.sort((a, b) => b.lastUsedAt.getTime() - a.lastUsedAt.getTime())[0];
    if (session) {
      if (owner.grantId === null) session.tokenJtis.add(String(call.caller.claims.jti ?? ''));
      this.touch(session);
      return session;
    }
    if (id) {
      throw new FarmError(
        'not_found',
        `No open browser session ${id} of yours (sessions end after ` +
          `${this.config.browser.idleSeconds} s without a call).`,
      );
    }
    return this.open(call);
  }

  /** Marks the session used now (its idle time starts again after the current action). */
  touch(session: BrowserSession): void {
    session.lastUsedAt = new Date();
    clearTimeout(this.idleTimers.get(session.id));
    const timer = setTimeout(
      () => void this.end(session.id, 'idle'),
      this.config.browser.idleSeconds * 1000,
    );
    timer.unref();
    this.idleTimers.set(session.id, timer);
  }

  /** Closes the caller's session `id`; answers it (closed). */
  async closeFor(call: ActingCaller, id: string): Promise<BrowserSession> {
    const session = await this.reach(call, id);
    await this.end(session.id, 'closed by its owner');
    return session;
  }

  /** Ends every session and refuses new ones (server shutdown). */
  async closeAll(): Promise<void> {
    this.closed = true;
    clearInterval(this.liveness);
    await Promise.all([...this.sessions.keys()].map((id) => this.end(id, 'shutdown')));
  }

  private async end(id: string, reason: string): Promise<void> {
    const session = this.sessions.get(id);
    if (!session) return;
    this.sessions.delete(id);
    clearTimeout(this.idleTimers.get(id));
    this.idleTimers.delete(id);
    for (const [slot, holder] of this.slots) if (holder === id) this.slots.delete(slot);
    await session
      .close()
      .catch((error: unknown) =>
        this.logger.warn({ err: error, sessionId: id }, 'farm browser did not close cleanly'),
      );
    this.logger.info({ sessionId: id, reason }, 'farm browser closed');
  }

  private reserveSlot(holder: string): number {
    for (let slot = 0; slot < this.config.browser.maxSessions; slot++) {
      if (!this.slots.has(slot)) {
        this.slots.set(slot, holder);
        return slot;
      }
    }
    throw new FarmError(
      'unavailable',
      `All ${this.config.browser.maxSessions} farm browsers of this host are in use; retry later.`,
    );
  }

  /** The caller's user and grant, from the access token's record (cached per token). */
  private async ownerOf(call: ActingCaller): Promise<Owner> {
    const userId = call.caller.userId;
    const jti = String(call.caller.claims.jti ?? '');
    const cached = this.ownerByToken.get(jti);
    if (cached) return cached;
    const rows = await this.db.query<{ grant_id: string | null }>(
      'select grant_id from private.oauth_access_tokens where jti = $1',
      [jti],
    );
    const grantId = rows[0]?.grant_id ?? null;
    const owner: Owner = { userId, grantId, key: grantId ? `grant:${grantId}` : `user:${userId}` };
    if (this.ownerByToken.size >= 10_000) this.ownerByToken.clear();
    this.ownerByToken.set(jti, owner);
    return owner;
  }

  /** Ends the sessions whose grant (or first-party token), account or farm capability is gone. */
  private async checkOwners(): Promise<void> {
    await this.endRevokedFirstPartySessions();
    const owners = new Map<string, Owner>();
    for (const session of this.sessions.values()) owners.set(session.owner.key, session.owner);
    for (const owner of owners.values()) {
      const live = await this.isLive(owner).catch((error: unknown) => {
        // A store outage does not end sessions (as for the listen streams).
        this.logger.warn({ err: error }, 'farm browser owner check failed');
        return true;
      });
      if (live) continue;
      for (const session of [...this.sessions.values()]) {
        if (session.owner.key === owner.key) await this.end(session.id, 'owner no longer allowed');
      }
    }
  }

  /**
   * A first-party session is keyed by its user, so the owner check below cannot see its token:
   * one revoked token of the user's must not leave the browser it drove running until its idle
   * end. Ends every first-party session a revoked token acted in.
   */
  private async endRevokedFirstPartySessions(): Promise<void> {
    const firstParty = [...this.sessions.values()].filter((s) => s.owner.grantId === null);
    const jtis = [...new Set(firstParty.flatMap((session) => [...session.tokenJtis]))];
    if (jtis.length === 0) return;
    const revoked = await this.db
      .query<{ jti: string }>(
        'select jti from public.api_tokens where jti = any($1::text[]) and revoked_at is not null',
        [jtis],
      )
      .then((rows) => new Set(rows.map((row) => row.jti)))
      .catch((error: unknown) => {
        // A store outage does not end sessions (as for the listen streams).
        this.logger.warn({ err: error }, 'farm browser token check failed');
        return new Set<string>();
      });
    for (const session of firstParty) {
      if ([...session.tokenJtis].some((jti) => revoked.has(jti))) {
        await this.end(session.id, 'its token was revoked');
      }
    }
  }

  /** As the owner would be seen by RLS: account in good standing, grant live, farm:edit held. */
  private isLive(owner: Owner): Promise<boolean> {
    return this.db.transaction(async (client) => {
      await client.query(`select set_config('request.jwt.claims', $1, true)`, [
        JSON.stringify({ sub: owner.userId, role: 'authenticated' }),
      ]);
      const { rows } = await client.query<{ live: boolean }>(
        `select exists (select 1 from auth.users u
                         where u.id = $1 and u.deleted_at is null
                           and (u.banned_until is null or u.banned_until < now()))
            and ($2::uuid is null or exists (select 1 from private.oauth_grants g
                                              where g.id = $2 and g.revoked_at is null))
            and public.has_capability('farm', 'edit') as live`,
        [owner.userId, owner.grantId],
      );
      return rows[0]?.live === true;
    });
  }
}
