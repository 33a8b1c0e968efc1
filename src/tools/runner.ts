import { execa } from 'execa';
import type { RLConfig } from '../config/schema.js';
import type { ToolDefinition, ToolRunner } from '../orchestrator/types.js';
import { calculate } from './calculator.js';

type ToolsConfig = RLConfig['tools'];

export function toolDefinition(name: string, tools: ToolsConfig): ToolDefinition {
  const t = ownTool(tools, name)!;
  if (t.type === 'builtin') {
    return {
      name,
      description: 'Evaluate an arithmetic expression (+ - * / ^ % and parentheses).',
      parameters: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
    };
  }
  const properties = Object.fromEntries(
    Object.entries(t.parameters).map(([k, d]) => [k, { type: 'string', description: d }]),
  );
  return {
    name,
    description: t.description || `run ${t.command[0]}`,
    parameters: { type: 'object', properties, required: Object.keys(properties) },
  };
}

/** Past this much output a command tool is stopped (its output is kept in memory); the model sees the first RESULT_CHARS. */
const MAX_OUTPUT_CHARS = 1 << 20;
const RESULT_CHARS = 8000;

/** Tool names are the model's to choose: `constructor` must not find Object's. */
function ownTool(tools: ToolsConfig, name: string): ToolsConfig[string] | undefined {
  return Object.hasOwn(tools, name) ? tools[name] : undefined;
}

/** Runs configured tools: the built-in calculator, and command tools (argument array, no shell, timeout). */
export function createToolRunner(tools: ToolsConfig, cwd: string): ToolRunner {
  return {
    async run(name, args, signal) {
      const t = ownTool(tools, name);
      if (!t) return { result: `unknown tool ${name}`, success: false, error: 'unknown tool' };
      if (t.type === 'builtin') {
        try {
          return { result: String(calculate(String(args.expression ?? ''))), success: true };
        } catch (err) {
          return { result: `error: ${(err as Error).message}`, success: false, error: (err as Error).message };
        }
      }
      const argv = t.command.map((part) =>
        part.replace(/\{(\w+)\}/g, (_, key: string) =>
          String((Object.hasOwn(args, key) ? args[key] : undefined) ?? ''),
        ),
      );
      const r = await execa(argv[0]!, argv.slice(1), {
        cwd,
        timeout: t.timeout_ms,
        cancelSignal: signal,
        reject: false,
        stdin: 'ignore',
        all: true,
        maxBuffer: MAX_OUTPUT_CHARS,
      });
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('cancelled');
      const out = String(r.all ?? '').slice(0, RESULT_CHARS);
      if (r.timedOut) return { result: `timed out after ${t.timeout_ms} ms`, success: false, error: 'timeout' };
      if (r.isMaxBuffer)
        return {
          result: `${out}\n[stopped: the command printed more than ${MAX_OUTPUT_CHARS} characters]`,
          success: false,
          error: 'output too large',
        };
      return r.exitCode === 0
        ? { result: out, success: true }
        : { result: out || `exit code ${r.exitCode}`, success: false, error: `exit code ${r.exitCode ?? 'unknown'}` };
    },
  };
}
