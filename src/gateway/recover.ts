import fs from 'node:fs';
import type { Store } from '../store/index.js';
import { GATEWAY_SOURCE } from '../store/rollouts.js';
import { callSpan, type CapturedCall } from './call-span.js';
import { embeddingSpan } from './embedding-span.js';
import { orphanedJournals, readJournal, type JournalEntry } from './journal.js';
import type { Session } from './sessions.js';

export interface Recovered {
  files: number;
  /** Calls written now (the ones already in the store are not written twice). */
  calls: number;
  rollouts: number;
  /** Lines cut short by the kill. */
  skipped: number;
}

function sessionOf(e: JournalEntry): Session {
  return {
    ...e.session,
    startedAt: e.startedAt,
    lastAt: e.startedAt,
    calls: 0,
    tokens: 0,
    fresh: false,
    feedback: [],
    feedbackStored: 0,
    agents: new Set(),
    done: false,
  };
}

/**
 * Writes what gateways of this host that died (kill -9, a crash) journaled but had not stored: each
 * call not in the store yet becomes its span, and each of their sessions' rollouts is finished, as the
 * session ended with its gateway. Then the journal files go.
 */
export async function recoverJournals(store: Store, dir: string): Promise<Recovered> {
  const files = orphanedJournals(dir);
  const out: Recovered = { files: files.length, calls: 0, rollouts: 0, skipped: 0 };
  if (!files.length) return out;
  const byRollout = new Map<string, JournalEntry[]>();
  for (const file of files) {
    const { entries, skipped } = readJournal(file);
    out.skipped += skipped;
    for (const e of entries) {
      const list = byRollout.get(e.session.rolloutId) ?? [];
      list.push(e);
      byRollout.set(e.session.rolloutId, list);
    }
  }
  await store.write(() => {
    for (const [rolloutId, entries] of byRollout) {
      const existing = store.rollouts.get(rolloutId);
      const stored = existing ? new Set(store.spans.list(rolloutId).map((s) => turnId(s.payload))) : new Set<unknown>();
      const open = existing
        ? undefined
        : store.rollouts.prepare({
            id: rolloutId,
            source: GATEWAY_SOURCE,
            metadata: entries[0]!.session.metadata,
            resourceSetId: entries[0]!.resourceSetId ?? undefined,
          }).insert;
      const writer = store.spans.writer(rolloutId, Number.POSITIVE_INFINITY, undefined, open);
      let tokens = 0;
      for (const e of entries) {
        if (stored.has(e.callId)) continue;
        const call: CapturedCall = { ...e, session: sessionOf(e) };
        const { span, usage } = call.kind === 'embeddings' ? embeddingSpan(call) : callSpan(call);
        writer.add(span);
        tokens += usage.prompt + usage.completion;
        out.calls++;
      }
      writer.flush();
      const spans = store.spans.list(rolloutId);
      const first = Math.min(...spans.map((s) => s.startedAt));
      const last = Math.max(...spans.map((s) => s.startedAt + s.durationMs));
      store.rollouts.finish(rolloutId, {
        status: 'completed',
        tokens: (existing?.tokens ?? 0) + tokens,
        messages: spans.length,
        wallMs: last - first,
      });
      out.rollouts++;
    }
  });
  for (const file of files) fs.rmSync(file, { force: true });
  return out;
}

function turnId(payload: unknown): unknown {
  return typeof payload === 'object' && payload !== null ? (payload as { turn_id?: unknown }).turn_id : undefined;
}
