/** The report's stylesheet (inlined). */
export const STYLE = `
:root { --fg: #111827; --muted: #6b7280; --line: #e5e7eb; --bg: #f8fafc; --good: #15803d; --bad: #b91c1c; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header { padding: 20px 32px 12px; background: #fff; border-bottom: 1px solid var(--line); }
h1 { margin: 0; font-size: 22px; } h1 span { font-weight: 400; color: var(--muted); font-size: 16px; margin-left: 8px; }
h2 { font-size: 17px; margin: 0 0 6px; } h3 { font-size: 15px; margin: 18px 0 6px; }
.meta, .caption, .detail, .label { color: var(--muted); }
.meta { margin: 4px 0 0; }
main { max-width: 1320px; margin: 0 auto; padding: 20px 32px 40px; }
section { margin-bottom: 28px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 12px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; overflow-wrap: anywhere; }
.card .label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .value { font-size: 22px; font-weight: 600; margin: 2px 0; }
.card.good .value { color: var(--good); } .card.bad .value { color: var(--bad); }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(560px, 1fr)); gap: 16px; }
.chart { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
.caption { margin: 0 0 10px; font-size: 13px; }
.canvas-box { position: relative; height: 320px; }
.empty { color: var(--muted); font-style: italic; }
.chart .empty { height: 320px; display: flex; align-items: center; justify-content: center; text-align: center; border: 1px dashed #cbd5e1; border-radius: 6px; background: #f1f5f9; padding: 0 24px; }
.table-wrap { overflow-x: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 6px 0; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; overflow-wrap: anywhere; }
th { background: #f1f5f9; font-weight: 600; white-space: nowrap; }
tr:last-child td { border-bottom: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.nowrap { white-space: nowrap; }
.good { color: var(--good); } .bad { color: var(--bad); }
.tag { display: inline-block; white-space: nowrap; padding: 0 6px; border-radius: 4px; background: #e0e7ff; color: #3730a3; font-size: 11px; font-weight: 600; }
.gates { list-style: none; padding: 0; margin: 6px 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
.gates li { padding: 6px 12px; border-bottom: 1px solid var(--line); color: var(--fg); }
.gates li:last-child { border-bottom: 0; }
.gates li .mark { font-weight: 700; } .gates li.good .mark { color: var(--good); } .gates li.bad .mark { color: var(--bad); }
ins { background: #dcfce7; text-decoration: none; } del { background: #fee2e2; }
.prompt-diff { white-space: pre-wrap; font-family: ui-monospace, monospace; font-size: 12px; }
code { background: #eef2f7; padding: 0 4px; border-radius: 3px; }
@media (max-width: 700px) { .charts { grid-template-columns: 1fr; } main, header { padding-left: 12px; padding-right: 12px; } }
`;
