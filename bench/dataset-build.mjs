// Dataset build throughput: buildDataset (sft, grpo, dpo, ppo) over a synthetic store of MassGen-style
// orchestrations, each build in its own child process (this script with --worker) so peak RSS is per build.
//
// The store holds rollouts shaped like `collect` writes them: three agents sharing a model and system prompt,
// round 1 (one answer lands, the other two calls are cancelled), an optional second answer round, a voting
// round (identical prompts for every agent; some dissent, invalid actions, drops), the final selection, the
// winner's presentation, calculator tool spans, k=2 `sample` spans on some first-round turns, and reward rows
// plus reward spans (exact/numeric per answer, voting per vote, peer_vote per standing answer, rollout
// totals). Prompt payloads carry request messages, the reply, usage, per-token logprobs and token ids
// (about 2-3 KB of JSON). Tasks repeat (about 12 rollouts each) so GRPO and cross-rollout DPO find groups.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { createRng } from './lib/random.mjs';
import { headline, MB, progress, writeResult } from './lib/report.mjs';
import { describe, roundTo } from './lib/stats.mjs';
import { AGENTS, LABEL, promptPayload, rolloutInserter } from './lib/synthetic-rollouts.mjs';
import { makeTempDir, removeTempDir, storeBytes } from './lib/temp-dir.mjs';
import { runInterleaved, timeSeconds } from './lib/timing.mjs';

const SELF = fileURLToPath(import.meta.url);
const ALGOS = ['sft', 'grpo', 'dpo', 'ppo'];
const ROLLOUTS_PER_TASK = 12;
const CATEGORIES = ['arithmetic', 'unit_conversion', 'string_transform', 'multi_step'];
/** Ceilings for a 1M-span store only (quick runs report without targets). */
const TARGET_SECONDS_AT_1M = 60;
const TARGET_RSS_MB_AT_1M = 1024;
const SIZES = {
  full: { spans: 1_000_000, rounds: 2 },
  quick: { spans: 50_000, rounds: 1 },
};
const run = promisify(execFile);

// ------------------------------------------------------------------ synthetic orchestrations

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'tra',
  'ven',
  'so',
  'rix',
  'pel',
  'dun',
  'ga',
  'the',
  'or',
  'an',
  'qui',
  'zel',
  'mor',
];
const SYSTEM =
  'You are a careful problem solver working in a team of agents.\nSolve the task step by step and state the final answer clearly on its own line.';
const RULES = (hasAnswers) =>
  `You are one of 3 agents answering the same message together. Your answers are shown to the others anonymously, as agent1, agent2, and so on.\n\n${hasAnswers ? 'If an existing answer is correct and complete, vote for it. Give a new answer only if you can clearly improve on every existing one.' : 'There are no answers yet: give your answer.'}\n\nEnd your reply with exactly one action line:\nANSWER: <your complete answer>\nVOTE: agentN | <short reason>\nWrite only one of them.`;

function words(rng, n) {
  const out = [];
  for (let i = 0; i < n; i++) out.push(rng.pick(SYLLABLES) + rng.pick(SYLLABLES));
  return out.join(' ');
}

function messages(task, answers) {
  const block = answers.length ? answers.map(([l, c]) => `<${l}>\n${c}\n</${l}>`).join('\n') : '(no answers yet)';
  return [
    { role: 'system', content: `${SYSTEM}\n\n${RULES(answers.length > 0)}` },
    {
      role: 'user',
      content: `<ORIGINAL MESSAGE>\n${task.prompt}\n</ORIGINAL MESSAGE>\n\n<CURRENT ANSWERS>\n${block}\n</CURRENT ANSWERS>`,
    },
  ];
}

function prompt(rng, turnId, round, msgs, reply) {
  return promptPayload(rng, {
    turnId,
    round,
    messages: msgs,
    reply,
    model: 'qwen2.5-7b-instruct',
    vocabulary: SYLLABLES,
  });
}

/** One rollout: spans as [type, name, agent, payload] and reward rows as [channel, family, value, agent, targetSeq]. */
function orchestration(rng, task) {
  const spans = [];
  const rewards = [];
  const add = (type, name, agent, payload) => spans.push([type, name, agent, payload]);
  const answers = [];
  let turn = 0;
  const answerText = (ok) =>
    `${words(rng, rng.int(15, 40))}.\nANSWER: ${ok ? task.reference : String(Number(task.reference) + rng.int(1, 9))}`;
  const answerRound = (round, who, ok) => {
    add('coordination', 'round', null, {
      round,
      answer_labels: answers.map(([l]) => l),
      trigger: round === 1 ? 'start' : 'new_answer',
    });
    const msgs = messages(task, answers);
    const reply = answerText(ok);
    add('prompt', 'chat', who, prompt(rng, `t${++turn}`, round, msgs, reply));
    const promptSeq = spans.length;
    if (round === 1 && rng.chance(0.3)) {
      for (let k = 0; k < 2; k++) {
        const good = rng.chance(0.5);
        add('prompt', 'sample', who, prompt(rng, `t${turn}`, round, msgs, answerText(good)));
        rewards.push(['turn', 'exact', good ? 1 : 0, who, spans.length]);
      }
    }
    if (rng.chance(0.2))
      add('tool', 'calculator', who, {
        turn_id: `t${turn}`,
        name: 'calculator',
        args: { expression: '6*7' },
        result: '42',
        success: true,
      });
    add('coordination', 'new_answer', who, {
      turn_id: `t${turn}`,
      label: LABEL[who],
      content: reply.split('ANSWER: ')[1],
      round,
      answer_labels_seen: answers.map(([l]) => l),
      prompt_seq: promptSeq,
    });
    rewards.push(['turn', 'exact', ok ? 1 : 0, who, spans.length], ['turn', 'numeric', ok ? 1 : 0, who, spans.length]);
    for (const other of AGENTS.filter((x) => x !== who))
      add('coordination', 'cancel', other, { turn_id: `t${turn + 1}`, round, reason: 'superseded' });
    for (const other of AGENTS.filter((x) => x !== who))
      add('prompt', 'chat', other, prompt(rng, `t${++turn}`, round, msgs, null));
    answers.push([LABEL[who], reply.split('ANSWER: ')[1], who, spans.length]);
  };
  const first = rng.pick(AGENTS);
  answerRound(1, first, rng.chance(0.6));
  let round = 1;
  const second = rng.chance(0.6) ? AGENTS.filter((x) => x !== first)[rng.int(0, 1)] : null;
  if (second) answerRound(++round, second, rng.chance(0.4));
  round++;
  add('coordination', 'round', null, { round, answer_labels: answers.map(([l]) => l), trigger: 'new_answer' });
  const msgs = messages(task, answers);
  const votes = {};
  const status = rng.chance(0.02) ? 'failed' : 'completed';
  for (const voter of AGENTS) {
    if (rng.chance(0.03)) {
      add('coordination', 'drop', voter, { kind: 'timeout', reason: 'no action within agent_timeout_s', round });
      continue;
    }
    if (rng.chance(0.08)) {
      add('prompt', 'chat', voter, prompt(rng, `t${++turn}`, round, msgs, words(rng, 12)));
      add('coordination', 'invalid_action', voter, {
        turn_id: `t${turn}`,
        kind: 'no_action',
        detail: 'no action line',
        correction: 'Reply with VOTE: agentN | reason',
        attempt: 1,
      });
    }
    const target = voter === second && rng.chance(0.35) ? second : first;
    add('prompt', 'chat', voter, prompt(rng, `t${++turn}`, round, msgs, `VOTE: ${LABEL[target]} | ${words(rng, 6)}`));
    add('coordination', 'vote', voter, {
      turn_id: `t${turn}`,
      voter_label: LABEL[voter],
      target_label: LABEL[target],
      target_agent: target,
      reason: 'correct',
      round,
      answer_labels_seen: answers.map(([l]) => l),
      prompt_seq: spans.length,
    });
    rewards.push(['turn', 'voting', target === first ? 1 : -0.5, voter, spans.length]);
    votes[LABEL[target]] = (votes[LABEL[target]] ?? 0) + 1;
  }
  add('coordination', 'final_selection', first, {
    winner_agent: first,
    winner_label: LABEL[first],
    votes,
    consensus: true,
    reason: 'votes',
    rounds: round,
  });
  const final = `Final answer: ${answers[0][1]}`;
  if (status === 'completed') {
    add(
      'prompt',
      'presentation',
      first,
      prompt(rng, 'presentation', round, messages(task, answers), `${words(rng, 20)}\n${final}`),
    );
    add('coordination', 'presentation', first, { content: final, prompt_seq: spans.length });
  }
  for (const [label, , who, seq] of answers) rewards.push(['turn', 'peer_vote', (votes[label] ?? 0) / 3, who, seq]);
  const exact = answers[0][1] === task.reference ? 1 : 0;
  rewards.push(['rollout', 'exact', exact, null, null], ['rollout', 'coordination', rng.int(-5, 30) / 10, null, null]);
  for (const [channel, family, value, agent, target] of rewards)
    add('reward', family, agent, { channel, value, reason: null, target_seq: target });
  const total = Math.round((2 * exact + 0.2 * rewards[rewards.length - 1][2] + 0.5 * rng.next()) * 1000) / 1000;
  return {
    spans,
    rewards,
    status,
    final: status === 'completed' ? final : null,
    total: status === 'completed' ? total : null,
    winner: first,
  };
}

async function buildOrchestrationStore(file, targetSpans, seed) {
  const [{ Store }, { storeDb }] = await Promise.all([
    import('../dist/store/index.js'),
    import('../dist/store/store.js'),
  ]);
  const rng = createRng(seed);
  const store = Store.open({ path: file });
  try {
    const solver = store.resources.add({ kind: 'prompt', name: 'solver', content: SYSTEM });
    const tasks = Array.from({ length: Math.max(4, Math.round(targetSpans / 36 / ROLLOUTS_PER_TASK)) }, (_, i) => ({
      id: `task-${i}`,
      prompt: `${words(rng, rng.int(8, 20))}?`,
      reference: String(rng.int(2, 999)),
      category: CATEGORIES[i % CATEGORIES.length],
      metadata: {},
      source: 'bench',
      split: 'train',
    }));
    store.tasks.upsertMany(tasks);
    const db = storeDb(store);
    const insert = rolloutInserter(db, solver.id);
    let spans = 0;
    let rollouts = 0;
    const batch = db.transaction((n) => {
      for (let i = 0; i < n && spans < targetSpans; i++) {
        const task = tasks[rng.int(0, tasks.length - 1)];
        spans += insert(task, orchestration(rng, task));
        rollouts++;
      }
    });
    while (spans < targetSpans) batch.immediate(200);
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { spans, rollouts, tasks: tasks.length };
  } finally {
    store.close();
  }
}

// ------------------------------------------------------------------ one timed build (child process)

async function worker([storeFile, algo, dataDir]) {
  const { Store } = await import('../dist/store/index.js');
  const { buildDataset } = await import('../dist/datasets/index.js');
  const store = Store.open({ path: storeFile, mustExist: true });
  try {
    const baselineRss = process.memoryUsage().rss;
    let result;
    const weights = { exact: 1, numeric: 1, coordination: 0.2, voting: 0.5, peer_vote: 0.2 };
    const seconds = await timeSeconds(async () => {
      result = await buildDataset(store, {
        algo,
        dataDir,
        all: true,
        options: { weights, sft: { reward_threshold: 1 } },
      });
    });
    const bytes = fs.statSync(path.join(result.dir, 'data.jsonl')).size;
    fs.rmSync(result.dir, { recursive: true, force: true });
    const s = result.stats;
    process.stdout.write(
      `${JSON.stringify({ seconds, rows: s.rows, spansRead: s.spans, rollouts: s.rollouts_scanned, dropped: s.dropped, counts: s.counts, bytes, baselineRss, maxRss: process.resourceUsage().maxRSS * 1024 })}\n`,
    );
  } finally {
    store.close();
  }
}

// ------------------------------------------------------------------ main

function summarize(algo, store, samples) {
  const seconds = describe(samples.map((s) => s.seconds));
  const last = samples[samples.length - 1];
  return {
    algo,
    samplesS: samples.map((s) => roundTo(s.seconds, 3)),
    medianS: roundTo(seconds.median, 3),
    minS: roundTo(seconds.min, 3),
    rows: last.rows,
    spansRead: last.spansRead,
    rollouts: last.rollouts,
    counts: last.counts,
    dropped: last.dropped,
    spansPerSec: Math.round(store.spans / seconds.median),
    rowsPerSec: Math.round(last.rows / seconds.median),
    mbWritten: roundTo(last.bytes / MB, 1),
    peakRssMb: roundTo(Math.max(...samples.map((s) => s.maxRss)) / MB, 1),
    baselineRssMb: roundTo(Math.max(...samples.map((s) => s.baselineRss)) / MB, 1),
  };
}

function headlines(store, results) {
  const full = store.spans >= 1_000_000;
  return results.flatMap((r) => [
    headline(`${r.algo}: build ${store.spans} spans`, r.medianS, 's', full ? TARGET_SECONDS_AT_1M : undefined),
    headline(`${r.algo}: spans/s`, r.spansPerSec, 'spans/s'),
    headline(`${r.algo}: rows/s (${r.rows} rows)`, r.rowsPerSec, 'rows/s'),
    headline(`${r.algo}: peak RSS of build process`, r.peakRssMb, 'MB', full ? TARGET_RSS_MB_AT_1M : undefined),
  ]);
}

async function main() {
  const args = parseBenchArgs();
  const size = args.quick ? SIZES.quick : SIZES.full;
  const dir = makeTempDir('dataset-build');
  try {
    const file = path.join(dir, 'store.db');
    progress(`dataset-build: building a store of ${size.spans} spans in orchestration shape`);
    let built;
    const buildSeconds = await timeSeconds(async () => {
      built = await buildOrchestrationStore(file, size.spans, 7);
    });
    const store = { ...built, file, bytes: storeBytes(file), buildSeconds };
    progress(
      `built ${store.spans} spans, ${store.rollouts} rollouts, ${store.tasks} tasks in ${buildSeconds.toFixed(1)} s (${(store.bytes / MB).toFixed(0)} MB)`,
    );
    const variants = ALGOS.map((algo) => ({
      name: algo,
      run: async () =>
        JSON.parse(
          (await run(process.execPath, [SELF, '--worker', file, algo, path.join(dir, 'data')], { maxBuffer: 1 << 20 }))
            .stdout,
        ),
    }));
    const samples = await runInterleaved(variants, size.rounds, (name, round, s) => {
      progress(
        `round ${round + 1}/${size.rounds} ${name.padEnd(5)} ${s.seconds.toFixed(2)} s, ${s.rows} rows, peak RSS ${(s.maxRss / MB).toFixed(0)} MB`,
      );
    });
    const results = ALGOS.map((algo) => summarize(algo, store, samples[algo]));
    writeResult(args.out, {
      name: 'dataset-build',
      quick: args.quick,
      params: {
        ...size,
        rolloutsPerTask: ROLLOUTS_PER_TASK,
        agents: AGENTS.length,
        options:
          'weights exact 1, numeric 1, coordination 0.2, voting 0.5, peer_vote 0.2; sft.reward_threshold 1; all: true',
        cache: 'warm (store just built)',
      },
      store: {
        spans: store.spans,
        rollouts: store.rollouts,
        tasks: store.tasks,
        storeMb: roundTo(store.bytes / MB, 1),
        buildSeconds: roundTo(store.buildSeconds, 1),
      },
      results,
      headline: headlines(store, results),
    });
  } finally {
    removeTempDir(dir);
  }
}

if (process.argv[2] === '--worker') await worker(process.argv.slice(3));
else await main();
