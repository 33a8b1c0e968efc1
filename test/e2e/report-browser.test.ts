import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeReport } from '../../src/pipeline/evaluate/report.js';
import { withRuntime } from '../../src/runtime/runtime.js';
import { configIn, ROOT } from '../helpers.js';
import { addSuiteCycles, buildReportStore, type ReportStore } from '../support/report-store.js';

const CHROMIUM = process.env.MASSGEN_RL_CHROMIUM ?? '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
const SCREENSHOT = path.join(ROOT, 'test-output', 'report.png');
const missing = !fs.existsSync(CHROMIUM);
const MISSING = `no Chromium at ${CHROMIUM}: install it with \`apt-get install -y chromium\` (or set MASSGEN_RL_CHROMIUM)`;

/** The page loaded offline: requests other than file:// aborted and counted, console errors and page errors collected. */
async function open(browser: Browser, file: string): Promise<{ page: Page; blocked: string[]; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
  const blocked: string[] = [];
  const errors: string[] = [];
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith('file://')) return route.continue();
    blocked.push(url);
    return route.abort();
  });
  page.on('request', (req) => {
    if (!/^(file|data):/.test(req.url()) && !blocked.includes(req.url())) blocked.push(req.url());
  });
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push(msg.text());
  });
  page.on('pageerror', (err) => errors.push(err.message));
  await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
  return { page, blocked, errors };
}

/** Each chart's Chart.js instance and how many pixels of its canvas are painted, in all and near given colours. */
function inspectCharts(page: Page, colors: Record<string, [number, number, number]>) {
  return page.evaluate((wanted) => {
    const Chart = (
      window as unknown as {
        Chart: {
          getChart(
            c: HTMLCanvasElement,
          ): { data: { datasets: unknown[] }; config: { plugins?: { id: string }[] } } | undefined;
        };
      }
    ).Chart;
    return [...document.querySelectorAll<HTMLCanvasElement>('canvas[data-chart]')].map((canvas) => {
      const chart = Chart.getChart(canvas);
      const { data } = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height);
      const near: Record<string, number> = Object.fromEntries(Object.keys(wanted).map((k) => [k, 0]));
      let painted = 0;
      for (let i = 0; i < data.length; i += 4) {
        if (data[i + 3] === 0) continue;
        painted++;
        for (const [k, [r, g, b]] of Object.entries(wanted)) {
          if (
            Math.abs(data[i]! - r) <= 6
            && Math.abs(data[i + 1]! - g) <= 6
            && Math.abs(data[i + 2]! - b) <= 6
            && data[i + 3]! > 240
          )
            near[k]!++;
        }
      }
      return {
        name: canvas.dataset.chart,
        instance: Boolean(chart),
        datasets: chart?.data.datasets.length ?? 0,
        plugins: (chart?.config.plugins ?? []).map((p) => p.id),
        width: canvas.width,
        height: canvas.height,
        painted,
        near,
      };
    });
  }, colors);
}

const skip = missing && process.env.CI !== 'true';
if (skip) console.warn(`report-browser.test.ts skipped: ${MISSING}`);

describe.skipIf(skip)(`HTML report in headless Chromium${skip ? ` (skipped: ${MISSING})` : ''}`, () => {
  let built: ReportStore | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (missing) return;
    built = await buildReportStore();
    await addSuiteCycles(built);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await built?.close();
  });

  it.runIf(missing)('fails in CI without Chromium', () => {
    throw new Error(`${MISSING}; CI=true requires it`);
  });

  it.skipIf(missing)(
    'loads offline without errors, draws every chart (whiskers included) and leaves a screenshot',
    async () => {
      const evalRunId = built!.evaluation.evalRunId;
      const { file } = await withRuntime(built!.loaded, (rt) => writeReport(rt, { evalRunId }));
      const { page, blocked, errors } = await open(browser!, file);
      expect(blocked).toEqual([]);
      expect(errors).toEqual([]);
      const charts = await inspectCharts(page, {
        candidate: [234, 88, 12],
        baseline: [100, 116, 139],
        run: [37, 99, 235],
        whisker: [17, 24, 39],
      });
      expect(charts.map((c) => c.name)).toEqual(['cycles', 'suites', 'categories', 'cost', 'training']);
      for (const c of charts) {
        expect(c.instance, c.name).toBe(true);
        expect(c.datasets, c.name).toBeGreaterThanOrEqual(c.name === 'suites' ? 1 : 2); // one suite evaluated
        expect(c.width * c.height, c.name).toBeGreaterThan(100_000);
        expect(c.painted / (c.width * c.height), `${c.name}: painted share`).toBeGreaterThan(0.01);
      }
      const by = Object.fromEntries(charts.map((c) => [c.name, c]));
      for (const name of ['cycles', 'categories', 'cost'])
        expect(by[name]!.near.candidate, `${name}: candidate drawn`).toBeGreaterThan(20);
      expect(by.categories!.near.baseline, 'categories: baseline bars').toBeGreaterThan(200);
      expect(by.categories!.plugins).toContain('whiskers');
      expect(by.categories!.near.whisker, 'categories: whiskers drawn').toBeGreaterThan(20);
      expect(by.training!.near.run, 'training: curves drawn').toBeGreaterThan(100);
      expect(by.suites!.near.run, 'suites: the arithmetic line drawn').toBeGreaterThan(20);
      await expect(
        page.locator('table').filter({ hasText: 'headroom (tasks by answers right)' }).count(),
      ).resolves.toBe(1);
      expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.locator('.empty[data-empty]').count()).toBe(0);
      await expect(page.locator('table').filter({ hasText: 'gates passed <b>bold</b>' }).count()).resolves.toBe(1);
      fs.mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      fs.copyFileSync(file, path.join(path.dirname(SCREENSHOT), 'report.html'));
      expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(20_000);
    },
  );

  it.skipIf(missing)(
    'an empty store: the page still loads cleanly and says "no data yet" for every chart',
    async () => {
      const loaded = configIn('project: { name: empty }\n');
      const { file } = await withRuntime(loaded, (rt) => {
        rt.store();
        return writeReport(rt);
      });
      const { page, blocked, errors } = await open(browser!, file);
      expect(blocked).toEqual([]);
      expect(errors).toEqual([]);
      expect(await page.locator('canvas').count()).toBe(0);
      const notes = await page.locator('.empty[data-empty]').allInnerTexts();
      expect(notes).toHaveLength(4);
      for (const n of notes) expect(n).toMatch(/^No data yet: /);
      await page.close();
    },
  );
});
