// The trace store behind bench/train-overhead.mjs: MassGen-style team rollouts written in the shape `collect`
// records them (the span and reward layout of bench/dataset-build.mjs), with short arithmetic word problems and
// worked answers instead of random syllables. Texts are deliberately compact (SFT rows of ~70-120 tokens with the
// default model's chat template, GRPO prompts of ~60-80 and completions of ~10-45): on a 2-core CPU a training
// step then takes seconds rather than minutes, and short steps make a per-step wrapper cost show up the most.
// Prompt payloads carry no token ids or logprobs (as from an endpoint that does not return them): the GRPO
// trainer then tokenizes the recorded content.
//
// Per rollout: round 1 (one agent answers, the other two calls are cancelled; some turns carry k=2 `sample`
// spans), an optional second answer round, a voting round, the final selection and the winner's presentation;
// turn rewards exact/numeric per answer and sample, voting per vote; rollout totals. Each task gets several
// rollouts so the round-1 prompts (identical across agents and rollouts of a task) form GRPO groups with
// mixed rewards.
import { Store } from '../../dist/store/index.js';
import { storeDb } from '../../dist/store/store.js';
import { createRng } from './random.mjs';
import { AGENTS, LABEL, promptPayload, rolloutInserter } from './synthetic-rollouts.mjs';

const SYSTEM = 'Solve the task.';
const RULES = (hasAnswers) =>
  hasAnswers ? 'Vote (VOTE: agentN | reason) or answer (ANSWER: x).' : 'End with ANSWER: x.';

const ITEMS = ['pencils', 'notebooks', 'apples', 'tickets', 'bolts', 'candles', 'mugs', 'batteries'];
const KINDS = [
  {
    category: 'arithmetic',
    make: (rng) => {
      const [a, b] = [rng.int(12, 89), rng.int(3, 19)];
      const item = rng.pick(ITEMS);
      return {
        prompt: `${item} cost ${a} cents each. What do ${b} cost, in cents?`,
        reference: a * b,
        steps: [`${b} × ${a} cents = ${a * b} cents.`, `Check: ${a * b} / ${b} = ${a}.`],
      };
    },
  },
  {
    category: 'unit_conversion',
    make: (rng) => {
      const [km, m] = [rng.int(2, 40), rng.int(1, 9) * 100];
      return {
        prompt: `How many metres are ${km} km plus ${m} m?`,
        reference: km * 1000 + m,
        steps: [`${km} km = ${km * 1000} m.`, `${km * 1000} + ${m} = ${km * 1000 + m} m.`],
      };
    },
  },
  {
    category: 'multi_step',
    make: (rng) => {
      const [boxes, per, broken] = [rng.int(3, 12), rng.int(6, 24), rng.int(1, 9)];
      const item = rng.pick(ITEMS);
      return {
        prompt: `${boxes} boxes hold ${per} ${item} each; ${broken} break. How many are left?`,
        reference: boxes * per - broken,
        steps: [`${boxes} × ${per} = ${boxes * per} ${item}.`, `${boxes * per} - ${broken} = ${boxes * per - broken}.`],
      };
    },
  },
];

function messages(task, answers) {
  const block = answers.length ? answers.map(([l, , , , v]) => `${l}: ${v}`).join('\n') : '(none)';
  return [
    { role: 'system', content: `${SYSTEM} ${RULES(answers.length > 0)}` },
    { role: 'user', content: `${task.prompt}\nAnswers: ${block}` },
  ];
}

function prompt(rng, turnId, round, msgs, reply) {
  return promptPayload(rng, { turnId, round, messages: msgs, reply, model: 'smollm2-135m-instruct' });
}

/** A step-by-step answer: some of the task's reasoning steps, then the action line (right or off by a little). */
function answerText(rng, task, ok) {
  const value = ok ? task.reference : task.reference + rng.pick([-10, -2, -1, 1, 2, 10, 100]);
  const steps = task.steps.slice(0, rng.int(1, task.steps.length)).join('\n');
  return { text: `${steps}\nANSWER: ${value}`, value: String(value) };
}

/** One rollout: spans as [type, name, agent, payload] and reward rows as [channel, family, value, agent, targetSeq]. */
function orchestration(rng, task) {
  const spans = [];
  const rewards = [];
  const add = (type, name, agent, payload) => spans.push([type, name, agent, payload]);
  const answers = [];
  let turn = 0;
  const answerRound = (round, who, ok) => {
    add('coordination', 'round', null, {
      round,
      answer_labels: answers.map(([l]) => l),
      trigger: round === 1 ? 'start' : 'new_answer',
    });
    const msgs = messages(task, answers);
    const reply = answerText(rng, task, ok);
    add('prompt', 'chat', who, prompt(rng, `t${++turn}`, round, msgs, reply.text));
    const promptSeq = spans.length;
    if (round === 1 && rng.chance(0.5)) {
      for (let k = 0; k < 2; k++) {
        const good = rng.chance(0.5);
        add('prompt', 'sample', who, prompt(rng, `t${turn}`, round, msgs, answerText(rng, task, good).text));
        rewards.push(['turn', 'exact', good ? 1 : 0, who, spans.length]);
      }
    }
    add('coordination', 'new_answer', who, {
      turn_id: `t${turn}`,
      label: LABEL[who],
      content: reply.value,
      round,
      answer_labels_seen: answers.map(([l]) => l),
      prompt_seq: promptSeq,
    });
    rewards.push(['turn', 'exact', ok ? 1 : 0, who, spans.length], ['turn', 'numeric', ok ? 1 : 0, who, spans.length]);
    for (const other of AGENTS.filter((x) => x !== who))
      add('coordination', 'cancel', other, { turn_id: `t${turn + 1}`, round, reason: 'superseded' });
    for (const other of AGENTS.filter((x) => x !== who))
      add('prompt', 'chat', other, prompt(rng, `t${++turn}`, round, msgs, null));
    answers.push([LABEL[who], reply.text, who, spans.length, reply.value]);
  };
  const first = rng.pick(AGENTS);
  const firstOk = rng.chance(0.6);
  answerRound(1, first, firstOk);
  let round = 1;
  const second = rng.chance(0.5) ? AGENTS.filter((x) => x !== first)[rng.int(0, 1)] : null;
  if (second) answerRound(++round, second, !firstOk || rng.chance(0.5));
  round++;
  add('coordination', 'round', null, { round, answer_labels: answers.map(([l]) => l), trigger: 'new_answer' });
  const msgs = messages(task, answers);
  const correct = answers.find(([, , , , v]) => v === String(task.reference));
  const winnerEntry = correct ?? answers[0];
  const votes = {};
  for (const voter of AGENTS) {
    const target = rng.chance(0.8) ? winnerEntry : rng.pick(answers);
    add(
      'prompt',
      'chat',
      voter,
      prompt(
        rng,
        `t${++turn}`,
        round,
        msgs,
        `VOTE: ${target[0]} | ${target === correct ? 'the arithmetic checks out' : 'looks complete'}`,
      ),
    );
    add('coordination', 'vote', voter, {
      turn_id: `t${turn}`,
      voter_label: LABEL[voter],
      target_label: target[0],
      target_agent: target[2],
      reason: 'correct',
      round,
      answer_labels_seen: answers.map(([l]) => l),
      prompt_seq: spans.length,
    });
    rewards.push(['turn', 'voting', target === correct ? 1 : -0.5, voter, spans.length]);
    votes[target[0]] = (votes[target[0]] ?? 0) + 1;
  }
  const winner = winnerEntry[2];
  add('coordination', 'final_selection', winner, {
    winner_agent: winner,
    winner_label: winnerEntry[0],
    votes,
    consensus: true,
    reason: 'votes',
    rounds: round,
  });
  const final = `Final answer: ${winnerEntry[4]}`;
  add(
    'prompt',
    'presentation',
    winner,
    prompt(rng, 'presentation', round, messages(task, answers), `${winnerEntry[1].split('\nANSWER:')[0]}\n${final}`),
  );
  add('coordination', 'presentation', winner, { content: final, prompt_seq: spans.length });
  const exact = winnerEntry[4] === String(task.reference) ? 1 : 0;
  rewards.push(['rollout', 'exact', exact, null, null], ['rollout', 'coordination', rng.int(-5, 30) / 10, null, null]);
  for (const [channel, family, value, agent, target] of rewards)
    add('reward', family, agent, { channel, value, reason: null, target_seq: target });
  const total = Math.round((2 * exact + 0.2 * rewards[rewards.length - 1][2]) * 1000) / 1000;
  return { status: 'completed', spans, rewards, final, total, winner };
}

/** Writes `tasks` tasks × `rolloutsPerTask` completed rollouts into a new store at `file`. */
export function buildTrainStore(file, { tasks: taskCount, rolloutsPerTask, seed = 11 }) {
  const rng = createRng(seed);
  const store = Store.open({ path: file });
  try {
    const solver = store.resources.add({ kind: 'prompt', name: 'solver', content: SYSTEM });
    const tasks = Array.from({ length: taskCount }, (_, i) => {
      const kind = KINDS[i % KINDS.length];
      return { id: `task-${i}`, category: kind.category, ...kind.make(rng) };
    });
    store.tasks.upsertMany(
      tasks.map((t) => ({
        id: t.id,
        prompt: t.prompt,
        reference: String(t.reference),
        category: t.category,
        metadata: {},
        source: 'bench',
        split: 'train',
      })),
    );
    const db = storeDb(store);
    const insert = rolloutInserter(db, solver.id);
    let spans = 0;
    let rollouts = 0;
    db.transaction(() => {
      for (let r = 0; r < rolloutsPerTask; r++) {
        for (const task of tasks) {
          spans += insert(task, orchestration(rng, task));
          rollouts++;
        }
      }
    }).immediate();
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    return { spans, rollouts, tasks: tasks.length };
  } finally {
    store.close();
  }
}
