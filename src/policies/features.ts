import { jaccard, wordSet } from '../orchestrator/validate.js';
import { Rng } from '../tasks/prng.js';
import { gaussian } from './sampling.js';

const BUCKETS = 8;
const MAX_NUMBERS = 10;
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** The context of a routing/tool/delegate decision about one task, without an embedding. */
export const TASK_FEATURES: string[] = [
  'bias',
  'log_chars',
  'has_digits',
  'numbers',
  ...names('category', BUCKETS),
  ...names('word', BUCKETS),
];

/** TASK_FEATURES, then emb0..emb{n-1} when an embedding of dimension n is appended. */
export function taskFeatureNames(embeddingDim = 0): string[] {
  return [...TASK_FEATURES, ...names('emb', embeddingDim)];
}

/** FNV-1a over the UTF-8 bytes: the same bucket on every machine and Node version. */
export function stableHash(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h;
}

const l2normalize = (v: number[]) => {
  const norm = Math.hypot(...v);
  return norm > 0 ? v.map((x) => x / norm) : v;
};

export interface TaskContext {
  prompt: string;
  category?: string | null;
}

/** A fixed-size context for a task; an embedding (already projected, see projectEmbedding) is appended as is. */
export function taskFeatures(task: TaskContext, embedding: number[] = []): number[] {
  const numbers = task.prompt.match(/\d+(?:[.,]\d+)*/g)?.length ?? 0;
  const category = new Array<number>(BUCKETS).fill(0);
  const cat = task.category?.trim().toLowerCase();
  if (cat) category[stableHash(cat) % BUCKETS] = 1;
  const words = new Array<number>(BUCKETS).fill(0);
  for (const w of wordSet(task.prompt)) words[stableHash(w) % BUCKETS]! += 1;
  return [
    1,
    Math.log1p(task.prompt.length) / 8,
    /\d/.test(task.prompt) ? 1 : 0,
    Math.min(numbers, MAX_NUMBERS) / MAX_NUMBERS,
    ...category,
    ...l2normalize(words),
    ...embedding,
  ];
}

/** A seeded Gaussian random projection of an embedding to `dim` values, L2-normalized (same seed, same projection). */
export function projectEmbedding(vec: number[], dim = 8, seed = 1): number[] {
  const rng = new Rng(seed);
  const out = Array.from({ length: dim }, () => vec.reduce((s, v) => s + v * gaussian(rng), 0));
  return l2normalize(out);
}

/** The context of a stop decision, in the order of stopFeatures' values. */
export const STOP_FEATURES: string[] = [
  'bias',
  'round_fraction',
  'answer_fraction',
  'vote_agreement',
  'answer_similarity',
  'log_ktokens',
  'log_seconds',
];

export interface StopState {
  round: number;
  maxRounds: number;
  teamSize: number;
  answers: string[];
  /** Votes per answer held now. */
  voteCounts: number[];
  liveAgents: number;
  tokens: number;
  elapsedMs: number;
}

/** Mean pairwise Jaccard similarity of the answers' word sets: 1 with one answer, 0 with none. */
export function answerSimilarity(answers: readonly string[]): number {
  if (answers.length < 2) return answers.length;
  const sets = answers.map(wordSet);
  let total = 0;
  let pairs = 0;
  for (let i = 0; i < sets.length; i++) {
    for (let j = i + 1; j < sets.length; j++, pairs++) total += jaccard(sets[i]!, sets[j]!);
  }
  return total / pairs;
}

export function stopFeatures(s: StopState): number[] {
  const votes = s.voteCounts.reduce((a, b) => a + b, 0);
  const agreement = votes > 0 && s.liveAgents > 0 ? Math.min(1, Math.max(...s.voteCounts) / s.liveAgents) : 0;
  return [
    1,
    s.round / Math.max(1, s.maxRounds),
    s.answers.length / Math.max(1, s.teamSize),
    agreement,
    answerSimilarity(s.answers),
    Math.log1p(Math.max(0, s.tokens) / 1000),
    Math.log1p(Math.max(0, s.elapsedMs) / 1000),
  ];
}
