import type { RewardInput } from '../trace/records.js';
import { newId } from '../util/ids.js';

/** One session's rollout while it is open. */
export interface Session {
  key: string;
  rolloutId: string;
  /** Written with the rollout's first span. */
  metadata: Record<string, unknown>;
  /** Epoch ms: when its first call arrived, when its latest call ended. */
  startedAt: number;
  lastAt: number;
  calls: number;
  tokens: number;
  /** Its rollout row is not written yet. */
  fresh: boolean;
  /** Human feedback that arrived while it was open: stored with its rollout's finish. */
  feedback: RewardInput[];
  /** How many of them the latest finish stored (more may arrive before it is marked done). */
  feedbackStored: number;
  /** The agents its calls named (X-Agent-Id). */
  agents: Set<string>;
  /** Its rollout is finished in the store (feedback now goes there directly). */
  done: boolean;
}

export interface SessionSource {
  /** The X-Session-Id header. */
  header?: string;
  /** The request's `user`. */
  user?: unknown;
  /** The request's `metadata` (its `session_id`, a string, names the session). */
  metadata?: unknown;
  /** Who sent it: the client key's name, and its address. */
  client: string;
  remote: string;
}

const MAX_ID_CHARS = 256;
/** Recent call ids remembered with their sessions, for feedback on a call (older ones are looked up in the store). */
const MAX_CALLS = 100_000;

/**
 * Calls grouped into sessions, each one rollout: by the X-Session-Id header, else the request's `user`,
 * else one session per client until it has been idle for idleMs. Any session idle that long is closed
 * (its rollout finished); a later call with the same key opens a new one.
 */
export class Sessions {
  private readonly open = new Map<string, Session>();
  /** Sessions a new one replaced after their idle time, not yet returned by close(). */
  private ended: Session[] = [];
  private readonly calls = new Map<string, Session>();

  constructor(
    private readonly idleMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The session of a call that arrived at `startedAt` and has just ended (opened if none is open). */
  touch(src: SessionSource, startedAt: number, callId?: string, agent?: string | null): Session {
    const { key, metadata } = keyOf(src);
    const now = this.now();
    let s = this.open.get(key);
    if (s && now - s.lastAt > this.idleMs) {
      this.ended.push(s);
      s = undefined;
    }
    if (!s) {
      s = {
        key,
        rolloutId: newId('ro'),
        metadata,
        startedAt,
        lastAt: now,
        calls: 0,
        tokens: 0,
        fresh: true,
        feedback: [],
        feedbackStored: 0,
        agents: new Set(),
        done: false,
      };
      this.open.set(key, s);
    }
    s.lastAt = now;
    s.calls++;
    if (agent) s.agents.add(agent);
    if (callId !== undefined) {
      this.calls.set(callId, s);
      if (this.calls.size > MAX_CALLS) this.calls.delete(this.calls.keys().next().value!);
    }
    return s;
  }

  /** The open session a client named (X-Session-Id, else `user`). */
  named(client: string, id: string): Session | undefined {
    const cut = id.slice(0, MAX_ID_CHARS);
    return this.open.get(`h\0${client}\0${cut}`) ?? this.open.get(`u\0${client}\0${cut}`);
  }

  /** The session of a recent call (open or ended). */
  ofCall(callId: string): Session | undefined {
    return this.calls.get(callId);
  }

  /** Removes and returns the sessions idle for longer than idleMs (all of them with `all`). */
  close(all = false): Session[] {
    const now = this.now();
    const closed = this.ended;
    this.ended = [];
    for (const [key, s] of this.open) {
      if (!all && now - s.lastAt <= this.idleMs) continue;
      this.open.delete(key);
      closed.push(s);
    }
    return closed;
  }

  get size(): number {
    return this.open.size;
  }
}

/** The key a request's session is grouped by (and its arm picked by), and the metadata its rollout starts with. */
export function keyOf(src: SessionSource): { key: string; metadata: Record<string, unknown> } {
  const base = { gateway: true, client: src.client };
  if (src.header) {
    const id = src.header.slice(0, MAX_ID_CHARS);
    return { key: `h\0${src.client}\0${id}`, metadata: { ...base, session: id, session_from: 'header' } };
  }
  const named =
    typeof src.metadata === 'object' && src.metadata !== null
      ? (src.metadata as { session_id?: unknown }).session_id
      : undefined;
  if (typeof named === 'string' && named !== '') {
    const id = named.slice(0, MAX_ID_CHARS);
    return { key: `h\0${src.client}\0${id}`, metadata: { ...base, session: id, session_from: 'metadata' } };
  }
  if (typeof src.user === 'string' && src.user !== '') {
    const id = src.user.slice(0, MAX_ID_CHARS);
    return { key: `u\0${src.client}\0${id}`, metadata: { ...base, session: id, session_from: 'user' } };
  }
  return { key: `c\0${src.client}\0${src.remote}`, metadata: { ...base, session: null, session_from: 'idle' } };
}
