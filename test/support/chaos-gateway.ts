import type { ResultPromise } from 'execa';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig } from '../../src/config/load.js';
import { openStore } from '../../src/runtime/store.js';
import { GATEWAY_SOURCE } from '../../src/store/rollouts.js';
import { startGatewayCli } from './gateway-cli.js';

const QUESTIONS = ['What is 6 x 7?', 'What is 40 + 2?', 'What is 50 - 9?', 'What is the answer to everything?'];

/**
 * `massgen-rl gateway` kept running as systemd keeps a service: started again (on its port, after a moment) whenever
 * it exits, killed or not; and clients sending sessions through it all the while (a question, a follow-up, then
 * their feedback), each call the gateway answered 200 remembered by its request id: what it acknowledged.
 */
export class SupervisedGateway {
  /** Request ids of the calls clients got a 200 for. */
  readonly acknowledged: string[] = [];
  /** Exits that were neither our kill nor our stop: a crash's stderr (printed with "please report") or the code. */
  readonly crashes: string[] = [];
  kills = 0;
  restarts = 0;
  private child: ResultPromise | undefined;
  private port = 0;
  private stopping = false;
  private clientsStop = false;
  private clientsDone: Promise<unknown> = Promise.resolve();
  private up: Promise<void> = Promise.resolve();

  /** Every gateway's stderr (its warnings: a write the store refused, a journal it could not append to). */
  readonly log: string;

  constructor(private readonly dir: string) {
    this.log = path.join(path.dirname(dir), `${path.basename(dir)}-gateway.log`);
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/v1`;
  }

  /** Starts the gateway (in this clock's environment from now on) unless one is running; resolves once it listens. */
  async ensure(clock: Record<string, string> | null): Promise<void> {
    await this.up.catch(() => undefined);
    if (!this.child) this.up = this.start(clock);
    await this.up;
  }

  private async start(clock: Record<string, string> | null): Promise<void> {
    for (let tries = 0; ; tries++) {
      const { child, ready } = startGatewayCli(this.dir, { port: this.port, ...(clock ? { env: clock } : {}) });
      this.child = child;
      child.stderr!.on('data', (c: Buffer) => fs.appendFileSync(this.log, c));
      const started = await ready.catch(() => null);
      if (started) {
        this.port = Number(new URL(started.baseUrl).port);
        void child.then((r) => this.exited(child, r, clock));
        return;
      }
      const r = await child;
      this.child = undefined;
      if (/please report/i.test(String(r.stderr))) this.crashes.push(`start: ${String(r.stderr).slice(-600)}`);
      // refused to start (the disk full, the store locked past its timeout): systemd tries again
      if (tries > 40) throw new Error(`the gateway does not start: ${String(r.stderr).slice(-400)}`);
      await sleep(250);
    }
  }

  private exited(child: ResultPromise, r: { signal?: string; exitCode?: number; stderr: unknown }, clock: unknown) {
    if (this.child !== child) return;
    this.child = undefined;
    if (r.signal !== 'SIGKILL' && !this.stopping) {
      const stderr = String(r.stderr);
      if (/please report/i.test(stderr) || r.exitCode !== 2)
        this.crashes.push(`exit ${r.exitCode}: ${stderr.slice(-600)}`);
    }
    if (this.stopping) return;
    this.restarts++;
    this.up = sleep(300 + Math.random() * 700).then(() =>
      this.child || this.stopping ? undefined : this.start(clock as Record<string, string> | null),
    );
  }

  /** kill -9 of the gateway now (systemd starts it again). */
  kill(): boolean {
    if (!this.child) return false;
    this.kills++;
    this.child.kill('SIGKILL');
    return true;
  }

  /** Clients sending sessions, `width` at a time, until stop(). */
  startClients(width = 2): void {
    this.clientsDone = Promise.all(
      Array.from({ length: width }, async (_, w) => {
        for (let i = 0; !this.clientsStop; i++) await this.session(`c${w}-${i}`, i).catch(() => sleep(200));
      }),
    );
  }

  private async session(id: string, i: number): Promise<void> {
    const question = `[${id}] ${QUESTIONS[i % QUESTIONS.length]}`;
    const headers = { 'content-type': 'application/json', 'x-session-id': id, 'x-agent-id': 'a' };
    const messages: { role: string; content: string }[] = [{ role: 'user', content: question }];
    let answer = '';
    for (const turn of [0, 1]) {
      if (turn) messages.push({ role: 'assistant', content: answer }, { role: 'user', content: `Sure? ${question}` });
      const res = await fetch(`${this.url}/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'stub', messages, stream: i % 2 === 1 }),
      });
      const text = await res.text();
      if (res.status !== 200) return;
      this.acknowledged.push(res.headers.get('x-request-id')!);
      answer = i % 2 ? streamed(text) : (JSON.parse(text) as Chat).choices[0]!.message.content;
    }
    const right = answer.includes(question.includes('50 - 9') ? '41' : '42');
    await fetch(`${this.url}/feedback`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ session_id: id, score: right ? 1 : 0 }),
    });
  }

  /**
   * Stops the clients and the gateway (SIGTERM: it writes what it holds), then starts one more and stops it, as
   * the next boot would (it writes what a killed one journaled); returns the acknowledged calls not in the store.
   */
  async stop(clock: Record<string, string> | null): Promise<string[]> {
    this.clientsStop = true;
    await this.clientsDone;
    await this.up.catch(() => undefined);
    await this.terminate();
    this.stopping = false;
    await this.ensure(clock);
    await this.terminate();
    const store = openStore(loadConfig({ cwd: this.dir }));
    try {
      const turns = new Set(
        store.rollouts
          .list()
          .filter((r) => r.source === GATEWAY_SOURCE)
          .flatMap((r) => store.spans.list(r.id))
          .map((s) => (s.payload as { turn_id?: string }).turn_id),
      );
      return this.acknowledged.filter((id) => !turns.has(id));
    } finally {
      store.close();
    }
  }

  private async terminate(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child) return;
    child.kill('SIGTERM');
    const r = await child;
    if (r.exitCode !== 0 && r.signal !== 'SIGTERM')
      this.crashes.push(`stop: exit ${r.exitCode}: ${String(r.stderr).slice(-600)}`);
  }
}

/** The text of a streamed reply: its chunks' content deltas, joined. */
function streamed(sse: string): string {
  return sse
    .split('\n')
    .filter((l) => l.startsWith('data: {'))
    .map(
      (l) => (JSON.parse(l.slice(6)) as { choices?: { delta?: { content?: string } }[] }).choices?.[0]?.delta?.content,
    )
    .join('');
}

interface Chat {
  choices: { message: { content: string } }[];
}
