import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SupervisedGateway } from '../support/chaos-gateway.js';
import { chaosTimeoutMs, MIN_FAULTS, runChaos, underFire } from '../support/chaos-run.js';
import { faultyBackend, type BackendFaults } from '../support/chaos.js';
import { loopProject, type LoopProject } from '../support/loop-project.js';
import { pairwiseJudge, prefersRight } from '../support/pairwise-judge.js';
import type { Script } from '../support/scripted-server.js';

// The gateway under the same fire as chaos-loop's loop (its rates, CHAOS_* from the environment), and killed with
// SIGKILL itself (every CHAOS_GATEWAY_EVERY_S, 10 s, on average): clients send sessions through it all the while,
// the loop collects what it captured, evaluates on its held-out calls with the judge and deploys through a canary
// into it. At the end every call a client got a 200 for is in the store. CHAOS_GATEWAY_CYCLES (else CHAOS_CYCLES,
// else 2) cycles ended, CHAOS_SEED (49).
const CYCLES = Number(process.env.CHAOS_GATEWAY_CYCLES ?? process.env.CHAOS_CYCLES ?? 2);
const SEED = Number(process.env.CHAOS_SEED ?? 49);
const GATEWAY_EVERY_S = Number(process.env.CHAOS_GATEWAY_EVERY_S ?? 10);
const BUSY_MS = 1000;

const rightAnswer = (text: string) => (text.includes('50 - 9') ? '41' : '42');

/** The team answers right on a trained adapter (`base-vN`), `7` on the base; the judge prefers the right answer. */
const script: Script = (req) =>
  pairwiseJudge(req, prefersRight(rightAnswer)) ?? {
    content: `ANSWER: ${/^base-v\d+$/.test(req.model) ? rightAnswer(req.messages.at(-1)?.content ?? '') : '7'}`,
    delayMs: 50,
  };

describe('chaos: the gateway and the loop on its traffic under faults', () => {
  let project: LoopProject | undefined;
  let gateway: SupervisedGateway | undefined;
  afterEach(async () => {
    gateway?.kill();
    await project?.server.close();
  });

  it(
    `${CYCLES} cycles on captured traffic; every acknowledged call stored (seed ${SEED})`,
    async () => {
      const backend: BackendFaults = { refuseUntil: 0, hangUntil: 0, downUntil: 0 };
      project = await loopProject(
        faultyBackend(script, backend),
        `store: { busy_timeout_ms: ${BUSY_MS} }
gateway: { holdout: 0.3, session_idle_s: 1 }
loop: { steps: [collect, review, train, eval, deploy] }`,
      );
      const dir = project.dir;
      underFire(dir, 4, [
        ['split: all }', 'split: all, source: gateway }'],
        ['seeds: 2, report: false }', 'seeds: 1, report: false, source: gateway, replay: { judge_model: stub } }'],
        ['weights: { exact: 1, numeric: 1 }', 'weights: { exact: 1, numeric: 1, human: 1 }'],
      ]);
      const gw = (gateway = new SupervisedGateway(dir));
      let clock: Record<string, string> | null = null;
      const r = await runChaos({
        dir,
        cycles: CYCLES,
        seed: SEED,
        backend,
        busyMs: BUSY_MS,
        beforeStart: async (c) => {
          clock = c;
          await gw.ensure(c);
          if (gw.acknowledged.length === 0) gw.startClients();
          // the traffic of the hours between two runs of the loop: sessions for its collect and for the canary
          const until = gw.acknowledged.length + 40;
          while (gw.acknowledged.length < until) await sleep(100);
        },
        // killed every GATEWAY_EVERY_S on average (exponential gaps), whatever the loop is doing at that moment
        background: async ({ random, count, over }) => {
          for (;;) {
            const gap = -Math.log(1 - random()) * GATEWAY_EVERY_S * 1000;
            for (const until = Date.now() + gap; Date.now() < until && !over();) await sleep(100);
            if (over()) return;
            if (gw.kill()) count('gateway_kill');
          }
        },
        atEnd: async () => {
          const missing = await gw.stop(clock);
          return [
            ...missing.map((id) => `acknowledged call ${id} not in the store`),
            ...gw.crashes.map((c) => `the gateway crashed: ${c}`),
          ];
        },
      });
      console.log(
        `chaos: ${gw.acknowledged.length} calls acknowledged, ${gw.kills} gateway kills, ${gw.restarts} restarts`,
      );
      expect(r.violations).toEqual([]);
      expect(r.completed + r.failed).toBeGreaterThanOrEqual(CYCLES);
      expect(r.injected).toBeGreaterThanOrEqual(MIN_FAULTS);
      expect(r.cycles.some((c) => (c.state.stages.collect as { status?: string } | undefined)?.status === 'done')).toBe(
        true,
      );
    },
    chaosTimeoutMs(CYCLES),
  );
});
