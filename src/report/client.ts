/**
 * The page's own script: draws each `canvas[data-chart]` with Chart.js (inlined before it) from the
 * report data in `#report-data`. Kept as text because it runs in the browser, not in Node; the
 * browser test (test/e2e/report-browser.test.ts) is what checks it.
 */
export const CLIENT_SCRIPT = String.raw`
(() => {
  'use strict';
  const data = JSON.parse(document.getElementById('report-data').textContent);
  const COLORS = { baseline: '#64748b', candidate: '#ea580c', collect: '#0d9488', whisker: '#111827' };
  const PALETTE = ['#2563eb', '#db2777', '#16a34a', '#9333ea', '#ca8a04', '#0891b2', '#dc2626', '#4b5563'];
  const METRIC = data.metric === 'success' ? 'success rate' : 'mean ' + data.metric;
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = '#374151';
  Chart.defaults.plugins.legend.labels.boxWidth = 14;

  const fixed = (x, d) => (x === null || x === undefined ? '—' : Number(x).toFixed(d));
  const axis = (title, extra) => Object.assign({ title: { display: true, text: title }, grid: { color: '#e5e7eb' } }, extra || {});

  // Error bars on bar charts: each dataset may carry whiskers[i] = [low, high] in data units.
  const whiskers = {
    id: 'whiskers',
    afterDatasetsDraw(chart) {
      const { ctx, scales: { y } } = chart;
      chart.data.datasets.forEach((ds, i) => {
        if (!ds.whiskers || !chart.isDatasetVisible(i)) return;
        chart.getDatasetMeta(i).data.forEach((bar, j) => {
          const w = ds.whiskers[j];
          if (!w || w[0] === null || w[1] === null) return;
          // Whole pixels keep the 2-pixel strokes crisp.
          const [x, top, bottom] = [Math.round(bar.x), Math.round(y.getPixelForValue(w[1])), Math.round(y.getPixelForValue(w[0]))];
          const half = Math.round(Math.max(3, Math.min(8, bar.width / 4)));
          ctx.save();
          ctx.strokeStyle = COLORS.whisker;
          ctx.lineWidth = 2;
          ctx.beginPath();
          ctx.moveTo(x, top); ctx.lineTo(x, bottom);
          ctx.moveTo(x - half, top); ctx.lineTo(x + half, top);
          ctx.moveTo(x - half, bottom); ctx.lineTo(x + half, bottom);
          ctx.stroke();
          ctx.restore();
        });
      });
    },
  };

  const line = (label, color, values, extra) => Object.assign({ label, data: values, borderColor: color, backgroundColor: color, pointRadius: 5, spanGaps: true, tension: 0 }, extra || {});

  const charts = {
    cycles(d) {
      const pts = d.cycles.points;
      const sets = [];
      if (pts.some((p) => p.collect !== null)) sets.push(line('collect: mean reward (production)', COLORS.collect, pts.map((p) => p.collect), { borderDash: [4, 3] }));
      sets.push(line('baseline (production): ' + METRIC, COLORS.baseline, pts.map((p) => p.baseline)));
      sets.push(line('candidate: ' + METRIC, COLORS.candidate, pts.map((p) => p.candidate)));
      return {
        type: 'line',
        data: { labels: pts.map((p) => p.label), datasets: sets },
        options: {
          scales: { x: axis(d.cycles.source === 'loop' ? 'loop cycle' : 'run, in time order', { offset: true }), y: axis(METRIC + ' / reward', { suggestedMin: 0 }) },
          plugins: { tooltip: { callbacks: { footer: (items) => { const p = pts[items[0].dataIndex]; return [p.evalRunId ? 'eval ' + p.evalRunId : '', p.note || ''].filter(Boolean); } } } },
        },
      };
    },
    suites(d) {
      const rows = d.cycleHistory;
      const names = [...new Set(rows.flatMap((r) => r.suites.map((x) => x.suite)))].sort();
      const at = (r, name) => r.suites.find((x) => x.suite === name);
      const sets = names.map((name, i) => line(name, PALETTE[i % PALETTE.length], rows.map((r) => { const s = at(r, name); return s ? s.after : null; })));
      return {
        type: 'line',
        data: { labels: rows.map((r) => 'cycle ' + r.cycle), datasets: sets },
        options: {
          scales: { x: axis('loop cycle', { offset: true }), y: axis('success rate at the suite\'s level', { min: 0, max: 1 }) },
          plugins: { tooltip: { callbacks: {
            label: (item) => { const s = at(rows[item.dataIndex], names[item.datasetIndex]); return names[item.datasetIndex] + ' L' + s.level + ': ' + fixed(s.after, 2) + ' (' + s.pairs + ' pairs)'; },
            footer: (items) => [rows[items[0].dataIndex].outcome],
          } } },
        },
      };
    },
    categories(d) {
      const bars = d.selected.categories;
      const label = (b) => b.category.length > 28 ? b.category.slice(0, 27) + '…' : b.category;
      const level = (d.selected.summary.comparison.overall.find((m) => m.diff) || { diff: { level: 0.95 } }).diff.level;
      const values = bars.flatMap((b) => [b.baseline, b.candidate, b.low, b.high]).filter((x) => x !== null);
      return {
        type: 'bar',
        data: {
          labels: bars.map((b) => label(b) + ' (' + b.pairs + ')'),
          datasets: [
            { label: 'baseline', data: bars.map((b) => b.baseline), backgroundColor: COLORS.baseline },
            { label: 'candidate (whiskers: ' + Math.round(100 * level) + ' % CI via the paired difference)', data: bars.map((b) => b.candidate), backgroundColor: COLORS.candidate, whiskers: bars.map((b) => [b.low, b.high]) },
          ],
        },
        options: {
          scales: { x: axis('category (pairs)'), y: axis(METRIC, { suggestedMin: Math.min(0, ...values), suggestedMax: Math.max(...values) }) },
          plugins: { tooltip: { callbacks: { afterBody: (items) => { const b = bars[items[0].dataIndex]; return b.low === null ? [] : ['candidate CI [' + fixed(b.low, 3) + ', ' + fixed(b.high, 3) + ']']; } } } },
        },
        plugins: [whiskers],
      };
    },
    cost(d) {
      const pts = d.cost;
      const hasWall = pts.some((p) => p.wallS.baseline !== null || p.wallS.candidate !== null);
      const sets = [
        { type: 'bar', label: 'baseline: tokens per task', data: pts.map((p) => p.tokens.baseline), backgroundColor: COLORS.baseline, yAxisID: 'y', order: 2 },
        { type: 'bar', label: 'candidate: tokens per task', data: pts.map((p) => p.tokens.candidate), backgroundColor: COLORS.candidate, yAxisID: 'y', order: 2 },
      ];
      if (hasWall) {
        sets.push(line('baseline: wall time (s)', '#1e293b', pts.map((p) => p.wallS.baseline), { type: 'line', yAxisID: 'y1', order: 1, borderDash: [4, 3] }));
        sets.push(line('candidate: wall time (s)', '#9a3412', pts.map((p) => p.wallS.candidate), { type: 'line', yAxisID: 'y1', order: 1, borderDash: [4, 3] }));
      }
      const scales = { x: axis('evaluation, in time order'), y: axis('tokens per task', { beginAtZero: true, grace: '10%' }) };
      if (hasWall) scales.y1 = axis('wall time per task (s)', { position: 'right', beginAtZero: true, grace: '10%', grid: { drawOnChartArea: false } });
      return { type: 'bar', data: { labels: pts.map((p) => p.label), datasets: sets }, options: { scales } };
    },
    training(d) {
      const sets = [];
      let rewards = false;
      d.training.forEach((run, i) => {
        const color = PALETTE[i % PALETTE.length];
        const name = run.runId + ' (' + run.algo + (run.status === 'completed' ? '' : ', ' + run.status) + ')';
        const points = (key) => run.steps.filter((s) => s[key] !== null).map((s) => ({ x: s.step, y: s[key] }));
        const loss = points('loss');
        const reward = points('reward');
        if (loss.length) sets.push({ label: 'loss · ' + name, data: loss, borderColor: color, backgroundColor: color, yAxisID: 'y', pointRadius: loss.length > 60 ? 0 : 2 });
        if (reward.length) {
          rewards = true;
          sets.push({ label: 'reward · ' + name, data: reward, borderColor: color, backgroundColor: color, borderDash: [5, 4], yAxisID: 'y1', pointRadius: reward.length > 60 ? 0 : 2 });
        }
      });
      const scales = { x: axis('step', { type: 'linear' }), y: axis('loss (solid)') };
      if (rewards) scales.y1 = axis('reward (dashed)', { position: 'right', grid: { drawOnChartArea: false } });
      return { type: 'line', data: { datasets: sets }, options: { parsing: false, scales } };
    },
  };

  for (const canvas of document.querySelectorAll('canvas[data-chart]')) {
    new Chart(canvas, charts[canvas.dataset.chart](data));
  }
})();
`;
