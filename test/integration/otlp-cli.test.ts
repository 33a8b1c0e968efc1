import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { hasStack, runCli, sha, tempDir } from '../helpers.js';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver.js';
import { teamCollect, type TeamCollect } from '../support/team-collect.js';

const hex = (n: number, chars: number) => n.toString(16).padStart(chars, '0');
const request = (spanId: string) => ({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'bot' } }] },
      scopeSpans: [
        {
          spans: [
            {
              traceId: hex(7, 32),
              spanId,
              name: 'ChatCompletion',
              startTimeUnixNano: '1700000000000000000',
              endTimeUnixNano: '1700000000050000000',
              attributes: [
                { key: 'openinference.span.kind', value: { stringValue: 'LLM' } },
                { key: 'llm.input_messages.0.message.role', value: { stringValue: 'user' } },
                { key: 'llm.input_messages.0.message.content', value: { stringValue: 'Hi' } },
                { key: 'llm.output_messages.0.message.role', value: { stringValue: 'assistant' } },
                { key: 'llm.output_messages.0.message.content', value: { stringValue: 'Hello' } },
              ],
            },
          ],
        },
      ],
    },
  ],
});

describe('the OTLP commands as a user runs them', () => {
  let team: TeamCollect | undefined;
  let receiver: OtlpReceiver | undefined;
  afterEach(async () => {
    await team?.server.close();
    await receiver?.close();
    team = receiver = undefined;
  });

  it('collect with telemetry.otlp.endpoint sends every rollout from its export thread before the CLI exits', async () => {
    team = await teamCollect();
    receiver = await startOtlpReceiver();
    const cwd = team.dir;
    // no pass during this short run: only the last one, when the command closes, sends (the earlier collect's too)
    const telemetry = `telemetry: { otlp: { endpoint: "${receiver.url}", interval_ms: 600000 } }\n`;
    fs.appendFileSync(path.join(cwd, 'massgen-rl.yaml'), telemetry);
    const r = await runCli(['collect'], { cwd });
    expect(r.exitCode, r.stderr).toBe(0);
    const roots = [...receiver.spans.values()].filter((s) => !s.parentSpanId);
    expect(roots).toHaveLength(6);
    const again = await runCli(['--json', 'traces', 'export', '--otlp', receiver.url], { cwd });
    expect(JSON.parse(again.stdout)).toMatchObject({ rollouts: 0 });
  });

  it('traces export --otlp sends, resumes, and refuses clearly', async () => {
    team = await teamCollect();
    receiver = await startOtlpReceiver();
    const cwd = team.dir;
    const sent = await runCli(['traces', 'export', '--otlp', receiver.url, '--json'], { cwd });
    expect(sent.exitCode).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ rollouts: 3, already: 0, failed: null });
    const again = await runCli(['traces', 'export', '--otlp', receiver.url], { cwd });
    expect(again.stdout).toMatch(/sent 0 rollout\(s\), 0 span\(s\) .* \(3 sent before\)/);

    receiver.failNext(500);
    const refused = await runCli(['traces', 'export', '--otlp', receiver.url, '--again'], { cwd });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/refused the export after 0 rollout\(s\): 500/);
    expect(refused.stderr).toMatch(/run the same command again/);
    expect(hasStack(refused.stderr)).toBe(false);

    for (const [args, message] of [
      [['--otlp', 'ftp://x/v1/traces'], /expected an http:\/\/ or https:\/\/ URL/],
      [['--otlp', receiver.url, '--out', 'x.jsonl'], /takes no --out or --format/],
      [['--again'], /go with --otlp/],
    ] as const) {
      const r = await runCli(['traces', 'export', ...args], { cwd });
      expect(r.exitCode, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(message);
      expect(hasStack(r.stderr)).toBe(false);
    }
  }, 120_000);

  it('traces import --otlp stores a good export once and refuses a bad one, naming the file and field, storing nothing', async () => {
    const cwd = tempDir({ 'massgen-rl.yaml': '# the embedded defaults\n' });
    const good = path.join(cwd, 'good.json');
    fs.writeFileSync(good, JSON.stringify(request(hex(1, 16))));
    const first = await runCli(['traces', 'import', '--otlp', good, '--json'], { cwd });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ created: 1, spans: { llm: 1 } });

    const store = path.join(cwd, '.massgen-rl', 'store.sqlite');
    const before = sha(store);
    const bad = path.join(cwd, 'bad.jsonl');
    fs.writeFileSync(bad, `${JSON.stringify(request(hex(2, 16)))}\n${JSON.stringify(request('nothex'))}\n`);
    const r = await runCli(['traces', 'import', '--otlp', bad], { cwd });
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(
      /bad\.jsonl:2: resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]\.spanId: expected 16 hex digits/,
    );
    expect(hasStack(r.stderr)).toBe(false);
    expect(sha(store)).toBe(before);

    const both = await runCli(['traces', 'import', '--otlp', good, '--massgen-logs', cwd], { cwd });
    expect(both.exitCode).toBe(2);
    expect(both.stderr).toMatch(/give one of --massgen-logs DIR and --otlp PATH/);
    const missing = await runCli(['traces', 'import', '--otlp', path.join(cwd, 'nope')], { cwd });
    expect(missing.stderr).toMatch(/no such file or directory/);
  }, 120_000);
});
