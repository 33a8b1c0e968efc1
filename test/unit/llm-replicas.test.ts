import { describe, expect, it } from 'vitest';
import { Replicas, type Lease, type ReplicaPick } from '../../src/llm/replicas.js';

/** Replicas a, b, c on a clock the test moves. */
function setup(items = ['a', 'b', 'c']) {
  const clock = { t: 1000 };
  const replicas = new Replicas(items, { baseBackoffMs: 100, maxBackoffMs: 1000, now: () => clock.t });
  return { clock, replicas };
}

function lease(pick: ReplicaPick<string>): Lease<string> {
  if (!('lease' in pick)) throw new Error(`expected a replica, got a wait of ${pick.waitMs} ms`);
  return pick.lease;
}

const items = (leases: Lease<string>[]) => leases.map((l) => l.item);

describe('replica picker', () => {
  it('sends each attempt to the replica with the fewest outstanding', () => {
    const { replicas } = setup();
    const first = [lease(replicas.acquire()), lease(replicas.acquire()), lease(replicas.acquire())];
    expect(items(first)).toEqual(['a', 'b', 'c']);
    replicas.succeeded(first[1]!);
    // b has none under way, a and c one each.
    expect(lease(replicas.acquire()).item).toBe('b');
    replicas.succeeded(first[0]!);
    replicas.succeeded(first[2]!);
    // a: 0, b: 1, c: 0 → a or c, never b.
    const next = [lease(replicas.acquire()), lease(replicas.acquire())];
    expect(items(next).sort()).toEqual(['a', 'c']);
    expect(replicas.status(1)).toMatchObject({ up: true, outstanding: 1 });
  });

  it('breaks ties in turn', () => {
    const { replicas } = setup();
    const seen: string[] = [];
    for (let i = 0; i < 7; i++) {
      const l = lease(replicas.acquire());
      seen.push(l.item);
      replicas.succeeded(l);
    }
    expect(seen).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a']);
  });

  it('gives a failed replica no traffic until its retry-after, then traffic again; a success marks it up', () => {
    const { clock, replicas } = setup();
    const a = lease(replicas.acquire());
    replicas.failed(a, 500);
    expect(replicas.status(0)).toEqual({ up: false, outstanding: 0, downForMs: 500 });
    for (let i = 0; i < 6; i++) {
      const l = lease(replicas.acquire());
      expect(l.item).not.toBe('a');
      replicas.succeeded(l);
    }
    clock.t += 499;
    expect(items([1, 2, 3].map(() => lease(replicas.acquire())))).not.toContain('a');
    clock.t += 1;
    // Back: a has nothing under way, so it is the least loaded.
    const probe = lease(replicas.acquire());
    expect(probe.item).toBe('a');
    replicas.succeeded(probe);
    expect(replicas.status(0)).toEqual({ up: true, outstanding: 0, downForMs: 0 });
  });

  it('backs off exponentially, capped, without Retry-After; a success resets the backoff', () => {
    const { clock, replicas } = setup(['a']);
    const downFor: number[] = [];
    for (let i = 0; i < 6; i++) {
      const l = lease(replicas.acquire());
      replicas.failed(l);
      downFor.push(replicas.status(0).downForMs);
      clock.t += downFor.at(-1)!;
    }
    expect(downFor).toEqual([100, 200, 400, 800, 1000, 1000]);
    replicas.succeeded(lease(replicas.acquire()));
    replicas.failed(lease(replicas.acquire()));
    expect(replicas.status(0).downForMs).toBe(100);
  });

  it('counts a failure once: attempts sent before the replica went down do not extend it, nor mark it up', () => {
    const { clock, replicas } = setup(['a', 'b']);
    const inFlight = [
      lease(replicas.acquire()),
      lease(replicas.acquire()),
      lease(replicas.acquire()),
      lease(replicas.acquire()),
    ];
    const onA = inFlight.filter((l) => l.item === 'a');
    expect(onA).toHaveLength(2);
    replicas.failed(onA[0]!);
    replicas.failed(onA[1]!);
    expect(replicas.status(0).downForMs).toBe(100);
    clock.t += 100;
    replicas.failed(lease(replicas.acquire()));
    // The second failure in a row doubles the backoff; the stale one did not count.
    expect(replicas.status(0).downForMs).toBe(200);
  });

  it('a success of an attempt sent before the replica went down does not mark it up', () => {
    const { replicas } = setup(['a']);
    const early = lease(replicas.acquire());
    replicas.failed(lease(replicas.acquire()), 300);
    replicas.succeeded(early);
    expect(replicas.status(0)).toMatchObject({ up: false, downForMs: 300 });
    expect(replicas.acquire()).toEqual({ waitMs: 300 });
  });

  it('when every replica is down, says how long until the first is back', () => {
    const { clock, replicas } = setup(['a', 'b']);
    const [a, b] = [lease(replicas.acquire()), lease(replicas.acquire())];
    replicas.failed(a, 800);
    replicas.failed(b, 300);
    expect(replicas.acquire()).toEqual({ waitMs: 300 });
    clock.t += 120;
    expect(replicas.acquire()).toEqual({ waitMs: 180 });
    clock.t += 180;
    expect(lease(replicas.acquire()).item).toBe('b');
  });

  it('a released attempt (a cancellation) changes nothing but the count', () => {
    const { replicas } = setup(['a', 'b']);
    const a = lease(replicas.acquire());
    replicas.failed(lease(replicas.acquire()), 100);
    replicas.released(a);
    expect(replicas.status(0)).toEqual({ up: true, outstanding: 0, downForMs: 0 });
    expect(replicas.status(1)).toMatchObject({ up: false, outstanding: 0 });
  });
});
