// Learned orchestration policies against the fixed protocol, on the built-in suites with the default team shape
// (three agents, the winner presents): a stop policy against coordination that ends only by MassGen's rule
// (max_rounds / consensus), and a routing policy against everyone working on every task.
//
// For each backend (a scripted stub team, then the bundled local model) and each decision: collect the train split
// with uniform exploration of that decision alone (policies.bootstrap), fit the policy (train policy KIND),
// value it off-policy (IPS, SNIPS, DR), then `eval` it against production on the eval split, same tasks and
// seeds: success and tokens per task with paired-bootstrap 95 % CIs, and the on-policy value next to the
// off-policy estimates. The stub team: agent_a is right on arithmetic, agent_b on unit conversion, agent_c
// rarely; every agent adds its own answer before voting, so going on past the first round costs tokens.
// POLICIES_BACKENDS=stub (or local) runs one backend only; POLICIES_COST sets policies.cost_per_1k_tokens (default 0.05).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { loadConfig } from '../dist/config/load.js';
import { collect } from '../dist/pipeline/collect/collect.js';
import { evaluate } from '../dist/pipeline/evaluate/evaluate.js';
import { trainPolicy } from '../dist/pipeline/train/policy.js';
import { withRuntime } from '../dist/runtime/runtime.js';
import { loadTasks } from '../dist/tasks/load.js';
import { parseBenchArgs } from './lib/cli-args.mjs';
import { progress, writeResult } from './lib/report.mjs';
import { roundInterval as ci, roundTo } from './lib/stats.mjs';
import { makeTempDir, removeTempDir } from './lib/temp-dir.mjs';

const args = parseBenchArgs();
const SIZES = {
  full: { stub: { train: 60, eval: 30, collects: 2 }, local: { train: 16, eval: 8, collects: 1 } },
  quick: { stub: { train: 16, eval: 8, collects: 1 }, local: { train: 4, eval: 2, collects: 1 } },
};
const size = SIZES[args.quick ? 'quick' : 'full'];
const SUITES = ['arithmetic', 'unit_conversion'];
const COST = Number(process.env.POLICIES_COST ?? 0.05);

const unit = (text) => createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
const SKILL = {
  a: { arithmetic: 0.9, unit_conversion: 0.2 },
  b: { arithmetic: 0.2, unit_conversion: 0.9 },
  c: { arithmetic: 0.3, unit_conversion: 0.3 },
};

/** The stub team: answers by skill (seeded by task and agent), each agent answers once, then votes for a right answer it recognises. */
async function startStubTeam(tasks) {
  const byPrompt = new Map(tasks.map((t) => [t.prompt, t]));
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      const q = JSON.parse(body);
      const agent = q.model;
      const user = q.messages.find((m) => m.role === 'user')?.content ?? '';
      const task = [...byPrompt.values()].find((t) => user.includes(t.prompt));
      const right = task ? task.reference : '0';
      const knows = task ? unit(`${task.id}:${agent}`) < (SKILL[agent]?.[task.metadata.suite] ?? 0.3) : false;
      const mine = knows ? right : String(Number(right) + 1 + Math.floor(unit(`${task?.id}:${agent}:w`) * 5));
      const shown = [...user.matchAll(/^<(agent\d+)>\n([^\n]*)/gm)].map((m) => ({ label: m[1], text: m[2] }));
      let content;
      let completion = 30;
      if ((q.messages[0]?.content ?? '').includes('was selected'))
        content = `Final answer: ${(shown.find((s) => s.text.includes(`(by ${agent})`))?.text ?? mine).replace(/ \(by \w+\)$/, '')}`;
      else if (shown.length < 3 && !shown.some((s) => s.text.includes(`by ${agent}`))) {
        content = `ANSWER: ${mine} (by ${agent})`;
        completion = 300;
      } else {
        const good = shown.find((s) => knows && s.text.startsWith(right)) ?? shown[0];
        content = `VOTE: ${good?.label ?? 'agent1'} | ${knows ? 'correct' : 'looks fine'}`;
      }
      const reply = {
        id: 'x',
        object: 'chat.completion',
        model: agent,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 200, completion_tokens: completion, total_tokens: 200 + completion },
      };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(reply));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, close: () => new Promise((r) => server.close(r)) };
}

function projectYaml(backend, url, sz) {
  const models =
    backend === 'stub'
      ? `models:\n${['a', 'b', 'c'].map((m) => `  ${m}: { base_url: "${url}", model: ${m} }`).join('\n')}\nagents:\n${['a', 'b', 'c'].map((m) => `  - { id: ${m}, model: ${m}, tool_mode: text }`).join('\n')}\n`
      : '';
  return `${models}tasks:
  sources: [${SUITES.map((s) => `{ suite: ${s}, n: ${Math.ceil((sz.train + sz.eval) / SUITES.length)} }`).join(', ')}]
  split: { eval_fraction: ${roundTo(sz.eval / (sz.train + sz.eval), 4)} }
rewards: { weights: { exact: 1, numeric: 1 } }
collect: { concurrency: 2 }
eval: { seeds: 1, report: false }
policies: { cost_per_1k_tokens: ${COST}, min_decisions: 4 }
`;
}

const est = (e) =>
  e && { ips: ci(e.ips), snips: ci(e.snips), dr: ci(e.dr), effectiveSampleSize: roundTo(e.effectiveSampleSize, 1) };

function summarizeEval(ev) {
  const m = (name) => ev.comparison.overall.find((x) => x.metric === name);
  const [success, tokens] = [m('success'), m('tokens')];
  const value = (side) => (success?.[side] ?? 0) - COST * ((tokens?.[side] ?? 0) / 1000);
  return {
    pairs: ev.comparison.pairs,
    success: {
      baseline: roundTo(success?.baseline ?? NaN, 4),
      candidate: roundTo(success?.candidate ?? NaN, 4),
      diff: ci(success?.diff),
    },
    tokens: {
      baseline: roundTo(tokens?.baseline ?? NaN, 1),
      candidate: roundTo(tokens?.candidate ?? NaN, 1),
      diff: ci(tokens?.diff),
      saved_share: roundTo(1 - tokens.candidate / tokens.baseline, 4),
    },
    onPolicyValue: { baseline: roundTo(value('baseline'), 4), candidate: roundTo(value('candidate'), 4) },
    gatesPassed: ev.passed,
  };
}

async function runBackend(backend) {
  const sz = size[backend];
  const dir = makeTempDir(`policies-${backend}`);
  const probe = loadConfig({ cwd: dir, overrides: [] });
  const stub =
    backend === 'stub'
      ? await startStubTeam(
          loadTasks({ ...probe.config.tasks, sources: SUITES.map((s) => ({ suite: s, n: 200, seed: 1 })) }, dir),
        )
      : null;
  fs.writeFileSync(path.join(dir, 'massgen-rl.yaml'), projectYaml(backend, stub?.url, sz));
  const load = (overrides = []) => loadConfig({ cwd: dir, overrides });
  const started = Date.now();
  try {
    const out = {
      backend,
      tasks: { train: sz.train, eval: sz.eval, collects: sz.collects, suites: SUITES },
      costPer1kTokens: COST,
    };
    for (const kind of ['stop', 'routing']) {
      // One decision explored at a time, so the logged rollouts are the team the evaluation runs, but for that decision.
      for (let i = 0; i < sz.collects; i++) {
        progress(`${backend}: collect ${i + 1}/${sz.collects} (${sz.train} train tasks, ${kind} explored)`);
        // Every train-split task (both suites), not the first n: collect takes tasks in suite order.
        await withRuntime(load([`policies.bootstrap=[${kind}]`]), (rt) => collect(rt, { split: 'train' }));
      }
      progress(`${backend}: train policy ${kind}`);
      const t = await withRuntime(load(), (rt) => trainPolicy(rt, { policy: kind }));
      progress(`${backend}: eval policy:${kind}@${t.policy.version} against production (${sz.eval} eval tasks)`);
      const ev = await withRuntime(load(), (rt) =>
        evaluate(rt, { candidate: `policy:${kind}@${t.policy.version}`, split: 'eval', seeds: 1 }),
      );
      const evalSummary = summarizeEval(ev);
      // The off-policy estimates value the train split's logged tasks, the evaluation the eval split's: their gains over no policy compare.
      const gain = (m) =>
        t.noPolicy && Number.isFinite(t.ope[m].mean) && Number.isFinite(t.noPolicy[m].mean)
          ? roundTo(t.ope[m].mean - t.noPolicy[m].mean, 4)
          : null;
      out[kind] = {
        decisions: t.decisions,
        rollouts: t.rollouts,
        armCounts: t.armCounts,
        offPolicy: {
          learned: est(t.ope),
          noPolicy: est(t.noPolicy),
          logged: ci(t.ope.logged),
          gainOverNoPolicy: { ips: gain('ips'), snips: gain('snips'), dr: gain('dr') },
        },
        eval: evalSummary,
        onPolicyGain: roundTo(evalSummary.onPolicyValue.candidate - evalSummary.onPolicyValue.baseline, 4),
      };
    }
    out.wallSeconds = roundTo((Date.now() - started) / 1000, 1);
    return out;
  } finally {
    await stub?.close();
    removeTempDir(dir);
  }
}

const results = { benchmark: 'policies', quick: args.quick, backends: [] };
for (const backend of (process.env.POLICIES_BACKENDS ?? 'stub,local').split(',')) {
  try {
    results.backends.push(await runBackend(backend));
  } catch (err) {
    progress(`${backend}: ${err.message}`);
    results.backends.push({ backend, error: err.message });
  }
}
writeResult(args.out, results);
