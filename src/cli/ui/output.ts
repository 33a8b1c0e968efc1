import Table from 'cli-table3';
import ora, { type Ora } from 'ora';
import type { Redactor } from '../../store/redact.js';
import { makeColors, type Colors } from './colors.js';

export interface UiOptions {
  json: boolean;
  verbose: boolean;
  color: boolean;
  interactive: boolean;
}

export interface Progress {
  update(text: string): void;
  succeed(text?: string): void;
  fail(text?: string): void;
  stop(): void;
}

/** All terminal output. Results go to stdout; progress and diagnostics to stderr; everything is scrubbed. */
export class Ui {
  readonly c: Colors;
  private redactor: Redactor | undefined;

  constructor(
    readonly opts: UiOptions,
    private readonly out: NodeJS.WriteStream = process.stdout,
    private readonly err: NodeJS.WriteStream = process.stderr,
  ) {
    this.c = makeColors(opts.color);
  }

  setRedactor(r: Redactor): void {
    this.redactor = r;
  }

  private scrub(s: string): string {
    return this.redactor ? this.redactor.scrub(s) : s;
  }

  /** A result line on stdout (suppressed in --json mode, where json() carries the result). */
  print(text = ''): void {
    if (!this.opts.json) this.out.write(`${this.scrub(text)}\n`);
  }

  /** Scrubbed value by value, not as text: a secret that looks like a number must not break the JSON. */
  json(value: unknown): void {
    this.out.write(`${this.redactor ? this.redactor.stringify(value, 2) : JSON.stringify(value, null, 2)}\n`);
  }

  info(text: string): void {
    this.err.write(`${this.scrub(text)}\n`);
  }

  debug(text: string): void {
    if (this.opts.verbose) this.err.write(`${this.c.dim(this.scrub(text))}\n`);
  }

  warn(text: string): void {
    this.err.write(`${this.c.yellow('warning')} ${this.scrub(text)}\n`);
  }

  error(text: string): void {
    this.err.write(`${this.c.red('error')} ${this.scrub(text)}\n`);
  }

  table(head: string[], rows: (string | number)[][]): void {
    if (this.opts.json) return;
    const t = new Table({ head: head.map((h) => this.c.bold(h)), style: { head: [], border: [] } });
    for (const row of rows) t.push(row.map((cell) => this.scrub(String(cell))));
    this.out.write(`${t.toString()}\n`);
  }

  /** A spinner on a terminal; plain progress lines on stderr otherwise (CI logs stay readable). */
  progress(text: string): Progress {
    if (this.err.isTTY && !this.opts.verbose) {
      const spinner: Ora = ora({ text: this.scrub(text), stream: this.err, color: 'cyan', isEnabled: true }).start();
      return {
        update: (t) => {
          spinner.text = this.scrub(t);
        },
        succeed: (t) => {
          spinner.succeed(t && this.scrub(t));
        },
        fail: (t) => {
          spinner.fail(t && this.scrub(t));
        },
        stop: () => {
          spinner.stop();
        },
      };
    }
    this.info(`… ${text}`);
    return {
      update: (t) => this.info(`  ${t}`),
      succeed: (t) => this.info(`${this.c.green('✓')} ${t ?? text}`),
      fail: (t) => this.info(`${this.c.red('✗')} ${t ?? text}`),
      stop: () => {},
    };
  }
}
