import fs from 'node:fs';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openStore } from '../../src/runtime/store.js';
import { exportPending } from '../../src/telemetry/otlp-export.js';
import { spanIdOf, traceIdOf } from '../../src/telemetry/span-map.js';
import { ROOT } from '../helpers.js';
import { teamCollect, type TeamCollect } from '../support/team-collect.js';
import { describeWithTelemetry, PHOENIX_START_MS, startPhoenix, type Phoenix } from '../support/telemetry.js';

interface PhoenixSpan {
  name: string;
  context: { trace_id: string; span_id: string };
  parent_id: string | null;
  span_kind: string;
  attributes: Record<string, unknown>;
}

const PROJECT = 'massgen-rl';
const CHROMIUM = process.env.MASSGEN_RL_CHROMIUM ?? '/usr/bin/chromium';
// docs/telemetry.md shows it (copied to docs/images/phoenix-rollout.png)
const SCREENSHOT = path.join(ROOT, 'test-output', 'phoenix-rollout.png');

describeWithTelemetry('rollouts exported into a real Arize Phoenix', () => {
  let phoenix: Phoenix;
  let team: TeamCollect;
  beforeAll(async () => {
    [phoenix, team] = await Promise.all([startPhoenix(), teamCollect()]);
  }, PHOENIX_START_MS + 30_000);
  afterAll(async () => {
    await phoenix?.stop();
    await team?.server.close();
  });

  it('Phoenix holds every span of each rollout with its parent, kind and token counts', async () => {
    const store = openStore(team.loaded);
    try {
      const target = {
        endpoint: `${phoenix.url}/v1/traces`,
        protocol: 'protobuf' as const,
        headers: {},
        project: PROJECT,
        batch_rollouts: 2,
        timeout_ms: 10_000,
      };
      const sent = await exportPending(store, target);
      expect(sent).toMatchObject({ rollouts: 3, failed: null });

      // Phoenix stores what it is sent in the background: read its API until every span is there.
      let spans: PhoenixSpan[] = [];
      for (let i = 0; i < 100 && spans.length < sent.spans; i++) {
        await new Promise((r) => setTimeout(r, 300));
        const page = (await phoenix.get(`/v1/projects/${PROJECT}/spans?limit=1000`).catch(() => ({ data: [] }))) as {
          data: PhoenixSpan[];
        };
        spans = page.data;
      }
      expect(spans).toHaveLength(sent.spans);
      const byId = new Map(spans.map((s) => [s.context.span_id, s]));
      for (const r of store.rollouts.list({})) {
        const root = byId.get(spanIdOf(r.id, null))!;
        expect(root).toMatchObject({ parent_id: null, span_kind: 'CHAIN', context: { trace_id: traceIdOf(r.id) } });
        for (const s of store.spans.list(r.id)) {
          const got = byId.get(spanIdOf(r.id, s.seq))!;
          const parent = s.parentSeq === null ? spanIdOf(r.id, null) : spanIdOf(r.id, s.parentSeq);
          expect(got.parent_id).toBe(parent);
          expect(got.context.trace_id).toBe(traceIdOf(r.id));
          if (s.type !== 'prompt') continue;
          const usage = (s.payload as { usage: { prompt_tokens: number; completion_tokens: number } }).usage;
          expect(got.span_kind).toBe('LLM');
          expect(got.attributes).toMatchObject({
            'llm.token_count.prompt': usage.prompt_tokens,
            'llm.token_count.completion': usage.completion_tokens,
            'gen_ai.usage.input_tokens': usage.prompt_tokens,
          });
        }
      }
      expect(new Set(spans.map((s) => s.span_kind))).toEqual(new Set(['CHAIN', 'LLM', 'EVALUATOR']));

      // Sent again: the same ids, so Phoenix keeps one of each.
      store.otlpExports.forget(`${phoenix.url}/v1/traces`);
      expect(await exportPending(store, target)).toMatchObject({ rollouts: 3, failed: null });
      await new Promise((r) => setTimeout(r, 2000));
      const again = (await phoenix.get(`/v1/projects/${PROJECT}/spans?limit=1000`)) as { data: PhoenixSpan[] };
      expect(again.data).toHaveLength(sent.spans);

      // Phoenix's own page of a rollout's trace in a real browser: the tree of its spans, named as sent.
      const projects = (await phoenix.get('/v1/projects')) as { data: { id: string; name: string }[] };
      const project = projects.data.find((p) => p.name === PROJECT)!;
      const rollout = store.rollouts.list({ taskId: 'mul' })[0]!;
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
      try {
        const page = await browser.newPage({ viewport: { width: 1500, height: 950 }, deviceScaleFactor: 1 });
        await page.goto(`${phoenix.url}/projects/${project.id}/traces/${traceIdOf(rollout.id)}`);
        await page.getByText(`collect ${rollout.taskId}`).first().waitFor({ timeout: 60_000 });
        // the first model call opened: its messages and reply in Phoenix's span pane
        await page.getByText('chat model-a').first().click({ timeout: 60_000 });
        await page.getByText('ANSWER: 42').first().waitFor({ timeout: 60_000 });
        await page.waitForLoadState('networkidle');
        fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
        await page.screenshot({ path: SCREENSHOT });
      } finally {
        await browser.close();
      }
    } finally {
      store.close();
    }
  }, 180_000);
});
