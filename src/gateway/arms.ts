import { canary } from '../resources/production.js';
import type { ResourceSet, Store } from '../store/index.js';
import { unitHash } from '../util/hash.js';

export type ArmName = 'production' | 'canary';

/** The arm a request was given: which resource set answers it (what a per-set prompt would be taken from). */
export interface Arm {
  name: ArmName;
  /** The set answering (null only before production has a set). */
  set: ResourceSet | null;
}

/** The pointers as last read. */
export interface ArmView {
  production: ResourceSet | null;
  canary: { set: ResourceSet; fraction: number } | null;
}

export interface ArmsOptions {
  /** A session idle this long picks its arm again (gateway.session_idle_s). */
  idleMs: number;
  /** How stale the pointers may be (a deploy, an advance, a rollback reach traffic within this). */
  refreshMs?: number;
  now?: () => number;
  /** Called when the canary set changes (started, ended, replaced), with the views before and after. */
  onChange?: (before: ArmView, after: ArmView) => void;
}

/** How stale the gateway's pointers may be by default (ArmsOptions.refreshMs). */
export const POINTER_REFRESH_MS = 1000;

/** Pins are swept when this many were added since the last sweep. */
const SWEEP_EVERY = 1024;

/**
 * Which arm each session's requests go to: a session whose key hashes below the canary's fraction gets
 * the canary (monotone: a session in at 0.1 stays in at 0.5), the rest production. A session keeps the
 * arm of its first request for its life, whatever the fraction does meanwhile; only the canary ending
 * (rolled back, stopped, promoted) sends its sessions to production. The pointers are read from the
 * store at most once per refreshMs, never per request.
 */
export class Arms {
  private view: ArmView = { production: null, canary: null };
  private readAt = Number.NEGATIVE_INFINITY;
  private readonly pins = new Map<string, { arm: ArmName; setId: string | null; lastAt: number }>();
  private added = 0;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly opts: ArmsOptions,
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** The pointers, read again when older than refreshMs. */
  current(): ArmView {
    const now = this.now();
    if (now - this.readAt < (this.opts.refreshMs ?? POINTER_REFRESH_MS)) return this.view;
    this.readAt = now;
    const before = this.view;
    const p = this.store.sets.pointer('production');
    const trial = canary(this.store);
    this.view = {
      production: p
        ? before.production?.id === p.setId
          ? before.production
          : (this.store.sets.get(p.setId) ?? null)
        : null,
      canary: trial ?? null,
    };
    if (before.canary?.set.id !== this.view.canary?.set.id) this.opts.onChange?.(before, this.view);
    return this.view;
  }

  /** The arm of a request of the session `sessionKey` (Sessions' key). */
  pick(sessionKey: string): Arm {
    const view = this.current();
    const now = this.now();
    const pin = this.pins.get(sessionKey);
    const fresh = pin && now - pin.lastAt <= this.opts.idleMs;
    let name: ArmName;
    if (fresh && (pin.arm === 'production' || pin.setId === view.canary?.set.id)) name = pin.arm;
    else if (fresh) name = 'production';
    else name = view.canary && unitHash(sessionKey, 'canary') < view.canary.fraction ? 'canary' : 'production';
    const setId = name === 'canary' ? view.canary!.set.id : null;
    if (pin) Object.assign(pin, { arm: name, setId, lastAt: now });
    else {
      this.pins.set(sessionKey, { arm: name, setId, lastAt: now });
      if (++this.added >= SWEEP_EVERY) this.sweep();
    }
    return { name, set: name === 'canary' ? view.canary!.set : view.production };
  }

  /** Forgets the sessions idle past idleMs. */
  sweep(): void {
    this.added = 0;
    const now = this.now();
    for (const [key, pin] of this.pins) if (now - pin.lastAt > this.opts.idleMs) this.pins.delete(key);
  }

  get sessions(): number {
    return this.pins.size;
  }
}
